"""The shared soak driver: a write workload with blobs under injected faults, then the promise checked.

The promise: every deleted record's blobs are eventually deleted, no blob of a live record is ever deleted, and a
record that cannot be processed is kept on the failure destination, where an operator can see and replay it.

``run_soak`` writes to one stack deployed with ``SOAK_KNOBS`` (ttl on, ``max_retries=3``, ``batch_size=25``)
from several threads, each owning its own items (sort keys ``t<thread>-<n>``) spread over several partition
keys: inserts with 1-3 blobs, updates that add or drop blobs (PutItem and UpdateItem), deletes, TTL-shaped
deletes (``expiresAt`` in the past: the local TTL sweeper removes them as the TTL service), BatchWriteItem and
TransactWriteItems. Blob keys are never reused: each blob is uploaded (``<pk>/<sk>/<uuid>.bin``) before the
write that lists it (the consumer protects a key listed again only within one batch, so a workload that reuses
a dropped key across batches can lose it: outside the promise this soak checks). Two kinds of records cannot
be processed:

- poison: an item whose ``blobs`` is a number; its INSERT and REMOVE are malformed for good;
- fixable: an item under ``<run>-fixable`` whose blob deletes fail by a fault rule ("the cause") that is
  switched off before replay.

Then: wait until the mapping has delivered everything, read the figures, switch the faults off, run
``doctable.operate.replay.run_replay``, and check (a) no blob of a deleted record (or dropped by an update) is
left, (b) every blob a live item lists is present, (c) exactly the poison records stay on the failure
destination, with their payload, (d) the ``stream_records_received`` lines cover every stream record (read
with GetRecords from TRIM_HORIZON), which matches the writes made, re-deliveries counted apart.
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from doctable.operate.replay import run_replay
from local.api import FaultClient
from tests.support import localaws as lt

SOAK_KNOBS = {
    "env": "dev",
    "table_base": "itsoak",
    "stream": "new-and-old",
    "ttl": "on",
    "max_retries": "3",
    "batch_size": "25",
}
PARTITIONS = 6
_STACKS: dict[str, lt.Deployed] = {}
_STACK_LOCK = threading.Lock()


def soak_stack(aws: lt.LocalAWS, deploy: Callable[..., lt.Deployed]) -> lt.Deployed:
    """The soak stack, deployed once per local AWS (test_faults.py and test_soak.py share it)."""
    with _STACK_LOCK:
        if aws.info.url not in _STACKS:
            _STACKS[aws.info.url] = deploy(SOAK_KNOBS)
        return _STACKS[aws.info.url]


def fault_rules(stack: lt.Deployed, run: str, transient: bool = True) -> list[dict[str, Any]]:
    """The soak's faults: transient ones at rates the retries absorb, plus the fixable cause."""
    out = stack.outputs
    bucket, function = out["BlobBucketName"], out["ConsumerFunctionName"]
    rules: list[dict[str, Any]] = [
        # The cause of the fixable records: switched off before replay.
        {"id": "fixable-cause", "on": "s3:DeleteObjects", "action": "key-errors", "bucket": bucket,
         "match": f"{run}-fixable/*", "keys": "all", "code": "AccessDenied"},
    ]  # fmt: skip
    if transient:
        # Each kind once for sure (rate 1, limit 1: the first request or invocation it applies to), then at
        # random. A kill that comes after the invocation returned does not count: the next one gets it.
        rules += [
            {"id": "s3-slowdown-once", "on": "s3:DeleteObjects", "action": "slowdown", "bucket": bucket,
             "limit": 1},
            {"id": "s3-500-after-once", "on": "s3:DeleteObjects", "action": "internal-error", "bucket": bucket,
             "phase": "after", "limit": 1},
            {"id": "s3-key-errors-once", "on": "s3:DeleteObjects", "action": "key-errors", "bucket": bucket,
             "limit": 1},
            {"id": "lambda-crash-once", "on": "lambda:Invoke", "action": "crash", "function": function,
             "after_ms": [0, 120], "limit": 1},
            {"id": "lambda-timeout-once", "on": "lambda:Invoke", "action": "timeout", "function": function,
             "after_ms": [0, 120], "limit": 1},
            {"id": "esm-duplicate-once", "on": "esm:Deliver", "action": "duplicate",
             "mapping": out["EventSourceMappingUuid"], "limit": 1},
        ]  # fmt: skip
        rules += [
            # Retried by the SDK (standard mode, 5 attempts): rarely seen by the consumer.
            {"id": "s3-slowdown", "on": "s3:DeleteObjects", "action": "slowdown", "rate": 0.15,
             "bucket": bucket},
            # The keys are deleted, then the answer is lost: the SDK's retry finds them gone.
            {"id": "s3-500-after", "on": "s3:DeleteObjects", "action": "internal-error", "rate": 0.05,
             "bucket": bucket, "phase": "after"},
            # Per-key errors in a 200: only the owning record fails; the mapping retries from it.
            {"id": "s3-key-errors", "on": "s3:DeleteObjects", "action": "key-errors", "rate": 0.06,
             "bucket": bucket, "keys": 1},
            {"id": "lambda-crash", "on": "lambda:Invoke", "action": "crash", "rate": 0.03,
             "function": function, "after_ms": [0, 120]},
            {"id": "lambda-timeout", "on": "lambda:Invoke", "action": "timeout", "rate": 0.02,
             "function": function, "after_ms": [0, 120]},
            {"id": "esm-duplicate", "on": "esm:Deliver", "action": "duplicate", "rate": 0.10,
             "mapping": out["EventSourceMappingUuid"]},
        ]  # fmt: skip
    return rules


