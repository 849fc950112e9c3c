"""Day 2, the consumer and the stream turned off and on with the table kept (its own module, so that its chain runs
beside the other day-2 chains). The machinery and what each flip checks: tests/support/day2.py."""

from __future__ import annotations

import pytest

from tests.support import day2 as d2
from tests.support.day2 import day2_aws_fixture, day2_fixture  # noqa: F401 - the day-2 fixtures

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]


def test_day2_consumer_and_stream_off_and_on_keep_the_table(day2: d2.Day2) -> None:
    # Generated bucket names: the blob bucket turned out of the stack keeps its blobs (left behind), and with
    # exact names (bucket_names=exact) it would keep its name too, so the consumer turned back on would meet
    # BucketAlreadyExists until that bucket is moved away (bucket.leaves_stack says so; docs/environments.md).
    day2.base["bucket_names"] = "generated"
    outputs = d2.given_kept(day2)
    stream = outputs["StreamArn"]
    # consumer builtin -> none -> builtin: the mapping goes and comes back; the table and its items stay
    day2.flip("consumer builtin -> none", {"mapping.deleted", "bucket.leaves_stack"}, consumer="none")
    assert day2.mappings() == []
    day2.verify(consumer="none")
    again = day2.flip("consumer none -> builtin", set())
    assert len(day2.mappings()) == 1
    day2.verify()
    d2.assert_kept(day2, again.outputs, None)

    # stream new-and-old -> none -> new-and-old: a new stream ARN, the mapping recreated, none left over
    day2.flip("stream new-and-old -> none", d2.DROPS_THE_STREAM, stream="none")
    assert day2.mappings() == []
    assert not day2.table()["table"].get("StreamSpecification", {}).get("StreamEnabled")
    day2.verify(stream="none")
    last = day2.flip("stream none -> new-and-old", set())
    assert last.outputs["StreamArn"] != stream
    assert [m["EventSourceArn"] for m in day2.mappings()] == [last.outputs["StreamArn"]]
    day2.verify()
    d2.assert_kept(day2, last.outputs, None)
    day2.no_mismatches()
