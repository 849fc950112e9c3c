"""`doctable replay`: objects leave the failure bucket only after every record in them succeeded."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from doctable.ops.replay import run_replay

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
