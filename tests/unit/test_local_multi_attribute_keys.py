"""The local AWS's multi-attribute GSI keys (developer guide, "Multi-attribute key schemas"): a GSI's partition and
sort keys of up to four attributes each, CreateTable's and UpdateTable's refusals of other schemas, DescribeTable's
KeySchema in order, an item lacking any key attribute left out of the index, Query's key conditions (an equality on
every partition attribute; sort attributes left to right, a range condition only on the last one named) and the
index's LastEvaluatedKey. Through boto3 against moto in process; messages are compared with the modules' declared
AWS wording, not re-typed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from local import state
from local.services.dynamodb import index_lifecycle as lifecycle
from local.services.dynamodb import index_rules as rules
from local.services.dynamodb.api import keyconditions
from tests.unit.test_local_kinesis_destination import isolated_services

pytestmark = pytest.mark.unit

TABLE = "multi"
INDEX = "by_tenant"
HASHES = ("tenant", "site")
RANGES = ("dayno", "seq", "tag")


@pytest.fixture
def ddb(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The local AWS's moto adaptations in process (indexes made by CreateTable are ACTIVE at once)."""
    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x")):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.setattr(lifecycle, "CLOCK", lifecycle.ManualClock())
    with isolated_services(), mock_aws():
        yield boto3.client("dynamodb", region_name=state.REGION)


def _schema(hashes: tuple[str, ...], ranges: tuple[str, ...]) -> list[dict[str, str]]:
    return [{"AttributeName": n, "KeyType": "HASH"} for n in hashes] + [
        {"AttributeName": n, "KeyType": "RANGE"} for n in ranges
    ]


def _create(ddb: Any, key_schema: list[dict[str, str]], names: tuple[str, ...] = (*HASHES, *RANGES)) -> None:
    types = {"dayno": "N"}
    ddb.create_table(
        TableName=TABLE,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[
            {"AttributeName": n, "AttributeType": types.get(n, "S")} for n in ("pk", *names)
        ],
        GlobalSecondaryIndexes=[
            {"IndexName": INDEX, "KeySchema": key_schema, "Projection": {"ProjectionType": "ALL"}}
        ],
    )


def _error(call: Any, **kwargs: Any) -> tuple[str, str]:
    with pytest.raises(ClientError) as caught:
        call(**kwargs)
    return caught.value.response["Error"]["Code"], caught.value.response["Error"]["Message"]


def _query(ddb: Any, expression: str, **values: Any) -> dict[str, Any]:
    return ddb.query(
        TableName=TABLE,
        IndexName=INDEX,
        KeyConditionExpression=expression,
        ExpressionAttributeValues={f":{k}": v for k, v in values.items()},
    )


def _put(ddb: Any, pk: str, **attributes: Any) -> None:
    item = {
        "pk": {"S": pk},
        **{k: {"N": str(v)} if k == "dayno" else {"S": v} for k, v in attributes.items()},
    }
    ddb.put_item(TableName=TABLE, Item=item)


def test_a_gsi_key_of_up_to_four_partition_and_sort_attributes_is_described_in_order(ddb: Any) -> None:
    schema = _schema(("a", "b", "c", "d"), ("e", "f", "g", "h"))
    _create(ddb, schema, names=tuple("abcdefgh"))
    index = ddb.describe_table(TableName=TABLE)["Table"]["GlobalSecondaryIndexes"][0]
    assert index["KeySchema"] == schema
    ddb.delete_table(TableName=TABLE)
    _create(ddb, _schema(HASHES, RANGES))
    table = ddb.describe_table(TableName=TABLE)["Table"]
    assert table["GlobalSecondaryIndexes"][0]["KeySchema"] == _schema(HASHES, RANGES)
    assert {d["AttributeName"] for d in table["AttributeDefinitions"]} == {"pk", *HASHES, *RANGES}


