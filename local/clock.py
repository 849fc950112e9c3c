"""The local AWS's clock control: a test says that an interval AWS measures in hours has passed, instead of
waiting for it. ``POST /_doctable/clock`` on the local AWS itself::

    {"ttl_interval_elapsed": "TABLE"}   UpdateTimeToLive's change interval (an hour on AWS) has passed for TABLE,
                                        in every region holding a table of that name: the next change is taken
    {"hold_backfill": "TABLE"}          the table's GSIs that are CREATING or DELETING stay so, and so do the
                                        ones it gets next, until released: a test sees the backfill for sure
    {"release_backfill": "TABLE"}       they finish once their backfill time has passed, as before the hold
    {"advance_seconds": N}              the time the local AWS reports moves N seconds (a number >= 0) ahead:
                                        the ``Date`` header of every answer, which is the clock a client judges
                                        AWS's time by (``doctable preview gc`` expires previews by it)
    {"reset_clock": true}               the reported time is the real time again

The table actions answer ``{"tables": [REGION, ...]}``, the regions where it found the table (404 when none
holds it); the clock actions ``{"offset_seconds": S}``, how far ahead the reported time now is. Nothing else is
moved: the times in answers' bodies (a stack's CreationTime), signature checks, item TTL expiry, stream retention
and every other wait go by the real clock.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

PATH = "/_doctable/clock"
TTL_CHANGED_ATTRIBUTE = "doctable_ttl_changed"  # time.monotonic() of the table's last TTL change
BACKFILL_HELD_ATTRIBUTE = "doctable_backfill_held"  # True while a test holds the table's index changes open
ACTIONS = ("ttl_interval_elapsed", "hold_backfill", "release_backfill")
CLOCK_ACTIONS = ("advance_seconds", "reset_clock")
_offset = [0.0]  # seconds the reported time is ahead of the real one
_offset_lock = threading.Lock()


def now() -> float:
    """The time the local AWS reports (epoch seconds): the real time plus the offset a test moved it by."""
    return time.time() + _offset[0]


def advance(seconds: float) -> float:
    """Move the reported time ``seconds`` ahead; the offset now."""
    with _offset_lock:
        _offset[0] += seconds
        return _offset[0]


def reset() -> float:
    with _offset_lock:
        _offset[0] = 0.0
        return 0.0


def ttl_interval_elapsed(table_name: str) -> list[str]:
    """Forget the last TTL change of every table named ``table_name``; the regions holding one, sorted."""
    return _each_table(table_name, TTL_CHANGED_ATTRIBUTE, None)


def hold_backfill(table_name: str, held: bool) -> list[str]:
    """Hold (or release) the index changes of every table named ``table_name``; the regions holding one."""
    return _each_table(table_name, BACKFILL_HELD_ATTRIBUTE, held)


def _each_table(table_name: str, attribute: str, value: Any) -> list[str]:
    from moto.dynamodb.models import dynamodb_backends

    regions: list[str] = []
    for account in list(dynamodb_backends):
        for region, backend in list(dynamodb_backends[account].items()):
            table = backend.tables.get(table_name)
            if table is not None:
                setattr(table, attribute, value)
                regions.append(region)
    return sorted(regions)


def handle(environ: dict[str, Any], start_response: Any, body: bytes) -> list[bytes]:
    """The WSGI answer to a request on ``PATH`` (its body already read)."""
    if environ.get("REQUEST_METHOD") != "POST":
        return _json(start_response, "405 Method Not Allowed", {"error": "POST only"})
    try:
        spec = json.loads(body or b"{}")
    except ValueError as exc:
        return _json(start_response, "400 Bad Request", {"error": f"not JSON: {exc}"})
    action = next(iter(spec), None) if isinstance(spec, dict) and len(spec) == 1 else None
    if action in CLOCK_ACTIONS:
        return _clock(start_response, action, spec[action])
    table = spec.get(action) if action in ACTIONS else None
    if not isinstance(table, str) or not table:
        allowed = " or ".join(f'{{"{a}": "<table name>"}}' for a in ACTIONS)
        return _json(start_response, "400 Bad Request", {"error": f"expected {allowed}"})
    if action == "ttl_interval_elapsed":
        regions = ttl_interval_elapsed(table)
    else:
        regions = hold_backfill(table, action == "hold_backfill")
    if not regions:
        return _json(start_response, "404 Not Found", {"error": f"no table named {table!r}"})
    return _json(start_response, "200 OK", {"tables": regions})


def _clock(start_response: Any, action: str, value: Any) -> list[bytes]:
    if action == "reset_clock":
        return _json(start_response, "200 OK", {"offset_seconds": reset()})
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 10 * 365 * 86400:
        return _json(
            start_response, "400 Bad Request", {"error": 'expected {"advance_seconds": <seconds >= 0>}'}
        )
    return _json(start_response, "200 OK", {"offset_seconds": advance(float(value))})


def _json(start_response: Any, status: str, body: Any) -> list[bytes]:
    data = json.dumps(body).encode("utf-8")
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
    return [data]
