"""``doctable reconcile``: restore, through the service APIs, each property drifted from the configuration the
stack was deployed with (CloudFormation will not: it only updates what its template changes), on the home table
and, for a global table, on each replica in its region (doctable/capabilities/replicas.py). A dry run by default;
``--apply`` acts, then re-reads and reports what is left. Each subscriber's mapping too (enabled, its filter,
settings and tags as its declaration says: doctable/capabilities/mapping.py), after the table's."""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from contract import names
from doctable.capabilities.drift import Repair, apply_repair, detect, plan_repairs
from doctable.capabilities.mapping import UPDATE_MAPPING, SubscriberDrift, subscriber_drift
from doctable.capabilities.ownership import require_owned_table
from doctable.capabilities.protocol import Drift, observe_table
from doctable.capabilities.repairs import MappingRepair, plan_mapping_repairs, restore_mapping
from doctable.core.answers import error_code
from doctable.core.aws import Aws, failure_fields, user_errors
from doctable.core.command import connect
from doctable.core.errors import RefusedError, UserError
from doctable.core.live import MAPPING_ON_STATES
from doctable.core.render import Progress, now_iso
from doctable.core.target import Target
from doctable.lifecycle.results import DriftRow, ReconcileResult

if TYPE_CHECKING:
    from doctable.core.deployment import Deployment

# DynamoDB's answer to a second TTL change within its interval (about an hour).
TTL_RATE_LIMIT_MESSAGE = "Time to live has been modified multiple times within a fixed interval"
TTL_INTERVAL = timedelta(hours=1)
SETTLED_MAPPING_STATES = (*MAPPING_ON_STATES, "Disabled")


def ttl_rate_limited(exc: ClientError) -> bool:
    return error_code(exc) == "ValidationException" and TTL_RATE_LIMIT_MESSAGE in str(exc)


def _wait_mapping_settled(aws: Aws, uuid: str | None, timeout: float, progress: Progress) -> None:
    """UpdateEventSourceMapping is refused while the mapping is Creating/Updating/...: wait it out (bounded)."""
    lam = aws.client("lambda")

    def probe() -> bool | None:
        return (
            True if lam.get_event_source_mapping(UUID=uuid).get("State") in SETTLED_MAPPING_STATES else None
        )

    settled, _ = progress.wait(f"mapping {uuid} to settle before its update", probe, timeout)
    if settled is None:
        raise UserError(
            f"mapping {uuid} did not settle within {timeout:.0f}s: re-run `doctable reconcile --apply`"
        )


def _step(op: str, subjects: list[str], done: list[str], call: Callable[[], None]) -> None:
    """Make one repair call; a refusal ends the run: its --json error names the step (step, subjects), what was
    restored before it (restored), and AWS's refusal as data (code, action, resource, principal:
    doctable.core.aws)."""
    step = {"step": op, "subjects": ", ".join(subjects), "restored": ", ".join(done)}
    try:
        with user_errors(f"restoring {', '.join(subjects)} ({op})"):
            call()
    except UserError as refused:
        refused.fields = {**step, **refused.fields}
        raise


def _restore(
    aws: Aws, deployment: Deployment, table: dict[str, Any], repair: Repair, done: list[str]
) -> None:
    """One repair of the table or what hangs off it; the TTL rate limit becomes one line saying when to retry."""
    try:
        apply_repair(aws, deployment, table, repair)
    except ClientError as exc:
        if ttl_rate_limited(exc):
            retry_at = (datetime.now(UTC) + TTL_INTERVAL).strftime("%H:%M UTC")
            others = f" ({', '.join(done)} restored)" if done else ""
            raise UserError(
                f"TTL of {table['TableName']} not restored: DynamoDB refused the change "
                f"({TTL_RATE_LIMIT_MESSAGE}): it allows about one TTL change per hour; "
                f"retry `doctable reconcile --apply` after {retry_at}{others}",
                {**failure_fields(exc), "code": "aws.ttl_rate_limited", "retry_after": retry_at},
            ) from exc
        raise


