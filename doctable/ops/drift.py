"""Drift: live settings changed out of band that CloudFormation will not repair (it updates a property only when
its template value changes), detected against the knobs the stack was deployed with, and the service call that
restores each one (``doctable reconcile``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from contract import names
from contract.knobs import DocTableConfig
from contract.shape import mapping_shape, table_shape
from doctable.aws import Aws, call_or_none
from doctable.ops import kinesis, table_options, table_security
from doctable.ops.context import Deployment, table_tags
from doctable.ops.live import (
    DESTINATION_FIELD,
    ENABLED_FIELD,
    LiveTable,
    LiveTtl,
    mapping_differences,
    pitr_declared,
    pitr_status,
    s3_bucket_arn,
    setting_text,
)

# What each repair calls (the grouping key of ``Drift.op``).
TTL, PITR, PROTECTION, TABLE_TAGS, MAPPING, MAPPING_TAGS = (
    "UpdateTimeToLive",
    "UpdateContinuousBackups",
    "UpdateTable",
    "TagResource (table)",
    "UpdateEventSourceMapping",
    "TagResource (mapping)",
)
# The order repairs run in: the rate-limited TTL change last, so a refusal leaves every other repair done.
REPAIR_ORDER = (
    TABLE_TAGS,
    PROTECTION,
    PITR,
    table_options.INSIGHTS_CALL,
    *table_security.CALLS,
    *kinesis.CALLS,
    MAPPING,
    MAPPING_TAGS,
    TTL,
)
MAPPING_PARAMETERS = {  # GetEventSourceMapping field -> UpdateEventSourceMapping parameter
    "BatchSize": "BatchSize",
    "MaximumBatchingWindowInSeconds": "MaximumBatchingWindowInSeconds",
    "MaximumRetryAttempts": "MaximumRetryAttempts",
    "MaximumRecordAgeInSeconds": "MaximumRecordAgeInSeconds",
    "ParallelizationFactor": "ParallelizationFactor",
    "BisectBatchOnFunctionError": "BisectBatchOnFunctionError",
    "FunctionResponseTypes": "FunctionResponseTypes",
    "FilterCriteria": "FilterCriteria",
    "MetricsConfig": "MetricsConfig",
}
# What UpdateEventSourceMapping takes to remove a setting the knobs leave unset (AWS documents {} for filters).
MAPPING_CLEARED: dict[str, Any] = {"FilterCriteria": {}, "MetricsConfig": {"Metrics": []}}


@dataclass
class Drift:
    """One property whose live value differs from the declared one.

    ``prop`` names the property for comparison with a deploy's changes (``ttl``, ``mapping:BatchSize``,
    ``table-tag:Owner``); ``op``/``params`` are the repair (op None: reconcile cannot repair it; ``how`` says
    what can).
    """

    prop: str
    subject: str
    live: str
    declared: str
    op: str | None
    params: dict[str, Any] = field(default_factory=dict)
    how: str = ""

    @property
    def action(self) -> str:
        if self.op is None:
            return f"not repairable by reconcile: {self.how}"
        shown = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.op} {shown}"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "action": self.action}


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


def table_drift(aws: Aws, config: DocTableConfig, table: dict[str, Any]) -> list[Drift]:
    """TTL, PITR, deletion protection and the provenance tags of a live table against the deployed knobs."""
    ddb = aws.client("dynamodb")
    shape = table_shape(config)
    drifts: list[Drift] = []
    ttl = LiveTtl.of(ddb.describe_time_to_live(TableName=shape.name).get("TimeToLiveDescription", {}))
    if not ttl.matches(shape):
        live = ttl.status + (f" on {ttl.attribute}" if ttl.attribute else "")
        want = shape.ttl_attribute
        if want is None:
            drifts.append(
                Drift("ttl", "ttl", live, "DISABLED", TTL, {"Enabled": False, "AttributeName": ttl.attribute})
            )
        elif ttl.on:  # on, but on another attribute: disabling and enabling are two rate-limited changes
            drifts.append(
                Drift(
                    "ttl", "ttl", live, f"ENABLED on {want}", None,
                    how=f"disable TTL on {ttl.attribute}, wait for the TTL rate limit (~1 h), enable it on {want}",
                )
            )  # fmt: skip
        else:
            drifts.append(
                Drift("ttl", "ttl", live, f"ENABLED on {want}", TTL, {"Enabled": True, "AttributeName": want})
            )
    pitr = pitr_status(ddb.describe_continuous_backups(TableName=shape.name))
    if pitr != pitr_declared(shape):
        drifts.append(
            Drift(
                "pitr", "pitr", pitr, pitr_declared(shape), PITR,
                {"PointInTimeRecoveryEnabled": shape.pitr}
                | ({"RecoveryPeriodInDays": shape.recovery_period_days} if shape.pitr else {}),
            )
        )  # fmt: skip
    protection = LiveTable.of(table).deletion_protection
    if protection != shape.deletion_protection:
        drifts.append(
            Drift(
                "deletion_protection", "deletion protection", _text(protection), _text(shape.deletion_protection),
                PROTECTION, {"DeletionProtectionEnabled": shape.deletion_protection},
            )
        )  # fmt: skip
    for prop, subject, have, want in table_options.differences(
        shape, table_options.LiveOptions.read(ddb, table)
    ):
        op, params, how = table_options.repair(shape, prop)
        if op is not None:  # warm throughput below the knob's cannot drift there: DynamoDB never lowers it
            drifts.append(Drift(prop, subject, have, want, op, params, how))
    live_tags = table_tags(aws, table["TableArn"])
    for key, value in config.tags().items():
        if live_tags.get(key) != value:
            drifts.append(
                Drift(
                    f"table-tag:{key}",
                    f"table tag {key}",
                    live_tags.get(key, "absent"),
                    value,
                    TABLE_TAGS,
                    {key: value},
                )
            )
    return drifts


def mapping_drift(aws: Aws, deployment: Deployment, config: DocTableConfig) -> list[Drift]:
    """The mapping's settings, enabled state, on-failure destination and tags against the deployed knobs."""
    shape = mapping_shape(config)
    uuid = deployment.out(names.OUT_MAPPING_UUID)
    if shape is None or not uuid:
        return []
    lam = aws.client("lambda")
    mapping = call_or_none(lam.get_event_source_mapping, UUID=uuid)
    if mapping is None:
        how = "CloudFormation does not re-create a resource deleted behind it: tear down and deploy again"
        return [Drift("mapping:present", "mapping", "absent", uuid, None, how=how)]
    bucket = deployment.out(names.OUT_FAILURE_BUCKET)
    destination = s3_bucket_arn(aws.partition, bucket) if bucket else None
    drifts: list[Drift] = []
    for name, live, want in mapping_differences(mapping, shape, destination):
        if name == ENABLED_FIELD:
            drifts.append(
                Drift(
                    "mapping:Enabled", "mapping state", _text(live), _text(want), MAPPING, {"Enabled": True}
                )
            )
        elif name == DESTINATION_FIELD:
            params: dict[str, Any] = {"DestinationConfig": {"OnFailure": {"Destination": destination}}}
            op = MAPPING if destination else None
            how = f"the stack has no {names.OUT_FAILURE_BUCKET} output"
            drifts.append(
                Drift(
                    f"mapping:{name}",
                    "mapping on-failure destination",
                    _text(live),
                    _text(want),
                    op,
                    params,
                    how,
                )
            )
        else:
            drifts.append(
                Drift(
                    f"mapping:{name}",
                    f"mapping {name}",
                    _text(live) if name not in MAPPING_CLEARED else setting_text(name, live),
                    _text(want) if name not in MAPPING_CLEARED else setting_text(name, want),
                    MAPPING,
                    {MAPPING_PARAMETERS[name]: MAPPING_CLEARED.get(name) if want is None else want},
                )
            )
    position = mapping.get("StartingPosition")
    if position and position != shape.starting_position:
        how = "a mapping's starting position is fixed at creation: redeploy with a starting_position change"
        drifts.append(
            Drift(
                "mapping:StartingPosition",
                "mapping StartingPosition",
                position,
                shape.starting_position,
                None,
                how=how,
            )
        )
    arn = mapping.get("EventSourceMappingArn") or (
        f"arn:{aws.partition}:lambda:{aws.region}:{aws.account}:event-source-mapping:{uuid}"
    )
    tags = lam.list_tags(Resource=arn).get("Tags", {})
    for key, value in config.tags().items():
        if tags.get(key) != value:
            drifts.append(
                Drift(
                    f"mapping-tag:{key}",
                    f"mapping tag {key}",
                    tags.get(key, "absent"),
                    value,
                    MAPPING_TAGS,
                    {key: value},
                )
            )
    return drifts


