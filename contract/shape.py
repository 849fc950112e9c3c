"""The deployed shape the knobs promise, as plain data: what the stack builds, what preflight compares a live
table with, and what verify expects. A pure function of the config, so the three cannot drift apart."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from contract import names
from contract.indexes import GLOBAL as GLOBAL_INDEX
from contract.indexes import LOCAL as LOCAL_INDEX
from contract.indexes import PROJECTION_CFN, IndexSpec, key_text
from contract.knobs import GSI_SHORTHAND, KNOBS, TABLE_CLASS_DEFAULT_CFN, DocTableConfig, resolve_config
from contract.subscribers import SubscriberSpec

STRING = "S"
HASH, RANGE = "HASH", "RANGE"
PROJECTION_ALL = "ALL"
BILLING_MODE = "PAY_PER_REQUEST"
PITR_DEFAULT_DAYS = 35  # what AWS keeps when RecoveryPeriodInDays is not given
# The CloudFormation type of the table: a single-region table, or a global table (``replicas`` set).
TABLE_TYPE, GLOBAL_TABLE_TYPE = "AWS::DynamoDB::Table", "AWS::DynamoDB::GlobalTable"


@dataclass(frozen=True)
class KeyAttribute:
    name: str
    key_type: str  # HASH | RANGE
    type: str = STRING


@dataclass(frozen=True)
class IndexShape:
    """A secondary index as DescribeTable reports it (and CloudFormation declares it)."""

    name: str
    keys: tuple[KeyAttribute, ...]
    projection: str = PROJECTION_ALL  # Projection.ProjectionType: ALL | KEYS_ONLY | INCLUDE
    non_key_attributes: tuple[str, ...] = ()  # Projection.NonKeyAttributes, with INCLUDE
    is_global: bool = True  # False: a local secondary index (the table's partition key, from creation only)
    on_demand_throughput: dict[str, int] | None = None  # OnDemandThroughput; a GSI's only
    warm_throughput: dict[str, int] | None = None  # WarmThroughput; a GSI's only

    def key_schema(self) -> list[dict[str, str]]:
        return [{"AttributeName": k.name, "KeyType": k.key_type} for k in self.keys]

    @property
    def partition_keys(self) -> tuple[KeyAttribute, ...]:
        """The partition key's attributes in order (a GSI may have up to four: multi-attribute keys)."""
        return tuple(k for k in self.keys if k.key_type == HASH)

    @property
    def sort_keys(self) -> tuple[KeyAttribute, ...]:
        """The sort key's attributes in order (none, one, or up to four for a GSI)."""
        return tuple(k for k in self.keys if k.key_type == RANGE)

    @property
    def multi_attribute(self) -> bool:
        return len(self.partition_keys) > 1 or len(self.sort_keys) > 1

    @property
    def kind(self) -> str:
        return GLOBAL_INDEX if self.is_global else LOCAL_INDEX

    def projection_cfn(self) -> dict[str, Any]:
        """``Projection`` as CloudFormation and DescribeTable spell it."""
        projection: dict[str, Any] = {"ProjectionType": self.projection}
        if self.non_key_attributes:
            projection["NonKeyAttributes"] = list(self.non_key_attributes)
        return projection

    def definition(self) -> dict[str, Any]:
        """The index's entry in the table's GlobalSecondaryIndexes / LocalSecondaryIndexes."""
        out: dict[str, Any] = {
            "IndexName": self.name,
            "KeySchema": self.key_schema(),
            "Projection": self.projection_cfn(),
        }
        if self.on_demand_throughput:
            out["OnDemandThroughput"] = dict(self.on_demand_throughput)
        if self.warm_throughput:
            out["WarmThroughput"] = dict(self.warm_throughput)
        return out


