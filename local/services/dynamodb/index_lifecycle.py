"""The life of a GSI added to or deleted from a live table, on a clock a test can move.

An index added by UpdateTable (or a stack update) is CREATING, backfilling, for
``DOCTABLE_LOCAL_GSI_BACKFILL_SECONDS`` (default 2), then ACTIVE; a deleted one is DELETING as long, then gone,
its key attributes pruned from the table's AttributeDefinitions. Nothing runs in the background: ``settle`` works the status out from ``CLOCK``
whenever the table is read, and a waiter (CloudFormation) ``sleep_until``s the clock. The server's clock is
``MonotonicClock``; a unit test installs a ``ManualClock`` and advances it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from local import clock

BACKFILL_ENV = "DOCTABLE_LOCAL_GSI_BACKFILL_SECONDS"
BACKFILL_DEFAULT_SECONDS = 2.0
CREATING, DELETING, ACTIVE = "CREATING", "DELETING", "ACTIVE"


class Clock(Protocol):
    """Where index time comes from: ``now`` in seconds, and a wait until a deadline."""

    def now(self) -> float: ...

    def sleep_until(self, deadline: float) -> None: ...


class MonotonicClock:
    """The server's clock: ``time.monotonic``; a wait sleeps."""

    def now(self) -> float:
        return time.monotonic()

    def sleep_until(self, deadline: float) -> None:
        while (left := deadline - time.monotonic()) > 0:
            time.sleep(min(left, 0.05))


class ManualClock:
    """A test's clock: time moves when the test advances it, or when a waiter (CloudFormation) waits for it."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds

    def sleep_until(self, deadline: float) -> None:
        with self._lock:
            self._now = max(self._now, deadline)


CLOCK: Clock = MonotonicClock()


def backfill_seconds(environ: Mapping[str, str] | None = None) -> float:
    """How long a GSI added to a live table backfills (and a deleted one is DELETING): a number >= 0."""
    raw = (os.environ if environ is None else environ).get(BACKFILL_ENV)
    if raw is None or raw.strip() == "":
        return BACKFILL_DEFAULT_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"{BACKFILL_ENV}={raw!r} is not allowed; allowed: a number of seconds >= 0")
    return value


@dataclass(frozen=True)
class Transition:
    """A GSI on its way: CREATING (backfilling) or DELETING, until ``until`` on ``CLOCK``."""

    status: str
    until: float
    backfilling: bool = False


LOCK = threading.RLock()  # index changes and their settling, one table at a time


def transition_of(index: Any) -> Transition | None:
    """The index's transition, None when it is ACTIVE."""
    value = getattr(index, "doctable_transition", None)
    return value if isinstance(value, Transition) else None


def begin(index: Any, status: str, *, backfilling: bool = False) -> None:
    """Put ``index`` in ``status`` for the backfill time."""
    index.doctable_transition = Transition(status, CLOCK.now() + backfill_seconds(), backfilling)
    index.status = status


def settle(table: Any) -> None:
    """Finish the transitions whose time has come: CREATING -> ACTIVE, DELETING -> gone (its keys pruned);
    none while a test holds the table's backfill (local/clock.py)."""
    now = CLOCK.now()
    if getattr(table, clock.BACKFILL_HELD_ATTRIBUTE, False):  # a test holds the backfill (local/clock.py)
        return
    with LOCK:
        gone: list[Any] = []
        for index in table.global_indexes:
            transition = transition_of(index)
            if transition is None or now < transition.until:
                continue
            index.doctable_transition = None
            if transition.status == CREATING:
                index.status = ACTIVE
            else:
                gone.append(index)
        if gone:  # a new list: readers in other threads may be iterating the old one
            table.global_indexes = [i for i in table.global_indexes if all(i is not g for g in gone)]
            table.attr = definitions_in_use(table, [])


def in_transition(table: Any) -> list[Any]:
    """The table's GSIs still CREATING or DELETING, now."""
    settle(table)
    return [i for i in table.global_indexes if transition_of(i) is not None]


def wait_settled(table: Any) -> None:
    """Block until no GSI of ``table`` is CREATING or DELETING (CloudFormation's wait), on ``CLOCK``."""
    while True:
        pending = [t.until for i in in_transition(table) if (t := transition_of(i)) is not None]
        if not pending:
            return
        # While a test holds the backfill, the deadlines have passed but the indexes wait: look again shortly.
        CLOCK.sleep_until(max(min(pending), CLOCK.now() + 0.05))


# ------------------------------------------------------------------------------ attribute definitions
def key_names(schema: Iterable[Mapping[str, Any]] | None) -> list[str]:
    """The attribute names of a KeySchema."""
    return [str(k["AttributeName"]) for k in schema or []]


def keys_in_use(table: Any) -> list[str]:
    """The key attributes of the table and its indexes, each once, in first-use order."""
    names = key_names(table.schema)
    for index in [*table.indexes, *table.global_indexes]:
        names += key_names(index.schema)
    return list(dict.fromkeys(names))


def definitions_in_use(table: Any, given: Iterable[Mapping[str, Any]] | None) -> list[dict[str, str]]:
    """AttributeDefinitions as DynamoDB keeps them: the attributes a key uses, each with its known type (the
    table's own first, then ``given``), sorted by name; unused ones dropped."""
    types: dict[str, str] = {}
    for definition in [*(given or []), *(table.attr or [])]:  # the table's types win
        types[str(definition["AttributeName"])] = str(definition["AttributeType"])
    used = keys_in_use(table)
    return [{"AttributeName": n, "AttributeType": types[n]} for n in sorted(used) if n in types]
