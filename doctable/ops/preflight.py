"""``doctable preflight``: observe before a deploy — foreign tables, what an update will do to a live table,
and whether a borrowed consumer exists and can read the stream."""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass
from typing import Any

from contract import names
from contract.knobs import MANAGED_BY, NONE, OFF, ON, DocTableConfig
from contract.shape import TableShape, table_shape
from doctable.aws import Aws, call_or_none, user_errors
from doctable.ops import consumer_plan, drift, kinesis, mapping_options, table_options, table_security
from doctable.ops.borrowed import consumer_findings, kinesis_stream_findings
from doctable.ops.command import add_common_arguments, connect, guarded, print_json
from doctable.ops.context import Deployment, is_ours, table_tags
from doctable.ops.live import (
    ACTIVE,
    TTL_ENABLING,
    LiveTable,
    LiveTtl,
    key_text,
    pitr_declared,
    pitr_status,
)
from doctable.ops.mapping_plan import MAPPING_SUBJECT, mapping_change
from doctable.ops.ownership import TABLE_TYPE, stack_physical_ids
from doctable.ops.render import now_iso, text_table

STOP, WARN, CHANGE, OK, INFO = "STOP", "WARN", "CHANGE", "OK", "INFO"
DRIFT = "DRIFT"  # changed out of band; the deploy leaves it as it is (CloudFormation repairs no drift)
# Shape-finding subjects reconcile restores itself (drift.table_drift reports them, with the call).
RECONCILED_SUBJECTS = {
    "ttl": "ttl",
    "ttl attribute": "ttl",
    "pitr": "pitr",
    "deletion protection": "deletion_protection",
    **table_options.RECONCILED_SUBJECTS,
    **table_security.SUBJECT_PROPS,
}


@dataclass
class Finding:
    level: str
    subject: str
    live: str
    declared: str
    effect: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


# ------------------------------------------------------------------------------------------ shape diff
def _onoff(value: bool) -> str:
    return ON if value else OFF


def shape_findings(
    config: DocTableConfig, table: dict[str, Any], ttl: dict[str, Any], pitr: str
) -> list[Finding]:
    """Per difference between the live table and the knobs' shape: what the update will do, and what it costs."""
    shape = table_shape(config)
    live = LiveTable.of(table)
    findings: list[Finding] = []
    if not live.keys_match(shape):
        findings.append(
            Finding(
                STOP,
                "key schema",
                live.key_text(),
                key_text(shape.keys),
                "key schema is immutable: this needs a NEW table and a data copy (a migration, not an edit); "
                "CloudFormation cannot replace a table with a fixed name in place",
            )
        )
    findings += _index_findings(shape, live)
    findings += _stream_findings(shape, live, config.has_mapping)
    findings += _ttl_findings(shape, LiveTtl.of(ttl))
    if pitr != pitr_declared(shape):
        findings.append(
            Finding(
                CHANGE,
                "pitr",
                pitr,
                pitr_declared(shape),
                "cheap toggle: enabling bills continuous-backup storage (~table size); disabling drops the "
                "35-day restore window"
                if shape.pitr
                else "cheap toggle: disabling drops the restore window (existing PITR history is lost)",
            )
        )
    if live.deletion_protection != shape.deletion_protection:
        findings.append(
            Finding(
                CHANGE,
                "deletion protection",
                _onoff(live.deletion_protection),
                _onoff(shape.deletion_protection),
                "free toggle" + ("" if shape.deletion_protection else ": the table becomes deletable"),
            )
        )
    if live.billing_mode != shape.billing_mode:
        findings.append(
            Finding(
                CHANGE,
                "billing mode",
                live.billing_mode,
                shape.billing_mode,
                "switches to on-demand; AWS allows one billing-mode flip per ~24 h",
            )
        )
    return findings


