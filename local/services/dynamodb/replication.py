"""DynamoDB global tables (version 2019.11.21): the replication engine.

A global table is a ``Group``: one table name in one account, with a replica table in each of its regions (the
first region listed is where the table was created). ``REGISTRY`` holds the groups, the time of each item's last
write in each replica, and the replicated writes on their way; local/services/dynamodb/replicas.py adds and
removes replicas (UpdateTable ``ReplicaUpdates``) and answers for them in DescribeTable and DeleteTable.

- Every committed item change of a replica (PutItem, UpdateItem, DeleteItem, BatchWriteItem, a committed
  TransactWriteItems, a TTL deletion) reaches ``on_change``: local/services/dynamodb/tables.py, the owner of
  every write, calls it once the change is committed. It stamps the write (a time strictly later than any earlier write, taken under the write
  lock every region shares) and queues a copy of the item (or its deletion) for every other replica, due after
  the replication delay (``DOCTABLE_LOCAL_REPLICATION_DELAY_MS``, default 500, read once; ``set_delay_ms``).
- ``Replicator`` is one background thread: it sleeps on a condition variable until the next write is due (a new
  write wakes it), then applies the due writes in the order they were made (one target's queue is FIFO, so one
  item's writes land in order).
- Last writer wins: a replicated write older than the target replica's last write of that item is discarded (no
  stream record); an applied one is an ordinary put or delete in the target, whose stream records it as a local
  write would be (INSERT/MODIFY/REMOVE with the images as they are in that replica). A replicated TTL deletion is
  an ordinary REMOVE there, without the TTL service's ``userIdentity``.
- A write applied by the replicator is never sent on (it is made inside ``writes.replicated()``, whose origin
  tables.py passes to ``on_change``): nothing returns to its origin, nothing loops.
"""

from __future__ import annotations

import copy
import heapq
import itertools
import json
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from local import incidents
from local.patching import Target
from local.services.dynamodb.writes import REPLICATOR, WRITE_LOCK, replicated

log = logging.getLogger("doctable.local.dynamodb_replicas")

DELAY_ENV = "DOCTABLE_LOCAL_REPLICATION_DELAY_MS"
DEFAULT_DELAY_MS = 500.0
GLOBAL_TABLE_VERSION = "2019.11.21"


def delay_from_env(environ: dict[str, str] | None = None) -> float:
    """The replication delay in seconds from ``DOCTABLE_LOCAL_REPLICATION_DELAY_MS`` (a number >= 0)."""
    raw = (os.environ if environ is None else environ).get(DELAY_ENV, "")
    try:
        value = float(raw) if raw.strip() else DEFAULT_DELAY_MS
    except ValueError:
        value = -1.0
    if value < 0:
        raise ValueError(f"{DELAY_ENV} must be a number of milliseconds >= 0, not {raw!r}")
    return value / 1000.0


@dataclass
class Group:
    """A global table: its name, account and replica regions (in the order they joined)."""

    account_id: str
    name: str
    regions: list[str]
    # region -> (the region it was added from, when: time.monotonic()), for the 24-hour source rule
    sourced: dict[str, tuple[str, float]] = field(default_factory=dict)

    def others(self, region: str) -> list[str]:
        return [r for r in self.regions if r != region]


@dataclass(order=True)
class Replicated:
    """One write on its way to one replica: the item's attributes as written, or None for a deletion."""

    due: float
    seq: int
    account_id: str = field(compare=False)
    name: str = field(compare=False)
    origin: str = field(compare=False)
    target: str = field(compare=False)
    key: str = field(compare=False)  # the item's key as canonical JSON
    stamp: float = field(compare=False)  # the write's time: last writer wins
    attributes: dict[str, Any] | None = field(compare=False)