@dataclass(frozen=True)
class TableShape:
    name: str
    keys: tuple[KeyAttribute, ...]
    indexes: tuple[IndexShape, ...]
    stream_view_type: str | None
    ttl_attribute: str | None
    pitr: bool
    deletion_protection: bool
    billing_mode: str = BILLING_MODE
    table_class: str = TABLE_CLASS_DEFAULT_CFN  # TableClass
    on_demand_throughput: dict[str, int] | None = None  # OnDemandThroughput; None: no cap
    warm_throughput: dict[str, int] | None = None  # WarmThroughput; None: left to DynamoDB
    pitr_days: int | None = None  # RecoveryPeriodInDays; None: AWS's default (35) when PITR is on
    contributor_insights_mode: str | None = None  # ContributorInsightsSpecification.Mode; None: disabled
    replicas: tuple[str, ...] = ()  # the regions besides the home one holding a replica (a global table)

    @property
    def resource_type(self) -> str:
        """The CloudFormation type of the table: a global table once it has replicas."""
        return GLOBAL_TABLE_TYPE if self.replicas else TABLE_TYPE

    @property
    def partition_key(self) -> KeyAttribute:
        return next(k for k in self.keys if k.key_type == HASH)

    @property
    def sort_key(self) -> KeyAttribute:
        return next(k for k in self.keys if k.key_type == RANGE)

    def key_schema(self) -> list[dict[str, str]]:
        """As DescribeTable's ``KeySchema``."""
        return [{"AttributeName": k.name, "KeyType": k.key_type} for k in self.keys]

    def attribute_definitions(self) -> dict[str, str]:
        """Every key attribute of the table and its indexes, name -> type."""
        attrs = {k.name: k.type for k in self.keys}
        for index in self.indexes:
            attrs.update({k.name: k.type for k in index.keys})
        return attrs

    def index(self, name: str) -> IndexShape | None:
        return next((i for i in self.indexes if i.name == name), None)

    @property
    def global_indexes(self) -> tuple[IndexShape, ...]:
        return tuple(i for i in self.indexes if i.is_global)

    @property
    def local_indexes(self) -> tuple[IndexShape, ...]:
        return tuple(i for i in self.indexes if not i.is_global)

    @property
    def recovery_period_days(self) -> int | None:
        """The PITR window DescribeContinuousBackups reports: the knob's, else AWS's default; None without PITR."""
        if not self.pitr:
            return None
        return self.pitr_days or PITR_DEFAULT_DAYS

    @property
    def contributor_insights_enabled(self) -> bool:
        return self.contributor_insights_mode is not None


# Stream event names, and the mapping's metric group that counts its events (polled, filtered out, invoked,
# failed to invoke, dropped, sent to the on-failure destination).
EVENT_INSERT, EVENT_MODIFY, EVENT_REMOVE = "INSERT", "MODIFY", "REMOVE"
MAPPING_METRIC_EVENT_COUNT = "EventCount"


KINESIS_FILTER_KEY = "data"  # a Kinesis record's filters address its base64 data, decoded as JSON


def cleanup_filter_patterns(kinesis: bool = False) -> tuple[str, ...]:
    """Lambda filter patterns (ORed) passing only the records that can need blob cleanup: every REMOVE, and a
    MODIFY whose old image lists blobs (docs/data-contract.md: a list of string keys and of manifest entries,
    ``{"M": {"key": {"S": ...}, ...}}``, or a string set). Arrays in the event are matched element by element, so
    ``L.S`` exists when the list holds at least one string and ``L.M.key.S`` when it holds at least one map with a
    string ``key``. ``kinesis``: the same patterns for a mapping on the Kinesis data stream, nested under
    ``data``, which holds the change record."""
    exists = [{"exists": True}]
    old_blobs = ({"L": {"S": exists}}, {"L": {"M": {"key": {"S": exists}}}}, {"SS": exists})
    patterns: list[dict[str, object]] = [{"eventName": [EVENT_REMOVE]}]
    patterns += [
        {"eventName": [EVENT_MODIFY], "dynamodb": {"OldImage": {names.BLOBS_ATTRIBUTE: blobs}}}
        for blobs in old_blobs
    ]
    if kinesis:
        patterns = [{KINESIS_FILTER_KEY: p} for p in patterns]
    return tuple(json.dumps(p, separators=(",", ":"), sort_keys=True) for p in patterns)