# ------------------------------------------------------------------------------------------------ readers
def mapping_progress(faults: FaultClient, mapping: str) -> dict[str, Any]:
    return dict(faults.mappings().get(mapping) or {})


def wait_idle(
    faults: FaultClient, mapping: str, timeout: float = 120.0, settle: float = 1.0
) -> dict[str, Any]:
    """Until the mapping's checkpoint has stayed at the end of its shard for ``settle`` seconds."""
    deadline = time.monotonic() + timeout
    idle_since: float | None = None
    while True:
        progress = mapping_progress(faults, mapping)
        if progress.get("pending") == 0:
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since >= settle:
                return progress
        else:
            idle_since = None
        if time.monotonic() > deadline:
            raise AssertionError(f"the mapping is not idle after {timeout:.0f}s: {progress}")
        time.sleep(0.1)


def stream_records(aws: lt.LocalAWS, stream_arn: str) -> list[dict[str, Any]]:
    """Every record of the table's stream, with GetRecords from TRIM_HORIZON."""
    streams = aws.client("dynamodbstreams")
    shards = streams.describe_stream(StreamArn=stream_arn)["StreamDescription"]["Shards"]
    records: list[dict[str, Any]] = []
    for shard in shards:
        iterator = streams.get_shard_iterator(
            StreamArn=stream_arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        while iterator:
            page = streams.get_records(ShardIterator=iterator, Limit=1000)
            if not page["Records"]:
                break
            records += page["Records"]
            iterator = page.get("NextShardIterator")
    return records


def failure_records(aws: lt.LocalAWS, bucket: str) -> dict[str, dict[str, Any]]:
    """Failure-bucket key -> the invocation record (its ``payload`` parsed into ``records``)."""
    s3 = aws.client("s3")
    out: dict[str, dict[str, Any]] = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="aws/lambda/"):
        for obj in page.get("Contents", []):
            body = json.loads(s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read())
            body["records"] = json.loads(body["payload"])["Records"]
            out[obj["Key"]] = body
    return out


def bucket_keys(aws: lt.LocalAWS, bucket: str, prefix: str = "") -> set[str]:
    s3 = aws.client("s3")
    return {
        o["Key"]
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        for o in page.get("Contents", [])
    }


def live_items(aws: lt.LocalAWS, table: str, run: str) -> dict[tuple[str, str], dict[str, Any]]:
    ddb = aws.client("dynamodb")
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for page in ddb.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
        for item in page["Items"]:
            if item["pk"]["S"].startswith(f"{run}-"):
                out[(item["pk"]["S"], item["sk"]["S"])] = item
    return out


def listed_blobs(item: dict[str, Any]) -> list[str]:
    value = item.get("blobs") or {}
    if "L" in value:
        return [v["S"] for v in value["L"] if "S" in v]
    if "SS" in value:
        return list(value["SS"])
    return []


