"""What preflight predicts for the event-source mapping: created, deleted, replaced or updated in place."""

from __future__ import annotations

import pytest

from contract.findings import Level
from doctable.capabilities import mapping as mp
from tests.support import ops as ot

STREAM = {"stream": "new-and-old"}
THEIRS = "arn:aws:lambda:eu-west-1:123456789012:function:theirs"


@pytest.mark.parametrize(
    ("deployed", "target", "code"),
    [
        ({}, STREAM, mp.CREATED),
        (STREAM, {}, mp.DELETED),
        ({**STREAM, "consumer": "none"}, STREAM, mp.CREATED),
        (STREAM, {**STREAM, "consumer": "none"}, mp.DELETED),
        (STREAM, {**STREAM, "starting_position": "latest"}, mp.REPLACED),
        (STREAM, {**STREAM, "consumer": THEIRS}, mp.REPLACED),
        (STREAM, {**STREAM, "batch_size": "5"}, mp.UPDATED),
        (STREAM, {**STREAM, "max_retries": "2"}, mp.UPDATED),
        (STREAM, STREAM, None),
        ({}, {"gsi": "gsi1"}, None),
    ],
)
def test_the_mapping_change_follows_the_knobs(
    deployed: dict[str, str], target: dict[str, str], code: str | None
) -> None:
    change = mp.mapping_change(ot.config_of(**deployed), ot.config_of(**target))
    assert (change.code if change else None) == code


def test_an_in_place_update_carries_each_setting_and_a_replacement_the_positions() -> None:
    # GIVEN two in-place settings changed  THEN before/after hold exactly those settings
    change = mp.mapping_change(
        ot.config_of(**STREAM), ot.config_of(**STREAM, batch_size="5", max_retries="2")
    )
    assert change is not None
    assert (change.before, change.after) == (
        {"BatchSize": 100, "MaximumRetryAttempts": 5},
        {"BatchSize": 5, "MaximumRetryAttempts": 2},
    )
    # AND a replacement carries the starting positions it moves between
    back = mp.mapping_change(ot.config_of(**STREAM, starting_position="latest"), ot.config_of(**STREAM))
    assert back is not None and (back.code, back.before, back.after) == (
        mp.REPLACED,
        "LATEST",
        "TRIM_HORIZON",
    )


def test_a_deleted_mapping_is_destructive() -> None:
    # GIVEN a stack with the built-in consumer  WHEN the deploy removes the consumer
    change = mp.mapping_change(ot.config_of(**STREAM), ot.config_of(**STREAM, consumer="none"))
    # THEN the mapping's deletion is a destructive change: nothing consumes the stream any more
    assert change is not None
    finding = change.finding()
    assert (finding.level, finding.code, finding.destructive) == (Level.CHANGE, mp.DELETED, True)
    assert (finding.before, finding.after) == ("TRIM_HORIZON", None)


@pytest.mark.parametrize(
    ("deployed", "target", "destructive"),
    [
        (STREAM, {**STREAM, "starting_position": "latest"}, True),
        ({**STREAM, "starting_position": "latest"}, STREAM, False),
        (STREAM, {**STREAM, "consumer": THEIRS}, False),
        (
            {**STREAM, "starting_position": "latest"},
            {**STREAM, "starting_position": "latest", "consumer": THEIRS},
            True,
        ),
    ],
)
def test_a_replacement_is_destructive_only_toward_latest(
    deployed: dict[str, str], target: dict[str, str], destructive: bool
) -> None:
    # GIVEN a mapping replaced  WHEN the new one starts at LATEST
    finding = mp.mapping_change(ot.config_of(**deployed), ot.config_of(**target))
    # THEN it is destructive (records not yet read are skipped); from TRIM_HORIZON it re-reads, which loses none
    assert finding is not None and finding.code == mp.REPLACED
    assert finding.finding().destructive is destructive


def test_created_and_updated_mappings_are_not_destructive() -> None:
    created = mp.mapping_change(ot.config_of(), ot.config_of(**STREAM))
    updated = mp.mapping_change(ot.config_of(**STREAM), ot.config_of(**STREAM, batch_size="5"))
    assert created is not None and (created.before, created.after) == (None, "TRIM_HORIZON")
    assert not created.finding().destructive
    assert updated is not None and not updated.finding().destructive
