"""The deploy gate: a destructive finding blocks the deploy unless allowed or confirmed at a terminal."""

from __future__ import annotations

import io

import pytest

from contract.findings import Finding, Level
from doctable.lifecycle.deploy import gate, gate_lines

pytestmark = pytest.mark.unit

REMOVED = Finding(Level.CHANGE, "index.removed", "gsi1", "present", "none", "deletes it", True, "gsi1", None)
ADDED = Finding(Level.CHANGE, "index.added", "gsi1", "absent", "gsi1", "backfills", False, None, "gsi1")
DRIFTED = Finding(Level.DRIFT, "drift.detected", "pitr", "off", "on", "drift", True)


def never_asked(prompt: str) -> str:
    raise AssertionError(f"asked {prompt!r} although nothing needs confirming")


def test_nothing_destructive_passes_without_asking() -> None:
    assert gate([ADDED, DRIFTED], allow=False, interactive=True, ask=never_asked) == []


def test_without_a_terminal_a_destructive_change_is_refused() -> None:
    assert gate([ADDED, REMOVED], allow=False, interactive=False, ask=never_asked) == [REMOVED]


def test_allow_destructive_lets_it_through() -> None:
    assert gate([REMOVED], allow=True, interactive=False, ask=never_asked) == []


@pytest.mark.parametrize(
    ("answer", "blocked"), [("yes", []), ("YES ", []), ("y", [REMOVED]), ("", [REMOVED])]
)
def test_at_a_terminal_only_yes_confirms(answer: str, blocked: list[Finding]) -> None:
    shown = io.StringIO()
    assert gate([REMOVED], allow=False, interactive=True, ask=lambda _: answer, stream=shown) == blocked
    assert "index.removed: gsi1 present → none" in shown.getvalue()


def test_end_of_input_at_the_prompt_is_a_no() -> None:
    def closed(prompt: str) -> str:
        raise EOFError

    assert gate([REMOVED], allow=False, interactive=True, ask=closed, stream=io.StringIO()) == [REMOVED]


def test_each_refused_change_is_one_line_with_its_code() -> None:
    assert gate_lines([REMOVED]) == ["index.removed: gsi1 present → none"]
