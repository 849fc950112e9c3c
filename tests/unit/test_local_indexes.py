"""The local AWS's secondary indexes (local/services/dynamodb/indexes.py, _index_lifecycle, _index_rules): a GSI
added to a live table backfills on a clock a test moves, DynamoDB's refusals with its codes, reads of GSIs and
LSIs with N and B keys and projections, and CloudFormation's GSI rules. Through boto3 against moto in process;
messages are compared with the modules' declared AWS wording, not re-typed."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from moto import mock_aws

from local import state
from local.services.dynamodb import index_lifecycle as lifecycle
from local.services.dynamodb import index_rules as rules
from tests.unit.test_local_kinesis_destination import isolated_services

pytestmark = pytest.mark.unit

REGION = state.REGION
S, N, B = "S", "N", "B"


@dataclass
class Aws:
    ddb: Any
    cfn: Any
    clock: lifecycle.ManualClock


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    """The local AWS's moto adaptations in process, the index clock a ManualClock the test moves."""
    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x")):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv(lifecycle.BACKFILL_ENV, raising=False)
    clock = lifecycle.ManualClock()
    monkeypatch.setattr(lifecycle, "CLOCK", clock)
    once = Config(retries={"total_max_attempts": 1})  # botocore retries a LimitExceededException
    with isolated_services(), mock_aws():
        yield Aws(
            boto3.client("dynamodb", region_name=REGION, config=once),
            boto3.client("cloudformation", region_name=REGION, config=once),
            clock,
        )


def _defs(**types: str) -> list[dict[str, str]]:
    return [{"AttributeName": name, "AttributeType": kind} for name, kind in types.items()]


def _keys(hash_key: str, range_key: str | None = None) -> list[dict[str, str]]:
    keys = [{"AttributeName": hash_key, "KeyType": "HASH"}]
    return keys + ([{"AttributeName": range_key, "KeyType": "RANGE"}] if range_key else [])


def _index(name: str, hash_key: str, range_key: str | None = None, projection: str = "ALL",
           include: list[str] | None = None, **extra: Any) -> dict[str, Any]:  # fmt: skip
    spec: dict[str, Any] = {"ProjectionType": projection}
    if include is not None:
        spec["NonKeyAttributes"] = include
    return {"IndexName": name, "KeySchema": _keys(hash_key, range_key), "Projection": spec, **extra}


def _table(ddb: Any, name: str = "tbl", *, sort: bool = False, defs: dict[str, str] | None = None,
           **extra: Any) -> None:  # fmt: skip
    types = {"pk": S, **({"sk": S} if sort else {}), **(defs or {})}
    ddb.create_table(TableName=name, BillingMode="PAY_PER_REQUEST", KeySchema=_keys("pk", "sk" if sort else None),
                     AttributeDefinitions=_defs(**types), **extra)  # fmt: skip


def _error(call: Callable[..., Any], **kwargs: Any) -> tuple[str, str]:
    with pytest.raises(ClientError) as caught:
        call(**kwargs)
    return caught.value.response["Error"]["Code"], caught.value.response["Error"]["Message"]


def _described(ddb: Any, name: str = "tbl") -> dict[str, Any]:
    return ddb.describe_table(TableName=name)["Table"]  # type: ignore[no-any-return]


def _gsi(ddb: Any, index: str, name: str = "tbl") -> dict[str, Any]:
    """The GSI's description ({} when the table has no such index)."""
    found = [g for g in _described(ddb, name).get("GlobalSecondaryIndexes", []) if g["IndexName"] == index]
    return dict(found[0]) if found else {}


def _query_index(
    ddb: Any,
    index: str,
    key: str,
    value: dict[str, Any],
    name: str = "tbl",
    values: dict[str, Any] | None = None,
    **extra: Any,
) -> list[dict[str, Any]]:
    """Items of the index whose partition key ``key`` is ``value`` (``values``: more expression values)."""
    found = ddb.query(
        TableName=name,
        IndexName=index,
        KeyConditionExpression="#k = :v",
        ExpressionAttributeNames={"#k": key},
        ExpressionAttributeValues={":v": value, **(values or {})},
        **extra,
    )
    return list(found["Items"])


def _add_gsi(ddb: Any, index: str, key: str, kind: str = S, name: str = "tbl", **extra: Any) -> None:
    ddb.update_table(TableName=name, AttributeDefinitions=_defs(**{key: kind}),
                     GlobalSecondaryIndexUpdates=[{"Create": _index(index, key, **extra)}])  # fmt: skip


