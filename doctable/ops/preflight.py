"""``doctable preflight``: observe before a deploy — foreign tables, what an update will do to a live table,
and whether a borrowed consumer exists and can read the stream."""

from __future__ import annotations

import argparse
from typing import Any

from contract import names
from contract.findings import Finding, Level, destructive
from contract.knobs import MANAGED_BY, NONE, OFF, ON, RETAINING_ENVS, DocTableConfig
from contract.shape import IndexShape, TableShape, table_shape
from doctable.aws import Aws, call_or_none, user_errors
from doctable.ops import consumer_plan, drift, kinesis, mapping_options, table_options, table_security
from doctable.ops.borrowed import consumer_findings, kinesis_stream_findings
from doctable.ops.command import add_common_arguments, connect, guarded, print_json
from doctable.ops.context import Deployment, is_ours, table_tags
from doctable.ops.live import (
    ACTIVE,
    PITR_ENABLED,
    TTL_ENABLING,
    LiveTable,
    LiveTtl,
    key_text,
    pitr_declared,
    pitr_status,
)
from doctable.ops.mapping_plan import mapping_change
from doctable.ops.ownership import TABLE_TYPE, stack_physical_ids
from doctable.ops.render import now_iso, text_table

# Finding code -> the property drift and a deploy's changes are compared by (drift.changed_by_deploy's names,
# and "gsi"/"stream", which only their knobs change). Codes not listed (key schema, billing mode): no knob does.
CODE_PROPS = {
    **dict.fromkeys(("index.added", "index.removed", "index.replaced"), "gsi"),
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
}
# The properties reconcile restores itself: drift.detect reports them, with the call. (Warm throughput only
# rises; the indexes and the stream are CloudFormation's alone.)
RECONCILED_PROPS = {"ttl", "pitr", "deletion_protection", "table_class", "on_demand", "pitr_days"}
RECONCILED_PROPS |= {"contributor_insights", *table_security.PROPS}
# Environments whose data outlives the stack: a table there that becomes deletable puts that data at risk.
DELETION_GUARDED_ENVS = RETAINING_ENVS


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
                Level.STOP, "table.replaced", "key schema", live.key_text(), key_text(shape.keys),
                "key schema is immutable: this needs a NEW table and a data copy (a migration, not an edit); "
                "CloudFormation cannot replace a table with a fixed name in place",
                True, [f"{k} {v} {live.types.get(k, '?')}" for k, v in live.keys.items()],
                [f"{k.name} {k.key_type} {k.type}" for k in shape.keys],
            )
        )  # fmt: skip
    findings += _index_findings(shape, live)
    findings += _stream_findings(shape, live, config.has_mapping)
    findings += _ttl_findings(shape, LiveTtl.of(ttl))
    if pitr != pitr_declared(shape):
        was = pitr == PITR_ENABLED
        findings.append(
            Finding(
                Level.CHANGE, "pitr.enabled" if shape.pitr else "pitr.disabled", "pitr", pitr, pitr_declared(shape),
                "cheap toggle: enabling bills continuous-backup storage (~table size); disabling drops the "
                "35-day restore window"
                if shape.pitr
                else "cheap toggle: disabling drops the restore window (existing PITR history is lost)",
                not shape.pitr, was, shape.pitr,
            )
        )  # fmt: skip
    if live.deletion_protection != shape.deletion_protection:
        off = not shape.deletion_protection
        code = "deletion_protection.disabled" if off else "deletion_protection.enabled"
        findings.append(
            Finding(
                Level.CHANGE, code, "deletion protection",
                _onoff(live.deletion_protection), _onoff(shape.deletion_protection),
                "free toggle" + (": the table becomes deletable" if off else ""),
                off and config.env in DELETION_GUARDED_ENVS, live.deletion_protection, shape.deletion_protection,
            )
        )  # fmt: skip
    if live.billing_mode != shape.billing_mode:
        findings.append(
            Finding(
                Level.CHANGE, "table.billing_mode_changed", "billing mode", live.billing_mode, shape.billing_mode,
                "switches to on-demand; AWS allows one billing-mode flip per ~24 h",
                False, live.billing_mode, shape.billing_mode,
            )
        )  # fmt: skip
    return findings