class Registry:
    """The global tables of the server, each item's last write per replica and the writes on their way."""

    def __init__(self, delay: float | None = None) -> None:
        self.groups: dict[tuple[str, str], Group] = {}
        self.last_write: dict[tuple[str, str, str, str], float] = {}
        self.delay = delay_from_env() if delay is None else delay
        self.queue: list[Replicated] = []
        self.cond = threading.Condition()
        self._seq = itertools.count()
        self._last_stamp = 0.0
        self._last_due: dict[tuple[str, str, str], float] = {}  # (account, name, target): FIFO per target
        self.replicator: Replicator | None = None

    # ---- groups ----
    def group(self, account_id: str, name: str, region: str) -> Group | None:
        """The global table a region's table of that name belongs to (None: a table of its own)."""
        group = self.groups.get((account_id, name))
        return group if group is not None and region in group.regions else None

    def group_of(self, table: Any) -> Group | None:
        return self.group(table.account_id, table.name, table.region_name)

    def join(self, table: Any, region: str) -> Group:
        """Add ``region`` to the table's group (made with the table's region first when there is none)."""
        group = self.groups.get((table.account_id, table.name))
        if group is None or table.region_name not in group.regions:
            group = Group(table.account_id, table.name, [table.region_name])
            self.groups[(table.account_id, table.name)] = group
        group.regions.append(region)
        group.sourced[region] = (table.region_name, time.monotonic())
        with self.cond:  # writes still on their way to the source go on to the new replica too
            for entry in [
                e for e in self.queue if (e.account_id, e.name, e.target) == (*_id(table), table.region_name)
            ]:
                clone = copy.copy(entry)
                clone.target, clone.seq = region, next(self._seq)
                heapq.heappush(self.queue, clone)
            self.cond.notify_all()
        return group

    def leave(self, account_id: str, name: str, region: str) -> None:
        """Take ``region`` out of its group (its writes on their way are dropped); one region left: no group."""
        group = self.groups.get((account_id, name))
        if group is None or region not in group.regions:
            return
        group.regions.remove(region)
        group.sourced.pop(region, None)
        if len(group.regions) < 2:
            del self.groups[(account_id, name)]
        with self.cond:
            self.queue = [
                e for e in self.queue if (e.account_id, e.name, e.target) != (account_id, name, region)
            ]
            heapq.heapify(self.queue)
        for key in [k for k in self.last_write if k[:3] == (account_id, name, region)]:
            del self.last_write[key]

    # ---- writes ----
    def stamp(self) -> float:
        """A write time strictly later than every earlier one (taken under WRITE_LOCK)."""
        self._last_stamp = max(time.time(), self._last_stamp + 1e-6)
        return self._last_stamp

    def record(self, account_id: str, name: str, region: str, key: str, stamp: float) -> None:
        self.last_write[(account_id, name, region, key)] = stamp

    def last(self, account_id: str, name: str, region: str, key: str) -> float | None:
        return self.last_write.get((account_id, name, region, key))

    def submit(
        self, table: Any, key: str, stamp: float, attributes: dict[str, Any] | None, targets: list[str]
    ) -> None:
        """Queue the write for each target replica, due after the delay, behind that target's earlier writes."""
        now = time.monotonic()
        with self.cond:
            for target in targets:
                lane = (table.account_id, table.name, target)
                due = max(now + self.delay, self._last_due.get(lane, 0.0))
                self._last_due[lane] = due
                heapq.heappush(
                    self.queue,
                    Replicated(
                        due,
                        next(self._seq),
                        table.account_id,
                        table.name,
                        table.region_name,
                        target,
                        key,
                        stamp,
                        copy.deepcopy(attributes),
                    ),  # fmt: skip
                )
            self.cond.notify_all()
        self.ensure_running()

    def take_due(self, timeout: float | None = None) -> list[Replicated]:
        """The writes due now, in order; waits (on the condition, woken by new writes) until one is due."""
        with self.cond:
            deadline = None if timeout is None else time.monotonic() + timeout
            while True:
                now = time.monotonic()
                if self.queue and self.queue[0].due <= now:
                    due = []
                    while self.queue and self.queue[0].due <= now:
                        due.append(heapq.heappop(self.queue))
                    return due
                if self.replicator is not None and self.replicator.stopped:
                    return []
                waits = [
                    t - now for t in (self.queue[0].due if self.queue else None, deadline) if t is not None
                ]
                if deadline is not None and deadline <= now:
                    return []
                self.cond.wait(min(waits) if waits else None)

    def flush(self) -> None:
        """Make every queued write due now, in the order they were made (a test's way to let writes cross)."""
        now = time.monotonic()
        with self.cond:
            for entry in self.queue:
                entry.due = min(entry.due, now)
            heapq.heapify(self.queue)
            self._last_due = {lane: min(due, now) for lane, due in self._last_due.items()}
            self.cond.notify_all()

    def pending(self) -> int:
        with self.cond:
            return len(self.queue)

    # ---- the thread ----
    def ensure_running(self) -> None:
        with self.cond:
            if self.replicator is None or not self.replicator.is_alive():
                self.replicator = Replicator(self)
                self.replicator.start()

    def stop(self) -> None:
        with self.cond:
            replicator = self.replicator
            if replicator is not None:
                replicator.stopped = True
            self.cond.notify_all()
        if replicator is not None and replicator is not threading.current_thread():
            replicator.join(timeout=5)


def _id(table: Any) -> tuple[str, str]:
    return table.account_id, table.name


class Replicator(threading.Thread):
    """Applies the replicated writes as they fall due."""

    def __init__(self, registry: Registry) -> None:
        super().__init__(name="dynamodb-replication", daemon=True)
        self.registry = registry
        self.stopped = False

    def run(self) -> None:
        while not self.stopped:
            for entry in self.registry.take_due():
                try:
                    apply_replicated(self.registry, entry)
                except Exception as exc:  # the replicator lives on; the failure is an incident a test sees
                    incidents.record(f"dynamodb.replicate.{entry.name}.{entry.target}", exc)


