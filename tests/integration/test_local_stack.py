"""The project's stack deployed into the local AWS with the real CDK CLI, and the consumer reacting to its stream.

Module order matters: the lifecycle tests at the end update and then destroy the stacks the earlier tests use.
"""

from __future__ import annotations

import io
import json
import time
import zipfile
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from contract.knobs import KNOB_DEFAULTS
from tests.support import localaws as lt

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

PROVENANCE = {"ManagedBy": "ephemera", "Source": "doctable"}


def _tags(pairs: list[dict[str, str]]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in pairs}


# ------------------------------------------------------------------------------------------ configuration
def test_flat_stack_configuration(local_aws: lt.LocalAWS, flat_stack: lt.Deployed) -> None:
    out = flat_stack.outputs
    assert out["TableName"] == "itflat-dev"
    assert {"TableArn", "RuntimePolicyArn"} <= out.keys()
    assert not {"StreamArn", "ConsumerFunctionName", "EventSourceMappingUuid"} & out.keys()
    ddb = local_aws.client("dynamodb")
    table = ddb.describe_table(TableName=out["TableName"])["Table"]
    assert {k["AttributeName"]: k["KeyType"] for k in table["KeySchema"]} == {"pk": "HASH", "sk": "RANGE"}
    assert not table.get("GlobalSecondaryIndexes")
    assert not table.get("StreamSpecification", {}).get("StreamEnabled")
    assert table["DeletionProtectionEnabled"] is False
    assert (
        ddb.describe_time_to_live(TableName=out["TableName"])["TimeToLiveDescription"]["TimeToLiveStatus"]
        == "DISABLED"
    )
    pitr = ddb.describe_continuous_backups(TableName=out["TableName"])["ContinuousBackupsDescription"]
    assert pitr["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] == "DISABLED"
    tags = _tags(ddb.list_tags_of_resource(ResourceArn=out["TableArn"])["Tags"])
    assert PROVENANCE.items() <= tags.items() and tags["Environment"] == "dev"
    policy = local_aws.client("iam").get_policy(PolicyArn=out["RuntimePolicyArn"])["Policy"]
    assert policy["Arn"] == out["RuntimePolicyArn"]


def test_full_stack_configuration(local_aws: lt.LocalAWS, full_stack: lt.Deployed) -> None:
    out = full_stack.outputs
    for key in (
        "TableName", "TableArn", "StreamArn", "RuntimePolicyArn", "ConsumerFunctionName", "ConsumerFunctionArn",
        "ConsumerLogGroupName", "EventSourceMappingUuid", "BlobBucketName", "FailureBucketName",
    ):  # fmt: skip
        assert out.get(key), f"output {key} missing after a change-set deploy"
    ddb = local_aws.client("dynamodb")
    table = ddb.describe_table(TableName=out["TableName"])["Table"]
    assert [g["IndexName"] for g in table["GlobalSecondaryIndexes"]] == ["gsi1"]
    assert table["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert table["LatestStreamArn"] == out["StreamArn"]
    ttl = ddb.describe_time_to_live(TableName=out["TableName"])["TimeToLiveDescription"]
    assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": "expiresAt"}
    pitr = ddb.describe_continuous_backups(TableName=out["TableName"])["ContinuousBackupsDescription"]
    assert pitr["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] == "ENABLED"
    assert _tags(ddb.list_tags_of_resource(ResourceArn=out["TableArn"])["Tags"])["Environment"] == "stg"

    lam = local_aws.client("lambda")
    function = lam.get_function(FunctionName=out["ConsumerFunctionName"])
    config = function["Configuration"]
    assert config["Runtime"] == "python3.13" and config["Handler"] == "stream_consumer.handler.lambda_handler"
    assert config["Architectures"] == ["arm64"] and config["TracingConfig"] == {"Mode": "Active"}
    assert config["LoggingConfig"]["LogGroup"] == out["ConsumerLogGroupName"]
    assert [layer["Arn"].split(":")[6] for layer in config["Layers"]] == [
        "AWSLambdaPowertoolsPythonV3-python313-arm64"
    ]
    assert config["Environment"]["Variables"]["BLOB_BUCKET"] == out["BlobBucketName"]
    assert config["MemorySize"] == int(KNOB_DEFAULTS["memory"]) and config["Timeout"] == 30
    assert PROVENANCE.items() <= function["Tags"].items()
    assert PROVENANCE.items() <= lam.list_tags(Resource=out["ConsumerFunctionArn"])["Tags"].items()

    mapping = lam.get_event_source_mapping(UUID=out["EventSourceMappingUuid"])
    assert mapping["State"] == "Enabled" and mapping["EventSourceArn"] == out["StreamArn"]
    assert mapping["StartingPosition"] == "TRIM_HORIZON" and mapping["BatchSize"] == 10
    assert mapping["MaximumRetryAttempts"] == 5 and mapping["BisectBatchOnFunctionError"] is True
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert (
        mapping["DestinationConfig"]["OnFailure"]["Destination"] == f"arn:aws:s3:::{out['FailureBucketName']}"
    )
    assert PROVENANCE.items() <= lam.list_tags(Resource=mapping["EventSourceMappingArn"])["Tags"].items()

    s3 = local_aws.client("s3")
    for bucket in (out["BlobBucketName"], out["FailureBucketName"]):
        block = s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]
        assert all(block.values())


# -------------------------------------------------------------------------------------------- the consumer
def _put_blobs(local_aws: lt.LocalAWS, bucket: str, pk: str, sk: str, count: int = 2) -> list[str]:
    s3 = local_aws.client("s3")
    keys = [f"{pk}/{sk}/blob-{i}.bin" for i in range(count)]
    for key in keys:
        s3.put_object(Bucket=bucket, Key=key, Body=b"x")
    return keys


def _remaining(local_aws: lt.LocalAWS, bucket: str, prefix: str) -> list[str]:
    listing = local_aws.client("s3").list_objects_v2(Bucket=bucket, Prefix=prefix)
    return [o["Key"] for o in listing.get("Contents", [])]


def _item(pk: str, sk: str, blobs: list[str] | None = None, raw_blobs: dict | None = None) -> dict:
    item: dict = {"pk": {"S": pk}, "sk": {"S": sk}}
    if blobs is not None:
        item["blobs"] = {"L": [{"S": key} for key in blobs]}
    if raw_blobs is not None:
        item["blobs"] = raw_blobs
    return item


def test_consumer_cleans_up_blobs_end_to_end(local_aws: lt.LocalAWS, full_stack: lt.Deployed) -> None:
    out = full_stack.outputs
    ddb = local_aws.client("dynamodb")
    since = lt.now_ms()
    keys = _put_blobs(local_aws, out["BlobBucketName"], "doc-1", "v1")
    ddb.put_item(TableName=out["TableName"], Item=_item("doc-1", "v1", keys))
    ddb.delete_item(TableName=out["TableName"], Key={"pk": {"S": "doc-1"}, "sk": {"S": "v1"}})
    lt.wait_for(
        lambda: not _remaining(local_aws, out["BlobBucketName"], "doc-1/"), what="the blobs to be deleted"
    )
    lt.wait_for(lambda: lt.proof_counts(local_aws, out["ConsumerLogGroupName"], since), what="a proof line")


def test_invocations_and_emf_metrics_reach_cloudwatch(
    local_aws: lt.LocalAWS, full_stack: lt.Deployed
) -> None:
    from datetime import UTC, datetime, timedelta

    out = full_stack.outputs
    cloudwatch = local_aws.client("cloudwatch")
    window = {
        "StartTime": datetime.now(UTC) - timedelta(hours=1),
        "EndTime": datetime.now(UTC) + timedelta(minutes=5),
    }

    def total(namespace: str, name: str, dims: list[dict[str, str]]) -> float:
        points = cloudwatch.get_metric_statistics(
            Namespace=namespace, MetricName=name, Dimensions=dims, Period=3600, Statistics=["Sum"], **window
        )["Datapoints"]
        return sum(p["Sum"] for p in points)

    function = [{"Name": "FunctionName", "Value": out["ConsumerFunctionName"]}]
    assert (
        lt.wait_for(lambda: total("AWS/Lambda", "Invocations", function), what="AWS/Lambda Invocations") >= 1
    )
    service = [{"Name": "service", "Value": "doctable-consumer"}]
    assert lt.wait_for(lambda: total("Doctable", "RecordsReceived", service), what="the EMF metric") >= 1


def test_each_put_gets_its_proof_line(local_aws: lt.LocalAWS, full_stack: lt.Deployed) -> None:
    """Each put, written alone, is proven by a line of its own: the line covering the put's stream record (found
    by its key; an earlier test's late record may be proven in the same window) counts that one record."""
    out = full_stack.outputs
    ddb = local_aws.client("dynamodb")
    logs = local_aws.client("logs")
    for i in range(5):
        since = lt.now_ms()
        ddb.put_item(TableName=out["TableName"], Item=_item("latency", str(i)))
        (record,) = [
            r
            for r in _stream_records(local_aws, out["StreamArn"], "latency")
            if r["dynamodb"]["Keys"]["sk"]["S"] == str(i)
        ]
        sequence = int(record["dynamodb"]["SequenceNumber"])

        def covering(s: int = since, n: int = sequence) -> list[lt.ProofLine]:
            lines = lt.proof_lines(logs, out["ConsumerLogGroupName"], s)
            return [p for p in lines if p.first is not None and p.last is not None and p.first <= n <= p.last]

        lines = lt.wait_for(covering, what=f"the proof line of put {i}")
        assert [(p.count, p.first, p.last) for p in lines] == [(1, sequence, sequence)]


def test_burst_is_delivered_in_batches_of_the_batch_size(
    local_aws: lt.LocalAWS, full_stack: lt.Deployed
) -> None:
    out = full_stack.outputs
    lam = local_aws.client("lambda")
    uuid = out["EventSourceMappingUuid"]
    lam.update_event_source_mapping(UUID=uuid, Enabled=False)
    lt.wait_for(lambda: lam.get_event_source_mapping(UUID=uuid)["State"] == "Disabled", what="Disabled")
    since = lt.now_ms()
    ddb = local_aws.client("dynamodb")
    invocations = local_aws.faults.mappings()[uuid]["invocations"]
    for i in range(28):
        ddb.put_item(TableName=out["TableName"], Item=_item("burst", f"{i:02d}"))
    # The poller has looked at the stream since the writes (twice), and delivered nothing.
    progress = lt.polled_past(local_aws, uuid)
    assert progress["invocations"] == invocations and progress["pending"] >= 28, (
        "a disabled mapping delivered"
    )
    assert lt.proof_counts(local_aws, out["ConsumerLogGroupName"], since) == []
    lam.update_event_source_mapping(UUID=uuid, Enabled=True)
    counts = lt.wait_for(
        lambda: (c := lt.proof_counts(local_aws, out["ConsumerLogGroupName"], since)) and sum(c) >= 28 and c,
        what="28 records",
    )
    assert counts == [10, 10, 8]
    assert lam.get_event_source_mapping(UUID=uuid)["State"] == "Enabled"
    assert lam.get_event_source_mapping(UUID=uuid)["LastProcessingResult"] == "OK"


RECORDER = """
import json
def handler(event, context):
    for record in event["Records"]:
        print(json.dumps({"recorded": record["dynamodb"]["Keys"]["sk"]["S"], "seq": record["dynamodb"]["SequenceNumber"]}))
"""


def test_latest_mapping_skips_earlier_writes_and_other_readers_keep_theirs(
    local_aws: lt.LocalAWS, full_stack: lt.Deployed
) -> None:
    out = full_stack.outputs
    lam = local_aws.client("lambda")
    ddb = local_aws.client("dynamodb")
    ddb.put_item(TableName=out["TableName"], Item=_item("latest", "before"))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("recorder.py", RECORDER)
    role = lam.get_function(FunctionName=out["ConsumerFunctionName"])["Configuration"]["Role"]
    # The consumer's role may write only its own log group (IAM is enforced): the recorder's logs need a grant.
    local_aws.client("iam").put_role_policy(
        RoleName=role.rsplit("/", 1)[1],
        PolicyName="recorder-logs",
        PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
            "Resource": f"arn:aws:logs:{lt.REGION}:{lt.ACCOUNT}:log-group:/aws/lambda/recorder:*",
        }]}),
    )  # fmt: skip
    lam.create_function(
        FunctionName="recorder", Runtime="python3.13", Role=role, Handler="recorder.handler",
        Code={"ZipFile": buffer.getvalue()}, Timeout=10,
    )  # fmt: skip
    mapping = lam.create_event_source_mapping(
        FunctionName="recorder", EventSourceArn=out["StreamArn"], StartingPosition="LATEST", BatchSize=100
    )
    since = lt.now_ms()
    ddb.put_item(TableName=out["TableName"], Item=_item("latest", "after"))
    logs = local_aws.client("logs")

    def recorded() -> list[str]:
        events = logs.filter_log_events(logGroupName="/aws/lambda/recorder", filterPattern="recorded")[
            "events"
        ]
        return [json.loads(e["message"])["recorded"] for e in events]

    assert lt.wait_for(recorded, what="the recorder's line") == ["after"]
    # The project's consumer (its own mapping) saw both writes: nobody emptied the stream.
    lt.wait_for(lambda: lt.proof_counts(local_aws, out["ConsumerLogGroupName"], since), what="the consumer")
    sks = [r["dynamodb"]["Keys"]["sk"]["S"] for r in _stream_records(local_aws, out["StreamArn"], "latest")]
    assert sks == ["before", "after"]
    # Deleting the mapping stops its poller: the write after it reaches the consumer, never the recorder.
    lam.delete_event_source_mapping(UUID=mapping["UUID"])
    assert mapping["UUID"] not in local_aws.faults.mappings()
    since = lt.now_ms()
    ddb.put_item(TableName=out["TableName"], Item=_item("latest", "deleted"))
    lt.wait_for(lambda: lt.proof_counts(local_aws, out["ConsumerLogGroupName"], since), what="the consumer")
    assert recorded() == ["after"]