def _index_form(keys: dict[str, str], projection: str | None) -> dict[str, Any]:
    """An index as before/after values: its keys (attribute -> KeyType) and projection type."""
    return {"keys": keys, "projection": projection}


def _index_text(form: dict[str, Any]) -> str:
    return (
        ", ".join(f"{name} {kind}" for name, kind in form["keys"].items())
        + f"; projection {form['projection']}"
    )


def _index_differs(index: IndexShape, live: LiveTable) -> bool:
    projection = ((live.indexes.get(index.name) or {}).get("Projection") or {}).get("ProjectionType")
    return not live.index_keys_match(index) or projection not in (None, index.projection)


def _index_findings(shape: TableShape, live: LiveTable) -> list[Finding]:
    findings: list[Finding] = []
    for index in shape.indexes:
        if index.name not in live.indexes:
            findings.append(
                Finding(
                    Level.CHANGE, "index.added", index.name, "absent", index.name,
                    f"adds {index.name} to a live table: an ONLINE BACKFILL (minutes to hours on a big table; "
                    "index queries return partial results until IndexStatus=ACTIVE; backfill writes are billed "
                    "per item)",
                    False, None, index.name,
                )
            )  # fmt: skip
        elif live.index_status(index.name) != ACTIVE:
            findings.append(
                Finding(
                    Level.WARN, "index.busy", index.name, live.index_status(index.name), ACTIVE,
                    "a backfill/index change is still running: another index change is rejected until it ends",
                    False, live.index_status(index.name), ACTIVE,
                )
            )  # fmt: skip
        elif _index_differs(index, live):
            described = live.indexes[index.name]
            have = _index_form(
                {k["AttributeName"]: k["KeyType"] for k in described.get("KeySchema", [])},
                (described.get("Projection") or {}).get("ProjectionType"),
            )
            want = _index_form({k.name: k.key_type for k in index.keys}, index.projection)
            findings.append(
                Finding(
                    Level.CHANGE, "index.replaced", index.name, _index_text(have), _index_text(want),
                    f"an index's keys and projection cannot change in place: {index.name} is DELETED and created "
                    "again (queries on it fail until the new one's full backfill ends)",
                    True, have, want,
                )
            )  # fmt: skip
    for other in live.unexpected_indexes(shape):
        # The project's own index gets its name as the subject; any other index is named as such.
        subject = other if other == names.GSI_NAME else f"index {other}"
        effect = (
            f"DELETES the index {other}: queries on it fail from then on; re-adding it later is a full backfill"
            if other == names.GSI_NAME
            else f"DELETES the index {other}"
        )
        declared = NONE if other == names.GSI_NAME else "absent"
        findings.append(
            Finding(Level.CHANGE, "index.removed", subject, "present", declared, effect, True, other, None)
        )
    return findings


def _stream_findings(shape: TableShape, live: LiveTable, has_mapping: bool) -> list[Finding]:
    want = shape.stream_view_type
    have = live.stream_view_type
    mapping_note = "; the event-source mapping is recreated on the new stream" if has_mapping else ""
    if want and not live.stream_enabled:
        effect = f"enables the stream: a NEW stream ARN (changes before it are not in the feed){mapping_note}"
        return [
            Finding(Level.CHANGE, "stream.enabled", "stream", "disabled", want, effect, False, None, want)
        ]
    if not want and live.stream_enabled:
        effect = (
            "disables the stream: the mapping is deleted first, the stream ARN is retired (records stay "
            "readable 24 h, then the feed is gone)"
        )
        return [Finding(Level.CHANGE, "stream.disabled", "stream", str(have), NONE, effect, True, have, None)]
    if want and have != want:
        effect = (
            "a view-type change is disable + enable: a NEW stream ARN, writes in between are not in the "
            f"feed{mapping_note}"
        )
        return [
            Finding(
                Level.CHANGE, "stream.recreated", "stream view", str(have), want, effect, True, have, want
            )
        ]
    return []


