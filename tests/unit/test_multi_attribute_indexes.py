"""Multi-attribute index keys (a GSI's partition and sort keys of up to four attributes each): the declaration's
rules (each bad one a one-line problem), the shape and the record they build, what a live table's several HASH and
RANGE entries differ in (any change of the attributes, their order or types replaces the index, through the gate),
and the query verify makes of such an index."""

from __future__ import annotations

from typing import Any

import pytest

from contract.knobs import ConfigError, resolve_config
from contract.shape import index_declaration, table_shape
from doctable.capabilities import indexes
from doctable.capabilities.table_shape import shape_findings
from tests.support import ops as ot

MATCH = {"partition": ["tenant:S", "region:S"], "sort": ["year:N", "round:S", "seq:N"]}
TTL_OFF = {"TimeToLiveStatus": "DISABLED"}


def problems(declared: dict[str, Any]) -> list[str]:
    try:
        resolve_config(context={}, environ={}, indexes=declared)
    except ConfigError as exc:
        return exc.problems
    return []


# ------------------------------------------------------------------------------------------ declaration
@pytest.mark.parametrize(
    ("declared", "start"),
    [
        ({"partition": []}, "index 'one': partition = [] names no attribute; allowed: \"attribute:type\" or an array of 1 to 4"),
        ({"partition": ["a:S"], "sort": []}, "index 'one': sort = [] names no attribute"),
        ({"partition": ["a:S", "b:S", "c:S", "d:S", "e:S"]}, "index 'one': partition lists 5 attributes; allowed: at most 4"),
        ({"partition": "a:S", "sort": ["b:N", "c:N", "d:N", "e:N", "f:N"]}, "index 'one': sort lists 5 attributes; allowed: at most 4"),
        ({"partition": ["a:S", "a:S"]}, "index 'one': partition names 'a' twice; allowed: each attribute once"),
        ({"partition": ["a:S", "b:S"], "sort": ["c:N", "b:S"]}, "index 'one': 'b' is both the partition and the sort key"),
        ({"partition": ["a:S", 3]}, "index 'one': partition[1] = 3 is not a string; allowed: \"attribute:type\""),
        ({"partition": {"a": "S"}}, "index 'one': partition = {'a': 'S'} is not a string; allowed: \"attribute:type\" or an array"),
        ({"partition": ["a:S", "b:X"]}, "index 'one': partition[1] = 'b:X' has type 'X'; allowed: S|N|B"),
        ({"partition": ["a:S", "b"]}, "index 'one': partition[1] = 'b' is not \"attribute:type\""),
        ({"sort": ["a:S", "b:S"]}, "index 'one': a global index needs a partition key"),
        ({"kind": "local", "sort": ["a:S", "b:S"]}, "index 'one': a local index's sort key is one attribute"),
        ({"partition": ["pk:N", "b:S"]}, "attribute 'pk' is N in index 'one' but S in the table"),
    ],
)  # fmt: skip
def test_each_bad_multi_attribute_declaration_is_one_line(declared: dict[str, Any], start: str) -> None:
    found = problems({"one": declared})
    assert len(found) == 1, found
    assert "\n" not in found[0] and found[0].startswith(start), found


def test_an_attribute_with_two_types_across_indexes_is_one_line() -> None:
    found = problems({"one": MATCH, "two": {"partition": ["tenant:S", "year:S"]}})
    assert found == [
        "attribute 'year' is S in index 'two' but N in index 'one'; allowed: one type per attribute across the "
        "table and its indexes"
    ]


def test_a_multi_attribute_declaration_builds_its_shape_and_round_trips() -> None:
    config = resolve_config(context={}, environ={}, indexes={"byMatch": MATCH})
    (spec,) = config.indexes
    assert spec.partition_keys == (("tenant", "S"), ("region", "S"))
    assert spec.sort_keys == (("year", "N"), ("round", "S"), ("seq", "N"))
    index = table_shape(config).index("byMatch")
    assert index is not None and index.multi_attribute
    assert index.key_schema() == [
        {"AttributeName": "tenant", "KeyType": "HASH"},
        {"AttributeName": "region", "KeyType": "HASH"},
        {"AttributeName": "year", "KeyType": "RANGE"},
        {"AttributeName": "round", "KeyType": "RANGE"},
        {"AttributeName": "seq", "KeyType": "RANGE"},
    ]
    assert table_shape(config).attribute_definitions() == {
        "pk": "S", "sk": "S", "tenant": "S", "region": "S", "year": "N", "round": "S", "seq": "N"
    }  # fmt: skip
    # the settings file's form comes back: from the spec, from the shape, and through the stack's record
    assert spec.declaration() == {**MATCH, "projection": "all"}
    assert index_declaration(index) == {**MATCH, "projection": "all"}
    from contract.knobs import indexes_of_record, knobs_from_record

    record = config.deployed_record()
    again = resolve_config(
        context={}, environ={}, defaults=knobs_from_record(record), indexes=indexes_of_record(record)
    )
    assert again == config


