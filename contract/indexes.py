"""The table's own secondary indexes, declared per environment in the settings file:

    [environments.stg.indexes.byOwner]
    partition = "owner:S"          # attribute:type, type S | N | B
    sort = "createdAt:N"           # optional
    projection = "all"             # all | keys-only | include
    include = ["summary"]          # with projection = "include"
    max_read = 500                 # optional, as the table's max_read/max_write/warm_read/warm_write knobs

    [environments.stg.indexes.byMatch]
    partition = ["tenant:S", "region:S"]            # a GSI's keys may each be up to four attributes
    sort = ["year:N", "round:S", "seq:N"]           # (multi-attribute keys), each S | N | B, in query order

    [environments.stg.indexes.byVersion]
    kind = "local"                 # an LSI: its partition is the table's pk, it exists only from table creation
    sort = "version:N"

A multi-attribute key follows DynamoDB's rules (developer guide, "Multi-attribute keys pattern",
GSI.DesignPattern.MultiAttributeKeys): a global index's partition and sort keys are each 1 to 4 attributes of type
S, N or B; an attribute appears once in an index's keys and has one type across the table's keys and its indexes;
an item lacking any of an index's key attributes is not in the index; a Query gives every partition attribute with
=, and the sort attributes left to right, = on each but the last, which may take a range, none skipped. A local
index's sort key stays one attribute.

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
# A GSI's partition and sort keys: each up to four attributes (DynamoDB's multi-attribute keys, November 2025).
MAX_KEY_ATTRIBUTES = 4
KEY_ALLOWED = f'"attribute:type" or an array of 1 to {MAX_KEY_ATTRIBUTES} of them, type S|N|B'
Key = tuple[str, str]  # (attribute, type)
# Per-index on-demand caps and warm throughput: the same ranges as the table's knobs.
MAX_THROUGHPUT_RANGE = (1, 40_000)
WARM_RANGES = {"warm_read": (12_000, 40_000), "warm_write": (4_000, 40_000)}
THROUGHPUT_FIELDS = ("max_read", "max_write", "warm_read", "warm_write")
FIELDS = ("kind", "partition", "sort", "projection", "include", *THROUGHPUT_FIELDS)
# The table's own keys (pk, sk: strings), which every index's key types must agree with.
TABLE_KEYS = {names.PARTITION_KEY: "S", names.SORT_KEY: "S"}


@dataclass(frozen=True)
class IndexSpec:
    """One declared index: its keys as (attribute, type), projection and, for a GSI, its throughput.

    ``partition`` and ``sort`` are one (attribute, type), as declared by a string, or a tuple of them, as declared by
    an array of two to four (a GSI's multi-attribute key); ``partition_keys`` and ``sort_keys`` read both as tuples.
    """

    name: str
    kind: str = GLOBAL
    partition: Key | tuple[Key, ...] | None = None  # None for an LSI: the table's pk
    sort: Key | tuple[Key, ...] | None = None
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

    @property
    def partition_keys(self) -> tuple[Key, ...]:
        """The partition key's attributes in order; an LSI's is the table's pk."""
        return _keys(self.partition) or ((names.PARTITION_KEY, TABLE_KEYS[names.PARTITION_KEY]),)

    @property
    def sort_keys(self) -> tuple[Key, ...]:
        """The sort key's attributes in order (none: the index has no sort key)."""
        return _keys(self.sort)

    @property
    def multi_attribute(self) -> bool:
        return len(self.partition_keys) > 1 or len(self.sort_keys) > 1

    def key_attributes(self) -> list[Key]:
        """(attribute, type) of the index's own keys, partition then sort, the table's pk included for an LSI."""
        return [*self.partition_keys, *self.sort_keys]

    def declaration(self) -> dict[str, Any]:
        """The index as the settings file writes it (only what differs from the defaults): parse_index of this
        gives the spec back."""
        out: dict[str, Any] = {}
        if self.kind != GLOBAL:
            out["kind"] = self.kind
        if self.partition:
            out["partition"] = key_text(_keys(self.partition))
        if self.sort:
            out["sort"] = key_text(_keys(self.sort))
        out["projection"] = self.projection
        if self.include:
            out["include"] = list(self.include)
        for name in THROUGHPUT_FIELDS:
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out


def _keys(value: Key | tuple[Key, ...] | None) -> tuple[Key, ...]:
    if not value:
        return ()
    if isinstance(value[0], str):
        return (value,)  # type: ignore[return-value]
    return tuple(value)  # type: ignore[arg-type]


def key_text(keys: tuple[Key, ...]) -> str | list[str]:
    """Key attributes (attribute, type) as a declaration writes them: one as "attr:T", several as an array."""
    texts = [":".join(k) for k in keys]
    return texts[0] if len(texts) == 1 else texts


def _one_key(problems: list[str], where: str, field: str, value: Any) -> Key | None:
    if not isinstance(value, str):
        allowed = '"attribute:type", type S|N|B' if field.endswith("]") else KEY_ALLOWED
        problems.append(f"{where}: {field} = {value!r} is not a string; allowed: {allowed}")
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


def _key(problems: list[str], where: str, field: str, value: Any) -> Key | tuple[Key, ...] | None:
    """A partition or sort declaration: one "attr:T" string, or an array of 1 to 4 (a multi-attribute key; an
    array of one is the same index as its string)."""
    if not isinstance(value, list):
        return _one_key(problems, where, field, value)
    if not value:
        problems.append(f"{where}: {field} = [] names no attribute; allowed: {KEY_ALLOWED}")
        return None
    if len(value) > MAX_KEY_ATTRIBUTES:
        problems.append(
            f"{where}: {field} lists {len(value)} attributes; allowed: at most {MAX_KEY_ATTRIBUTES} "
            "(DynamoDB's multi-attribute keys)"
        )
        return None
    count = len(problems)
    keys = [_one_key(problems, where, f"{field}[{i}]", item) for i, item in enumerate(value)]
    if len(problems) > count:
        return None
    found = tuple(k for k in keys if k is not None)
    seen = [k[0] for k in found]
    twice = sorted({a for a in seen if seen.count(a) > 1})
    if twice:
        problems.append(
            f"{where}: {field} names {', '.join(repr(a) for a in twice)} twice; allowed: each attribute once "
            "in an index's keys"
        )
        return None
    return found[0] if len(found) == 1 else found


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
    if kind == LOCAL and len(_keys(sort)) > 1:
        problems.append(
            f'{where}: a local index\'s sort key is one attribute; allowed: sort = "attribute:type" '
            '(multi-attribute keys are for global indexes: make it kind = "global" with a partition)'
        )
    both = sorted({a for a, _ in _keys(partition)} & {a for a, _ in _keys(sort)})
    if both:
        problems.append(
            f"{where}: {', '.join(repr(a) for a in both)} is both the partition and the sort key; allowed: "
            "each attribute once in an index's keys"
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


# The index fields as docs/knobs.md lists them (contract/iam/reference.py renders them): field, allowed, default, meaning.
REFERENCE = (
    (
        "kind",
        "|".join(KINDS),
        GLOBAL,
        "a global secondary index, or a local one (the table's pk, from creation only)",
    ),
    (
        "partition",
        f'"attribute:type", or an array of 1 to {MAX_KEY_ATTRIBUTES} (a GSI\'s multi-attribute key), '
        f"type {'|'.join(KEY_TYPES)}",
        "required for a GSI",
        'the partition key: e.g. "owner:S", or ["tenant:S", "region:S"] (a query gives each with =)',
    ),
    (
        "sort",
        f'"attribute:type", or an array of 1 to {MAX_KEY_ATTRIBUTES} for a GSI',
        "none (an LSI: required)",
        'the sort key: e.g. "createdAt:N", or ["year:N", "round:S", "seq:N"] (queried left to right, a range on the last)',
    ),
    ("projection", "|".join(PROJECTIONS), "all", "what the index holds besides the keys"),
    (
        "include",
        "an array of attribute names",
        "none",
        'with projection = "include": the attributes it holds',
    ),
    *(
        (
            field,
            f"an integer {WARM_RANGES.get(field, MAX_THROUGHPUT_RANGE)[0]}..{WARM_RANGES.get(field, MAX_THROUGHPUT_RANGE)[1]}",
            "none",
            f"a GSI's {'on-demand cap' if field.startswith('max') else 'warm throughput'} "
            f"({field.split('_')[1]} units per second)",
        )
        for field in THROUGHPUT_FIELDS
    ),
)
RULES = (
    f"at most {MAX_GLOBAL} GSIs (DynamoDB's default quota) and {MAX_LOCAL} LSIs per table; at most {MAX_PROJECTED} "
    "projected attributes summed over every index; an attribute appears once in an index's keys and has one type "
    "across the table's keys and its indexes; an item lacking any of an index's key attributes is not in the index "
    "(DynamoDB developer guide: GSI.DesignPattern.MultiAttributeKeys)"
)
