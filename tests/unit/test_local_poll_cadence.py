"""The local AWS's poll cadence (DOCTABLE_LOCAL_POLL_CADENCE): "write" wakes pollers on every stream write; "aws"
polls a caught-up DynamoDB stream shard four times a second, as Lambda does, whatever is written."""

from __future__ import annotations

import threading
import time

import pytest

from local.pollers import streams as esm
from local.pollers.kinesis import KinesisPoller

pytestmark = pytest.mark.unit


class _Poller:
    def __init__(self) -> None:
        self.stopped = threading.Event()
        self.seen_generation = 0


def _wait_with_a_write(manager: esm.MappingManager, timeout: float) -> float:
    """Seconds ``wait`` took while a stream write woke the manager 20 ms in."""
    poller = _Poller()
    writer = threading.Timer(0.02, manager.wake)
    writer.start()
    started = time.monotonic()
    manager.wait(poller, timeout)  # type: ignore[arg-type]
    writer.join()
    return time.monotonic() - started


def test_the_cadence_is_read_from_the_environment_and_refused_when_unknown() -> None:
    assert esm.poll_cadence({}) == "write"
    assert esm.poll_cadence({esm.CADENCE_ENV: "aws"}) == "aws"
    with pytest.raises(
        ValueError, match=r"DOCTABLE_LOCAL_POLL_CADENCE='fast' is not allowed; allowed: write \| aws"
    ):
        esm.poll_cadence({esm.CADENCE_ENV: "fast"})


def test_a_caught_up_dynamodb_poller_looks_again_after_the_cadences_interval() -> None:
    assert esm.MappingManager(esm.CADENCE_AWS).idle_seconds == 0.25  # four polls a second
    assert esm.MappingManager(esm.CADENCE_WRITE).idle_seconds == esm.POLL_SECONDS  # a safety net: writes wake
    # a Kinesis shard is polled once a second under either cadence
    for cadence in (esm.CADENCE_AWS, esm.CADENCE_WRITE):
        poller = KinesisPoller(esm.MappingManager(cadence), "123456789012", "us-east-1", "uuid")
        assert poller.idle_seconds == 1.0


def test_a_write_wakes_a_poller_only_under_the_write_cadence() -> None:
    # GIVEN a poller waiting 0.3 s, and a write 20 ms into the wait
    # THEN under "aws" it still waits the whole interval; under "write" it wakes long before
    assert _wait_with_a_write(esm.MappingManager(esm.CADENCE_AWS), 0.3) >= 0.3
    assert _wait_with_a_write(esm.MappingManager(esm.CADENCE_WRITE), 30.0) < 29.0


def test_a_stopped_poller_does_not_wait_out_the_interval() -> None:
    # GIVEN a poller under "aws" waiting 30 s  WHEN it is stopped  THEN the wait ends
    manager, poller = esm.MappingManager(esm.CADENCE_AWS), _Poller()
    stopper = threading.Timer(0.02, lambda: (poller.stopped.set(), manager.wake()))
    stopper.start()
    started = time.monotonic()
    manager.wait(poller, 30.0)  # type: ignore[arg-type]
    stopper.join()
    assert time.monotonic() - started < 29.0
