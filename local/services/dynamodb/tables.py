"""DynamoDB: the one owner of a table's writes, its deletion and its TTL setting.

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
- AWS's update constraints: UpdateTimeToLive refuses a second change within an interval
  (``DOCTABLE_LOCAL_TTL_CHANGE_INTERVAL_SECONDS``, default 3600) and a change to what is already set (the
  secondary index constraints are local/services/dynamodb/indexes.py's).

**One owner, named steps.** Other modules change these operations too: indexes.py refuses a DeleteTable while an
index changes and index_rules.py checks index key types, security.py forgets a deleted table's policy, replicas.py
keeps a recent source replica and shares the TTL setting, kinesis_destination.py forwards every change, the
replication engine sends each change on. None of them replaces a moto internal this
module replaces: each offers plain functions, and the replacement here calls them by name, in the order written
in its body (``delete_table``, ``update_item``, ``table_put_item``, ``table_delete_item``, ``update_time_to_live``;
a template's table is local/services/cloudformation/dynamodb_table.py's, whose ``apply_template`` does the same;
DescribeTable and UpdateTable are options.py's). Chosen over hook lists the modules would fill at install, because then the order would again
be the order of installation (the tuple in local/services/__init__.py) and the links invisible to the floors: here
the order is read in one function and every link is an import.

**State through moto's call stack.** An UpdateItem's stream adds and a transaction's records, changes and Kinesis
forwards are collected while moto runs the operation, in code moto calls (``StreamShard.add``, ``Table.put_item``,
``copy.deepcopy``): they live in ``_UPDATE`` and ``_TRANSACTION``, ``contextvars.ContextVar``s of this module, set
and reset only by ``update_item`` and ``transact_write_items``. Who writes (a client, the TTL service, the
replicator) is writes.py's ``ORIGIN``, passed on explicitly from here.
"""

from __future__ import annotations

import contextlib
import copy
import os
import re
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from local import clock
from local.patching import Patches, Target, truthy
from local.services.dynamodb import index_rules as dynamodb_index_rules
from local.services.dynamodb import indexes as dynamodb_indexes
from local.services.dynamodb import kinesis_destination as dynamodb_kinesis
from local.services.dynamodb import replicas as dynamodb_replicas
from local.services.dynamodb import replication as dynamodb_replication
from local.services.dynamodb import security as dynamodb_security
from local.services.dynamodb import validation
from local.services.dynamodb.writes import ORIGIN, TTL_SERVICE, WRITE_LOCK

TTL_CHANGE_INTERVAL_ENV = "DOCTABLE_LOCAL_TTL_CHANGE_INTERVAL_SECONDS"
TTL_RATE_LIMITED = "Time to live has been modified multiple times within a fixed interval"
TTL_OTHER_ATTRIBUTE = "TimeToLive is active on a different AttributeName: current AttributeName is {name}"
TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}


@dataclass
class _Transaction:
    """What a TransactWriteItems in progress holds back until it commits."""

    records: list[tuple[Any, Any]] = field(default_factory=list)  # (shard, stream record): appended then
    changes: list[tuple[Any, Any, Any]] = field(default_factory=list)  # (table, old, new): sent on then
    forwards: list[Any] = field(default_factory=list)  # Kinesis destination entries: put then


_TRANSACTION: ContextVar[_Transaction | None] = ContextVar("doctable_dynamodb_transaction", default=None)
# The stream adds of the UpdateItem in progress (shard, old, new): only its last is the change.
_UPDATE: ContextVar[list[tuple[Any, Any, Any]] | None] = ContextVar("doctable_dynamodb_update", default=None)

_TABLE = "moto.dynamodb.models.table"
_MODELS = "moto.dynamodb.models"
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
    """Each committed change of a table with a stream, to the replication engine (a global table's replicas)."""
    origin = ORIGIN.get()
    for table, old, new in changes:
        dynamodb_replication.on_change(table, old, new, origin)


def _forward(table: Any, old: Any, new: Any) -> None:
    """A change to the table's Kinesis destination: now, or when the transaction in progress commits."""
    entry = dynamodb_kinesis.entry(table, old, new, ttl=ORIGIN.get() == TTL_SERVICE)
    if entry is None:
        return
    transaction = _TRANSACTION.get()
    if transaction is not None:
        transaction.forwards.append(entry)
    else:
        dynamodb_kinesis.put([entry])


