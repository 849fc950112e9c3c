"""The local AWS's event-source mappings on a Kinesis data stream (local/pollers/kinesis.py over local/pollers/streams.py): Lambda's
Kinesis event, partial batch failures, the on-failure record, filters on ``data`` and the role's read permissions.

The function is a stand-in runner that records each event and answers what the test tells it to; the mapping,
its poller, the table forwarding to Kinesis and the IAM checks are the local AWS's own."""

from __future__ import annotations

import base64
import io
import json
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from local import state
from local.pollers import streams as esm
from local.runtime.runner import InvokeResult
from local.services.awslambda import mappings
from tests.unit.test_local_kinesis_destination import isolated_services

pytestmark = pytest.mark.unit

REGION = state.REGION
READS = [
    "kinesis:GetRecords",
    "kinesis:GetShardIterator",
    "kinesis:DescribeStream",
    "kinesis:DescribeStreamSummary",
    "kinesis:ListShards",
]


class FakeRunner:
    """Records each event; ``answer`` decides each invocation's result (default: success, no payload)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.answer: Callable[[dict[str, Any]], InvokeResult] = lambda event: _ok(None)
        self.changed = threading.Condition()

    def invoke(self, fn: Any, event: Any, iterator_age_ms: float | None = None) -> InvokeResult:
        with self.changed:
            self.events.append(event)
            self.changed.notify_all()
        return self.answer(event)

    def prewarm(self, fn: Any) -> None:
        return None

    def wait_for(self, condition: Callable[[], bool], timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        with self.changed:
            while not condition():
                left = deadline - time.monotonic()
                assert left > 0, f"not reached; events: {self.events}"
                self.changed.wait(left)


def _ok(payload: Any) -> InvokeResult:
    return InvokeResult(json.dumps(payload).encode(), None, "", "r", 1.0)


def _failed() -> InvokeResult:
    return InvokeResult(b'{"errorMessage": "boom"}', "Unhandled", "", "r", 1.0)


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, FakeRunner]]:
    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x")):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    runner = FakeRunner()
    monkeypatch.setattr(esm, "get_runner", lambda: runner)
    monkeypatch.setattr(mappings, "get_runner", lambda: runner)
    manager = esm.MappingManager()
    monkeypatch.setattr(esm, "_MANAGER", manager)  # what esm.install does, undone after the test
    with isolated_services(), mock_aws():
        try:
            yield (lambda service: boto3.client(service, region_name=REGION)), runner
        finally:
            manager.shutdown()


def _setup(client: Any, grants: list[str] = READS, **mapping: Any) -> tuple[str, str]:
    """A table streaming to an on-demand stream, a function whose role has ``grants`` on it, and the mapping."""
    ddb, kinesis, iam, lam = (client(s) for s in ("dynamodb", "kinesis", "iam", "lambda"))
    ddb.create_table(
        TableName="tbl",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    kinesis.create_stream(StreamName="s", StreamModeDetails={"StreamMode": "ON_DEMAND"})
    stream = kinesis.describe_stream_summary(StreamName="s")["StreamDescriptionSummary"]["StreamARN"]
    ddb.enable_kinesis_streaming_destination(TableName="tbl", StreamArn=stream)
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ],
    }
    role = iam.create_role(RoleName="fn-role", AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    statements = [{"Effect": "Allow", "Action": grants, "Resource": stream}] if grants else []
    statements.append({"Effect": "Allow", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::failures/*"})
    iam.put_role_policy(
        RoleName="fn-role",
        PolicyName="reads",
        PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": statements}),
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("index.py", "def handler(event, context):\n    return None\n")
    lam.create_function(
        FunctionName="fn",
        Runtime="python3.13",
        Role=role,
        Handler="index.handler",
        Code={"ZipFile": buffer.getvalue()},
    )
    spec = {"StartingPosition": "TRIM_HORIZON", "BatchSize": 10, **mapping}
    uuid = lam.create_event_source_mapping(FunctionName="fn", EventSourceArn=stream, **spec)["UUID"]
    return stream, str(uuid)


def _put(client: Any, *keys: str) -> None:
    for key in keys:
        client("dynamodb").put_item(TableName="tbl", Item={"pk": {"S": key}})


def _delivered(runner: FakeRunner) -> list[dict[str, Any]]:
    return [r for event in runner.events for r in event["Records"]]


def _payload(record: dict[str, Any]) -> dict[str, Any]:
    return json.loads(base64.b64decode(record["kinesis"]["data"]))  # type: ignore[no-any-return]


def test_the_function_gets_lambdas_kinesis_event_of_the_tables_changes(aws: tuple[Any, FakeRunner]) -> None:
    # GIVEN a mapping on the stream the table writes to
    client, runner = aws
    stream, _ = _setup(client)
    # WHEN an item is written
    _put(client, "a")
    runner.wait_for(lambda: len(_delivered(runner)) == 1)
    # THEN the event is Lambda's Kinesis event carrying the DynamoDB change record
    (record,) = _delivered(runner)
    kinesis = record.pop("kinesis")
    assert record == {
        "eventSource": "aws:kinesis",
        "eventVersion": "1.0",
        "eventID": f"{record['eventID'].split(':')[0]}:{kinesis['sequenceNumber']}",
        "eventName": "aws:kinesis:record",
        "invokeIdentityArn": f"arn:aws:iam::{state.ACCOUNT_ID}:role/fn-role",
        "awsRegion": REGION,
        "eventSourceARN": stream,
    }
    assert record["eventID"].startswith("shardId-")
    assert kinesis["kinesisSchemaVersion"] == "1.0"
    assert isinstance(kinesis["approximateArrivalTimestamp"], float)
    assert kinesis["partitionKey"]
    change = json.loads(base64.b64decode(kinesis["data"]))
    assert (change["eventName"], change["dynamodb"]["NewImage"]) == ("INSERT", {"pk": {"S": "a"}})


def test_partial_batch_failure_retries_from_the_reported_sequence_number(aws: tuple[Any, FakeRunner]) -> None:
    # GIVEN a function that reports the second record of its first batch as failed
    client, runner = aws
    calls: list[int] = []

    def answer(event: dict[str, Any]) -> InvokeResult:
        calls.append(len(event["Records"]))
        if len(calls) == 1:
            return _ok(
                {"batchItemFailures": [{"itemIdentifier": event["Records"][1]["kinesis"]["sequenceNumber"]}]}
            )
        return _ok({"batchItemFailures": []})

    runner.answer = answer
    _setup(client, FunctionResponseTypes=["ReportBatchItemFailures"], Enabled=False)
    lam = client("lambda")
    uuid = lam.list_event_source_mappings()["EventSourceMappings"][0]["UUID"]
    # WHEN one item changes three times (one shard, in order) and the mapping is enabled
    client("dynamodb").put_item(TableName="tbl", Item={"pk": {"S": "a"}, "v": {"N": "1"}})
    client("dynamodb").put_item(TableName="tbl", Item={"pk": {"S": "a"}, "v": {"N": "2"}})
    client("dynamodb").put_item(TableName="tbl", Item={"pk": {"S": "a"}, "v": {"N": "3"}})
    lam.update_event_source_mapping(UUID=uuid, Enabled=True)
    runner.wait_for(lambda: len(runner.events) >= 2)
    # THEN the second invocation starts at the failed record
    first, second = runner.events[:2]
    assert [r["kinesis"]["sequenceNumber"] for r in second["Records"]] == [
        r["kinesis"]["sequenceNumber"] for r in first["Records"][1:]
    ]
    assert [_payload(r)["eventName"] for r in first["Records"]] == ["INSERT", "MODIFY", "MODIFY"]


def test_exhausted_retries_write_kinesis_batch_info_to_the_s3_destination(
    aws: tuple[Any, FakeRunner],
) -> None:
    # GIVEN a function that always fails, no retries and an S3 on-failure destination
    client, runner = aws
    runner.answer = lambda event: _failed()
    s3 = client("s3")
    s3.create_bucket(Bucket="failures")
    stream, uuid = _setup(
        client,
        MaximumRetryAttempts=0,
        DestinationConfig={"OnFailure": {"Destination": "arn:aws:s3:::failures"}},
    )
    # WHEN a record arrives
    _put(client, "a")
    deadline = time.monotonic() + 20
    while not s3.list_objects_v2(Bucket="failures").get("Contents"):
        assert time.monotonic() < deadline, "no on-failure record"
        time.sleep(0.05)
    # THEN the invocation record names the batch as Kinesis does
    (obj,) = s3.list_objects_v2(Bucket="failures")["Contents"]
    body = json.loads(s3.get_object(Bucket="failures", Key=obj["Key"])["Body"].read())
    info = body["KinesisBatchInfo"]
    sequence = runner.events[0]["Records"][0]["kinesis"]["sequenceNumber"]
    assert obj["Key"].startswith(f"aws/lambda/{uuid}/{info['shardId']}/")
    assert info["shardId"].startswith("shardId-")
    assert (info["startSequenceNumber"], info["endSequenceNumber"], info["batchSize"]) == (
        sequence,
        sequence,
        1,
    )
    assert info["streamArn"] == stream
    assert info["approximateArrivalOfFirstRecord"].endswith("Z")
    assert info["approximateArrivalOfLastRecord"].endswith("Z")
    assert "DDBStreamBatchInfo" not in body
    assert body["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert body["responseContext"]["functionError"] == "Unhandled"


def test_a_filter_on_data_matches_the_decoded_change_record(aws: tuple[Any, FakeRunner]) -> None:
    # GIVEN a mapping that only takes REMOVE records
    client, runner = aws
    _setup(client, FilterCriteria={"Filters": [{"Pattern": json.dumps({"data": {"eventName": ["REMOVE"]}})}]})
    # WHEN an item is inserted, then deleted
    _put(client, "a")
    client("dynamodb").delete_item(TableName="tbl", Key={"pk": {"S": "a"}})
    runner.wait_for(lambda: len(_delivered(runner)) >= 1)
    # THEN only the REMOVE is delivered, once the poller has seen both
    progress = esm.get_manager().progress()
    (mapping,) = progress.values()
    assert [_payload(r)["eventName"] for r in _delivered(runner)] == ["REMOVE"]
    assert mapping["filtered_out"] == 1


def test_latest_starts_after_what_the_stream_holds(aws: tuple[Any, FakeRunner]) -> None:
    client, runner = aws
    _setup(client, Enabled=False)  # the table and stream exist: put before a LATEST mapping exists
    _put(client, "before")
    lam = client("lambda")
    stream = client("kinesis").describe_stream_summary(StreamName="s")["StreamDescriptionSummary"][
        "StreamARN"
    ]
    lam.create_function(
        FunctionName="fn2",
        Runtime="python3.13",
        Role=f"arn:aws:iam::{state.ACCOUNT_ID}:role/fn-role",
        Handler="index.handler",
        Code={"ZipFile": _zip()},
    )
    lam.create_event_source_mapping(FunctionName="fn2", EventSourceArn=stream, StartingPosition="LATEST")
    _put(client, "after")
    runner.wait_for(lambda: len(_delivered(runner)) >= 1)
    assert [_payload(r)["dynamodb"]["Keys"]["pk"]["S"] for r in _delivered(runner)] == ["after"]


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("index.py", "def handler(event, context):\n    return None\n")
    return buffer.getvalue()


def test_creating_a_mapping_needs_the_kinesis_reads_and_a_starting_position(
    aws: tuple[Any, FakeRunner],
) -> None:
    client, _ = aws
    with pytest.raises(ClientError) as refused:
        _setup(client, grants=["kinesis:GetRecords", "kinesis:GetShardIterator"])
    error = refused.value.response["Error"]
    assert error["Code"] == "InvalidParameterValueException"
    assert error["Message"].startswith("Cannot access stream arn:aws:kinesis:")
    lam = client("lambda")
    stream = client("kinesis").describe_stream_summary(StreamName="s")["StreamDescriptionSummary"][
        "StreamARN"
    ]
    with pytest.raises(ClientError) as missing:
        lam.create_event_source_mapping(FunctionName="fn", EventSourceArn=stream)
    assert missing.value.response["Error"]["Code"] == "InvalidParameterValueException"
    assert "'startingPosition'" in missing.value.response["Error"]["Message"]


def test_a_customer_managed_key_needs_kms_decrypt_for_the_role(aws: tuple[Any, FakeRunner]) -> None:
    # GIVEN a stream encrypted with a customer managed key, and a role with the Kinesis reads only
    client, _ = aws
    key = client("kms").create_key()["KeyMetadata"]["Arn"]
    kinesis = client("kinesis")
    kinesis.create_stream(StreamName="enc", ShardCount=1)
    kinesis.start_stream_encryption(StreamName="enc", EncryptionType="KMS", KeyId=key)
    summary = kinesis.describe_stream_summary(StreamName="enc")["StreamDescriptionSummary"]
    assert (summary["EncryptionType"], summary["KeyId"]) == ("KMS", key)
    _setup(client)
    stream = summary["StreamARN"]
    iam = client("iam")
    reads = {"Effect": "Allow", "Action": READS, "Resource": stream}
    document = {"Version": "2012-10-17", "Statement": [reads]}
    iam.put_role_policy(RoleName="fn-role", PolicyName="enc", PolicyDocument=json.dumps(document))
    lam = client("lambda")
    # WHEN a mapping is created on it THEN it is refused until the role may decrypt with the key
    with pytest.raises(ClientError) as refused:
        lam.create_event_source_mapping(FunctionName="fn", EventSourceArn=stream, StartingPosition="LATEST")
    assert refused.value.response["Error"]["Message"].startswith(f"Cannot access stream {stream}.")
    decrypt = {"Effect": "Allow", "Action": "kms:Decrypt", "Resource": key}
    document = {"Version": "2012-10-17", "Statement": [reads, decrypt]}
    iam.put_role_policy(RoleName="fn-role", PolicyName="enc", PolicyDocument=json.dumps(document))
    lam.create_event_source_mapping(FunctionName="fn", EventSourceArn=stream, StartingPosition="LATEST")


def test_shards_added_by_resharding_are_read_from_their_start(aws: tuple[Any, FakeRunner]) -> None:
    # GIVEN a mapping on a one-shard provisioned stream
    client, runner = aws
    _setup(client)
    kinesis = client("kinesis")
    kinesis.create_stream(StreamName="p", ShardCount=1)
    stream = kinesis.describe_stream_summary(StreamName="p")["StreamDescriptionSummary"]["StreamARN"]
    iam = client("iam")
    document = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": READS, "Resource": stream}],
    }
    iam.put_role_policy(RoleName="fn-role", PolicyName="p", PolicyDocument=json.dumps(document))
    client("lambda").create_event_source_mapping(
        FunctionName="fn", EventSourceArn=stream, StartingPosition="LATEST"
    )
    kinesis.put_record(StreamName="p", PartitionKey="a", Data=b'{"n": 1}')
    # WHEN the stream is resharded and records land on the new shards
    kinesis.update_shard_count(StreamName="p", TargetShardCount=2, ScalingType="UNIFORM_SCALING")
    for n in range(2, 12):
        kinesis.put_record(StreamName="p", PartitionKey=f"k{n}", Data=json.dumps({"n": n}).encode())
    # THEN every record is delivered, each shard's in order
    runner.wait_for(lambda: len([r for r in _delivered(runner) if r["eventSourceARN"] == stream]) == 11)
    records = [r for r in _delivered(runner) if r["eventSourceARN"] == stream]
    assert sorted(_payload(r)["n"] for r in records) == list(range(1, 12))
    assert len({r["eventID"].split(":")[0] for r in records}) >= 2
    for shard in {r["eventID"].split(":")[0] for r in records}:
        numbers = [
            int(r["kinesis"]["sequenceNumber"]) for r in records if r["eventID"].startswith(shard + ":")
        ]
        assert numbers == sorted(numbers)


def test_a_failure_of_the_local_aws_in_a_poll_is_recorded_where_a_test_sees_it(
    aws: tuple[Any, FakeRunner],
) -> None:
    # GIVEN a mapping whose delivery fails inside the local AWS itself (not the function's error)
    client, runner = aws

    def broken(event: dict[str, Any]) -> InvokeResult:
        raise RuntimeError("a bug in the delivery")

    runner.answer = broken
    _setup(client)
    # WHEN a record arrives
    _put(client, "a")
    runner.wait_for(lambda: len(runner.events) >= 1)
    deadline = time.monotonic() + 20
    while (mapping := next(iter(esm.get_manager().progress().values())))["last_error"] is None:
        assert time.monotonic() < deadline, mapping
        time.sleep(0.05)  # the poller records the failure right after the invocation raised
    # THEN the mapping's status says so as Lambda's does, and its error names what failed
    assert mapping["last_result"] == "PROBLEM: Internal error"
    assert mapping["last_error"] == "RuntimeError: a bug in the delivery"