def _index_findings(shape: TableShape, live: LiveTable) -> list[Finding]:
    findings: list[Finding] = []
    for index in shape.indexes:
        if index.name not in live.indexes:
            findings.append(
                Finding(
                    CHANGE,
                    index.name,
                    "absent",
                    index.name,
                    f"adds {index.name} to a live table: an ONLINE BACKFILL (minutes to hours on a big table; "
                    "index queries return partial results until IndexStatus=ACTIVE; backfill writes are billed "
                    "per item)",
                )
            )
        elif live.index_status(index.name) != ACTIVE:
            findings.append(
                Finding(
                    WARN,
                    index.name,
                    live.index_status(index.name),
                    ACTIVE,
                    "a backfill/index change is still running: another index change is rejected until it ends",
                )
            )
    for other in live.unexpected_indexes(shape):
        # The project's own index gets its name as the subject; any other index is named as such.
        subject = other if other == names.GSI_NAME else f"index {other}"
        effect = (
            f"DELETES the index {other}: queries on it fail from then on; re-adding it later is a full backfill"
            if other == names.GSI_NAME
            else f"DELETES the index {other}"
        )
        findings.append(
            Finding(CHANGE, subject, "present", NONE if other == names.GSI_NAME else "absent", effect)
        )
    return findings


def _stream_findings(shape: TableShape, live: LiveTable, has_mapping: bool) -> list[Finding]:
    want = shape.stream_view_type
    mapping_note = "; the event-source mapping is recreated on the new stream" if has_mapping else ""
    if want and not live.stream_enabled:
        effect = f"enables the stream: a NEW stream ARN (changes before it are not in the feed){mapping_note}"
        return [Finding(CHANGE, "stream", "disabled", want, effect)]
    if not want and live.stream_enabled:
        effect = (
            "disables the stream: the mapping is deleted first, the stream ARN is retired (records stay "
            "readable 24 h, then the feed is gone)"
        )
        return [Finding(CHANGE, "stream", str(live.stream_view_type), NONE, effect)]
    if want and live.stream_view_type != want:
        effect = (
            "a view-type change is disable + enable: a NEW stream ARN, writes in between are not in the "
            f"feed{mapping_note}"
        )
        return [Finding(CHANGE, "stream view", str(live.stream_view_type), want, effect)]
    return []


def _ttl_findings(shape: TableShape, ttl: LiveTtl) -> list[Finding]:
    want = shape.ttl_attribute
    rate = "TTL changes are rate-limited (about one per table per hour)"
    if ttl.changing and (want is not None) != (ttl.status == TTL_ENABLING):
        effect = f"a TTL change is still in progress; the update's TTL change will be rejected until it ends ({rate})"
        return [
            Finding(
                WARN, "ttl", f"{ttl.status} {ttl.attribute or ''}".strip(), _onoff(want is not None), effect
            )
        ]
    if want and not ttl.on:
        effect = f"enables TTL (free; expiry lags up to ~48 h). {rate}: no other TTL change for ~1 h"
        return [Finding(CHANGE, "ttl", ttl.status, f"{ON} ({want})", effect)]
    if not want and ttl.on:
        return [
            Finding(
                CHANGE,
                "ttl",
                f"{ttl.status} on {ttl.attribute}",
                OFF,
                f"disables TTL: items stop expiring. {rate}",
            )
        ]
    if want and ttl.attribute != want:
        effect = (
            f"an attribute change needs DISABLE then ENABLE — two TTL changes; {rate}, so a one-step update "
            "fails: disable, wait ~1 h, enable"
        )
        return [Finding(CHANGE, "ttl attribute", str(ttl.attribute), want, effect)]
    return []


