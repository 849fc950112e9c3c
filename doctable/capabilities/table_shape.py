"""The table itself against the knobs' shape (``contract.shape.TableShape``): its key schema, indexes, stream, TTL,
PITR, deletion protection and billing mode; what a deploy changes of them and costs (preflight), and the drift of
TTL, PITR and deletion protection with the calls that restore it (reconcile)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from contract.findings import Finding, Level
from contract.knobs import NONE, OFF, ON, DocTableConfig
from contract.shape import IndexShape, TableShape, table_shape
from doctable.capabilities import indexes
from doctable.capabilities.protocol import Drift, Observed, drift_text
from doctable.capabilities.repairs import PITR_CALL, TTL, UPDATE_TABLE, restore_setting
from doctable.core.live import (
    ACTIVE,
    PITR_ENABLED,
    TTL_ENABLING,
    LiveTable,
    LiveTtl,
    key_text,
    pitr_declared,
)

if TYPE_CHECKING:
    from doctable.core.aws import Aws
    from doctable.core.deployment import Deployment


# ------------------------------------------------------------------------------------------- preflight
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
    findings += _index_findings(shape, table)
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
                # destructive where the data outlives the stack: a table there that becomes deletable risks it
                off and config.retain_on_delete, live.deletion_protection, shape.deletion_protection,
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


def _index_findings(shape: TableShape, table: dict[str, Any]) -> list[Finding]:
    """Each index change with its code; several GSI creations/deletions add a line on how they are applied."""
    changes = indexes.index_changes(shape, table)
    live = LiveTable.of(table)
    findings: list[Finding] = []
    busy = [name for name in changes.live if live.index_status(name) != ACTIVE]
    for name in busy:
        status = live.index_status(name)
        findings.append(
            Finding(
                Level.WARN, "index.busy", name, status, ACTIVE,
                "a backfill/index change is still running: another index change is rejected until it ends "
                "(doctable deploy waits for it)",
                False, status, ACTIVE,
            )
        )  # fmt: skip
    for name in changes.added:
        index = changes.declared[name]
        findings.append(
            Finding(
                Level.CHANGE, "index.added", name, "absent", indexes.index_text(index),
                f"adds {name} to a live table: an ONLINE BACKFILL (minutes to hours on a big table; queries on it "
                "are refused until IndexStatus=ACTIVE; backfill writes are billed per item)",
                False, None, name,
            )
        )  # fmt: skip
    for name in changes.replaced:
        have, want = changes.live[name], changes.declared[name]
        findings.append(
            Finding(
                Level.CHANGE, "index.replaced", name, indexes.index_text(have), indexes.index_text(want),
                f"an index's keys and projection cannot change in place: {name} is DELETED, then created again in "
                "a second update (queries on it fail until the new one's full backfill ends)",
                True, indexes.index_form(have), indexes.index_form(want),
            )
        )  # fmt: skip
    for name in changes.in_place:
        have, want = changes.live[name], changes.declared[name]
        findings.append(
            Finding(
                Level.CHANGE, "index.throughput_changed", name,
                _throughput_text(have), _throughput_text(want),
                "the index's on-demand cap or warm throughput changes in place",
                False, _throughput_form(have), _throughput_form(want),
            )
        )  # fmt: skip
    for name in changes.removed:
        findings.append(
            Finding(
                Level.CHANGE, "index.removed", name, indexes.index_text(changes.live[name]), "absent",
                f"DELETES the index {name}: queries on it fail from then on; re-adding it later is a full backfill",
                True, name, None,
            )
        )  # fmt: skip
    for name in changes.local_changed:
        was, will = changes.live.get(name), changes.declared.get(name)
        findings.append(
            Finding(
                Level.CHANGE, "table.replaced", f"index {name}",
                indexes.index_text(was) if was else "absent", indexes.index_text(will) if will else "absent",
                "a local secondary index exists only from the table's creation: adding, removing or changing one "
                "needs a NEW table and a data copy; CloudFormation cannot replace a table with a fixed name, so "
                "the update fails (a migration, not an edit)",
                True, indexes.index_form(was) if was else None, indexes.index_form(will) if will else None,
            )
        )  # fmt: skip
    if changes.updates_needed > 1:
        findings.append(
            Finding(
                Level.INFO, "index.multi_step", "indexes", f"{len(changes.live)} live",
                f"{changes.creations} to create, {changes.deletions} to delete",
                f"CloudFormation takes one GSI creation or deletion per update: doctable deploy applies these "
                f"as {changes.updates_needed} successive updates, each waiting for its index (npx cdk deploy "
                "would fail)",
                False, changes.updates_needed, None,
            )
        )  # fmt: skip
    return findings


def _throughput_form(index: IndexShape) -> dict[str, Any]:
    return {"max": index.on_demand_throughput or {}, "warm": index.warm_throughput or {}}


def _throughput_text(index: IndexShape) -> str:
    caps = index.on_demand_throughput or {}
    warm = index.warm_throughput or {}
    parts = [f"{k} {v}" for k, v in {**caps, **warm}.items()]
    return ", ".join(parts) or "no cap"


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


# --------------------------------------------------------------------------------------- drift, repairs
def differences(config: DocTableConfig, table: dict[str, Any], ttl: dict[str, Any], pitr: str) -> list[Drift]:
    """TTL, PITR and deletion protection of a live table against ``config`` (the deployed knobs)."""
    shape = table_shape(config)
    drifts: list[Drift] = []
    live_ttl = LiveTtl.of(ttl)
    if not live_ttl.matches(shape):
        live = live_ttl.status + (f" on {live_ttl.attribute}" if live_ttl.attribute else "")
        want = shape.ttl_attribute
        if want is None:
            drifts.append(
                Drift(
                    "ttl",
                    "ttl",
                    live,
                    "DISABLED",
                    TTL,
                    {"Enabled": False, "AttributeName": live_ttl.attribute},
                )
            )
        elif live_ttl.on:  # on, but on another attribute: disabling and enabling are two rate-limited changes
            drifts.append(
                Drift(
                    "ttl", "ttl", live, f"ENABLED on {want}", None,
                    how=f"disable TTL on {live_ttl.attribute}, wait for the TTL rate limit (~1 h), enable it on {want}",
                )
            )  # fmt: skip
        else:
            drifts.append(
                Drift("ttl", "ttl", live, f"ENABLED on {want}", TTL, {"Enabled": True, "AttributeName": want})
            )
    if pitr != pitr_declared(shape):
        drifts.append(
            Drift(
                "pitr", "pitr", pitr, pitr_declared(shape), PITR_CALL,
                {"PointInTimeRecoveryEnabled": shape.pitr}
                | ({"RecoveryPeriodInDays": shape.recovery_period_days} if shape.pitr else {}),
            )
        )  # fmt: skip
    for name in sorted(set(indexes.live_indexes(table)) - {i.name for i in shape.indexes}):
        drifts.append(
            Drift(
                f"index:{name}", f"index {name}", "present", "not declared", None,
                how="an index made outside the stack: reconcile leaves it (an application may query it); "
                "declare it in doctable.toml, or delete it by hand",
            )
        )  # fmt: skip
    protection = LiveTable.of(table).deletion_protection
    if protection != shape.deletion_protection:
        drifts.append(
            Drift(
                "deletion_protection", "deletion protection", drift_text(protection),
                drift_text(shape.deletion_protection), UPDATE_TABLE,
                {"DeletionProtectionEnabled": shape.deletion_protection},
            )
        )  # fmt: skip
    return drifts


# ------------------------------------------------------------------------------------------ capability
class TableShapeCapability:
    """The table's shape: findings once the table is the stack's; drift of TTL, PITR, deletion protection."""

    name = "table shape"
    compares_live = True
    codes = frozenset(
        {
            "table.replaced",
            "table.billing_mode_changed",
            "index.added",
            "index.removed",
            "index.replaced",
            "index.busy",
            "index.throughput_changed",
            "index.multi_step",
            "stream.enabled",
            "stream.disabled",
            "stream.recreated",
            "ttl.enabled",
            "ttl.disabled",
            "ttl.attribute_changed",
            "ttl.busy",
            "pitr.enabled",
            "pitr.disabled",
            "deletion_protection.enabled",
            "deletion_protection.disabled",
        }
    )
    # UpdateTable and UpdateContinuousBackups carry table_options' repairs too: one call per operation.
    calls = (UPDATE_TABLE, PITR_CALL, TTL)

    def findings(self, observed: Observed) -> list[Finding]:
        if not observed.compared:
            return []  # ownership says why
        return shape_findings(observed.target, observed.live_table, observed.ttl, observed.pitr)

    def drift(self, observed: Observed) -> list[Drift]:
        return differences(observed.deployed, observed.live_table, observed.ttl, observed.pitr)

    def apply(
        self, aws: Aws, deployment: Deployment, table: dict[str, Any], call: str, params: dict[str, Any]
    ) -> None:
        restore_setting(aws.client("dynamodb"), table["TableName"], call, params)


TABLE_SHAPE = TableShapeCapability()
