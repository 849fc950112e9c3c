"""DynamoDB: writes under one lock, transactions that roll back item by item, stream records, CloudFormation.

The server is threaded and moto's DynamoDB is not thread-safe: two concurrent writes got the same stream
SequenceNumber (moto numbered a record by the shard's length, then appended it), a write raced the TTL
sweeper's read-then-delete, and TransactWriteItems deep-copied every table it touched (items and stream:
~0.6 s per transaction at 5,000 records, holding the GIL) and rolled back by putting the copy back, which
dropped the writes other threads made meanwhile and appended stream records nobody should see. So:

- writes are serialized by ``WRITE_LOCK`` (as a single partition serializes writes to an item) and stream
  records are numbered under it (unique, increasing);
- a TransactWriteItems snapshots only its items, publishes its stream records when it commits and rolls back
  those items alone;
- ``StreamShard.add`` only appends the record and wakes the pollers (moto's own delivery empties the shard);
  a write that changes nothing adds no record; an UpdateItem that creates an item adds one INSERT (moto added
  two: the bare key, then the item); a deletion inside ``ttl_deletion()`` carries the TTL
  service's ``userIdentity``;
- shard iterators are trimmed (moto keeps them forever: a reader polling every 100 ms grows the map);
- CloudFormation applies TimeToLiveSpecification and PointInTimeRecoverySpecification, and updates a table
  in place (GSIs through local/services/dynamodb/indexes.py, stream, TTL, PITR, deletion protection, tags)
  instead of losing track of it; a new name, key schema or set of LSIs replaces it; a template's indexes meet
  CreateTable's rules;
- AWS's update constraints: UpdateTimeToLive refuses a second change within an interval
  (``DOCTABLE_LOCAL_TTL_CHANGE_INTERVAL_SECONDS``, default 3600) and a change to what is already set (the
  secondary index constraints are local/services/dynamodb/indexes.py's).
"""

from __future__ import annotations

import contextlib
import copy
import os
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from local import clock
from local.patching import Patches, Target, truthy
from local.services.dynamodb import index_rules as dynamodb_index_rules
from local.services.dynamodb import indexes as dynamodb_indexes
from local.services.dynamodb import options as dynamodb_options
from local.services.dynamodb import security as dynamodb_security
from local.services.dynamodb import validation
from local.services.dynamodb.writes import CHANGE_LISTENERS, TEMPLATE_HANDLERS, WRITE_LOCK, in_ttl_deletion

MAX_SHARD_ITERATORS = 20_000
TTL_CHANGE_INTERVAL_ENV = "DOCTABLE_LOCAL_TTL_CHANGE_INTERVAL_SECONDS"
TTL_RATE_LIMITED = "Time to live has been modified multiple times within a fixed interval"
TTL_OTHER_ATTRIBUTE = "TimeToLive is active on a different AttributeName: current AttributeName is {name}"
TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}

_TRANSACTION = threading.local()  # .records / .changes: the transaction in progress's, else None
_UPDATE = threading.local()  # .adds: the stream adds of the UpdateItem in progress, else None

_TABLE = "moto.dynamodb.models.table"
_MODELS = "moto.dynamodb.models"
_STREAMS = "moto.dynamodbstreams.models"
PATCHES = Patches()


def _wake_pollers() -> None:
    """New stream records: the event-source mapping pollers look now (they exist only in a running server)."""
    from local.pollers.streams import get_manager

    get_manager().wake()


def _append_records(records: list[tuple[Any, Any]]) -> None:
    with WRITE_LOCK:
        for shard, record in records:
            seq = len(shard.items) + shard.starting_sequence_number
            record.record["dynamodb"]["SequenceNumber"] = str(seq)
            shard.items.append(record)
    if records:
        with contextlib.suppress(RuntimeError):  # no mapping manager: moto used without the server
            _wake_pollers()


def _notify(changes: list[tuple[Any, Any, Any]]) -> None:
    for table, old, new in changes:
        for listener in list(CHANGE_LISTENERS):
            listener(table, old, new)


