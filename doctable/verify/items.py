"""What verify writes: the test item (every attribute type), an attribute-exact comparison of what comes back,
and the scratch list of everything written, removed at the end of a run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from contract import names
from doctable.capabilities.indexes import index_key_condition
from doctable.core.answers import is_not_found
from doctable.verify.record import CheckFailed

if TYPE_CHECKING:
    from contract.shape import IndexShape
    from doctable.core.render import Progress


def test_item(pk: str, sk: str, now: float) -> dict[str, Any]:
    """An item exercising every attribute type (typed wire format, so the comparison is exact)."""
    return {
        names.PARTITION_KEY: {"S": pk},
        names.SORT_KEY: {"S": sk},
        "title": {"S": "doctable acceptance ✓"},
        "count": {"N": "42"},
        "ratio": {"N": "-0.125"},
        "big": {"N": "123456789012345678901234567890"},
        "payload": {"B": bytes(range(256))},
        "tags": {"SS": ["blue", "green", "red"]},
        "scores": {"NS": ["1", "2.5", "-3"]},
        "chunks": {"BS": [b"\x00\x01", b"\xff"]},
        "flag": {"BOOL": True},
        "nothing": {"NULL": True},
        "nested": {
            "M": {
                "level": {"N": "2"},
                "inner": {"M": {"deep": {"S": "yes"}, "list": {"L": [{"N": "1"}, {"S": "two"}]}}},
            }
        },
        "items": {"L": [{"S": "a"}, {"N": "1"}, {"M": {"k": {"BOOL": False}}}, {"L": []}, {"SS": ["x"]}]},
        names.TTL_ATTRIBUTE: {"N": str(int(now) + 86_400)},
    }


def canonical(value: Any) -> Any:
    """A comparable form of a typed attribute value: sets are unordered, numbers compare as numbers."""
    if isinstance(value, Mapping):
        if len(value) == 1:
            (kind, inner), *_ = value.items()
            if kind == "N":
                return ("N", Decimal(inner).normalize())
            if kind == "NS":
                return ("NS", sorted(Decimal(v).normalize() for v in inner))
            if kind in ("SS", "BS"):
                return (kind, sorted(bytes(v) if kind == "BS" else v for v in inner))
            if kind == "B":
                return ("B", bytes(inner))
            if kind == "M":
                return ("M", {k: canonical(v) for k, v in inner.items()})
            if kind == "L":
                return ("L", [canonical(v) for v in inner])
            if kind in ("S", "BOOL", "NULL"):
                return (kind, inner)
        return {k: canonical(v) for k, v in value.items()}
    return value


def item_differences(want: Mapping[str, Any], got: Mapping[str, Any] | None) -> list[str]:
    if got is None:
        return ["no item returned"]
    problems = []
    for name in sorted(set(want) | set(got)):
        if name not in got:
            problems.append(f"{name} missing")
        elif name not in want:
            problems.append(f"{name} unexpected")
        elif canonical(want[name]) != canonical(got[name]):
            problems.append(f"{name} differs")
    return problems


@dataclass
class Scratch:
    """Everything a run wrote, so the ``finally`` can remove it."""

    items: list[tuple[str, str]] = field(default_factory=list)
    blobs: list[tuple[str, str]] = field(default_factory=list)  # (bucket, key)

    def remove(self, ddb: Any, s3: Any, table: str) -> list[str]:
        """Delete every item and blob written (already gone is fine); return what could not be removed."""
        problems = []
        for pk, sk in dict.fromkeys(self.items):
            try:
                ddb.delete_item(
                    TableName=table, Key={names.PARTITION_KEY: {"S": pk}, names.SORT_KEY: {"S": sk}}
                )
            except (ClientError, BotoCoreError) as exc:
                if not (isinstance(exc, ClientError) and is_not_found(exc)):
                    problems.append(f"item {pk}/{sk}: {exc}")
        for bucket, key in self.blobs:
            try:
                s3.delete_object(Bucket=bucket, Key=key)
            except (ClientError, BotoCoreError) as exc:
                if not (isinstance(exc, ClientError) and is_not_found(exc)):
                    problems.append(f"blob s3://{bucket}/{key}: {exc}")
        return problems


def query_index(
    ddb: Any, table: str, index: IndexShape, item: dict[str, Any], progress: Progress, timeout: float
) -> str:
    """Query ``index`` for ``item`` (written with the index's keys) until it answers: index replication is async,
    so the query is retried within ``timeout``. Raises CheckFailed when it never answers."""
    # = on each partition attribute; a multi-attribute sort key's attributes as DynamoDB allows them in a query
    condition = index_key_condition(index, item)
    attempts = 0

    def probe() -> int | None:
        nonlocal attempts
        attempts += 1
        reply = ddb.query(
            TableName=table,
            IndexName=index.name,
            **condition,
            **({} if index.is_global else {"ConsistentRead": True}),
        )
        mine = [i for i in reply.get("Items", []) if i.get(names.SORT_KEY) == item[names.SORT_KEY]]
        return len(mine) if mine else None

    found, seconds = progress.wait(f"{index.name} to answer (index replication is async)", probe, timeout)
    if found is None:
        raise CheckFailed(
            f"{index.name}: count 0 after {attempts} attempts / {seconds:.1f}s — replication lag "
            "or an unfinished backfill (index added to a live table)"
        )
    return f"{index.name} count 1 (attempt {attempts}, {seconds:.1f}s)"
