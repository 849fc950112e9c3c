"""ReturnConsumedCapacity on the local AWS as DynamoDB counts it (local/services/dynamodb/api/capacity.py and
operations.py): item sizes, 4 KB read units halved when eventually consistent, 1 KB write units of the larger of
the item before and after, and batches summed per table (boto3 against moto in-process with the adaptations)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config

from local import state
from local.services.dynamodb.api import capacity

pytestmark = pytest.mark.unit

CONFIG = Config(retries={"total_max_attempts": 1}, account_id_endpoint_mode="disabled")
KB = 1024


def test_an_items_size_counts_names_and_values_as_dynamodb_does() -> None:
    assert capacity.item_size({"name": {"S": "héllo"}}) == 4 + 6  # UTF-8 bytes
    assert capacity.item_size({"n": {"N": "3.14"}}) == 1 + 3  # two digits a byte, plus one
    assert capacity.item_size({"n": {"N": "-3.14"}}) == 1 + 4  # and one more when negative
    assert capacity.item_size({"n": {"N": "1000000"}}) == 1 + 2  # trailing zeros are not significant
    assert capacity.item_size({"b": {"B": "AAEC"}}) == 1 + 3  # base64 of three bytes
    assert capacity.item_size({"f": {"BOOL": True}, "z": {"NULL": True}}) == 2 + 2
    assert capacity.item_size({"l": {"L": [{"S": "ab"}, {"N": "1"}]}}) == 1 + 3 + (1 + 2) + (1 + 2)
    assert capacity.item_size({"m": {"M": {"k": {"S": "ab"}}}}) == 1 + 3 + (1 + 1 + 2)
    assert capacity.item_size({"s": {"SS": ["a", "bc"]}}) == 1 + 3
    assert capacity.item_size(None) == 0


def test_units_round_up_by_block() -> None:
    assert capacity.read_units(0, consistent=True) == 1.0
    assert capacity.read_units(4 * KB, consistent=True) == 1.0
    assert capacity.read_units(4 * KB + 1, consistent=False) == 1.0
    assert capacity.write_units([KB]) == 1.0
    assert capacity.write_units([KB + 1, 10]) == 2.0


@pytest.fixture
def table(local_moto: None) -> Iterator[Any]:
    """GIVEN a table keyed by a string ``pk``."""
    ddb = boto3.resource("dynamodb", region_name=state.REGION, config=CONFIG)
    created = ddb.create_table(
        TableName="tbl",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    yield created


def sized(pk: str, size: int) -> dict[str, str]:
    """An item of exactly ``size`` bytes: its key and one attribute ``v`` filling the rest."""
    return {"pk": pk, "v": "a" * (size - len("pk") - len(pk) - len("v"))}


def units(reply: dict[str, Any]) -> float:
    return float(reply["ConsumedCapacity"]["CapacityUnits"])


def test_item_operations_report_the_units_of_the_items_they_touch(table: Any) -> None:
    total = {"ReturnConsumedCapacity": "TOTAL"}
    # a write: 1 KB is one unit, a byte more is two; over a larger item, the larger one counts
    assert units(table.put_item(Item=sized("a", KB), **total)) == 1
    assert units(table.put_item(Item=sized("a", KB + 1), **total)) == 2
    assert units(table.put_item(Item=sized("b", 2 * KB + 1), **total)) == 3
    assert units(table.put_item(Item={"pk": "b"}, **total)) == 3
    # a read: 4 KB a unit, half when eventually consistent; a missing item reads as one unit
    table.put_item(Item=sized("c", 4 * KB + 1))
    assert units(table.get_item(Key={"pk": "c"}, ConsistentRead=True, **total)) == 2
    assert units(table.get_item(Key={"pk": "c"}, ProjectionExpression="pk", **total)) == 1
    assert units(table.get_item(Key={"pk": "nope"}, ConsistentRead=True, **total)) == 1
    assert units(table.get_item(Key={"pk": "nope"}, **total)) == 0.5
    # an update counts the larger of before and after; a delete the item it removes
    assert units(table.update_item(Key={"pk": "d"}, UpdateExpression="SET v = :v",
                                   ExpressionAttributeValues={":v": "x"}, **total)) == 1  # fmt: skip
    assert units(table.delete_item(Key={"pk": "c"}, **total)) == 5


def test_batches_sum_each_items_units_per_table(table: Any) -> None:
    client = table.meta.client
    table.put_item(Item=sized("big", 2 * KB + 1))
    written = client.batch_write_item(
        RequestItems={
            "tbl": [
                {"PutRequest": {"Item": {"pk": "x"}}},
                {"PutRequest": {"Item": sized("y", KB + 1)}},
                {"DeleteRequest": {"Key": {"pk": "big"}}},
            ]
        },
        ReturnConsumedCapacity="TOTAL",
    )
    assert [(c["TableName"], c["CapacityUnits"]) for c in written["ConsumedCapacity"]] == [("tbl", 1 + 2 + 3)]
    read = client.batch_get_item(
        RequestItems={"tbl": {"Keys": [{"pk": "x"}, {"pk": "y"}, {"pk": "gone"}]}},
        ReturnConsumedCapacity="TOTAL",
    )
    assert [(c["TableName"], c["CapacityUnits"]) for c in read["ConsumedCapacity"]] == [("tbl", 1.5)]