def detect(aws: Aws, deployment: Deployment, table: dict[str, Any]) -> list[Drift]:
    """Every drift of the deployed configuration (``deployment.config``) on a live table and its mapping."""
    return (
        table_drift(aws, deployment.config, table)
        + security_drift(aws, deployment, table)
        + kinesis_drift(aws, deployment, table)
        + mapping_drift(aws, deployment, deployment.config)
    )


def kinesis_drift(aws: Aws, deployment: Deployment, table: dict[str, Any]) -> list[Drift]:
    """The table's Kinesis streaming destination against the deployed knobs (doctable/ops/kinesis.py)."""
    found = kinesis.differences(aws.client("dynamodb"), deployment.config, deployment.out, table["TableName"])
    return [
        Drift(prop, subject, have, want, op, params, how)
        for prop, subject, have, want, op, params, how in found
    ]


def security_drift(aws: Aws, deployment: Deployment, table: dict[str, Any]) -> list[Drift]:
    """Encryption at rest and the resource policy against the deployed knobs (doctable/ops/table_security.py)."""
    key = deployment.out(names.OUT_KMS_KEY_ARN)
    drifts = []
    for prop, subject, have, want in table_security.differences(aws, deployment.config, table, key):
        op, params, how = table_security.repair(deployment.config, prop, table, key)
        drifts.append(Drift(prop, subject, have, want, op, params, how))
    return drifts


