"""What preflight predicts for the event-source mapping: created, deleted, replaced or updated in place."""

from __future__ import annotations

import pytest

from doctable.ops import mapping_plan as mp
from tests.support import ops as ot

STREAM = {"stream": "new-and-old"}


@pytest.mark.parametrize(
    ("deployed", "target", "verb"),
    [
        ({}, STREAM, mp.CREATES),
        (STREAM, {}, mp.DELETES),
        ({**STREAM, "consumer": "none"}, STREAM, mp.CREATES),
        (STREAM, {**STREAM, "consumer": "none"}, mp.DELETES),
        (STREAM, {**STREAM, "starting_position": "latest"}, mp.REPLACES),
        (
            STREAM,
            {**STREAM, "consumer": "arn:aws:lambda:eu-west-1:123456789012:function:theirs"},
            mp.REPLACES,
        ),
        (STREAM, {**STREAM, "batch_size": "5"}, mp.UPDATES),
        (STREAM, {**STREAM, "max_retries": "2"}, mp.UPDATES),
        (STREAM, STREAM, None),
        ({}, {"gsi": "gsi1"}, None),
    ],
)
def test_the_mapping_change_follows_the_knobs(
    deployed: dict[str, str], target: dict[str, str], verb: str | None
) -> None:
    change = mp.mapping_change(ot.config_of(**deployed), ot.config_of(**target))
    assert (change.verb if change else None) == verb


def test_an_in_place_update_names_each_setting_and_a_replacement_says_what_records_do() -> None:
    change = mp.mapping_change(
        ot.config_of(**STREAM), ot.config_of(**STREAM, batch_size="5", max_retries="2")
    )
    assert change is not None
    assert change.live == "BatchSize 10, MaximumRetryAttempts 5"
    assert change.declared == "BatchSize 5, MaximumRetryAttempts 2"
    to_latest = mp.mapping_change(ot.config_of(**STREAM), ot.config_of(**STREAM, starting_position="latest"))
    back = mp.mapping_change(ot.config_of(**STREAM, starting_position="latest"), ot.config_of(**STREAM))
    assert to_latest is not None and "may be skipped" in to_latest.effect
    assert back is not None and "re-delivered" in back.effect