# ---------------------------------------------------------------------------------------------- runner
def run_preflight(aws: Aws, deployment: Deployment) -> list[Finding]:
    config = deployment.target
    findings: list[Finding] = []
    status = deployment.stack_status or ""
    if deployment.exists:
        if status.endswith("_IN_PROGRESS"):
            findings.append(
                Finding(STOP, "stack", status, "a settled stack", "the stack is busy: wait for it")
            )
        elif status == "UPDATE_ROLLBACK_FAILED":
            findings.append(
                Finding(
                    STOP,
                    "stack",
                    status,
                    "a settled stack",
                    "continue the rollback first (cloudformation continue-update-rollback), then deploy",
                )
            )
        elif status in ("ROLLBACK_COMPLETE", "CREATE_FAILED", "ROLLBACK_FAILED"):
            findings.append(
                Finding(
                    WARN,
                    "stack",
                    status,
                    "a settled stack",
                    "a failed first create: the deploy deletes and re-creates the stack",
                )
            )
    ddb = aws.client("dynamodb")
    table = (call_or_none(ddb.describe_table, TableName=config.table_name) or {}).get("Table")
    resources = stack_physical_ids(aws, deployment)
    in_stack = config.table_name in resources.get(TABLE_TYPE, set())
    stream_arn: str | None = None
    if table is None:
        if in_stack:
            findings.append(
                Finding(
                    WARN,
                    "table",
                    "absent",
                    config.table_name,
                    "the stack lists the table but it is gone "
                    "(deleted behind the stack): an update will not re-create it — destroy and redeploy",
                )
            )
        else:
            findings.append(
                Finding(INFO, "table", "absent", config.table_name, "will be created with the knobs' shape")
            )
    elif not in_stack:
        tags = table_tags(aws, table["TableArn"])
        shown = ", ".join(f"{k}={v}" for k, v in tags.items()) or "no tags"
        where = f"outside stack {config.stack_name}" + ("" if deployment.exists else " (not deployed)")
        if not is_ours(tags):
            findings.append(
                Finding(
                    STOP,
                    "table",
                    f"exists {where}; {shown}",
                    f"ManagedBy={MANAGED_BY}",
                    f"table {config.table_name} exists but is NOT tagged ManagedBy={MANAGED_BY}: adopting it is a "
                    "human decision — stop (pick another table_base, or import it deliberately after review)",
                )
            )
        else:
            findings.append(
                Finding(
                    STOP,
                    "table",
                    f"exists {where}; {shown}",
                    f"in stack {config.stack_name}",
                    "ours by its tags but not this stack's (retained by a teardown, or made by the bash plan): "
                    "CloudFormation cannot create a same-named table — adopting it (`cdk import`) or deleting it is "
                    "a human decision",
                )
            )
    else:
        ttl = ddb.describe_time_to_live(TableName=config.table_name).get("TimeToLiveDescription", {})
        pitr = pitr_status(ddb.describe_continuous_backups(TableName=config.table_name))
        diff = shape_findings(config, table, ttl, pitr)
        diff += [Finding(*f) for f in table_options.findings(ddb, table_shape(config), table)]
        stack_key = deployment.out(names.OUT_KMS_KEY_ARN)
        diff += [Finding(*f) for f in table_security.findings(aws, config, table, stack_key)]
        if deployment.knobs_source == "deployed" and in_stack:
            diff = split_drift(aws, deployment, table, diff)
        if not diff:
            diff = [
                Finding(OK, "table", "matches the knobs", "—", "the update leaves the table's shape as it is")
            ]
        elif all(f.level == DRIFT for f in diff):
            diff.insert(
                0,
                Finding(
                    OK,
                    "table",
                    "no template change",
                    "—",
                    "the update leaves the table as it is (drift below)",
                ),
            )
        findings += diff
        live = LiveTable.of(table)
        if live.stream_view is not None and live.stream_view == config.stream_view_type:
            stream_arn = live.latest_stream_arn
    change = mapping_change(deployment.config, config) if deployment.knobs_source == "deployed" else None
    if change is not None:
        findings.append(Finding(CHANGE, MAPPING_SUBJECT, change.live, change.declared, change.effect))
    if deployment.knobs_source == "deployed":
        findings += [Finding(*f) for f in mapping_options.findings(deployment.config, config)]
        findings += [Finding(*f) for f in kinesis.findings(deployment.config, config)]
        findings += [Finding(*f) for f in consumer_plan.findings(deployment.config, config)]
    findings += [Finding(*f) for f in consumer_findings(aws, config, stream_arn, deployment.out)]
    findings += [Finding(*f) for f in kinesis_stream_findings(aws, config)]
    findings += _knobless_findings(deployment)
    return findings


def _knobless_findings(deployment: Deployment) -> list[Finding]:
    """With no knobs given, preflight compares with the deployed knobs; a deploy without knobs would not."""
    intended = deployment.intended
    if deployment.knobs_source != "deployed" or intended is None or deployment.target is intended:
        return []
    have, want = deployment.config.knob_values(), intended.knob_values()
    differ = [f"{k} {have[k]}→{want[k]}" for k in want if have[k] != want[k]]
    if not differ:
        return []
    return [
        Finding(
            WARN, "knobs", "none given: compared with the deployed knobs", "cdk.json defaults",
            "a deploy WITHOUT knobs (`make deploy`, `cdk deploy`) deploys cdk.json's defaults and changes "
            f"{', '.join(differ)}: give the knobs you mean to deploy",
        )
    ]  # fmt: skip


def _shape_prop(subject: str) -> str | None:
    """Which knob-driven property a shape finding is about (None: one no knob changes: keys, billing)."""
    if subject in RECONCILED_SUBJECTS or subject in table_options.SUBJECT_PROPS:
        return RECONCILED_SUBJECTS.get(subject) or table_options.SUBJECT_PROPS[subject]
    if subject in ("stream", "stream view"):
        return "stream"
    if subject == names.GSI_NAME or subject.startswith("index "):
        return "gsi"
    return None


