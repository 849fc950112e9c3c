"""CloudFormation ``AWS::DynamoDB::GlobalTable`` (moto 5.2.5 has none): a table in the stack's region with a
replica in each other region of ``Replicas``, through local/services/dynamodb/replicas.py.

- Create: the stack's region must be one of ``Replicas`` (refused otherwise, CloudFormation's handler message);
  the table is made there from ``TableName``, ``KeySchema``, ``AttributeDefinitions``,
  ``GlobalSecondaryIndexes``, ``LocalSecondaryIndexes``, ``BillingMode``, ``StreamSpecification`` and
  ``TimeToLiveSpecification``, then each other region's replica is added; each replica gets its own
  ``PointInTimeRecoverySpecification``, ``DeletionProtectionEnabled``, ``TableClass`` and ``Tags``.
- Ref is the table's name; ``Fn::GetAtt`` ``Arn`` and ``StreamArn`` are the stack region's replica's,
  ``TableId`` its id.
- Update: replicas added or removed as ``Replicas`` changes, the per-replica settings and TTL applied; a new
  ``TableName``, ``KeySchema`` or set of LSIs replaces the table (local/services/cloudformation/updates.py).
- Delete: the other regions' replicas first, then the stack region's table (``DeletionPolicy: Retain`` keeps it
  all, as for ``AWS::DynamoDB::Table``).

The behaviour is on ``GlobalTableModel``; ``GlobalTable``, the CloudFormationModel made of it, is registered when
this module is imported (moto finds models by ``__subclasses__``); installing ``PATCHES`` clears moto's cached
model maps.
"""

from __future__ import annotations

import copy
import uuid
from typing import Any

from moto.core.common_models import CloudFormationModel

from local.patching import Patches, Target, tags_dict, truthy
from local.services.cloudformation import models
from local.services.cloudformation.resource import Resource
from local.services.dynamodb import options as dynamodb_options
from local.services.dynamodb import replicas as dynamodb_replica_api
from local.services.dynamodb import replication as engine
from local.services.dynamodb.writes import WRITE_LOCK

CFN_TYPE = "AWS::DynamoDB::GlobalTable"
CURRENT_REGION_REQUIRED = (
    "Invalid request provided: The Replicas section must contain an entry for the current region"
)
DEFAULT_CAPACITY = 5  # a PROVISIONED template's capacity units when it gives none

PATCHES = Patches()


class TemplateRefusal(Exception):
    """CloudFormation's own refusal of the resource (its handler's InvalidRequest)."""

    error_type = "InvalidRequest"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _backend(account_id: str, region: str) -> Any:
    from moto.dynamodb.models import dynamodb_backends

    return dynamodb_backends[account_id][region]


def replica_regions(properties: dict[str, Any], region: str) -> list[str]:
    """The template's replica regions, the stack's first; refused when the stack's region is not among them."""
    regions = [str(r.get("Region")) for r in properties.get("Replicas") or [] if isinstance(r, dict)]
    if region not in regions:
        raise TemplateRefusal(CURRENT_REGION_REQUIRED)
    return [region] + [r for r in dict.fromkeys(regions) if r != region]


def replica_spec(properties: dict[str, Any], region: str) -> dict[str, Any]:
    return next((r for r in properties.get("Replicas") or [] if r.get("Region") == region), {})


