"""``doctable preflight``: observe before a deploy — foreign tables, what an update will do to a live table,
and whether a borrowed consumer exists and can read the stream."""

from __future__ import annotations

from typing import TYPE_CHECKING

from contract.findings import Finding, Level, destructive
from doctable.capabilities import drift, table_security
from doctable.capabilities.drift import REGISTRY
from doctable.capabilities.ownership import environment_findings
from doctable.capabilities.protocol import Observed, observe
from doctable.core.aws import Aws, user_errors
from doctable.core.command import connect
from doctable.core.render import now_iso
from doctable.core.target import Target
from doctable.lifecycle.results import PreflightResult, findings_of

if TYPE_CHECKING:
    from contract.knobs import DocTableConfig
    from doctable.core.deployment import Deployment

# Finding code -> the property drift and a deploy's changes are compared by (drift.changed_by_deploy's names,
# "stream" and "replicas", which only their knobs change, and "index", each index's declaration). Codes not
# listed (key schema, billing mode): no knob does.
CODE_PROPS = {
    # per index: "index:<name>" (split_drift adds the finding's subject, the index's name)
    **dict.fromkeys(("index.added", "index.removed", "index.replaced", "index.throughput_changed"), "index"),
    **dict.fromkeys(("stream.enabled", "stream.disabled", "stream.recreated"), "stream"),
    **dict.fromkeys(("ttl.enabled", "ttl.disabled", "ttl.attribute_changed"), "ttl"),
    **dict.fromkeys(("pitr.enabled", "pitr.disabled"), "pitr"),
    **dict.fromkeys(("pitr.window_lengthened", "pitr.window_shortened"), "pitr_days"),
    **dict.fromkeys(("deletion_protection.enabled", "deletion_protection.disabled"), "deletion_protection"),
    "table_class.changed": "table_class",
    "throughput.max_changed": "on_demand",
    "throughput.warm_changed": "warm",
    "contributor_insights.changed": "contributor_insights",
    "key.changed": table_security.ENCRYPTION,
    "resource_policy.changed": table_security.RESOURCE_POLICY,
    **dict.fromkeys(("replica.added", "replica.removed"), "replicas"),
}
# The properties reconcile restores itself: drift.detect reports them, with the call. (Warm throughput only
# rises; the indexes and the stream are CloudFormation's alone.)
RECONCILED_PROPS = {"ttl", "pitr", "deletion_protection", "table_class", "on_demand", "pitr_days"}
RECONCILED_PROPS |= {"contributor_insights", *table_security.PROPS}


# ---------------------------------------------------------------------------------------------- runner
def _stack_findings(status: str) -> list[Finding]:
    if status.endswith("_IN_PROGRESS"):
        return [
            Finding(
                Level.STOP, "stack.busy", "stack", status, "a settled stack", "the stack is busy: wait for it",
                before=status,
            )
        ]  # fmt: skip
    if status == "UPDATE_ROLLBACK_FAILED":
        return [
            Finding(
                Level.STOP, "stack.rollback_failed", "stack", status, "a settled stack",
                "continue the rollback first (cloudformation continue-update-rollback), then deploy",
                before=status,
            )
        ]  # fmt: skip
    if status in ("ROLLBACK_COMPLETE", "CREATE_FAILED", "ROLLBACK_FAILED"):
        return [
            Finding(
                Level.WARN, "stack.failed_create", "stack", status, "a settled stack",
                "a failed first create: the deploy deletes and re-creates the stack",
                before=status,
            )
        ]  # fmt: skip
    return []


def run_preflight(aws: Aws, deployment: Deployment) -> list[Finding]:
    """The stack's state, each capability's findings in ``REGISTRY`` order (the live table's with their drift told
    apart), then this run's overrides of the settings file."""
    findings: list[Finding] = _stack_findings(deployment.stack_status or "") if deployment.exists else []
    observed = observe(aws, deployment)
    live: list[Finding] = []
    planned: list[Finding] = []
    for capability in REGISTRY:
        (live if capability.compares_live else planned).extend(capability.findings(observed))
    environment = environment_findings(observed)
    return findings + _table_findings(observed, live) + planned + environment + _override_findings(deployment)


