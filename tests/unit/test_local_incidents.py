"""What the local AWS catches and does not re-raise is recorded (local/incidents.py): where, the exception's type
and message, in the health answer, so a test sees a swallowed failure."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from local import incidents
from local.services.dynamodb import ttl

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    incidents.clear()
    yield
    incidents.clear()


def test_a_failed_ttl_sweep_is_an_incident_and_the_sweeper_lives_on(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a sweep that fails the first time and then succeeds
    calls: list[int] = []
    swept_again = threading.Event()

    def sweep_once() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise KeyError("table vanished")
        swept_again.set()

    monkeypatch.setattr(ttl, "sweep_once", sweep_once)
    sweeper = ttl.TtlSweeper(interval=0.01)
    # WHEN the sweeper runs
    sweeper.start()
    try:
        assert swept_again.wait(10), "the sweeper stopped after its failure"
    finally:
        sweeper.stop()
        sweeper.join(5)
    # THEN the failure is recorded with where it happened, its type and its message
    assert incidents.summary() == {
        "count": 1,
        "recent": [{"where": "ttl.sweep", "type": "KeyError", "message": "'table vanished'"}],
    }


def test_the_record_keeps_the_count_and_the_last_ones() -> None:
    for n in range(incidents.KEPT + 5):
        incidents.record("test.place", ValueError(f"failure {n}"))
    summary = incidents.summary()
    assert summary["count"] == incidents.KEPT + 5
    assert [r["message"] for r in summary["recent"]][-1] == f"failure {incidents.KEPT + 4}"
    assert len(summary["recent"]) == incidents.KEPT
