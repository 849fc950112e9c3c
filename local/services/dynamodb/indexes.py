"""DynamoDB secondary indexes as AWS runs them, through the API and CloudFormation alike.

- a GSI added to a live table (UpdateTable, or a stack update) is ``CREATING`` with ``Backfilling: true`` for
  ``DOCTABLE_LOCAL_GSI_BACKFILL_SECONDS`` (default 2), then ``ACTIVE``; Query and Scan on it are refused
  meanwhile, with DynamoDB's ValidationException. A deleted GSI is ``DELETING`` (the table ``UPDATING``) for as
  long, then gone, its key attributes pruned from AttributeDefinitions. Indexes made by CreateTable are ACTIVE
  at once. Time comes from ``CLOCK``: status is worked out from it whenever the table is read, so a test can
  install a ``ManualClock`` and move it, and CloudFormation's wait is a ``sleep_until`` on it;
- the refusals DynamoDB makes that moto 5.2.5 does not (index counts, attribute definitions, projections, LSI
  keys, one online index change at a time, unknown and existing index names, index key types on writes), with
  DynamoDB's error codes and messages;
- GSI OnDemandThroughput (moto dropped it) and WarmThroughput (never lowered) per index, created and updated;
- a local secondary index fetches what it does not project from the table (Select ALL_ATTRIBUTES, a
  ProjectionExpression, a FilterExpression), where moto answered with the projected attributes only;
- CloudFormation: one GSI creation or deletion per update, no in-place change of a GSI's keys or projection (the
  handler's InvalidRequest), throughput changes in place, the update waiting until the index is ACTIVE or gone.

Where an operation is owned by another module, this one gives it named steps: DeleteTable's ``refuse_delete``
(tables.py's, which also calls index_rules.py's key-type checks on a put and an update), DescribeTable's
``describe_indexes`` (options.py's), Query's and Scan's ``selecting`` (api/operations.py's).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import Any

from local.patching import Patches, Target
from local.services.dynamodb import index_rules as rules
from local.services.dynamodb.index_lifecycle import (
    ACTIVE,
    CREATING,
    DELETING,
    LOCK,
    begin,
    definitions_in_use,
    in_transition,
    settle,
    transition_of,
    wait_settled,
)
from local.services.dynamodb.index_rules import NO_CAP, TemplateRefusal

_TABLE = "moto.dynamodb.models.table"
_MODELS = "moto.dynamodb.models"
_RESPONSES = "moto.dynamodb.responses"
PATCHES = Patches()


# ------------------------------------------------------------------------------------ applying changes
def set_on_demand(index: Any, wanted: Mapping[str, Any] | None) -> None:
    """A GSI's OnDemandThroughput: a direction >= 1 caps it, -1 lifts its cap; None leaves it."""
    if wanted is None:
        return
    caps = dict(getattr(index, "doctable_on_demand", None) or {})
    for field in ("MaxReadRequestUnits", "MaxWriteRequestUnits"):
        if field in wanted:
            value = int(wanted[field])
            if value == NO_CAP:
                caps.pop(field, None)
            else:
                caps[field] = value
    index.doctable_on_demand = caps or None


def apply_index_update(index: Any, body: Mapping[str, Any]) -> None:
    """An Update action: throughput, on-demand maximum and warm throughput (raised only) of one GSI."""
    if body.get("ProvisionedThroughput"):
        index.throughput = dict(body["ProvisionedThroughput"])
    set_on_demand(index, body.get("OnDemandThroughput"))
    wanted = body.get("WarmThroughput")
    if wanted:
        merged = {k: v for k, v in (index.warm_throughput or {}).items() if k != "Status"}
        merged.update(
            {k: int(v) for k, v in wanted.items() if k in ("ReadUnitsPerSecond", "WriteUnitsPerSecond")}
        )
        index.warm_throughput = {**merged, "Status": ACTIVE}