# ------------------------------------------------------------------------------------------------ backfill
def test_a_gsi_added_to_a_live_table_backfills_then_answers_for_every_item(aws: Aws) -> None:
    # GIVEN a table holding an item
    _table(aws.ddb)
    aws.ddb.put_item(TableName="tbl", Item={"pk": {"S": "old"}, "g": {"S": "x"}})
    # WHEN a GSI is added to it and an item written
    _add_gsi(aws.ddb, "byg", "g")
    aws.ddb.put_item(TableName="tbl", Item={"pk": {"S": "new"}, "g": {"S": "x"}})
    # THEN it is CREATING, backfilling, the table ACTIVE, and reads of it are refused
    creating = _gsi(aws.ddb, "byg")
    assert (creating["IndexStatus"], creating["Backfilling"]) == ("CREATING", True)
    assert _described(aws.ddb)["TableStatus"] == "ACTIVE"
    refused = ("ValidationException", rules.BACKFILLING.format(index="byg"))
    assert _error(aws.ddb.query, TableName="tbl", IndexName="byg", KeyConditionExpression="g = :g",
                  ExpressionAttributeValues={":g": {"S": "x"}}) == refused  # fmt: skip
    assert _error(aws.ddb.scan, TableName="tbl", IndexName="byg") == refused
    # AND reads of an index the table does not have are refused as DynamoDB refuses them (not "not found")
    unknown = ("ValidationException", rules.UNKNOWN_INDEX.format(index="nope"))
    assert _error(aws.ddb.query, TableName="tbl", IndexName="nope", KeyConditionExpression="g = :g",
                  ExpressionAttributeValues={":g": {"S": "x"}}) == unknown  # fmt: skip
    assert _error(aws.ddb.scan, TableName="tbl", IndexName="nope") == unknown
    # AND once the backfill time has passed it is ACTIVE (no Backfilling) and answers for both items
    aws.clock.advance(lifecycle.BACKFILL_DEFAULT_SECONDS - 0.01)
    assert _gsi(aws.ddb, "byg")["IndexStatus"] == "CREATING"
    aws.clock.advance(0.01)
    active = _gsi(aws.ddb, "byg")
    assert active["IndexStatus"] == "ACTIVE" and "Backfilling" not in active
    assert sorted(i["pk"]["S"] for i in _query_index(aws.ddb, "byg", "g", {"S": "x"})) == ["new", "old"]
    assert len(aws.ddb.scan(TableName="tbl", IndexName="byg")["Items"]) == 2