def _indexes(specs: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    keep = ("IndexName", "KeySchema", "Projection")
    return [{k: copy.deepcopy(s[k]) for k in keep if k in s} for s in specs] if specs else None


def _throughput(properties: dict[str, Any], region: str) -> dict[str, int] | None:
    if properties.get("BillingMode", "PROVISIONED") == "PAY_PER_REQUEST":
        return None
    write = (properties.get("WriteProvisionedThroughputSettings") or {}).get("WriteCapacityUnits")
    read = (replica_spec(properties, region).get("ReadProvisionedThroughputSettings") or {}).get(
        "ReadCapacityUnits"
    )
    return {
        "ReadCapacityUnits": int(read or DEFAULT_CAPACITY),
        "WriteCapacityUnits": int(write or DEFAULT_CAPACITY),
    }


def create_table(name: str, properties: dict[str, Any], account_id: str, region: str) -> Any:
    """The stack region's table (its stream and TTL as the template says)."""
    backend = _backend(account_id, region)
    stream = properties.get("StreamSpecification") or {}
    table = backend.create_table(
        name,
        schema=copy.deepcopy(properties["KeySchema"]),
        throughput=_throughput(properties, region),
        attr=copy.deepcopy(properties.get("AttributeDefinitions") or []),
        global_indexes=_indexes(properties.get("GlobalSecondaryIndexes")),
        indexes=_indexes(properties.get("LocalSecondaryIndexes")),
        streams={"StreamEnabled": True, "StreamViewType": stream["StreamViewType"]} if stream else None,
        billing_mode=properties.get("BillingMode", "PROVISIONED"),
        sse_specification=None,
        tags=[],
        deletion_protection_enabled=False,
        warm_throughput=None,
    )
    apply_ttl(table, properties)
    return table


def apply_ttl(table: Any, properties: dict[str, Any]) -> None:
    """TimeToLiveSpecification (a setting every replica shares), changed only when it differs."""
    spec = properties.get("TimeToLiveSpecification") or {}
    wanted = truthy(spec.get("Enabled"))
    if wanted != (table.ttl.get("TimeToLiveStatus") == "ENABLED"):
        attribute = spec.get("AttributeName") or table.ttl.get("AttributeName", "")
        _backend(table.account_id, table.region_name).update_time_to_live(
            table.name, {"Enabled": wanted, "AttributeName": attribute}
        )


def apply_replica_settings(table: Any, spec: dict[str, Any]) -> None:
    """A replica's own settings: point-in-time recovery, deletion protection, table class, tags."""
    backend = _backend(table.account_id, table.region_name)
    pitr = spec.get("PointInTimeRecoverySpecification") or {}
    enabled = truthy(pitr.get("PointInTimeRecoveryEnabled"))
    point: dict[str, Any] = {"PointInTimeRecoveryEnabled": enabled}
    if enabled:
        point["RecoveryPeriodInDays"] = dynamodb_options.pitr_period(pitr)
    backend.update_continuous_backups(table.name, point)
    table.deletion_protection_enabled = truthy(spec.get("DeletionProtectionEnabled", False))
    if spec.get("TableClass") and spec["TableClass"] != getattr(table, "doctable_table_class", None):
        dynamodb_options.set_table_class(table, spec["TableClass"])
    table.tags = [{"Key": k, "Value": v} for k, v in tags_dict(spec.get("Tags")).items()]
    if not getattr(table, "doctable_table_id", None):
        table.doctable_table_id = str(uuid.uuid4())


def sync_replicas(table: Any, properties: dict[str, Any]) -> None:
    """Add the template's new replicas and remove those it dropped; every replica's own settings applied."""
    wanted = replica_regions(properties, table.region_name)
    group = engine.REGISTRY.group_of(table)
    current = list(group.regions) if group is not None else [table.region_name]
    for region in [r for r in current if r not in wanted]:
        dynamodb_replica_api.update_replicas(table, [{"Delete": {"RegionName": region}}])
    for region in [r for r in wanted if r not in current]:
        dynamodb_replica_api.update_replicas(table, [{"Create": {"RegionName": region}}])
    for region in wanted:
        replica = _backend(table.account_id, region).tables.get(table.name)
        if replica is not None:
            apply_replica_settings(replica, replica_spec(properties, region))


class GlobalTableModel(Resource):
    """An AWS::DynamoDB::GlobalTable: the stack region's table and its replicas."""

    TYPE = CFN_TYPE
    NAME_PROPERTY = "TableName"
    PHYSICAL_ID = "name"
    ATTRIBUTES = ("Arn", "StreamArn", "TableId")

    def __init__(self, account_id: str, region: str, name: str) -> None:
        self.account_id = account_id
        self.region = region
        self.name = name

    def table(self) -> Any:
        return _backend(self.account_id, self.region).tables[self.name]

    def get_cfn_attribute(self, attribute_name: str) -> Any:
        table = self.table()
        if attribute_name == "Arn":
            return table.table_arn
        if attribute_name == "StreamArn":
            return table.describe()["TableDescription"].get("LatestStreamArn")
        if attribute_name == "TableId":
            return table.doctable_table_id
        from moto.cloudformation.exceptions import UnformattedGetAttTemplateException

        raise UnformattedGetAttTemplateException()

    @classmethod
    def create_from_cloudformation_json(  # noqa: D102
        cls,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kw: Any,
    ) -> GlobalTableModel:
        properties = cloudformation_json["Properties"]
        replica_regions(properties, region_name)  # refused before anything is made
        name = str(properties.get("TableName") or resource_name)
        with WRITE_LOCK:
            table = create_table(name, properties, account_id, region_name)
            sync_replicas(table, properties)
        return cls(account_id, region_name, name)

    @classmethod
    def update_from_cloudformation_json(  # noqa: D102
        cls, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
        account_id: str, region_name: str,
    ) -> GlobalTableModel:  # fmt: skip
        properties = cloudformation_json["Properties"]
        replica_regions(properties, region_name)
        table = original_resource.table()
        with WRITE_LOCK:
            apply_ttl(table, properties)
            sync_replicas(table, properties)
        return original_resource  # type: ignore[no-any-return]

    def delete(self, account_id: str, region_name: str) -> None:
        """The other regions' replicas first, then the stack region's table."""
        table = _backend(account_id, region_name).tables.get(self.name)
        if table is None:
            return
        with WRITE_LOCK:
            group = engine.REGISTRY.group_of(table)
            for region in reversed(group.others(region_name) if group is not None else []):
                dynamodb_replica_api.update_replicas(table, [{"Delete": {"RegionName": region}}])
            _backend(account_id, region_name).delete_table(self.name)


class GlobalTable(GlobalTableModel, CloudFormationModel):
    """The registered CloudFormation model of AWS::DynamoDB::GlobalTable (its behaviour: GlobalTableModel)."""


PATCHES.on_install(models.clear_model_maps)  # so that CloudFormation finds AWS::DynamoDB::GlobalTable
# Every moto internal this module relies on: what it replaces (nothing), and what it reads or calls.
MOTO_TARGETS = (
    *PATCHES.targets,
    *models.MODEL_MAP_TARGETS,
    Target("moto.cloudformation.exceptions", "UnformattedGetAttTemplateException"),
    Target("moto.dynamodb.models.table", "Table.describe", ("self", "base_key")),
    Target("moto.dynamodb.models", "dynamodb_backends"),
    Target(
        "moto.dynamodb.models",
        "DynamoDBBackend.create_table",
        ("self", "name", "schema", "throughput", "attr"),
    ),
    Target("moto.dynamodb.models", "DynamoDBBackend.update_time_to_live", ("self", "table_name", "ttl_spec")),
    Target(
        "moto.dynamodb.models",
        "DynamoDBBackend.update_continuous_backups",
        ("self", "table_name", "point_in_time_spec"),
    ),
    Target("moto.dynamodb.models", "DynamoDBBackend.delete_table", ("self", "name")),
)