def _table_findings(observed: Observed, diff: list[Finding]) -> list[Finding]:
    """The live table's findings; once it is the stack's, its drift told apart, and a line when a deploy changes
    nothing of it."""
    if not observed.compared:
        return diff
    if observed.deployment.recorded:
        diff = split_drift(observed, diff)
    if not diff:
        return [
            Finding(
                Level.OK, "table.unchanged", "table", "matches the knobs", "—",
                "the update leaves the table's shape as it is",
            )
        ]  # fmt: skip
    if all(f.level is Level.DRIFT for f in diff):
        return [
            Finding(
                Level.OK, "table.no_template_change", "table", "no template change", "—",
                "the update leaves the table as it is (drift below)",
            ),
            *diff,
        ]  # fmt: skip
    return diff


def _override_findings(deployment: Deployment) -> list[Finding]:
    return [
        Finding(
            Level.INFO, "settings.override", o.knob, f"file: {o.file_value}", f"{o.source}: {o.value}",
            f"overrides the settings file for this run only: a deploy without {o.source} deploys {o.file_value!r}",
            before=o.file_value, after=o.value,
        )
        for o in deployment.overrides
    ]  # fmt: skip


def _deploy_changes(prop: str | None, deployed: DocTableConfig, target: DocTableConfig) -> bool:
    if prop == "stream":
        return deployed.stream_view_type != target.stream_view_type
    if prop == "replicas":
        return set(deployed.replicas) != set(target.replicas)
    return prop is not None and drift.changed_by_deploy(prop, deployed, target)


def _drift(finding: Finding, effect: str) -> Finding:
    """``finding`` as drift: the live value differs from the deployed template's, which the deploy keeps."""
    return Finding(
        Level.DRIFT, "drift.detected", finding.subject, finding.live, finding.declared, effect,
        before=finding.before, after=finding.after,
    )  # fmt: skip


def split_drift(observed: Observed, diff: list[Finding]) -> list[Finding]:
    """Tell what the deploy changes (the template's values differ) from drift it will not repair (the live value
    differs from the deployed template's, which the deploy keeps): drift becomes DRIFT findings."""
    deployed, target = observed.deployed, observed.target
    kept: list[Finding] = []
    for finding in diff:
        prop = CODE_PROPS.get(finding.code)
        if prop == "index":
            prop = f"index:{finding.subject}"
        elif finding.code == "table.replaced" and finding.subject.startswith("index "):
            prop = f"index:{finding.subject.removeprefix('index ')}"  # an LSI: its declaration decides
        if finding.level is not Level.CHANGE or _deploy_changes(prop, deployed, target):
            kept.append(finding)
        elif prop not in RECONCILED_PROPS:
            kept.append(
                _drift(
                    finding,
                    "changed behind the stack: the deploy leaves it so (CloudFormation updates only what its "
                    "template changes), and reconcile cannot restore it: restore it by hand or redeploy through a "
                    "knob change",
                )
            )
    for found in drift.detect(observed):
        # An index's drift is the index finding above, told apart already.
        if found.prop.startswith("index:") or drift.changed_by_deploy(found.prop, deployed, target):
            continue
        kept.append(
            Finding(
                Level.DRIFT, "drift.detected", found.subject, found.live, found.declared,
                "changed behind the stack: the deploy will NOT repair it (CloudFormation updates only what its "
                "template changes); `doctable reconcile --apply` restores it"
                if found.op
                else f"changed behind the stack: the deploy will NOT repair it; {found.how}",
                before=found.live, after=found.declared,
            )
        )  # fmt: skip
    return kept


# ---------------------------------------------------------------------------------------------- command
def preflight(target: Target, *, strict: bool = False) -> PreflightResult:
    """What a deploy of ``target`` would do, observed (nothing changed); ``go`` False when a finding stops the
    deploy (STOP; with ``strict``, WARN too)."""
    config, aws, deployment = connect(target, same_region=False, command="preflight")
    with user_errors(f"preflight of {config.stack_name}"):
        findings = run_preflight(aws, deployment)
    stops = [f for f in findings if f.level is Level.STOP]
    warns = [f for f in findings if f.level is Level.WARN]
    return PreflightResult(
        table=config.table_name,
        stack=config.stack_name,
        region=aws.region,
        at=now_iso(),
        go=not (bool(stops) or (strict and bool(warns))),
        strict=strict,
        knobs_source=deployment.knobs_source,
        pending=tuple(p.as_dict() for p in deployment.pending),
        overrides=tuple(o.as_dict() for o in deployment.overrides),
        destructive=tuple(dict.fromkeys(f.code for f in destructive(findings))),
        findings=findings_of([f for f in findings if f.level is not Level.DRIFT]),
        drift=findings_of([f for f in findings if f.level is Level.DRIFT]),
    )