def apply_index_updates(table: Any, updates: Sequence[Mapping[str, Any]]) -> None:
    """GlobalSecondaryIndexUpdates, checked as a whole, then applied: a Create backfills, a Delete is DELETING."""
    from moto.dynamodb.models.table import GlobalSecondaryIndex

    with LOCK:
        settle(table)
        actions = rules.check_index_updates(table, updates)
        globals_ = {i.name: i for i in table.global_indexes}
        for kind, body in actions:
            name = str(body.get("IndexName"))
            if kind == "Create":
                index = GlobalSecondaryIndex.create(dict(body), table.table_key_attrs)
                begin(index, CREATING, backfilling=True)
                table.global_indexes = [*table.global_indexes, index]
            elif kind == "Delete":
                begin(globals_[name], DELETING)
            else:
                apply_index_update(globals_[name], body)


# ------------------------------------------------------------------------------ local index reads
# What a local index read needs from where moto's call stack cannot pass it: the Query's or Scan's Select (set by
# the owner of the handlers, local/services/dynamodb/api/operations.py, through ``selecting``), and whether the read
# in progress fetches whole items (``read_local`` around moto's Table.query, read by ``project_local``). Owned by
# this module, set only in ``with`` blocks that reset them.
_SELECT: ContextVar[str | None] = ContextVar("doctable_dynamodb_select", default=None)
_FETCH: ContextVar[bool] = ContextVar("doctable_dynamodb_lsi_fetch", default=False)


@contextlib.contextmanager
def selecting(select: str | None) -> Iterator[None]:
    """Query's and Scan's step (api/operations.py): the request's Select, for a local index read in it."""
    token = _SELECT.set(select)
    try:
        yield
    finally:
        _SELECT.reset(token)


def local_index(table: Any, index_name: str | None) -> Any:
    """The table's LSI of that name, None for a GSI or the table itself."""
    return next((i for i in table.indexes if i.name == index_name), None) if index_name else None


def read_local(
    index: Any, projection_expressions: Any, read: Callable[[], tuple[list[Any], int, Any]]
) -> tuple[list[Any], int, Any]:
    """A local index read as DynamoDB does it: what the index does not project is fetched from the table, so
    filters see the whole item; without Select ALL_ATTRIBUTES or a ProjectionExpression, the projection."""
    token = _FETCH.set(True)
    try:
        results, scanned, last = read()
    finally:
        _FETCH.reset(token)
    if _SELECT.get() != "ALL_ATTRIBUTES" and not projection_expressions:
        results = [index.project(r) for r in results]
    return results, scanned, last


# ------------------------------------------------------------------------------------- CloudFormation
def _projection_form(projection: Mapping[str, Any] | None) -> tuple[Any, ...]:
    projection = projection or {}
    return (projection.get("ProjectionType"), tuple(sorted(projection.get("NonKeyAttributes") or [])))


def _structure(index: Mapping[str, Any]) -> tuple[Any, ...]:
    keys = tuple((str(k["AttributeName"]), str(k["KeyType"])) for k in index.get("KeySchema") or [])
    return keys, _projection_form(index.get("Projection"))


def local_indexes_changed(table: Any, properties: Mapping[str, Any]) -> bool:
    """Whether a template's LocalSecondaryIndexes differ from the table's (a replacement: LSIs come only with a
    new table)."""
    wanted = {str(i["IndexName"]): _structure(i) for i in properties.get("LocalSecondaryIndexes") or []}
    have = {i.name: _structure(rules.described(i)) for i in table.indexes}
    return wanted != have


def _template_caps(value: Mapping[str, Any] | None) -> dict[str, int]:
    """A template's OnDemandThroughput states the whole setting: a direction it leaves out has no cap."""
    value = value or {}
    return {f: int(value.get(f, NO_CAP)) for f in ("MaxReadRequestUnits", "MaxWriteRequestUnits")}


