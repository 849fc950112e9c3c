"""Every checkov skip in a synthesized template names a check and carries a project-specific reason; a cdk-nag
acknowledgement's checkov equivalent is skipped with the same reason, and only where cdk-nag acknowledges it."""

from __future__ import annotations

from typing import Any

import pytest

from infra.synth import checkov
from tests.infra.synth import resources, synth
from tests.infra.synth_matrix import infra_shapes, scanned_shapes

pytestmark = pytest.mark.infra

SHAPES = scanned_shapes(infra_shapes())[::3]
MIN_REASON = 40  # as for cdk-nag's acknowledgements: a sentence, not a token


def skips_of(template: dict[str, Any]) -> dict[str, dict[str, str]]:
    """logical id -> {check id: reason} of every resource that skips something."""
    found: dict[str, dict[str, str]] = {}
    for logical, resource in template["Resources"].items():
        for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", []):
            assert set(skip) == {"id", "comment"}, f"{logical}: {skip}"
            found.setdefault(logical, {})[skip["id"]] = skip["comment"]
    return found


@pytest.mark.parametrize("knobs", SHAPES, ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()))
def test_every_checkov_skip_names_a_check_and_carries_a_reason(knobs: dict[str, str]) -> None:
    # GIVEN a shape of the matrix checkov scans
    _, template, _ = synth(**knobs)
    # WHEN its skips are read from the resources' metadata
    found = skips_of(template)
    # THEN each names a checkov check and says why in a sentence
    for logical, skips in found.items():
        for check_id, reason in skips.items():
            assert check_id.startswith("CKV_"), f"{logical}: {check_id}"
            assert len(reason.strip()) >= MIN_REASON, f"{logical} {check_id}: {reason!r}"


def test_a_nag_equivalent_is_skipped_with_the_nag_reason_and_only_where_nag_is_acknowledged() -> None:
    # GIVEN pitr off (cdk-nag's DDB3 acknowledged) and pitr on (nothing to acknowledge)
    _, off, _ = synth(pitr="off")
    _, on, _ = synth(pitr="on")
    (table_off,) = resources(off, "AWS::DynamoDB::Table")
    (table_on,) = resources(on, "AWS::DynamoDB::Table")
    # THEN checkov's PITR check is skipped only with pitr off, with the reason cdk-nag's acknowledgement has
    assert "PITR is the `pitr` knob" in skips_of(off)[table_off]["CKV_AWS_28"]
    assert "CKV_AWS_28" not in skips_of(on).get(table_on, {})


def test_a_table_under_a_key_of_its_own_is_not_skipped_for_the_cmk_check() -> None:
    _, owned, _ = synth(stream="new-and-old")
    _, keyed, _ = synth(stream="new-and-old", encryption="customer-managed")
    (table_owned,) = resources(owned, "AWS::DynamoDB::Table")
    (table_keyed,) = resources(keyed, "AWS::DynamoDB::Table")
    assert "CKV_AWS_119" in skips_of(owned)[table_owned]
    assert "CKV_AWS_119" not in skips_of(keyed).get(table_keyed, {})


def test_a_skip_without_a_reason_is_refused_at_synth() -> None:
    with pytest.raises(ValueError, match="CKV_AWS_21 needs a reason"):
        checkov.add_skip(None, "CKV_AWS_21", "  ")  # type: ignore[arg-type]
