"""A live table as DescribeTable, DescribeTimeToLive and DescribeContinuousBackups report it, read side by side
with the shape the knobs promise (``contract.shape.TableShape``). Preflight and verify both compare through it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contract.shape import IndexShape, KeyAttribute, MappingShape, TableShape

ACTIVE = "ACTIVE"
TTL_DISABLED, TTL_ENABLING = "DISABLED", "ENABLING"
TTL_ON_STATES = ("ENABLED", TTL_ENABLING)
TTL_OFF_STATES = (TTL_DISABLED, "DISABLING")
TTL_CHANGING_STATES = (TTL_ENABLING, "DISABLING")
PITR_ENABLED, PITR_DISABLED = "ENABLED", "DISABLED"
BILLING_DEFAULT = "PROVISIONED"  # what DescribeTable omits BillingModeSummary for


def live_replicas(table: dict[str, Any], home: str) -> dict[str, str]:
    """Region -> ReplicaStatus of each replica DescribeTable's ``Replicas`` lists, the home region left out."""
    return {
        str(r["RegionName"]): str(r.get("ReplicaStatus", ""))
        for r in table.get("Replicas") or []
        if r.get("RegionName") and r["RegionName"] != home
    }


def live_replica_regions(table: dict[str, Any], home: str) -> tuple[str, ...]:
    """The regions besides ``home`` holding a replica of the described table, sorted."""
    return tuple(sorted(live_replicas(table, home)))


def key_text(keys: tuple[KeyAttribute, ...]) -> str:
    """``pk HASH S, sk RANGE S``."""
    return ", ".join(f"{k.name} {k.key_type} {k.type}" for k in keys)


@dataclass(frozen=True)
class LiveTable:
    status: str | None
    keys: dict[str, str]  # attribute -> KeyType
    types: dict[str, str]  # attribute -> AttributeType
    indexes: dict[str, dict[str, Any]]  # index name -> its description
    stream_enabled: bool
    stream_view_type: str | None
    latest_stream_arn: str | None
    billing_mode: str
    deletion_protection: bool

    @classmethod
    def of(cls, table: dict[str, Any]) -> LiveTable:
        spec = table.get("StreamSpecification") or {}
        return cls(
            status=table.get("TableStatus"),
            keys={k["AttributeName"]: k["KeyType"] for k in table.get("KeySchema", [])},
            types={a["AttributeName"]: a["AttributeType"] for a in table.get("AttributeDefinitions", [])},
            indexes={g["IndexName"]: g for g in table.get("GlobalSecondaryIndexes", []) or []},
            stream_enabled=bool(spec.get("StreamEnabled")),
            stream_view_type=spec.get("StreamViewType"),
            latest_stream_arn=table.get("LatestStreamArn"),
            billing_mode=(table.get("BillingModeSummary") or {}).get("BillingMode", BILLING_DEFAULT),
            deletion_protection=bool(table.get("DeletionProtectionEnabled")),
        )

    def keys_match(self, shape: TableShape) -> bool:
        """Key schema and key attribute types as the shape declares them."""
        want = {k.name: k.key_type for k in shape.keys}
        return self.keys == want and all(self.types.get(k.name) == k.type for k in shape.keys)

    def key_text(self) -> str:
        return ", ".join(f"{k} {v} {self.types.get(k, '?')}" for k, v in self.keys.items())

    def index_keys_match(self, index: IndexShape) -> bool:
        live = self.indexes.get(index.name) or {}
        return {k["AttributeName"]: k["KeyType"] for k in live.get("KeySchema", [])} == {
            k.name: k.key_type for k in index.keys
        }

    def index_status(self, name: str) -> str:
        return str((self.indexes.get(name) or {}).get("IndexStatus", ACTIVE))

    def unexpected_indexes(self, shape: TableShape) -> list[str]:
        return sorted(set(self.indexes) - {i.name for i in shape.indexes})

    @property
    def stream_view(self) -> str | None:
        """The view type of an enabled stream; None without one."""
        return self.stream_view_type if self.stream_enabled else None


