"""The destructive rules: which of a deploy's findings the deploy gate refuses without a yes. One test per rule,
each reading the finding's code and flag (moto for the options read from a live table)."""

from __future__ import annotations

from typing import Any

import pytest

from contract import names
from contract.findings import Finding, Level, destructive
from contract.shape import GLOBAL_TABLE_TYPE, TABLE_TYPE, table_shape
from doctable.capabilities import consumer as consumer_plan
from doctable.capabilities import kinesis, table_options, table_security
from doctable.capabilities.mapping import mapping_change
from doctable.capabilities.replicas import replica_findings
from doctable.capabilities.table_shape import shape_findings
from doctable.core.aws import Aws
from tests.support import ops as ot

STREAM = {"stream": "new-and-old"}
TTL_OFF = {"TimeToLiveStatus": "DISABLED"}
GSI1 = {
    "IndexName": "gsi1",
    "IndexStatus": "ACTIVE",
    "KeySchema": [
        {"AttributeName": names.GSI_PARTITION_KEY, "KeyType": "HASH"},
        {"AttributeName": names.GSI_SORT_KEY, "KeyType": "RANGE"},
    ],
    "Projection": {"ProjectionType": "ALL"},
}


def shape_codes(
    knobs: dict[str, str], table: dict[str, Any], ttl: dict[str, Any] = TTL_OFF, pitr: str = "DISABLED"
) -> dict[str, bool]:
    """Code -> destructive flag of each shape finding for a deploy of ``knobs`` over ``table``."""
    return {f.code: f.destructive for f in shape_findings(ot.config_of(**knobs), table, ttl, pitr)}


def plan_codes(deployed: dict[str, str], target: dict[str, str]) -> dict[str, bool]:
    """Code -> destructive flag of each finding the knob-to-knob comparisons make (consumer, kinesis)."""
    before, after = ot.config_of(**deployed), ot.config_of(**target)
    found = consumer_plan.findings(before, after) + kinesis.findings(before, after)
    return {f.code: f.destructive for f in found}


# --------------------------------------------------------------------------------------------- the table
def test_an_index_removed_is_destructive() -> None:
    # GIVEN a table with gsi1  WHEN the knobs drop it  THEN its removal is destructive
    assert shape_codes({}, ot.live_table(GlobalSecondaryIndexes=[GSI1])) == {"index.removed": True}


def test_an_index_replaced_is_destructive() -> None:
    # GIVEN gsi1 on other keys  WHEN the knobs declare gsi1  THEN its delete-and-create is destructive
    other = {**GSI1, "KeySchema": [{"AttributeName": "other", "KeyType": "HASH"}]}
    assert shape_codes({"gsi": "gsi1"}, ot.live_table(GlobalSecondaryIndexes=[other])) == {
        "index.replaced": True,
        "index.multi_step": False,
    }


def test_an_index_added_is_not_destructive() -> None:
    assert shape_codes({"gsi": "gsi1"}, ot.live_table()) == {"index.added": False}


def test_the_stream_turned_off_is_destructive() -> None:
    # GIVEN a table with its stream  WHEN the knobs turn it off  THEN that is destructive
    streaming = ot.live_table(
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    )
    assert shape_codes({}, streaming) == {"stream.disabled": True}


def test_the_stream_recreated_is_destructive() -> None:
    # GIVEN a KEYS_ONLY stream  WHEN the knobs want NEW_AND_OLD_IMAGES  THEN the re-created stream is destructive
    keys_only = ot.live_table(StreamSpecification={"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"})
    assert shape_codes(STREAM, keys_only) == {"stream.recreated": True}


def test_a_new_key_schema_replacing_the_table_is_destructive() -> None:
    # GIVEN a table keyed on id alone  WHEN the knobs want pk/sk  THEN the replacement stops, and is destructive
    findings = shape_findings(
        ot.config_of(),
        ot.live_table(KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}]),
        TTL_OFF,
        "DISABLED",
    )
    assert [(f.level, f.code, f.destructive) for f in findings] == [(Level.STOP, "table.replaced", True)]


def test_ttl_turned_on_is_destructive() -> None:
    # GIVEN TTL off  WHEN the knobs turn it on  THEN destructive: DynamoDB deletes every item already expired
    assert shape_codes({"ttl": "on"}, ot.live_table()) == {"ttl.enabled": True}


