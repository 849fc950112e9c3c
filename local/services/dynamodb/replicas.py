"""DynamoDB global tables (version 2019.11.21): adding and removing replicas, and how the replicas answer.

local/services/dynamodb/replication.py replicates the writes; this module is the API around it:

- UpdateTable ``ReplicaUpdates`` (one Create or one Delete per call): Create makes the table in the other region
  (key schema, attribute definitions, GSIs and LSIs, billing mode, throughput, TTL setting, the stream) and copies
  its items there without stream records; a table without a stream gets NEW_AND_OLD_IMAGES, a disabled one a new
  stream, another view type is kept (AWS needs none of them). Delete deletes that region's replica (items and
  stream). The refusals are DynamoDB's (ValidationException, AWS's words).
- DescribeTable (and the UpdateTable/DeleteTable responses) of a replica: ``GlobalTableVersion`` and ``Replicas``,
  the OTHER regions' replicas ACTIVE, as DynamoDB lists them.
- DeleteTable of a replica that added another one less than 24 hours ago is refused as on AWS; otherwise it
  deletes that region's replica only (the others go on as a global table, or a table of their own).
- A global table's stream cannot be disabled; UpdateTimeToLive on one replica applies to every replica (TTL is a
  group-wide setting), and only the group's first region's TTL sweeper deletes (the deletion replicates).

It replaces no moto internal: UpdateTable's handler and DescribeTable are options.py's, DeleteTable and
UpdateTimeToLive tables.py's; each calls this module's steps (``update_table_replicas``, ``describe_replicas``,
``refuse_delete``/``leave_on_delete``, ``share_ttl``) at its place in the operation.
"""

from __future__ import annotations

import copy
import functools
import time
from typing import Any

from local.patching import Target
from local.services.dynamodb import replication as engine
from local.services.dynamodb import validation
from local.services.dynamodb.writes import WRITE_LOCK

SOURCE_WINDOW_SECONDS = 24 * 3600.0  # a region that added a replica cannot leave within this
LOCAL_REGION = (
    "Cannot add or delete the local region through ReplicaUpdates. Use CreateTable, DeleteTable, or UpdateTable "
    "as required."
)
ALREADY_EXISTS = (
    "Failed to create a the new replica of table with name: \u2018{name}\u2019 because one or more replicas "
    "already existed as tables."
)
NOT_A_REPLICA = (
    "Update global table operation failed because one or more replicas were not part of the global table. Please "
    "retry the request without these replicas: [{regions}]."
)
MIXED_ACTIONS = "Update table operation with more than one type of replica actions not allowed."
SEVERAL_ACTIONS = "Update table operation with more than one create or delete replica actions not allowed"
NO_ACTION = "There are no actions specified in the Replica Update Action of the request."
UNSUPPORTED_REGION = (
    "Region {region} is not supported. The latest version of global tables are only supported in the following "
    "regions: [{regions}]."
)
RECENT_SOURCE = (
    "Replica cannot be deleted because it has acted as a source region for new replica(s) being added to the "
    "table in the last 24 hours."
)
PROTECTED = (
    "Cannot delete table {name} in region {region} because it has deletion protection enabled. Disable deletion "
    "protection first."
)
STREAM_REQUIRED = "Disabling Stream is not allowed for a Global Table replica."
DEFAULT_VIEW = "NEW_AND_OLD_IMAGES"

_MODELS = "moto.dynamodb.models"


@functools.cache
def supported_regions() -> tuple[str, ...]:
    """The regions DynamoDB (and so a replica) exists in, as botocore knows them."""
    import botocore.session

    return tuple(botocore.session.get_session().get_available_regions("dynamodb"))


