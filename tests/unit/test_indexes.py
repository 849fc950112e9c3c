"""Your own indexes: the declaration's rules (each bad one a one-line problem), the shape they build, what a live
table's indexes differ in, and the order of the one-change-per-update steps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from contract.findings import Level
from contract.knobs import ConfigError, resolve_config, with_index_step
from contract.settings.render import render_settings
from contract.settings.resolve import parse_settings, resolve_settings
from contract.shape import index_declaration, table_shape
from doctable.capabilities import indexes
from doctable.capabilities.table_shape import shape_findings
from tests.support import ops as ot

BY_OWNER = {"partition": "owner:S", "sort": "createdAt:N", "projection": "include", "include": ["summary"]}
BY_VERSION = {"kind": "local", "sort": "version:N", "projection": "keys-only"}
TTL_OFF = {"TimeToLiveStatus": "DISABLED"}


def problems(declared: dict[str, Any], **knobs: str) -> list[str]:
    try:
        resolve_config(context=knobs, environ={}, indexes=declared)
    except ConfigError as exc:
        return exc.problems
    return []


def gsi(n: int) -> dict[str, dict[str, str]]:
    return {f"idx{i:02d}": {"partition": f"a{i}:S"} for i in range(n)}


# ------------------------------------------------------------------------------------------ declaration
@pytest.mark.parametrize(
    ("declared", "knobs", "names"),
    [
        (gsi(21), {}, ["21 global secondary indexes declared; allowed: at most 20"]),
        (gsi(20), {"gsi": "gsi1"}, ["21 global secondary indexes declared; allowed: at most 20"]),
        (
            {f"lsi{i}": {"kind": "local", "sort": f"s{i}:S"} for i in range(6)},
            {},
            ["6 local secondary indexes declared; allowed: at most 5"],
        ),
        ({"ab": {"partition": "a:S"}}, {}, ["index 'ab': the name is not 3..255 characters"]),
        ({"a b c": {"partition": "a:S"}}, {}, ["index 'a b c': the name is not 3..255 characters"]),
        (
            {"gsi1": {"partition": "a:S"}},
            {"gsi": "gsi1"},
            ["index 'gsi1' is declared in indexes and by the gsi knob"],
        ),
        (
            {"one": {"partition": "owner:S"}, "two": {"partition": "owner:N"}},
            {},
            ["attribute 'owner' is N in index 'two' but S in index 'one'"],
        ),
        ({"one": {"partition": "pk:N"}}, {}, ["attribute 'pk' is N in index 'one' but S in the table"]),
        (
            {"one": {"partition": "a:S", "sort": "a:S"}},
            {},
            ["index 'one': 'a' is both the partition and the sort key"],
        ),
        (
            {"one": {"partition": "a:S", "projection": "include"}},
            {},
            ["index 'one': projection = \"include\" needs"],
        ),
        (
            {"one": {"partition": "a:S", "include": ["x"]}},
            {},
            ["index 'one': include is set but projection = 'all'"],
        ),
        (
            {
                f"inc{i}": {
                    "partition": "a:S",
                    "projection": "include",
                    "include": [f"x{j}" for j in range(20)],
                }
                for i in range(6)
            },
            {},
            ["120 projected attributes in include, summed over every index; allowed: at most 100"],
        ),
        ({"one": {"partition": "a:X"}}, {}, ["index 'one': partition = 'a:X' has type 'X'; allowed: S|N|B"]),
        ({"one": {"partition": "a"}}, {}, ["index 'one': partition = 'a' is not \"attribute:type\""]),
        (
            {"one": {"partition": "a:S", "sortt": "b:S"}},
            {},
            ["index 'one': 'sortt' is not an index field (did you mean sort?)"],
        ),
        ({"one": {"sort": "a:S"}}, {}, ["index 'one': a global index needs a partition key"]),
        ({"one": {"kind": "local"}}, {}, ["index 'one': a local index needs a sort key"]),
        (
            {"one": {"kind": "local", "sort": "a:S", "max_read": 5}},
            {},
            ["index 'one': max_read applies to a global index only"],
        ),
        (
            {"one": {"partition": "a:S", "max_read": 0}},
            {},
            ["index 'one': max_read = 0 is out of range; allowed: an integer 1..40000"],
        ),
        (
            {"one": {"kind": "other", "partition": "a:S"}},
            {},
            ["index 'one': kind = 'other'; allowed: global|local"],
        ),
    ],
)
def test_each_bad_declaration_is_one_line_naming_the_rule(
    declared: dict[str, Any], knobs: dict[str, str], names: list[str]
) -> None:
    found = problems(declared, **knobs)
    assert len(found) == len(names), found
    for line, start in zip(found, names, strict=True):
        assert "\n" not in line and line.startswith(start), (line, start)


def test_a_good_declaration_builds_its_shape() -> None:
    config = resolve_config(
        context={"gsi": "gsi1"}, environ={}, indexes={"byOwner": BY_OWNER, "byVersion": BY_VERSION}
    )
    shape = table_shape(config)
    assert [(i.name, i.kind, i.projection) for i in shape.indexes] == [
        ("gsi1", "global", "ALL"),
        ("byOwner", "global", "INCLUDE"),
        ("byVersion", "local", "KEYS_ONLY"),
    ]
    assert shape.attribute_definitions() == {
        "pk": "S", "sk": "S", "gsi1pk": "S", "gsi1sk": "S", "owner": "S", "createdAt": "N", "version": "N"
    }  # fmt: skip
    assert shape.index("byOwner").non_key_attributes == ("summary",)  # type: ignore[union-attr]
    # the declaration round-trips: the shape's declaration is what was declared (projection spelt out)
    assert index_declaration(shape.index("byVersion")) == BY_VERSION  # type: ignore[arg-type]
    assert index_declaration(shape.index("byOwner")) == BY_OWNER  # type: ignore[arg-type]


def test_the_stack_records_the_indexes_and_reads_them_back() -> None:
    from contract.knobs import indexes_of_record, knobs_from_record

    config = resolve_config(context={}, environ={}, indexes={"byOwner": {**BY_OWNER, "max_read": 500}})
    record = config.deployed_record()
    again = resolve_config(
        context={}, environ={}, defaults=knobs_from_record(record), indexes=indexes_of_record(record)
    )
    assert again == config


def test_an_environment_declaring_indexes_replaces_the_defaults(tmp_path: Path) -> None:
    text = """
