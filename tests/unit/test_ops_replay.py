"""`doctable replay`: objects leave the failure bucket only after every record in them succeeded."""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws

from doctable.operate.replay import run_replay

BUCKET = "failures"
TABLE = "items-dev"


class FakeConsumer:
    """A Lambda client whose consumer fails the sequence numbers in `poison` (partial batch response)."""

    def __init__(self, poison: set[str] | None = None, crash: bool = False) -> None:
        self.poison = poison or set()
        self.crash = crash
        self.events: list[dict[str, Any]] = []

    def invoke(self, FunctionName: str, InvocationType: str, Payload: bytes) -> dict[str, Any]:  # noqa: N803
        event = json.loads(Payload)
        self.events.append(event)
        if self.crash:
            return {"FunctionError": "Unhandled", "Payload": io.BytesIO(b'{"errorMessage": "boom"}')}
        seqs = [r["dynamodb"]["SequenceNumber"] for r in event["Records"]]
        failures = [{"itemIdentifier": s} for s in seqs if s in self.poison]
        return {"Payload": io.BytesIO(json.dumps({"batchItemFailures": failures}).encode())}


def _record(seq: str, pk: str, blobs: list[str]) -> dict[str, Any]:
    keys = {"pk": {"S": pk}, "sk": {"S": "v1"}}
    return {
        "eventName": "REMOVE",
        "eventSource": "aws:dynamodb",
        "dynamodb": {
            "Keys": keys,
            "OldImage": {**keys, "blobs": {"L": [{"S": b} for b in blobs]}},
            "SequenceNumber": seq,
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        },
    }


def _invocation_record(records: list[dict[str, Any]]) -> bytes:
    return json.dumps(
        {
            "requestContext": {"condition": "RetryAttemptsExhausted", "approximateInvokeCount": 6},
            "DDBStreamBatchInfo": {"batchSize": len(records)},
            "payload": json.dumps({"Records": records}),
        }
    ).encode()