@dataclass(frozen=True)
class MappingShape:
    """The event-source mapping's settings as GetEventSourceMapping reports them."""

    starting_position: str
    batch_size: int
    batching_window: int
    max_retries: int
    max_record_age: int
    parallelization_factor: int
    bisect_on_error: bool
    function_response_types: tuple[str, ...]
    on_failure_is_bucket: bool  # the failure destination is the stack's S3 bucket (never absent)
    filter_patterns: tuple[str, ...] = ()  # FilterCriteria.Filters[].Pattern; empty: every record delivered
    metrics: tuple[str, ...] = ()  # MetricsConfig.Metrics; empty: no mapping metrics

    @property
    def filter_criteria(self) -> dict[str, list[dict[str, str]]] | None:
        """FilterCriteria as CloudFormation and GetEventSourceMapping spell it; None without a filter."""
        if not self.filter_patterns:
            return None
        return {"Filters": [{"Pattern": pattern} for pattern in self.filter_patterns]}

    @property
    def metrics_config(self) -> dict[str, list[str]] | None:
        """MetricsConfig as CloudFormation and GetEventSourceMapping spell it; None without metrics."""
        return {"Metrics": list(self.metrics)} if self.metrics else None

    @property
    def nudge_event(self) -> str:
        """The stream event a write must make for the consumer to receive it: an INSERT passes no filter."""
        return EVENT_REMOVE if self.filter_patterns else EVENT_INSERT

    def live_fields(self) -> dict[str, object]:
        """Field name in GetEventSourceMapping -> expected value, for the settings that can drift in place."""
        return {
            "BatchSize": self.batch_size,
            "MaximumBatchingWindowInSeconds": self.batching_window,
            "MaximumRetryAttempts": self.max_retries,
            "MaximumRecordAgeInSeconds": self.max_record_age,
            "ParallelizationFactor": self.parallelization_factor,
            "BisectBatchOnFunctionError": self.bisect_on_error,
            "FunctionResponseTypes": list(self.function_response_types),
            "FilterCriteria": self.filter_criteria,
            "MetricsConfig": self.metrics_config,
        }


def index_shape(spec: IndexSpec) -> IndexShape:
    """A declared index as the table will carry it."""
    keys = [KeyAttribute(name, HASH, kind) for name, kind in spec.partition_keys]
    keys += [KeyAttribute(name, RANGE, kind) for name, kind in spec.sort_keys]
    caps = {"MaxReadRequestUnits": spec.max_read, "MaxWriteRequestUnits": spec.max_write}
    warm = {"ReadUnitsPerSecond": spec.warm_read, "WriteUnitsPerSecond": spec.warm_write}
    return IndexShape(
        name=spec.name,
        keys=tuple(keys),
        projection=spec.projection_cfn,
        non_key_attributes=spec.include,
        is_global=spec.is_global,
        on_demand_throughput={k: v for k, v in caps.items() if v is not None} or None,
        warm_throughput={k: v for k, v in warm.items() if v is not None} or None,
    )


GSI1 = index_shape(GSI_SHORTHAND[0])
PROJECTION_NAMES = {cfn: name for name, cfn in PROJECTION_CFN.items()}


def index_declaration(index: IndexShape) -> dict[str, Any]:
    """An index (declared or live) as the settings file writes it: index_shape of its parse gives it back."""
    out: dict[str, Any] = {}
    if not index.is_global:
        out["kind"] = LOCAL_INDEX
    if index.is_global and index.partition_keys:
        out["partition"] = key_text(tuple((k.name, k.type) for k in index.partition_keys))
    if index.sort_keys:
        out["sort"] = key_text(tuple((k.name, k.type) for k in index.sort_keys))
    out["projection"] = PROJECTION_NAMES.get(index.projection, index.projection)
    if index.non_key_attributes:
        out["include"] = list(index.non_key_attributes)
    caps, warm = index.on_demand_throughput or {}, index.warm_throughput or {}
    for field, value in (
        ("max_read", caps.get("MaxReadRequestUnits")),
        ("max_write", caps.get("MaxWriteRequestUnits")),
        ("warm_read", warm.get("ReadUnitsPerSecond")),
        ("warm_write", warm.get("WriteUnitsPerSecond")),
    ):
        if value is not None:
            out[field] = value
    return out


def table_shape(config: DocTableConfig) -> TableShape:
    return TableShape(
        name=config.table_name,
        keys=(KeyAttribute(names.PARTITION_KEY, HASH), KeyAttribute(names.SORT_KEY, RANGE)),
        indexes=((GSI1,) if config.has_gsi else ()) + tuple(index_shape(spec) for spec in config.indexes),
        stream_view_type=config.stream_view_type,
        ttl_attribute=names.TTL_ATTRIBUTE if config.has_ttl else None,
        pitr=config.has_pitr,
        deletion_protection=config.deletion_protection,
        table_class=config.table_class_cfn,
        on_demand_throughput=config.on_demand_throughput,
        warm_throughput=config.warm_throughput,
        pitr_days=config.pitr_days,
        contributor_insights_mode=config.contributor_insights_mode,
        replicas=config.replicas,
    )


def mapping_shape(config: DocTableConfig) -> MappingShape | None:
    """None when the stack wires no mapping (no stream, or consumer=none)."""
    if not config.has_mapping:
        return None
    return _mapping_of(
        config,
        cleanup_filter_patterns(config.reads_kinesis) if config.filters_events else (),
        (MAPPING_METRIC_EVENT_COUNT,) if config.has_mapping_metrics else (),
    )


