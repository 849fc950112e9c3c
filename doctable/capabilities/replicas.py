"""A global table's replica regions (the ``replicas`` knob): what a deploy changes of them (preflight), read from
the live replica regions as the home region's DescribeTable reports them (doctable/core/live.py's
``live_replica_regions``, which verify and teardown read too); and their drift that CloudFormation will not repair
(below).

A table's resource type is fixed by its knobs: ``AWS::DynamoDB::Table`` without replicas,
``AWS::DynamoDB::GlobalTable`` with them. A change of type is a new resource for CloudFormation, which would
replace the table: a single-region table becoming global is converted by ``doctable deploy`` (a resource import
of the retained table, doctable/lifecycle/global_table.py); a global table becoming single-region is refused (STOP)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from contract.findings import Finding, Level
from contract.knobs import TABLE_CLASS_DEFAULT_CFN
from contract.shape import GLOBAL_TABLE_TYPE, TABLE_TYPE, table_shape
from doctable.capabilities.protocol import Drift, Observed, drift_text, replica_table
from doctable.capabilities.repairs import PITR_CALL, UPDATE_TABLE, period_text, restore_setting
from doctable.core.live import PITR_ENABLED, live_replicas, pitr_declared, pitr_status

if TYPE_CHECKING:
    from contract.knobs import DocTableConfig
    from doctable.core.aws import Aws

REPLICA_ACTIVE = "ACTIVE"  # ReplicaStatus of a replica that takes reads and writes
# A conversion to a global table (doctable/lifecycle/global_table.py): retain, take out, import, then the deploy.
CONVERSION_UPDATES = 4


def _conversion(config: DocTableConfig, live_type: str, declared_type: str) -> Finding:
    if declared_type == GLOBAL_TABLE_TYPE:
        return Finding(
            Level.WARN, "table.to_global", "table type", live_type, declared_type,
            f"replicas={','.join(config.replicas)} makes the table a global table: the resource type changes "
            f"({live_type} -> {declared_type}), which CloudFormation cannot do in place. `doctable deploy` converts "
            f"it with its items kept, by resource import, in {CONVERSION_UPDATES} CloudFormation operations: the "
            "table retained, taken out of the stack, imported as a global table, then the update that adds the "
            "replicas (an online copy to each region); a failed step stops and the next deploy continues from it",
            False, live_type, declared_type,
        )  # fmt: skip
    return Finding(
        Level.STOP, "table.to_single", "table type", live_type, declared_type,
        "replicas=none makes the global table a single-region table: the resource type changes "
        f"({live_type} -> {declared_type}), so CloudFormation would REPLACE the table (a new, empty one under a "
        "fixed name fails). Converting a global table back is not automated: refused",
        True, live_type, declared_type,
    )  # fmt: skip


def replica_findings(
    config: DocTableConfig, table: dict[str, Any], live_type: str, home: str
) -> list[Finding]:
    """The live table's type and replica regions against ``config``'s: a type change stops; each region added
    (an online copy) and each region removed (destructive)."""
    declared_type = table_shape(config).resource_type
    if live_type != declared_type:
        return [_conversion(config, live_type, declared_type)]
    if live_type != GLOBAL_TABLE_TYPE:
        return []
    statuses = live_replicas(table, home)
    live = set(statuses)
    findings = [
        Finding(
            Level.WARN,
            "replica.busy",
            f"replica {region}",
            status,
            REPLICA_ACTIVE,
            f"the replica in {region} is {status}: DynamoDB refuses another replica change until every replica is "
            f"{REPLICA_ACTIVE}",
            False,
            status,
            REPLICA_ACTIVE,
        )  # fmt: skip
        for region, status in sorted(statuses.items())
        if status != REPLICA_ACTIVE
    ]
    findings += [
        Finding(
            Level.CHANGE,
            "replica.added",
            f"replica {region}",
            "absent",
            region,
            f"adds a replica in {region}: an ONLINE copy of the table (no downtime). It costs replicated writes in "
            f"{region} (every write of every region), the table's storage there, and cross-region transfer of "
            f"each write; the stack {config.replica_stack_name(region)} adds the region's consumer",
            False,
            None,
            region,
        )  # fmt: skip
        for region in config.replicas
        if region not in live
    ]
    findings += [
        Finding(
            Level.CHANGE,
            "replica.removed",
            f"replica {region}",
            region,
            "absent",
            f"DELETES the replica in {region}: that region's copy of the table and the stack "
            f"{config.replica_stack_name(region)} (its consumer and mapping) are deleted; readers and writers "
            f"there lose their local table",
            True,
            region,
            None,
        )  # fmt: skip
        for region in sorted(live - set(config.replicas))
    ]
    return findings


class ReplicasCapability:
    """The table's type and replica regions: findings once the table is the stack's."""

    name = "replicas"
    compares_live = True
    codes = frozenset(
        {"replica.added", "replica.removed", "replica.busy", "table.to_global", "table.to_single"}
    )

    def findings(self, observed: Observed) -> list[Finding]:
        if not observed.compared:
            return []  # ownership says why
        live_type = observed.table_type or TABLE_TYPE
        return replica_findings(observed.target, observed.live_table, live_type, observed.deployment.region)


REPLICAS = ReplicasCapability()


# ------------------------------------------------------------------------------------------- drift
# The drift of a global table's replicas (the ``replicas`` knob) that CloudFormation will not repair: per replica
# region, PITR (on/off and its recovery period) and deletion protection, each read in that region and restored there
# (UpdateContinuousBackups, UpdateTable); the table class is reported but left to CloudFormation (AWS allows two class
# changes per table in a trailing 30 days). The same look as verify's ``replica-options:<region>`` rows
# (doctable/verify/replicas.py); the home table's drift is table_shape's and table_options'.
#
# Each drift's ``prop`` is ``replica:<region>:<prop>`` (``pitr``, ``pitr_days``, ``deletion_protection``,
# ``table_class``), its subject names the region, e.g. ``pitr (eu-west-1)``, and its ``region`` is where the repair
# is made (``drift.apply_repair``).
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
    table = replica_table(observed, region)
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
