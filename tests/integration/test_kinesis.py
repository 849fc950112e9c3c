"""kinesis=on with consumer_source=kinesis, deployed with the real CDK CLI into the local AWS: the table has no
DynamoDB stream, its changes go to the stack's on-demand Kinesis data stream, and the built-in consumer reads
that stream. A delete cleans up its blobs, a REMOVE delivered after the key was reused keeps the live blob, a
record that is not a table change is retried and then kept in the failure bucket while its neighbours are
processed, and `doctable verify` passes. Day 2: the mapping moves to the DynamoDB stream (preflight says it is
replaced), then the Kinesis destination is turned off, with verify passing after each deploy."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from contract import names
from contract.shape import cleanup_filter_patterns
from tests.support import localaws as lt
from tests.support.cli import context_args, run_doctable

pytestmark = pytest.mark.integration

KNOBS = {
    "kinesis": "on",
    "consumer_source": "kinesis",
    "max_retries": "1",
    "table_base": "kinesis",
    "deploy_target": "local",
}


def _item(pk: str, blobs: list[str] | None = None) -> dict:
    item: dict = {"pk": {"S": pk}, "sk": {"S": "v1"}}
    if blobs is not None:
        item["blobs"] = {"L": [{"S": key} for key in blobs]}
    return item


def _blobs(s3: object, bucket: str, pk: str, count: int = 2) -> list[str]:
    keys = [f"{pk}/v1/blob-{i}.bin" for i in range(count)]
    for key in keys:
        s3.put_object(Bucket=bucket, Key=key, Body=b"x")  # type: ignore[attr-defined]
    return keys


def _keys(s3: object, bucket: str, prefix: str) -> list[str]:
    listing = s3.list_objects_v2(Bucket=bucket, Prefix=prefix)  # type: ignore[attr-defined]
    return [o["Key"] for o in listing.get("Contents", [])]


def _verify(local_aws: lt.LocalAWS, knobs: dict[str, str], tmp_path: Path) -> str:
    env = {**local_aws.env, "DOCTABLE_STATE_DIR": str(tmp_path / "state")}
    verify = run_doctable(["verify", "--timeout", "90", *context_args(knobs)], env=env, timeout=600)
    assert verify.code == 0, verify.out + verify.err
    return verify.out


def test_consumer_reads_the_kinesis_data_stream(
    local_aws: lt.LocalAWS, deploy: Callable[..., lt.Deployed], tmp_path: Path
) -> None:
    # GIVEN a stack whose consumer reads the table's Kinesis data stream, and no DynamoDB stream
    out = deploy(KNOBS).outputs
    table, bucket, failures = (
        out[names.OUT_TABLE_NAME],
        out[names.OUT_BLOB_BUCKET],
        out[names.OUT_FAILURE_BUCKET],
    )
    stream_arn, uuid = out[names.OUT_KINESIS_STREAM_ARN], out[names.OUT_MAPPING_UUID]
    ddb, s3, lam = local_aws.client("dynamodb"), local_aws.client("s3"), local_aws.client("lambda")
    kinesis = local_aws.client("kinesis")
    assert "LatestStreamArn" not in ddb.describe_table(TableName=table)["Table"]
    # THEN the table streams to the created stream, which is on-demand and encrypted
    destinations = ddb.describe_kinesis_streaming_destination(TableName=table)[
        "KinesisDataStreamDestinations"
    ]
    assert [(d["StreamArn"], d["DestinationStatus"]) for d in destinations] == [(stream_arn, "ACTIVE")]
    summary = kinesis.describe_stream_summary(StreamARN=stream_arn)["StreamDescriptionSummary"]
    assert summary["StreamModeDetails"] == {"StreamMode": "ON_DEMAND"}
    assert summary["EncryptionType"] == "KMS"
    # AND the mapping reads it
    mapping = lam.get_event_source_mapping(UUID=uuid)
    assert mapping["EventSourceArn"] == stream_arn
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]

    # WHEN a record with blobs is written and deleted
    since = lt.now_ms()
    keys = _blobs(s3, bucket, "doc-1")
    ddb.put_item(TableName=table, Item=_item("doc-1", keys))
    ddb.delete_item(TableName=table, Key={"pk": {"S": "doc-1"}, "sk": {"S": "v1"}})
    # THEN its blobs are deleted, and the proof lines cover both changes
    lt.wait_for(lambda: not _keys(s3, bucket, "doc-1/"), timeout=60, what="doc-1's blobs to be deleted")
    lines = lt.wait_for(
        lambda: (
            (found := lt.proof_lines(local_aws.client("logs"), out[names.OUT_CONSUMER_LOG_GROUP], since))
            and sum(line.count for line in found) >= 2
            and found
        ),
        timeout=60,
        what="proof lines covering the put and the delete",
    )
    assert sum(line.count for line in lines) == 2

    # WHEN the key is reused while the mapping is paused: delete, re-upload, re-put, then resume
    keys = _blobs(s3, bucket, "doc-2")
    since = lt.now_ms()
    ddb.put_item(TableName=table, Item=_item("doc-2", keys))
    lt.wait_for(
        lambda: lt.proof_lines(local_aws.client("logs"), out[names.OUT_CONSUMER_LOG_GROUP], since),
        timeout=60,
        what="doc-2's first put delivered",
    )
    lam.update_event_source_mapping(UUID=uuid, Enabled=False)
    lt.wait_for(lambda: lam.get_event_source_mapping(UUID=uuid)["State"] == "Disabled", what="Disabled")
    ddb.delete_item(TableName=table, Key={"pk": {"S": "doc-2"}, "sk": {"S": "v1"}})
    _blobs(s3, bucket, "doc-2")
    ddb.put_item(TableName=table, Item=_item("doc-2", keys))
    since = lt.now_ms()
    lam.update_event_source_mapping(UUID=uuid, Enabled=True)
    lt.wait_for(
        lambda: (
            (found := lt.proof_lines(local_aws.client("logs"), out[names.OUT_CONSUMER_LOG_GROUP], since))
            and sum(line.count for line in found) >= 2
        ),
        timeout=60,
        what="the REMOVE and the re-put delivered",
    )
    # THEN the REMOVE, delivered after the re-put, left the live item's blobs alone
    assert sorted(_keys(s3, bucket, "doc-2/")) == sorted(keys)

    # WHEN a record that is not a table change arrives between two deletes
    a, b = _blobs(s3, bucket, "doc-a"), _blobs(s3, bucket, "doc-b")
    ddb.put_item(TableName=table, Item=_item("doc-a", a))
    ddb.put_item(TableName=table, Item=_item("doc-b", b))
    ddb.delete_item(TableName=table, Key={"pk": {"S": "doc-a"}, "sk": {"S": "v1"}})
    poison = kinesis.put_record(StreamARN=stream_arn, Data=b"not a table change", PartitionKey="doc-a")
    ddb.delete_item(TableName=table, Key={"pk": {"S": "doc-b"}, "sk": {"S": "v1"}})
    # THEN the neighbours are cleaned up
    lt.wait_for(
        lambda: not _keys(s3, bucket, "doc-a/") and not _keys(s3, bucket, "doc-b/"),
        timeout=60,
        what="the neighbours' blobs to be deleted",
    )
    # AND the poison record is retried once (max_retries=1), then kept in the failure bucket with Kinesis's
    # batch info
    kept = lt.wait_for(
        lambda: _keys(s3, failures, f"aws/lambda/{uuid}/"), timeout=90, what="the poison record to be kept"
    )
    assert len(kept) == 1
    record = json.loads(s3.get_object(Bucket=failures, Key=kept[0])["Body"].read())
    assert record["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert record["requestContext"]["approximateInvokeCount"] == 2
    info = record["KinesisBatchInfo"]
    assert info["streamArn"] == stream_arn
    assert info["shardId"] == poison["ShardId"]
    assert info["startSequenceNumber"] == poison["SequenceNumber"]
    payload = json.loads(record["payload"])["Records"]
    assert base64.b64decode(payload[0]["kinesis"]["data"]) == b"not a table change"

    # WHEN doctable verify runs THEN it passes: destination, mapping source and the proof over Kinesis
    _verify(local_aws, KNOBS, tmp_path)


def test_day2_source_switch_and_kinesis_off(
    local_aws: lt.LocalAWS, deploy: Callable[..., lt.Deployed], tmp_path: Path
) -> None:
    knobs = {**KNOBS, "table_base": "kinesis-day2"}
    out = deploy(knobs).outputs
    table, bucket = out[names.OUT_TABLE_NAME], out[names.OUT_BLOB_BUCKET]
    stream_arn, first_uuid = out[names.OUT_KINESIS_STREAM_ARN], out[names.OUT_MAPPING_UUID]
    ddb, s3, lam = local_aws.client("dynamodb"), local_aws.client("s3"), local_aws.client("lambda")
    env = {**local_aws.env, "DOCTABLE_STATE_DIR": str(tmp_path / "state")}

    # WHEN the mapping is moved to the DynamoDB stream (which the table gains)
    moved = {**knobs, "consumer_source": "dynamodb", "stream": "new-and-old"}
    preflight = run_doctable(["preflight", "--json", *context_args(moved)], env=env, timeout=300)
    # THEN preflight says the mapping is replaced
    assert preflight.code in (0, 1), preflight.out + preflight.err
    assert "mapping.replaced" in {f["code"] for f in preflight.json()["findings"]}, preflight.out
    out = deploy(moved).outputs
    mapping = lam.get_event_source_mapping(UUID=out[names.OUT_MAPPING_UUID])
    assert out[names.OUT_MAPPING_UUID] != first_uuid
    assert mapping["EventSourceArn"] == out[names.OUT_STREAM_ARN]
    assert first_uuid not in {m["UUID"] for m in lam.list_event_source_mappings()["EventSourceMappings"]}
    # AND the table still streams to Kinesis, and a delete is cleaned up through the DynamoDB stream
    destinations = ddb.describe_kinesis_streaming_destination(TableName=table)[
        "KinesisDataStreamDestinations"
    ]
    assert [(d["StreamArn"], d["DestinationStatus"]) for d in destinations] == [(stream_arn, "ACTIVE")]
    keys = _blobs(s3, bucket, "day2")
    ddb.put_item(TableName=table, Item=_item("day2", keys))
    ddb.delete_item(TableName=table, Key={"pk": {"S": "day2"}, "sk": {"S": "v1"}})
    lt.wait_for(lambda: not _keys(s3, bucket, "day2/"), timeout=60, what="day2's blobs to be deleted")
    _verify(local_aws, moved, tmp_path)

    # WHEN Kinesis is turned off
    off = {**moved, "kinesis": "off"}
    out = deploy(off).outputs
    # THEN the table streams nowhere, the created stream is gone, and verify passes
    assert names.OUT_KINESIS_STREAM_ARN not in out
    destinations = ddb.describe_kinesis_streaming_destination(TableName=table)[
        "KinesisDataStreamDestinations"
    ]
    assert all(d["DestinationStatus"] in ("DISABLED", "DISABLING") for d in destinations), destinations
    streams = local_aws.client("kinesis").list_streams()["StreamNames"]
    assert stream_arn.rsplit("/", 1)[1] not in streams
    _verify(local_aws, off, tmp_path)


def test_cleanup_filter_on_the_kinesis_mapping(
    local_aws: lt.LocalAWS, deploy: Callable[..., lt.Deployed], tmp_path: Path
) -> None:
    # GIVEN events=cleanup on a consumer reading the Kinesis stream
    knobs = {**KNOBS, "table_base": "kinesis-filter", "events": "cleanup"}
    out = deploy(knobs).outputs
    table, bucket, uuid = out[names.OUT_TABLE_NAME], out[names.OUT_BLOB_BUCKET], out[names.OUT_MAPPING_UUID]
    ddb, s3, lam = local_aws.client("dynamodb"), local_aws.client("s3"), local_aws.client("lambda")
    # THEN the mapping's patterns address the change record under `data`
    patterns = [f["Pattern"] for f in lam.get_event_source_mapping(UUID=uuid)["FilterCriteria"]["Filters"]]
    assert patterns == list(cleanup_filter_patterns(kinesis=True))
    assert all(set(json.loads(p)) == {"data"} for p in patterns)
    lt.wait_for(lambda: local_aws.faults.mappings()[uuid]["pending"] == 0, what="the mapping to catch up")
    before = local_aws.faults.mappings()[uuid]

    # WHEN an INSERT-only workload runs
    for i in range(4):
        ddb.put_item(TableName=table, Item=_item(f"f-{i}", _blobs(s3, bucket, f"f-{i}", 1)))
    lt.wait_for(
        lambda: (
            (p := local_aws.faults.mappings()[uuid])["pending"] == 0
            and p["filtered_out"] >= before["filtered_out"] + 4
        ),
        what="the poller to pass the 4 INSERTs",
    )
    lt.polled_past(local_aws, uuid)
    # THEN the consumer was invoked zero times
    assert local_aws.faults.mappings()[uuid]["invocations"] == before["invocations"]

    # WHEN a record with blobs is deleted THEN its blob is cleaned up, and only it
    ddb.delete_item(TableName=table, Key={"pk": {"S": "f-2"}, "sk": {"S": "v1"}})
    lt.wait_for(lambda: not _keys(s3, bucket, "f-2/"), timeout=60, what="f-2's blob to be deleted")
    assert _keys(s3, bucket, "f-1/") == ["f-1/v1/blob-0.bin"]
    assert local_aws.faults.mappings()[uuid]["invocations"] > before["invocations"]
    # AND verify passes: its nudge is a delete the filter passes
    assert "covers the nudge delete (REMOVE)" in _verify(local_aws, knobs, tmp_path)
