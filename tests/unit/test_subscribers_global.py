"""Subscribers on a global table (contract/subscribers.py ``regions``): where each runs, each region's readers counted
against that region's stream, and a region added or taken out on day 2 (taken out: through the gate)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from contract.knobs import resolve_config
from contract.subscribers import region_readers
from doctable.capabilities import consumer, readers

ROOT = Path(__file__).resolve().parents[2]
HANDLER = "examples/subscribers/search.py:handler"
WEST, EU = "us-west-2", "eu-west-1"


def resolve(subscribers: dict[str, Any], replicas: str = f"{WEST},{EU}") -> Any:
    return resolve_config(
        context={"stream": "new-and-old", "replicas": replicas},
        environ={},
        subscribers=subscribers,
        settings_dir=ROOT,
    )


@pytest.mark.parametrize(
    ("regions", "home", "replicas"),
    [
        (None, True, ()),
        ("home", True, ()),
        ("all", True, (WEST, EU)),
        ([EU], False, (EU,)),
        (["us-east-1", WEST], True, (WEST,)),
    ],
)
def test_a_subscriber_runs_where_its_regions_say(regions: Any, home: bool, replicas: tuple[str, ...]) -> None:
    declared = {"handler": HANDLER} | ({} if regions is None else {"regions": regions})
    config = resolve({"a": declared})
    (spec,) = config.subscribers
    assert spec.runs_in(config.replicas) is home
    assert spec.replica_regions(config.replicas) == replicas
    assert region_readers(config.subscribers, config.replicas) == (["a"] if home else [])
    # the declaration is recorded as written: a stack without `regions` reads back the default
    assert ("regions" in spec.declaration) is (regions is not None)


def test_each_regions_readers_are_counted_against_that_regions_stream() -> None:
    # GIVEN one subscriber in us-west-2 only, one at home and in eu-west-1: each region has the consumer and one
    config = resolve(
        {
            "a": {"handler": HANDLER, "regions": [WEST]},
            "b": {"handler": HANDLER, "regions": [EU, "us-east-1"]},
        }
    )
    assert region_readers(config.subscribers, config.replicas) == ["b"]
    assert region_readers(config.subscribers, config.replicas, WEST) == ["a"]
    assert region_readers(config.subscribers, config.replicas, EU) == ["b"]


def test_preflight_warns_beyond_awss_one_reader_and_stops_beyond_two_on_a_global_table() -> None:
    target = resolve({"a": {"handler": HANDLER, "regions": "all"}})
    own = readers.own_readers(target)
    assert [r["reader"] for r in own] == ["consumer", "subscriber"]
    (warn,) = readers.readers_findings(target, own)
    assert (warn.level.value, warn.code, warn.after) == ("WARN", "subscriber.readers_recommended", 1)
    assert "AWS recommends 1 per shard on a global table" in warn.effect
    foreign = [{"reader": "foreign", "uuid": "u", "function": "theirs"}]
    (stop,) = readers.readers_findings(target, own + foreign)
    assert (stop.level.value, stop.code, stop.after) == ("STOP", "subscriber.readers_exceeded", 2)
    # a subscriber in a replica region alone is not a reader of the home replica's stream
    elsewhere = resolve({"a": {"handler": HANDLER, "regions": [WEST]}})
    assert readers.readers_findings(elsewhere, readers.own_readers(elsewhere)) == []


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        ("home", "all", [("subscriber.region_added", EU, False), ("subscriber.region_added", WEST, False)]),
        (
            "all",
            [WEST],
            [("subscriber.region_removed", EU, True), ("subscriber.region_removed", "home", True)],
        ),
        ([WEST], [EU], [("subscriber.region_added", EU, False), ("subscriber.region_removed", WEST, True)]),
        ("all", "all", []),
    ],
)
def test_a_region_added_deploys_there_and_one_taken_out_goes_through_the_gate(
    before: Any, after: Any, expected: list[tuple[str, str, bool]]
) -> None:
    found = consumer.subscriber_findings(
        resolve({"a": {"handler": HANDLER, "regions": before}}),
        resolve({"a": {"handler": HANDLER, "regions": after}}),
    )
    regions = [(f.code, f.after if f.after is not None else f.before, f.destructive) for f in found]
    assert regions[: len(expected)] == expected
    assert all(f.code != "subscriber.removed" for f in found)


def test_a_region_the_table_itself_leaves_is_replica_removeds_not_the_subscribers() -> None:
    before = resolve({"a": {"handler": HANDLER, "regions": "all"}})
    after = resolve({"a": {"handler": HANDLER, "regions": "all"}}, replicas=WEST)
    assert [f.code for f in consumer.subscriber_findings(before, after)] == []


def test_teardown_empties_a_replica_stacks_subscriber_buckets_unless_the_tier_keeps_them() -> None:
    from doctable.lifecycle.global_table import subscriber_buckets

    stack = {
        "Outputs": [
            {
                "OutputKey": "SubscriberAuditFailureBucketName",
                "OutputValue": "items-dev-1-us-west-2-audit-failures",
            },
            {"OutputKey": "SubscriberAuditLogGroup", "OutputValue": "group"},
            {"OutputKey": "EventSourceMappingUuid", "OutputValue": "uuid"},
        ]
    }
    assert subscriber_buckets(resolve({}), stack) == ("items-dev-1-us-west-2-audit-failures",)
    assert subscriber_buckets(resolve({}), {}) == ()
    kept = resolve_config(
        context={"stream": "new-and-old", "replicas": WEST, "tier": "prod"}, environ={}, settings_dir=ROOT
    )
    assert kept.retain_on_delete
    assert subscriber_buckets(kept, stack) == ()


def test_a_bucket_is_emptied_of_every_version() -> None:
    import boto3
    from moto import mock_aws

    from doctable.lifecycle.global_table import _empty

    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="failures-b")
        s3.put_bucket_versioning(Bucket="failures-b", VersioningConfiguration={"Status": "Enabled"})
        for n in range(3):
            s3.put_object(Bucket="failures-b", Key=f"aws/lambda/u/{n % 2}", Body=b"x")
        s3.delete_object(Bucket="failures-b", Key="aws/lambda/u/0")
        _empty(s3, "failures-b")
        listed = s3.list_object_versions(Bucket="failures-b")
        assert not listed.get("Versions") and not listed.get("DeleteMarkers")
        _empty(s3, "failures-gone")  # a bucket that is gone: nothing to do


def test_plan_counts_each_regions_stream_readers_against_awss_recommended_one() -> None:
    from doctable.plan import readers

    config = resolve({"a": {"handler": HANDLER, "regions": [WEST]}})
    found = readers.stream_readers(config)["dynamodb"]
    assert found["readers"] == ["cleanup consumer"]  # the home replica's stream
    assert found["replica_regions"] == {WEST: ["cleanup consumer", "subscriber a"], EU: ["cleanup consumer"]}
    assert (found["count"], found["limit_per_shard"], found["exceeded"]) == (2, 1, True)
    text = "\n".join(readers.render_readers({"dynamodb": found}))
    assert "OVER AWS's recommended 1 on a global table" in text
    assert "in us-west-2: 2 of 1 per shard: cleanup consumer, subscriber a" in text
