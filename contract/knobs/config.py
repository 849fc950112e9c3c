"""The config type: ``DocTableConfig``, the resolved knobs, one field per knob in the order the docs and the
settings file show them (each knob declared in its area's module), and the derived facts every downstream
decision reads (``has_gsi``, ``starting_position_cfn``, ...), never the raw strings; ``KNOBS``, the declarations
in that order, and their defaults."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from contract import indexes as index_specs
from contract import names
from contract import subscribers as subscriber_specs
from contract.knobs import consumer as consumer_knobs
from contract.knobs import environment as environment_knobs
from contract.knobs import naming as naming_knobs
from contract.knobs import replicas as replica_knobs
from contract.knobs import stream as stream_knobs
from contract.knobs import table as table_knobs
from contract.knobs.consumer import (
    BUCKET_NAMES_EXACT,
    CONSUMER_BUILTIN,
    KEY_REUSE_GUARDED,
    POWERTOOLS_BUNDLED,
)
from contract.knobs.declare import KNOB_METADATA, NONE, OFF, ON, Knob, knob
from contract.knobs.environment import (
    DEPLOY_LOCAL,
    MANAGED_BY,
    PITR_TIERS,
    PLAN_SOURCE,
    PLAN_VERSION,
    PROD_TIER,
    PROTECTED_TIERS,
    RETAINING_TIERS,
)
from contract.knobs.naming import STACK_PREFIX
from contract.knobs.stream import (
    EVENTS_CLEANUP,
    SOURCE_KINESIS,
    STARTING_POSITION_CFN,
    STREAM_VIEW_TYPES,
)
from contract.knobs.table import (
    CONTRIBUTOR_INSIGHTS_CFN,
    ENCRYPTION_AWS_MANAGED,
    ENCRYPTION_CUSTOMER_MANAGED,
    TABLE_CLASS_CFN,
)

INDEXES = "indexes"  # the settings key (and knob-record key) of the declared indexes


@dataclass(frozen=True)
class DocTableConfig:
    """The resolved knobs. Each knob's field carries its whole declaration (its ``Knob``, from its area's module);
    derived facts follow as properties."""

    gsi: str = knob(table_knobs.GSI)
    ttl: str = knob(table_knobs.TTL)
    stream: str = knob(stream_knobs.STREAM)
    pitr: str = knob(table_knobs.PITR)
    table_base: str = knob(naming_knobs.TABLE_BASE)
    env: str = knob(environment_knobs.ENV)
    tier: str = knob(environment_knobs.TIER)
    cost_center: str = knob(environment_knobs.COST_CENTER)
    owner: str = knob(environment_knobs.OWNER)
    consumer: str = knob(consumer_knobs.CONSUMER)
    blob_bucket: str = knob(consumer_knobs.BLOB_BUCKET)
    bucket_names: str = knob(consumer_knobs.BUCKET_NAMES)
    blob_root: str = knob(consumer_knobs.BLOB_ROOT)
    blob_prefix_cleanup: bool = knob(consumer_knobs.BLOB_PREFIX_CLEANUP)
    blob_key_reuse: str = knob(consumer_knobs.BLOB_KEY_REUSE)
    snapstart: bool = knob(consumer_knobs.SNAPSTART)
    starting_position: str = knob(stream_knobs.STARTING_POSITION)
    batch_size: int = knob(stream_knobs.BATCH_SIZE)
    batching_window: int = knob(stream_knobs.BATCHING_WINDOW)
    max_retries: int = knob(stream_knobs.MAX_RETRIES)
    max_record_age: int = knob(stream_knobs.MAX_RECORD_AGE)
    parallelization_factor: int = knob(stream_knobs.PARALLELIZATION_FACTOR)
    powertools: str = knob(consumer_knobs.POWERTOOLS)
    architecture: str = knob(consumer_knobs.ARCHITECTURE)
    memory: int = knob(consumer_knobs.MEMORY)
    timeout: int = knob(consumer_knobs.TIMEOUT)
    deploy_target: str = knob(environment_knobs.DEPLOY_TARGET)
    events: str = knob(stream_knobs.EVENTS)
    mapping_metrics: bool = knob(stream_knobs.MAPPING_METRICS)
    table_class: str = knob(table_knobs.TABLE_CLASS)
    max_read: int | None = knob(table_knobs.MAX_READ)
    max_write: int | None = knob(table_knobs.MAX_WRITE)
    warm_read: int | None = knob(table_knobs.WARM_READ)
    warm_write: int | None = knob(table_knobs.WARM_WRITE)
    pitr_days: int | None = knob(table_knobs.PITR_DAYS)
    deletion_protection: bool = knob(table_knobs.DELETION_PROTECTION)
    contributor_insights: str = knob(table_knobs.CONTRIBUTOR_INSIGHTS)
    encryption: str = knob(table_knobs.ENCRYPTION)
    kms_key: str = knob(table_knobs.KMS_KEY)
    resource_policy: str = knob(table_knobs.RESOURCE_POLICY)
    kinesis: str = knob(stream_knobs.KINESIS)
    consumer_source: str = knob(stream_knobs.CONSUMER_SOURCE)
    replicas: tuple[str, ...] = knob(replica_knobs.REPLICAS)

    # ---- derived facts: every downstream decision reads these, never the raw strings ----
    # The table's own secondary indexes: structured, so declared only in the settings file (contract/indexes.py),
    # never by -c or DOCTABLE_ variables; not a knob.
    indexes: tuple[index_specs.IndexSpec, ...] = field(default=())
    # A team's own stream consumers (contract/subscribers.py): declared in the settings file only; not a knob.
    subscribers: tuple[subscriber_specs.SubscriberSpec, ...] = field(default=())
    # A preview environment's template and expiry (PREVIEW_CONTEXT), carried to its stacks' tags; not knobs.
    preview_of: str = field(default="")
    expires_at: str = field(default="")
    # The project's identity (contract/settings/project.py), the Project tag: the settings file gives it; not a knob.
    project: str = field(default="")

    @property
    def table_name(self) -> str:
        return f"{self.table_base}-{self.env}"

    @property
    def stack_name(self) -> str:
        return f"{STACK_PREFIX}{self.table_name}"

    @property
    def exact_bucket_names(self) -> bool:
        """The stack names its buckets itself (contract.names.bucket_name), not CloudFormation."""
        return self.bucket_names == BUCKET_NAMES_EXACT

    @property
    def is_global(self) -> bool:
        """The table has replicas in other regions: an AWS::DynamoDB::GlobalTable."""
        return bool(self.replicas)

    def replica_stack_name(self, region: str) -> str:
        """The stack of the consumer reading the replica in ``region``."""
        return f"{self.stack_name}-{region}"

    @property
    def has_gsi(self) -> bool:
        return self.gsi == names.GSI_NAME

    @property
    def has_ttl(self) -> bool:
        return self.ttl == ON

    @property
    def has_stream(self) -> bool:
        return self.stream in STREAM_VIEW_TYPES

    @property
    def stream_view_type(self) -> str | None:
        """The table's StreamViewType, or None without a stream."""
        return STREAM_VIEW_TYPES.get(self.stream)

    @property
    def has_pitr(self) -> bool:
        return self.pitr == ON

    @property
    def builtin_consumer(self) -> bool:
        return self.consumer == CONSUMER_BUILTIN

    @property
    def borrowed_consumer_arn(self) -> str | None:
        return self.consumer if self.consumer.startswith("arn:") else None

    @property
    def has_mapping(self) -> bool:
        return self.builtin_consumer or self.borrowed_consumer_arn is not None

    @property
    def guards_key_reuse(self) -> bool:
        """The consumer observes each dropped key and reads the live items before a conditional delete."""
        return self.blob_key_reuse == KEY_REUSE_GUARDED

    @property
    def has_kinesis(self) -> bool:
        """Table changes are also written to a Kinesis data stream (Kinesis Data Streams for DynamoDB)."""
        return self.kinesis != OFF

    @property
    def creates_kinesis_stream(self) -> bool:
        return self.kinesis == ON

    @property
    def borrowed_kinesis_arn(self) -> str | None:
        return self.kinesis if self.kinesis.startswith("arn:") else None

    @property
    def reads_kinesis(self) -> bool:
        """The mapping reads the Kinesis data stream instead of the table's DynamoDB stream."""
        return self.has_mapping and self.consumer_source == SOURCE_KINESIS

    @property
    def pitr_by_default(self) -> bool:
        """The environment turns PITR on unless the knob sets it off."""
        return self.tier in PITR_TIERS

    @property
    def table_class_cfn(self) -> str:
        return TABLE_CLASS_CFN[self.table_class]

    @property
    def on_demand_throughput(self) -> dict[str, int] | None:
        """OnDemandThroughput as CloudFormation and DescribeTable spell it; None without a cap."""
        caps = {"MaxReadRequestUnits": self.max_read, "MaxWriteRequestUnits": self.max_write}
        return {k: v for k, v in caps.items() if v is not None} or None

    @property
    def warm_throughput(self) -> dict[str, int] | None:
        """WarmThroughput as CloudFormation spells it; None when the knobs leave it to DynamoDB."""
        warm = {"ReadUnitsPerSecond": self.warm_read, "WriteUnitsPerSecond": self.warm_write}
        return {k: v for k, v in warm.items() if v is not None} or None

    @property
    def contributor_insights_mode(self) -> str | None:
        """ContributorInsightsSpecification.Mode; None when contributor insights are off."""
        return CONTRIBUTOR_INSIGHTS_CFN.get(self.contributor_insights)

    def warnings(self) -> list[str]:
        """Allowed choices that drop one of the prod tier's protections: printed at synth."""
        found = []
        where = f"env={self.env} (tier {self.tier})"
        if self.pitr_by_default and not self.has_pitr:
            found.append(f"{where} with pitr=off: the table has no point-in-time recovery")
        if self.tier in PROTECTED_TIERS and not self.deletion_protection:
            found.append(
                f"{where} with deletion_protection=off: the table can be deleted without an unlock step"
            )
        return found

    @property
    def retain_on_delete(self) -> bool:
        """The uat and prod tiers keep their data when the stack goes; dev and stg are rebuilt at will."""
        return self.tier in RETAINING_TIERS

    @property
    def is_prod(self) -> bool:
        return self.tier == PROD_TIER

    @property
    def starting_position_cfn(self) -> str:
        return STARTING_POSITION_CFN[self.starting_position]

    @property
    def bundles_powertools(self) -> bool:
        """Powertools copied into the function asset instead of the public layer."""
        return self.powertools == POWERTOOLS_BUNDLED

    @property
    def is_local(self) -> bool:
        return self.deploy_target == DEPLOY_LOCAL

    @property
    def filters_events(self) -> bool:
        """The mapping passes only the records that can need blob cleanup (REMOVE, MODIFY with old blobs)."""
        return self.events == EVENTS_CLEANUP

    @property
    def has_mapping_metrics(self) -> bool:
        """The mapping publishes its EventCount metrics (polled, filtered out, invoked, failed, dropped...)."""
        return self.mapping_metrics

    @property
    def customer_managed_key(self) -> bool:
        """The table and the stack's buckets are encrypted with a customer managed KMS key."""
        return self.encryption == ENCRYPTION_CUSTOMER_MANAGED

    @property
    def aws_managed_key(self) -> bool:
        """The AWS managed keys (aws/dynamodb, aws/s3): KMS encryption with no key of the stack's own."""
        return self.encryption == ENCRYPTION_AWS_MANAGED

    @property
    def creates_kms_key(self) -> bool:
        return self.customer_managed_key and not self.kms_key

    @property
    def borrowed_kms_key_arn(self) -> str | None:
        return self.kms_key or None

    @property
    def has_resource_policy(self) -> bool:
        return self.resource_policy != OFF

    @property
    def resource_policy_path(self) -> str | None:
        return self.resource_policy if self.has_resource_policy else None

    def tags(self) -> dict[str, str]:
        """Provenance tags in a stable order; an empty CostCenter, Owner or Project is dropped, not written empty."""
        tags = {
            "ManagedBy": MANAGED_BY,
            "Source": PLAN_SOURCE,
            "Project": self.project,
            "PlanVersion": PLAN_VERSION,
            "CostCenter": self.cost_center,
            "Owner": self.owner,
            "Environment": self.env,
            "Tier": self.tier,
            "PreviewOf": self.preview_of,
            "ExpiresAt": self.expires_at,
        }
        return {k: v for k, v in tags.items() if v}

    def as_knobs(self) -> dict[str, Any]:
        return asdict(self)

    def knob_values(self) -> dict[str, str]:
        """The knobs as resolve_config takes them: resolving these gives this config back."""
        return {name: _knob_text(value) for name, value in asdict(self).items() if name in KNOBS}

    def deployed_record(self) -> str:
        """The stack output that records the resolved knobs and the declared indexes (compact JSON), read back
        by knobs_from_record and indexes_of_record."""
        record: dict[str, str] = self.knob_values()
        if self.indexes:
            record[INDEXES] = index_specs.indexes_record(self.indexes)
        if self.subscribers:
            record[subscriber_specs.SUBSCRIBERS] = subscriber_specs.subscribers_record(self.subscribers)
        return json.dumps(record, sort_keys=True, separators=(",", ":"))

    @property
    def index_declarations(self) -> dict[str, dict[str, Any]]:
        """The declared indexes as the settings file writes them (the gsi shorthand not included)."""
        return dict(index_specs.declarations(self.indexes))


def _knob_text(value: Any) -> str:
    """A resolved knob value as the text its parser takes back."""
    if isinstance(value, bool):
        return ON if value else OFF
    if value is None:
        return OFF
    if isinstance(value, tuple):
        return ",".join(value) or NONE
    return str(value)


KNOBS: dict[str, Knob] = {
    f.name: f.metadata[KNOB_METADATA] for f in fields(DocTableConfig) if KNOB_METADATA in f.metadata
}
KNOB_DEFAULTS: dict[str, str] = {name: declared.default for name, declared in KNOBS.items()}