# ------------------------------------------------------------------------------------------------ the driver
@dataclass
class Ledger:
    """What one writer thread did (merged at the end)."""

    writes: int = 0
    records: int = 0  # stream records its writes produce (TTL removes included)
    uploaded: set[str] = field(default_factory=set)
    gone: set[str] = field(default_factory=set)  # blobs of deleted records, and blobs dropped by updates
    live: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    expiring: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # TTL'd, not yet swept
    poison: set[tuple[str, str]] = field(default_factory=set)
    fixable: set[tuple[str, str]] = field(default_factory=set)
    reused: set[str] = field(default_factory=set)  # blob keys uploaded again under the same name (key reuse)
    ops: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)

    def merge(self, other: Ledger) -> None:
        self.writes += other.writes
        self.records += other.records
        self.uploaded |= other.uploaded
        self.gone |= other.gone
        self.live.update(other.live)
        self.expiring.update(other.expiring)
        self.poison |= other.poison
        self.fixable |= other.fixable
        self.reused |= other.reused
        self.ops.update(other.ops)
        self.errors += other.errors


class Writer(threading.Thread):
    def __init__(self, aws: lt.LocalAWS, table: str, bucket: str, run: str, index: int, writes: int,
                 seed: int, poison: int, fixable: int) -> None:  # fmt: skip
        super().__init__(name=f"soak-writer-{index}", daemon=True)
        self.ddb = aws.client("dynamodb")
        self.s3 = aws.client("s3")
        self.table, self.bucket, self.run_id, self.index = table, bucket, run, index
        self.target = writes
        self.rng = random.Random(f"{seed}:{index}")
        self.ledger = Ledger()
        self.version: dict[tuple[str, str], int] = {}
        self.counter = 0
        # Poison and fixable items: put at a chosen write count, deleted some writes later.
        self.special: dict[int, list[str]] = {}
        for kind, count in (("poison", poison), ("fixable", fixable)):
            for _ in range(count):
                at = self.rng.randrange(0, max(writes - 40, 1))
                self.special.setdefault(at, []).append(kind)
        self.pending_deletes: dict[int, list[tuple[str, str]]] = {}
        self.reserved: set[tuple[str, str]] = set()  # poison and fixable items: no other operation on them

    # ---- helpers ----
    def _new_key(self) -> tuple[str, str]:
        self.counter += 1
        pk = f"{self.run_id}-p{self.rng.randrange(PARTITIONS)}"
        return pk, f"t{self.index}-{self.counter:05d}"

    def _upload(self, key: tuple[str, str], count: int) -> list[str]:
        names = [f"{key[0]}/{key[1]}/{uuid.uuid4().hex[:12]}.bin" for _ in range(count)]
        for name in names:
            self.s3.put_object(Bucket=self.bucket, Key=name, Body=b"blob")
        self.ledger.uploaded.update(names)
        return names

    def _item(self, key: tuple[str, str], blobs: list[str], **extra: Any) -> dict[str, Any]:
        version = self.version.get(key, 0) + 1
        self.version[key] = version
        item: dict[str, Any] = {
            "pk": {"S": key[0]},
            "sk": {"S": key[1]},
            "v": {"N": str(version)},
            "blobs": {"L": [{"S": b} for b in blobs]},
        }
        item.update(extra)
        return item

    def _pick(
        self, need_blobs: bool = False, exclude: set[tuple[str, str]] | None = None
    ) -> tuple[str, str] | None:
        choices = [
            k for k, blobs in self.ledger.live.items()
            if (blobs or not need_blobs) and not (exclude and k in exclude) and k not in self.reserved
        ]  # fmt: skip
        return self.rng.choice(choices) if choices else None

    def _wrote(self, kind: str, items: int = 1) -> None:
        self.ledger.writes += items
        self.ledger.records += items
        self.ledger.ops[kind] += items

    # ---- item-level changes (the model; the caller sends the request) ----
    def _plan_put_new(self) -> tuple[tuple[str, str], dict[str, Any]]:
        key = self._new_key()
        blobs = self._upload(key, self.rng.randint(1, 3))
        return key, self._item(key, blobs)

    def _commit_put(self, key: tuple[str, str], blobs: list[str]) -> None:
        old = self.ledger.live.get(key, [])
        self.ledger.gone.update(set(old) - set(blobs))
        self.ledger.live[key] = blobs

    def _plan_replace(self, key: tuple[str, str]) -> tuple[list[str], dict[str, Any]]:
        old = self.ledger.live[key]
        keep = [b for b in old if self.rng.random() < 0.5]
        blobs = keep + self._upload(key, self.rng.randint(0 if keep or not old else 1, 2))
        return blobs, self._item(key, blobs)

    def _commit_delete(self, key: tuple[str, str]) -> None:
        self.ledger.gone.update(self.ledger.live.pop(key))

    def _update_values(self, key: tuple[str, str], blobs: list[str]) -> dict[str, Any]:
        self.version[key] = self.version.get(key, 0) + 1
        return {
            "Key": {"pk": {"S": key[0]}, "sk": {"S": key[1]}},
            "UpdateExpression": "SET blobs = :b, v = :v",
            "ExpressionAttributeValues": {
                ":b": {"L": [{"S": b} for b in blobs]},
                ":v": {"N": str(self.version[key])},
            },
        }

    # ---- operations ----
    def op_put_new(self) -> None:
        key, item = self._plan_put_new()
        self.ddb.put_item(TableName=self.table, Item=item)
        self._commit_put(key, listed_blobs(item))
        self._wrote("insert")

    def op_put_replace(self) -> None:
        key = self._pick()
        if key is None:
            return self.op_put_new()
        blobs, item = self._plan_replace(key)
        self.ddb.put_item(TableName=self.table, Item=item)
        self._commit_put(key, blobs)
        self._wrote("update-put")

    def op_update_drop(self) -> None:
        key = self._pick(need_blobs=True)
        if key is None:
            return self.op_put_new()
        old = self.ledger.live[key]
        blobs = self.rng.sample(old, self.rng.randint(0, len(old) - 1))
        self.ddb.update_item(TableName=self.table, **self._update_values(key, blobs))
        self._commit_put(key, blobs)
        self._wrote("update-drop")

    def op_update_add(self) -> None:
        key = self._pick()
        if key is None:
            return self.op_put_new()
        added = self._upload(key, 1)
        self.version[key] = self.version.get(key, 0) + 1
        self.ddb.update_item(
            TableName=self.table,
            Key={"pk": {"S": key[0]}, "sk": {"S": key[1]}},
            UpdateExpression="SET blobs = list_append(blobs, :n), v = :v",
            ExpressionAttributeValues={
                ":n": {"L": [{"S": k} for k in added]},
                ":v": {"N": str(self.version[key])},
            },
        )
        self._commit_put(key, self.ledger.live[key] + added)
        self._wrote("update-add")

    def op_delete(self) -> None:
        key = self._pick()
        if key is None:
            return self.op_put_new()
        self.ddb.delete_item(TableName=self.table, Key={"pk": {"S": key[0]}, "sk": {"S": key[1]}})
        self._commit_delete(key)
        self._wrote("delete")

    def op_ttl(self) -> None:
        """expiresAt in the past: the TTL sweeper deletes the item (a second stream record, a REMOVE)."""
        past = {"N": str(int(time.time()) - self.rng.randint(1, 3600))}
        key = self._pick()
        if key is None or self.rng.random() < 0.5:
            key, item = self._plan_put_new()
            item["expiresAt"] = past
            self.ddb.put_item(TableName=self.table, Item=item)
            blobs = listed_blobs(item)
        else:
            blobs = self.ledger.live.pop(key)
            self.version[key] = self.version.get(key, 0) + 1
            self.ddb.update_item(
                TableName=self.table,
                Key={"pk": {"S": key[0]}, "sk": {"S": key[1]}},
                UpdateExpression="SET expiresAt = :e, v = :v",
                ExpressionAttributeValues={":e": past, ":v": {"N": str(self.version[key])}},
            )
        self.ledger.live.pop(key, None)
        self.ledger.expiring[key] = blobs
        self._wrote("ttl")
        self.ledger.records += 1  # the TTL service's REMOVE

    def op_batch(self) -> None:
        requests: list[dict[str, Any]] = []
        commits: list[Callable[[], None]] = []
        touched: set[tuple[str, str]] = set()
        for _ in range(self.rng.randint(2, 6)):
            roll = self.rng.random()
            key = self._pick(exclude=touched) if roll < 0.6 else None
            if key is None:
                key, item = self._plan_put_new()
                requests.append({"PutRequest": {"Item": item}})
                new_blobs = listed_blobs(item)
                commits.append(partial(self._commit_put, key, new_blobs))
            elif roll < 0.3:
                requests.append({"DeleteRequest": {"Key": {"pk": {"S": key[0]}, "sk": {"S": key[1]}}}})
                commits.append(partial(self._commit_delete, key))
            else:
                blobs, item = self._plan_replace(key)
                requests.append({"PutRequest": {"Item": item}})
                commits.append(partial(self._commit_put, key, blobs))
            touched.add(key)
        pending = {self.table: requests}
        while pending:
            reply = self.ddb.batch_write_item(RequestItems=pending)
            pending = reply.get("UnprocessedItems") or {}
        for commit in commits:
            commit()
        self._wrote("batch", len(requests))

    def op_transact(self) -> None:
        actions: list[dict[str, Any]] = []
        commits: list[Callable[[], None]] = []
        touched: set[tuple[str, str]] = set()
        for _ in range(self.rng.randint(2, 4)):
            roll = self.rng.random()
            key = self._pick(exclude=touched) if roll < 0.6 else None
            if key is None:
                key, item = self._plan_put_new()
                actions.append({"Put": {"TableName": self.table, "Item": item}})
                new_blobs = listed_blobs(item)
                commits.append(partial(self._commit_put, key, new_blobs))
            elif roll < 0.3:
                actions.append(
                    {"Delete": {"TableName": self.table, "Key": {"pk": {"S": key[0]}, "sk": {"S": key[1]}}}}
                )
                commits.append(partial(self._commit_delete, key))
            else:
                old = self.ledger.live[key]
                blobs = self.rng.sample(old, self.rng.randint(0, max(len(old) - 1, 0))) if old else []
                blobs += self._upload(key, 1) if not old or self.rng.random() < 0.3 else []
                actions.append({"Update": {"TableName": self.table, **self._update_values(key, blobs)}})
                commits.append(partial(self._commit_put, key, blobs))
            touched.add(key)
        self.ddb.transact_write_items(TransactItems=actions)
        for commit in commits:
            commit()
        self._wrote("transaction", len(actions))

    def op_special(self, kind: str) -> None:
        self.counter += 1
        key = (f"{self.run_id}-{kind}", f"t{self.index}-{self.counter:05d}")
        if kind == "poison":
            item = {"pk": {"S": key[0]}, "sk": {"S": key[1]}, "blobs": {"N": "7"}}
            self.ledger.poison.add(key)
        else:
            item = self._item(key, self._upload(key, 2))
            self.ledger.fixable.add(key)
        self.reserved.add(key)
        self.ddb.put_item(TableName=self.table, Item=item)
        self._commit_put(key, listed_blobs(item))
        self._wrote(kind)
        self.pending_deletes.setdefault(self.ledger.writes + self.rng.randint(5, 30), []).append(key)

    def op_reuse(self) -> None:
        """Key reuse, racing the consumer: delete the item, upload the same blob keys again, put it back."""
        key = self._pick(need_blobs=True)
        if key is None:
            return self.op_put_new()
        blobs = self.ledger.live[key]
        self.ddb.delete_item(TableName=self.table, Key={"pk": {"S": key[0]}, "sk": {"S": key[1]}})
        for name in blobs:
            self.s3.put_object(Bucket=self.bucket, Key=name, Body=f"again {uuid.uuid4().hex}".encode())
        self.ddb.put_item(TableName=self.table, Item=self._item(key, blobs))
        self.ledger.reused.update(blobs)
        self._wrote("reuse", 2)  # a REMOVE and an INSERT

    def _due_deletes(self, everything: bool = False) -> None:
        for at in [a for a in self.pending_deletes if everything or a <= self.ledger.writes]:
            for key in self.pending_deletes.pop(at):
                self.ddb.delete_item(TableName=self.table, Key={"pk": {"S": key[0]}, "sk": {"S": key[1]}})
                self._commit_delete(key)
                self._wrote(f"{'poison' if key in self.ledger.poison else 'fixable'}-delete")

    OPS = (
        ("op_put_new", 22), ("op_put_replace", 10), ("op_update_drop", 12), ("op_update_add", 8),
        ("op_delete", 16), ("op_ttl", 7), ("op_batch", 6), ("op_transact", 6), ("op_reuse", 8),
    )  # fmt: skip

    def run(self) -> None:
        names = [name for name, _ in self.OPS]
        weights = [weight for _, weight in self.OPS]
        done_special: set[int] = set()
        try:
            while self.ledger.writes < self.target:
                for at in [a for a in self.special if a <= self.ledger.writes and a not in done_special]:
                    done_special.add(at)
                    for kind in self.special[at]:
                        self.op_special(kind)
                self._due_deletes()
                getattr(self, self.rng.choices(names, weights)[0])()
            self._due_deletes(everything=True)  # the special items still live are deleted now
        except Exception as exc:  # reported by the caller
            self.ledger.errors.append(f"{self.name}: {type(exc).__name__}: {exc}")


