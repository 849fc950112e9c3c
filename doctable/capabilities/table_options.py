"""The table's options on a live table (class, on-demand maximum, warm throughput, PITR period, contributor
insights) read from DescribeTable, DescribeContinuousBackups and DescribeContributorInsights, compared with the
knobs' shape: what preflight says a change does and costs, and the drift reconcile can restore."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from contract.findings import Finding, Level
from contract.knobs import TABLE_CLASS_DEFAULT_CFN
from contract.shape import TableShape, table_shape
from doctable.capabilities.protocol import Drift, Observed
from doctable.capabilities.repairs import INSIGHTS_CALL, PITR_CALL, UPDATE_TABLE, period_text

if TYPE_CHECKING:
    from doctable.core.aws import Aws
    from doctable.core.deployment import Deployment

NO_CAP = -1  # DescribeTable's OnDemandThroughput for a direction without a maximum
INSIGHTS_ENABLED = "ENABLED"
READ, WRITE = "MaxReadRequestUnits", "MaxWriteRequestUnits"
WARM_READ, WARM_WRITE = "ReadUnitsPerSecond", "WriteUnitsPerSecond"

# What each repair calls (drift.py groups repairs by these).

# Each option's finding code (the PITR period's depends on the direction: see findings).
CODES = {
    "table_class": "table_class.changed",
    "on_demand": "throughput.max_changed",
    "warm": "throughput.warm_changed",
    "contributor_insights": "contributor_insights.changed",
}
EFFECTS = {
    "table_class": "an UpdateTable in place: the table stays ACTIVE and serves traffic while the class changes "
    "(hours on a big table); AWS allows two class changes per table in a trailing 30 days. Standard-IA stores "
    "for ~60% less and charges ~25% more per read/write",
    "on_demand": "in place, free: requests beyond the maximum are throttled (ThrottlingException) instead of "
    "billed; lifting it restores the on-demand account quota",
    "warm": "pre-warms the table: billed once per increase (per unit raised), minutes to finish with the table "
    "ACTIVE; it only goes up (DynamoDB never lowers it, and refuses a lower value)",
    "pitr_days": "in place, free: a shorter window drops the restore points older than it at once; a longer one "
    "fills as time passes; PITR storage is billed on table size, not the window",
    "contributor_insights": "in place: enabling creates CloudWatch Contributor Insights rules, billed per event "
    "(every read and write with accessed-and-throttled-keys, only throttled ones with throttled-keys) and per "
    "rule-month; disabling deletes the rules and their history",
}


@dataclass(frozen=True)
class LiveOptions:
    table_class: str
    on_demand: dict[str, int] | None  # the capped directions only
    warm: dict[str, int]
    pitr_days: int | None  # None without PITR
    insights_mode: str | None  # None when disabled; "?" when DescribeContributorInsights was refused

    @classmethod
    def read(cls, ddb: Any, table: dict[str, Any], backups: dict[str, Any] | None = None) -> LiveOptions:
        """``backups``: DescribeContinuousBackups' reply when already read."""
        name = table["TableName"]
        caps = {k: int(v) for k, v in (table.get("OnDemandThroughput") or {}).items() if int(v) != NO_CAP}
        warm = {
            k: int(v) for k, v in (table.get("WarmThroughput") or {}).items() if k in (WARM_READ, WARM_WRITE)
        }
        if backups is None:
            backups = ddb.describe_continuous_backups(TableName=name)
        description = backups.get("ContinuousBackupsDescription") or {}
        recovery = description.get("PointInTimeRecoveryDescription") or {}
        days = (
            recovery.get("RecoveryPeriodInDays")
            if recovery.get("PointInTimeRecoveryStatus") == "ENABLED"
            else None
        )
        try:
            insights = ddb.describe_contributor_insights(TableName=name)
            status = insights.get("ContributorInsightsStatus")
            mode = (
                insights.get("ContributorInsightsMode") if status in (INSIGHTS_ENABLED, "ENABLING") else None
            )
        except ClientError:
            mode = "?"
        return cls(
            table_class=(table.get("TableClassSummary") or {}).get("TableClass", TABLE_CLASS_DEFAULT_CFN),
            on_demand=caps or None,
            warm=warm,
            pitr_days=int(days) if days is not None else None,
            insights_mode=mode,
        )

    def warm_short_of(self, shape: TableShape) -> dict[str, int]:
        """The declared warm-throughput directions the live table is below (DynamoDB may be above)."""
        want = shape.warm_throughput or {}
        return {k: v for k, v in want.items() if self.warm.get(k, 0) < v}


def caps_text(caps: dict[str, int] | None) -> str:
    if not caps:
        return "no maximum"
    return ", ".join(f"{'reads' if k == READ else 'writes'} <= {v}" for k, v in sorted(caps.items()))


def warm_text(warm: dict[str, int] | None) -> str:
    if not warm:
        return "left to DynamoDB"
    return ", ".join(f"{'reads' if k == WARM_READ else 'writes'} {v}/s" for k, v in sorted(warm.items()))


def insights_text(mode: str | None) -> str:
    return f"{INSIGHTS_ENABLED} {mode}" if mode else "DISABLED"


