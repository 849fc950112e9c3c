"""The local AWS's Kinesis Data Streams for DynamoDB (local/services/dynamodb/kinesis_destination.py) and Kinesis streams from
templates (local/services/kinesis.py): the destination API's shapes and refusals, and each item change as the
record AWS puts into the Kinesis data stream."""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.dynamodb.models import dynamodb_backends

from local import patching, services, state
from local.auth import requests
from local.services.dynamodb import kinesis_destination as dynamodb_kinesis
from local.services.dynamodb import ttl

pytestmark = pytest.mark.unit

REGION = state.REGION


@contextlib.contextmanager
def isolated_services() -> Iterator[None]:
    """The local AWS's adaptations of moto for the block, undone after it: the later tests of the session (ops
    tests on plain in-process moto) see moto as it was. local/patching.py journals every replacement."""
    point = patching.checkpoint()
    try:
        services.apply()
        yield
    finally:
        patching.rollback(point)


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x")):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with isolated_services(), mock_aws():
        yield boto3.client("dynamodb", region_name=REGION), boto3.client("kinesis", region_name=REGION)


def _table(ddb: Any, name: str = "tbl", **extra: Any) -> None:
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        **extra,
    )


def _stream(kinesis: Any, name: str = "s") -> str:
    kinesis.create_stream(StreamName=name, StreamModeDetails={"StreamMode": "ON_DEMAND"})
    return str(kinesis.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]["StreamARN"])


