"""The drift of a global table's replicas (the ``replicas`` knob) that CloudFormation will not repair: per replica
region, PITR (on/off and its recovery period) and deletion protection, each read in that region and restored there
(UpdateContinuousBackups, UpdateTable); the table class is reported but left to CloudFormation (AWS allows two class
changes per table in a trailing 30 days). The same look as verify's ``replica-options:<region>`` rows
(doctable/verify/replicas.py); the home table's drift is table_shape's and table_options'.

Each drift's ``prop`` is ``replica:<region>:<prop>`` (``pitr``, ``pitr_days``, ``deletion_protection``,
``table_class``), its subject names the region, e.g. ``pitr (eu-west-1)``, and its ``region`` is where the repair
is made (``drift.apply_repair``)."""

from __future__ import annotations

from typing import Any

from contract.knobs import TABLE_CLASS_DEFAULT_CFN
from contract.shape import table_shape
from doctable.capabilities.protocol import Drift, Observed, drift_text
from doctable.capabilities.repairs import PITR_CALL, UPDATE_TABLE, period_text, restore_setting
from doctable.core.aws import Aws, call_or_none
from doctable.core.live import PITR_ENABLED, pitr_declared, pitr_status

PREFIX = "replica:"
CALLS = (UPDATE_TABLE, PITR_CALL)
CLASS_HOW = (
    "a replica's table class is set by CloudFormation's update of the table_class knob (AWS allows two class "
    "changes per table in a trailing 30 days): restore it by hand with UpdateTable TableClass in that region"
)


def replica_prop(region: str, prop: str) -> str:
    return f"{PREFIX}{region}:{prop}"


def split_prop(prop: str) -> tuple[str, str] | None:
    """(region, prop) of a replica drift's ``prop``; None for the home table's."""
    if not prop.startswith(PREFIX):
        return None
    region, _, base = prop.removeprefix(PREFIX).partition(":")
    return region, base


def replica_drifts(observed: Observed) -> list[Drift]:
    """Each replica region's drift from the deployed knobs, in the knobs' region order; a region without a replica
    is skipped (verify's ``replicas`` row and preflight's replica findings name it)."""
    config = observed.deployed
    if not config.is_global or not observed.compared:
        return []
    found: list[Drift] = []
    for region in config.replicas:
        found += _region_drifts(observed.aws.in_region(region), observed, region)
    return found


def _region_drifts(there: Aws, observed: Observed, region: str) -> list[Drift]:
    shape = table_shape(observed.deployed)
    ddb, name = there.client("dynamodb"), observed.live_table["TableName"]
    table = (call_or_none(ddb.describe_table, TableName=name) or {}).get("Table")
    if table is None:
        return []
    backups = ddb.describe_continuous_backups(TableName=name)
    recovery = (backups.get("ContinuousBackupsDescription") or {}).get("PointInTimeRecoveryDescription") or {}
    pitr = pitr_status(backups)

    def drift(prop: str, subject: str, live: str, declared: str, op: str | None, **more: Any) -> Drift:
        return Drift(
            replica_prop(region, prop), f"{subject} ({region})", live, declared, op, region=region, **more
        )

    found: list[Drift] = []
    if pitr != pitr_declared(shape):
        params = {"PointInTimeRecoveryEnabled": shape.pitr} | (
            {"RecoveryPeriodInDays": shape.recovery_period_days} if shape.pitr else {}
        )
        found.append(drift("pitr", "pitr", pitr, pitr_declared(shape), PITR_CALL, params=params))
    elif pitr == PITR_ENABLED and shape.pitr:
        days = recovery.get("RecoveryPeriodInDays")
        if days is not None and int(days) != shape.recovery_period_days:
            params = {"PointInTimeRecoveryEnabled": True, "RecoveryPeriodInDays": shape.recovery_period_days}
            live, declared = period_text(int(days)), period_text(shape.recovery_period_days)
            found.append(drift("pitr_days", "pitr period", live, declared, PITR_CALL, params=params))
    protection = bool(table.get("DeletionProtectionEnabled"))
    if protection != shape.deletion_protection:
        params = {"DeletionProtectionEnabled": shape.deletion_protection}
        live, declared = drift_text(protection), drift_text(shape.deletion_protection)
        found.append(
            drift("deletion_protection", "deletion protection", live, declared, UPDATE_TABLE, params=params)
        )
    table_class = (table.get("TableClassSummary") or {}).get("TableClass", TABLE_CLASS_DEFAULT_CFN)
    if table_class != shape.table_class:
        found.append(drift("table_class", "table class", table_class, shape.table_class, None, how=CLASS_HOW))
    return found


def apply(there: Aws, table_name: str, call: str, params: dict[str, Any]) -> None:
    """Make ``call`` (one of ``CALLS``) on the replica in ``there``'s region; ClientErrors propagate."""
    if call not in CALLS:  # pragma: no cover - CALLS only
        raise ValueError(call)
    restore_setting(there.client("dynamodb"), table_name, call, params)