def _deploy_changes(prop: str | None, deployed: DocTableConfig, target: DocTableConfig) -> bool:
    if prop == "stream":
        return deployed.stream_view_type != target.stream_view_type
    if prop == "gsi":
        return deployed.has_gsi != target.has_gsi
    return prop is not None and drift.changed_by_deploy(prop, deployed, target)


def split_drift(
    aws: Aws, deployment: Deployment, table: dict[str, Any], diff: list[Finding]
) -> list[Finding]:
    """Tell what the deploy changes (the template's values differ) from drift it will not repair (the live value
    differs from the deployed template's, which the deploy keeps): drift becomes DRIFT findings."""
    deployed, target = deployment.config, deployment.target
    kept: list[Finding] = []
    for finding in diff:
        prop = _shape_prop(finding.subject)
        if finding.level != CHANGE or _deploy_changes(prop, deployed, target):
            kept.append(finding)
        elif prop not in RECONCILED_SUBJECTS.values():
            finding.level = DRIFT
            finding.effect = (
                "changed behind the stack: the deploy leaves it so (CloudFormation updates only what its template "
                "changes), and reconcile cannot restore it: restore it by hand or redeploy through a knob change"
            )
            kept.append(finding)
    for found in drift.detect(aws, deployment, table):
        if drift.changed_by_deploy(found.prop, deployed, target):
            continue
        kept.append(
            Finding(
                DRIFT, found.subject, found.live, found.declared,
                "changed behind the stack: the deploy will NOT repair it (CloudFormation updates only what its "
                "template changes); `doctable reconcile --apply` restores it"
                if found.op
                else f"changed behind the stack: the deploy will NOT repair it; {found.how}",
            )
        )  # fmt: skip
    return kept


def render_findings(findings: list[Finding]) -> str:
    return text_table(
        ["level", "subject", "live", "declared", "what the deploy will do"],
        [[f.level, f.subject, f.live, f.declared, f.effect] for f in findings],
        limit=160,
    )


# ---------------------------------------------------------------------------------------------- command
def cmd_preflight(args: argparse.Namespace) -> int:
    config, aws, deployment = connect(args, same_region=False)
    with user_errors(f"preflight of {config.stack_name}"):
        findings = run_preflight(aws, deployment)
    stops = [f for f in findings if f.level == STOP]
    warns = [f for f in findings if f.level == WARN]
    drifted = [f for f in findings if f.level == DRIFT]
    changes = [f for f in findings if f.level != DRIFT]
    blocked = bool(stops) or (args.strict and bool(warns))
    if args.json:
        print_json(
            {
                "kind": "doctable-preflight",
                "table": config.table_name,
                "stack": config.stack_name,
                "region": aws.region,
                "at": now_iso(),
                "go": not blocked,
                "knobs_source": deployment.knobs_source,
                "pending": [p.as_dict() for p in deployment.pending],
                "findings": [f.as_dict() for f in changes],
                "drift": [f.as_dict() for f in drifted],
            }
        )
    else:
        print(f"preflight of {config.stack_name} (table {config.table_name}) in {aws.region}:")
        print("what this deploy changes:")
        print(render_findings(changes))
        print()
        if drifted:
            print(
                "drift CloudFormation will not repair (the deploy leaves it; `doctable reconcile` lists the repairs):"
            )
            print(render_findings(drifted))
            print()
        if stops:
            print(f"STOP: {stops[0].effect}" + (f" (+{len(stops) - 1} more)" if len(stops) > 1 else ""))
        elif blocked:
            print("STOP (--strict): resolve the warnings first")
        else:
            print("go: nothing blocks the deploy" + (f" ({len(warns)} warning(s) above)" if warns else ""))
    return 1 if blocked else 0


def register(sub: Any) -> None:
    preflight = sub.add_parser(
        "preflight",
        help="observe before a deploy: foreign same-named table, what the update does to a live table, consumer",
    )
    add_common_arguments(preflight, json_help="print the findings as JSON on stdout")
    preflight.add_argument("--strict", action="store_true", help="warnings stop the deploy too")
    preflight.add_argument("--ledger-dir", help=argparse.SUPPRESS)
    preflight.set_defaults(func=guarded(cmd_preflight))
