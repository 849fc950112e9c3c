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
  in place (GSIs through local/services/dynamodb_indexes.py, stream, TTL, PITR, deletion protection, tags)
  instead of losing track of it; a new name, key schema or set of LSIs replaces it; a template's indexes meet
  CreateTable's rules;
- AWS's update constraints: UpdateTimeToLive refuses a second change within an interval
  (``DOCTABLE_LOCAL_TTL_CHANGE_INTERVAL_SECONDS``, default 3600) and a change to what is already set (the
  secondary index constraints are local/services/dynamodb_indexes.py's).
"""

from __future__ import annotations

import contextlib
import copy
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from local import clock
from local.esm import get_manager
from local.patching import Target, replace, truthy
from local.services import dynamodb_index_rules, dynamodb_indexes, dynamodb_options, dynamodb_security

MAX_SHARD_ITERATORS = 20_000
TTL_CHANGE_INTERVAL_ENV = "DOCTABLE_LOCAL_TTL_CHANGE_INTERVAL_SECONDS"
TTL_RATE_LIMITED = "Time to live has been modified multiple times within a fixed interval"
TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}

WRITE_LOCK = threading.RLock()
# Other modules' handlers of a template's table properties: (table, properties), on create and on update.
TEMPLATE_HANDLERS: list[Callable[[Any, dict[str, Any]], None]] = []
# Other modules' listeners of each committed item change of a table with a stream: (table, old item, new item),
# called under WRITE_LOCK (a transaction's when it commits); a write that changes nothing is no change.
CHANGE_LISTENERS: list[Callable[[Any, Any, Any], None]] = []
_TRANSACTION = threading.local()  # .records / .changes: the transaction in progress's, else None
_TTL = threading.local()  # .active: the TTL sweeper is deleting an item
_UPDATE = threading.local()  # .adds: the stream adds of the UpdateItem in progress, else None

_TABLE = "moto.dynamodb.models.table"
_MODELS = "moto.dynamodb.models"
_STREAMS = "moto.dynamodbstreams.models"
MOTO_TARGETS = (
    Target(_TABLE, "StreamShard.add", ("self", "old", "new")),
    Target(
        _TABLE, "StreamRecord.__init__", ("self", "table", "stream_type", "event_name", "old", "new", "seq")
    ),
    Target(_TABLE, "Table.create_from_cloudformation_json"),
    Target(_TABLE, "Table.update_from_cloudformation_json"),
    Target(_TABLE, "Table.set_stream_specification", ("self", "streams")),
    Target(_TABLE, "Table.get_item", ("self", "hash_key", "range_key")),
    Target(_MODELS, "DynamoDBBackend.put_item"),
    Target(_MODELS, "DynamoDBBackend.update_item"),
    Target(_MODELS, "DynamoDBBackend.delete_item"),
    Target(_MODELS, "DynamoDBBackend.transact_write_items", ("self", "transact_items")),
    Target(_MODELS, "DynamoDBBackend.delete_table", ("self", "name")),
    Target(_MODELS, "copy"),
    Target("moto.dynamodb.models.dynamo_type", "Item.__eq__"),
    Target("moto.dynamodb.models.dynamo_type", "DynamoType"),
    Target(_MODELS, "DynamoDBBackend.update_time_to_live", ("self", "table_name", "ttl_spec")),
    Target(
        _MODELS, "DynamoDBBackend.update_continuous_backups", ("self", "table_name", "point_in_time_spec")
    ),
    Target(_MODELS, "DynamoDBBackend.get_table", ("self", "table_name")),
    Target(_MODELS, "dynamodb_backends"),
    Target("moto.dynamodb.exceptions", "MockValidationException"),
    Target("moto.dynamodb.exceptions", "DynamodbException"),
    Target(
        _STREAMS,
        "DynamoDBStreamsBackend.get_shard_iterator",
        ("self", "arn", "shard_id", "shard_iterator_type", "sequence_number"),
    ),
    Target(_STREAMS, "DynamoDBStreamsBackend.get_records", ("self", "iterator_arn", "limit")),
)


@contextlib.contextmanager
def ttl_deletion() -> Iterator[None]:
    """Deletions in this block are the TTL service's (their REMOVE records carry its userIdentity)."""
    _TTL.active = True
    try:
        yield
    finally:
        _TTL.active = False


def in_ttl_deletion() -> bool:
    """Whether this thread is deleting an item for the TTL service."""
    return bool(getattr(_TTL, "active", False))


def apply() -> None:
    _patch_stream_shard()
    _patch_writes()
    _patch_shard_iterators()
    _patch_cloudformation()
    _patch_update_constraints()


def _append_records(records: list[tuple[Any, Any]]) -> None:
    with WRITE_LOCK:
        for shard, record in records:
            seq = len(shard.items) + shard.starting_sequence_number
            record.record["dynamodb"]["SequenceNumber"] = str(seq)
            shard.items.append(record)
    if records:
        with contextlib.suppress(RuntimeError):  # no mapping manager: moto used without the server
            get_manager().wake()


def _notify(changes: list[tuple[Any, Any, Any]]) -> None:
    for table, old, new in changes:
        for listener in list(CHANGE_LISTENERS):
            listener(table, old, new)


def _patch_stream_shard() -> None:
    from moto.dynamodb.models import table as tm

    def add(self: Any, old: Any, new: Any) -> None:
        adds = getattr(_UPDATE, "adds", None)
        if adds is not None:  # inside UpdateItem: only its last add is the change (see update_item)
            adds.append((self, old, new))
            return
        view = (
            self.table.stream_specification.get("StreamViewType") if self.table.stream_specification else None
        )
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

    replace(tm.StreamShard, "add", add)


class _NoTableDeepCopy:
    """``copy`` as moto.dynamodb.models sees it: inside a transaction here, a Table is not deep-copied."""

    def __init__(self, module: Any, table_class: type):
        self._module = module
        self._table_class = table_class

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)

    def deepcopy(self, value: Any, memo: Any = None) -> Any:
        if isinstance(value, self._table_class) and getattr(_TRANSACTION, "records", None) is not None:
            return value  # moto's rollback then puts the same table back: a no-op; ours restores the items
        return self._module.deepcopy(value, memo)