def changed_by_deploy(prop: str, deployed: DocTableConfig, target: DocTableConfig) -> bool:
    """Whether a deploy from ``deployed`` to ``target`` rewrites ``prop`` (then CloudFormation sets it, and its
    live value is the deploy's business, not drift)."""
    if prop.startswith("table-tag:") or prop.startswith("mapping-tag:"):
        key = prop.split(":", 1)[1]
        return deployed.tags().get(key) != target.tags().get(key)
    if prop.startswith("mapping:"):
        before, after = mapping_shape(deployed), mapping_shape(target)
        if before is None or after is None or before.starting_position != after.starting_position:
            return True  # the mapping goes or is replaced
        if (deployed.stream, deployed.consumer) != (target.stream, target.consumer):
            return True
        if kinesis.source_text(deployed) != kinesis.source_text(target):
            return True  # the mapping moves to another source: a new mapping
        name = prop.split(":", 1)[1]
        return before.live_fields().get(name) != after.live_fields().get(name)
    if prop.startswith("kinesis:"):
        return kinesis.changed_by_deploy(deployed, target)
    if prop in table_security.PROPS:
        return table_security.changed_by_deploy(prop, deployed, target)
    before_table, after_table = table_shape(deployed), table_shape(target)
    if prop == "ttl":
        return before_table.ttl_attribute != after_table.ttl_attribute
    if prop == "pitr":
        return before_table.pitr != after_table.pitr
    if prop == "deletion_protection":
        return before_table.deletion_protection != after_table.deletion_protection
    return table_options.changed_by_deploy(prop, before_table, after_table)


# ---------------------------------------------------------------------------------------------- repairs
@dataclass
class Repair:
    """One service call restoring one or more drifted properties."""

    op: str
    params: dict[str, Any]
    subjects: list[str]


def plan_repairs(drifts: list[Drift]) -> list[Repair]:
    """The repairable drifts merged into one call per operation, in REPAIR_ORDER."""
    repairs: dict[str, Repair] = {}
    for drift in drifts:
        if drift.op is None:
            continue
        repair = repairs.setdefault(drift.op, Repair(drift.op, {}, []))
        repair.params.update(drift.params)
        repair.subjects.append(drift.subject)
    return [repairs[op] for op in REPAIR_ORDER if op in repairs]


def apply_repair(aws: Aws, deployment: Deployment, table: dict[str, Any], repair: Repair) -> None:
    """Make the call; ClientErrors propagate (the caller words them)."""
    ddb, name = aws.client("dynamodb"), table["TableName"]
    if repair.op == TTL:
        ddb.update_time_to_live(TableName=name, TimeToLiveSpecification=repair.params)
    elif repair.op == PITR:
        ddb.update_continuous_backups(TableName=name, PointInTimeRecoverySpecification=repair.params)
    elif repair.op == PROTECTION:
        ddb.update_table(TableName=name, **repair.params)
    elif repair.op == table_options.INSIGHTS_CALL:
        ddb.update_contributor_insights(TableName=name, **repair.params)
    elif repair.op in table_security.CALLS:
        table_security.apply_repair(aws, table, repair.op, repair.params)
    elif repair.op in kinesis.CALLS:
        kinesis.apply_repair(ddb, name, repair.op, repair.params)
    elif repair.op == TABLE_TAGS:
        ddb.tag_resource(
            ResourceArn=table["TableArn"], Tags=[{"Key": k, "Value": v} for k, v in repair.params.items()]
        )
    elif repair.op == MAPPING:
        aws.client("lambda").update_event_source_mapping(
            UUID=deployment.out(names.OUT_MAPPING_UUID), **repair.params
        )
    elif repair.op == MAPPING_TAGS:
        lam = aws.client("lambda")
        mapping = lam.get_event_source_mapping(UUID=deployment.out(names.OUT_MAPPING_UUID))
        lam.tag_resource(Resource=mapping["EventSourceMappingArn"], Tags=repair.params)
    else:  # pragma: no cover - plan_repairs only yields the operations above
        raise ValueError(repair.op)
