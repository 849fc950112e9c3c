"""What verify expects of one environment, derived from the knobs' shape (``contract.shape``): the values the
checks compare with, the ``expected`` text of each row, and which rows a read-only run skips. Pure: no AWS."""

from __future__ import annotations

from dataclasses import dataclass

from contract import names
from contract.knobs import STARTING_LATEST, STARTING_POSITION_CFN
from contract.shape import (
    BILLING_MODE,
    EVENT_INSERT,
    EncryptionShape,
    MappingShape,
    TableShape,
)
from doctable.core.live import ACTIVE, PITR_DISABLED, PITR_ENABLED, TTL_ON_STATES

# A LATEST mapping misses writes made right after it reports Enabled: verify waits for it to settle first.
LATEST = STARTING_POSITION_CFN[STARTING_LATEST]
STABLE_STACK_TEXT = "CREATE_COMPLETE | UPDATE_COMPLETE | UPDATE_ROLLBACK_COMPLETE"
# The checks that write (test items, the nudge, blobs): `doctable verify --read-only` does not run them. Every other
# check only reads (describe, list tags, get a configuration).
WRITING_CHECKS = ("round-trip", "query", "gsi-query", "negative", "stream-delivery", "blob-cleanup")
DELIVERY_PREFIX = "replica-delivery:"  # a global table's nudge in one region (verify/replica_delivery.py)
# A subscriber's nudges (verify/subscribers.py): a change its filter passes, and one it excludes.
NUDGE_PREFIX, EXCLUDED_PREFIX = "subscriber-nudge:", "subscriber-excluded:"
Rows = tuple[
    tuple[str, str, str], ...
]  # (row id, check, expected) of one area, in the order verify runs them


def is_delivery_row(row_id: str) -> bool:
    return row_id.startswith(DELIVERY_PREFIX)


def writes(row_id: str) -> bool:
    """The check writes: one of ``WRITING_CHECKS``, a global table's nudge in a region (``replica-delivery:<region>``,
    verify/replica_delivery.py), or a subscriber's nudge (``subscriber-nudge:<name>``, ``subscriber-excluded:<name>``,
    verify/subscribers.py)."""
    return (
        row_id in WRITING_CHECKS
        or is_delivery_row(row_id)
        or row_id.startswith((NUDGE_PREFIX, EXCLUDED_PREFIX))
    )


def of_region(row_id: str, region: str) -> bool:
    """The row checks a global table's replica region (``replica-options:<region>``, ``replica-consumer:<region>``,
    ``replica-delivery:<region>``, ``subscriber:<name>@<region>``, ``subscriber-nudge:<name>@<region>``), or is
    the stack's (its health is every region's)."""
    return row_id == "stack" or row_id.endswith((f":{region}", f"@{region}"))


@dataclass(frozen=True)
class Expectations:
    table: TableShape
    mapping: MappingShape | None
    tags: dict[str, str]
    security: EncryptionShape | None = None
    # Each area's rows, made by its module (verify/checks.py: expectations): kept here as data, so what verify
    # expects stays pure and below every check.
    options: Rows = ()  # the table options' rows (verify/options.py)
    security_rows: Rows = ()  # encryption and resource policy (verify/security.py)
    kinesis: Rows = ()  # the Kinesis rows (verify/kinesis.py)
    consumer: Rows = ()  # the consumer function's row (verify/consumer.py)
    subscribers: Rows = ()  # a row per subscriber (verify/subscribers.py)
    replicas: Rows = ()  # a global table's rows (verify/replicas.py)
    delivery: Rows = ()  # a global table's nudges (verify/replica_delivery.py)

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
            *self.options,
            *self.security_rows,
            ("negative", "deleted item is gone", "delete → consistent get → no item"),
            ("table-tags", "table tags", self.tags_text),
            ("mapping", "mapping enabled", "Enabled, on its declared source, → the consumer"),
            ("mapping-tags", "mapping tags", self.tags_text),
            *self.consumer,
            *self.subscribers,
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

    def split(
        self, read_only: bool, region: str | None = None
    ) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
        """(the rows a run checks, the rows it skips), each in order: a read-only run skips every check that
        writes, a full run none; with ``region`` (a replica region) only that region's rows run."""
        rows = self.rows()
        checked = [
            r
            for r in rows
            if not (read_only and writes(r[0])) and (region is None or of_region(r[0], region))
        ]
        return checked, [r for r in rows if r not in checked]

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
