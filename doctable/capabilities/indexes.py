"""A live table's secondary indexes against the declared ones: what differs (added, removed, replaced, throughput
changed, an LSI that needs a new table), and the order in which one CloudFormation update at a time applies the
GSI creations and deletions (CloudFormation takes one per update, DynamoDB one backfill at a time per table)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from contract import names
from contract.indexes import MAX_GLOBAL
from contract.shape import HASH, IndexShape, KeyAttribute, TableShape

CREATE, DELETE = "create", "delete"
# What a change of one declared index is, by how it can be applied.
SAME, IN_PLACE, REPLACED = "same", "in place", "replaced"
UNLIMITED = -1  # OnDemandThroughput's "no cap", as DescribeTable may report it
ACTIVE = "ACTIVE"


def _caps(value: dict[str, Any] | None) -> dict[str, int]:
    return {k: int(v) for k, v in (value or {}).items() if k.startswith("Max") and int(v) != UNLIMITED}


def _warm(value: dict[str, Any] | None) -> dict[str, int]:
    return {k: int(v) for k, v in (value or {}).items() if k.endswith("UnitsPerSecond")}


def live_index(description: dict[str, Any], types: dict[str, str], *, is_global: bool) -> IndexShape:
    """One index of DescribeTable as an IndexShape (the attribute types from the table's AttributeDefinitions)."""
    keys = tuple(
        KeyAttribute(k["AttributeName"], k["KeyType"], types.get(k["AttributeName"], "?"))
        for k in sorted(description.get("KeySchema", []), key=lambda k: k["KeyType"] != HASH)
    )
    projection = description.get("Projection") or {}
    return IndexShape(
        name=description["IndexName"],
        keys=keys,
        projection=projection.get("ProjectionType", "ALL"),
        non_key_attributes=tuple(projection.get("NonKeyAttributes") or ()),
        is_global=is_global,
        on_demand_throughput=_caps(description.get("OnDemandThroughput")) or None,
        warm_throughput=_warm(description.get("WarmThroughput")) or None,
    )


def live_indexes(table: dict[str, Any]) -> dict[str, IndexShape]:
    """Every secondary index of a DescribeTable ``Table``, by name."""
    types = {a["AttributeName"]: a["AttributeType"] for a in table.get("AttributeDefinitions", []) or []}
    found = {
        g["IndexName"]: live_index(g, types, is_global=True)
        for g in table.get("GlobalSecondaryIndexes") or []
    }
    found.update(
        {
            i["IndexName"]: live_index(i, types, is_global=False)
            for i in table.get("LocalSecondaryIndexes") or []
        }
    )
    return found


def index_form(index: IndexShape) -> dict[str, Any]:
    """An index as structured before/after values: kind, keys (attribute: KeyType type), projection."""
    form: dict[str, Any] = {
        "kind": index.kind,
        "keys": {k.name: f"{k.key_type} {k.type}" for k in index.keys},
        "projection": index.projection,
    }
    if index.non_key_attributes:
        form["include"] = sorted(index.non_key_attributes)
    return form


def index_text(index: IndexShape) -> str:
    keys = ", ".join(f"{k.name} {k.key_type} {k.type}" for k in index.keys)
    include = f" ({', '.join(sorted(index.non_key_attributes))})" if index.non_key_attributes else ""
    return f"{index.kind}: {keys}; projection {index.projection}{include}"


def structure(index: IndexShape) -> tuple[Any, ...]:
    """What cannot change in place: kind, keys and their types, projection and its attributes."""
    return (
        index.is_global,
        tuple((k.name, k.key_type, k.type) for k in index.keys),
        index.projection,
        tuple(sorted(index.non_key_attributes)),
    )


def compare(declared: IndexShape, live: IndexShape) -> str:
    """SAME, IN_PLACE (only a GSI's throughput differs) or REPLACED (keys, types or projection differ)."""
    if structure(declared) != structure(live):
        return REPLACED
    caps_differ = _caps(declared.on_demand_throughput) != _caps(live.on_demand_throughput)
    # Warm throughput is compared only where declared: DynamoDB reports a warm value for every index.
    warm = _warm(declared.warm_throughput)
    warm_differs = bool(warm) and any(_warm(live.warm_throughput).get(k) != v for k, v in warm.items())
    return IN_PLACE if caps_differ or warm_differs else SAME


@dataclass(frozen=True)
class IndexChanges:
    """What a deploy changes of the indexes. Names only; the shapes are in the declared and live mappings."""

    declared: dict[str, IndexShape]
    live: dict[str, IndexShape]
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    in_place: list[str] = field(default_factory=list)
    # LSIs added, removed or changed: only a new table has them (a replacement and a data copy)
    local_changed: list[str] = field(default_factory=list)

    @property
    def creations(self) -> int:
        return len(self.added) + len(self.replaced)

    @property
    def deletions(self) -> int:
        return len(self.removed) + len(self.replaced)

    @property
    def updates_needed(self) -> int:
        """The CloudFormation updates the GSI changes take: one creation or deletion each."""
        return self.creations + self.deletions


def index_changes(shape: TableShape, table: dict[str, Any]) -> IndexChanges:
    declared = {i.name: i for i in shape.indexes}
    live = live_indexes(table)
    changes = IndexChanges(declared=declared, live=live)
    for name, index in declared.items():
        have = live.get(name)
        if not index.is_global or (have is not None and not have.is_global):
            if have is None or compare(index, have) == REPLACED:
                changes.local_changed.append(name)
        elif have is None:
            changes.added.append(name)
        else:
            outcome = compare(index, have)
            if outcome == REPLACED:
                changes.replaced.append(name)
            elif outcome == IN_PLACE:
                changes.in_place.append(name)
    for name, have in live.items():
        if name not in declared:
            (changes.removed if have.is_global else changes.local_changed).append(name)
    return changes


@dataclass(frozen=True)
class Step:
    """One CloudFormation update: one GSI created or deleted, and the GSIs the table has after it."""

    action: str  # CREATE | DELETE
    index: str
    after: tuple[IndexShape, ...]  # the table's GSIs once this step is done, in template order


def gsi_steps(changes: IndexChanges, order: list[str], limit: int = MAX_GLOBAL) -> list[Step]:
    """The GSI creations and deletions as successive updates. New indexes are created first (while the table has
    room for them under ``limit``), then each replaced index is deleted and created again, then the removed ones
    go; where the limit leaves no room, a deletion goes first. An index not yet replaced keeps its live
    definition in the intermediate templates; every other declared index has its declared one. ``order``: the
    declared template's GSI order."""
    current: dict[str, IndexShape] = {n: i for n, i in changes.live.items() if i.is_global}
    for name in changes.in_place:
        current[name] = changes.declared[name]  # an in-place change rides the first update
    to_create = [*changes.added]
    to_replace = [*changes.replaced]
    to_remove = [*changes.removed]
    steps: list[Step] = []

    def record(action: str, name: str) -> None:
        ranked = {n: i for i, n in enumerate(order)}
        after = sorted(current.values(), key=lambda i: (ranked.get(i.name, len(ranked)), i.name))
        steps.append(Step(action, name, tuple(after)))

    while to_create or to_replace or to_remove:
        if to_create and len(current) < limit:
            name = to_create.pop(0)
            current[name] = changes.declared[name]
            record(CREATE, name)
        elif to_replace and to_replace[0] in current:
            name = to_replace[0]
            del current[name]
            record(DELETE, name)
        elif to_replace and len(current) < limit:
            name = to_replace.pop(0)
            current[name] = changes.declared[name]
            record(CREATE, name)
        elif to_remove:
            name = to_remove.pop(0)
            del current[name]
            record(DELETE, name)
        else:  # pragma: no cover - the declared set is within the limit, so a deletion always makes room
            raise ValueError("no index step fits under the GSI limit")
    return steps


def index_problems(shape: TableShape, table: dict[str, Any], live_status: Any) -> list[str]:
    """What a verified table's indexes get wrong against the declared shape (``live_status``: a LiveTable, for
    each index's IndexStatus)."""
    changes = index_changes(shape, table)
    problems = [f"{name} missing" for name in changes.added]
    for name in [*changes.replaced, *changes.local_changed]:
        have, want = changes.live.get(name), changes.declared.get(name)
        problems.append(
            f"{name} is {index_text(have) if have else 'absent'}, declared "
            + (index_text(want) if want else "absent")
        )
    for name in changes.in_place:
        problems.append(
            f"{name} throughput {_throughput(changes.live[name])}, declared {_throughput(changes.declared[name])}"
        )
    for name in changes.declared:
        if name in changes.live and live_status.index_status(name) != ACTIVE:
            problems.append(f"{name} {live_status.index_status(name)} (backfill not finished)")
    if changes.removed:
        problems.append(f"unexpected indexes {changes.removed}")
    return problems


def _throughput(index: IndexShape) -> str:
    values = {**(index.on_demand_throughput or {}), **(index.warm_throughput or {})}
    return ", ".join(f"{k} {v}" for k, v in values.items()) or "no cap"


def index_nudge(index: IndexShape, partition: str, sort: str) -> dict[str, Any]:
    """The attributes that put an item in ``index`` (its key attributes besides the table's), as DynamoDB JSON,
    with a partition value unique to ``partition`` (the verify run's own)."""
    digest = hashlib.sha256(f"{partition}/{index.name}".encode()).hexdigest()
    values = {
        HASH: {"S": f"idx-{partition}", "N": str(int(digest[:12], 16)), "B": digest[:16].encode()},
        "RANGE": {"S": sort, "N": "1", "B": sort.encode()},
    }
    return {
        key.name: {key.type: values[key.key_type][key.type]}
        for key in index.keys
        if key.name not in (names.PARTITION_KEY, names.SORT_KEY)
    }


def index_key_condition(index: IndexShape, item: dict[str, Any]) -> dict[str, Any]:
    """Query parameters finding ``item`` (written with the index's keys) in ``index``, as DynamoDB takes them for
    a multi-attribute key: = on every partition attribute, then the sort attributes left to right, = on each but
    the last, a range (BETWEEN the item's own value and itself) on the last. A single-attribute index is queried
    by its partition key alone."""
    conditions, names_, values = [], {}, {}
    for number, key in enumerate(index.partition_keys):
        conditions.append(f"#p{number} = :p{number}")
        names_[f"#p{number}"], values[f":p{number}"] = key.name, item[key.name]
    sort = index.sort_keys if index.multi_attribute else ()
    for number, key in enumerate(sort):
        names_[f"#s{number}"], values[f":s{number}"] = key.name, item[key.name]
        last = number == len(sort) - 1
        conditions.append(
            f"#s{number} BETWEEN :s{number} AND :s{number}" if last else f"#s{number} = :s{number}"
        )
    return {
        "KeyConditionExpression": " AND ".join(conditions),
        "ExpressionAttributeNames": names_,
        "ExpressionAttributeValues": values,
    }
