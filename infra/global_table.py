"""The document table as a global table (``replicas``): aws_dynamodb.TableV2, which synthesizes
AWS::DynamoDB::GlobalTable (version 2019.11.21), one replica in the stack's region and one per replica region.

The same shape as the single-region table (contract/shape.py): keys, indexes, TTL, on-demand billing and its
caps, warm throughput, the NEW_AND_OLD_IMAGES stream. Options AWS sets per replica (PITR and its window,
deletion protection, table class, contributor insights, tags, on-demand read cap) are given to every replica
alike; the resource policy names the home table's ARN, so only the home replica carries it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import CfnTag, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from constructs import Construct

from contract.knobs import DocTableConfig
from contract.shape import KeyAttribute, TableShape

ATTRIBUTE_TYPES = {
    "S": dynamodb.AttributeType.STRING,
    "N": dynamodb.AttributeType.NUMBER,
    "B": dynamodb.AttributeType.BINARY,
}


def _attribute(key: KeyAttribute) -> dynamodb.Attribute:
    return dynamodb.Attribute(name=key.name, type=ATTRIBUTE_TYPES[key.type])


def _warm(warm: dict[str, int] | None) -> dynamodb.WarmThroughput | None:
    if not warm:
        return None
    return dynamodb.WarmThroughput(
        read_units_per_second=warm.get("ReadUnitsPerSecond"),
        write_units_per_second=warm.get("WriteUnitsPerSecond"),
    )


def _encryption(config: DocTableConfig) -> dynamodb.TableEncryptionV2:
    # A customer managed key is refused with replicas (contract/knobs.py): each region would need its own key.
    if config.aws_managed_key:
        return dynamodb.TableEncryptionV2.aws_managed_key()
    return dynamodb.TableEncryptionV2.dynamo_owned_key()


def _indexes(
    shape: TableShape,
) -> tuple[list[dynamodb.GlobalSecondaryIndexPropsV2], list[dynamodb.LocalSecondaryIndexProps]]:
    global_indexes, local_indexes = [], []
    for index in shape.indexes:
        sort_key = _attribute(index.keys[1]) if len(index.keys) > 1 else None
        projection = dynamodb.ProjectionType(index.projection)
        non_key = list(index.non_key_attributes) or None
        if not index.is_global:
            assert sort_key is not None  # an LSI's sort key is required (contract/indexes.py)
            local_indexes.append(
                dynamodb.LocalSecondaryIndexProps(
                    index_name=index.name,
                    sort_key=sort_key,
                    projection_type=projection,
                    non_key_attributes=non_key,
                )
            )
            continue
        caps = index.on_demand_throughput or {}
        global_indexes.append(
            dynamodb.GlobalSecondaryIndexPropsV2(
                index_name=index.name,
                partition_key=_attribute(index.keys[0]),
                sort_key=sort_key,
                projection_type=projection,
                non_key_attributes=non_key,
                max_read_request_units=caps.get("MaxReadRequestUnits"),
                max_write_request_units=caps.get("MaxWriteRequestUnits"),
                warm_throughput=_warm(index.warm_throughput),
            )
        )
    return global_indexes, local_indexes


def global_table(
    scope: Construct,
    construct_id: str,
    *,
    shape: TableShape,
    config: DocTableConfig,
    resource_policy: iam.PolicyDocument | None,
    replica_regions: Sequence[str] | None = None,
    retain: bool | None = None,
) -> dynamodb.TableV2:
    """The global table of ``shape`` with a replica in each of ``replica_regions`` (default ``config.replicas``)
    besides the stack's region; ``retain`` (default ``config.retain_on_delete``): DeletionPolicy Retain."""
    regions = list(config.replicas if replica_regions is None else replica_regions)
    retained = config.retain_on_delete if retain is None else retain
    caps = shape.on_demand_throughput or {}
    global_indexes, local_indexes = _indexes(shape)
    # AWS::DynamoDB::GlobalTable has no table-level Tags: each replica carries them (the stack's Tags aspect does
    # not reach them).
    tags = [CfnTag(key=key, value=value) for key, value in {**config.tags(), "Name": shape.name}.items()]
    replica_options: dict[str, Any] = dict(
        # Explicit either way, so turning the knob off on a live table really turns PITR off.
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=shape.pitr, recovery_period_in_days=shape.pitr_days
        ),
        deletion_protection=shape.deletion_protection,
        table_class=dynamodb.TableClass(shape.table_class),
        # Explicit either way, so turning the knob off on a live table really disables it.
        contributor_insights_specification=dynamodb.ContributorInsightsSpecification(
            enabled=shape.contributor_insights_enabled,
            mode=dynamodb.ContributorInsightsMode(shape.contributor_insights_mode)
            if shape.contributor_insights_mode
            else None,
        ),
        tags=tags,
    )
    assert shape.stream_view_type is not None  # replicas need stream=new-and-old (contract/knobs.py)
    table = dynamodb.TableV2(
        scope,
        construct_id,
        table_name=shape.name,
        partition_key=_attribute(shape.partition_key),
        sort_key=_attribute(shape.sort_key),
        billing=dynamodb.Billing.on_demand(
            max_read_request_units=caps.get("MaxReadRequestUnits"),
            max_write_request_units=caps.get("MaxWriteRequestUnits"),
        ),
        dynamo_stream=dynamodb.StreamViewType(shape.stream_view_type),
        time_to_live_attribute=shape.ttl_attribute,
        warm_throughput=_warm(shape.warm_throughput),
        global_secondary_indexes=global_indexes or None,
        local_secondary_indexes=local_indexes or None,
        encryption=_encryption(config),
        resource_policy=resource_policy,
        replicas=[dynamodb.ReplicaTableProps(region=region, **replica_options) for region in regions],
        removal_policy=RemovalPolicy.RETAIN if retained else RemovalPolicy.DESTROY,
        **replica_options,
    )
    if resource_policy is not None:
        # TableV2 copies the table's resource policy to every replica; the document names the home table's ARN
        # (infra/encryption.py), so it stays on the home replica alone. TableV2 lists the replicas given first,
        # in their order, and the stack region's replica last.
        cfn = table.node.default_child
        assert isinstance(cfn, dynamodb.CfnGlobalTable)
        for number in range(len(regions)):
            cfn.add_property_deletion_override(f"Replicas.{number}.ResourcePolicy")
    return table
