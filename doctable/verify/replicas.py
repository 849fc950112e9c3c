"""verify's rows for a global table (``replicas``), each read-only: the home table's replica regions (every
declared one ACTIVE, no other); per replica region the replica's options (``replica-options:<region>``: table
class, deletion protection, PITR and its period as declared), and its stack ``doctable-<table_base>-<env>-<region>``, settled,
whose event-source mapping is Enabled on that region's replica stream (DescribeTable there: ``LatestStreamArn``).
Clients for a replica region come from ``Aws.in_region``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from contract import names
from contract.knobs import TABLE_CLASS_DEFAULT_CFN, DocTableConfig
from contract.shape import PITR_DEFAULT_DAYS, table_shape
from doctable.capabilities.ownership import SETTLED_STATES
from doctable.capabilities.protocol import replica_stack
from doctable.capabilities.replicas import REPLICA_ACTIVE
from doctable.core.answers import call_or_none
from doctable.core.live import live_replicas
from doctable.verify.record import CheckFailed

if TYPE_CHECKING:
    from doctable.core.aws import Aws
    from doctable.core.deployment import Deployment

REPLICAS_ROW = "replicas"
MAPPING_ENABLED = "Enabled"


def replica_row_id(region: str) -> str:
    """The row id of a replica region's consumer check."""
    return f"replica-consumer:{region}"


def replica_rows(config: DocTableConfig) -> list[tuple[str, str, str]]:
    """(row id, check, expected): none for a single-region table; the replicas row, and with the built-in consumer
    (the replica stacks hold its copies) one row per replica region."""
    if not config.is_global:
        return []
    rows = [
        (
            REPLICAS_ROW,
            "replica regions as declared",
            f"{', '.join(f'{r} {REPLICA_ACTIVE}' for r in config.replicas)}; no other region",
        )
    ]
    rows += [
        (replica_options_row_id(region), f"replica options in {region}", declared_options(config))
        for region in config.replicas
    ]
    if config.builtin_consumer:
        rows += [
            (
                replica_row_id(region),
                f"replica consumer in {region}",
                f"stack {config.replica_stack_name(region)} settled; its mapping {MAPPING_ENABLED} on the "
                f"replica stream in {region}",
            )
            for region in config.replicas
        ]
    return rows


def replica_checks(
    aws: Aws, deployment: Deployment, describe: Callable[[], dict[str, Any]]
) -> dict[str, Callable[[], str]]:
    """Row id -> its check (``describe``: the home table's description); each returns what it observed, or raises
    ``CheckFailed``."""
    config = deployment.config
    if not config.is_global:
        return {}

    def check_replicas() -> str:
        live = live_replicas(describe(), deployment.region)
        problems = [f"{r} missing" for r in config.replicas if r not in live]
        problems += [f"{r} {live[r]}" for r in config.replicas if r in live and live[r] != REPLICA_ACTIVE]
        problems += [f"{r} not declared" for r in sorted(set(live) - set(config.replicas))]
        observed = ", ".join(f"{r} {status}" for r, status in sorted(live.items())) or "no replica"
        if problems:
            raise CheckFailed("; ".join(problems) + f" — {observed}")
        return observed

    checks: dict[str, Callable[[], str]] = {REPLICAS_ROW: check_replicas}
    for region in config.replicas:
        checks[replica_options_row_id(region)] = _options_check(aws.in_region(region), config, region)
    if config.builtin_consumer:
        for region in config.replicas:
            checks[replica_row_id(region)] = _consumer_check(aws.in_region(region), config, region)
    return checks


def _consumer_check(there: Aws, config: DocTableConfig, region: str) -> Callable[[], str]:
    name = config.replica_stack_name(region)

    def check() -> str:
        stack = replica_stack(there, name)
        if stack is None:
            raise CheckFailed(f"stack {name} not found in {region}")
        status = stack.get("StackStatus", "")
        if status not in SETTLED_STATES:
            raise CheckFailed(f"stack {name} is {status}")
        outputs = {o["OutputKey"]: o.get("OutputValue", "") for o in stack.get("Outputs") or []}
        uuid = outputs.get(names.OUT_MAPPING_UUID)
        if not uuid:
            raise CheckFailed(f"stack {name} has no {names.OUT_MAPPING_UUID} output")
        table = (
            call_or_none(there.client("dynamodb").describe_table, TableName=config.table_name) or {}
        ).get("Table")
        if table is None:
            raise CheckFailed(f"no replica of {config.table_name} in {region}")
        stream = table.get("LatestStreamArn")
        mapping = call_or_none(there.client("lambda").get_event_source_mapping, UUID=uuid)
        if mapping is None:
            raise CheckFailed(f"mapping {uuid} of stack {name} not found in {region}")
        state, source = mapping.get("State"), mapping.get("EventSourceArn")
        problems = [f"state {state}"] if state != MAPPING_ENABLED else []
        if source != stream:
            problems.append(f"reads {source}, not the replica stream {stream}")
        if problems:
            raise CheckFailed("; ".join(problems))
        return f"{status}; mapping {uuid} {state} on {stream}"

    return check


def replica_options_row_id(region: str) -> str:
    """The row id of a replica's options check."""
    return f"replica-options:{region}"


def options_text(table_class: str, protected: bool, pitr_days: int | None) -> str:
    """A replica's options as verify says them, declared and observed alike."""
    pitr = f"PITR on ({pitr_days} days)" if pitr_days is not None else "PITR off"
    return f"class {table_class}; deletion protection {'on' if protected else 'off'}; {pitr}"


def declared_options(config: DocTableConfig) -> str:
    """What every replica must have: the table class, deletion protection and PITR (with its recovery period) the
    knobs declare for the home table; contributor insights is checked at home only."""
    shape = table_shape(config)
    days = (shape.pitr_days or PITR_DEFAULT_DAYS) if shape.pitr else None
    return options_text(shape.table_class, shape.deletion_protection, days)


def _options_check(there: Aws, config: DocTableConfig, region: str) -> Callable[[], str]:
    def check() -> str:
        ddb = there.client("dynamodb")
        table = (call_or_none(ddb.describe_table, TableName=config.table_name) or {}).get("Table")
        if table is None:
            raise CheckFailed(f"no replica of {config.table_name} in {region}")
        recovery = (
            ddb.describe_continuous_backups(TableName=config.table_name)
            .get("ContinuousBackupsDescription", {})
            .get("PointInTimeRecoveryDescription", {})
        )
        days = recovery.get("RecoveryPeriodInDays", PITR_DEFAULT_DAYS)
        observed = options_text(
            (table.get("TableClassSummary") or {}).get("TableClass", TABLE_CLASS_DEFAULT_CFN),
            bool(table.get("DeletionProtectionEnabled")),
            int(days) if recovery.get("PointInTimeRecoveryStatus") == "ENABLED" else None,
        )
        if observed != declared_options(config):
            raise CheckFailed(observed)
        return observed

    return check
