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
from contract.shape import TableShape
from infra.data import spec


def _encryption(config: DocTableConfig) -> dynamodb.TableEncryptionV2:
    # A customer managed key is refused with replicas (contract/knobs/__init__.py): each region would need its own key.
    if config.aws_managed_key:
        return dynamodb.TableEncryptionV2.aws_managed_key()
    return dynamodb.TableEncryptionV2.dynamo_owned_key()


def _indexes(
    shape: TableShape,
) -> tuple[list[dynamodb.GlobalSecondaryIndexPropsV2], list[dynamodb.LocalSecondaryIndexProps]]:
    declared = spec.indexes(shape)
    return (
        [dynamodb.GlobalSecondaryIndexPropsV2(**index.props) for index in declared if index.is_global],
        [dynamodb.LocalSecondaryIndexProps(**index.props) for index in declared if not index.is_global],
    )


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
        point_in_time_recovery_specification=spec.pitr(shape),
        deletion_protection=shape.deletion_protection,
        table_class=dynamodb.TableClass(shape.table_class),
        contributor_insights_specification=spec.contributor_insights(shape),
        tags=tags,
    )
    assert shape.stream_view_type is not None  # replicas need stream=new-and-old (contract/knobs/__init__.py)
    table = dynamodb.TableV2(
        scope,
        construct_id,
        table_name=shape.name,
        partition_key=spec.attribute(shape.partition_key),
        sort_key=spec.attribute(shape.sort_key),
        billing=dynamodb.Billing.on_demand(
            max_read_request_units=caps.get("MaxReadRequestUnits"),
            max_write_request_units=caps.get("MaxWriteRequestUnits"),
        ),
        dynamo_stream=dynamodb.StreamViewType(shape.stream_view_type),
        time_to_live_attribute=shape.ttl_attribute,
        warm_throughput=spec.warm_throughput(shape.warm_throughput),
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
        # (infra/data/encryption.py), so it stays on the home replica alone. TableV2 lists the replicas given first,
        # in their order, and the stack region's replica last.
        cfn = table.node.default_child
        assert isinstance(cfn, dynamodb.CfnGlobalTable)
        for number in range(len(regions)):
            cfn.add_property_deletion_override(f"Replicas.{number}.ResourcePolicy")
    return table