def template_update(index: Any, wanted: Mapping[str, Any]) -> dict[str, Any] | None:
    """The in-place changes a template makes to an existing GSI (throughput, on-demand maximum, warm), if any."""
    body: dict[str, Any] = {}
    throughput = wanted.get("ProvisionedThroughput")
    if throughput and {k: int(v) for k, v in throughput.items()} != {
        k: int(v) for k, v in (index.throughput or {}).items() if k in throughput
    }:
        body["ProvisionedThroughput"] = dict(throughput)
    current = getattr(index, "doctable_on_demand", None) or {}
    caps = _template_caps(wanted.get("OnDemandThroughput"))
    if caps != {f: int(current.get(f, NO_CAP)) for f in caps}:
        body["OnDemandThroughput"] = caps
    warm = wanted.get("WarmThroughput")
    if warm and any(int(v) != int((index.warm_throughput or {}).get(k, -1)) for k, v in warm.items()):
        body["WarmThroughput"] = dict(warm)
    return {"Update": {"IndexName": index.name, **body}} if body else None


def update_from_template(backend: Any, table: Any, properties: Mapping[str, Any]) -> None:
    """A template's GSIs applied to the live table as CloudFormation applies them, waiting for the result."""
    settle(table)
    wanted = {str(g["IndexName"]): g for g in properties.get("GlobalSecondaryIndexes") or []}
    have = {i.name: i for i in table.global_indexes}
    for name in sorted(wanted.keys() & have.keys()):
        if _structure(wanted[name]) != _structure(rules.described(have[name])):
            raise TemplateRefusal(rules.CFN_GSI_PROPERTIES)
    changes: list[dict[str, Any]] = [
        {"Delete": {"IndexName": n}} for n in sorted(have.keys() - wanted.keys())
    ]
    changes += [{"Create": wanted[n]} for n in sorted(wanted.keys() - have.keys())]
    if len(changes) > 1:
        raise TemplateRefusal(rules.CFN_GSI_LIMIT)
    updates = [u for n in sorted(wanted.keys() & have.keys()) if (u := template_update(have[n], wanted[n]))]
    creates = [c["Create"] for c in changes if "Create" in c]
    rules.check_create_definitions(table, creates, properties.get("AttributeDefinitions"))
    if changes or updates:
        backend.update_table_global_indexes(table, [*changes, *updates])
    table.attr = definitions_in_use(table, properties.get("AttributeDefinitions"))
    wait_settled(table)


# ------------------------------------------------------------------------------------------ patches
@PATCHES.replace(
    Target(_MODELS, "DynamoDBBackend.update_table_global_indexes", ("self", "table", "global_index_updates"))
)
def update_table_global_indexes(self: Any, table: Any, global_index_updates: list[dict[str, Any]]) -> None:
    """DynamoDBBackend.update_table_global_indexes: ``apply_index_updates`` (moto's created and deleted at once)."""
    apply_index_updates(table, global_index_updates)


@PATCHES.replace(
    Target(_MODELS, "DynamoDBBackend.update_table", ("self", "name", "attr_definitions", "global_index"))
)
def update_table(
    self: Any, name: str, attr_definitions: Any, global_index: Any, *args: Any, **kwargs: Any
) -> Any:
    """DynamoDBBackend.update_table: AttributeDefinitions serve a GSI creation only (moto replaced the table's
    with them); the table keeps the definitions its keys use."""
    table = self.get_table(name)
    if global_index:
        creates = [u["Create"] for u in global_index if isinstance(u, dict) and u.get("Create")]
        rules.check_create_definitions(table, creates, attr_definitions)
    result = PATCHES.original(update_table)(self, name, None, global_index, *args, **kwargs)
    table.attr = definitions_in_use(table, attr_definitions)
    return result


@PATCHES.replace(Target(_MODELS, "DynamoDBBackend.get_schema", ("self", "table_name", "index_name")))
def get_schema(self: Any, table_name: str, index_name: str | None) -> Any:
    """DynamoDBBackend.get_schema (Query's first look at the index): an index the table does not have, or one
    still backfilling, is refused as DynamoDB refuses it."""
    if index_name:
        rules.refuse_backfilling_read(self.get_table(table_name), index_name)
    return PATCHES.original(get_schema)(self, table_name, index_name)