# ------------------------------------------------------------------------------------------------ the report
@dataclass
class SoakReport:
    run: str
    seconds: float = 0.0
    writes: int = 0
    ops: dict[str, int] = field(default_factory=dict)
    blobs: int = 0
    stream_records: int = 0
    expected_records: int = 0
    faults: dict[str, int] = field(default_factory=dict)
    invocations: int = 0  # proof lines
    deliveries: int = 0  # records delivered, re-deliveries included (sum of record_count)
    redelivered: int = 0  # re-deliveries: retries and duplicates
    retried_invocations: int = 0  # invocations that re-delivered records already delivered
    failure_objects: int = 0
    failure_records: int = 0
    failure_poison: int = 0
    failure_fixable: int = 0
    failure_other: int = 0
    failure_transient: int = 0  # objects whose first record is neither poison nor fixable: retries exhausted
    replay: dict[str, int] = field(default_factory=dict)
    kept_after_replay: int = 0
    left_before_replay: int = 0
    wrongly_deleted: list[str] = field(default_factory=list)
    reused_blobs: int = 0  # blob keys uploaded again under the same name while the consumer raced
    reused_lost: list[str] = field(default_factory=list)  # of those, listed by a live item yet gone
    left_behind: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def render(self) -> str:
        faults = sum(self.faults.values())
        detail = ", ".join(f"{k} {v}" for k, v in sorted(self.faults.items()))
        ops = ", ".join(f"{k} {v}" for k, v in sorted(self.ops.items()))
        replay = ", ".join(f"{k} {v}" for k, v in sorted(self.replay.items()))
        rows = [
            ("run", f"{self.run} in {self.seconds:.0f}s"),
            ("writes (item-level)", f"{self.writes} ({ops})"),
            ("blobs uploaded", self.blobs),
            ("stream records / expected", f"{self.stream_records} / {self.expected_records}"),
            ("faults injected", f"{faults} ({detail})"),
            ("invocations (proof lines)", self.invocations),
            ("records delivered", f"{self.deliveries} = {self.deliveries - self.redelivered} first deliveries "
             f"(= stream records) + {self.redelivered} re-deliveries in {self.retried_invocations} retried or "
             "duplicated invocations"),
            ("failure destination: objects / records",
             f"{self.failure_objects} / {self.failure_records} (poison {self.failure_poison}, fixable "
             f"{self.failure_fixable}, swept along {self.failure_other}); objects from transient faults "
             f"that exhausted the retries: {self.failure_transient}"),
            ("blobs waiting for replay", self.left_before_replay),
            ("replay", replay),
            ("records kept after replay (poison)", self.kept_after_replay),
            ("objects wrongly deleted (must be 0)", len(self.wrongly_deleted)),
            (f"live blobs lost under key reuse, of {self.reused_blobs} reused (must be 0)", len(self.reused_lost)),
            ("objects left behind (must be 0)", len(self.left_behind)),
        ]  # fmt: skip
        width = max(len(name) for name, _ in rows)
        lines = [f"{name:<{width}}  {value}" for name, value in rows]
        lines += [f"PROBLEM: {p}" for p in self.problems]
        return "\n".join(lines)


