"""The local AWS's DynamoDB Streams API as AWS answers it (local/services/dynamodb/streams_api.py) and the
requests DynamoDB refuses before it reads them (local/services/dynamodb/wire.py).

boto3 against moto in-process with the local AWS's adaptations; botocore's own parameter validation is off, so
what is refused is refused by the local AWS, as AWS would."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from moto import mock_aws

from local import state
from local.services.dynamodb.api import keys, wire
from local.services.dynamodb.api import streams as streams_api
from tests.unit.test_local_kinesis_destination import isolated_services

pytestmark = pytest.mark.unit

CONFIG = Config(
    parameter_validation=False, retries={"total_max_attempts": 1}, account_id_endpoint_mode="disabled"
)


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x")):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    streams_api.RETIRED.clear()
    with isolated_services(), mock_aws():
        yield (
            boto3.client("dynamodb", region_name=state.REGION, config=CONFIG),
            boto3.client("dynamodbstreams", region_name=state.REGION, config=CONFIG),
        )


def _table(ddb: Any, name: str, stream: bool = True) -> None:
    extra = {"StreamSpecification": {"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"}} if stream else {}
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        **extra,
    )


def _indexed(ddb: Any, name: str, key: str, kind: str) -> None:
    """A table keyed by a string ``pk``, with an index ``by<key>`` keyed by ``key`` of type ``kind``."""
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": key, "AttributeType": kind},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": f"by{key}",
                "KeySchema": [{"AttributeName": key, "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )


def _code(error: pytest.ExceptionInfo[ClientError]) -> str:
    return str(error.value.response["Error"]["Code"])


def test_describe_stream_pages_from_after_the_exclusive_start_shard_and_filters_children(aws: Any) -> None:
    # GIVEN a table with a stream
    ddb, streams = aws
    _table(ddb, "paged")
    arn = streams.list_streams(TableName="paged")["Streams"][0]["StreamArn"]
    described = streams.describe_stream(StreamArn=arn, Limit=10)["StreamDescription"]
    shard = described["Shards"][-1]["ShardId"]
    # THEN its one shard ends the listing, and paging from after it lists nothing (moto listed it again)
    assert "LastEvaluatedShardId" not in described
    after = streams.describe_stream(StreamArn=arn, ExclusiveStartShardId=shard)["StreamDescription"]
    assert after["Shards"] == [] and after["StreamArn"] == arn
    # AND the shard's children (it never split) are none; a filter naming no shard, or a shard the stream lacks,
    # is refused
    children = streams.describe_stream(StreamArn=arn, ShardFilter={"Type": "CHILD_SHARDS", "ShardId": shard})
    assert children["StreamDescription"]["Shards"] == []
    with pytest.raises(ClientError) as missing:
        streams.describe_stream(StreamArn=arn, ShardFilter={"Type": "CHILD_SHARDS"})
    assert _code(missing) == "ValidationException" and "ShardFilter.ShardId" in str(missing.value)
    with pytest.raises(ClientError) as unknown:
        streams.describe_stream(
            StreamArn=arn, ShardFilter={"Type": "CHILD_SHARDS", "ShardId": "shardId-" + "9" * 30}
        )
    assert _code(unknown) == "ValidationException"
    # AND an ARN that is not a stream's is a ValidationException (moto: HTTP 500), one of a table without a stream
    # ResourceNotFoundException
    with pytest.raises(ClientError) as malformed:
        streams.describe_stream(StreamArn="not-a-stream-arn-at-all-but-long-enough-for-the-model")
    assert (_code(malformed), malformed.value.response["Error"]["Message"]) == (
        "ValidationException",
        "Invalid StreamArn",
    )
    with pytest.raises(ClientError) as gone:
        streams.describe_stream(StreamArn=arn.replace("/paged/", "/absent/"))
    assert _code(gone) == "ResourceNotFoundException"


def test_list_streams_pages_by_stream_arn_and_lists_enabled_streams_only(aws: Any) -> None:
    # GIVEN three tables with a stream and one without
    ddb, streams = aws
    for name in ("aaa", "bbb", "ccc"):
        _table(ddb, name)
    _table(ddb, "plain", stream=False)
    # WHEN they are listed two at a time
    first = streams.list_streams(Limit=2)
    second = streams.list_streams(Limit=2, ExclusiveStartStreamArn=first["LastEvaluatedStreamArn"])
    # THEN each page ends with the ARN of its last stream while more remain, and every stream is listed once
    assert first["LastEvaluatedStreamArn"] == first["Streams"][-1]["StreamArn"]
    assert "LastEvaluatedStreamArn" not in second
    assert [s["TableName"] for s in first["Streams"] + second["Streams"]] == ["aaa", "bbb", "ccc"]
    # AND a table without a stream has none; a deleted table's ARN still pages on
    assert streams.list_streams(TableName="plain")["Streams"] == []
    ddb.delete_table(TableName="aaa")
    resumed = streams.list_streams(ExclusiveStartStreamArn=first["Streams"][0]["StreamArn"])
    assert [s["TableName"] for s in resumed["Streams"]] == ["bbb", "ccc"]
    # AND a start that is not a stream ARN, or a Limit of 0, is a ValidationException
    for call in ({"ExclusiveStartStreamArn": "x" * 40}, {"Limit": 0}):
        with pytest.raises(ClientError) as refused:
            streams.list_streams(**call)
        assert _code(refused) == "ValidationException"


def test_get_shard_iterator_needs_a_sequence_number_exactly_where_its_type_does(aws: Any) -> None:
    ddb, streams = aws
    _table(ddb, "iterated")
    arn = streams.list_streams(TableName="iterated")["Streams"][0]["StreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]
    sequence = shard["SequenceNumberRange"]["StartingSequenceNumber"]
    refused = {
        "AT_SEQUENCE_NUMBER": {},
        "AFTER_SEQUENCE_NUMBER": {},
        "TRIM_HORIZON": {"SequenceNumber": sequence},
        "LATEST": {"SequenceNumber": sequence},
    }
    for kind, extra in refused.items():
        with pytest.raises(ClientError) as error:
            streams.get_shard_iterator(
                StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType=kind, **extra
            )
        assert _code(error) == "ValidationException", kind
    with pytest.raises(ClientError) as no_shard:
        streams.get_shard_iterator(StreamArn=arn, ShardId="shardId-" + "1" * 30, ShardIteratorType="LATEST")
    assert _code(no_shard) == "ResourceNotFoundException"
    assert no_shard.value.response["Error"]["Message"] == streams_api.NO_SHARD
    # AND GetRecords reads a real iterator up to a Limit of 1000 and refuses 1001 and an iterator never handed out
    iterator = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
    )
    ddb.put_item(TableName="iterated", Item={"pk": {"S": "a"}})
    assert len(streams.get_records(ShardIterator=iterator["ShardIterator"], Limit=1000)["Records"]) == 1
    for bad in ({"ShardIterator": iterator["ShardIterator"], "Limit": 1001}, {"ShardIterator": "x" * 60}):
        with pytest.raises(ClientError) as error:
            streams.get_records(**bad)
        assert _code(error) == "ValidationException"


def test_update_table_refuses_a_second_stream_and_disabling_none(aws: Any) -> None:
    ddb, _ = aws
    _table(ddb, "streamed")
    _table(ddb, "plain", stream=False)
    for name, spec in (
        ("streamed", {"StreamEnabled": True, "StreamViewType": "OLD_IMAGE"}),
        ("plain", {"StreamEnabled": False}),
    ):
        with pytest.raises(ClientError) as error:
            ddb.update_table(TableName=name, StreamSpecification=spec)
        assert _code(error) == "ValidationException", name
        assert error.value.response["Error"]["Message"].endswith(f"TableName: {name}")
    # AND the stream is still there, of its type
    described = ddb.describe_table(TableName="streamed")["Table"]["StreamSpecification"]
    assert described == {"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"}


def test_a_request_is_checked_against_the_model_before_the_operation_runs(aws: Any) -> None:
    ddb, _ = aws
    # WHEN a CreateTable breaks two constraints of the model
    with pytest.raises(ClientError) as error:
        ddb.create_table(
            TableName="checked",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "X"}],
            BillingMode="PAY_PER_REQUEST",
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "Fisk"},
        )
    # THEN both are named in one ValidationException, in AWS's words, and no table was made
    assert _code(error) == "ValidationException"
    assert error.value.response["Error"]["Message"] == (
        "2 validation errors detected: Value 'X' at 'attributeDefinitions.1.member.attributeType' failed to "
        "satisfy constraint: Member must satisfy enum value set: [S, N, B]; Value 'Fisk' at "
        "'streamSpecification.streamViewType' failed to satisfy constraint: Member must satisfy enum value set: "
        "[NEW_IMAGE, OLD_IMAGE, NEW_AND_OLD_IMAGES, KEYS_ONLY]"
    )
    assert ddb.list_tables()["TableNames"] == []
    with pytest.raises(ClientError) as limit:
        ddb.scan(TableName="whatever", Limit=0)
    assert "Value '0' at 'limit' failed to satisfy constraint" in str(limit.value)


@pytest.mark.parametrize(
    ("target", "body", "error_type"),
    [
        ("DynamoDB_20120810.BogusOperation", b"{}", wire.UNKNOWN_OPERATION),
        ("DynamoDB_20120810.PutItem", b"{broken json", wire.SERIALIZATION),
        ("DynamoDB_20120810.PutItem", b"[1, 2]", wire.SERIALIZATION),
        ("DynamoDB_20120810.PutItem", b"{" * 5000 + b"}" * 5000, wire.SERIALIZATION),
        ("DynamoDB_20120810.Scan", b'{"TableName": "abc", "Limit": "ten"}', wire.SERIALIZATION),
        (
            "DynamoDB_20120810.PutItem",
            b'{"TableName": "abc", "Item": {"b": {"B": "YWJj??!!"}}}',
            wire.SERIALIZATION,
        ),
        (
            "DynamoDB_20120810.PutItem",
            b'{"TableName": "abc", "Item": {"b": {"B": "YWJjZGVmZ2g"}}}',
            wire.SERIALIZATION,
        ),
        ("DynamoDB_20120810.PutItem", b'{"Item": {"p": {"S": "x"}}}', wire.VALIDATION),
    ],
)
def test_a_malformed_request_is_refused_as_aws_refuses_it(target: str, body: bytes, error_type: str) -> None:
    refusal = wire.refusal_of("dynamodb", target, body)
    assert refusal is not None and refusal.error_type == error_type
    status, headers, text = wire._answer(refusal)
    assert status == 400 and headers["Content-Type"] == "application/x-amz-json-1.0"
    assert json.loads(text)["__type"].endswith("#" + error_type.rpartition("#")[2])


def test_a_well_formed_request_goes_on_to_the_operation() -> None:
    body = b'{"TableName": "abc", "Item": {"p": {"S": "x"}, "b": {"B": "YWJj"}, "n": {"N": "1"}}}'
    assert wire.refusal_of("dynamodb", "DynamoDB_20120810.PutItem", body) is None
    assert wire.refusal_of("dynamodbstreams", "DynamoDBStreams_20120810.ListStreams", b"") is None


def test_an_unreadable_expression_is_refused_and_values_of_different_types_compare_false(aws: Any) -> None:
    # GIVEN an item whose attribute is a string
    ddb, _ = aws
    _table(ddb, "conditions", stream=False)
    ddb.put_item(TableName="conditions", Item={"pk": {"S": "x"}, "a": {"S": "text"}})
    number = {":v": {"N": "3"}}
    # WHEN a write's condition or a scan's filter cannot be parsed
    for expression in ("a IN (", "a != :v !", "NOT NOT"):
        with pytest.raises(ClientError) as refused:
            ddb.put_item(
                TableName="conditions",
                Item={"pk": {"S": "x"}, "a": {"S": "changed"}},
                ConditionExpression=expression,
                **({"ExpressionAttributeValues": number} if ":v" in expression else {}),
            )
        # THEN it is DynamoDB's ValidationException naming the expression (moto: HTTP 500), and nothing changed
        assert _code(refused) == "ValidationException", expression
        assert refused.value.response["Error"]["Message"].startswith("Invalid ConditionExpression: ")
    with pytest.raises(ClientError) as filtered:
        ddb.scan(TableName="conditions", FilterExpression="a IN (")
    assert filtered.value.response["Error"]["Message"].startswith("Invalid FilterExpression: ")
    assert ddb.get_item(TableName="conditions", Key={"pk": {"S": "x"}})["Item"]["a"] == {"S": "text"}
    # AND a string compared with a number is false, and its negation true (moto: TypeError, HTTP 500)
    with pytest.raises(ClientError) as failed:
        ddb.put_item(
            TableName="conditions",
            Item={"pk": {"S": "x"}, "a": {"S": "changed"}},
            ConditionExpression="a < :v",
            ExpressionAttributeValues=number,
        )
    assert _code(failed) == "ConditionalCheckFailedException"
    ddb.put_item(
        TableName="conditions",
        Item={"pk": {"S": "x"}, "a": {"S": "changed"}},
        ConditionExpression="NOT a >= :v",
        ExpressionAttributeValues=number,
    )
    counted = ddb.scan(
        TableName="conditions",
        FilterExpression="a BETWEEN :v AND :w",
        ExpressionAttributeValues={**number, ":w": {"N": "9"}},
    )
    assert counted["Count"] == 0


@pytest.mark.parametrize(
    ("number", "refusal"),
    [
        ("dog", wire.NOT_NUMERIC.format(value="dog")),
        ("NaN", wire.NOT_NUMERIC.format(value="NaN")),
        (" 1", wire.NOT_NUMERIC.format(value=" 1")),
        ("1e126", wire.OVERFLOW),
        ("-11e125", wire.OVERFLOW),
        ("0.9e-130", wire.UNDERFLOW),
        ("3.14159265358979323846264338327950288419", wire.TOO_PRECISE),
        ("3.1415926535897932384626433832795028841", None),
        ("31415926535897932384626433832795028841e30", None),
        ("-9.99999999e125", None),
        ("1e-130", None),
        ("+.5", None),
        ("0001.23", None),
        ("0.000", None),
    ],
)
def test_a_number_is_refused_as_dynamodb_refuses_it(number: str, refusal: str | None) -> None:
    # GIVEN a number written in an item, a key or an expression's values
    body = json.dumps({"TableName": "abc", "Item": {"p": {"S": "x"}, "n": {"NS": ["1", number]}}}).encode()
    # THEN it is refused with DynamoDB's words, or goes on to the operation
    found = wire.refusal_of("dynamodb", "DynamoDB_20120810.PutItem", body)
    assert (found.message if found else None) == refusal
    assert found is None or found.error_type == wire.VALIDATION


@pytest.mark.parametrize(
    ("params", "refusal"),
    [
        (
            {"AttributesToGet": ["a"], "ProjectionExpression": "a"},
            wire.MIXED.format(legacy="AttributesToGet", expressions="ProjectionExpression"),
        ),
        (
            {"ExpressionAttributeValues": {":v": {"S": "x"}}},
            wire.WITHOUT_EXPRESSION.format(member="ExpressionAttributeValues"),
        ),
        (
            {
                "ConditionExpression": "a = :v",
                "ExpressionAttributeValues": {":v": {"S": "x"}, ":w": {"S": "y"}},
            },
            wire.UNUSED.format(member="ExpressionAttributeValues", keys=":w"),
        ),
        (
            {
                "ConditionExpression": "a = :v",
                "ExpressionAttributeNames": {"#b": "b"},
                "ExpressionAttributeValues": {":v": {"S": "x"}},
            },
            wire.UNUSED.format(member="ExpressionAttributeNames", keys="#b"),
        ),
        (
            {"ConditionExpression": "a = :v", "ExpressionAttributeValues": {}},
            wire.EMPTY_MAP.format(member="ExpressionAttributeValues"),
        ),
        (
            {
                "UpdateExpression": "SET #a = :v",
                "ConditionExpression": "attribute_exists(#a)",
                "ExpressionAttributeNames": {"#a": "a"},
                "ExpressionAttributeValues": {":v": {"N": "1"}},
            },
            None,
        ),
    ],
)
def test_expressions_and_their_names_and_values_go_together_as_dynamodb_requires(
    params: dict[str, Any], refusal: str | None
) -> None:
    found = wire.refusal_of(
        "dynamodb",
        "DynamoDB_20120810.UpdateItem",
        json.dumps({"TableName": "abc", "Key": {"p": {"S": "x"}}, **params}).encode(),
    )
    assert (found.message if found else None) == refusal


def test_a_legacy_attribute_update_keeps_the_type_of_its_value(aws: Any) -> None:
    ddb, _ = aws
    _table(ddb, "legacy", stream=False)
    values = {
        "b": {"B": b"hi"},
        "bs": {"BS": [b"x", b"y"]},
        "flag": {"BOOL": True},
        "nothing": {"NULL": True},
    }
    ddb.update_item(
        TableName="legacy",
        Key={"pk": {"S": "x"}},
        AttributeUpdates={name: {"Value": value, "Action": "PUT"} for name, value in values.items()},
    )
    item = ddb.get_item(TableName="legacy", Key={"pk": {"S": "x"}})["Item"]
    assert {name: next(iter(item[name])) for name in values} == {
        "b": "B",
        "bs": "BS",
        "flag": "BOOL",
        "nothing": "NULL",
    }
    # AND a condition reads them by their type: a binary contains a binary
    ddb.update_item(
        TableName="legacy",
        Key={"pk": {"S": "x"}},
        UpdateExpression="SET z = :z",
        ConditionExpression="contains(b, :part) AND attribute_type(flag, :bool)",
        ExpressionAttributeValues={":z": {"N": "1"}, ":part": {"B": b"i"}, ":bool": {"S": "BOOL"}},
    )


def test_a_key_is_the_tables_key_typed_as_declared_and_never_empty(aws: Any) -> None:
    # GIVEN a table keyed by a string, with an index keyed by a binary
    ddb, _ = aws
    _indexed(ddb, "keyed", "g", "B")
    ddb.put_item(TableName="keyed", Item={"pk": {"S": "x"}})
    refused = {
        "a number for a string": {"pk": {"N": "1"}},
        "no key attribute": {"other": {"S": "y"}},
        "an empty string": {"pk": {"S": ""}},
    }
    for why, key in refused.items():
        for call in (ddb.get_item, ddb.delete_item):
            with pytest.raises(ClientError) as error:
                call(TableName="keyed", Key=key)
            assert _code(error) == "ValidationException", why
    with pytest.raises(ClientError) as wrong:
        ddb.get_item(TableName="keyed", Key={"pk": {"N": "1"}})
    assert wrong.value.response["Error"]["Message"] == keys.MISMATCH
    # AND an item written with an empty key attribute, or an empty index key, is refused naming it
    for item, message in (
        ({"pk": {"S": ""}}, keys.EMPTY.format(kind="string", key="pk")),
        (
            {"pk": {"S": "y"}, "g": {"B": b""}},
            keys.EMPTY_INDEX_KEY.format(kind="binary", index="byg", key="g"),
        ),
    ):
        with pytest.raises(ClientError) as empty:
            ddb.put_item(TableName="keyed", Item=item)
        assert empty.value.response["Error"]["Message"] == message
    # AND the item is still there, read by its key
    assert ddb.get_item(TableName="keyed", Key={"pk": {"S": "x"}})["Item"] == {"pk": {"S": "x"}}


def test_a_disabled_stream_stays_readable_closed_and_a_new_one_can_be_enabled(aws: Any) -> None:
    # GIVEN a table whose stream recorded one change
    ddb, streams = aws
    _table(ddb, "retiring")
    arn = streams.list_streams(TableName="retiring")["Streams"][0]["StreamArn"]
    ddb.put_item(TableName="retiring", Item={"pk": {"S": "a"}})
    # WHEN the stream is disabled, then the table written again
    ddb.update_table(TableName="retiring", StreamSpecification={"StreamEnabled": False})
    ddb.put_item(TableName="retiring", Item={"pk": {"S": "b"}})
    # THEN the stream is still listed and described, DISABLED, its shard closed at its last record
    assert arn in [s["StreamArn"] for s in streams.list_streams(TableName="retiring")["Streams"]]
    described = streams.describe_stream(StreamArn=arn)["StreamDescription"]
    assert (described["StreamStatus"], described["StreamViewType"]) == ("DISABLED", "KEYS_ONLY")
    (shard,) = described["Shards"]
    assert shard["SequenceNumberRange"]["EndingSequenceNumber"].isdecimal()
    # AND it holds the change made before, not the one after; read to its end, it has no next iterator
    iterator = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
    )
    read = streams.get_records(ShardIterator=iterator["ShardIterator"])
    assert [r["dynamodb"]["Keys"] for r in read["Records"]] == [{"pk": {"S": "a"}}]
    assert "NextShardIterator" not in streams.get_records(ShardIterator=read["NextShardIterator"])
    # AND a new stream can be enabled (moto refused while the old label was kept), under another ARN
    ddb.update_table(
        TableName="retiring", StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}
    )
    current = ddb.describe_table(TableName="retiring")["Table"]["LatestStreamArn"]
    assert current != arn
    assert {s["StreamArn"] for s in streams.list_streams(TableName="retiring")["Streams"]} == {arn, current}


def test_an_update_that_only_removes_makes_no_item_and_no_record(aws: Any) -> None:
    # GIVEN a table with a stream, read from its start
    ddb, streams = aws
    _table(ddb, "removing")
    arn = streams.list_streams(TableName="removing")["Streams"][0]["StreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    # WHEN an UpdateItem only REMOVEs from an item that does not exist
    ddb.update_item(TableName="removing", Key={"pk": {"S": "ghost"}}, UpdateExpression="REMOVE g")
    # THEN no item was made and no record written (moto made the bare key an item: one INSERT)
    assert "Item" not in ddb.get_item(TableName="removing", Key={"pk": {"S": "ghost"}})
    assert streams.get_records(ShardIterator=iterator["ShardIterator"])["Records"] == []
    # AND a SET on a missing item still makes it
    ddb.update_item(
        TableName="removing", Key={"pk": {"S": "real"}}, UpdateExpression="SET g = :g",
        ExpressionAttributeValues={":g": {"N": "1"}},
    )  # fmt: skip
    assert ddb.get_item(TableName="removing", Key={"pk": {"S": "real"}})["Item"]["g"] == {"N": "1"}


def test_an_index_holds_only_items_whose_key_attributes_have_its_types(aws: Any) -> None:
    # GIVEN a table with an index keyed by a string, and items with that key, without it, and of another type
    ddb, _ = aws
    _indexed(ddb, "sparse", "x", "S")
    from moto.dynamodb.models import dynamodb_backends
    from moto.dynamodb.models.dynamo_type import DynamoType, Item

    ddb.put_item(TableName="sparse", Item={"pk": {"S": "a"}, "x": {"S": "one"}})
    ddb.put_item(TableName="sparse", Item={"pk": {"S": "b"}})
    table = dynamodb_backends[state.ACCOUNT_ID][state.REGION].tables["sparse"]
    key = DynamoType({"S": "c"})  # an item as an update that set its index key to NULL would leave it
    table.items[key] = Item(key, None, {"pk": {"S": "c"}, "x": {"NULL": True}})
    # THEN a scan of the index reads the one item indexed (moto: the NULL key made its sort fail, HTTP 500)
    assert [i["pk"]["S"] for i in ddb.scan(TableName="sparse", IndexName="byx")["Items"]] == ["a"]


def test_a_compressed_request_is_inflated_or_answered_as_dynamodb_answers_it() -> None:
    import gzip
    import zlib

    from werkzeug.test import EnvironBuilder
    from werkzeug.wrappers import Request

    # GIVEN gzip (two members), one deflate stream, and bodies DynamoDB does not read
    body = b'{"TableName": "tbl"}'
    assert wire.inflate("gzip", gzip.compress(body[:5]) + gzip.compress(body[5:])) == body
    assert wire.inflate("deflate", zlib.compress(body)) == body
    for encoding, sent in [
        ("gzip", body),  # not gzip at all
        ("deflate", body),
        ("garbage", body),
        ("deflate", zlib.compress(body) + zlib.compress(body)),  # one stream only
        ("gzip", gzip.compress(b" " * (wire.INFLATED_MAX + 1))),  # past 16 MB once inflated
    ]:
        with pytest.raises(wire.Uninflatable):
            wire.inflate(encoding, sent)
    # WHEN a request arrives compressed  THEN it is read inflated, the encoding gone; a bad one is HTTP 500
    environ = EnvironBuilder(
        method="POST", data=gzip.compress(body), headers={"Content-Encoding": "gzip"}
    ).get_environ()
    request = Request(environ)
    assert wire._inflated(request) is None
    assert (request.get_data(), request.headers.get("Content-Encoding")) == (body, None)
    broken = Request(
        EnvironBuilder(method="POST", data=body, headers={"Content-Encoding": "gzip"}).get_environ()
    )
    status, _, answer = wire._inflated(broken) or (0, {}, "")
    assert (status, json.loads(answer)["__type"]) == (500, wire.INTERNAL)