def _records(kinesis: Any, name: str = "s") -> list[tuple[str, str, dict[str, Any]]]:
    """(shard id, partition key, decoded record) of everything in the stream, shard by shard."""
    out = []
    for shard in kinesis.list_shards(StreamName=name)["Shards"]:
        iterator = kinesis.get_shard_iterator(
            StreamName=name, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        for record in kinesis.get_records(ShardIterator=iterator)["Records"]:
            out.append((shard["ShardId"], record["PartitionKey"], json.loads(record["Data"])))
    return out


def _error(call: Any, **kwargs: Any) -> tuple[str, str]:
    with pytest.raises(ClientError) as raised:
        call(**kwargs)
    return raised.value.response["Error"]["Code"], raised.value.response["Error"]["Message"]


# ------------------------------------------------------------------------------------------------ the API
def test_enable_answers_enabling_then_describe_reports_active_and_disable_disabled(
    aws: tuple[Any, Any],
) -> None:
    # GIVEN a table and a Kinesis stream
    ddb, kinesis = aws
    _table(ddb)
    arn = _stream(kinesis)
    # WHEN the destination is enabled with microsecond timestamps
    enabled = ddb.enable_kinesis_streaming_destination(
        TableName="tbl",
        StreamArn=arn,
        EnableKinesisStreamingConfiguration={"ApproximateCreationDateTimePrecision": "MICROSECOND"},
    )
    # THEN
    assert {k: v for k, v in enabled.items() if k != "ResponseMetadata"} == {
        "TableName": "tbl",
        "StreamArn": arn,
        "DestinationStatus": "ENABLING",
        "EnableKinesisStreamingConfiguration": {"ApproximateCreationDateTimePrecision": "MICROSECOND"},
    }
    described = ddb.describe_kinesis_streaming_destination(TableName="tbl")
    assert described["KinesisDataStreamDestinations"] == [
        {
            "StreamArn": arn,
            "DestinationStatus": "ACTIVE",
            "ApproximateCreationDateTimePrecision": "MICROSECOND",
        }
    ]
    assert "KinesisDataStreamDestinations" not in ddb.describe_table(TableName="tbl")["Table"]
    updated = ddb.update_kinesis_streaming_destination(
        TableName="tbl",
        StreamArn=arn,
        UpdateKinesisStreamingConfiguration={"ApproximateCreationDateTimePrecision": "MILLISECOND"},
    )
    assert updated["DestinationStatus"] == "UPDATING"
    disabled = ddb.disable_kinesis_streaming_destination(TableName="tbl", StreamArn=arn)
    assert disabled["DestinationStatus"] == "DISABLING"
    destinations = ddb.describe_kinesis_streaming_destination(TableName="tbl")[
        "KinesisDataStreamDestinations"
    ]
    assert [(d["DestinationStatus"], d["ApproximateCreationDateTimePrecision"]) for d in destinations] == [
        ("DISABLED", "MILLISECOND")
    ]


def test_refusals_missing_table_missing_stream_second_destination_and_wrong_states(
    aws: tuple[Any, Any],
) -> None:
    ddb, kinesis = aws
    _table(ddb)
    arn = _stream(kinesis)
    other = _stream(kinesis, "other")
    assert _error(ddb.enable_kinesis_streaming_destination, TableName="nope", StreamArn=arn) == (
        "ResourceNotFoundException",
        "Requested resource not found: Table: nope not found",
    )
    missing = arn + "-gone"
    assert _error(ddb.enable_kinesis_streaming_destination, TableName="tbl", StreamArn=missing) == (
        "ResourceNotFoundException",
        f"Requested resource not found: Stream: {missing} not found",
    )
    assert _error(ddb.disable_kinesis_streaming_destination, TableName="tbl", StreamArn=arn)[0] == (
        "ValidationException"
    )
    ddb.enable_kinesis_streaming_destination(TableName="tbl", StreamArn=arn)
    for stream in (arn, other):  # the same one again, or a second one: one active destination per table
        code, message = _error(ddb.enable_kinesis_streaming_destination, TableName="tbl", StreamArn=stream)
        assert code == "ValidationException"
        assert "must be DISABLED" in message
    code, message = _error(
        ddb.update_kinesis_streaming_destination,
        TableName="tbl",
        StreamArn=arn,
        UpdateKinesisStreamingConfiguration={"ApproximateCreationDateTimePrecision": "MILLISECOND"},
    )
    assert (code, message) == (
        "ValidationException",
        "Invalid Request: Precision is already set to the desired value of MILLISECOND.",
    )


# ------------------------------------------------------------------------------------------ forwarding
def test_each_change_is_one_record_in_aws_format_without_a_dynamodb_stream(aws: tuple[Any, Any]) -> None:
    # GIVEN a table without a DynamoDB stream, streaming to Kinesis
    ddb, kinesis = aws
    _table(ddb)
    arn = _stream(kinesis)
    ddb.enable_kinesis_streaming_destination(TableName="tbl", StreamArn=arn)
    # WHEN an item is inserted (by UpdateItem), modified, put unchanged, and deleted
    ddb.update_item(
        TableName="tbl",
        Key={"pk": {"S": "a"}},
        UpdateExpression="SET v = :v",
        ExpressionAttributeValues={":v": {"N": "1"}},
    )
    ddb.put_item(TableName="tbl", Item={"pk": {"S": "a"}, "v": {"N": "2"}})
    ddb.put_item(TableName="tbl", Item={"pk": {"S": "a"}, "v": {"N": "2"}})  # changes nothing: no record
    ddb.delete_item(TableName="tbl", Key={"pk": {"S": "a"}})
    # THEN one record per change, on one shard with one partition key, in order
    records = _records(kinesis)
    assert [r["eventName"] for _, _, r in records] == ["INSERT", "MODIFY", "REMOVE"]
    assert len({(shard, key) for shard, key, _ in records}) == 1
    insert, modify, remove = (r for _, _, r in records)
    assert set(insert) == {
        "awsRegion", "eventID", "eventName", "userIdentity", "recordFormat", "tableName", "dynamodb", "eventSource",
    }  # fmt: skip
    assert (insert["awsRegion"], insert["recordFormat"], insert["tableName"], insert["eventSource"]) == (
        REGION,
        "application/json",
        "tbl",
        "aws:dynamodb",
    )
    assert insert["userIdentity"] is None
    assert insert["dynamodb"]["Keys"] == {"pk": {"S": "a"}}
    assert insert["dynamodb"]["NewImage"] == {"pk": {"S": "a"}, "v": {"N": "1"}}
    assert "OldImage" not in insert["dynamodb"]
    assert insert["dynamodb"]["ApproximateCreationDateTimePrecision"] == "MILLISECOND"
    assert len(str(insert["dynamodb"]["ApproximateCreationDateTime"])) == 13  # epoch milliseconds
    assert insert["dynamodb"]["SizeBytes"] > 0
    assert modify["dynamodb"]["OldImage"] == {"pk": {"S": "a"}, "v": {"N": "1"}}
    assert modify["dynamodb"]["NewImage"] == {"pk": {"S": "a"}, "v": {"N": "2"}}
    assert remove["dynamodb"]["OldImage"] == {"pk": {"S": "a"}, "v": {"N": "2"}}
    assert "NewImage" not in remove["dynamodb"]


def test_batch_writes_and_committed_transactions_are_forwarded_cancelled_ones_not(
    aws: tuple[Any, Any],
) -> None:
    ddb, kinesis = aws
    _table(ddb, StreamSpecification={"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"})
    arn = _stream(kinesis)
    ddb.enable_kinesis_streaming_destination(TableName="tbl", StreamArn=arn)
    ddb.batch_write_item(RequestItems={"tbl": [{"PutRequest": {"Item": {"pk": {"S": "b"}}}}]})
    ddb.transact_write_items(TransactItems=[{"Put": {"TableName": "tbl", "Item": {"pk": {"S": "c"}}}}])
    with pytest.raises(ClientError):
        ddb.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": "tbl", "Item": {"pk": {"S": "d"}}}},
                {
                    "Put": {
                        "TableName": "tbl",
                        "Item": {"pk": {"S": "b"}},
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
            ]
        )
    records = _records(kinesis)
    assert sorted(r["dynamodb"]["Keys"]["pk"]["S"] for _, _, r in records) == ["b", "c"]
    # images are NEW_AND_OLD whatever the DynamoDB stream's view type
    assert all("NewImage" in r["dynamodb"] for _, _, r in records)


def test_ttl_deletion_carries_the_ttl_service_identity_and_microsecond_precision(
    aws: tuple[Any, Any],
) -> None:
    ddb, kinesis = aws
    _table(ddb)
    ddb.update_time_to_live(
        TableName="tbl", TimeToLiveSpecification={"Enabled": True, "AttributeName": "exp"}
    )
    arn = _stream(kinesis)
    ddb.enable_kinesis_streaming_destination(
        TableName="tbl",
        StreamArn=arn,
        EnableKinesisStreamingConfiguration={"ApproximateCreationDateTimePrecision": "MICROSECOND"},
    )
    ddb.put_item(TableName="tbl", Item={"pk": {"S": "x"}, "exp": {"N": "1700000000"}})
    assert ttl.sweep_once(now=1_700_000_100) == 1
    insert, remove = (r for _, _, r in _records(kinesis))
    assert insert["userIdentity"] is None
    assert remove["eventName"] == "REMOVE"
    assert remove["userIdentity"] == {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
    assert remove["dynamodb"]["ApproximateCreationDateTimePrecision"] == "MICROSECOND"
    assert len(str(remove["dynamodb"]["ApproximateCreationDateTime"])) == 16  # epoch microseconds


def test_a_disabled_destination_forwards_nothing(aws: tuple[Any, Any]) -> None:
    ddb, kinesis = aws
    _table(ddb)
    arn = _stream(kinesis)
    ddb.enable_kinesis_streaming_destination(TableName="tbl", StreamArn=arn)
    ddb.disable_kinesis_streaming_destination(TableName="tbl", StreamArn=arn)
    ddb.put_item(TableName="tbl", Item={"pk": {"S": "a"}})
    assert _records(kinesis) == []


# --------------------------------------------------------------------------------------- CloudFormation
TEMPLATE: dict[str, Any] = {
    "Resources": {
        "Stream": {
            "Type": "AWS::Kinesis::Stream",
            "Properties": {
                "StreamModeDetails": {"StreamMode": "ON_DEMAND"},
                "StreamEncryption": {"EncryptionType": "KMS", "KeyId": "alias/aws/kinesis"},
                "RetentionPeriodHours": 24,
                "Tags": [{"Key": "app", "Value": "doctable"}],
            },
        },
        "Table": {
            "Type": "AWS::DynamoDB::Table",
            "Properties": {
                "TableName": "cfn-table",
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
                "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
                "BillingMode": "PAY_PER_REQUEST",
                "KinesisStreamSpecification": {"StreamArn": {"Fn::GetAtt": ["Stream", "Arn"]}},
            },
        },
    },
    "Outputs": {
        "StreamName": {"Value": {"Ref": "Stream"}},
        "StreamArn": {"Value": {"Fn::GetAtt": ["Stream", "Arn"]}},
    },
}


def test_template_stream_and_table_destination_created_updated_and_deleted(aws: tuple[Any, Any]) -> None:
    # GIVEN a stack of an on-demand encrypted stream and a table streaming to it
    ddb, kinesis = aws
    cfn = boto3.client("cloudformation", region_name=REGION)
    cfn.create_stack(StackName="k", TemplateBody=json.dumps(TEMPLATE))
    outputs = {
        o["OutputKey"]: o["OutputValue"] for o in cfn.describe_stacks(StackName="k")["Stacks"][0]["Outputs"]
    }
    # THEN the stream has its mode, shards, encryption, retention and tags
    summary = kinesis.describe_stream_summary(StreamName=outputs["StreamName"])["StreamDescriptionSummary"]
    assert summary["StreamARN"] == outputs["StreamArn"]
    assert summary["StreamModeDetails"] == {"StreamMode": "ON_DEMAND"}
    assert summary["OpenShardCount"] == 4
    assert (summary["EncryptionType"], summary["KeyId"], summary["RetentionPeriodHours"]) == (
        "KMS",
        "alias/aws/kinesis",
        24,
    )
    tags = kinesis.list_tags_for_stream(StreamName=outputs["StreamName"])["Tags"]
    assert {"Key": "app", "Value": "doctable"} in tags
    destinations = ddb.describe_kinesis_streaming_destination(TableName="cfn-table")[
        "KinesisDataStreamDestinations"
    ]
    assert [(d["StreamArn"], d["DestinationStatus"]) for d in destinations] == [
        (outputs["StreamArn"], "ACTIVE")
    ]
    # WHEN the precision changes, then the specification is removed
    template = json.loads(json.dumps(TEMPLATE))
    spec = template["Resources"]["Table"]["Properties"]["KinesisStreamSpecification"]
    spec["ApproximateCreationDateTimePrecision"] = "MICROSECOND"
    cfn.update_stack(StackName="k", TemplateBody=json.dumps(template))
    destinations = ddb.describe_kinesis_streaming_destination(TableName="cfn-table")[
        "KinesisDataStreamDestinations"
    ]
    assert [d["ApproximateCreationDateTimePrecision"] for d in destinations] == ["MICROSECOND"]
    del template["Resources"]["Table"]["Properties"]["KinesisStreamSpecification"]
    cfn.update_stack(StackName="k", TemplateBody=json.dumps(template))
    destinations = ddb.describe_kinesis_streaming_destination(TableName="cfn-table")[
        "KinesisDataStreamDestinations"
    ]
    assert [d["DestinationStatus"] for d in destinations] == ["DISABLED"]
    # AND deleting the stack deletes the stream
    cfn.delete_stack(StackName="k")
    assert outputs["StreamName"] not in kinesis.list_streams()["StreamNames"]


# ------------------------------------------------------------------------------------------------ IAM
def _kinesis_environ(operation: str) -> dict[str, Any]:
    credential = "AKIAX/20260101/us-east-1/kinesis/aws4_request"
    return {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/",
        "QUERY_STRING": "",
        "HTTP_HOST": "localhost:4566",
        "HTTP_AUTHORIZATION": f"AWS4-HMAC-SHA256 Credential={credential}, SignedHeaders=host, Signature=0",
        "HTTP_X_AMZ_TARGET": f"Kinesis_20131202.{operation}",
    }


@pytest.mark.parametrize(
    ("operation", "body", "resource"),
    [
        ("PutRecord", {"StreamName": "s", "PartitionKey": "k", "Data": "eA=="}, "stream/s"),
        (
            "DescribeStreamSummary",
            {"StreamARN": f"arn:aws:kinesis:{REGION}:{state.ACCOUNT_ID}:stream/s"},
            "stream/s",
        ),
        ("GetRecords", {"ShardIterator": base64.b64encode(b"s:shardId-000000000000:0").decode()}, "stream/s"),
        ("ListStreams", {}, None),
    ],
)
def test_kinesis_calls_are_authorized_on_the_stream_they_name(
    operation: str, body: dict[str, Any], resource: str | None
) -> None:
    parsed = requests.parse(_kinesis_environ(operation), json.dumps(body).encode())
    assert parsed is not None
    expected = f"arn:aws:kinesis:{REGION}:{state.ACCOUNT_ID}:{resource}" if resource else "*"
    assert [(c.action, c.resource) for c in parsed.checks] == [(f"kinesis:{operation}", expected)]


def test_an_upsert_is_one_insert_in_both_the_dynamodb_stream_and_the_kinesis_stream(
    aws: tuple[Any, Any],
) -> None:
    # GIVEN a table with a DynamoDB stream and a Kinesis destination
    ddb, kinesis = aws
    _table(ddb, StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"})
    ddb.enable_kinesis_streaming_destination(TableName="tbl", StreamArn=_stream(kinesis))
    # WHEN UpdateItem creates an item
    ddb.update_item(
        TableName="tbl",
        Key={"pk": {"S": "a"}},
        UpdateExpression="SET v = :v",
        ExpressionAttributeValues={":v": {"N": "1"}},
    )
    # THEN each stream has one INSERT with the whole item
    table = dynamodb_backends[state.ACCOUNT_ID][REGION].tables["tbl"]
    records = [r.to_json() for r in table.stream_shard.items]
    whole = {"pk": {"S": "a"}, "v": {"N": "1"}}
    assert [(r["eventName"], r["dynamodb"]["NewImage"]) for r in records] == [("INSERT", whole)]
    assert [(r["eventName"], r["dynamodb"]["NewImage"]) for _, _, r in _records(kinesis)] == [
        ("INSERT", whole)
    ]


def test_a_template_naming_another_stream_moves_the_destination(aws: tuple[Any, Any]) -> None:
    # GIVEN a table whose template streams to one stream
    ddb, kinesis = aws
    _table(ddb)
    first, second = _stream(kinesis), _stream(kinesis, "second")
    table = dynamodb_backends[state.ACCOUNT_ID][REGION].tables["tbl"]
    dynamodb_kinesis.apply_template(table, {"KinesisStreamSpecification": {"StreamArn": first}})
    # WHEN the template names another stream
    dynamodb_kinesis.apply_template(table, {"KinesisStreamSpecification": {"StreamArn": second}})
    # THEN the first is disabled and the second active, and a change goes to the second only
    destinations = ddb.describe_kinesis_streaming_destination(TableName="tbl")[
        "KinesisDataStreamDestinations"
    ]
    assert [(d["StreamArn"], d["DestinationStatus"]) for d in destinations] == [
        (first, "DISABLED"),
        (second, "ACTIVE"),
    ]
    ddb.put_item(TableName="tbl", Item={"pk": {"S": "a"}})
    assert (len(_records(kinesis)), len(_records(kinesis, "second"))) == (0, 1)
