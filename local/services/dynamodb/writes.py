"""What every writer of a DynamoDB table shares: the write lock, the listeners of item changes and of template
properties, and whether the TTL service is the one deleting. local/services/dynamodb/tables.py calls them; the
replication engine, the Kinesis destination, the global table model and the TTL sweeper use them without
importing the table's adaptations."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

WRITE_LOCK = threading.RLock()
# Other modules' handlers of a template's table properties: (table, properties), on create and on update.
TEMPLATE_HANDLERS: list[Callable[[Any, dict[str, Any]], None]] = []
# Other modules' listeners of each committed item change of a table with a stream: (table, old item, new item),
# called under WRITE_LOCK (a transaction's when it commits); a write that changes nothing is no change.
CHANGE_LISTENERS: list[Callable[[Any, Any, Any], None]] = []
_TTL = threading.local()  # .active: the TTL sweeper is deleting an item


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
