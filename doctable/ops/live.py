"""A live table as DescribeTable, DescribeTimeToLive and DescribeContinuousBackups report it, read side by side
with the shape the knobs promise (``contract.shape.TableShape``). Preflight and verify both compare through it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contract.shape import IndexShape, KeyAttribute, TableShape

ACTIVE = "ACTIVE"
TTL_DISABLED, TTL_ENABLING = "DISABLED", "ENABLING"
TTL_ON_STATES = ("ENABLED", TTL_ENABLING)
TTL_OFF_STATES = (TTL_DISABLED, "DISABLING")
TTL_CHANGING_STATES = (TTL_ENABLING, "DISABLING")
PITR_ENABLED, PITR_DISABLED = "ENABLED", "DISABLED"
BILLING_DEFAULT = "PROVISIONED"  # what DescribeTable omits BillingModeSummary for


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