# ------------------------------------------------------------------------------------------- stream shard
@PATCHES.replace(Target(_TABLE, "StreamShard.add", ("self", "old", "new")))
def add(self: Any, old: Any, new: Any) -> None:
    """StreamShard.add: a stream record only for a change, numbered when appended under WRITE_LOCK (a
    transaction's when it commits), in the table's region, a TTL deletion's with the TTL service's identity."""
    from moto.dynamodb.models import table as tm

    adds = _UPDATE.get()
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
    if new is None and ORIGIN.get() == TTL_SERVICE:
        record.record["userIdentity"] = dict(TTL_IDENTITY)
    transaction = _TRANSACTION.get()
    if transaction is not None:  # inside TransactWriteItems: appended when (and if) it commits
        transaction.records.append((self, record))
        transaction.changes.append((self.table, old, new))
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


@PATCHES.replace(Target(_TABLE, "Table.put_item", ("self", "item_attrs")))
def table_put_item(self: Any, item_attrs: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
    """Table.put_item (PutItem, BatchWriteItem, a transaction's put, a replicated write, UpdateItem's put of a new
    item's key), in steps: 1. the index key types checked (index_rules.py); 2. the put, with the item it replaces
    read first when the table forwards to a Kinesis destination; 3. the change forwarded (kinesis_destination.py),
    but inside an UpdateItem, whose one change ``update_item`` forwards."""
    dynamodb_index_rules.check_index_key_types(item_attrs, self)
    put = PATCHES.original(table_put_item)
    if _UPDATE.get() is not None or dynamodb_kinesis.active(self) is None:
        return put(self, item_attrs, *args, **kwargs)
    with WRITE_LOCK:  # the old image and the forwarding order are those of the write itself
        old = dynamodb_kinesis.item_replaced(self, item_attrs)
        new = put(self, item_attrs, *args, **kwargs)
        _forward(self, old, new)
        return new


@PATCHES.replace(Target(_TABLE, "Table.delete_item", ("self", "hash_key", "range_key")))
def table_delete_item(self: Any, hash_key: Any, range_key: Any) -> Any:
    """Table.delete_item (DeleteItem, BatchWriteItem, a transaction's delete, a TTL deletion), under WRITE_LOCK:
    the deletion, then forwarded to the table's Kinesis destination (kinesis_destination.py)."""
    with WRITE_LOCK:
        old = PATCHES.original(table_delete_item)(self, hash_key, range_key)
        if old is not None:
            _forward(self, old, None)
        return old


@PATCHES.replace(Target(_MODELS, "DynamoDBBackend.update_item", ("self", "table_name", "key")))
def update_item(self: Any, table_name: str, key: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
    """UpdateItem under WRITE_LOCK, in steps: 1. the item before it, when the table forwards to a Kinesis
    destination (kinesis_destination.py); 2. moto's update, its stream adds held back (one UpdateItem is one
    change: only the last add is recorded, none when an update that only removes made an item from the bare key,
    taken back), an index key SET to another type refused in DynamoDB's words (index_rules.py); 3. the change
    recorded and forwarded."""
    from moto.dynamodb.exceptions import InvalidAttributeTypeError

    table = self.get_table(table_name)
    forwarding = dynamodb_kinesis.active(table) is not None
    with WRITE_LOCK:
        old = dynamodb_kinesis.item_before(table, key) if forwarding else None
        token = _UPDATE.set([])
        try:
            missing = _removes_only(args, kwargs) and _missing(self, table_name, key)
            try:
                result = PATCHES.original(update_item)(self, table_name, key, *args, **kwargs)
            except InvalidAttributeTypeError as exc:
                better = dynamodb_index_rules.index_type_mismatch(table, exc.message)
                if better is None:
                    raise
                raise better from None
            adds = list(_UPDATE.get() or [])
            if missing and _unmake_bare(table, result):
                adds = []  # the bare item's put and delete were adds of this UpdateItem: none is a change
        finally:
            _UPDATE.reset(token)
        if adds:
            shard, before, after = adds[-1]
            shard.add(before, after)
        if forwarding:
            _forward(table, old, result)
        return result


_CLAUSES = re.compile(r"\b(SET|REMOVE|ADD|DELETE)\b", re.IGNORECASE)


def _removes_only(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether an UpdateItem only removes (an expression of REMOVE clauses, or legacy AttributeUpdates that are all
    DELETE): on an item that does not exist it makes none (AWS). ``args``: those after the table name and key."""
    updates = kwargs.get("attribute_updates")
    if isinstance(updates, dict) and updates:
        return all((u or {}).get("Action") == "DELETE" for u in updates.values())
    expression = kwargs.get("update_expression", args[0] if args else None)
    if not isinstance(expression, str):
        return False
    return {clause.upper() for clause in _CLAUSES.findall(expression)} == {"REMOVE"}


def _missing(backend: Any, table_name: str, key: dict[str, Any]) -> bool:
    """Whether the item an UpdateItem names does not exist (False when that cannot be read: moto decides)."""
    from moto.core.exceptions import JsonRESTError

    try:
        return backend.get_item(table_name, key) is None
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

    if isinstance(value, Table) and _TRANSACTION.get() is not None:
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
    """TransactWriteItems under WRITE_LOCK: snapshots only its items, publishes its stream records and sends its
    changes on when it commits, rolls back those items alone; then its changes are forwarded to the tables'
    Kinesis destinations (none when it fails)."""
    transaction = _Transaction()
    with WRITE_LOCK:
        before = _snapshot(self, transact_items)
        token = _TRANSACTION.set(transaction)
        try:
            PATCHES.original(transact_write_items)(self, transact_items)
        except BaseException:
            _restore(before)
            raise
        else:
            _append_records(transaction.records)
            _notify(transaction.changes)
        finally:
            _TRANSACTION.reset(token)
    dynamodb_kinesis.put(transaction.forwards)


# ------------------------------------------------------------------------------------------------ deletion
@PATCHES.replace(Target(_MODELS, "DynamoDBBackend.delete_table", ("self", "name")))
def delete_table(self: Any, name: str) -> Any:
    """DeleteTable under WRITE_LOCK (no write meanwhile: a replica's last writes are forgotten with it), in steps:
    1. a replica that recently added another is kept (replicas.py); 2. refused while an index is being created or
    deleted (indexes.py); 3. moto's deletion; 4. the table's resource policy goes with it (security.py); 5. a
    replica leaves its global table (replicas.py)."""
    with WRITE_LOCK:
        named = self.tables.get(name)  # the table named by its name (None for an ARN, or a missing table)
        dynamodb_replicas.refuse_delete(self, named)
        # by name or ARN; a missing table is refused here as moto refuses it
        dynamodb_indexes.refuse_delete(self.get_table(name))
        deleted = PATCHES.original(delete_table)(self, name)
        dynamodb_security.forget_policy(self, deleted)
        dynamodb_replicas.leave_on_delete(self, named)
        return deleted


# ------------------------------------------------------------------------------------------ time to live
def _seconds(env: str, default: float) -> float:
    try:
        return float(os.environ.get(env, default))
    except ValueError:
        return default


@PATCHES.replace(Target(_MODELS, "DynamoDBBackend.update_time_to_live", ("self", "table_name", "ttl_spec")))
def update_time_to_live(self: Any, table_name: str, ttl_spec: dict[str, Any]) -> None:
    """DynamoDBBackend.update_time_to_live: a change naming another attribute than the active one, or to what is
    set, is refused, and so is a second change within the interval (the content checks first); then, on a global
    table, the setting is every replica's (replicas.py)."""
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
    dynamodb_replicas.share_ttl(table)


# Every moto internal this module relies on: what it replaces, and what it reads or calls.
MOTO_TARGETS = (
    *PATCHES.targets,
    Target(
        _TABLE, "StreamRecord.__init__", ("self", "table", "stream_type", "event_name", "old", "new", "seq")
    ),
    Target(_TABLE, "Table.get_item", ("self", "hash_key", "range_key")),
    Target("moto.dynamodb.models.dynamo_type", "Item.__eq__"),
    Target("moto.dynamodb.models.dynamo_type", "DynamoType"),
    Target(_MODELS, "DynamoDBBackend.get_table", ("self", "table_name")),
    Target("moto.dynamodb.exceptions", "MockValidationException"),
    Target("moto.dynamodb.exceptions", "DynamodbException"),
    Target("moto.dynamodb.exceptions", "InvalidAttributeTypeError"),
)
