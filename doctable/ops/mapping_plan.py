"""What a deploy does to the event-source mapping: created, deleted, replaced or updated in place, found by
comparing the mapping the deployed knobs declare with the one the target knobs declare (``contract.shape``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contract.findings import Finding, Level
from contract.knobs import STARTING_LATEST, STARTING_POSITION_CFN, DocTableConfig
from contract.shape import mapping_shape
from doctable.ops.kinesis import source_text, switch_text

LATEST = STARTING_POSITION_CFN[STARTING_LATEST]

MAPPING_SUBJECT = "mapping"
CREATED, DELETED, REPLACED, UPDATED = (
    "mapping.created",
    "mapping.deleted",
    "mapping.replaced",
    "mapping.updated",
)


@dataclass(frozen=True)
class MappingChange:
    """``before``/``after``: the starting positions (None when absent), or the in-place fields that change."""

    code: str  # CREATED | DELETED | REPLACED | UPDATED
    live: str
    declared: str
    effect: str
    before: Any = None
    after: Any = None

    @property
    def destructive(self) -> bool:
        # Deleted: nothing consumes the stream. Replaced toward LATEST: records the old mapping had not read,
        # and those written before the new one settles, are never delivered.
        return self.code == DELETED or (self.code == REPLACED and self.after == LATEST)

    def finding(self) -> Finding:
        return Finding(
            Level.CHANGE, self.code, MAPPING_SUBJECT, self.live, self.declared, self.effect,
            self.destructive, self.before, self.after,
        )  # fmt: skip


def _target_function(config: DocTableConfig) -> str:
    """What the mapping invokes: a borrowed ARN, or the built-in consumer's alias named after the position."""
    return config.borrowed_consumer_arn or f"built-in consumer ({config.starting_position_cfn})"


def _on(config: DocTableConfig, shown: bool) -> str:
    return f" on {source_text(config)}" if shown else ""


def mapping_change(deployed: DocTableConfig, target: DocTableConfig) -> MappingChange | None:
    """The deploy's change to the mapping (None: it leaves the mapping as it is)."""
    before, after = mapping_shape(deployed), mapping_shape(target)
    if before is None and after is None:
        return None
    if before is None:
        assert after is not None
        return MappingChange(
            CREATED, "absent", after.starting_position,
            f"creates the event-source mapping: it reads the {source_text(target)} from {after.starting_position}",
            None, after.starting_position,
        )  # fmt: skip
    if after is None:
        return MappingChange(
            DELETED, before.starting_position, "absent",
            f"deletes the event-source mapping: the {source_text(deployed)} is no longer consumed",
            before.starting_position, None,
        )  # fmt: skip
    # The source: the DynamoDB stream (a view-type change makes a new one) or the Kinesis data stream.
    source_changes = source_text(deployed) != source_text(target)
    if (
        before.starting_position != after.starting_position
        or _target_function(deployed) != _target_function(target)
        or source_changes
    ):
        if deployed.reads_kinesis != target.reads_kinesis or (source_changes and target.reads_kinesis):
            records = switch_text(deployed, target, after.starting_position, LATEST)
        elif after.starting_position == LATEST:
            records = "records written before the new poller settles may be skipped"
        else:
            records = "the new one reads the stream from its start (records are re-delivered; the consumer tolerates it)"
        moved = f" from {source_text(deployed)} to {source_text(target)}" if source_changes else ""
        return MappingChange(
            REPLACED, f"{before.starting_position} → {_target_function(deployed)}{_on(deployed, source_changes)}",
            f"{after.starting_position} → {_target_function(target)}{_on(target, source_changes)}",
            f"replaces the event-source mapping{moved} (a new one is created first, then the old one deleted; no "
            f"409: the built-in consumer's mapping targets an alias per position): {records}",
            before.starting_position, after.starting_position,
        )  # fmt: skip
    was, will = before.live_fields(), after.live_fields()
    changed = [name for name in will if was[name] != will[name]]
    if not changed:
        return None
    return MappingChange(
        UPDATED,
        ", ".join(f"{name} {was[name]}" for name in changed),
        ", ".join(f"{name} {will[name]}" for name in changed),
        "updates the event-source mapping in place (same UUID, no re-read)",
        {name: was[name] for name in changed},
        {name: will[name] for name in changed},
    )