def _patch_writes() -> None:
    from moto.dynamodb import models as dm
    from moto.dynamodb.exceptions import DynamodbException
    from moto.dynamodb.models import table as tm
    from moto.dynamodb.models.dynamo_type import DynamoType

    Backend = dm.DynamoDBBackend

    def serialize(name: str) -> None:
        def locked(self: Any, *args: Any, **kwargs: Any) -> Any:
            with WRITE_LOCK:
                return original(self, *args, **kwargs)

        original = replace(Backend, name, locked)

    for name in ("put_item", "delete_item"):
        serialize(name)

    def update_item(self: Any, *args: Any, **kwargs: Any) -> Any:
        # moto puts a new item's bare key first and then updates it, adding a stream record each time: one
        # UpdateItem is one change (DynamoDB writes one INSERT), so only the last add is recorded.
        with WRITE_LOCK:
            _UPDATE.adds = []
            try:
                result = original_update(self, *args, **kwargs)
                adds = list(_UPDATE.adds)
            finally:
                _UPDATE.adds = None
            if adds:
                shard, old, new = adds[-1]
                shard.add(old, new)
            return result

    original_update = replace(Backend, "update_item", update_item)

    replace(dm, "copy", _NoTableDeepCopy(copy, tm.Table))

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        with WRITE_LOCK:
            before: list[tuple[Any, Any, Any, Any]] = []  # (table, hash, range, item copy or None)
            for entry in transact_items:
                op = next(iter(entry.values()), None) if isinstance(entry, dict) else None
                if not isinstance(op, dict) or op.get("TableName") not in self.tables:
                    continue
                table = self.tables[op["TableName"]]
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
            _TRANSACTION.records = []
            _TRANSACTION.changes = []
            try:
                original_transact(self, transact_items)
            except BaseException:
                for table, hash_key, range_key, item in reversed(before):
                    if range_key is None:
                        table.items.pop(hash_key, None)
                        if item is not None:
                            table.items[hash_key] = item
                    else:
                        table.items[hash_key].pop(range_key, None)
                        if item is not None:
                            table.items[hash_key][range_key] = item
                raise
            else:
                _append_records(_TRANSACTION.records)
                _notify(_TRANSACTION.changes)
            finally:
                _TRANSACTION.records = None
                _TRANSACTION.changes = None

    original_transact = replace(Backend, "transact_write_items", transact_write_items)


