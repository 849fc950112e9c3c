"""What the local AWS caught and did not re-raise: each broad ``except`` that lets the server go on records the
exception here (where, its type and message), logs it with its traceback, and the health answer carries the
count and the last ones (``incidents``), so a test sees a swallowed failure instead of a quieter server.

A check that decides a request never lands here: a permission check that raises fails the request
(local/auth/middleware.py), and a refusal is an AWS error with AWS's code.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from typing import Any

log = logging.getLogger("doctable.local.incidents")
KEPT = 50  # the last ones the health answer lists; the count covers them all

_LOCK = threading.Lock()
_RECENT: deque[dict[str, str]] = deque(maxlen=KEPT)
_COUNT = 0


def record(where: str, exc: BaseException) -> None:
    """Keep ``exc`` (caught at ``where``, a dotted name of the place) and log it with its traceback."""
    global _COUNT
    entry = {"where": where, "type": type(exc).__name__, "message": str(exc)[:500]}
    with _LOCK:
        _COUNT += 1
        _RECENT.append(entry)
    log.error("%s: %s: %s", where, entry["type"], entry["message"], exc_info=exc)


def summary() -> dict[str, Any]:
    """The health answer's ``incidents``: how many were recorded since the start, and the last ``KEPT``."""
    with _LOCK:
        return {"count": _COUNT, "recent": list(_RECENT)}


def clear() -> None:
    """Forget every record (tests that run the local AWS in process)."""
    global _COUNT
    with _LOCK:
        _COUNT = 0
        _RECENT.clear()