def test_an_array_of_one_is_the_single_attribute_index() -> None:
    one = resolve_config(
        context={}, environ={}, indexes={"byOwner": {"partition": ["owner:S"], "sort": ["at:N"]}}
    )
    plain = resolve_config(
        context={}, environ={}, indexes={"byOwner": {"partition": "owner:S", "sort": "at:N"}}
    )
    assert one.indexes == plain.indexes and not one.indexes[0].multi_attribute
    assert one.indexes[0].declaration()["partition"] == "owner:S"


# ------------------------------------------------------------------------------------------ live changes
def live(*definitions: dict[str, Any], types: dict[str, str] | None = None) -> dict[str, Any]:
    table = ot.live_table(GlobalSecondaryIndexes=[{"IndexStatus": "ACTIVE", **d} for d in definitions])
    for a in table["AttributeDefinitions"]:
        a["AttributeType"] = (types or {}).get(a["AttributeName"], a["AttributeType"])
    return table


def definition(declared: dict[str, Any], name: str = "byMatch") -> dict[str, Any]:
    config = resolve_config(context={}, environ={}, indexes={name: declared})
    return table_shape(config).indexes[0].definition()


def codes(declared: dict[str, Any], table: dict[str, Any]) -> list[tuple[str, str, bool]]:
    config = resolve_config(context={}, environ={}, indexes={"byMatch": declared})
    return [(f.code, f.subject, f.destructive) for f in shape_findings(config, table, TTL_OFF, "DISABLED")]


TYPES = {"year": "N", "seq": "N"}


def test_the_live_key_schema_with_several_hash_and_range_entries_is_read_in_order() -> None:
    # DescribeTable may list the entries in any interleaving; each kind's order is the key's
    schema = definition(MATCH)["KeySchema"]
    shuffled = [schema[2], schema[0], schema[3], schema[1], schema[4]]
    table = live({**definition(MATCH), "KeySchema": shuffled}, types=TYPES)
    index = indexes.live_indexes(table)["byMatch"]
    assert [(k.name, k.key_type, k.type) for k in index.keys] == [
        ("tenant", "HASH", "S"), ("region", "HASH", "S"), ("year", "RANGE", "N"), ("round", "RANGE", "S"),
        ("seq", "RANGE", "N"),
    ]  # fmt: skip
    assert codes(MATCH, table) == []


@pytest.mark.parametrize(
    "changed",
    [
        {**MATCH, "partition": ["region:S", "tenant:S"]},  # the partition's order
        {**MATCH, "sort": ["round:S", "year:N", "seq:N"]},  # the sort's order
        {**MATCH, "sort": ["year:N", "round:S"]},  # one attribute fewer
        {**MATCH, "partition": ["tenant:S", "region:S", "zone:S"]},  # one more
        {**MATCH, "sort": ["year:N", "round:S", "seq:S"]},  # a type
        {"partition": "tenant:S", "sort": ["year:N", "round:S", "seq:N"]},  # to one partition attribute
    ],
)
def test_any_change_of_a_multi_attribute_key_replaces_the_index_through_the_gate(
    changed: dict[str, Any],
) -> None:
    table = live(definition(MATCH), types=TYPES)
    found = codes(changed, table)
    assert found[0] == ("index.replaced", "byMatch", True), found


def test_verify_lists_a_multi_attribute_index_that_differs() -> None:
    from doctable.core.live import LiveTable

    table = live(definition(MATCH), types=TYPES)
    config = resolve_config(
        context={}, environ={}, indexes={"byMatch": {**MATCH, "sort": ["round:S", "year:N", "seq:N"]}}
    )
    (problem,) = indexes.index_problems(table_shape(config), table, LiveTable.of(table))
    assert problem == (
        "byMatch is global: tenant HASH S, region HASH S, year RANGE N, round RANGE S, seq RANGE N; projection ALL, "
        "declared global: tenant HASH S, region HASH S, round RANGE S, year RANGE N, seq RANGE N; projection ALL"
    )


def test_an_index_step_template_keeps_a_live_multi_attribute_index_as_it_is() -> None:
    # the intermediate templates of a multi-step deploy spell each index out as the settings file does
    config = resolve_config(
        context={}, environ={}, indexes={"byMatch": MATCH, "byOther": {"partition": "o:S"}}
    )
    shape = table_shape(config)
    changes = indexes.index_changes(shape, live(definition(MATCH), types=TYPES))
    (step,) = indexes.gsi_steps(changes, order=[i.name for i in shape.global_indexes])
    assert [index_declaration(i) for i in step.after] == [
        {**MATCH, "projection": "all"},
        {"partition": "o:S", "projection": "all"},
    ]


