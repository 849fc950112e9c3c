"""The table's shape (contract/shape.py) mapped to the CDK's DynamoDB properties, once, for both table constructs:
aws_dynamodb.Table for a single-region table (infra/data/table.py) and TableV2 for a global one (infra/data/global_table.py)
take the same keys, index declarations, warm throughput, PITR and contributor-insights specifications."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import aws_dynamodb as dynamodb

from contract.shape import KeyAttribute, TableShape

ATTRIBUTE_TYPES = {
    "S": dynamodb.AttributeType.STRING,
    "N": dynamodb.AttributeType.NUMBER,
    "B": dynamodb.AttributeType.BINARY,
}


def attribute(key: KeyAttribute) -> dynamodb.Attribute:
    return dynamodb.Attribute(name=key.name, type=ATTRIBUTE_TYPES[key.type])


def warm_throughput(warm: dict[str, int] | None) -> dynamodb.WarmThroughput | None:
    if not warm:
        return None
    return dynamodb.WarmThroughput(
        read_units_per_second=warm.get("ReadUnitsPerSecond"),
        write_units_per_second=warm.get("WriteUnitsPerSecond"),
    )


def pitr(shape: TableShape) -> dynamodb.PointInTimeRecoverySpecification:
    # Explicit either way, so turning the knob off on a live table really turns PITR off.
    return dynamodb.PointInTimeRecoverySpecification(
        point_in_time_recovery_enabled=shape.pitr, recovery_period_in_days=shape.pitr_days
    )


def contributor_insights(shape: TableShape) -> dynamodb.ContributorInsightsSpecification:
    # Explicit either way, so turning the knob off on a live table really disables it.
    return dynamodb.ContributorInsightsSpecification(
        enabled=shape.contributor_insights_enabled,
        mode=dynamodb.ContributorInsightsMode(shape.contributor_insights_mode)
        if shape.contributor_insights_mode
        else None,
    )


@dataclass(frozen=True)
class Index:
    """One declared index as the keyword arguments both constructs take: for a GSI, those of
    ``add_global_secondary_index`` and ``GlobalSecondaryIndexPropsV2``; for an LSI, those of
    ``add_local_secondary_index`` and ``LocalSecondaryIndexProps``."""

    is_global: bool
    props: dict[str, Any]


def indexes(shape: TableShape) -> list[Index]:
    """The shape's indexes in declaration order (the order the table registers their key attributes in)."""
    found = []
    for index in shape.indexes:
        # A GSI added to a live table is an online backfill; an LSI exists only from the table's creation.
        sort_key = attribute(index.sort_keys[0]) if len(index.sort_keys) == 1 else None
        common = dict(
            index_name=index.name,
            projection_type=dynamodb.ProjectionType(index.projection),
            non_key_attributes=list(index.non_key_attributes) or None,
        )
        if not index.is_global:
            assert sort_key is not None  # an LSI's sort key is required (contract/indexes.py)
            found.append(Index(False, dict(common, sort_key=sort_key)))
            continue
        caps = index.on_demand_throughput or {}
        # A multi-attribute key (up to four attributes each) takes the CDK's partition_keys/sort_keys, in order;
        # a single-attribute index keeps partition_key/sort_key, so its template is unchanged.
        keys: dict[str, Any] = (
            dict(
                partition_keys=[attribute(k) for k in index.partition_keys],
                sort_keys=[attribute(k) for k in index.sort_keys] or None,
            )
            if index.multi_attribute
            else dict(partition_key=attribute(index.partition_keys[0]), sort_key=sort_key)
        )
        props = dict(
            common,
            **keys,
            max_read_request_units=caps.get("MaxReadRequestUnits"),
            max_write_request_units=caps.get("MaxWriteRequestUnits"),
            warm_throughput=warm_throughput(index.warm_throughput),
        )
        found.append(Index(True, props))
    return found