def _patch_shard_iterators() -> None:
    from moto.dynamodbstreams import models as dsm

    def _trim(backend: Any) -> None:
        if len(backend.shard_iterators) > MAX_SHARD_ITERATORS:
            for stale in list(backend.shard_iterators)[: MAX_SHARD_ITERATORS // 10]:
                backend.shard_iterators.pop(stale, None)

    def get_shard_iterator(
        self: Any, arn: str, shard_id: str, shard_iterator_type: str, sequence_number: Any = None
    ) -> Any:
        _trim(self)
        return original_get_shard_iterator(self, arn, shard_id, shard_iterator_type, sequence_number)

    original_get_shard_iterator = replace(
        dsm.DynamoDBStreamsBackend, "get_shard_iterator", get_shard_iterator
    )

    def get_records(self: Any, iterator_arn: str, limit: int) -> Any:
        result = original_get_records(self, iterator_arn, limit)
        _trim(self)
        return result

    original_get_records = replace(dsm.DynamoDBStreamsBackend, "get_records", get_records)


_ORIGINAL: dict[str, Callable[..., Any]] = {}


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
    table = _ORIGINAL["create"](cls, name, cloudformation_json, account_id, region_name, **kw)
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


def _patch_cloudformation() -> None:
    from moto.dynamodb.models import table as tm

    _ORIGINAL["create"] = replace(
        tm.Table, "create_from_cloudformation_json", classmethod(create_from_cloudformation_json)
    )
    replace(tm.Table, "update_from_cloudformation_json", classmethod(update_from_cloudformation_json))


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


def _validation(message: str) -> Exception:
    from moto.dynamodb.exceptions import MockValidationException

    return MockValidationException(message)


def _seconds(env: str, default: float) -> float:
    try:
        return float(os.environ.get(env, default))
    except ValueError:
        return default


def update_time_to_live(self: Any, table_name: str, ttl_spec: dict[str, Any]) -> None:
    """DynamoDBBackend.update_time_to_live: a change to what is set is refused, and so is a second change within
    the interval."""
    table = self.get_table(table_name)
    wanted = truthy(ttl_spec.get("Enabled"))
    if wanted == (table.ttl.get("TimeToLiveStatus") == "ENABLED"):
        raise _validation(f"TimeToLive is already {'enabled' if wanted else 'disabled'}")
    changed = getattr(table, clock.TTL_CHANGED_ATTRIBUTE, None)
    if changed is not None and time.monotonic() - changed < _seconds(TTL_CHANGE_INTERVAL_ENV, 3600.0):
        raise _validation(TTL_RATE_LIMITED)
    _ORIGINAL["update_time_to_live"](self, table_name, ttl_spec)
    setattr(table, clock.TTL_CHANGED_ATTRIBUTE, time.monotonic())


def _patch_update_constraints() -> None:
    from moto.dynamodb import models as dm

    _ORIGINAL["update_time_to_live"] = replace(dm.DynamoDBBackend, "update_time_to_live", update_time_to_live)