def run_soak(
    aws: lt.LocalAWS,
    stack: lt.Deployed,
    *,
    writes: int,
    threads: int = 3,
    seed: int = 1,
    poison: int = 2,
    fixable: int = 2,
    transient_faults: bool = True,
    idle_timeout: float = 180.0,
) -> SoakReport:
    out = stack.outputs
    table, bucket, failures = out["TableName"], out["BlobBucketName"], out["FailureBucketName"]
    mapping, group, function = (
        out["EventSourceMappingUuid"],
        out["ConsumerLogGroupName"],
        out["ConsumerFunctionName"],
    )
    faults = aws.faults
    run = f"soak{seed}x{uuid.uuid4().hex[:6]}"
    report = SoakReport(run=run)

    faults.clear()
    wait_idle(faults, mapping, timeout=60)
    lt.empty_bucket(aws, failures)
    start_seq = int(mapping_progress(faults, mapping)["shard_end"])
    since = lt.now_ms()
    faults.set(fault_rules(stack, run, transient=transient_faults), seed=seed)

    started = time.monotonic()
    per_thread = [writes // threads + (1 if i < writes % threads else 0) for i in range(threads)]
    writers = [
        Writer(
            aws,
            table,
            bucket,
            run,
            i,
            n,
            seed,
            poison=poison if i == 0 else 0,
            fixable=fixable if i == 1 % threads else 0,
        )
        for i, n in enumerate(per_thread)
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    ledger = Ledger()
    for writer in writers:
        ledger.merge(writer.ledger)
    report.problems += ledger.errors
    report.writes, report.ops, report.blobs = ledger.writes, dict(ledger.ops), len(ledger.uploaded)
    report.expected_records = ledger.records

    # Everything delivered: the TTL'd items swept, their REMOVEs in the stream, the mapping idle.
    ddb = aws.client("dynamodb")
    deadline = time.monotonic() + idle_timeout
    while ledger.expiring and time.monotonic() < deadline:
        pairs = list(ledger.expiring)[:100]
        keys = [{"pk": {"S": pk}, "sk": {"S": sk}} for pk, sk in pairs]
        reply = ddb.batch_get_item(RequestItems={table: {"Keys": keys, "ConsistentRead": True}})
        still = {(i["pk"]["S"], i["sk"]["S"]) for i in reply["Responses"][table]}
        for pair in pairs:
            if pair not in still:
                ledger.gone.update(ledger.expiring.pop(pair))
        if still:
            time.sleep(0.5)
    if ledger.expiring:
        report.problems.append(f"{len(ledger.expiring)} TTL'd item(s) were never expired")
    wait_idle(faults, mapping, timeout=max(deadline - time.monotonic(), 30), settle=2.0)
    report.seconds = time.monotonic() - started

    # (d) the proof lines against the stream.
    records = [
        r for r in stream_records(aws, out["StreamArn"]) if int(r["dynamodb"]["SequenceNumber"]) >= start_seq
    ]
    seqs = [int(r["dynamodb"]["SequenceNumber"]) for r in records]
    report.stream_records = len(records)
    if len(set(seqs)) != len(seqs):
        dupes = [s for s, n in Counter(seqs).items() if n > 1]
        report.problems.append(f"the stream has {len(dupes)} duplicate sequence number(s), e.g. {dupes[:3]}")
    if seqs != sorted(seqs):
        report.problems.append("the stream's sequence numbers are not increasing")
    if len(records) != ledger.records:
        report.problems.append(f"the stream has {len(records)} records; the writes made {ledger.records}")
    foreign = [r for r in records if not r["dynamodb"]["Keys"]["pk"]["S"].startswith(f"{run}-")]
    if foreign:
        report.problems.append(f"{len(foreign)} stream record(s) of other writers in the soak's range")
    ordered = sorted(set(seqs))
    position = {s: i for i, s in enumerate(ordered)}
    lines = [
        p
        for p in lt.proof_lines(aws.client("logs"), group, since)
        if p.first is not None and p.last is not None and p.first >= start_seq
    ]
    covered: Counter[int] = Counter()
    for line in lines:
        if line.first not in position or line.last not in position:
            report.problems.append(f"a proof line names sequence numbers the stream does not have: {line}")
            continue
        span = ordered[position[line.first] : position[line.last] + 1]
        if len(span) != line.count:
            report.problems.append(
                f"a proof line's record_count {line.count} != the {len(span)} records it spans"
            )
        if any(seq in covered for seq in span):
            report.retried_invocations += 1
        covered.update(span)
    report.invocations = len(lines)
    report.deliveries = sum(line.count for line in lines)
    report.redelivered = report.deliveries - len(covered)
    missing = [s for s in ordered if s not in covered]
    if missing:
        report.problems.append(f"{len(missing)} stream record(s) never delivered, e.g. {missing[:3]}")

    # (c) the failure destination before replay.
    status = faults.status()
    report.faults = {rule: counts["fired"] for rule, counts in status["counts"].items() if counts["fired"]}
    kept = failure_records(aws, failures)
    report.failure_objects = len(kept)
    kept_records = [r for body in kept.values() for r in body["records"]]
    report.failure_records = len(kept_records)
    pk_of = lambda r: r["dynamodb"]["Keys"]["pk"]["S"]  # noqa: E731
    report.failure_poison = sum(1 for r in kept_records if pk_of(r) == f"{run}-poison")
    report.failure_fixable = sum(1 for r in kept_records if pk_of(r) == f"{run}-fixable")
    report.failure_other = report.failure_records - report.failure_poison - report.failure_fixable
    report.failure_transient = sum(
        1
        for body in kept.values()
        if pk_of(min(body["records"], key=lambda r: int(r["dynamodb"]["SequenceNumber"])))
        not in (f"{run}-poison", f"{run}-fixable")
    )
    poison_seqs = {
        r["dynamodb"]["SequenceNumber"]
        for r in records
        if r["dynamodb"]["Keys"]["pk"]["S"] == f"{run}-poison"
    }
    fixable_removes = {
        r["dynamodb"]["SequenceNumber"]
        for r in records
        if r["dynamodb"]["Keys"]["pk"]["S"] == f"{run}-fixable" and r["eventName"] == "REMOVE"
    }
    kept_seqs = {r["dynamodb"]["SequenceNumber"] for r in kept_records}
    for name, wanted in (("poison", poison_seqs), ("fixable", fixable_removes)):
        if wanted - kept_seqs:
            report.problems.append(
                f"{len(wanted - kept_seqs)} {name} record(s) are not on the failure destination"
            )
    if len(poison_seqs) != 2 * len(ledger.poison):
        report.problems.append(
            f"{len(poison_seqs)} poison stream records for {len(ledger.poison)} poison items"
        )
    for object_key, body in kept.items():
        info = body.get("DDBStreamBatchInfo") or {}
        seqs_in = [int(r["dynamodb"]["SequenceNumber"]) for r in body["records"]]
        if (
            body["requestContext"].get("condition") not in ("RetryAttemptsExhausted", "RecordAgeExceeded")
            or info.get("streamArn") != out["StreamArn"]
            or str(min(seqs_in)) != info.get("startSequenceNumber")
            or str(max(seqs_in)) != info.get("endSequenceNumber")
            or len(seqs_in) != info.get("batchSize")
        ):
            report.problems.append(f"the invocation record {object_key} does not describe its batch: {info}")
    present = bucket_keys(aws, bucket, f"{run}-")
    report.left_before_replay = len(present & ledger.gone)

    # The cause is fixed (every fault off), then the operator replays.
    faults.clear()
    outcomes = run_replay(
        s3=aws.client("s3"), lambda_client=aws.client("lambda"), ddb=ddb, bucket=failures,
        function=function, table=table,
    )  # fmt: skip
    report.replay = dict(
        Counter("function error" if o.error else "kept" if o.still_failing else "removed" for o in outcomes)
    )
    after = failure_records(aws, failures)
    after_records = [r for body in after.values() for r in body["records"]]
    report.kept_after_replay = len(after_records)
    after_seqs = {r["dynamodb"]["SequenceNumber"] for r in after_records}
    if after_seqs != poison_seqs:
        report.problems.append(
            f"after replay the failure destination holds {len(after_seqs)} record(s); expected exactly the "
            f"{len(poison_seqs)} poison records (extra {sorted(after_seqs - poison_seqs)[:3]}, "
            f"missing {sorted(poison_seqs - after_seqs)[:3]})"
        )

    # (a) and (b): the blobs against the live items.
    live = live_items(aws, table, run)
    if set(live) != set(ledger.live):
        report.problems.append(
            f"the table's items differ from the writers' model: {len(set(live) ^ set(ledger.live))} differ"
        )
    listed = {blob for item in live.values() for blob in listed_blobs(item)}
    present = bucket_keys(aws, bucket, f"{run}-")
    report.wrongly_deleted = sorted(listed - present)
    report.reused_blobs = len(ledger.reused)
    report.reused_lost = sorted((listed - present) & ledger.reused)
    report.left_behind = sorted(present - listed)
    unexpected = (present - listed) - ledger.gone
    if unexpected:
        report.problems.append(f"{len(unexpected)} object(s) neither listed nor known to the writers")
    if report.wrongly_deleted:
        report.problems.append(
            f"{len(report.wrongly_deleted)} blob(s) of live records deleted, e.g. {report.wrongly_deleted[:3]}"
        )
    if report.left_behind:
        report.problems.append(
            f"{len(report.left_behind)} blob(s) left behind, e.g. {report.left_behind[:3]}"
        )
    return report