# ------------------------------------------------------------------------------------------- stream shard
@PATCHES.replace(Target(_TABLE, "StreamShard.add", ("self", "old", "new")))
def add(self: Any, old: Any, new: Any) -> None:
    """StreamShard.add: a stream record only for a change, numbered when appended under WRITE_LOCK (a
    transaction's when it commits), in the table's region, a TTL deletion's with the TTL service's identity."""
    from moto.dynamodb.models import table as tm

    adds = getattr(_UPDATE, "adds", None)
    if adds is not None:  # inside UpdateItem: only its last add is the change (see update_item)
        adds.append((self, old, new))
        return
    view = self.table.stream_specification.get("StreamViewType") if self.table.stream_specification else None
    if not view:
        return  # the stream is disabled: nothing is recorded
    if old is not None and new is not None and old == new:
        return  # DynamoDB writes no stream record for a write that changes nothing
    event_name = "INSERT" if old is None else "REMOVE" if new is None else "MODIFY"
    record = tm.StreamRecord(self.table, view, event_name, old, new, 0)  # numbered when appended
    record.record["awsRegion"] = self.table.region_name  # moto wrote us-east-1 whatever the region
    if new is None and in_ttl_deletion():
        record.record["userIdentity"] = dict(TTL_IDENTITY)
    pending = getattr(_TRANSACTION, "records", None)
    if pending is not None:  # inside TransactWriteItems: appended when (and if) it commits
        pending.append((self, record))
        _TRANSACTION.changes.append((self.table, old, new))
        return
    _append_records([(self, record)])
    _notify([(self.table, old, new)])


# ------------------------------------------------------------------------------------------------ writes
@PATCHES.replace(Target(_MODELS, "DynamoDBBackend.put_item"))
def put_item(self: Any, *args: Any, **kwargs: Any) -> Any:
    """PutItem under WRITE_LOCK (as a single partition serializes writes to an item)."""
    with WRITE_LOCK:
        return PATCHES.original(put_item)(self, *args, **kwargs)


@PATCHES.replace(Target(_MODELS, "DynamoDBBackend.delete_item"))
def delete_item(self: Any, *args: Any, **kwargs: Any) -> Any:
    """DeleteItem under WRITE_LOCK."""
    with WRITE_LOCK:
        return PATCHES.original(delete_item)(self, *args, **kwargs)


@PATCHES.replace(Target(_MODELS, "DynamoDBBackend.update_item"))
def update_item(self: Any, *args: Any, **kwargs: Any) -> Any:
    """UpdateItem under WRITE_LOCK, one stream record for one UpdateItem (an item it creates is one INSERT)."""
    # moto puts a new item's bare key first and then updates it, adding a stream record each time: one
    # UpdateItem is one change (DynamoDB writes one INSERT), so only the last add is recorded.
    with WRITE_LOCK:
        _UPDATE.adds = []
        try:
            missing = _removes_only(args, kwargs) and _missing(self, args, kwargs)
            result = PATCHES.original(update_item)(self, *args, **kwargs)
            adds = list(_UPDATE.adds)
            if missing and _unmake_bare(self.get_table(kwargs.get("table_name", args[0])), result):
                adds = []  # the bare item's put and delete were adds of this UpdateItem: none is a change
        finally:
            _UPDATE.adds = None
        if adds:
            shard, old, new = adds[-1]
            shard.add(old, new)
        return result


_CLAUSES = re.compile(r"\b(SET|REMOVE|ADD|DELETE)\b", re.IGNORECASE)


def _removes_only(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether an UpdateItem only removes (an expression of REMOVE clauses, or legacy AttributeUpdates that are all
    DELETE): on an item that does not exist it makes none (AWS)."""
    updates = kwargs.get("attribute_updates")
    if isinstance(updates, dict) and updates:
        return all((u or {}).get("Action") == "DELETE" for u in updates.values())
    expression = kwargs.get("update_expression", args[2] if len(args) > 2 else None)
    if not isinstance(expression, str):
        return False
    return {clause.upper() for clause in _CLAUSES.findall(expression)} == {"REMOVE"}


def _missing(backend: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether the item an UpdateItem names does not exist (False when that cannot be read: moto decides)."""
    from moto.core.exceptions import JsonRESTError

    try:
        return backend.get_item(kwargs.get("table_name", args[0]), kwargs.get("key", args[1])) is None
    except JsonRESTError:  # a key moto refuses is refused by the update itself, with moto's refusal
        return False


def _unmake_bare(table: Any, item: Any) -> bool:
    """Take back the item an UpdateItem that only REMOVEs made from its bare key (AWS makes none): True if taken."""
    keys = {table.hash_key_attr, table.range_key_attr} - {None}
    if item is None or not set(item.attrs) <= keys:
        return False
    table.delete_item(item.hash_key, item.range_key)
    return True


class _NoTableDeepCopy:
    """``copy`` as moto.dynamodb.models sees it: the module, its ``deepcopy`` the one given (``deepcopy`` below)."""

    def __init__(self, deepcopy: Callable[..., Any]) -> None:
        self.deepcopy = deepcopy

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)