def refuse_delete(table: Any) -> None:
    """DeleteTable's step (tables.py): refused while an index is being created or deleted."""
    if in_transition(table):
        raise rules.in_use(rules.TABLE_INDEXES_BUSY)


def describe_indexes(table: Any, body: dict[str, Any]) -> None:
    """DescribeTable's step (options.py), on moto's description of a table whose index statuses ``settle`` worked
    out from the clock before it: Backfilling, index ARNs, AWS's order, the table UPDATING while a GSI goes."""
    body["AttributeDefinitions"] = sorted(
        body.get("AttributeDefinitions") or [], key=lambda d: d["AttributeName"]
    )
    for key in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes"):
        descriptions = body.get(key) or []
        for description in descriptions:
            description["IndexArn"] = f"{table.table_arn}/index/{description['IndexName']}"
            projection = description.get("Projection") or {}
            if projection.get("NonKeyAttributes"):
                description["Projection"] = {
                    **projection,
                    "NonKeyAttributes": sorted(projection["NonKeyAttributes"]),
                }
        if not descriptions:
            body.pop(key, None)  # DynamoDB leaves out a table's missing kind of index
    if any((t := transition_of(i)) is not None and t.status == DELETING for i in table.global_indexes):
        body["TableStatus"] = "UPDATING"


@PATCHES.replace(
    Target(
        _TABLE,
        "Table.query",
        (
            "self",
            "hash_key",
            "range_comparison",
            "range_objs",
            "limit",
            "exclusive_start_key",
            "scan_index_forward",
            "projection_expressions",
            "index_name",
        ),
    )
)
def query(
    self: Any,
    hash_key: Any,
    range_comparison: Any,
    range_objs: Any,
    limit: Any,
    exclusive_start_key: Any,
    scan_index_forward: Any,
    projection_expressions: Any,
    index_name: str | None = None,
    *args: Any,
    **kwargs: Any,
) -> Any:
    """Table.query: a backfilling GSI is refused; a local index fetches from the table."""
    rules.refuse_backfilling_read(self, index_name)
    read = functools.partial(
        PATCHES.original(query), self, hash_key, range_comparison, range_objs, limit, exclusive_start_key,
        scan_index_forward, projection_expressions, index_name, *args, **kwargs,
    )  # fmt: skip
    local = local_index(self, index_name)
    return read() if local is None else read_local(local, projection_expressions, read)


@PATCHES.replace(
    Target(
        _TABLE,
        "Table.scan",
        ("self", "filters", "limit", "exclusive_start_key", "filter_expression", "index_name"),
    )
)
def scan(
    self: Any,
    filters: Any,
    limit: Any,
    exclusive_start_key: Any,
    filter_expression: Any = None,
    index_name: str | None = None,
    *args: Any,
    **kwargs: Any,
) -> Any:
    """Table.scan: as ``query``."""
    rules.refuse_backfilling_read(self, index_name)
    read = functools.partial(
        PATCHES.original(scan), self, filters, limit, exclusive_start_key, filter_expression, index_name,
        *args, **kwargs,
    )  # fmt: skip
    local = local_index(self, index_name)
    projection = kwargs.get("projection_expression", args[1] if len(args) > 1 else None)
    return read() if local is None else read_local(local, projection, read)


@PATCHES.replace(Target(_TABLE, "Table.has_idx_items", ("self", "index_name")))
def has_idx_items(self: Any, index_name: str) -> list[Any]:
    """The items an index holds: those with every key attribute of the index, of the type AttributeDefinitions give
    it (moto took any type: an item written with a NULL index key made its index's sort fail with HTTP 500)."""
    items = PATCHES.original(has_idx_items)(self, index_name)
    index = self.get_index(index_name)
    types = {str(d["AttributeName"]): str(d["AttributeType"]) for d in self.attr or []}
    keys = [(k["AttributeName"], types.get(k["AttributeName"])) for k in index.schema]
    return [item for item in items if all(item.attrs[name].type == kind for name, kind in keys if kind)]


