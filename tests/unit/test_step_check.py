"""A multi-step index deploy reads the live table and the gate's findings again before each update and stops,
as data, when they no longer match its plan (doctable/lifecycle/step_check.py, through index_steps.deploy_steps):
the plan's reads stubbed, the deploy's updates recorded."""

from __future__ import annotations

from typing import Any

import pytest

from contract.findings import Finding, Level
from doctable.capabilities.indexes import CREATE, DELETE, Step
from doctable.lifecycle import index_steps
from doctable.lifecycle.step_check import step_checker

pytestmark = pytest.mark.unit


class Table:
    """The live table as the checker's reads see it: the steps it still needs, the indexes busy, the findings."""

    def __init__(self, steps: list[Step]) -> None:
        self.steps, self.busy, self.findings = list(steps), [], []  # type: list[Step], list[str], list[Finding]

    def plan(self, *_: Any) -> index_steps.IndexPlan:
        return index_steps.IndexPlan(changes=None, steps=list(self.steps), busy=list(self.busy))  # type: ignore[arg-type]


class Deployment:
    table_name = "tbl"


STEPS = [Step(CREATE, "byA", ()), Step(CREATE, "byB", ()), Step(DELETE, "old", ())]
REMOVED = Finding(
    Level.CHANGE, "index.removed", "old", "present", "absent", "queries on it fail", destructive=True
)


def run(table: Table, *, on_update: Any = None) -> tuple[int, list[dict[str, Any]], list[str]]:
    plan = table.plan()
    check = step_checker(
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        plan,
        [REMOVED],
        reread=Deployment,  # type: ignore[arg-type]
        plan_indexes=table.plan,
        preflight=lambda *_: list(table.findings),
    )
    records: list[dict[str, Any]] = []
    said: list[str] = []

    def update(command: list[str]) -> int:
        done = table.steps.pop(0)  # the update applies its step to the live table
        if on_update is not None:
            on_update(done)
        return 0

    def settled(self: Any) -> float:
        return 0.0

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(index_steps.IndexWatch, "__enter__", lambda self: self)
        patch.setattr(index_steps.IndexWatch, "__exit__", lambda self, *exc: None)
        patch.setattr(index_steps.IndexWatch, "wait_settled", settled)
        patch.setattr(index_steps, "step_arguments", lambda *_: [])
        patch.setattr(index_steps, "table_shape", lambda config: None)
        code = index_steps.deploy_steps(
            None,  # type: ignore[arg-type]
            "tbl",
            None,  # type: ignore[arg-type]
            plan,
            ["cdk", "deploy"],
            update,
            said.append,
            records,
            index_timeout=1,
            check=check,
        )
    return code, records, said


def test_a_plan_that_still_holds_runs_every_step() -> None:
    code, records, _ = run(Table(STEPS))
    assert code == 0 and [r["index"] for r in records] == ["byA", "byB", "old"]
    assert not any("stopped" in r for r in records)


def test_an_index_changed_around_the_deploy_stops_it_before_the_next_step_as_data() -> None:
    table = Table(STEPS)

    def someone_else(done: Step) -> None:
        if done.index == "byA":  # meanwhile, the console deletes the old index
            table.steps = [s for s in table.steps if s.index != "old"]

    code, records, said = run(table, on_update=someone_else)
    # THEN the deploy stopped before update 2, saying which step and what changed, and ran nothing more
    assert code == 1
    stopped = records[-1]["stopped"]
    assert stopped["update"] == 2 and stopped["index"] == "byB" and stopped["action"] == CREATE
    assert stopped["changed"] == [
        f"the live table needs {CREATE} byB where the plan had {CREATE} byB, {DELETE} old"
    ]
    assert [r["index"] for r in records] == ["byA", "byB"] and "stopped before update 2" in said[-1]


def test_a_new_destructive_finding_or_a_busy_index_stops_it() -> None:
    table = Table(STEPS)
    dropped = Finding(
        Level.CHANGE, "index.removed", "byZ", "present", "absent", "queries fail", destructive=True
    )

    def someone_else(done: Step) -> None:
        table.findings = [REMOVED, dropped]  # the gate approved removing `old`, never `byZ`
        table.busy = ["byQ"]

    code, records, _ = run(table, on_update=someone_else)
    assert code == 1
    assert records[-1]["stopped"]["changed"] == [
        "index byQ is changing outside this deploy",
        "the gate now finds index.removed (byZ)",
    ]