@PATCHES.replace(Target(_MODELS, "copy"), wrap=_NoTableDeepCopy)
def deepcopy(value: Any, memo: Any = None) -> Any:
    """``copy.deepcopy`` as moto.dynamodb.models calls it: inside a transaction here, a Table is not deep-copied
    (moto copied every table a TransactWriteItems touched, items and stream)."""
    from moto.dynamodb.models.table import Table

    if isinstance(value, Table) and getattr(_TRANSACTION, "records", None) is not None:
        return value  # moto's rollback then puts the same table back: a no-op; ours restores the items
    return copy.deepcopy(value, memo)


def _snapshot(backend: Any, transact_items: list[dict[str, Any]]) -> list[tuple[Any, Any, Any, Any]]:
    """(table, hash, range, item copy or None) of each item a TransactWriteItems names, before it runs."""
    from moto.dynamodb.exceptions import DynamodbException
    from moto.dynamodb.models.dynamo_type import DynamoType

    before: list[tuple[Any, Any, Any, Any]] = []
    for entry in transact_items:
        op = next(iter(entry.values()), None) if isinstance(entry, dict) else None
        if not isinstance(op, dict) or op.get("TableName") not in backend.tables:
            continue
        table = backend.tables[op["TableName"]]
        key = op.get("Key") or {
            a: op.get("Item", {}).get(a) for a in (table.hash_key_attr, table.range_key_attr) if a
        }
        try:
            hash_key = DynamoType(key[table.hash_key_attr])
            range_key = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
            current = table.get_item(hash_key, range_key)
        except (KeyError, TypeError, ValueError, DynamodbException):
            continue  # a malformed key: moto rejects the transaction before writing anything
        before.append((table, hash_key, range_key, copy.deepcopy(current)))
    return before


def _restore(before: list[tuple[Any, Any, Any, Any]]) -> None:
    """Put back the items a failed TransactWriteItems touched, as ``_snapshot`` found them."""
    for table, hash_key, range_key, item in reversed(before):
        if range_key is None:
            table.items.pop(hash_key, None)
            if item is not None:
                table.items[hash_key] = item
        else:
            table.items[hash_key].pop(range_key, None)
            if item is not None:
                table.items[hash_key][range_key] = item


@PATCHES.replace(Target(_MODELS, "DynamoDBBackend.transact_write_items", ("self", "transact_items")))
def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
    """TransactWriteItems under WRITE_LOCK: snapshots only its items, publishes its stream records when it
    commits and rolls back those items alone."""
    with WRITE_LOCK:
        before = _snapshot(self, transact_items)
        _TRANSACTION.records = []
        _TRANSACTION.changes = []
        try:
            PATCHES.original(transact_write_items)(self, transact_items)
        except BaseException:
            _restore(before)
            raise
        else:
            _append_records(_TRANSACTION.records)
            _notify(_TRANSACTION.changes)
        finally:
            _TRANSACTION.records = None
            _TRANSACTION.changes = None


