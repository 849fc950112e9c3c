"""What every writer of a DynamoDB table shares: the write lock, and who is writing.

local/services/dynamodb/tables.py owns every write of a table (it alone replaces moto's write operations); the
TTL sweeper (ttl.py) and the replication engine (replication.py) write through moto too, and tables.py imports
the replication engine, so what they share with it lives here, below both.

``ORIGIN`` is the one piece of state that crosses modules: who makes the write in progress on this thread (a
client, the TTL service, the replicator). It is a ``contextvars.ContextVar`` because it must flow through moto's
own call stack, which the caller does not control: the TTL sweeper calls ``Table.delete_item`` and the replicator
``Table.put_item``, and moto calls ``StreamShard.add`` from there. It is set only by ``ttl_deletion`` and
``replicated`` (a ``with`` block that resets it), and read by tables.py, which passes what it read on explicitly
(the Kinesis destination's record, the replication engine's ``on_change``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from contextvars import ContextVar

WRITE_LOCK = threading.RLock()

CLIENT = "client"
TTL_SERVICE = "ttl"
REPLICATOR = "replicator"
ORIGIN: ContextVar[str] = ContextVar("doctable_dynamodb_write_origin", default=CLIENT)


@contextlib.contextmanager
def _writing_as(origin: str) -> Iterator[None]:
    token = ORIGIN.set(origin)
    try:
        yield
    finally:
        ORIGIN.reset(token)


def ttl_deletion() -> contextlib.AbstractContextManager[None]:
    """Deletions in this block are the TTL service's (their REMOVE records carry its userIdentity)."""
    return _writing_as(TTL_SERVICE)


def replicated() -> contextlib.AbstractContextManager[None]:
    """Writes in this block are replicated ones, applied by the replicator: they are not sent on."""
    return _writing_as(REPLICATOR)
