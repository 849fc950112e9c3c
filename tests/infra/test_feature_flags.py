"""cdk.json's feature flags against the ones the pinned CDK CLI recommends for new apps: each recommended flag is
set to its recommended value, or set to false and named in docs/architecture.md with what it changes (the review that decides is
tests/infra/feature_flags.py, `make flags`)."""

from __future__ import annotations

import re

from tests.infra.feature_flags import ROOT, project_context, recommended, unset_flags

ARCHITECTURE = ROOT / "docs" / "architecture.md"


def flags_left_unset_in_the_docs() -> set[str]:
    section = ARCHITECTURE.read_text().split("## Feature flags", 1)[1]
    return set(re.findall(r"^\| `(@aws-cdk[^`]+)` \|", section, flags=re.MULTILINE))


def test_every_recommended_flag_is_set_or_named_with_its_reason() -> None:
    assert sorted(unset_flags()) == sorted(flags_left_unset_in_the_docs())


def test_the_flags_named_as_left_off_are_recommended_ones_set_to_false_and_most_are_set() -> None:
    named = flags_left_unset_in_the_docs()
    assert named <= set(recommended())
    assert {project_context().get(flag) for flag in named} == {False}  # configured, to the default
    assert len(recommended()) - len(named) >= 80  # the review set 81 of the 84 the project did not set