@pytest.mark.parametrize(
    ("schema", "names", "message"),
    [
        (_schema(tuple("abcde"), ()), tuple("abcde"),
         rules.KEY_PART_LIMIT.format(index=INDEX, limit=4, kind="HASH")),
        (_schema(("a",), tuple("bcdef")), tuple("abcdef"),
         rules.KEY_PART_LIMIT.format(index=INDEX, limit=4, kind="RANGE")),
        ([*_schema(("a",), ("b",)), {"AttributeName": "c", "KeyType": "HASH"}], tuple("abc"),
         rules.HASH_AFTER_RANGE.format(index=INDEX)),
        # a duplicated HASH attribute is refused before the unused definition of b is
        (_schema(("a", "a"), ()), ("a", "b"), rules.SAME_NAME_TWICE.format(kind="Hash", name="a")),
        (_schema(("a", "b"), ("a",)), ("a", "b"), rules.SAME_NAME),
    ],
    ids=["five-hash", "five-range", "hash-after-range", "hash-twice", "hash-and-range"],
)  # fmt: skip
def test_create_table_refuses_a_gsi_key_schema_aws_refuses(
    ddb: Any, schema: list[dict[str, str]], names: tuple[str, ...], message: str
) -> None:
    assert _error(_create, ddb=ddb, key_schema=schema, names=names) == ("ValidationException", message)
    assert ddb.list_tables()["TableNames"] == []


def test_update_table_refuses_a_gsi_key_schema_aws_refuses_and_creates_nothing(ddb: Any) -> None:
    ddb.create_table(TableName=TABLE, BillingMode="PAY_PER_REQUEST",
                     KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])  # fmt: skip
    definitions = [{"AttributeName": n, "AttributeType": "S"} for n in "abcde"]
    for schema, message in (
        (_schema(tuple("abcde"), ()), rules.KEY_PART_LIMIT.format(index=INDEX, limit=4, kind="HASH")),
        ([*_schema(("a",), ("c",)), {"AttributeName": "b", "KeyType": "HASH"}],
         rules.HASH_AFTER_RANGE.format(index=INDEX)),
    ):  # fmt: skip
        create = {"IndexName": INDEX, "KeySchema": schema, "Projection": {"ProjectionType": "ALL"}}
        refused = _error(ddb.update_table, TableName=TABLE, AttributeDefinitions=definitions,
                         GlobalSecondaryIndexUpdates=[{"Create": create}])  # fmt: skip
        assert refused == ("ValidationException", message)
    assert "GlobalSecondaryIndexes" not in ddb.describe_table(TableName=TABLE)["Table"]
    ddb.delete_table(TableName=TABLE)  # no index left building


@pytest.fixture
def loaded(ddb: Any) -> Any:
    """A table whose GSI has 2 partition and 3 sort attributes, five items in one partition and one lacking tag."""
    _create(ddb, _schema(HASHES, RANGES))
    rows = [
        ("p1", 1, "a", "x"),
        ("p2", 1, "b", "x"),
        ("p3", 2, "a", "y"),
        ("p4", 2, "b", "x"),
        ("p5", 3, "a", "x"),
    ]
    for pk, day, seq, tag in rows:
        _put(ddb, pk, tenant="t", site="eu", dayno=day, seq=seq, tag=tag)
    _put(ddb, "p6", tenant="t", site="eu", dayno=1, seq="c")  # no tag: not in the index
    _put(ddb, "p7", tenant="t", site="us", dayno=1, seq="a", tag="x")  # another partition
    return ddb


def _pks(answer: dict[str, Any]) -> list[str]:
    return [item["pk"]["S"] for item in answer["Items"]]