def _ttl_findings(shape: TableShape, ttl: LiveTtl) -> list[Finding]:
    want = shape.ttl_attribute
    rate = "TTL changes are rate-limited (about one per table per hour)"
    if ttl.changing and (want is not None) != (ttl.status == TTL_ENABLING):
        effect = f"a TTL change is still in progress; the update's TTL change will be rejected until it ends ({rate})"
        live = f"{ttl.status} {ttl.attribute or ''}".strip()
        return [
            Finding(
                Level.WARN, "ttl.busy", "ttl", live, _onoff(want is not None), effect, False, ttl.status, want
            )
        ]
    # Turning TTL on (on any attribute) lets DynamoDB delete every item whose expiry is already past.
    if want and not ttl.on:
        effect = f"enables TTL (free; expiry lags up to ~48 h). {rate}: no other TTL change for ~1 h"
        return [
            Finding(
                Level.CHANGE, "ttl.enabled", "ttl", ttl.status, f"{ON} ({want})", effect, True, None, want
            )
        ]
    if not want and ttl.on:
        live = f"{ttl.status} on {ttl.attribute}"
        effect = f"disables TTL: items stop expiring. {rate}"
        return [Finding(Level.CHANGE, "ttl.disabled", "ttl", live, OFF, effect, False, ttl.attribute, None)]
    if want and ttl.attribute != want:
        effect = (
            f"an attribute change needs DISABLE then ENABLE — two TTL changes; {rate}, so a one-step update "
            "fails: disable, wait ~1 h, enable"
        )
        return [
            Finding(
                Level.CHANGE, "ttl.attribute_changed", "ttl attribute", str(ttl.attribute), want, effect,
                True, ttl.attribute, want,
            )
        ]  # fmt: skip
    return []


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


def _table_absent(config: DocTableConfig, in_stack: bool) -> Finding:
    if in_stack:
        return Finding(
            Level.WARN, "table.missing", "table", "absent", config.table_name,
            "the stack lists the table but it is gone "
            "(deleted behind the stack): an update will not re-create it — destroy and redeploy",
            before=None, after=config.table_name,
        )  # fmt: skip
    return Finding(
        Level.INFO, "table.created", "table", "absent", config.table_name, "will be created with the knobs' shape",
        before=None, after=config.table_name,
    )  # fmt: skip


def _table_outside(aws: Aws, deployment: Deployment, table: dict[str, Any]) -> Finding:
    """A same-named table the stack does not hold: someone else's, or ours left outside a stack."""
    config = deployment.target
    tags = table_tags(aws, table["TableArn"])
    shown = ", ".join(f"{k}={v}" for k, v in tags.items()) or "no tags"
    where = f"outside stack {config.stack_name}" + ("" if deployment.exists else " (not deployed)")
    if not is_ours(tags):
        return Finding(
            Level.STOP, "table.foreign", "table", f"exists {where}; {shown}", f"ManagedBy={MANAGED_BY}",
            f"table {config.table_name} exists but is NOT tagged ManagedBy={MANAGED_BY}: adopting it is a "
            "human decision — stop (pick another table_base, or import it deliberately after review)",
            before=tags, after={"ManagedBy": MANAGED_BY},
        )  # fmt: skip
    return Finding(
        Level.STOP, "table.unmanaged", "table", f"exists {where}; {shown}", f"in stack {config.stack_name}",
        "ours by its tags but not this stack's (retained by a teardown, or made by the bash plan): "
        "CloudFormation cannot create a same-named table — adopting it (`cdk import`) or deleting it is "
        "a human decision",
        before=tags, after=config.stack_name,
    )  # fmt: skip