[defaults.indexes.byOwner]
partition = "owner:S"
[environments.dev]
[environments.stg.indexes.byTenant]
partition = "tenant:S"
[environments.uat.indexes]
"""
    path = tmp_path / "doctable.toml"
    path.write_text(text)
    declared = {
        env: sorted(i.name for i in resolve_settings({"env": env}, {}, config_path=path).config.indexes)
        for env in ("dev", "stg", "uat")
    }
    assert declared == {"dev": ["byOwner"], "stg": ["byTenant"], "uat": []}
    # AND the file renders back to the same settings
    settings = parse_settings(text, path)
    assert parse_settings(render_settings(settings), path) == settings


def test_a_bad_index_in_the_file_names_its_section(tmp_path: Path) -> None:
    path = tmp_path / "doctable.toml"
    path.write_text('[environments.stg.indexes.byOwner]\npartition = "owner:Q"\n')
    with pytest.raises(ConfigError) as caught:
        resolve_settings({"env": "stg"}, {}, config_path=path)
    assert [p.split(":")[0] for p in caught.value.problems] == [
        "doctable.toml [environments.stg] index 'byOwner'"
    ]


def test_an_index_step_spells_the_shorthand_out() -> None:
    config = resolve_config(context={"gsi": "gsi1"}, environ={}, indexes={"byOwner": BY_OWNER})
    step = with_index_step(config, '{"gsi1":{"partition":"gsi1pk:S","sort":"gsi1sk:S","projection":"all"}}')
    assert table_shape(step).indexes == table_shape(config).indexes[:1]
    assert step.gsi == "none" and step.stream == config.stream
    with pytest.raises(ConfigError):
        with_index_step(config, "{not json")


# ------------------------------------------------------------------------------------------ live changes
def live(*definitions: dict[str, Any], types: dict[str, str] | None = None) -> dict[str, Any]:
    table = ot.live_table(GlobalSecondaryIndexes=[{"IndexStatus": "ACTIVE", **d} for d in definitions])
    for attr, kind in (types or {}).items():
        for a in table["AttributeDefinitions"]:
            if a["AttributeName"] == attr:
                a["AttributeType"] = kind
    return table


def definition(name: str, declared: dict[str, Any]) -> dict[str, Any]:
    config = resolve_config(context={}, environ={}, indexes={name: declared})
    return table_shape(config).indexes[0].definition()


def codes(config_indexes: dict[str, Any], table: dict[str, Any], **knobs: str) -> list[tuple[str, str, bool]]:
    config = resolve_config(context=knobs, environ={}, indexes=config_indexes)
    return [(f.code, f.subject, f.destructive) for f in shape_findings(config, table, TTL_OFF, "DISABLED")]


def test_each_index_change_has_its_code() -> None:
    a, b, c = ({"partition": f"{n}:S"} for n in "abc")
    table = live(definition("aaa", a), definition("bbb", b), types={})
    found = codes({"aaa": {**a, "projection": "keys-only"}, "ccc": c, "bbb": {**b, "max_read": 100}}, table)
    assert found == [
        ("index.added", "ccc", False),
        ("index.replaced", "aaa", True),
        ("index.throughput_changed", "bbb", False),
        ("index.multi_step", "indexes", False),
    ]
    gone = codes({}, table)
    assert gone[:2] == [("index.removed", "aaa", True), ("index.removed", "bbb", True)]


def test_a_key_type_change_replaces_the_index() -> None:
    table = live(definition("aaa", {"partition": "a:S"}))
    assert codes({"aaa": {"partition": "a:N"}}, table)[0] == ("index.replaced", "aaa", True)


def test_an_lsi_added_to_a_live_table_is_a_table_replacement() -> None:
    found = codes({"byVersion": BY_VERSION}, ot.live_table())
    assert found == [("table.replaced", "index byVersion", True)]
    config = resolve_config(context={}, environ={}, indexes={"byVersion": BY_VERSION})
    finding = shape_findings(config, ot.live_table(), TTL_OFF, "DISABLED")[0]
    assert finding.level is Level.CHANGE  # the gate stops it (destructive), not preflight's STOP


def test_verify_lists_what_an_index_gets_wrong() -> None:
    config = resolve_config(
        context={}, environ={}, indexes={"aaa": {"partition": "a:S"}, "bbb": {"partition": "b:S"}}
    )
    table = live({**definition("aaa", {"partition": "a:S"}), "IndexStatus": "CREATING"})
    from doctable.core.live import LiveTable

    found = indexes.index_problems(table_shape(config), table, LiveTable.of(table))
    assert found == ["bbb missing", "aaa CREATING (backfill not finished)"]


# ------------------------------------------------------------------------------------------ the steps
def plan(
    declared: dict[str, Any], table: dict[str, Any], limit: int = 20
) -> list[tuple[str, str, list[str]]]:
    config = resolve_config(context={}, environ={}, indexes=declared)
    shape = table_shape(config)
    changes = indexes.index_changes(shape, table)
    steps = indexes.gsi_steps(changes, order=[i.name for i in shape.global_indexes], limit=limit)
    return [(s.action, s.index, [i.name for i in s.after]) for s in steps]


def test_three_new_indexes_are_three_updates_each_adding_one() -> None:
    declared = {n: {"partition": f"{n}:S"} for n in ("aaa", "bbb", "ccc")}
    assert plan(declared, ot.live_table()) == [
        ("create", "aaa", ["aaa"]),
        ("create", "bbb", ["aaa", "bbb"]),
        ("create", "ccc", ["aaa", "bbb", "ccc"]),
    ]


def test_a_replaced_index_is_deleted_then_created_and_removals_come_last() -> None:
    a, b = {"partition": "a:S"}, {"partition": "b:S"}
    table = live(definition("aaa", a), definition("bbb", b))
    declared = {"aaa": {**a, "projection": "keys-only"}, "ccc": {"partition": "c:S"}}
    steps = plan(declared, table)
    assert steps == [
        ("create", "ccc", ["aaa", "ccc", "bbb"]),
        ("delete", "aaa", ["ccc", "bbb"]),
        ("create", "aaa", ["aaa", "ccc", "bbb"]),
        ("delete", "bbb", ["aaa", "ccc"]),
    ]


def test_at_the_limit_a_deletion_makes_room_first() -> None:
    a, b = {"partition": "a:S"}, {"partition": "b:S"}
    table = live(definition("aaa", a), definition("bbb", b))
    assert plan({"bbb": b, "ccc": {"partition": "c:S"}}, table, limit=2) == [
        ("delete", "aaa", ["bbb"]),
        ("create", "ccc", ["bbb", "ccc"]),
    ]


def test_an_intermediate_template_keeps_an_index_not_yet_replaced_as_it_was() -> None:
    a = {"partition": "a:S"}
    table = live(definition("aaa", a))
    config = resolve_config(
        context={}, environ={}, indexes={"aaa": {**a, "projection": "keys-only"}, "ccc": {"partition": "c:S"}}
    )
    shape = table_shape(config)
    changes = indexes.index_changes(shape, table)
    first = indexes.gsi_steps(changes, order=[i.name for i in shape.global_indexes])[0]
    assert [(i.name, i.projection) for i in first.after] == [("aaa", "ALL"), ("ccc", "ALL")]


def test_a_verify_nudge_carries_each_key_type() -> None:
    config = resolve_config(context={}, environ={}, indexes={"one": {"partition": "n:N", "sort": "b:B"}})
    nudge = indexes.index_nudge(table_shape(config).indexes[0], "verify-1", "idx0")
    assert set(nudge) == {"n", "b"} and set(nudge["n"]) == {"N"} and nudge["b"] == {"B": b"idx0"}
    assert int(nudge["n"]["N"]) >= 0


# ------------------------------------------------------------------------------------------ plan
def test_plan_counts_each_index_write_and_its_storage() -> None:
    from doctable.plan.cost import Workload, build_plan

    config = resolve_config(
        context={"gsi": "gsi1"},
        environ={},
        indexes={"byDigest": {"partition": "d:B", "projection": "keys-only"}},
    )
    plain = build_plan(Workload(writes_per_second=100, item_kb=3), resolve_config(context={}, environ={}))
    indexed = build_plan(Workload(writes_per_second=100, item_kb=3, stored_items=10**6), config)
    table_writes = plain.monthly_usd["DynamoDB on-demand writes"]
    # gsi1 projects ALL: a 3 KB item is 3 write units in the index too; keys-only: 1
    assert indexed.monthly_usd["index gsi1 writes (3 WRU each)"] == pytest.approx(table_writes)
    assert indexed.monthly_usd["index byDigest writes (1 WRU each)"] == pytest.approx(table_writes / 3)
    assert indexed.monthly_usd["index gsi1 storage"] > indexed.monthly_usd["index byDigest storage"] > 0
    assert not any(k.startswith("index") for k in plain.monthly_usd)


def test_an_index_made_outside_the_stack_is_drift_reconcile_leaves() -> None:
    from doctable.capabilities.table_shape import differences

    config = resolve_config(context={}, environ={}, indexes={"aaa": {"partition": "a:S"}})
    table = live(definition("aaa", {"partition": "a:S"}), definition("zzz", {"partition": "z:S"}))
    found = [(d.prop, d.op) for d in differences(config, table, TTL_OFF, "DISABLED")]
    assert found == [("index:zzz", None)]  # reported, no repair call: reconcile never deletes an index


def test_a_declared_lsi_change_is_a_deploy_change_not_drift() -> None:
    from doctable.capabilities.drift import changed_by_deploy

    deployed = resolve_config(context={}, environ={})
    target = resolve_config(context={}, environ={}, indexes={"byVersion": BY_VERSION})
    # the property preflight compares an LSI's table.replaced finding by: its declaration changes
    assert changed_by_deploy("index:byVersion", deployed, target)
    assert not changed_by_deploy("index:byVersion", target, target)
