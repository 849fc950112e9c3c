"""Transactions, batches and an item's size on the local AWS as DynamoDB answers them
(local/services/dynamodb/transactions.py, items.py, api/keys.py, api/wire.py): TransactGetItems' projections and
its 100 actions, TransactWriteItems idempotent by ClientRequestToken, a key of the wrong type cancelling a
transaction with a ValidationError reason, a transaction action's unused value refusing the whole request; a
BatchWriteItem checked whole before it writes (keys, duplicates by value); an item counted in AWS's sizes up to
400 KB; AttributeUpdates refusing an empty set; an expression's operators and sizes held to DynamoDB's limits."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from local import state
from tests.unit.test_local_legacy_conditions import CONFIG, N, S, refused

pytestmark = pytest.mark.unit


def keyed_table(client: Any) -> Any:
    """A table ``tbl`` keyed by a string ``pk`` and a number ``sk``, made through ``client``; the client."""
    client.create_table(
        TableName="tbl",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "N"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    return client


@pytest.fixture
def ddb(local_moto: None) -> Iterator[Any]:
    """GIVEN a table keyed by a string ``pk`` and a number ``sk``."""
    yield keyed_table(boto3.client("dynamodb", region_name=state.REGION, config=CONFIG))


def refused_whole(call: Any, **request: Any) -> str:
    """The ValidationException of a request that names no single table (a transaction)."""
    with pytest.raises(ClientError) as caught:
        call(**request)
    assert caught.value.response["Error"]["Code"] == "ValidationException", caught.value.response
    return str(caught.value.response["Error"]["Message"])


def cancelled(call: Any, **request: Any) -> list[dict[str, Any]]:
    with pytest.raises(ClientError) as caught:
        call(**request)
    assert caught.value.response["Error"]["Code"] == "TransactionCanceledException", caught.value.response
    return list(caught.value.response["CancellationReasons"])


def test_transact_get_items_projects_each_get_and_takes_100(ddb: Any) -> None:
    for i in range(100):
        ddb.put_item(TableName="tbl", Item={"pk": S("p"), "sk": N(i), "x": N(1), "y": N(2), "z": N(3)})
    gets = [{"Get": {"TableName": "tbl", "Key": {"pk": S("p"), "sk": N(i)}}} for i in range(100)]
    # WHEN 100 gets are asked, the first with a projection by names
    gets[0]["Get"].update(ProjectionExpression="#a, z", ExpressionAttributeNames={"#a": "x"})
    answer = ddb.transact_get_items(TransactItems=gets)["Responses"]
    # THEN each is answered, the first with only what its projection names
    assert len(answer) == 100
    assert answer[0]["Item"] == {"x": N(1), "z": N(3)}
    assert set(answer[1]["Item"]) == {"pk", "sk", "x", "y", "z"}
    # AND a name the projection does not define, or one defined and unused, refuses the whole request
    gets[0]["Get"].update(ProjectionExpression="#a, #zz")
    assert "attribute name: #zz" in refused_whole(ddb.transact_get_items, TransactItems=gets[:2])
    gets[0]["Get"].update(ProjectionExpression="z", ExpressionAttributeNames={"#qq": "q"})
    assert refused_whole(ddb.transact_get_items, TransactItems=gets[:2]).endswith("keys: {#qq}")


def test_a_client_request_token_makes_a_transaction_idempotent(ddb: Any) -> None:
    ddb.put_item(TableName="tbl", Item={"pk": S("p"), "sk": N(1), "n": N(0)})
    increment = [{"Update": {"TableName": "tbl", "Key": {"pk": S("p"), "sk": N(1)},
                             "UpdateExpression": "SET n = n + :one", "ExpressionAttributeValues": {":one": N(1)}}}]  # fmt: skip

    def count() -> str:
        return str(ddb.get_item(TableName="tbl", Key={"pk": S("p"), "sk": N(1)})["Item"]["n"]["N"])

    # WHEN one transaction is sent twice with one token
    ddb.transact_write_items(TransactItems=increment, ClientRequestToken="token-1")
    ddb.transact_write_items(TransactItems=increment, ClientRequestToken="token-1")
    # THEN it ran once; without a token it runs each time
    assert count() == "1"
    ddb.transact_write_items(TransactItems=increment)
    assert count() == "2"
    # AND the token with another request is IdempotentParameterMismatchException, nothing written
    other = [{"Put": {"TableName": "tbl", "Item": {"pk": S("q"), "sk": N(1)}}}]
    with pytest.raises(ClientError) as caught:
        ddb.transact_write_items(TransactItems=other, ClientRequestToken="token-1")
    assert caught.value.response["Error"]["Code"] == "IdempotentParameterMismatchException"
    assert "Item" not in ddb.get_item(TableName="tbl", Key={"pk": S("q"), "sk": N(1)})


def test_a_key_of_the_wrong_type_cancels_the_transaction_at_that_action(ddb: Any) -> None:
    # WHEN the second of three actions keys an item with a string sort key (declared a number)
    actions = [
        {"Put": {"TableName": "tbl", "Item": {"pk": S("a"), "sk": N(1)}}},
        {"Put": {"TableName": "tbl", "Item": {"pk": S("b"), "sk": S("1")}}},
        {
            "Delete": {
                "TableName": "tbl",
                "Key": {"pk": S("c"), "sk": N(1)},
                "ConditionExpression": "attribute_exists(pk)",
            }
        },
    ]
    reasons = cancelled(ddb.transact_write_items, TransactItems=actions)
    # THEN the transaction is cancelled: ValidationError there, None (no message) elsewhere, nothing written
    assert [r["Code"] for r in reasons] == ["None", "ValidationError", "None"]
    assert reasons[1]["Message"] == "The provided key element does not match the schema"
    assert "Message" not in reasons[0] and "Message" not in reasons[2]
    assert "Item" not in ddb.get_item(TableName="tbl", Key={"pk": S("a"), "sk": N(1)})
    # AND an action's value no expression uses refuses the whole request (no cancellation reasons)
    actions = [{"Put": {"TableName": "tbl", "Item": {"pk": S("a"), "sk": N(1)}, "ConditionExpression": "attribute_not_exists(pk)",
                        "ExpressionAttributeValues": {":xyz": N(1)}}}]  # fmt: skip
    assert refused_whole(ddb.transact_write_items, TransactItems=actions).endswith(
        "unused in expressions: keys: {:xyz}"
    )


def test_a_batch_write_is_checked_whole_before_anything_is_written(ddb: Any) -> None:
    def batch(*requests: dict[str, Any]) -> str:
        return refused(lambda TableName, **kw: ddb.batch_write_item(RequestItems={TableName: list(requests)}))

    put_a = {"PutRequest": {"Item": {"pk": S("a"), "sk": N(1)}}}
    # WHEN a batch holds a key of the wrong type, or misses a key attribute, after a valid put
    assert batch(put_a, {"PutRequest": {"Item": {"pk": S("b"), "sk": S("x")}}}) == (
        "The provided key element does not match the schema"
    )
    assert batch(put_a, {"PutRequest": {"Item": {"pk": S("b")}}}).endswith("Missing the key sk in the item")
    # THEN nothing of it was written
    assert "Item" not in ddb.get_item(TableName="tbl", Key={"pk": S("a"), "sk": N(1)})
    # AND two requests on one item are duplicates: a put and a delete, or numbers written two ways
    duplicates = "Provided list of item keys contains duplicates"
    assert batch(put_a, {"DeleteRequest": {"Key": {"pk": S("a"), "sk": N(1)}}}) == duplicates
    thousand = {"PutRequest": {"Item": {"pk": S("a"), "sk": {"N": "1000"}}}}
    assert batch(thousand, {"PutRequest": {"Item": {"pk": S("a"), "sk": {"N": "1e3"}}}}) == duplicates
    # BUT items differing in one key attribute are not
    ddb.batch_write_item(RequestItems={"tbl": [put_a, {"PutRequest": {"Item": {"pk": S("a"), "sk": N(2)}}}]})


def test_a_batch_write_compares_binary_keys(ddb: Any) -> None:
    # GIVEN a table keyed by a binary
    ddb.create_table(TableName="bin", KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "B"}],
                     BillingMode="PAY_PER_REQUEST")  # fmt: skip

    def put(key: bytes) -> dict[str, Any]:
        return {"PutRequest": {"Item": {"k": {"B": key}}}}

    # THEN two binary keys are written, and the same one twice is a duplicate, never an HTTP 500
    ddb.batch_write_item(RequestItems={"bin": [put(b"\x00"), put(b"\xff")]})
    message = refused(
        lambda TableName, **kw: ddb.batch_write_item(RequestItems={"bin": [put(b"a"), put(b"a")]})
    )
    assert message == "Provided list of item keys contains duplicates"


def test_an_item_is_counted_in_awss_sizes_up_to_400_kib(ddb: Any) -> None:
    # WHEN a binary of 409,500 bytes is stored (moto counted its base64 text, a third more)
    blob = b"\x01" * 409_500
    ddb.put_item(TableName="tbl", Item={"pk": S("a"), "sk": N(1), "b": {"B": blob}})
    stored = ddb.get_item(TableName="tbl", Key={"pk": S("a"), "sk": N(1)})["Item"]["b"]["B"]
    assert stored == blob or base64.b64decode(stored) == blob
    # THEN an item past 400 KiB (409,600 bytes) is refused
    message = refused(ddb.put_item, Item={"pk": S("a"), "sk": N(2), "s": S("x" * 409_600)})
    assert message == "Item size has exceeded the maximum allowed size"


def test_an_item_nested_past_32_levels_is_refused(ddb: Any) -> None:
    def nested(levels: int) -> dict[str, Any]:
        value: dict[str, Any] = {"M": {}}
        for _ in range(levels - 1):
            value = {"M": {"a": value}}
        return value

    # the item and 31 levels of maps in it: stored; one more, in a put or a batch: refused in DynamoDB's words
    ddb.put_item(TableName="tbl", Item={"pk": S("a"), "sk": N(1), "m": nested(31)})
    too_deep = {"pk": S("a"), "sk": N(2), "m": nested(32)}
    message = "Nesting Levels have exceeded supported limits: Attributes in the item have nested levels beyond supported limit"
    assert refused(ddb.put_item, Item=too_deep) == message
    assert (
        refused(
            lambda TableName, **kw: ddb.batch_write_item(
                RequestItems={"tbl": [{"PutRequest": {"Item": too_deep}}]}
            )
        )
        == message
    )


def test_a_key_past_dynamodbs_lengths_is_refused_in_reads_and_writes(ddb: Any) -> None:
    from local.services.dynamodb.api import keys

    # a 2,048-byte partition key is stored and read; one byte more is refused, in a write and in a read
    ddb.put_item(TableName="tbl", Item={"pk": S("x" * 2048), "sk": N(1)})
    assert ddb.get_item(TableName="tbl", Key={"pk": S("x" * 2048), "sk": N(1)})["Item"]["pk"] == S("x" * 2048)
    long_key = {"pk": S("x" * 2049), "sk": N(1)}
    assert refused(ddb.put_item, Item=long_key) == keys.HASH_KEY_TOO_LONG
    assert refused(ddb.get_item, Key=long_key) == keys.HASH_KEY_TOO_LONG
    # AND a binary key counts its bytes, not its base64 text
    ddb.create_table(TableName="bin", KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "B"}],
                     BillingMode="PAY_PER_REQUEST")  # fmt: skip
    ddb.put_item(TableName="bin", Item={"k": {"B": b"\x7b" * 2048}})
    assert refused(
        lambda TableName, **kw: ddb.get_item(TableName="bin", **kw), Key={"k": {"B": b"\x7b" * 2049}}
    ) == (keys.HASH_KEY_TOO_LONG)


def test_attribute_updates_refuse_an_empty_set(ddb: Any) -> None:
    for action in ("PUT", "DELETE"):
        message = refused(
            ddb.update_item,
            Key={"pk": S("a"), "sk": N(1)},
            AttributeUpdates={"s": {"Action": action, "Value": {"NS": []}}},
        )
        assert message == "One or more parameter values were invalid: An number set  may not be empty"
    # BUT an empty list, map, string or binary is a value
    ddb.update_item(TableName="tbl", Key={"pk": S("a"), "sk": N(1)},
                    AttributeUpdates={"l": {"Action": "PUT", "Value": {"L": []}}})  # fmt: skip


def test_an_expression_is_held_to_300_operators_and_4096_bytes(ddb: Any) -> None:
    ddb.put_item(TableName="tbl", Item={"pk": S("a"), "sk": N(1), "a": N(1), "b": N(2)})
    key = {"pk": S("a"), "sk": N(1)}

    def condition(depth: int) -> str:
        return "a<b " + "or (a<b " * depth + ")" * depth

    # WHEN a condition nests 149 times (299 operators)  THEN it is read and holds
    ddb.update_item(TableName="tbl", Key=key, UpdateExpression="SET z = :v", ConditionExpression=condition(149),
                    ExpressionAttributeValues={":v": N(1)})  # fmt: skip
    # AND one of 301 operators or more is refused, whatever its nesting
    message = refused(ddb.update_item, Key=key, UpdateExpression="SET z = :v", ConditionExpression=condition(150),
                      ExpressionAttributeValues={":v": N(1)})  # fmt: skip
    assert (
        message
        == "Invalid ConditionExpression: The expression contains too many operators; operator count: 301"
    )
    # AND a projection or an update expression past 4,096 bytes is refused naming it
    message = refused(ddb.get_item, Key=key, ProjectionExpression="x" * 4097)
    assert message.startswith(
        "Invalid ProjectionExpression: Expression size has exceeded the maximum allowed size"
    )
    message = refused(ddb.update_item, Key=key, UpdateExpression="SET " + " " * 4085 + "a = :val",
                      ExpressionAttributeValues={":val": N(1)})  # fmt: skip
    assert message == (
        "Invalid UpdateExpression: Expression size has exceeded the maximum allowed size; expression size: 4097"
    )