# ------------------------------------------------------------------------------------------ ReplicaUpdates
def replica_action(table: Any, updates: list[dict[str, Any]]) -> tuple[str, str]:
    """The one ("Create" | "Delete", region) of a ReplicaUpdates list, or AWS's refusal."""
    actions: list[tuple[str, str]] = []
    for update in updates:
        kinds = [k for k in ("Create", "Update", "Delete") if isinstance(update, dict) and update.get(k)]
        if len(kinds) > 1:
            raise validation(MIXED_ACTIONS)
        if not kinds:
            raise validation(NO_ACTION)
        body = update[kinds[0]]
        if kinds[0] == "Update" and not (set(body) - {"RegionName"}):
            raise validation(NO_ACTION)
        actions.append((kinds[0], str(body.get("RegionName") or "")))
    unique = list(dict.fromkeys(actions))  # two identical actions for one region are one
    if len(unique) > 1:
        raise validation(SEVERAL_ACTIONS)
    kind, region = unique[0]
    if region == table.region_name:
        raise validation(LOCAL_REGION)
    regions = supported_regions()
    if region not in regions:
        raise validation(UNSUPPORTED_REGION.format(region=region, regions=", ".join(regions)))
    group = engine.REGISTRY.group_of(table)
    members = group.regions if group is not None else [table.region_name]
    if kind == "Create" and region in members:
        raise validation(ALREADY_EXISTS.format(name=table.name))
    if kind in ("Update", "Delete") and region not in members:
        raise validation(NOT_A_REPLICA.format(regions=region))
    return kind, region


def _index_spec(index: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "IndexName": index.name,
        "KeySchema": index.schema,
        "Projection": index.projection,
    }
    if getattr(index, "throughput", None) and any(index.throughput.values()):
        spec["ProvisionedThroughput"] = {
            k: index.throughput[k]
            for k in ("ReadCapacityUnits", "WriteCapacityUnits")
            if k in index.throughput
        }
    return copy.deepcopy(spec)


def create_replica(table: Any, region: str) -> Any:
    """The table's replica in ``region``: made like the table, holding its items, its stream enabled."""
    from moto.dynamodb.models import dynamodb_backends

    backend = dynamodb_backends[table.account_id][region]
    if table.name in backend.tables:
        raise validation(ALREADY_EXISTS.format(name=table.name))
    view = (table.stream_specification or {}).get("StreamViewType") if table.latest_stream_label else None
    if not (table.stream_specification or {}).get("StreamEnabled"):
        view = None
    if view is None:  # AWS enables the stream a global table needs; another view type is kept
        view = DEFAULT_VIEW
        table.set_stream_specification({"StreamEnabled": True, "StreamViewType": view})
    throughput = {
        k: v for k, v in (table.throughput or {}).items() if k in ("ReadCapacityUnits", "WriteCapacityUnits")
    }
    replica = backend.create_table(
        table.name,
        schema=copy.deepcopy(table.schema),
        throughput=throughput or None,
        attr=copy.deepcopy(table.attr),
        global_indexes=[_index_spec(i) for i in table.global_indexes] or None,
        indexes=[_index_spec(i) for i in table.indexes] or None,
        streams=None,  # enabled after the initial copy, which writes no stream records
        billing_mode=table.billing_mode,
        sse_specification=None,
        tags=[],
        deletion_protection_enabled=False,  # regional, not replicated
        warm_throughput=None,
    )
    engine.copy_items(engine.REGISTRY, table, replica)
    replica.ttl = copy.deepcopy(table.ttl)
    replica.set_stream_specification({"StreamEnabled": True, "StreamViewType": view})
    return replica


def delete_replica(table: Any, region: str) -> None:
    """Delete the replica in ``region`` (its items and stream) and take it out of the global table."""
    from moto.dynamodb.models import dynamodb_backends

    refuse_recent_source(table.account_id, table.name, region)
    replica = dynamodb_backends[table.account_id][region].tables.get(table.name)
    if replica is not None and replica.deletion_protection_enabled:
        raise validation(PROTECTED.format(name=table.name, region=region))
    engine.REGISTRY.leave(table.account_id, table.name, region)
    dynamodb_backends[table.account_id][region].tables.pop(table.name, None)