def apply_all(
    aws: Aws,
    deployment: Deployment,
    table: dict[str, Any],
    repairs: list[Repair],
    *,
    timeout: float,
    progress: Progress,
) -> list[str]:
    """Run each repair in order; the TTL rate limit becomes one line saying when to retry (the rest is done)."""
    done: list[str] = []
    for repair in repairs:
        if repair.op == UPDATE_MAPPING:
            _wait_mapping_settled(aws, deployment.out(names.OUT_MAPPING_UUID), timeout, progress)
        _step(
            repair.op,
            repair.subjects,
            done,
            functools.partial(_restore, aws, deployment, table, repair, done),
        )
        progress.say(f"restored {', '.join(repair.subjects)} ({repair.op})")
        done += repair.subjects
    return done


def apply_mapping_repairs(
    aws: Aws, repairs: list[MappingRepair], done: list[str], *, timeout: float, progress: Progress
) -> list[str]:
    """Each subscriber's mapping repairs, in order, after the table's (``done``: restored so far); each update
    waits for its mapping to settle first, and the run waits for them to settle after (so the re-read sees it)."""
    lam, restored = aws.client("lambda"), list(done)
    for repair in repairs:
        if repair.op == UPDATE_MAPPING:
            _wait_mapping_settled(aws, repair.uuid, timeout, progress)
        _step(repair.op, repair.subjects, restored, functools.partial(restore_mapping, lam, repair))
        progress.say(f"restored {', '.join(repair.subjects)} ({repair.op}, subscriber {repair.subscriber})")
        restored += repair.subjects
    for uuid in dict.fromkeys(r.uuid for r in repairs if r.op == UPDATE_MAPPING):
        _wait_mapping_settled(aws, uuid, timeout, progress)
    return restored


def read_drift(aws: Aws, deployment: Deployment) -> tuple[dict[str, Any], list[Drift], list[SubscriberDrift]]:
    """The owned table, its drift and what hangs off it, and each subscriber's mapping drift."""
    table = require_owned_table(aws, deployment, doing="reconcile it")
    return table, detect(observe_table(aws, deployment, table)), subscriber_drift(aws, deployment)


def reconcile(target: Target, *, apply: bool = False, timeout: float = 120.0) -> ReconcileResult:
    """The drift of ``target``'s table, its replicas and its mappings; with ``apply``, the repair calls made (a
    busy mapping awaited up to ``timeout`` seconds) and the drift read again."""
    config, aws, deployment = connect(target, command="reconcile")
    if deployment.exists and not deployment.recorded:
        raise RefusedError(
            f"stack {config.stack_name} records no {names.OUT_KNOBS} output, so its declared configuration is "
            "unknown: redeploy it (the stack then records its knobs) before reconciling"
        )
    progress = Progress("doctable reconcile", quiet=target.quiet)
    with user_errors(f"reading the drift of {config.stack_name}"):
        table, table_drifts, mapping_drifts = read_drift(aws, deployment)
    drifts: list[Drift] = [*table_drifts, *mapping_drifts]
    repairs, mapping_repairs = plan_repairs(table_drifts), plan_mapping_repairs(mapping_drifts)
    calls = len(repairs) + len(mapping_repairs)
    done: list[str] = []
    after = drifts
    if apply and calls:
        done = apply_all(aws, deployment, table, repairs, timeout=timeout, progress=progress)
        done = apply_mapping_repairs(aws, mapping_repairs, done, timeout=timeout, progress=progress)
        with user_errors(f"re-reading {config.stack_name} after the repairs"):
            _, again, again_mappings = read_drift(aws, deployment)
            after = [*again, *again_mappings]
    return ReconcileResult(
        stack=config.stack_name,
        table=deployment.table_name,
        at=now_iso(),
        applied=apply,
        calls=calls,
        drift=tuple(DriftRow.of(d) for d in drifts),
        restored=tuple(done),
        remaining=tuple(DriftRow.of(d) for d in after) if apply else None,
    )
