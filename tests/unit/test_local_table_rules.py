"""A table's schema, descriptions and index keys on the local AWS as DynamoDB answers them
(local/services/dynamodb/index_rules.py, options.py, api/operations.py): a KeySchema out of order refused,
DeleteTable's description of a table going, TableId and the on-demand switch time in every description, and an
index key of the wrong type (NULL included) refused before a batch or a legacy update writes anything."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from local import state
from tests.unit.test_local_legacy_conditions import CONFIG, N, S, refused

pytestmark = pytest.mark.unit

KEYS = {"AttributeName": "pk", "KeyType": "HASH"}
DEFINITIONS = [{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "g", "AttributeType": "S"}]


@pytest.fixture
def ddb(local_moto: None) -> Iterator[Any]:
    """GIVEN a table keyed by ``pk`` with a GSI keyed by the string ``g``."""
    client = boto3.client("dynamodb", region_name=state.REGION, config=CONFIG)
    client.create_table(
        TableName="tbl",
        KeySchema=[KEYS],
        AttributeDefinitions=DEFINITIONS,
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by-g",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],  # fmt: skip
        BillingMode="PAY_PER_REQUEST",
    )
    yield client


def test_a_key_schema_out_of_order_is_refused(ddb: Any) -> None:
    def create(**spec: Any) -> str:
        return refused(
            ddb.create_table, BillingMode="PAY_PER_REQUEST", AttributeDefinitions=DEFINITIONS, **spec
        )

    hash_g = {"AttributeName": "g", "KeyType": "HASH"}
    range_g = {"AttributeName": "g", "KeyType": "RANGE"}
    # a table keyed by two partition keys, an index keyed by a sort key alone, an attribute both keys of an index
    assert (
        create(KeySchema=[KEYS, hash_g])
        == "Invalid KeySchema: The second KeySchemaElement is not a RANGE key type"
    )
    index = {"IndexName": "idx", "Projection": {"ProjectionType": "ALL"}}
    assert create(KeySchema=[KEYS], GlobalSecondaryIndexes=[{**index, "KeySchema": [range_g]}]) == (
        "Invalid KeySchema: The first KeySchemaElement is not a HASH key type"
    )
    assert create(KeySchema=[KEYS], GlobalSecondaryIndexes=[{**index, "KeySchema": [hash_g, range_g]}]) == (
        "Both the Hash Key and the Range Key element in the KeySchema have the same name"
    )


def test_descriptions_carry_the_table_id_and_delete_table_describes_a_table_going(ddb: Any) -> None:
    described = ddb.describe_table(TableName="tbl")["Table"]
    # THEN a TableId (a UUID, the same each time) and, on demand since its creation, the time it became so
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", described["TableId"])
    assert ddb.describe_table(TableName="tbl")["Table"]["TableId"] == described["TableId"]
    summary = described["BillingModeSummary"]
    assert summary["LastUpdateToPayPerRequestDateTime"] == described["CreationDateTime"]
    # WHEN it is deleted  THEN the answer describes it DELETING, its schema and indexes left out
    deleted = ddb.delete_table(TableName="tbl")["TableDescription"]
    assert deleted["TableStatus"] == "DELETING" and deleted["TableId"] == described["TableId"]
    gone = ("KeySchema", "AttributeDefinitions", "CreationDateTime", "GlobalSecondaryIndexes")
    assert [name for name in gone if name in deleted] == []


def test_an_index_key_of_the_wrong_type_is_refused_before_anything_is_written(ddb: Any) -> None:
    mismatch = "One or more parameter values were invalid: Type mismatch for Index Key g Expected: S Actual: {actual} IndexName: by-g"
    # WHEN a batch puts a valid item then one whose index key is a number, or a legacy update PUTs a NULL there
    batch = [
        {"PutRequest": {"Item": {"pk": S("a"), "g": S("x")}}},
        {"PutRequest": {"Item": {"pk": S("b"), "g": N(3)}}},
    ]
    message = refused(lambda TableName, **kw: ddb.batch_write_item(RequestItems={TableName: batch}))
    assert message == mismatch.format(actual="N")
    message = refused(
        ddb.update_item,
        Key={"pk": S("c")},
        AttributeUpdates={"g": {"Value": {"NULL": True}, "Action": "PUT"}},
    )
    assert message == mismatch.format(actual="NULL")
    # THEN nothing of either was written
    assert [ddb.get_item(TableName="tbl", Key={"pk": S(k)}).get("Item") for k in "abc"] == [None, None, None]
