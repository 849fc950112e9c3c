"""The table's own secondary indexes, declared per environment in the settings file:

    [environments.stg.indexes.byOwner]
    partition = "owner:S"          # attribute:type, type S | N | B
    sort = "createdAt:N"           # optional
    projection = "all"             # all | keys-only | include
    include = ["summary"]          # with projection = "include"
    max_read = 500                 # optional, as the table's max_read/max_write/warm_read/warm_write knobs

    [environments.stg.indexes.byVersion]
    kind = "local"                 # an LSI: its partition is the table's pk, it exists only from table creation
    sort = "version:N"

An environment that declares ``indexes`` declares its whole set; otherwise it takes ``[defaults]``'s. The ``gsi``
knob stays the shorthand for the generic index ``gsi1`` on ``gsi1pk``/``gsi1sk``. Standard library only.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contract import names

GLOBAL, LOCAL = "global", "local"
KINDS = (GLOBAL, LOCAL)
PROJECTION_CFN = {"all": "ALL", "keys-only": "KEYS_ONLY", "include": "INCLUDE"}  # Projection.ProjectionType
PROJECTIONS = tuple(PROJECTION_CFN)
PROJECTION_INCLUDE = "include"
KEY_TYPES = ("S", "N", "B")  # AttributeDefinition.AttributeType
# DynamoDB's quotas: 20 GSIs per table by default (an adjustable quota), 5 LSIs (fixed), 100 projected non-key
# attributes summed over every index of the table (an attribute in two indexes counts twice).
MAX_GLOBAL = 20
MAX_LOCAL = 5
MAX_PROJECTED = 100
NAME_RE = re.compile(r"^[a-zA-Z0-9_.-]{3,255}$")
KEY_RE = re.compile(r"^(?P<name>[^:\s]{1,255}):(?P<type>[^:\s]*)$")
# Per-index on-demand caps and warm throughput: the same ranges as the table's knobs.
MAX_THROUGHPUT_RANGE = (1, 40_000)
WARM_RANGES = {"warm_read": (12_000, 40_000), "warm_write": (4_000, 40_000)}
THROUGHPUT_FIELDS = ("max_read", "max_write", "warm_read", "warm_write")
FIELDS = ("kind", "partition", "sort", "projection", "include", *THROUGHPUT_FIELDS)
# The table's own keys (pk, sk: strings), which every index's key types must agree with.
TABLE_KEYS = {names.PARTITION_KEY: "S", names.SORT_KEY: "S"}


@dataclass(frozen=True)
class IndexSpec:
    """One declared index: its keys as (attribute, type), projection and, for a GSI, its throughput."""

    name: str
    kind: str = GLOBAL
    partition: tuple[str, str] | None = None  # None for an LSI: the table's pk
    sort: tuple[str, str] | None = None
    projection: str = "all"
    include: tuple[str, ...] = ()
    max_read: int | None = None
    max_write: int | None = None
    warm_read: int | None = None
    warm_write: int | None = None

    @property
    def is_global(self) -> bool:
        return self.kind == GLOBAL

    @property
    def projection_cfn(self) -> str:
        return PROJECTION_CFN[self.projection]

    def key_attributes(self) -> list[tuple[str, str]]:
        """(attribute, type) of the index's own keys, the table's pk included for an LSI."""
        partition = self.partition or (names.PARTITION_KEY, TABLE_KEYS[names.PARTITION_KEY])
        return [partition] + ([self.sort] if self.sort else [])

    def declaration(self) -> dict[str, Any]:
        """The index as the settings file writes it (only what differs from the defaults): parse_index of this
        gives the spec back."""
        out: dict[str, Any] = {}
        if self.kind != GLOBAL:
            out["kind"] = self.kind
        if self.partition:
            out["partition"] = ":".join(self.partition)
        if self.sort:
            out["sort"] = ":".join(self.sort)
        out["projection"] = self.projection
        if self.include:
            out["include"] = list(self.include)
        for name in THROUGHPUT_FIELDS:
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out


def _key(problems: list[str], where: str, field: str, value: Any) -> tuple[str, str] | None:
    if not isinstance(value, str):
        problems.append(
            f'{where}: {field} = {value!r} is not a string; allowed: "attribute:type", type S|N|B'
        )
        return None
    match = KEY_RE.match(value.strip())
    if not match:
        problems.append(f'{where}: {field} = {value!r} is not "attribute:type"; allowed: e.g. "owner:S"')
        return None
    if match["type"] not in KEY_TYPES:
        problems.append(
            f"{where}: {field} = {value!r} has type {match['type']!r}; allowed: {'|'.join(KEY_TYPES)} "
            "(string, number, binary)"
        )
        return None
    return match["name"], match["type"]


def _throughput(problems: list[str], where: str, field: str, value: Any) -> int | None:
    low, high = WARM_RANGES.get(field, MAX_THROUGHPUT_RANGE)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        problems.append(f"{where}: {field} = {value!r} is out of range; allowed: an integer {low}..{high}")
        return None
    return value


def parse_index(problems: list[str], where: str, name: str, data: Any) -> IndexSpec | None:
    """One ``[...indexes.<name>]`` table; None (with problems) when it does not describe an index."""
    where = f"{where} index {name!r}".strip()
    count = len(problems)
    if not NAME_RE.match(name):
        problems.append(
            f"{where}: the name is not 3..255 characters of a-z A-Z 0-9 _ . - (DynamoDB's index names)"
        )
    if not isinstance(data, dict):
        problems.append(f"{where}: expected a table of index fields ({', '.join(FIELDS)})")
        return None
    for field in data:
        if field not in FIELDS:
            close = difflib.get_close_matches(field, FIELDS, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            problems.append(f"{where}: {field!r} is not an index field{hint}; allowed: {', '.join(FIELDS)}")
    kind = data.get("kind", GLOBAL)
    if kind not in KINDS:
        problems.append(f"{where}: kind = {kind!r}; allowed: {'|'.join(KINDS)}")
        kind = GLOBAL
    partition = _key(problems, where, "partition", data["partition"]) if "partition" in data else None
    sort = _key(problems, where, "sort", data["sort"]) if "sort" in data else None
    if kind == GLOBAL and "partition" not in data:
        problems.append(f'{where}: a global index needs a partition key; e.g. partition = "owner:S"')
    if kind == LOCAL:
        if "partition" in data:
            problems.append(
                f"{where}: a local index takes the table's partition key ({names.PARTITION_KEY}); "
                'remove partition, or make it kind = "global"'
            )
        if "sort" not in data:
            problems.append(f'{where}: a local index needs a sort key; e.g. sort = "version:N"')
        for field in THROUGHPUT_FIELDS:
            if field in data:
                problems.append(
                    f"{where}: {field} applies to a global index only (an LSI shares the table's)"
                )
    if partition and sort and partition[0] == sort[0]:
        problems.append(
            f"{where}: {partition[0]!r} is both the partition and the sort key; allowed: two attributes"
        )
    projection = data.get("projection", "all")
    if projection not in PROJECTIONS:
        problems.append(f"{where}: projection = {projection!r}; allowed: {'|'.join(PROJECTIONS)}")
        projection = "all"
    include = data.get("include")
    if include is not None and (
        not isinstance(include, list) or not all(isinstance(a, str) and a for a in include)
    ):
        problems.append(f"{where}: include = {include!r}; allowed: an array of attribute names")
        include = None
    if projection == PROJECTION_INCLUDE and not include:
        problems.append(f'{where}: projection = "include" needs include = [attribute names]')
    elif include and projection != PROJECTION_INCLUDE:
        problems.append(
            f'{where}: include is set but projection = {projection!r}; set projection = "include"'
        )
    if include and len(set(include)) != len(include):
        problems.append(f"{where}: include names an attribute twice")
    throughput = {
        field: _throughput(problems, where, field, data[field])
        for field in THROUGHPUT_FIELDS
        if field in data and kind == GLOBAL
    }
    for what in ("read", "write"):
        cap, warm = throughput.get(f"max_{what}"), throughput.get(f"warm_{what}")
        if cap is not None and warm is not None and warm > cap:
            problems.append(f"{where}: warm_{what} = {warm} is above max_{what} = {cap}")
    if len(problems) > count:
        return None
    return IndexSpec(
        name=name,
        kind=kind,
        partition=partition,
        sort=sort,
        projection=projection,
        include=tuple(include or ()),
        **throughput,
    )


def parse_indexes(problems: list[str], where: str, data: Any) -> tuple[IndexSpec, ...]:
    """The ``indexes`` table of one section: index name -> its table."""
    if not isinstance(data, dict):
        problems.append(f"{where}: indexes must be a table of [<section>.indexes.<name>] tables".lstrip(": "))
        return ()
    specs = [parse_index(problems, where, name, table) for name, table in data.items()]
    return tuple(spec for spec in specs if spec is not None)


def check_indexes(
    problems: list[str], specs: tuple[IndexSpec, ...], shorthand: tuple[IndexSpec, ...] = ()
) -> None:
    """The rules across the whole table: the quotas, one name per index, one type per attribute, the
    projected-attribute total. ``shorthand``: the ``gsi`` knob's index, if on."""
    for spec in specs:
        if any(s.name == spec.name for s in shorthand):
            problems.append(
                f"index {spec.name!r} is declared in indexes and by the gsi knob (gsi={spec.name}); "
                "allowed: one of the two (set gsi=none to declare it yourself)"
            )
    # (A name cannot repeat otherwise: TOML refuses a table defined twice.)
    every = (*shorthand, *specs)
    globals_ = [s for s in every if s.is_global]
    locals_ = [s for s in every if not s.is_global]
    if len(globals_) > MAX_GLOBAL:
        problems.append(
            f"{len(globals_)} global secondary indexes declared; allowed: at most {MAX_GLOBAL} per table "
            "(DynamoDB's default quota)"
        )
    if len(locals_) > MAX_LOCAL:
        problems.append(
            f"{len(locals_)} local secondary indexes declared; allowed: at most {MAX_LOCAL} per table (DynamoDB's limit)"
        )
    projected = sum(len(s.include) for s in every)
    if projected > MAX_PROJECTED:
        problems.append(
            f"{projected} projected attributes in include, summed over every index; allowed: at most "
            f"{MAX_PROJECTED} per table (DynamoDB counts an attribute once per index that projects it)"
        )
    types: dict[str, tuple[str, str]] = {attr: (kind, "the table") for attr, kind in TABLE_KEYS.items()}
    for spec in every:
        for attr, kind in spec.key_attributes():
            first = types.setdefault(attr, (kind, f"index {spec.name!r}"))
            if first[0] != kind:
                problems.append(
                    f"attribute {attr!r} is {kind} in index {spec.name!r} but {first[0]} in {first[1]}; "
                    "allowed: one type per attribute across the table and its indexes"
                )


def indexes_record(specs: tuple[IndexSpec, ...]) -> str:
    """The declared indexes as compact JSON (name -> declaration), as the stack records them."""
    return json.dumps({s.name: s.declaration() for s in specs}, sort_keys=True, separators=(",", ":"))


def indexes_from_record(record: str) -> dict[str, Any]:
    """The declarations a stack recorded; ValueError when the text is not that."""
    try:
        data = json.loads(record)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the stack's index record is not JSON: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise ValueError("the stack's index record is not an object of index names to declarations")
    return data


def declarations(specs: tuple[IndexSpec, ...]) -> Mapping[str, dict[str, Any]]:
    return {s.name: s.declaration() for s in specs}