def _mapping_of(options: DocTableConfig, patterns: tuple[str, ...], metrics: tuple[str, ...]) -> MappingShape:
    """A mapping of the stack's (the consumer's or a subscriber's): its options, bisect and partial-batch responses
    on, a failure bucket as on-failure destination, its filters and metrics."""
    return MappingShape(
        starting_position=options.starting_position_cfn,
        batch_size=options.batch_size,
        batching_window=options.batching_window,
        max_retries=options.max_retries,
        max_record_age=options.max_record_age,
        parallelization_factor=options.parallelization_factor,
        bisect_on_error=True,
        function_response_types=names.FUNCTION_RESPONSE_TYPES,
        on_failure_is_bucket=True,
        filter_patterns=patterns,
        metrics=metrics,
    )


SSE_TYPE_KMS = "KMS"


@dataclass(frozen=True)
class EncryptionShape:
    """Encryption at rest as DescribeTable's SSEDescription reports it, and the table's resource policy."""

    # KMS with an AWS managed or customer managed key; None: the AWS owned key (no SSEDescription)
    sse_type: str | None
    customer_managed: bool
    # The kms_key knob; None when the stack creates the key (read from its KmsKeyArn output)
    borrowed_key_arn: str | None
    resource_policy_path: str | None  # the document attached to the table; None: no resource policy


def encryption_shape(config: DocTableConfig) -> EncryptionShape:
    kms = config.customer_managed_key or config.aws_managed_key
    return EncryptionShape(
        sse_type=SSE_TYPE_KMS if kms else None,
        customer_managed=config.customer_managed_key,
        borrowed_key_arn=config.borrowed_kms_key_arn,
        resource_policy_path=config.resource_policy_path,
    )


TRACING_ACTIVE = "Active"


@dataclass(frozen=True)
class ConsumerShape:
    """The built-in consumer function: its settings and the environment the knobs write (the bucket's and the
    table's physical names are added where they are known: a token in the stack, an output once deployed)."""

    runtime: str
    architecture: str
    memory: int
    timeout: int
    tracing: str
    environment: dict[str, str]
    # SnapStart on published versions: the mapping's alias targets the version published at each change.
    snapstart: bool = False

    def with_names(self, blob_bucket: str, table_name: str) -> dict[str, str]:
        return {names.ENV_BLOB_BUCKET: blob_bucket, names.ENV_TABLE_NAME: table_name, **self.environment}


def consumer_shape(config: DocTableConfig) -> ConsumerShape | None:
    """None without the built-in consumer."""
    if not config.builtin_consumer:
        return None
    return ConsumerShape(
        runtime=names.LAMBDA_RUNTIME,
        architecture=config.architecture,
        memory=config.memory,
        timeout=config.timeout,
        tracing=TRACING_ACTIVE,
        snapstart=config.snapstart,
        environment={
            names.ENV_BLOB_ROOT: config.blob_root,
            names.ENV_BLOB_KEY_REUSE: config.blob_key_reuse,
            names.ENV_BLOB_PREFIX_CLEANUP: names.ENV_FLAG_ON
            if config.blob_prefix_cleanup
            else names.ENV_FLAG_OFF,
            names.ENV_ENVIRONMENT: config.env,
            "POWERTOOLS_SERVICE_NAME": names.SERVICE_NAME,
            "POWERTOOLS_METRICS_NAMESPACE": names.METRICS_NAMESPACE,
            "POWERTOOLS_LOG_LEVEL": "INFO",
        },
    )


def subscriber_options(config: DocTableConfig, spec: SubscriberSpec) -> DocTableConfig:
    """A subscriber's options: the consumer's knobs with the subscriber's own over them (batch size, window,
    retries, memory...), resolved as the knobs are."""
    values = {**config.knob_values(), **dict(spec.options)}
    declared = {name: values[name] for name in KNOBS if name in values}
    return resolve_config(context={}, environ={}, defaults=declared, indexes=config.index_declarations)


def subscriber_mapping_shape(config: DocTableConfig, spec: SubscriberSpec) -> MappingShape:
    """A subscriber's mapping (infra/compute/subscribers.py declares it, preflight compares the live one with it): its
    options, bisect and partial-batch responses on, its own failure bucket, its filters (under ``data`` on
    Kinesis), no metrics. Whatever the consumer is: a stack with consumer=none still maps its subscribers."""
    patterns = tuple(
        json.dumps({KINESIS_FILTER_KEY: json.loads(p)}) if spec.reads_kinesis else p for p in spec.filters
    )
    return _mapping_of(subscriber_options(config, spec), patterns, ())
