"""Time to Live that expires items: moto records the TTL setting but never deletes anything.

A sweeper thread deletes the items whose TTL attribute (a Number, epoch seconds) is in the past, from every
table with TTL enabled, as DynamoDB's TTL service does: each deletion is a REMOVE stream record whose
``userIdentity`` is ``{"type": "Service", "principalId": "dynamodb.amazonaws.com"}``. Like DynamoDB it skips
values that are not numbers and values more than five years in the past. AWS deletes expired items within
days (usually minutes); here within ``DOCTABLE_LOCAL_TTL_SWEEP_SECONDS`` (default 5; 0 turns it off). A global
table's items expire in its first region only; local/services/dynamodb/replication.py replicates the deletion.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

from local import incidents
from local.patching import Target
from local.services.dynamodb import replication as dynamodb_replicas
from local.services.dynamodb.writes import WRITE_LOCK, ttl_deletion

log = logging.getLogger("doctable.local.ttl")

FIVE_YEARS = 5 * 365 * 24 * 3600

MOTO_TARGETS = (
    Target("moto.dynamodb.models", "dynamodb_backends"),
    Target("moto.dynamodb.models.table", "Table.all_items", ("self",)),
    Target("moto.dynamodb.models.table", "Table.get_item", ("self", "hash_key", "range_key")),
    Target("moto.dynamodb.models.table", "Table.delete_item", ("self", "hash_key", "range_key")),
)


def sweep_once(now: float | None = None) -> int:
    from moto.dynamodb.models import dynamodb_backends

    now = time.time() if now is None else now
    deleted = 0
    for regions in list(dynamodb_backends.values()):
        for backend in list(dict.values(regions)):
            for table in list(backend.tables.values()):
                ttl = getattr(table, "ttl", {}) or {}
                attribute = ttl.get("AttributeName")
                if ttl.get("TimeToLiveStatus") != "ENABLED" or not attribute:
                    continue
                if not dynamodb_replicas.expires_here(table):
                    continue  # a global table's replica: the deletion replicates from its first region
                deleted += _sweep_table(table, attribute, now)
    return deleted


def _expired(item: Any, attribute: str, now: float) -> bool:
    value = item.attrs.get(attribute)
    if value is None or value.type != "N":
        return False
    try:
        expires = float(value.value)
    except (TypeError, ValueError):
        return False
    return now - FIVE_YEARS <= expires < now


def _sweep_table(table: Any, attribute: str, now: float) -> int:
    # Under the DynamoDB write lock: the list is read while no write changes it, and each item is checked
    # again just before it is deleted, so an item written since (expiresAt moved or removed) is not deleted
    # on the strength of its old value (a race the soak, tests/integration/test_soak.py, found).
    with WRITE_LOCK:
        due = [(i.hash_key, i.range_key) for i in table.all_items() if _expired(i, attribute, now)]
    deleted = 0
    for hash_key, range_key in due:
        with WRITE_LOCK:
            item = table.get_item(hash_key, range_key)
            if item is None or not _expired(item, attribute, now):
                continue
            with ttl_deletion():
                table.delete_item(hash_key, range_key)
            deleted += 1
    return deleted


class TtlSweeper(threading.Thread):
    def __init__(self, interval: float | None = None):
        super().__init__(name="dynamodb-ttl", daemon=True)
        self.interval = (
            float(os.environ.get("DOCTABLE_LOCAL_TTL_SWEEP_SECONDS", "5")) if interval is None else interval
        )
        self.stopped = threading.Event()

    def run(self) -> None:
        if self.interval <= 0:
            return
        while not self.stopped.wait(self.interval):
            try:
                sweep_once()
            except Exception as exc:  # the sweeper lives on; the failure is an incident a test sees
                incidents.record("ttl.sweep", exc)

    def stop(self) -> None:
        self.stopped.set()