def test_query_answers_an_equality_on_every_partition_attribute_and_sort_attributes_left_to_right(
    loaded: Any,
) -> None:
    t, eu = {"S": "t"}, {"S": "eu"}
    assert _pks(_query(loaded, "tenant = :t AND site = :r", t=t, r=eu)) == ["p1", "p2", "p3", "p4", "p5"]
    # the clauses in any order; an equality on the first sort attributes, a range on the last one named
    assert _pks(_query(loaded, "dayno = :d AND site = :r AND tenant = :t", t=t, r=eu, d={"N": "2"})) == [
        "p3", "p4"
    ]  # fmt: skip
    assert _pks(_query(loaded, "tenant = :t AND site = :r AND dayno > :d", t=t, r=eu, d={"N": "1"})) == [
        "p3", "p4", "p5"
    ]  # fmt: skip
    answer = _query(loaded, "tenant = :t AND site = :r AND dayno = :d AND seq = :s AND begins_with(tag, :g)",
                    t=t, r=eu, d={"N": "1"}, s={"S": "b"}, g={"S": "x"})  # fmt: skip
    assert _pks(answer) == ["p2"]
    between = "tenant = :t AND site = :r AND dayno = :d AND seq BETWEEN :a AND :b"
    assert _pks(_query(loaded, between, t=t, r=eu, d={"N": "2"}, a={"S": "a"}, b={"S": "b"})) == ["p3", "p4"]
    legacy = loaded.query(TableName=TABLE, IndexName=INDEX, KeyConditions={
        "tenant": {"ComparisonOperator": "EQ", "AttributeValueList": [t]},
        "site": {"ComparisonOperator": "EQ", "AttributeValueList": [eu]},
        "dayno": {"ComparisonOperator": "EQ", "AttributeValueList": [{"N": "1"}]},
        "seq": {"ComparisonOperator": "GT", "AttributeValueList": [{"S": "a"}]},
    })  # fmt: skip
    assert _pks(legacy) == ["p2"]


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("tenant = :t", keyconditions.HASH_EQUALITY.format(name="site")),
        ("tenant = :t AND site > :r", keyconditions.HASH_EQUALITY.format(name="site")),
        ("tenant = :t AND site BETWEEN :s AND :r", keyconditions.HASH_EQUALITY.format(name="site")),
        ("tenant = :t AND begins_with(site, :r)", keyconditions.HASH_EQUALITY.format(name="site")),
        ("dayno = :d AND seq = :s", keyconditions.HASH_EQUALITY.format(name="tenant")),
        ("tenant = :t AND site = :r AND seq = :s", keyconditions.RANGE_EQUALITY.format(name="dayno", later="seq")),
        ("tenant = :t AND site = :r AND dayno = :d AND tag = :g",
         keyconditions.RANGE_EQUALITY.format(name="seq", later="tag")),
        ("tenant = :t AND site = :r AND dayno > :d AND seq = :s",
         keyconditions.RANGE_EQUALITY.format(name="dayno", later="seq")),
        ("tenant = :t AND site = :r AND dayno > :d AND seq > :s",
         keyconditions.RANGE_EQUALITY.format(name="dayno", later="seq")),
        ("tenant = :t AND site = :r AND dayno = :d AND begins_with(seq, :s) AND tag = :g",
         keyconditions.RANGE_EQUALITY.format(name="seq", later="tag")),
    ],
)  # fmt: skip
def test_each_key_condition_refusal_aws_documents_is_its_answer(
    loaded: Any, expression: str, message: str
) -> None:
    values = {"t": {"S": "t"}, "r": {"S": "eu"}, "s": {"S": "a"}, "d": {"N": "1"}, "g": {"S": "x"}}
    used = {k: v for k, v in values.items() if f":{k}" in expression}
    assert _error(_query, ddb=loaded, expression=expression, **used) == ("ValidationException", message)


def test_legacy_key_conditions_are_held_to_the_same_rules(loaded: Any) -> None:
    refused = _error(loaded.query, TableName=TABLE, IndexName=INDEX, KeyConditions={
        "tenant": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "t"}]},
        "site": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "eu"}]},
        "seq": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "a"}]},
    })  # fmt: skip
    assert refused == ("ValidationException", keyconditions.RANGE_EQUALITY.format(name="dayno", later="seq"))


def test_an_item_lacking_a_key_attribute_is_not_indexed_and_a_page_names_every_key_attribute(
    loaded: Any,
) -> None:
    scanned = loaded.scan(TableName=TABLE, IndexName=INDEX)
    assert sorted(i["pk"]["S"] for i in scanned["Items"]) == ["p1", "p2", "p3", "p4", "p5", "p7"]
    expression, values = "tenant = :t AND site = :r", {":t": {"S": "t"}, ":r": {"S": "eu"}}
    seen: list[str] = []
    start: dict[str, Any] | None = None
    while True:
        page = loaded.query(TableName=TABLE, IndexName=INDEX, KeyConditionExpression=expression,
                            ExpressionAttributeValues=values, Limit=2,
                            **({"ExclusiveStartKey": start} if start else {}))  # fmt: skip
        seen += _pks(page)
        start = page.get("LastEvaluatedKey")
        if start is None:
            break
        assert set(start) == {"pk", *HASHES, *RANGES}
    assert seen == ["p1", "p2", "p3", "p4", "p5"]
