"""Time to Live that expires items: moto records the TTL setting but never deletes anything.

A sweeper thread deletes the items whose TTL attribute (a Number, epoch seconds) is in the past, from every
table with TTL enabled, as DynamoDB's TTL service does: each deletion is a REMOVE stream record whose
``userIdentity`` is ``{"type": "Service", "principalId": "dynamodb.amazonaws.com"}``. Like DynamoDB it skips
values that are not numbers and values more than five years in the past. AWS deletes expired items within
days (usually minutes); here within ``DOCTABLE_LOCAL_TTL_SWEEP_SECONDS`` (default 5; 0 turns it off).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

log = logging.getLogger("doctable.local.ttl")

FIVE_YEARS = 5 * 365 * 24 * 3600
TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}

_deleting = threading.local()


def deleting_for_ttl() -> bool:
    """True while the sweeper deletes an item (the stream record then carries the TTL service identity)."""
    return bool(getattr(_deleting, "active", False))


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
                deleted += _sweep_table(table, attribute, now)
    return deleted


def _sweep_table(table: Any, attribute: str, now: float) -> int:
    deleted = 0
    for item in list(table.all_items()):
        value = item.attrs.get(attribute)
        if value is None or value.type != "N":
            continue
        try:
            expires = float(value.value)
        except (TypeError, ValueError):
            continue
        if not now - FIVE_YEARS <= expires < now:
            continue
        _deleting.active = True
        try:
            table.delete_item(item.hash_key, item.range_key)
            deleted += 1
        finally:
            _deleting.active = False
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
            except Exception:
                log.exception("TTL sweep failed")

    def stop(self) -> None:
        self.stopped.set()