# ------------------------------------------------------------------------------------------ verify's query
def test_verify_queries_every_partition_attribute_and_the_sort_attributes_left_to_right() -> None:
    config = resolve_config(context={}, environ={}, indexes={"byMatch": MATCH})
    index = table_shape(config).indexes[0]
    item = indexes.index_nudge(index, "verify-1", "idx0")
    assert set(item) == {"tenant", "region", "year", "round", "seq"}
    condition = indexes.index_key_condition(index, item)
    assert condition["KeyConditionExpression"] == (
        "#p0 = :p0 AND #p1 = :p1 AND #s0 = :s0 AND #s1 = :s1 AND #s2 BETWEEN :s2 AND :s2"
    )
    assert [condition["ExpressionAttributeNames"][f"#{n}"] for n in ("p0", "p1", "s0", "s1", "s2")] == [
        "tenant", "region", "year", "round", "seq",
    ]  # fmt: skip
    # a single-attribute index is queried by its partition key alone, as before
    single = table_shape(
        resolve_config(context={}, environ={}, indexes={"one": {"partition": "a:S", "sort": "b:N"}})
    )
    one = single.indexes[0]
    assert indexes.index_key_condition(one, indexes.index_nudge(one, "v", "idx0"))[
        "KeyConditionExpression"
    ] == ("#p0 = :p0")


def test_verify_finds_its_nudge_in_a_multi_attribute_index_of_the_local_aws(local_moto: None) -> None:
    import boto3

    config = resolve_config(context={}, environ={}, indexes={"byMatch": MATCH})
    shape = table_shape(config)
    ddb = boto3.client("dynamodb", region_name="eu-west-1")
    ddb.create_table(
        TableName="mak-test",
        KeySchema=[{"AttributeName": k.name, "KeyType": k.key_type} for k in shape.keys],
        AttributeDefinitions=[
            {"AttributeName": a, "AttributeType": t} for a, t in shape.attribute_definitions().items()
        ],
        GlobalSecondaryIndexes=[i.definition() for i in shape.global_indexes],
        BillingMode="PAY_PER_REQUEST",
    )
    index = shape.indexes[0]
    item = {"pk": {"S": "verify-1"}, "sk": {"S": "idx0"}, **indexes.index_nudge(index, "verify-1", "idx0")}
    ddb.put_item(TableName="mak-test", Item=item)
    # an item lacking one of the index's key attributes is not in the index
    ddb.put_item(
        TableName="mak-test", Item={**{k: v for k, v in item.items() if k != "seq"}, "sk": {"S": "other"}}
    )
    reply = ddb.query(TableName="mak-test", IndexName="byMatch", **indexes.index_key_condition(index, item))
    assert [i["sk"]["S"] for i in reply["Items"]] == ["idx0"]
    # DescribeTable's KeySchema, several HASH and RANGE entries, reads back as the declared index
    live_index = indexes.live_indexes(ddb.describe_table(TableName="mak-test")["Table"])["byMatch"]
    assert indexes.compare(index, live_index) == indexes.SAME


# ------------------------------------------------------------------------------------------ plan
def test_plan_names_a_multi_attribute_index_and_what_puts_a_write_in_it() -> None:
    from doctable.plan.cost import Workload, build_plan

    config = resolve_config(
        context={}, environ={}, indexes={"byMatch": MATCH, "byOwner": {"partition": "o:S"}}
    )
    plan = build_plan(Workload(writes_per_second=100, item_kb=3), config)
    assert "index byMatch writes (3 WRU each)" in plan.monthly_usd
    notes = [n for n in plan.notes if "multi-attribute" in n]
    assert notes == [
        "index byMatch has a multi-attribute key (partition tenant, region; sort year, round, seq): a write is "
        "written to it only when its item carries every one of them (count that share in --index-share)"
    ]


def test_a_reordered_key_is_a_deploy_change_and_an_index_made_outside_with_one_is_drift() -> None:
    from doctable.capabilities.drift import changed_by_deploy
    from doctable.capabilities.table_shape import differences

    deployed = resolve_config(context={}, environ={}, indexes={"byMatch": MATCH})
    reordered = {**MATCH, "partition": ["region:S", "tenant:S"]}
    target = resolve_config(context={}, environ={}, indexes={"byMatch": reordered})
    # the declaration changed: preflight's index.replaced is the deploy's, not drift
    assert changed_by_deploy("index:byMatch", deployed, target)
    assert not changed_by_deploy("index:byMatch", deployed, deployed)
    # a multi-attribute index made behind the stack is reported, never deleted by reconcile
    table = live(definition(MATCH), definition(reordered, name="zzzMade"), types=TYPES)
    found = [(d.prop, d.op) for d in differences(deployed, table, TTL_OFF, "DISABLED")]
    assert found == [("index:zzzMade", None)]