# ------------------------------------------------------------------------------------------ the writes
def item_key(table: Any, item: Any) -> str:
    """An item's key as canonical JSON (its identity across replicas)."""
    keys = {table.hash_key_attr: item.hash_key.to_json()}
    if table.range_key_attr is not None and item.range_key is not None:
        keys[table.range_key_attr] = item.range_key.to_json()
    return json.dumps(keys, sort_keys=True)


def on_change(table: Any, old: Any, new: Any, origin: str) -> None:
    """A committed change of a table (made by ``origin``, writes.py's): stamped, and queued for every other replica
    of its global table."""
    if origin == REPLICATOR:
        return  # a replicated write is applied where it is sent, never sent on
    group = REGISTRY.group_of(table)
    if group is None:
        return
    item = new if new is not None else old
    if item is None:
        return
    key = item_key(table, item)
    stamp = REGISTRY.stamp()
    REGISTRY.record(table.account_id, table.name, table.region_name, key, stamp)
    attributes = new.to_json()["Attributes"] if new is not None else None
    REGISTRY.submit(table, key, stamp, attributes, group.others(table.region_name))


def apply_replicated(registry: Registry, entry: Replicated) -> bool:
    """Apply one replicated write to its target replica; False when discarded (an older write, or no replica)."""
    from moto.dynamodb.models import dynamodb_backends
    from moto.dynamodb.models.dynamo_type import DynamoType

    with WRITE_LOCK:
        if registry.group(entry.account_id, entry.name, entry.target) is None:
            return False  # the replica was removed meanwhile
        table = dynamodb_backends[entry.account_id][entry.target].tables.get(entry.name)
        if table is None:
            return False
        last = registry.last(entry.account_id, entry.name, entry.target, entry.key)
        if last is not None and last > entry.stamp:
            return False  # last writer wins: the target has a later write of this item
        registry.record(entry.account_id, entry.name, entry.target, entry.key, entry.stamp)
        with replicated():
            if entry.attributes is not None:
                table.put_item(copy.deepcopy(entry.attributes))
            else:
                keys = json.loads(entry.key)
                hash_key = DynamoType(keys[table.hash_key_attr])
                range_key = DynamoType(keys[table.range_key_attr]) if table.range_key_attr else None
                table.delete_item(hash_key, range_key)
    return True


def copy_items(registry: Registry, source: Any, replica: Any) -> int:
    """The initial sync: every item of ``source`` into the new ``replica`` (before its stream exists: no records),
    with the items' last write times."""
    copied = 0
    for item in list(source.all_items()):
        replica.put_item(copy.deepcopy(item.to_json()["Attributes"]))
        key = item_key(source, item)
        stamp = registry.last(source.account_id, source.name, source.region_name, key)
        if stamp is not None:
            registry.record(replica.account_id, replica.name, replica.region_name, key, stamp)
        copied += 1
    return copied


def expires_here(table: Any) -> bool:
    """Whether the TTL sweeper deletes this table's expired items: a global table's first region does (the
    deletion replicates to the others), any other table its own."""
    group = REGISTRY.group_of(table)
    return group is None or group.regions[0] == table.region_name


# ------------------------------------------------------------------------------------------ the state
REGISTRY = Registry(delay=DEFAULT_DELAY_MS / 1000.0)


def set_delay_ms(milliseconds: float) -> None:
    """The replication delay from now on (the server reads ``DOCTABLE_LOCAL_REPLICATION_DELAY_MS`` at start)."""
    if milliseconds < 0:
        raise ValueError("the replication delay is >= 0 ms")
    REGISTRY.delay = milliseconds / 1000.0


def reset() -> None:
    """Forget every global table and drop the writes on their way (the server's stop, a test's teardown)."""
    global REGISTRY
    REGISTRY.stop()
    delay = REGISTRY.delay
    REGISTRY = Registry(delay=delay)


def start_from_env() -> None:
    """At server start: the delay from the environment (a bad value stops the start, naming the setting)."""
    REGISTRY.delay = delay_from_env()


# Every moto internal this module relies on: it replaces none, it reads or calls these.
MOTO_TARGETS = (
    Target("moto.dynamodb.models", "dynamodb_backends"),
    Target("moto.dynamodb.models.table", "Table.put_item", ("self", "item_attrs")),
    Target("moto.dynamodb.models.table", "Table.delete_item", ("self", "hash_key", "range_key")),
    Target("moto.dynamodb.models.table", "Table.all_items", ("self",)),
    Target("moto.dynamodb.models.dynamo_type", "DynamoType"),
)