def test_poison_record_is_retried_then_kept_in_the_failure_bucket(
    local_aws: lt.LocalAWS, full_stack: lt.Deployed
) -> None:
    out = full_stack.outputs
    lam = local_aws.client("lambda")
    ddb = local_aws.client("dynamodb")
    uuid = out["EventSourceMappingUuid"]
    blobs_a = _put_blobs(local_aws, out["BlobBucketName"], "poison-a", "1")
    blobs_b = _put_blobs(local_aws, out["BlobBucketName"], "poison-b", "1")
    lam.update_event_source_mapping(UUID=uuid, Enabled=False)
    lt.wait_for(lambda: lam.get_event_source_mapping(UUID=uuid)["State"] == "Disabled", what="Disabled")
    since = lt.now_ms()
    ddb.put_item(TableName=out["TableName"], Item=_item("poison-a", "1", blobs_a))
    ddb.put_item(TableName=out["TableName"], Item=_item("poison-p", "1", raw_blobs={"N": "7"}))
    ddb.put_item(TableName=out["TableName"], Item=_item("poison-b", "1", blobs_b))
    for pk in ("poison-a", "poison-b"):
        ddb.delete_item(TableName=out["TableName"], Key={"pk": {"S": pk}, "sk": {"S": "1"}})
    lam.update_event_source_mapping(UUID=uuid, Enabled=True)

    s3 = local_aws.client("s3")
    kept = lt.wait_for(
        lambda: s3.list_objects_v2(Bucket=out["FailureBucketName"], Prefix=f"aws/lambda/{uuid}/").get(
            "Contents"
        ),
        timeout=60,
        what="the failed batch in the failure bucket",
    )
    assert len(kept) == 1
    key = kept[0]["Key"]
    assert key.startswith(f"aws/lambda/{uuid}/shardId-")
    record = json.loads(s3.get_object(Bucket=out["FailureBucketName"], Key=key)["Body"].read())
    assert record["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert (
        record["requestContext"]["approximateInvokeCount"] == 6
    )  # the first attempt + MaximumRetryAttempts=5
    assert record["DDBStreamBatchInfo"]["streamArn"] == out["StreamArn"]
    payload = json.loads(record["payload"])["Records"]
    assert payload[0]["dynamodb"]["Keys"]["pk"]["S"] == "poison-p"
    assert payload[0]["dynamodb"]["SequenceNumber"] == record["DDBStreamBatchInfo"]["startSequenceNumber"]
    # Its neighbours were processed: their blobs are gone.
    assert not _remaining(local_aws, out["BlobBucketName"], "poison-a/")
    assert not _remaining(local_aws, out["BlobBucketName"], "poison-b/")
    counts = lt.proof_counts(local_aws, out["ConsumerLogGroupName"], since)
    assert len(counts) == 6, f"expected the first delivery and 5 retries, got {counts}"
    # The shard moved on: a later write is processed normally.
    since = lt.now_ms()
    ddb.put_item(TableName=out["TableName"], Item=_item("poison-after", "1"))
    assert lt.wait_for(lambda: lt.proof_counts(local_aws, out["ConsumerLogGroupName"], since)) == [1]