def run_preflight(aws: Aws, deployment: Deployment) -> list[Finding]:
    config = deployment.target
    findings: list[Finding] = _stack_findings(deployment.stack_status or "") if deployment.exists else []
    ddb = aws.client("dynamodb")
    table = (call_or_none(ddb.describe_table, TableName=config.table_name) or {}).get("Table")
    resources = stack_physical_ids(aws, deployment)
    in_stack = config.table_name in resources.get(TABLE_TYPE, set())
    stream_arn: str | None = None
    if table is None:
        findings.append(_table_absent(config, in_stack))
    elif not in_stack:
        findings.append(_table_outside(aws, deployment, table))
    else:
        ttl = ddb.describe_time_to_live(TableName=config.table_name).get("TimeToLiveDescription", {})
        pitr = pitr_status(ddb.describe_continuous_backups(TableName=config.table_name))
        diff = shape_findings(config, table, ttl, pitr)
        diff += table_options.findings(ddb, table_shape(config), table)
        diff += table_security.findings(aws, config, table, deployment.out(names.OUT_KMS_KEY_ARN))
        if deployment.recorded:
            diff = split_drift(aws, deployment, table, diff)
        if not diff:
            diff = [
                Finding(
                    Level.OK, "table.unchanged", "table", "matches the knobs", "—",
                    "the update leaves the table's shape as it is",
                )
            ]  # fmt: skip
        elif all(f.level is Level.DRIFT for f in diff):
            diff.insert(
                0,
                Finding(
                    Level.OK, "table.no_template_change", "table", "no template change", "—",
                    "the update leaves the table as it is (drift below)",
                ),
            )  # fmt: skip
        findings += diff
        live = LiveTable.of(table)
        if live.stream_view is not None and live.stream_view == config.stream_view_type:
            stream_arn = live.latest_stream_arn
    if deployment.recorded:
        change = mapping_change(deployment.config, config)
        if change is not None:
            findings.append(change.finding())
        findings += mapping_options.findings(deployment.config, config)
        findings += kinesis.findings(deployment.config, config)
        findings += consumer_plan.findings(deployment.config, config)
    findings += consumer_findings(aws, config, stream_arn, deployment.out)
    findings += kinesis_stream_findings(aws, config)
    return findings + [
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
    if prop == "gsi":
        return deployed.has_gsi != target.has_gsi
    return prop is not None and drift.changed_by_deploy(prop, deployed, target)


def _drift(finding: Finding, effect: str) -> Finding:
    """``finding`` as drift: the live value differs from the deployed template's, which the deploy keeps."""
    return Finding(
        Level.DRIFT, "drift.detected", finding.subject, finding.live, finding.declared, effect,
        before=finding.before, after=finding.after,
    )  # fmt: skip


def split_drift(
    aws: Aws, deployment: Deployment, table: dict[str, Any], diff: list[Finding]
) -> list[Finding]:
    """Tell what the deploy changes (the template's values differ) from drift it will not repair (the live value
    differs from the deployed template's, which the deploy keeps): drift becomes DRIFT findings."""
    deployed, target = deployment.config, deployment.target
    kept: list[Finding] = []
    for finding in diff:
        prop = CODE_PROPS.get(finding.code)
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
    for found in drift.detect(aws, deployment, table):
        if drift.changed_by_deploy(found.prop, deployed, target):
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


def _level_text(finding: Finding) -> str:
    """The level, with ``!`` on a destructive change (the deploy gate asks before it goes ahead)."""
    return f"{finding.level}!" if destructive([finding]) else str(finding.level)


def render_findings(findings: list[Finding]) -> str:
    return text_table(
        ["level", "code", "subject", "live", "declared", "what the deploy will do"],
        [[_level_text(f), f.code, f.subject, f.live, f.declared, f.effect] for f in findings],
        limit=160,
    )


# ---------------------------------------------------------------------------------------------- command
def cmd_preflight(args: argparse.Namespace) -> int:
    config, aws, deployment = connect(args, same_region=False)
    with user_errors(f"preflight of {config.stack_name}"):
        findings = run_preflight(aws, deployment)
    stops = [f for f in findings if f.level is Level.STOP]
    warns = [f for f in findings if f.level is Level.WARN]
    drifted = [f for f in findings if f.level is Level.DRIFT]
    changes = [f for f in findings if f.level is not Level.DRIFT]
    dangerous = destructive(findings)
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
                "overrides": [o.as_dict() for o in deployment.overrides],
                "destructive": list(dict.fromkeys(f.code for f in dangerous)),
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
        if dangerous:
            print(
                f"{len(dangerous)} destructive change(s), marked ! above "
                f"({', '.join(dict.fromkeys(f.code for f in dangerous))}): the deploy asks before it goes ahead"
            )
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