def differences(shape: TableShape, live: LiveOptions) -> list[tuple[str, str, str, str]]:
    """(prop, subject, live, declared) for each option of the live table that differs from the shape."""
    found: list[tuple[str, str, str, str]] = []
    if live.table_class != shape.table_class:
        found.append(("table_class", "table class", live.table_class, shape.table_class))
    if (live.on_demand or None) != (shape.on_demand_throughput or None):
        found.append(
            ("on_demand", "max throughput", caps_text(live.on_demand), caps_text(shape.on_demand_throughput))
        )
    if live.warm_short_of(shape):
        found.append(
            ("warm", "warm throughput", warm_text(live.warm), f">= {warm_text(shape.warm_throughput)}")
        )
    if shape.pitr and live.pitr_days is not None and live.pitr_days != shape.recovery_period_days:
        found.append(
            ("pitr_days", "pitr period", period_text(live.pitr_days), period_text(shape.recovery_period_days))
        )
    if live.insights_mode != "?" and live.insights_mode != shape.contributor_insights_mode:
        found.append(
            (
                "contributor_insights",
                "contributor insights",
                insights_text(live.insights_mode),
                insights_text(shape.contributor_insights_mode),
            )
        )
    return found


def _values(prop: str, shape: TableShape, live: LiveOptions) -> tuple[Any, Any]:
    """(live, declared) of ``prop`` as plain values: the class, the caps, the warm rates, days, the mode."""
    if prop == "table_class":
        return live.table_class, shape.table_class
    if prop == "on_demand":
        return live.on_demand, shape.on_demand_throughput
    if prop == "warm":
        return live.warm or None, shape.warm_throughput
    if prop == "pitr_days":
        return live.pitr_days, shape.recovery_period_days
    return live.insights_mode, shape.contributor_insights_mode


def findings(ddb: Any, shape: TableShape, table: dict[str, Any]) -> list[Finding]:
    """Preflight's CHANGE findings, one per option an update changes."""
    return _findings(shape, LiveOptions.read(ddb, table))


def _findings(shape: TableShape, live: LiveOptions) -> list[Finding]:
    found = []
    for prop, subject, have, want in differences(shape, live):
        before, after = _values(prop, shape, live)
        if prop == "pitr_days":
            # A shorter window drops the restore points older than it at once: they cannot come back.
            shorter = after is not None and before is not None and after < before
            code, destructive = (
                ("pitr.window_shortened", True) if shorter else ("pitr.window_lengthened", False)
            )
        else:
            code, destructive = CODES[prop], False
        found.append(
            Finding(Level.CHANGE, code, subject, have, want, EFFECTS[prop], destructive, before, after)
        )
    return found


def repair(shape: TableShape, prop: str) -> tuple[str | None, dict[str, Any], str]:
    """(operation, parameters, how) that restores ``prop``; operation None when no call can."""
    if prop == "table_class":
        return UPDATE_TABLE, {"TableClass": shape.table_class}, ""
    if prop == "on_demand":
        caps = shape.on_demand_throughput or {}
        return (
            UPDATE_TABLE,
            {"OnDemandThroughput": {READ: caps.get(READ, NO_CAP), WRITE: caps.get(WRITE, NO_CAP)}},
            "",
        )
    if prop == "pitr_days":
        spec = {"PointInTimeRecoveryEnabled": True, "RecoveryPeriodInDays": shape.recovery_period_days}
        return PITR_CALL, spec, ""
    if prop == "contributor_insights":
        if shape.contributor_insights_mode is None:
            return INSIGHTS_CALL, {"ContributorInsightsAction": "DISABLE"}, ""
        mode = shape.contributor_insights_mode
        return INSIGHTS_CALL, {"ContributorInsightsAction": "ENABLE", "ContributorInsightsMode": mode}, ""
    return None, {}, "warm throughput only rises: deploy a higher value (billed once per increase)"


def changed_by_deploy(prop: str, before: TableShape, after: TableShape) -> bool:
    """Whether a deploy from shape ``before`` to ``after`` rewrites ``prop``."""
    values = {
        "table_class": lambda s: s.table_class,
        "on_demand": lambda s: s.on_demand_throughput,
        "warm": lambda s: s.warm_throughput,
        "pitr_days": lambda s: s.recovery_period_days,
        "contributor_insights": lambda s: s.contributor_insights_mode,
    }
    read = values.get(prop)
    return read is not None and read(before) != read(after)


# ------------------------------------------------------------------------------------------ capability
class TableOptionsCapability:
    """The table's options: findings once the table is the stack's; their drift (warm throughput cannot)."""

    name = "table options"
    compares_live = True
    codes = frozenset({*CODES.values(), "pitr.window_shortened", "pitr.window_lengthened"})
    calls = (INSIGHTS_CALL,)  # its UpdateTable and UpdateContinuousBackups repairs are table_shape's calls

    def _live(self, observed: Observed) -> LiveOptions:
        table = observed.live_table
        ddb = observed.aws.client("dynamodb")
        return observed.once("table options", lambda: LiveOptions.read(ddb, table, observed.backups))

    def findings(self, observed: Observed) -> list[Finding]:
        if not observed.compared:
            return []
        return _findings(table_shape(observed.target), self._live(observed))

    def drift(self, observed: Observed) -> list[Drift]:
        shape = table_shape(observed.deployed)
        drifts = []
        for prop, subject, have, want in differences(shape, self._live(observed)):
            op, params, how = repair(shape, prop)
            # Warm throughput below the knob's is no drift: DynamoDB never lowers it, so no call restores it.
            if op is not None:
                drifts.append(Drift(prop, subject, have, want, op, params, how))
        return drifts

    def apply(
        self, aws: Aws, deployment: Deployment, table: dict[str, Any], call: str, params: dict[str, Any]
    ) -> None:
        if call != INSIGHTS_CALL:  # pragma: no cover - calls only
            raise ValueError(call)
        aws.client("dynamodb").update_contributor_insights(TableName=table["TableName"], **params)


TABLE_OPTIONS = TableOptionsCapability()
