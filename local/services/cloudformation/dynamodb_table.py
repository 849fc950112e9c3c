"""AWS::DynamoDB::Table as CloudFormation makes and updates it (moto's Table model lost track of most of it).

CloudFormation applies TimeToLiveSpecification and PointInTimeRecoverySpecification, and updates a table in place
(GSIs through local/services/dynamodb/indexes.py, stream, TTL, PITR, deletion protection, tags, the options, SSE
and resource policy, the Kinesis destination) instead of losing track of it; a new name, key schema or set of LSIs
replaces it; a template's indexes meet CreateTable's rules.

This module owns the two class methods; the properties other modules keep are steps ``apply_template`` calls in
its order: the TTL and PITR settings through the API's operations (tables.py's, options.py's), then options.py's,
security.py's and kinesis_destination.py's ``apply_template``.
"""

from __future__ import annotations

from typing import Any

from local.patching import Patches, Target, truthy
from local.services.dynamodb import index_rules as dynamodb_index_rules
from local.services.dynamodb import indexes as dynamodb_indexes
from local.services.dynamodb import kinesis_destination as dynamodb_kinesis
from local.services.dynamodb import options as dynamodb_options
from local.services.dynamodb import security as dynamodb_security

_TABLE = "moto.dynamodb.models.table"
_MODELS = "moto.dynamodb.models"
PATCHES = Patches()


@PATCHES.replace(Target(_TABLE, "Table.create_from_cloudformation_json"), wrap=classmethod)
def create_from_cloudformation_json(
    cls: Any,
    resource_name: str,
    cloudformation_json: dict[str, Any],
    account_id: str,
    region_name: str,
    **kw: Any,
) -> Any:
    """Table.create_from_cloudformation_json: the template's TableName, CreateTable's index rules (moto's path
    skipped them) and the properties moto ignores."""
    properties = cloudformation_json["Properties"]
    name = properties.get("TableName", resource_name)
    # The index rules, not the exact attribute set: CloudFormation refuses an unused definition ("Property
    # AttributeDefinitions is inconsistent with the KeySchema ..."), which templates here still rely on.
    dynamodb_index_rules.validate_table_spec(properties)
    original = PATCHES.original(create_from_cloudformation_json)
    table = original(cls, name, cloudformation_json, account_id, region_name, **kw)
    apply_template(table, properties, account_id, region_name, creating=True)
    return table


def replaces_table(table: Any, properties: dict[str, Any]) -> bool:
    """Whether a template's table properties need a new table: another name, key schema or set of LSIs."""
    new_name = properties.get("TableName")
    return bool(
        (new_name and new_name != table.name)
        or properties.get("KeySchema", table.schema) != table.schema
        or dynamodb_indexes.local_indexes_changed(table, properties)
    )


@PATCHES.replace(Target(_TABLE, "Table.update_from_cloudformation_json"), wrap=classmethod)
def update_from_cloudformation_json(
    cls: Any, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
    account_id: str, region_name: str,
) -> Any:  # fmt: skip
    """Table.update_from_cloudformation_json: in place (GSIs, stream, TTL, PITR, throughput, tags...) unless the
    change needs a new table."""
    from moto.dynamodb.models import dynamodb_backends

    properties = cloudformation_json["Properties"]
    backend = dynamodb_backends[account_id][region_name]
    table = original_resource
    if replaces_table(table, properties):
        # Replacement, as on AWS (the old table's data does not move).
        new = cls.create_from_cloudformation_json(
            new_resource_name, cloudformation_json, account_id, region_name
        )
        backend.delete_table(table.name)
        return new
    dynamodb_indexes.update_from_template(backend, table, properties)
    stream = properties.get("StreamSpecification")
    current = table.stream_specification or {}
    if stream and stream.get("StreamViewType") != current.get("StreamViewType"):
        table.set_stream_specification({"StreamEnabled": True, "StreamViewType": stream["StreamViewType"]})
    elif not stream and current.get("StreamEnabled"):
        table.stream_specification = {"StreamEnabled": False}
        table.latest_stream_label = None
        table.stream_shard = None
    table.billing_mode = (
        "PAY_PER_REQUEST" if properties.get("BillingMode") == "PAY_PER_REQUEST" else "PROVISIONED"
    )
    if properties.get("ProvisionedThroughput"):
        table.throughput = dict(properties["ProvisionedThroughput"], NumberOfDecreasesToday=0)
    table.deletion_protection_enabled = truthy(properties.get("DeletionProtectionEnabled", False))
    table.tags = list(properties.get("Tags") or [])
    if "SSESpecification" in properties:
        table.sse_specification = properties["SSESpecification"]
    apply_template(table, properties, account_id, region_name, creating=False)
    return table


def apply_template(
    table: Any, properties: dict[str, Any], account_id: str, region: str, creating: bool
) -> None:
    from moto.dynamodb.models import dynamodb_backends

    backend = dynamodb_backends[account_id][region]
    ttl = properties.get("TimeToLiveSpecification") or {}
    wanted = truthy(ttl.get("Enabled"))
    if wanted != (table.ttl.get("TimeToLiveStatus") == "ENABLED"):  # CloudFormation calls it on a change only
        attribute = ttl.get("AttributeName") or table.ttl.get("AttributeName", "")
        backend.update_time_to_live(table.name, {"Enabled": wanted, "AttributeName": attribute})
    pitr = properties.get("PointInTimeRecoverySpecification") or {}
    enabled = truthy(pitr.get("PointInTimeRecoveryEnabled"))
    spec: dict[str, Any] = {"PointInTimeRecoveryEnabled": enabled}
    if enabled:  # a template without a period gets AWS's default, also when it drops one it had
        spec["RecoveryPeriodInDays"] = dynamodb_options.pitr_period(pitr)
    if enabled or not creating:
        backend.update_continuous_backups(table.name, spec)
    dynamodb_options.apply_template(table, properties, creating=creating)
    dynamodb_security.apply_template(table, properties)
    dynamodb_kinesis.apply_template(table, properties)


# Every moto internal this module relies on: what it replaces, and what it reads or calls.
MOTO_TARGETS = (
    *PATCHES.targets,
    Target(_TABLE, "Table.set_stream_specification", ("self", "streams")),
    Target(_MODELS, "DynamoDBBackend.delete_table", ("self", "name")),
    Target(_MODELS, "DynamoDBBackend.update_time_to_live", ("self", "table_name", "ttl_spec")),
    Target(
        _MODELS, "DynamoDBBackend.update_continuous_backups", ("self", "table_name", "point_in_time_spec")
    ),
    Target(_MODELS, "dynamodb_backends"),
)
