"""What verify expects of one environment, derived from the knobs' shape (``contract.shape``): the values the
checks compare with, the ``expected`` text of each row, and which rows a read-only run skips. Pure: no AWS."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from contract import names
from contract.knobs import STARTING_LATEST, STARTING_POSITION_CFN, DocTableConfig
from contract.shape import (
    BILLING_MODE,
    EVENT_INSERT,
    EncryptionShape,
    MappingShape,
    TableShape,
    encryption_shape,
    mapping_shape,
    table_shape,
)
from doctable.core.live import ACTIVE, PITR_DISABLED, PITR_ENABLED, TTL_ON_STATES
from doctable.verify.consumer import consumer_rows
from doctable.verify.kinesis import kinesis_rows
from doctable.verify.options import option_checks, option_rows
from doctable.verify.replica_delivery import delivery_rows, is_delivery_row
from doctable.verify.replicas import replica_rows
from doctable.verify.security import security_rows

# A LATEST mapping misses writes made right after it reports Enabled: verify waits for it to settle first.
LATEST = STARTING_POSITION_CFN[STARTING_LATEST]
STABLE_STACK_TEXT = "CREATE_COMPLETE | UPDATE_COMPLETE | UPDATE_ROLLBACK_COMPLETE"
# The checks that write (test items, the nudge, blobs): `doctable verify --read-only` does not run them. Every other
# check only reads (describe, list tags, get a configuration).
WRITING_CHECKS = ("round-trip", "query", "gsi-query", "negative", "stream-delivery", "blob-cleanup")


def writes(row_id: str) -> bool:
    """The check writes: one of ``WRITING_CHECKS``, or a global table's nudge in a region (``replica-delivery:<region>``,
    verify/replica_delivery.py)."""
    return row_id in WRITING_CHECKS or is_delivery_row(row_id)


@dataclass(frozen=True)
class Expectations:
    table: TableShape
    mapping: MappingShape | None
    tags: dict[str, str]
    security: EncryptionShape | None = None
    kinesis: tuple[tuple[str, str, str], ...] = ()  # the Kinesis rows (verify/kinesis.py)
    consumer: tuple[tuple[str, str, str], ...] = ()  # the consumer function's row (verify/consumer.py)
    replicas: tuple[tuple[str, str, str], ...] = ()  # a global table's rows (verify/replicas.py)
    delivery: tuple[tuple[str, str, str], ...] = ()  # a global table's nudges (verify/replica_delivery.py)

    @classmethod
    def of(cls, config: DocTableConfig, home_region: str | None = None) -> Expectations:
        """The expectations of ``config``; a global table's nudges need its ``home_region``."""
        return cls(
            table=table_shape(config),
            mapping=mapping_shape(config),
            tags=config.tags(),
            security=encryption_shape(config),
            kinesis=tuple(kinesis_rows(config)),
            consumer=tuple(consumer_rows(config)),
            replicas=tuple(replica_rows(config)),
            delivery=tuple(delivery_rows(config, home_region)),
        )

    def rows(self) -> list[tuple[str, str, str]]:
        """(row id, check, expected) of every row, in the order verify runs the checks."""
        return [
            ("stack", "stack healthy", STABLE_STACK_TEXT),
            ("shape", "table active, shape = knobs", self.shape_text),
            ("round-trip", "item round-trip", "put → consistent get → attribute-identical"),
            ("query", "key query answers", "query pk = :p AND sk = :s returns the item"),
            (
                "gsi-query",
                "index queries answer",
                "a query on each declared index ("
                + (", ".join(i.name for i in self.table.indexes) or "none")
                + ") returns an item carrying its keys (retried)",
            ),
            ("ttl", "TTL as declared", self.ttl_text),
            ("stream", "stream as declared", self.stream_text),
            *self.kinesis,
            ("pitr", "PITR as declared", self.pitr_text),
            ("deletion-protection", "deletion protection as declared", self.deletion_protection_text),
            *option_rows(self.table),
            *(security_rows(self.security) if self.security else []),
            ("negative", "deleted item is gone", "delete → consistent get → no item"),
            ("table-tags", "table tags", self.tags_text),
            ("mapping", "mapping enabled", "Enabled, on its declared source, → the consumer"),
            ("mapping-tags", "mapping tags", self.tags_text),
            *self.consumer,
            *self.replicas,
            (
                "stream-delivery",
                "stream delivers (record-level)",
                f"a {names.PROOF_LOG_MESSAGE} line covers the nudge "
                + (
                    "write"
                    if self.mapping is None or self.mapping.nudge_event == EVENT_INSERT
                    else "delete (REMOVE)"
                ),
            ),
            ("blob-cleanup", "deleted item's blobs removed", "blobs under <pk>/<sk>/ gone"),
            *self.delivery,
        ]

    def split(self, read_only: bool) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
        """(the rows a run checks, the rows it skips), each in order: a read-only run skips every check that
        writes, a full run none."""
        rows = self.rows()
        if not read_only:
            return rows, []
        return [r for r in rows if not writes(r[0])], [r for r in rows if writes(r[0])]

    def option_checks(self, ddb: Any, describe: Callable[[], dict[str, Any]]) -> dict[str, Callable[[], str]]:
        """The checks of the table options' rows (``options.option_checks``) against this table shape."""
        return option_checks(ddb, self.table, describe)

    @property
    def nudge_event(self) -> str:
        """The stream event verify's nudge must make to reach the consumer: an INSERT passes no event filter."""
        return self.mapping.nudge_event if self.mapping else EVENT_INSERT

    @property
    def nudge_deletes(self) -> bool:
        """The nudge is a put then a delete (its REMOVE is what the consumer receives)."""
        return self.nudge_event != EVENT_INSERT

    @property
    def shape_text(self) -> str:
        keys = "/".join(k.name for k in self.table.keys)
        types = "/".join(sorted({k.type for k in self.table.keys}))
        billing = "on-demand" if self.table.billing_mode == BILLING_MODE else self.table.billing_mode
        indexes = ", ".join(f"{i.name} {ACTIVE}" for i in self.table.indexes) or "no index"
        return f"{ACTIVE}, keys {keys} ({types}), {billing}, {indexes}"

    @property
    def ttl_text(self) -> str:
        if self.table.ttl_attribute is None:
            return "DISABLED"
        return f"{' | '.join(TTL_ON_STATES)} on {self.table.ttl_attribute}"

    @property
    def stream_text(self) -> str:
        view = self.table.stream_view_type
        return f"{view}, = stack's StreamArn" if view else "no stream"

    @property
    def pitr_text(self) -> str:
        return PITR_ENABLED if self.table.pitr else PITR_DISABLED

    @property
    def deletion_protection_text(self) -> str:
        return "enabled" if self.table.deletion_protection else "disabled"

    @property
    def tags_text(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.tags.items())