def test_ttl_expires_items_as_the_ttl_service(local_aws: lt.LocalAWS, full_stack: lt.Deployed) -> None:
    out = full_stack.outputs
    ddb = local_aws.client("dynamodb")
    keys = _put_blobs(local_aws, out["BlobBucketName"], "ttl", "1")
    item = _item("ttl", "1", keys)
    item["expiresAt"] = {"N": str(int(time.time()) - 60)}
    since = lt.now_ms()
    ddb.put_item(TableName=out["TableName"], Item=item)
    key = {"pk": {"S": "ttl"}, "sk": {"S": "1"}}
    lt.wait_for(
        lambda: "Item" not in ddb.get_item(TableName=out["TableName"], Key=key), timeout=30, what="expiry"
    )
    lt.wait_for(
        lambda: not _remaining(local_aws, out["BlobBucketName"], "ttl/"), what="the blobs to be deleted"
    )
    events = local_aws.client("logs").filter_log_events(
        logGroupName=out["ConsumerLogGroupName"], startTime=since, filterPattern='"ttl-expiry"'
    )["events"]
    assert events, "the consumer did not see a TTL deletion (userIdentity of the TTL service)"


def _stream_records(local_aws: lt.LocalAWS, stream_arn: str, pk: str) -> list[dict]:
    streams = local_aws.client("dynamodbstreams")
    shard = streams.describe_stream(StreamArn=stream_arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(
        StreamArn=stream_arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON"
    )
    records: list[dict] = []
    position = iterator["ShardIterator"]
    while position:  # an open shard always returns a next iterator: stop at the first empty page
        page = _get_records(streams, position)
        if not page["Records"]:
            break
        records += page["Records"]
        position = page.get("NextShardIterator")
    return [r for r in records if r["dynamodb"]["Keys"]["pk"]["S"] == pk]


def _get_records(streams: Any, position: str) -> dict:
    """GetRecords, retried as an SDK retries LimitExceededException: with the consumer's and a second mapping's
    pollers reading the shard within the last second, a third reader is throttled until one goes quiet."""

    def page() -> dict | None:
        try:
            return streams.get_records(ShardIterator=position, Limit=1000)  # type: ignore[no-any-return]
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "LimitExceededException":
                raise
            return None

    return lt.wait_for(page, timeout=10, what="room among the shard's readers")  # type: ignore[no-any-return]


def test_a_write_that_changes_nothing_adds_no_stream_record(
    local_aws: lt.LocalAWS, full_stack: lt.Deployed
) -> None:
    out = full_stack.outputs
    ddb = local_aws.client("dynamodb")
    ddb.put_item(TableName=out["TableName"], Item=_item("same", "1"))
    ddb.put_item(TableName=out["TableName"], Item=_item("same", "1"))
    ddb.put_item(TableName=out["TableName"], Item=_item("same", "2"))
    records = _stream_records(local_aws, out["StreamArn"], "same")
    assert [(r["eventName"], r["dynamodb"]["Keys"]["sk"]["S"]) for r in records] == [
        ("INSERT", "1"),
        ("INSERT", "2"),
    ]


# -------------------------------------------------------------------------------------------- lifecycle
def test_update_a_knob_with_a_change_set(
    local_aws: lt.LocalAWS, flat_stack: lt.Deployed, deploy: Callable[..., lt.Deployed]
) -> None:
    updated = deploy({**lt.FLAT, "ttl": "on", "pitr": "on"})
    ddb = local_aws.client("dynamodb")
    name = updated.outputs["TableName"]
    assert ddb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]["TimeToLiveStatus"] == "ENABLED"
    pitr = ddb.describe_continuous_backups(TableName=name)["ContinuousBackupsDescription"]
    assert pitr["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] == "ENABLED"
    assert (
        updated.outputs == {**flat_stack.outputs, **updated.outputs}
        and updated.outputs.keys() == flat_stack.outputs.keys()
    )
    stack = local_aws.client("cloudformation").describe_stacks(StackName=updated.name)["Stacks"][0]
    assert stack["StackStatus"] == "UPDATE_COMPLETE"


def test_update_a_knob_directly(
    local_aws: lt.LocalAWS, full_stack: lt.Deployed, deploy: Callable[..., lt.Deployed]
) -> None:
    updated = deploy({**lt.FULL, "batch_size": "5"}, ["--method=direct"])
    mapping = local_aws.client("lambda").get_event_source_mapping(
        UUID=updated.outputs["EventSourceMappingUuid"]
    )
    assert mapping["BatchSize"] == 5
    assert updated.outputs["EventSourceMappingUuid"] == full_stack.outputs["EventSourceMappingUuid"]


@pytest.mark.parametrize("knobs", [lt.FLAT, lt.FULL], ids=["flat", "full"])
def test_destroy_removes_everything(
    local_aws: lt.LocalAWS, flat_stack: lt.Deployed, full_stack: lt.Deployed, knobs: dict[str, str],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:  # fmt: skip
    deployed = flat_stack if knobs is lt.FLAT else full_stack
    out = deployed.outputs
    for bucket_key in ("BlobBucketName", "FailureBucketName"):  # CloudFormation deletes only empty buckets
        if bucket_key in out:
            lt.empty_bucket(local_aws, out[bucket_key])
    result = lt.run_cdk(
        local_aws, ["destroy", "--force", *lt.context_args(knobs)], tmp_path_factory.mktemp("cdk")
    )
    assert "destroyed" in result.output
    cfn = local_aws.client("cloudformation")
    live = [
        s["StackName"] for s in cfn.list_stacks()["StackSummaries"] if s["StackStatus"] != "DELETE_COMPLETE"
    ]
    assert deployed.name not in live
    assert out["TableName"] not in local_aws.client("dynamodb").list_tables()["TableNames"]
    buckets = {b["Name"] for b in local_aws.client("s3").list_buckets()["Buckets"]}
    assert not {out.get("BlobBucketName"), out.get("FailureBucketName")} & buckets
    lam = local_aws.client("lambda")
    functions = {f["FunctionName"] for f in lam.list_functions()["Functions"]}
    assert out.get("ConsumerFunctionName") not in functions
    if "EventSourceMappingUuid" in out:
        mappings = {m["UUID"] for m in lam.list_event_source_mappings()["EventSourceMappings"]}
        assert out["EventSourceMappingUuid"] not in mappings