def test_pitr_turned_off_is_destructive() -> None:
    # GIVEN PITR on  WHEN the knobs turn it off  THEN destructive: the restore window is lost
    assert shape_codes({}, ot.live_table(), pitr="ENABLED") == {"pitr.disabled": True}


def test_a_shorter_pitr_window_is_destructive(moto_env: Aws) -> None:
    # GIVEN a table with PITR at AWS's default window (35 days)
    ddb = moto_env.client("dynamodb")
    ddb.create_table(
        TableName="items-dev",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    ddb.update_continuous_backups(
        TableName="items-dev", PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True}
    )
    table = ddb.describe_table(TableName="items-dev")["Table"]
    # WHEN the knobs keep 7 days  THEN the shorter window is destructive (the older restore points go)
    found = table_options.findings(ddb, table_shape(ot.config_of(pitr="on", pitr_days="7")), table)
    assert [(f.code, f.destructive, f.before, f.after) for f in found] == [
        ("pitr.window_shortened", True, 35, 7)
    ]


@pytest.mark.parametrize(("env", "flagged"), [("dev", False), ("stg", False), ("uat", True), ("prod", True)])
def test_deletion_protection_turned_off_is_destructive_in_uat_and_prod(env: str, flagged: bool) -> None:
    # GIVEN a protected table  WHEN the knobs turn protection off  THEN destructive only where data is kept
    protected = ot.live_table(DeletionProtectionEnabled=True)
    knobs = {"env": env, "deletion_protection": "off", "pitr": "off"}
    assert shape_codes(knobs, protected) == {"deletion_protection.disabled": flagged}


def test_the_encryption_key_changed_is_destructive(moto_env: Aws) -> None:
    # GIVEN a table on the AWS owned key
    ddb = moto_env.client("dynamodb")
    ddb.create_table(
        TableName="items-dev",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    table = ddb.describe_table(TableName="items-dev")["Table"]
    # WHEN the knobs want the AWS managed key  THEN the key change is destructive
    found = table_security.findings(moto_env, ot.config_of(encryption="aws-managed"), table, None)
    assert [(f.code, f.destructive) for f in found] == [("key.changed", True)]


# ------------------------------------------------------------------------------------------- the mapping
def test_the_mapping_deleted_is_destructive() -> None:
    # GIVEN the built-in consumer's mapping  WHEN the knobs drop the consumer  THEN its deletion is destructive
    change = mapping_change(ot.config_of(**STREAM), ot.config_of(**STREAM, consumer="none"))
    assert change is not None and (change.code, change.finding().destructive) == ("mapping.deleted", True)


@pytest.mark.parametrize(
    ("start", "end", "flagged"), [("trim-horizon", "latest", True), ("latest", "trim-horizon", False)]
)
def test_the_mapping_replaced_is_destructive_only_toward_latest(start: str, end: str, flagged: bool) -> None:
    # GIVEN a mapping from one position  WHEN the knobs move it to the other  THEN destructive only to LATEST
    change = mapping_change(
        ot.config_of(**STREAM, starting_position=start), ot.config_of(**STREAM, starting_position=end)
    )
    assert change is not None and (change.code, change.finding().destructive) == ("mapping.replaced", flagged)


# ------------------------------------------------------------------------------- the consumer and its blobs
def test_the_stack_created_blob_bucket_leaving_with_the_consumer_is_destructive() -> None:
    # GIVEN the built-in consumer with the stack's bucket  WHEN the consumer goes  THEN the bucket leaves the stack
    assert plan_codes(STREAM, {**STREAM, "consumer": "none"}) == {"bucket.leaves_stack": True}


def test_the_stack_created_blob_bucket_left_for_a_bucket_of_yours_is_destructive() -> None:
    # GIVEN the stack's bucket  WHEN blob_bucket names a bucket of the user's  THEN the stack's leaves the stack
    assert plan_codes(STREAM, {**STREAM, "blob_bucket": "my-blobs"}) == {"bucket.leaves_stack": True}


def test_moving_between_buckets_of_yours_leaves_no_stack_bucket() -> None:
    # GIVEN a bucket of the user's  WHEN another is named  THEN a plain consumer change, nothing leaves the stack
    assert plan_codes({**STREAM, "blob_bucket": "mine-a"}, {**STREAM, "blob_bucket": "mine-b"}) == {
        "consumer.changed": False
    }


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [("off", "on", {"consumer.prefix_cleanup_enabled": True}), ("on", "off", {"consumer.changed": False})],
)
def test_prefix_cleanup_turned_on_is_destructive(start: str, end: str, expected: dict[str, bool]) -> None:
    # GIVEN blob_prefix_cleanup one way  WHEN flipped  THEN on is destructive (unlisted objects are deleted too)
    assert (
        plan_codes({**STREAM, "blob_prefix_cleanup": start}, {**STREAM, "blob_prefix_cleanup": end})
        == expected
    )


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        ("guarded", "never", {"consumer.key_reuse_never": True}),
        ("never", "guarded", {"consumer.changed": False}),
    ],
)
def test_key_reuse_set_to_never_is_destructive(start: str, end: str, expected: dict[str, bool]) -> None:
    # GIVEN blob_key_reuse one way  WHEN flipped  THEN never is destructive (dropped keys are deleted unchecked)
    assert plan_codes({**STREAM, "blob_key_reuse": start}, {**STREAM, "blob_key_reuse": end}) == expected