def test_the_backfill_time_is_the_setting(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(lifecycle.BACKFILL_ENV, "30")
    _table(aws.ddb)
    _add_gsi(aws.ddb, "byg", "g")
    aws.clock.advance(29.9)
    assert _gsi(aws.ddb, "byg")["IndexStatus"] == "CREATING"
    aws.clock.advance(0.1)
    assert _gsi(aws.ddb, "byg")["IndexStatus"] == "ACTIVE"


def test_the_backfill_setting_is_a_number_of_seconds() -> None:
    assert lifecycle.backfill_seconds({}) == lifecycle.BACKFILL_DEFAULT_SECONDS == 2.0
    assert lifecycle.backfill_seconds({lifecycle.BACKFILL_ENV: "0.25"}) == 0.25
    assert lifecycle.backfill_seconds({lifecycle.BACKFILL_ENV: "0"}) == 0.0
    for bad in ("soon", "-1", "nan", "inf"):
        with pytest.raises(ValueError, match=rf"{lifecycle.BACKFILL_ENV}='{bad}' is not allowed; allowed: "):
            lifecycle.backfill_seconds({lifecycle.BACKFILL_ENV: bad})


def test_on_the_server_clock_a_client_waits_for_active_by_polling(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the server's own clock and a short backfill
    monkeypatch.setattr(lifecycle, "CLOCK", lifecycle.MonotonicClock())
    monkeypatch.setenv(lifecycle.BACKFILL_ENV, "0.2")
    _table(aws.ddb)
    _add_gsi(aws.ddb, "byg", "g")
    # WHEN a client polls DescribeTable (a deadline, no fixed sleep standing in for the condition)
    deadline = time.monotonic() + 10
    while _gsi(aws.ddb, "byg").get("IndexStatus") != "ACTIVE":
        assert time.monotonic() < deadline, "the index never became ACTIVE"
        time.sleep(0.02)
    # THEN the index answers
    assert _query_index(aws.ddb, "byg", "g", {"S": "x"}) == []


def test_indexes_of_create_table_are_active_at_once(aws: Aws) -> None:
    _table(aws.ddb, sort=True, defs={"g": S, "l": N},
           GlobalSecondaryIndexes=[_index("byg", "g")], LocalSecondaryIndexes=[_index("byl", "pk", "l")])  # fmt: skip
    described = _described(aws.ddb)
    gsi = described["GlobalSecondaryIndexes"][0]
    assert gsi["IndexStatus"] == "ACTIVE" and "Backfilling" not in gsi
    assert gsi["IndexArn"] == f"{described['TableArn']}/index/byg"
    assert described["LocalSecondaryIndexes"][0]["IndexArn"] == f"{described['TableArn']}/index/byl"
    assert _query_index(aws.ddb, "byg", "g", {"S": "x"}) == []


def test_a_deleted_gsi_is_deleting_then_gone_with_its_attribute(aws: Aws) -> None:
    # GIVEN a table with a GSI on g
    _table(aws.ddb, defs={"g": S}, GlobalSecondaryIndexes=[_index("byg", "g")])
    # WHEN it is deleted
    aws.ddb.update_table(TableName="tbl", GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": "byg"}}])
    # THEN it is DELETING, the table UPDATING, then it is gone and g leaves AttributeDefinitions
    deleting = _described(aws.ddb)
    assert (deleting["TableStatus"], deleting["GlobalSecondaryIndexes"][0]["IndexStatus"]) == (
        "UPDATING",
        "DELETING",
    )
    aws.clock.advance(lifecycle.BACKFILL_DEFAULT_SECONDS)
    gone = _described(aws.ddb)
    assert gone["TableStatus"] == "ACTIVE" and "GlobalSecondaryIndexes" not in gone
    assert gone["AttributeDefinitions"] == _defs(pk=S)
    # AND the name can be used again
    _add_gsi(aws.ddb, "byg", "g", N)
    assert _described(aws.ddb)["AttributeDefinitions"] == _defs(g=N, pk=S)


def test_one_online_index_change_at_a_time_but_a_backfilling_index_may_be_deleted(aws: Aws) -> None:
    _table(aws.ddb, defs={"a": S}, GlobalSecondaryIndexes=[_index("bya", "a")])
    limit = ("LimitExceededException", rules.ONLINE_LIMIT)
    # two changes in one request
    two = [{"Create": _index("byb", "b")}, {"Create": _index("byc", "c")}]
    assert _error(aws.ddb.update_table, TableName="tbl", AttributeDefinitions=_defs(b=S, c=S),
                  GlobalSecondaryIndexUpdates=two) == limit  # fmt: skip
    # a change while another index builds
    _add_gsi(aws.ddb, "byb", "b")
    assert _error(aws.ddb.update_table, TableName="tbl", AttributeDefinitions=_defs(c=S),
                  GlobalSecondaryIndexUpdates=[{"Create": _index("byc", "c")}]) == limit  # fmt: skip
    assert _error(aws.ddb.update_table, TableName="tbl",
                  GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": "bya"}}]) == limit  # fmt: skip
    # the building index itself can go, and nothing else changes meanwhile
    aws.ddb.update_table(TableName="tbl", GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": "byb"}}])
    assert _gsi(aws.ddb, "byb")["IndexStatus"] == "DELETING"
    assert _error(aws.ddb.update_table, TableName="tbl", GlobalSecondaryIndexUpdates=[
        {"Update": {"IndexName": "byb", "OnDemandThroughput": {"MaxReadRequestUnits": 5}}}]) == (
        "ResourceInUseException", rules.INDEX_BEING_DELETED.format(table="tbl", index="byb"))  # fmt: skip
    aws.clock.advance(lifecycle.BACKFILL_DEFAULT_SECONDS)
    assert [g["IndexName"] for g in _described(aws.ddb)["GlobalSecondaryIndexes"]] == ["bya"]


def test_delete_table_is_refused_while_an_index_builds(aws: Aws) -> None:
    _table(aws.ddb)
    _add_gsi(aws.ddb, "byg", "g")
    assert _error(aws.ddb.delete_table, TableName="tbl") == (
        "ResourceInUseException",
        rules.TABLE_INDEXES_BUSY,
    )
    aws.clock.advance(lifecycle.BACKFILL_DEFAULT_SECONDS)
    aws.ddb.delete_table(TableName="tbl")


def test_update_table_keeps_the_definitions_the_keys_use(aws: Aws) -> None:
    # GIVEN a table keyed on pk, WHEN a GSI is added with only its own attribute defined (and a stale one)
    _table(aws.ddb)
    aws.ddb.update_table(TableName="tbl", AttributeDefinitions=_defs(z=S, g=B),
                         GlobalSecondaryIndexUpdates=[{"Create": _index("byg", "g")}])  # fmt: skip
    # THEN AttributeDefinitions are the keys' own, sorted by name (moto replaced them with the request's)
    assert _described(aws.ddb)["AttributeDefinitions"] == _defs(g=B, pk=S)


# ------------------------------------------------------------------------------------------------ refusals
def _create_table_refusal(ddb: Any, sort: bool = True, **request: Any) -> tuple[str, str]:
    request = {"TableName": "bad", "BillingMode": "PAY_PER_REQUEST", "KeySchema": _keys("pk", "sk" if sort else None),
               **request}  # fmt: skip
    return _error(ddb.create_table, **request)


def _many(prefix: str, count: int, **kw: Any) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    return _defs(**{f"{prefix}{i}": S for i in range(count)}), [
        _index(f"{prefix}{i}-idx", f"{prefix}{i}", **kw) for i in range(count)
    ]


def test_create_table_refuses_more_than_20_gsis_and_5_lsis(aws: Aws) -> None:
    defs, gsis = _many("g", 21)
    assert _create_table_refusal(aws.ddb, AttributeDefinitions=_defs(pk=S, sk=S) + defs,
                                 GlobalSecondaryIndexes=gsis) == ("ValidationException", rules.GLOBAL_LIMIT_CREATE)  # fmt: skip
    defs, _ = _many("l", 6)
    lsis = [_index(f"l{i}-idx", "pk", f"l{i}") for i in range(6)]
    assert _create_table_refusal(aws.ddb, AttributeDefinitions=_defs(pk=S, sk=S) + defs,
                                 LocalSecondaryIndexes=lsis) == ("ValidationException", rules.LOCAL_LIMIT)  # fmt: skip
    # the quotas themselves are allowed
    defs, gsis = _many("g", 20)
    aws.ddb.create_table(TableName="twenty", BillingMode="PAY_PER_REQUEST", KeySchema=_keys("pk", "sk"),
                         AttributeDefinitions=_defs(pk=S, sk=S) + defs + _defs(**{f"l{i}": S for i in range(5)}),
                         GlobalSecondaryIndexes=gsis, LocalSecondaryIndexes=lsis[:5])  # fmt: skip
    described = _described(aws.ddb, "twenty")
    assert (len(described["GlobalSecondaryIndexes"]), len(described["LocalSecondaryIndexes"])) == (20, 5)


@pytest.mark.parametrize(
    ("case", "request_", "expected"),
    [
        (
            "an attribute with two types",
            {"AttributeDefinitions": _defs(pk=S, sk=S) + _defs(pk=N)},
            rules.DUPLICATE_ATTRIBUTE.format(name="pk"),
        ),
        (
            "an attribute no key uses (with indexes)",
            {
                "AttributeDefinitions": _defs(pk=S, sk=S, g=S, x=S),
                "GlobalSecondaryIndexes": [_index("byg", "g")],
            },
            rules.UNUSED_ATTRIBUTES.format(defined="g, pk, sk, x", used="g, pk, sk"),
        ),
        (
            "an attribute no key uses (no index)",
            {"AttributeDefinitions": _defs(pk=S, sk=S, x=S)},
            rules.UNMATCHED_ATTRIBUTES,
        ),
        (
            "an index key without a definition",
            {"AttributeDefinitions": _defs(pk=S, sk=S), "GlobalSecondaryIndexes": [_index("byg", "g")]},
            rules.UNDEFINED_KEYS.format(keys="g", defined="pk, sk"),
        ),
        (
            "INCLUDE without NonKeyAttributes",
            {
                "AttributeDefinitions": _defs(pk=S, sk=S, g=S),
                "GlobalSecondaryIndexes": [_index("byg", "g", projection="INCLUDE")],
            },
            rules.INCLUDE_WITHOUT_NON_KEY,
        ),
        (
            "KEYS_ONLY with NonKeyAttributes",
            {
                "AttributeDefinitions": _defs(pk=S, sk=S, g=S),
                "GlobalSecondaryIndexes": [_index("byg", "g", projection="KEYS_ONLY", include=["a"])],
            },
            rules.NON_KEY_WITHOUT_INCLUDE.format(type="KEYS_ONLY"),
        ),
        (
            "a NonKeyAttribute twice",
            {
                "AttributeDefinitions": _defs(pk=S, sk=S, g=S),
                "GlobalSecondaryIndexes": [_index("byg", "g", projection="INCLUDE", include=["a", "a"])],
            },
            rules.DUPLICATE_NON_KEY.format(name="a"),
        ),
        (
            "an LSI keyed on another partition key",
            {
                "AttributeDefinitions": _defs(pk=S, sk=S, o=S),
                "LocalSecondaryIndexes": [_index("byo", "o", "sk")],
            },
            rules.LSI_HASH.format(index="byo", index_hash="o", table_hash="pk"),
        ),
        (
            "an LSI without a sort key",
            {"AttributeDefinitions": _defs(pk=S, sk=S), "LocalSecondaryIndexes": [_index("bypk", "pk")]},
            rules.LSI_NEEDS_RANGE.format(index="bypk"),
        ),
        (
            "two indexes of one name",
            {
                "AttributeDefinitions": _defs(pk=S, sk=S, g=S, l=S),
                "LocalSecondaryIndexes": [_index("same", "pk", "l")],
                "GlobalSecondaryIndexes": [_index("same", "g")],
            },
            rules.DUPLICATE_INDEX.format(index="same"),
        ),
        (
            "a GSI OnDemandThroughput below 1",
            {
                "AttributeDefinitions": _defs(pk=S, sk=S, g=S),
                "GlobalSecondaryIndexes": [_index("byg", "g", OnDemandThroughput={"MaxReadRequestUnits": 0})],
            },
            rules.ON_DEMAND_RANGE.format(field="MaxReadRequestUnits", index="byg"),
        ),
    ],
)
def test_create_table_refusals(aws: Aws, case: str, request_: dict[str, Any], expected: str) -> None:
    assert _create_table_refusal(aws.ddb, **request_) == ("ValidationException", expected), case


def test_create_table_refuses_an_lsi_on_a_table_without_a_sort_key(aws: Aws) -> None:
    assert _create_table_refusal(aws.ddb, sort=False, AttributeDefinitions=_defs(pk=S, l=S),
                                 LocalSecondaryIndexes=[_index("byl", "pk", "l")]) == (
        "ValidationException", rules.LSI_NEEDS_TABLE_RANGE)  # fmt: skip


def test_projected_attributes_are_limited_per_index_and_per_table(aws: Aws) -> None:
    twenty = [f"a{i}" for i in range(20)]
    code, message = _create_table_refusal(aws.ddb, AttributeDefinitions=_defs(pk=S, sk=S, g=S),
                                          GlobalSecondaryIndexes=[_index("byg", "g", projection="INCLUDE",
                                                                         include=[*twenty, "a20"])])  # fmt: skip
    assert code == "ValidationException"
    assert (
        "'globalSecondaryIndexes.1.member.projection.nonKeyAttributes'" in message
        and "equal to 20" in message
    )
    six = [_index(f"idx{i}", "g", projection="INCLUDE", include=twenty) for i in range(6)]  # 120 in all
    assert _create_table_refusal(aws.ddb, AttributeDefinitions=_defs(pk=S, sk=S, g=S), GlobalSecondaryIndexes=six) == (
        "ValidationException", rules.PROJECTED_LIMIT)  # fmt: skip
    # 100 is allowed; a 101st through UpdateTable is not
    _table(aws.ddb, defs={"g": S}, GlobalSecondaryIndexes=six[:5])
    assert _error(aws.ddb.update_table, TableName="tbl", AttributeDefinitions=_defs(h=S), GlobalSecondaryIndexUpdates=[
        {"Create": _index("byh", "h", projection="INCLUDE", include=["x"])}]) == ("ValidationException", rules.PROJECTED_LIMIT)  # fmt: skip


def test_update_table_refuses_a_21st_gsi_with_limit_exceeded(aws: Aws) -> None:
    defs, gsis = _many("g", 20)
    _table(aws.ddb, defs={d["AttributeName"]: S for d in defs}, GlobalSecondaryIndexes=gsis)
    assert _error(aws.ddb.update_table, TableName="tbl", AttributeDefinitions=_defs(x=S),
                  GlobalSecondaryIndexUpdates=[{"Create": _index("byx", "x")}]) == (
        "LimitExceededException", rules.GLOBAL_LIMIT_UPDATE)  # fmt: skip


def test_update_table_refusals(aws: Aws) -> None:
    _table(aws.ddb, sort=True, defs={"g": S, "l": S},
           GlobalSecondaryIndexes=[_index("byg", "g")], LocalSecondaryIndexes=[_index("byl", "pk", "l")])  # fmt: skip

    def refused(*updates: dict[str, Any], defs: list[dict[str, str]] | None = None) -> tuple[str, str]:
        extra = {"AttributeDefinitions": defs} if defs is not None else {}
        return _error(
            aws.ddb.update_table, TableName="tbl", GlobalSecondaryIndexUpdates=list(updates), **extra
        )

    create_h = {"Create": _index("byh", "h")}
    assert refused(create_h) == ("ValidationException", rules.NO_DEFINITIONS.format(index="byh"))
    assert refused(create_h, defs=_defs(x=S)) == (
        "ValidationException",
        rules.UNDEFINED_KEYS.format(keys="h", defined="x"),
    )
    assert refused({"Create": _index("byg", "g")}, defs=_defs(g=S)) == ("ValidationException", rules.EXISTS)
    assert refused({"Create": _index("byl", "g")}, defs=_defs(g=S)) == ("ValidationException", rules.EXISTS)
    assert refused({"Create": _index("byh", "h", projection="INCLUDE")}, defs=_defs(h=S)) == (
        "ValidationException", rules.INCLUDE_WITHOUT_NON_KEY)  # fmt: skip
    assert refused({"Delete": {"IndexName": "byg"}}, {"Update": {"IndexName": "byg", "OnDemandThroughput": {
        "MaxReadRequestUnits": 5}}}) == ("ValidationException", rules.SAME_INDEX_TWICE.format(index="byg"))  # fmt: skip
    assert refused({"Delete": {"IndexName": "byg"}, "Update": {"IndexName": "byg"}}) == (
        "ValidationException",
        rules.TWO_ACTIONS,
    )
    assert refused({"Delete": {"IndexName": "byl"}}) == (
        "ValidationException", rules.NOT_GLOBAL.format(action="delete", index="byl"))  # fmt: skip
    assert refused({"Delete": {"IndexName": "nope"}}) == (
        "ResourceNotFoundException", rules.NOT_FOUND.format(index="nope", table="tbl"))  # fmt: skip
    # nothing was changed by a refused request
    assert [g["IndexName"] for g in _described(aws.ddb)["GlobalSecondaryIndexes"]] == ["byg"]


def test_index_keys_of_a_written_item_must_have_their_defined_types(aws: Aws) -> None:
    _table(aws.ddb, sort=True, defs={"n": N, "l": B},
           GlobalSecondaryIndexes=[_index("byn", "n")], LocalSecondaryIndexes=[_index("byl", "pk", "l")])  # fmt: skip
    key = {"pk": {"S": "p"}, "sk": {"S": "s"}}
    mismatch = ("ValidationException", rules.TYPE_MISMATCH.format(key="n", expected=N, actual=S, index="byn"))
    assert _error(aws.ddb.put_item, TableName="tbl", Item={**key, "n": {"S": "1"}}) == mismatch
    assert _error(aws.ddb.update_item, TableName="tbl", Key=key, UpdateExpression="SET n = :v",
                  ExpressionAttributeValues={":v": {"S": "1"}}) == mismatch  # fmt: skip
    assert _error(aws.ddb.batch_write_item, RequestItems={"tbl": [{"PutRequest": {"Item": {**key, "l": {"S": "x"}}}}]}) == (
        "ValidationException", rules.TYPE_MISMATCH.format(key="l", expected=B, actual=S, index="byl"))  # fmt: skip
    assert _error(aws.ddb.put_item, TableName="tbl", Item={**key, "n": {"NULL": True}}) == (
        "ValidationException", rules.TYPE_MISMATCH.format(key="n", expected=N, actual="NULL", index="byn"))  # fmt: skip
    assert aws.ddb.scan(TableName="tbl")["Count"] == 0
    aws.ddb.put_item(TableName="tbl", Item={**key, "n": {"N": "1"}, "l": {"B": b"\x01"}})


def test_gsi_on_demand_and_warm_throughput(aws: Aws) -> None:
    # GIVEN a GSI with an on-demand maximum
    _table(aws.ddb, defs={"g": S},
           GlobalSecondaryIndexes=[_index("byg", "g", OnDemandThroughput={"MaxReadRequestUnits": 50, "MaxWriteRequestUnits": 40})])  # fmt: skip
    assert _gsi(aws.ddb, "byg")["OnDemandThroughput"] == {
        "MaxReadRequestUnits": 50,
        "MaxWriteRequestUnits": 40,
    }

    def update(**body: Any) -> None:
        aws.ddb.update_table(
            TableName="tbl", GlobalSecondaryIndexUpdates=[{"Update": {"IndexName": "byg", **body}}]
        )

    # WHEN it is changed, one direction lifted, and warm throughput raised
    update(OnDemandThroughput={"MaxReadRequestUnits": 60, "MaxWriteRequestUnits": -1})
    update(WarmThroughput={"ReadUnitsPerSecond": 13000})
    gsi = _gsi(aws.ddb, "byg")
    assert gsi["OnDemandThroughput"] == {"MaxReadRequestUnits": 60, "MaxWriteRequestUnits": -1}
    assert (gsi["WarmThroughput"]["ReadUnitsPerSecond"], gsi["WarmThroughput"]["WriteUnitsPerSecond"]) == (
        13000,
        4000,
    )
    # THEN lowering warm throughput is refused, and a cap below 1 too
    assert _error(aws.ddb.update_table, TableName="tbl", GlobalSecondaryIndexUpdates=[
        {"Update": {"IndexName": "byg", "WarmThroughput": {"ReadUnitsPerSecond": 12000}}}]) == (
        "ValidationException", rules.WARM_LOWER.format(field="ReadUnitsPerSecond", index="byg"))  # fmt: skip
    assert _error(aws.ddb.update_table, TableName="tbl", GlobalSecondaryIndexUpdates=[
        {"Update": {"IndexName": "byg", "OnDemandThroughput": {"MaxWriteRequestUnits": 0}}}]) == (
        "ValidationException", rules.ON_DEMAND_RANGE.format(field="MaxWriteRequestUnits", index="byg"))  # fmt: skip


# --------------------------------------------------------------------------------------------------- reads
@pytest.fixture
def typed(aws: Aws) -> Aws:
    """A table with a KEYS_ONLY GSI on (B, N), an INCLUDE GSI on (N, B), a KEYS_ONLY LSI on N, five items."""
    _table(aws.ddb, sort=True, defs={"n": N, "b": B},
           GlobalSecondaryIndexes=[_index("by-b-n", "b", "n", projection="KEYS_ONLY"),
                                   _index("by-n-b", "n", "b", projection="INCLUDE", include=["x"])],
           LocalSecondaryIndexes=[_index("by-pk-n", "pk", "n", projection="KEYS_ONLY")])  # fmt: skip
    for i, (number, binary) in enumerate(
        [("10", b"\x01"), ("9", b"\x01"), ("-1", b"\x01"), ("1.50", b"\xff"), ("100", b"\x00\x02")]
    ):
        aws.ddb.put_item(TableName="tbl", Item={"pk": {"S": "p"}, "sk": {"S": f"s{i}"}, "n": {"N": number},
                                              "b": {"B": binary}, "x": {"S": "xv"}, "y": {"S": "yv"}})  # fmt: skip
    aws.ddb.put_item(TableName="tbl", Item={"pk": {"S": "p"}, "sk": {"S": "sparse"}, "y": {"S": "yv"}})
    return aws


def test_keys_only_gsi_on_binary_and_number_keys(typed: Aws) -> None:
    items = _query_index(typed.ddb, "by-b-n", "b", {"B": b"\x01"})
    assert [i["n"]["N"] for i in items] == ["-1", "9", "10"]  # numeric order, not text
    assert all(set(i) == {"pk", "sk", "b", "n"} for i in items)  # the table's and the index's keys only
    ranged = typed.ddb.query(TableName="tbl", IndexName="by-b-n", KeyConditionExpression="b = :b AND n > :n",
                             ExpressionAttributeValues={":b": {"B": b"\x01"}, ":n": {"N": "9.5"}})["Items"]  # fmt: skip
    assert [i["sk"]["S"] for i in ranged] == ["s0"]


def test_include_gsi_on_number_and_binary_keys(typed: Aws) -> None:
    items = _query_index(typed.ddb, "by-n-b", "n", {"N": "1.5"})  # 1.50 and 1.5 are the same number
    assert [(i["sk"]["S"], set(i)) for i in items] == [("s3", {"pk", "sk", "n", "b", "x"})]
    scanned = typed.ddb.scan(TableName="tbl", IndexName="by-n-b")["Items"]
    assert sorted(i["sk"]["S"] for i in scanned) == [
        "s0",
        "s1",
        "s2",
        "s3",
        "s4",
    ]  # the sparse item is not in it
    assert all("y" not in i for i in scanned)


def test_a_gsi_does_not_fetch_what_it_does_not_project(typed: Aws) -> None:
    assert _error(typed.ddb.query, TableName="tbl", IndexName="by-b-n", KeyConditionExpression="b = :b",
                  ExpressionAttributeValues={":b": {"B": b"\x01"}}, Select="ALL_ATTRIBUTES")[0] == "ValidationException"  # fmt: skip


def test_a_local_index_fetches_what_it_does_not_project(typed: Aws) -> None:
    keys_only = _query_index(typed.ddb, "by-pk-n", "pk", {"S": "p"})
    # (a number is read back in the canonical form DynamoDB stores: 1.50 written is 1.5 read)
    assert [i["n"]["N"] for i in keys_only] == ["-1", "1.5", "9", "10", "100"]
    assert all(set(i) == {"pk", "sk", "n"} for i in keys_only)
    everything = _query_index(typed.ddb, "by-pk-n", "pk", {"S": "p"}, Select="ALL_ATTRIBUTES")
    assert all(i["y"] == {"S": "yv"} and i["x"] == {"S": "xv"} for i in everything)
    projected = _query_index(typed.ddb, "by-pk-n", "pk", {"S": "p"}, ProjectionExpression="y, n")
    assert projected[0] == {"y": {"S": "yv"}, "n": {"N": "-1"}}
    filtered = _query_index(
        typed.ddb, "by-pk-n", "pk", {"S": "p"}, FilterExpression="x = :x", values={":x": {"S": "xv"}}
    )
    assert len(filtered) == 5 and all(set(i) == {"pk", "sk", "n"} for i in filtered)
    scanned = typed.ddb.scan(TableName="tbl", IndexName="by-pk-n", Select="ALL_ATTRIBUTES")["Items"]
    assert len(scanned) == 5 and all("y" in i for i in scanned)


def test_index_pages_continue_from_last_evaluated_key(typed: Aws) -> None:
    first = typed.ddb.query(TableName="tbl", IndexName="by-pk-n", KeyConditionExpression="pk = :p",
                            ExpressionAttributeValues={":p": {"S": "p"}}, ScanIndexForward=False, Limit=2)  # fmt: skip
    assert [i["n"]["N"] for i in first["Items"]] == ["100", "10"]
    assert set(first["LastEvaluatedKey"]) == {"pk", "sk", "n"}
    rest = typed.ddb.query(TableName="tbl", IndexName="by-pk-n", KeyConditionExpression="pk = :p",
                           ExpressionAttributeValues={":p": {"S": "p"}}, ScanIndexForward=False,
                           ExclusiveStartKey=first["LastEvaluatedKey"])  # fmt: skip
    assert [i["n"]["N"] for i in rest["Items"]] == ["9", "1.5", "-1"]


# ------------------------------------------------------------------------------------------ CloudFormation
def _template(*gsis: dict[str, Any], lsis: list[dict[str, Any]] | None = None, name: str | None = "cfn-t",
              defs: dict[str, str] | None = None) -> str:  # fmt: skip
    types = {"pk": S, "sk": S, **(defs or {})}
    props: dict[str, Any] = {
        "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": _keys("pk", "sk"),
        "AttributeDefinitions": _defs(**types),
    }
    if name:
        props["TableName"] = name
    if gsis:
        props["GlobalSecondaryIndexes"] = list(gsis)
    if lsis:
        props["LocalSecondaryIndexes"] = lsis
    return json.dumps({"Resources": {"Table": {"Type": "AWS::DynamoDB::Table", "Properties": props}}})


def _stack(aws: Aws) -> dict[str, Any]:
    return aws.cfn.describe_stacks(StackName="s")["Stacks"][0]  # type: ignore[no-any-return]


def _physical(aws: Aws) -> str:
    resources = aws.cfn.list_stack_resources(StackName="s")["StackResourceSummaries"]
    return next(r["PhysicalResourceId"] for r in resources if r["LogicalResourceId"] == "Table")


def _refused_update(aws: Aws, template: str) -> str:
    aws.cfn.update_stack(StackName="s", TemplateBody=template)
    stack = _stack(aws)
    assert stack["StackStatus"] == "UPDATE_ROLLBACK_COMPLETE"
    return str(stack["StackStatusReason"])


def _handler_reason(message: str, code: str = "InvalidRequest") -> str:
    return f'Resource handler returned message: "{message}" (HandlerErrorCode: {code})'


def test_stack_updates_add_gsis_one_at_a_time_and_wait_until_active(aws: Aws) -> None:
    # GIVEN a stack's table holding an item
    aws.cfn.create_stack(StackName="s", TemplateBody=_template())
    aws.ddb.put_item(
        TableName="cfn-t", Item={"pk": {"S": "p"}, "sk": {"S": "s"}, "a": {"S": "x"}, "b": {"N": "1"}}
    )
    a, b = _index("bya", "a", projection="KEYS_ONLY"), _index("byb", "b", projection="INCLUDE", include=["a"])
    # WHEN two GSIs are added in one update THEN CloudFormation refuses it (its InvalidRequest)
    assert _refused_update(aws, _template(a, b, defs={"a": S, "b": N})) == _handler_reason(
        rules.CFN_GSI_LIMIT
    )
    assert "GlobalSecondaryIndexes" not in _described(aws.ddb, "cfn-t")
    # WHEN they are added in two updates
    for template, waited in ((_template(a, defs={"a": S}), 1), (_template(a, b, defs={"a": S, "b": N}), 2)):
        aws.cfn.update_stack(StackName="s", TemplateBody=template)
        # THEN each update completes once its index is ACTIVE (it waited for the backfill on the clock)
        assert _stack(aws)["StackStatus"] == "UPDATE_COMPLETE"
        assert aws.clock.now() == waited * lifecycle.BACKFILL_DEFAULT_SECONDS
        assert all(
            g["IndexStatus"] == "ACTIVE" for g in _described(aws.ddb, "cfn-t")["GlobalSecondaryIndexes"]
        )
    assert _described(aws.ddb, "cfn-t")["AttributeDefinitions"] == _defs(a=S, b=N, pk=S, sk=S)
    assert [i["sk"]["S"] for i in _query_index(aws.ddb, "byb", "b", {"N": "1"}, name="cfn-t")] == ["s"]
    # AND a removal is one update, complete once the index is gone
    aws.cfn.update_stack(StackName="s", TemplateBody=_template(b, defs={"b": N}))
    assert _stack(aws)["StackStatus"] == "UPDATE_COMPLETE"
    described = _described(aws.ddb, "cfn-t")
    assert [g["IndexName"] for g in described["GlobalSecondaryIndexes"]] == ["byb"]
    assert described["AttributeDefinitions"] == _defs(b=N, pk=S, sk=S)


def test_stack_update_cannot_change_a_gsis_keys_or_projection(aws: Aws) -> None:
    aws.cfn.create_stack(
        StackName="s", TemplateBody=_template(_index("byg", "g", projection="KEYS_ONLY"), defs={"g": S})
    )
    for changed in (_index("byg", "g", projection="ALL"), _index("byg", "g", "h")):
        reason = _refused_update(aws, _template(changed, defs={"g": S, "h": S}))
        assert reason == _handler_reason(rules.CFN_GSI_PROPERTIES)
    assert _gsi(aws.ddb, "byg", "cfn-t")["Projection"] == {"ProjectionType": "KEYS_ONLY"}


def test_stack_update_changes_gsi_throughput_in_place(aws: Aws) -> None:
    caps = {"MaxReadRequestUnits": 10, "MaxWriteRequestUnits": 20}
    aws.cfn.create_stack(
        StackName="s", TemplateBody=_template(_index("byg", "g", OnDemandThroughput=caps), defs={"g": S})
    )
    assert _gsi(aws.ddb, "byg", "cfn-t")["OnDemandThroughput"] == caps
    warm = {"ReadUnitsPerSecond": 15000, "WriteUnitsPerSecond": 5000}
    aws.cfn.update_stack(StackName="s", TemplateBody=_template(
        _index("byg", "g", OnDemandThroughput={"MaxReadRequestUnits": 30}, WarmThroughput=warm), defs={"g": S}))  # fmt: skip
    assert _stack(aws)["StackStatus"] == "UPDATE_COMPLETE"
    gsi = _gsi(aws.ddb, "byg", "cfn-t")
    assert gsi["IndexStatus"] == "ACTIVE"
    assert gsi["OnDemandThroughput"] == {"MaxReadRequestUnits": 30, "MaxWriteRequestUnits": -1}
    assert {k: gsi["WarmThroughput"][k] for k in warm} == warm
    aws.cfn.update_stack(
        StackName="s", TemplateBody=_template(_index("byg", "g", WarmThroughput=warm), defs={"g": S})
    )
    assert "OnDemandThroughput" not in _gsi(aws.ddb, "byg", "cfn-t")


def test_an_lsi_change_replaces_the_table_which_a_custom_name_forbids(aws: Aws) -> None:
    lsi = _index("byl", "pk", "l")
    # GIVEN a custom-named table: an LSI change would replace it, which CloudFormation refuses
    aws.cfn.create_stack(StackName="s", TemplateBody=_template())
    reason = _refused_update(aws, _template(lsis=[lsi], defs={"l": S}))
    assert "custom-named resource requires replacing. Rename cfn-t and update" in reason
    aws.cfn.delete_stack(StackName="s")
    # GIVEN a table CloudFormation names: the same change is a new table
    aws.cfn.create_stack(StackName="s", TemplateBody=_template(name=None))
    before = _physical(aws)
    aws.cfn.update_stack(StackName="s", TemplateBody=_template(lsis=[lsi], name=None, defs={"l": S}))
    assert _stack(aws)["StackStatus"] == "UPDATE_COMPLETE"
    after = _physical(aws)
    assert after != before
    assert [i["IndexName"] for i in _described(aws.ddb, after)["LocalSecondaryIndexes"]] == ["byl"]
    assert before not in aws.ddb.list_tables()["TableNames"]


def test_a_template_meets_create_tables_index_rules(aws: Aws) -> None:
    defs, gsis = _many("g", 21)
    aws.cfn.create_stack(
        StackName="s", TemplateBody=_template(*gsis, defs={d["AttributeName"]: S for d in defs})
    )
    stack = _stack(aws)
    assert stack["StackStatus"] == "ROLLBACK_COMPLETE"
    assert rules.GLOBAL_LIMIT_CREATE in stack["StackStatusReason"]