def refuse_recent_source(account_id: str, name: str, region: str) -> None:
    """AWS refuses to delete a replica that added a replica still in the group less than 24 hours ago."""
    group = engine.REGISTRY.group(account_id, name, region)
    if group is None:
        return
    now = time.monotonic()
    for member, (source, when) in group.sourced.items():
        if source == region and member in group.regions and now - when < SOURCE_WINDOW_SECONDS:
            raise validation(RECENT_SOURCE)


def update_replicas(table: Any, updates: list[dict[str, Any]]) -> None:
    """UpdateTable's ReplicaUpdates on ``table``: checked, then applied under the write lock."""
    with WRITE_LOCK:
        kind, region = replica_action(table, updates)
        if kind == "Create":
            create_replica(table, region)
            engine.REGISTRY.join(table, region)
        elif kind == "Delete":
            delete_replica(table, region)
        # an Update (per-replica overrides) is accepted and changes nothing here


# --------------------------------------------------- the steps of operations other modules own
def update_table_replicas(handler: Any) -> Any:
    """UpdateTable's first step (options.py owns the handler): ReplicaUpdates applied, a global table's stream kept
    enabled; the answer when the request asked for nothing else, else None (the handler goes on)."""
    from moto.dynamodb.responses import DynamoResult

    body = handler.body
    table = handler.dynamodb_backend.get_table(body["TableName"])
    stream = body.get("StreamSpecification")
    if stream is not None and engine.REGISTRY.group_of(table) is not None and not stream.get("StreamEnabled"):
        raise validation(STREAM_REQUIRED)
    updates = body.pop("ReplicaUpdates", None)
    if updates:
        update_replicas(table, list(updates))
        others = set(body) - {"TableName"}
        if not others:
            return DynamoResult(table.describe())
    return None


def refuse_delete(backend: Any, table: Any) -> None:
    """DeleteTable's step (tables.py owns it), before: a replica that recently added another is kept. ``table``: the
    one the request names, None when it names none by its name."""
    if table is not None:
        refuse_recent_source(table.account_id, table.name, backend.region_name)


def leave_on_delete(backend: Any, table: Any) -> None:
    """DeleteTable's step, after: the deleted replica leaves its global table (``table`` as ``refuse_delete``'s)."""
    if table is not None:
        engine.REGISTRY.leave(table.account_id, table.name, backend.region_name)


def describe_replicas(table: Any, result: dict[str, Any], base_key: str) -> None:
    """DescribeTable's step (options.py owns it): a replica shows the global table version and the other regions'
    replicas."""
    group = engine.REGISTRY.group_of(table)
    if group is not None and base_key in result:
        result[base_key]["GlobalTableVersion"] = engine.GLOBAL_TABLE_VERSION
        result[base_key]["Replicas"] = [
            {"RegionName": region, "ReplicaStatus": "ACTIVE"} for region in group.others(table.region_name)
        ]


def share_ttl(table: Any) -> None:
    """UpdateTimeToLive's step (tables.py owns it), after: on a global table the setting is every replica's."""
    from moto.dynamodb.models import dynamodb_backends

    group = engine.REGISTRY.group_of(table)
    for region in group.others(table.region_name) if group is not None else []:
        replica = dynamodb_backends[table.account_id][region].tables.get(table.name)
        if replica is not None:
            replica.ttl = copy.deepcopy(table.ttl)


# Every moto internal this module relies on: what it replaces, and what it reads or calls.
MOTO_TARGETS = (
    Target("moto.dynamodb.responses", "DynamoResult"),
    Target("moto.dynamodb.responses", "DynamoHandler.dynamodb_backend"),
    Target(_MODELS, "DynamoDBBackend.get_table", ("self", "table_name")),
    Target(_MODELS, "DynamoDBBackend.create_table", ("self", "name", "schema", "throughput", "attr")),
    Target(_MODELS, "dynamodb_backends"),
    Target("moto.dynamodb.models.table", "Table.set_stream_specification", ("self", "streams")),
    Target("moto.dynamodb.exceptions", "MockValidationException"),
)