# --------------------------------------------------------------------------------------------- Kinesis
@pytest.mark.parametrize(("env", "flagged"), [("dev", True), ("uat", False)])
def test_the_stacks_kinesis_stream_deleted_is_destructive(env: str, flagged: bool) -> None:
    # GIVEN the stack's own Kinesis stream  WHEN kinesis turns off  THEN its deletion is destructive (uat retains it)
    found = plan_codes({"env": env, "kinesis": "on"}, {"env": env})
    assert ("kinesis.stream_deleted" in found and found["kinesis.stream_deleted"]) is flagged


# ------------------------------------------------------------------------------------------------ the gate
def test_the_gate_ignores_drift_even_when_flagged() -> None:
    # GIVEN a destructive change and a drift finding carrying the flag  THEN only the change stops the gate
    change = Finding(Level.CHANGE, "index.removed", "gsi1", "present", "none", "", True, "gsi1", None)
    drifted = Finding(Level.DRIFT, "drift.detected", "gsi1", "present", "none", "", True, "gsi1", None)
    assert destructive([change, drifted]) == [change]


# ------------------------------------------------------------------------------------ a global table
def replica_codes(
    knobs: dict[str, str], live_type: str, *regions: str, status: str = "ACTIVE"
) -> dict[str, bool]:
    """Code -> destructive flag of each replica finding for a deploy of ``knobs`` over a table of ``live_type``
    whose home (eu-west-1) DescribeTable lists ``regions``, each with ``status``."""
    table = ot.live_table(Replicas=[{"RegionName": r, "ReplicaStatus": status} for r in regions])
    return {
        f.code: f.destructive for f in replica_findings(ot.config_of(**knobs), table, live_type, ot.REGION)
    }


def test_a_replica_region_removed_is_destructive_and_one_added_is_not() -> None:
    # GIVEN a global table with a replica in us-west-2  WHEN the knobs move it to us-east-1
    codes = replica_codes({**STREAM, "replicas": "us-east-1"}, GLOBAL_TABLE_TYPE, "us-west-2")
    # THEN the removal is destructive, the addition is not
    assert codes == {"replica.added": False, "replica.removed": True}


def test_a_conversion_to_global_is_not_destructive_and_one_back_is() -> None:
    # GIVEN a single-region table  WHEN the knobs declare a replica  THEN the conversion keeps the items: not
    # destructive (doctable deploy converts it by resource import)
    assert replica_codes({**STREAM, "replicas": "us-east-1"}, TABLE_TYPE) == {"table.to_global": False}
    # AND a global table whose knobs drop every replica is destructive (a STOP: it would be replaced)
    assert replica_codes(STREAM, GLOBAL_TABLE_TYPE, "us-east-1") == {"table.to_single": True}


def test_a_replica_not_active_is_a_warning_not_a_destructive_change() -> None:
    # GIVEN a global table whose replica in us-west-2 is still CREATING  WHEN the knobs keep it
    codes = replica_codes(
        {**STREAM, "replicas": "us-west-2"}, GLOBAL_TABLE_TYPE, "us-west-2", status="CREATING"
    )
    # THEN it is a busy replica, not destructive
    assert codes == {"replica.busy": False}