@pytest.fixture
def aws() -> Iterator[dict[str, Any]]:
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        ddb = boto3.client("dynamodb", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        ddb.create_table(
            TableName=TABLE,
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        yield {"s3": s3, "ddb": ddb}


def _keys(s3: Any) -> list[str]:
    return [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]


def test_replayed_object_is_removed_only_when_all_records_succeed(aws: dict[str, Any]) -> None:
    # GIVEN two kept batches
    s3 = aws["s3"]
    s3.put_object(
        Bucket=BUCKET, Key="aws/lambda/u/s/a", Body=_invocation_record([_record("1", "a", ["a/v1/x"])])
    )
    s3.put_object(
        Bucket=BUCKET, Key="aws/lambda/u/s/b", Body=_invocation_record([_record("2", "b", ["b/v1/x"])])
    )
    # WHEN the cause is fixed and replay runs
    consumer = FakeConsumer()
    outcomes = run_replay(
        s3=s3, lambda_client=consumer, ddb=aws["ddb"], bucket=BUCKET, function="f", table=TABLE
    )
    # THEN both batches were re-driven and the destination is empty
    assert [o.result for o in outcomes] == ["REPLAYED, removed", "REPLAYED, removed"]
    assert [e["Records"][0]["dynamodb"]["SequenceNumber"] for e in consumer.events] == ["1", "2"]
    assert _keys(s3) == []


def test_still_failing_records_stay_and_done_ones_leave_the_object(aws: dict[str, Any]) -> None:
    s3 = aws["s3"]
    batch = [_record("10", "a", ["a/v1/x"]), _record("11", "b", ["b/v1/x"]), _record("12", "c", ["c/v1/x"])]
    s3.put_object(Bucket=BUCKET, Key="aws/lambda/u/s/k", Body=_invocation_record(batch))
    # WHEN record 11 still fails
    outcomes = run_replay(
        s3=s3,
        lambda_client=FakeConsumer(poison={"11"}),
        ddb=aws["ddb"],
        bucket=BUCKET,
        function="f",
        table=TABLE,
    )
    # THEN the object stays, holding only record 11
    assert outcomes[0].still_failing == ["11"]
    assert outcomes[0].succeeded == 2
    kept = json.loads(s3.get_object(Bucket=BUCKET, Key="aws/lambda/u/s/k")["Body"].read())
    assert [r["dynamodb"]["SequenceNumber"] for r in json.loads(kept["payload"])["Records"]] == ["11"]
    assert kept["requestContext"]["condition"] == "RetryAttemptsExhausted"
    # AND a second replay after the fix empties the destination
    run_replay(s3=s3, lambda_client=FakeConsumer(), ddb=aws["ddb"], bucket=BUCKET, function="f", table=TABLE)
    assert _keys(s3) == []


def test_function_error_keeps_the_object_untouched(aws: dict[str, Any]) -> None:
    s3 = aws["s3"]
    body = _invocation_record([_record("1", "a", ["a/v1/x"])])
    s3.put_object(Bucket=BUCKET, Key="aws/lambda/u/s/a", Body=body)
    outcomes = run_replay(
        s3=s3,
        lambda_client=FakeConsumer(crash=True),
        ddb=aws["ddb"],
        bucket=BUCKET,
        function="f",
        table=TABLE,
    )
    assert outcomes[0].error is not None and "Unhandled" in outcomes[0].error
    assert s3.get_object(Bucket=BUCKET, Key="aws/lambda/u/s/a")["Body"].read() == body


def test_remove_of_a_rewritten_item_never_deletes_what_the_live_item_lists(aws: dict[str, Any]) -> None:
    # GIVEN a kept REMOVE of item a, which has since been written again listing a/v1/keep
    s3, ddb = aws["s3"], aws["ddb"]
    ddb.put_item(
        TableName=TABLE, Item={"pk": {"S": "a"}, "sk": {"S": "v1"}, "blobs": {"L": [{"S": "a/v1/keep"}]}}
    )
    record = _record("1", "a", ["a/v1/keep", "a/v1/gone"])
    s3.put_object(Bucket=BUCKET, Key="aws/lambda/u/s/a", Body=_invocation_record([record]))
    consumer = FakeConsumer()
    # WHEN it is replayed
    outcomes = run_replay(s3=s3, lambda_client=consumer, ddb=ddb, bucket=BUCKET, function="f", table=TABLE)
    # THEN the consumer saw an old image that no longer lists the live item's blob
    assert outcomes[0].rebased == 1
    replayed_blobs = consumer.events[0]["Records"][0]["dynamodb"]["OldImage"]["blobs"]
    assert replayed_blobs == {"L": [{"S": "a/v1/gone"}]}


def test_unreplayable_object_is_kept_and_named(aws: dict[str, Any]) -> None:
    s3 = aws["s3"]
    s3.put_object(Bucket=BUCKET, Key="aws/lambda/u/s/bad", Body=b'{"requestContext": {}}')
    outcomes = run_replay(
        s3=s3, lambda_client=FakeConsumer(), ddb=aws["ddb"], bucket=BUCKET, function="f", table=TABLE
    )
    assert outcomes[0].error is not None and "no payload" in outcomes[0].error
    assert _keys(s3) == ["aws/lambda/u/s/bad"]


def test_dry_run_changes_nothing(aws: dict[str, Any]) -> None:
    s3 = aws["s3"]
    s3.put_object(Bucket=BUCKET, Key="aws/lambda/u/s/a", Body=_invocation_record([_record("1", "a", [])]))
    consumer = FakeConsumer()
    outcomes = run_replay(
        s3=s3, lambda_client=consumer, ddb=aws["ddb"], bucket=BUCKET, function="f", table=TABLE, dry_run=True
    )
    assert outcomes[0].records == 1
    assert consumer.events == []
    assert _keys(s3) == ["aws/lambda/u/s/a"]


class FakeStreams:
    """DynamoDB Streams' GetShardIterator/GetRecords over one shard, as boto3 returns them (times as datetimes);
    a sequence number before the shard's first answers TrimmedDataAccessException, as AWS does."""

    def __init__(self, arn: str, shard: str, records: list[dict[str, Any]]) -> None:
        self.arn, self.shard, self.records = arn, shard, records

    def get_shard_iterator(self, **kwargs: Any) -> dict[str, str]:
        from botocore.exceptions import ClientError

        assert (kwargs["StreamArn"], kwargs["ShardId"]) == (self.arn, self.shard)
        assert kwargs["ShardIteratorType"] == "AT_SEQUENCE_NUMBER"
        if int(kwargs["SequenceNumber"]) < int(self.records[0]["dynamodb"]["SequenceNumber"]):
            error = {"Code": "TrimmedDataAccessException", "Message": "the data was trimmed"}
            raise ClientError({"Error": error}, "GetShardIterator")
        at = [r["dynamodb"]["SequenceNumber"] for r in self.records].index(kwargs["SequenceNumber"])
        return {"ShardIterator": str(at)}

    def get_records(self, ShardIterator: str, Limit: int) -> dict[str, Any]:  # noqa: N803
        at = int(ShardIterator)
        page = self.records[at : at + 2]  # small pages: the range spans several
        return {"Records": copy.deepcopy(page), "NextShardIterator": str(at + 2)}


@pytest.fixture
def stream() -> dict[str, Any]:
    """GIVEN a stream holding four REMOVE records; the metadata Lambda kept for the middle three."""
    arn = "arn:aws:dynamodb:us-east-1:123456789012:table/items-dev/stream/2024-05-01T00:00:00.000"
    records = []
    for n, pk in enumerate("abcd", start=1):
        record = _record(f"10{n}", pk, [f"{pk}/v1/x"])
        record["dynamodb"]["ApproximateCreationDateTime"] = datetime(2026, 1, 1, 0, 0, n, tzinfo=UTC)
        records.append(record)
    info = {
        "shardId": "shardId-1",
        "startSequenceNumber": "102",
        "endSequenceNumber": "104",
        "streamArn": arn,
        "batchSize": 3,
    }
    return {
        "client": FakeStreams(arn, "shardId-1", records),
        "info": info,
        "sequence_numbers": ["102", "103", "104"],
    }


def _metadata_only(info: dict[str, Any]) -> bytes:
    """The invocation record Lambda writes when the payload is not kept: DDBStreamBatchInfo, no payload."""
    return json.dumps(
        {"requestContext": {"condition": "RetryAttemptsExhausted"}, "DDBStreamBatchInfo": info}
    ).encode()


def test_metadata_only_record_is_reread_from_the_stream(aws: dict[str, Any], stream: dict[str, Any]) -> None:
    # GIVEN a metadata-only invocation record whose range the stream still holds
    s3 = aws["s3"]
    s3.put_object(Bucket=BUCKET, Key="aws/lambda/u/s/meta", Body=_metadata_only(stream["info"]))
    consumer = FakeConsumer()

    # WHEN it is replayed
    (outcome,) = run_replay(
        s3=s3, lambda_client=consumer, ddb=aws["ddb"], bucket=BUCKET, function="f", table=TABLE,
        streams=stream["client"],
    )  # fmt: skip

    # THEN the consumer got exactly that range, shaped as Lambda delivers it, and the object is removed
    (event,) = consumer.events
    assert [r["dynamodb"]["SequenceNumber"] for r in event["Records"]] == stream["sequence_numbers"]
    assert all(r["eventSourceARN"] == stream["info"]["streamArn"] for r in event["Records"])
    assert all(isinstance(r["dynamodb"]["ApproximateCreationDateTime"], int) for r in event["Records"])
    assert (outcome.result, outcome.source) == ("REPLAYED, removed", "stream")
    assert _keys(s3) == []


def test_metadata_only_record_the_stream_no_longer_holds_is_kept_with_its_reason(
    aws: dict[str, Any], stream: dict[str, Any]
) -> None:
    # GIVEN a metadata-only record naming a range the stream does not hold (trimmed)
    s3 = aws["s3"]
    gone = dict(stream["info"], startSequenceNumber="1", endSequenceNumber="2")  # before the shard's first
    s3.put_object(Bucket=BUCKET, Key="aws/lambda/u/s/old", Body=_metadata_only(gone))
    consumer = FakeConsumer()

    # WHEN it is replayed, and dry-run
    (outcome,) = run_replay(
        s3=s3, lambda_client=consumer, ddb=aws["ddb"], bucket=BUCKET, function="f", table=TABLE,
        streams=stream["client"],
    )  # fmt: skip
    (dry,) = run_replay(
        s3=s3, lambda_client=consumer, ddb=aws["ddb"], bucket=BUCKET, function="f", table=TABLE,
        streams=stream["client"], dry_run=True,
    )  # fmt: skip

    # THEN nothing is invoked, the object stays, and the one-line reason names the range (not a function error)
    assert consumer.events == []
    assert _keys(s3) == ["aws/lambda/u/s/old"]
    for result in (outcome, dry):
        assert result.result == "KEPT (not replayable)"
        assert result.error is not None and "the stream no longer holds records 1..2" in result.error
        assert "\n" not in result.error


def test_a_refused_stream_read_is_the_callers_refusal_not_a_trimmed_stream(
    aws: dict[str, Any], stream: dict[str, Any]
) -> None:
    # GIVEN a metadata-only record, and a caller whose stream read is refused
    from botocore.exceptions import ClientError

    class RefusedStreams:
        def get_shard_iterator(self, **_: Any) -> Any:
            error = {
                "Code": "AccessDeniedException",
                "Message": "not authorized to perform: GetShardIterator",
            }
            raise ClientError({"Error": error}, "GetShardIterator")

    s3 = aws["s3"]
    s3.put_object(Bucket=BUCKET, Key="aws/lambda/u/s/meta", Body=_metadata_only(stream["info"]))
    # WHEN it is replayed  THEN the refusal propagates (the command prints it as one line, exit 4), and the
    # object stays for a replay with the grant
    with pytest.raises(ClientError, match="AccessDeniedException"):
        run_replay(
            s3=s3, lambda_client=FakeConsumer(), ddb=aws["ddb"], bucket=BUCKET, function="f", table=TABLE,
            streams=RefusedStreams(),
        )  # fmt: skip
    assert _keys(s3) == ["aws/lambda/u/s/meta"]


def test_dry_run_of_a_metadata_only_record_says_what_would_be_replayed(
    aws: dict[str, Any], stream: dict[str, Any]
) -> None:
    # GIVEN a metadata-only record  WHEN dry-run  THEN no traceback: the records it would replay are counted
    s3 = aws["s3"]
    s3.put_object(Bucket=BUCKET, Key="aws/lambda/u/s/meta", Body=_metadata_only(stream["info"]))
    (outcome,) = run_replay(
        s3=s3, lambda_client=FakeConsumer(), ddb=aws["ddb"], bucket=BUCKET, function="f", table=TABLE,
        streams=stream["client"], dry_run=True,
    )  # fmt: skip
    assert (outcome.records, outcome.result) == (3, "WOULD REPLAY (stream)")
    assert _keys(s3) == ["aws/lambda/u/s/meta"]


def test_a_stream_read_that_fails_in_the_client_keeps_the_batch_naming_the_error(
    aws: dict[str, Any], stream: dict[str, Any]
) -> None:
    # GIVEN a metadata-only record, and a stream read that fails before AWS answers (no error code)
    from botocore.exceptions import EndpointConnectionError

    class UnreachableStreams(FakeStreams):
        def get_records(self, ShardIterator: str, Limit: int) -> dict[str, Any]:  # noqa: N803
            raise EndpointConnectionError(endpoint_url="https://streams.dynamodb.us-east-1.amazonaws.com")

    client = stream["client"]
    s3 = aws["s3"]
    s3.put_object(Bucket=BUCKET, Key="aws/lambda/u/s/meta", Body=_metadata_only(stream["info"]))
    # WHEN it is replayed
    (outcome,) = run_replay(
        s3=s3, lambda_client=FakeConsumer(), ddb=aws["ddb"], bucket=BUCKET, function="f", table=TABLE,
        streams=UnreachableStreams(client.arn, client.shard, client.records),
    )  # fmt: skip
    # THEN the object is kept, its reason naming the error's class
    assert outcome.result == "KEPT (not replayable)"
    assert outcome.error == (
        "the stream no longer holds records 102..104 of shard shardId-1 (EndpointConnectionError): "
        "kept for inspection"
    )
    assert _keys(s3) == ["aws/lambda/u/s/meta"]


def test_a_record_replay_cannot_read_is_not_reported_as_a_trimmed_stream(
    aws: dict[str, Any], stream: dict[str, Any]
) -> None:
    # GIVEN a metadata-only record whose stream answers a record without its sequence number
    client = stream["client"]

    class BrokenStreams(FakeStreams):
        def get_records(self, ShardIterator: str, Limit: int) -> dict[str, Any]:  # noqa: N803
            page = super().get_records(ShardIterator, Limit)
            del page["Records"][0]["dynamodb"]["SequenceNumber"]
            return page

    s3 = aws["s3"]
    s3.put_object(Bucket=BUCKET, Key="aws/lambda/u/s/meta", Body=_metadata_only(stream["info"]))
    # WHEN it is replayed  THEN the fault is raised as what it is, not disguised as the stream's trimming, and the
    # object stays
    with pytest.raises(KeyError, match="SequenceNumber"):
        run_replay(
            s3=s3, lambda_client=FakeConsumer(), ddb=aws["ddb"], bucket=BUCKET, function="f", table=TABLE,
            streams=BrokenStreams(client.arn, client.shard, client.records),
        )  # fmt: skip
    assert _keys(s3) == ["aws/lambda/u/s/meta"]
