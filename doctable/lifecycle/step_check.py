"""Before each update of a multi-step index deploy (doctable/lifecycle/index_steps.py), the live table and the
gate's findings read again and held to the deploy's plan: the environment's lock keeps another doctable command
out, but not a change made around doctable (the console, ``npx cdk deploy``, another tool), and the plan and the
gate's verdict were made before the first update, which may be hours (of backfills) earlier. When they differ,
the deploy stops before the step, as data: which step, and what changed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from contract.findings import Finding, Level, destructive

if TYPE_CHECKING:
    from contract.knobs import DocTableConfig
    from contract.settings.resolve import Resolved
    from doctable.core.aws import Aws
    from doctable.core.deployment import Deployment
    from doctable.lifecycle.index_steps import IndexPlan


@dataclass(frozen=True)
class StepStale:
    """The update ``update`` (from 1) was not run: what changed since the deploy planned it."""

    update: int
    action: str
    index: str
    changed: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "update": self.update,
            "action": self.action,
            "index": self.index,
            "changed": list(self.changed),
        }

    def line(self) -> str:
        return (
            f"stopped before update {self.update} ({self.action} index {self.index}): "
            + "; ".join(self.changed)
            + ": nothing more deployed; run doctable deploy again to plan from the table as it is now"
        )


def _gate_keys(findings: Sequence[Finding]) -> set[tuple[str, str]]:
    """What the gate decides on: the destructive findings and the STOPs, by code and subject."""
    kept = [*destructive(list(findings)), *(f for f in findings if f.level is Level.STOP)]
    return {(f.code, f.subject) for f in kept}


def step_checker(
    aws: Aws,
    config: DocTableConfig,
    plan: IndexPlan,
    gate_findings: Sequence[Finding],
    *,
    reread: Callable[[], Deployment],
    plan_indexes: Callable[[Aws, Deployment, DocTableConfig], IndexPlan | None],
    preflight: Callable[[Aws, Deployment], list[Finding]],
) -> Callable[[int], StepStale | None]:
    """``check(number)`` before update ``number`` (from 0): None when the live table still needs exactly the
    plan's remaining steps, no index is busy with a change the deploy did not make, and preflight finds nothing
    destructive or STOP the gate did not see; else the :class:`StepStale`."""
    approved = _gate_keys(gate_findings)

    def check(number: int) -> StepStale | None:
        step = plan.steps[number]
        deployment = reread()
        fresh = plan_indexes(aws, deployment, config)
        changed: list[str] = []
        expected = [(s.action, s.index) for s in plan.steps[number:]]
        if fresh is None:
            changed.append(f"table {deployment.table_name} is no longer the stack's or is gone")
        else:
            now = [(s.action, s.index) for s in fresh.steps]
            if now != expected:
                changed.append(
                    "the live table needs "
                    + (", ".join(f"{a} {i}" for a, i in now) or "no index change")
                    + " where the plan had "
                    + ", ".join(f"{a} {i}" for a, i in expected)
                )
            if fresh.busy:
                changed.append(f"index {', '.join(fresh.busy)} is changing outside this deploy")
        new = sorted(_gate_keys(preflight(aws, deployment)) - approved)
        changed += [f"the gate now finds {code} ({subject})" for code, subject in new]
        if not changed:
            return None
        return StepStale(number + 1, step.action, step.index, tuple(changed))

    return check


def deploy_checker(
    aws: Aws, resolved: Resolved, plan: IndexPlan, gate_findings: Sequence[Finding]
) -> Callable[[int], StepStale | None]:
    """:func:`step_checker` as ``doctable deploy`` runs it: the stack described again (its recorded knobs and the
    run's settings, as the deploy read it), the index plan and preflight as the deploy made them."""
    from doctable.core.command import use_settings
    from doctable.core.context import describe_stack
    from doctable.core.deployment import use_deployed_knobs
    from doctable.lifecycle.index_steps import plan_indexes
    from doctable.lifecycle.preflight import run_preflight

    def reread() -> Deployment:
        return use_settings(use_deployed_knobs(describe_stack(aws, resolved.config)), resolved)

    return step_checker(
        aws, resolved.config, plan, gate_findings,
        reread=reread, plan_indexes=plan_indexes, preflight=run_preflight,
    )  # fmt: skip
