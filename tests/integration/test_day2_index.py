"""Day 2, an index: added and removed in place, the table kept (its own module, so that its chain runs beside the
other day-2 chains). The machinery and what each flip checks: tests/support/day2.py."""

from __future__ import annotations

import pytest

from tests.support import day2 as d2
from tests.support.day2 import day2_aws_fixture, day2_fixture  # noqa: F401 - the day-2 fixtures

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]


def test_day2_index_added_then_removed_in_place(day2: d2.Day2) -> None:
    outputs = d2.given_kept(day2)
    # gsi none -> gsi1 -> none: the index is added (backfilled) and removed in place
    day2.flip("gsi none -> gsi1", set(), gsi="gsi1")
    assert [g["IndexName"] for g in day2.table()["table"]["GlobalSecondaryIndexes"]] == ["gsi1"]
    day2.verify(gsi="gsi1")
    day2.flip("gsi gsi1 -> none", {"index.removed"})
    assert not day2.table()["table"].get("GlobalSecondaryIndexes")
    day2.verify()
    d2.assert_kept(day2, outputs, outputs["BlobBucketName"])
    day2.no_mismatches()