# ------------------------------------------------------------------------------------------ shard iterators
def _trim(backend: Any) -> None:
    """Drop the oldest tenth of the shard iterators once there are more than MAX_SHARD_ITERATORS."""
    if len(backend.shard_iterators) > MAX_SHARD_ITERATORS:
        for stale in list(backend.shard_iterators)[: MAX_SHARD_ITERATORS // 10]:
            backend.shard_iterators.pop(stale, None)


@PATCHES.replace(
    Target(
        _STREAMS,
        "DynamoDBStreamsBackend.get_shard_iterator",
        ("self", "arn", "shard_id", "shard_iterator_type", "sequence_number"),
    )
)
def get_shard_iterator(
    self: Any, arn: str, shard_id: str, shard_iterator_type: str, sequence_number: Any = None
) -> Any:
    """GetShardIterator: the oldest iterators are trimmed first (moto keeps them forever)."""
    _trim(self)
    return PATCHES.original(get_shard_iterator)(self, arn, shard_id, shard_iterator_type, sequence_number)


@PATCHES.replace(Target(_STREAMS, "DynamoDBStreamsBackend.get_records", ("self", "iterator_arn", "limit")))
def get_records(self: Any, iterator_arn: str, limit: int) -> Any:
    """GetRecords: then the oldest iterators are trimmed (a reader polling every 100 ms grows the map)."""
    result = PATCHES.original(get_records)(self, iterator_arn, limit)
    _trim(self)
    return result


# ------------------------------------------------------------------------------------------- CloudFormation
@PATCHES.replace(Target(_TABLE, "Table.create_from_cloudformation_json"), wrap=classmethod)
def create_from_cloudformation_json(
    cls: Any,
    resource_name: str,
    cloudformation_json: dict[str, Any],
    account_id: str,
    region_name: str,
    **kw: Any,
) -> Any:
    """Table.create_from_cloudformation_json: the template's TableName, CreateTable's index rules (moto's path
    skipped them) and the properties moto ignores."""
    properties = cloudformation_json["Properties"]
    name = properties.get("TableName", resource_name)
    # The index rules, not the exact attribute set: CloudFormation refuses an unused definition ("Property
    # AttributeDefinitions is inconsistent with the KeySchema ..."), which templates here still rely on.
    dynamodb_index_rules.validate_table_spec(properties)
    original = PATCHES.original(create_from_cloudformation_json)
    table = original(cls, name, cloudformation_json, account_id, region_name, **kw)
    _apply_table_extras(table, properties, account_id, region_name, creating=True)
    return table


def replaces_table(table: Any, properties: dict[str, Any]) -> bool:
    """Whether a template's table properties need a new table: another name, key schema or set of LSIs."""
    new_name = properties.get("TableName")
    return bool(
        (new_name and new_name != table.name)
        or properties.get("KeySchema", table.schema) != table.schema
        or dynamodb_indexes.local_indexes_changed(table, properties)
    )


@PATCHES.replace(Target(_TABLE, "Table.update_from_cloudformation_json"), wrap=classmethod)
def update_from_cloudformation_json(
    cls: Any, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
    account_id: str, region_name: str,
) -> Any:  # fmt: skip
    """Table.update_from_cloudformation_json: in place (GSIs, stream, TTL, PITR, throughput, tags...) unless the
    change needs a new table."""
    from moto.dynamodb.models import dynamodb_backends

    properties = cloudformation_json["Properties"]
    backend = dynamodb_backends[account_id][region_name]
    table = original_resource
    if replaces_table(table, properties):
        # Replacement, as on AWS (the old table's data does not move).
        new = cls.create_from_cloudformation_json(
            new_resource_name, cloudformation_json, account_id, region_name
        )
        backend.delete_table(table.name)
        return new
    dynamodb_indexes.update_from_template(backend, table, properties)
    stream = properties.get("StreamSpecification")
    current = table.stream_specification or {}
    if stream and stream.get("StreamViewType") != current.get("StreamViewType"):
        table.set_stream_specification({"StreamEnabled": True, "StreamViewType": stream["StreamViewType"]})
    elif not stream and current.get("StreamEnabled"):
        table.stream_specification = {"StreamEnabled": False}
        table.latest_stream_label = None
        table.stream_shard = None
    table.billing_mode = (
        "PAY_PER_REQUEST" if properties.get("BillingMode") == "PAY_PER_REQUEST" else "PROVISIONED"
    )
    if properties.get("ProvisionedThroughput"):
        table.throughput = dict(properties["ProvisionedThroughput"], NumberOfDecreasesToday=0)
    table.deletion_protection_enabled = truthy(properties.get("DeletionProtectionEnabled", False))
    table.tags = list(properties.get("Tags") or [])
    if "SSESpecification" in properties:
        table.sse_specification = properties["SSESpecification"]
    _apply_table_extras(table, properties, account_id, region_name, creating=False)
    return table


def _apply_table_extras(
    table: Any, properties: dict[str, Any], account_id: str, region: str, creating: bool
) -> None:
    from moto.dynamodb.models import dynamodb_backends

    backend = dynamodb_backends[account_id][region]
    ttl = properties.get("TimeToLiveSpecification") or {}
    wanted = truthy(ttl.get("Enabled"))
    if wanted != (table.ttl.get("TimeToLiveStatus") == "ENABLED"):  # CloudFormation calls it on a change only
        attribute = ttl.get("AttributeName") or table.ttl.get("AttributeName", "")
        backend.update_time_to_live(table.name, {"Enabled": wanted, "AttributeName": attribute})
    pitr = properties.get("PointInTimeRecoverySpecification") or {}
    enabled = truthy(pitr.get("PointInTimeRecoveryEnabled"))
    spec: dict[str, Any] = {"PointInTimeRecoveryEnabled": enabled}
    if enabled:  # a template without a period gets AWS's default, also when it drops one it had
        spec["RecoveryPeriodInDays"] = dynamodb_options.pitr_period(pitr)
    if enabled or not creating:
        backend.update_continuous_backups(table.name, spec)
    dynamodb_options.apply_template(table, properties, creating=creating)
    dynamodb_security.apply_template(table, properties)
    for handler in TEMPLATE_HANDLERS:
        handler(table, properties)


def _seconds(env: str, default: float) -> float:
    try:
        return float(os.environ.get(env, default))
    except ValueError:
        return default


@PATCHES.replace(Target(_MODELS, "DynamoDBBackend.update_time_to_live", ("self", "table_name", "ttl_spec")))
def update_time_to_live(self: Any, table_name: str, ttl_spec: dict[str, Any]) -> None:
    """DynamoDBBackend.update_time_to_live: a change naming another attribute than the active one, or to what is
    set, is refused, and so is a second change within the interval (the content checks first)."""
    table = self.get_table(table_name)
    wanted = truthy(ttl_spec.get("Enabled"))
    current = table.ttl.get("AttributeName")
    if table.ttl.get("TimeToLiveStatus") == "ENABLED" and ttl_spec.get("AttributeName") != current:
        raise validation(TTL_OTHER_ATTRIBUTE.format(name=current))
    if wanted == (table.ttl.get("TimeToLiveStatus") == "ENABLED"):
        raise validation(f"TimeToLive is already {'enabled' if wanted else 'disabled'}")
    changed = getattr(table, clock.TTL_CHANGED_ATTRIBUTE, None)
    if changed is not None and time.monotonic() - changed < _seconds(TTL_CHANGE_INTERVAL_ENV, 3600.0):
        raise validation(TTL_RATE_LIMITED)
    PATCHES.original(update_time_to_live)(self, table_name, ttl_spec)
    setattr(table, clock.TTL_CHANGED_ATTRIBUTE, time.monotonic())


# Every moto internal this module relies on: what it replaces, and what it reads or calls.
MOTO_TARGETS = (
    *PATCHES.targets,
    Target(
        _TABLE, "StreamRecord.__init__", ("self", "table", "stream_type", "event_name", "old", "new", "seq")
    ),
    Target(_TABLE, "Table.set_stream_specification", ("self", "streams")),
    Target(_TABLE, "Table.get_item", ("self", "hash_key", "range_key")),
    Target(_MODELS, "DynamoDBBackend.delete_table", ("self", "name")),
    Target("moto.dynamodb.models.dynamo_type", "Item.__eq__"),
    Target("moto.dynamodb.models.dynamo_type", "DynamoType"),
    Target(
        _MODELS, "DynamoDBBackend.update_continuous_backups", ("self", "table_name", "point_in_time_spec")
    ),
    Target(_MODELS, "DynamoDBBackend.get_table", ("self", "table_name")),
    Target(_MODELS, "dynamodb_backends"),
    Target("moto.dynamodb.exceptions", "MockValidationException"),
    Target("moto.dynamodb.exceptions", "DynamodbException"),
)