@PATCHES.replace(Target(_TABLE, "LocalSecondaryIndex.project", ("self", "item")))
def project_local(self: Any, item: Any) -> Any:
    """LocalSecondaryIndex.project: the whole item while a read fetches from the table."""
    from moto.dynamodb.models.table import SecondaryIndex

    if _FETCH.get():
        return item
    # LocalSecondaryIndex inherits project: what it replaced is SecondaryIndex's (PATCHES.original is None).
    return SecondaryIndex.project(self, item)


@PATCHES.replace(Target(_TABLE, "GlobalSecondaryIndex.describe", ("self",)))
def describe_global(self: Any) -> dict[str, Any]:
    """GlobalSecondaryIndex.describe: Backfilling while one added to a live table builds; OnDemandThroughput."""
    result = dict(PATCHES.original(describe_global)(self))
    transition = transition_of(self)
    if transition is not None and transition.backfilling and transition.status == CREATING:
        result["Backfilling"] = True
    caps = getattr(self, "doctable_on_demand", None)
    if caps:
        result["OnDemandThroughput"] = {
            "MaxReadRequestUnits": caps.get("MaxReadRequestUnits", NO_CAP),
            "MaxWriteRequestUnits": caps.get("MaxWriteRequestUnits", NO_CAP),
        }
    return result


@PATCHES.replace(Target(_TABLE, "GlobalSecondaryIndex.create", ("dct", "table_key_attrs")), wrap=staticmethod)
def create_global(dct: dict[str, Any], table_key_attrs: list[str]) -> Any:
    """GlobalSecondaryIndex.create: keeps the index's OnDemandThroughput (moto dropped it)."""
    index = PATCHES.original(create_global)(dct, table_key_attrs)
    index.doctable_on_demand = None
    set_on_demand(index, dct.get("OnDemandThroughput"))
    return index


@PATCHES.replace(
    Target(_RESPONSES, "DynamoHandler._validate_table_creation", ("self", "billing_mode", "throughput"))
)
def validate_table_creation(self: Any, *args: Any, **kwargs: Any) -> None:
    """DynamoHandler._validate_table_creation: duplicated attribute names and the key schemas (the GSIs'
    multi-attribute keys among them) first, moto's checks, then the index rules moto lacks."""
    from moto.dynamodb.exceptions import MockValidationException

    from local.services.dynamodb import tags

    body = self.body
    rules.check_duplicate_definitions(body.get("AttributeDefinitions") or [])
    rules.check_table_key_schema(body.get("KeySchema") or [])
    rules.check_global_key_schemas(body.get("GlobalSecondaryIndexes"))
    refused_tags = tags.create_table_refusal(body)
    if refused_tags is not None:
        raise MockValidationException(refused_tags)
    PATCHES.original(validate_table_creation)(self, *args, **kwargs)
    rules.validate_table_spec(body)


@PATCHES.replace(Target(_RESPONSES, "validate_put_has_gsi_keys_set_to_none", ("item", "table")))
def validate_put_index_keys(item: dict[str, Any], table: Any) -> None:
    """moto.dynamodb.responses.validate_put_has_gsi_keys_set_to_none: any wrong type, with the expected one."""
    rules.check_index_key_types(item, table)


# Every moto internal this module relies on: what it replaces, and what it reads or calls.
MOTO_TARGETS = (
    *PATCHES.targets,
    Target(_MODELS, "DynamoDBBackend.get_table", ("self", "table_name")),
    Target(_TABLE, "SecondaryIndex.project", ("self", "item")),
    Target(_TABLE, "LocalSecondaryIndex"),
    *rules.MOTO_TARGETS,
)