@dataclass(frozen=True)
class LiveTtl:
    status: str
    attribute: str | None

    @classmethod
    def of(cls, description: dict[str, Any]) -> LiveTtl:
        return cls(description.get("TimeToLiveStatus", TTL_DISABLED), description.get("AttributeName"))

    @property
    def on(self) -> bool:
        return self.status in TTL_ON_STATES

    @property
    def changing(self) -> bool:
        return self.status in TTL_CHANGING_STATES

    def matches(self, shape: TableShape) -> bool:
        """On (or turning on) with the declared attribute, or off (or turning off) when none is declared."""
        if shape.ttl_attribute is None:
            return self.status in TTL_OFF_STATES
        return self.on and self.attribute == shape.ttl_attribute


def pitr_status(backups: dict[str, Any]) -> str:
    """DescribeContinuousBackups' point-in-time recovery status."""
    description = backups.get("ContinuousBackupsDescription", backups)
    recovery = description.get("PointInTimeRecoveryDescription") or {}
    return str(recovery.get("PointInTimeRecoveryStatus", PITR_DISABLED))


def pitr_declared(shape: TableShape) -> str:
    return PITR_ENABLED if shape.pitr else PITR_DISABLED


# ------------------------------------------------------------------------------------------- the mapping
MAPPING_ENABLED = "Enabled"
MAPPING_ON_STATES = (MAPPING_ENABLED, "Enabling")
DESTINATION_FIELD = "DestinationConfig.OnFailure"
ENABLED_FIELD = "State"
FILTER_FIELD, METRICS_FIELD = "FilterCriteria", "MetricsConfig"


def s3_bucket_arn(partition: str, bucket: str) -> str:
    return f"arn:{partition}:s3:::{bucket}"


def on_failure_destination(mapping: dict[str, Any]) -> str | None:
    return ((mapping.get("DestinationConfig") or {}).get("OnFailure") or {}).get("Destination") or None


def _comparable(name: str, value: object) -> object:
    """A setting as compared: filter patterns as parsed JSON in any order, and an absent, empty FilterCriteria
    or MetricsConfig as None (AWS omits them when empty)."""
    if name == FILTER_FIELD:
        filters = (value or {}).get("Filters") or [] if isinstance(value, dict) else []
        parsed = []
        for item in filters:
            try:
                parsed.append(json.dumps(json.loads(item.get("Pattern") or ""), sort_keys=True))
            except (ValueError, AttributeError):
                parsed.append(repr(item))
        return sorted(parsed) or None
    if name == METRICS_FIELD:
        return sorted((value or {}).get("Metrics") or []) or None if isinstance(value, dict) else None
    return value


def setting_text(name: str, value: object) -> str:
    """A mapping setting for a one-line report: the filter as its count of patterns, metrics by name."""
    comparable = _comparable(name, value)
    if name == FILTER_FIELD:
        return f"{len(comparable)} filter patterns" if isinstance(comparable, list) else "no filter"
    if name == METRICS_FIELD:
        return ", ".join(comparable) if isinstance(comparable, list) else "no metrics"
    return str(value)


def mapping_differences(
    mapping: dict[str, Any], shape: MappingShape, destination: str | None, text: bool = False
) -> list[tuple[str, object, object]]:
    """(field, live, declared) for each in-place setting of a live mapping (GetEventSourceMapping) that differs
    from the shape: the settings, the enabled state and the on-failure destination (``destination``: the
    stack's failure bucket ARN; None when unknown, then only its presence is checked). ``text``: the values as
    one-line reports show them (``setting_text``)."""
    differences: list[tuple[str, object, object]] = []
    for name, want in shape.live_fields().items():
        have = mapping.get(name)
        if isinstance(want, list):
            have = sorted(have or [])
            want = sorted(want)
        if _comparable(name, have) != _comparable(name, want):
            differences.append(
                (name, setting_text(name, have), setting_text(name, want)) if text else (name, have, want)
            )
    state = mapping.get("State")
    if state not in MAPPING_ON_STATES:
        differences.append((ENABLED_FIELD, state, MAPPING_ENABLED))
    have_destination = on_failure_destination(mapping)
    if shape.on_failure_is_bucket and (
        have_destination is None or (destination is not None and have_destination != destination)
    ):
        differences.append(
            (DESTINATION_FIELD, have_destination or "none", destination or "the failure bucket")
        )
    return differences
