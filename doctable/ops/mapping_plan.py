"""What a deploy does to the event-source mapping: created, deleted, replaced or updated in place, found by
comparing the mapping the deployed knobs declare with the one the target knobs declare (``contract.shape``)."""

from __future__ import annotations

from dataclasses import dataclass

from contract.knobs import STARTING_LATEST, STARTING_POSITION_CFN, DocTableConfig
from contract.shape import mapping_shape

LATEST = STARTING_POSITION_CFN[STARTING_LATEST]

MAPPING_SUBJECT = "mapping"
CREATES, DELETES, REPLACES, UPDATES = "creates", "deletes", "replaces", "updates in place"


@dataclass(frozen=True)
class MappingChange:
    verb: str  # CREATES | DELETES | REPLACES | UPDATES
    live: str
    declared: str
    effect: str


def _target_function(config: DocTableConfig) -> str:
    """What the mapping invokes: a borrowed ARN, or the built-in consumer's alias named after the position."""
    return config.borrowed_consumer_arn or f"built-in consumer ({config.starting_position_cfn})"


def mapping_change(deployed: DocTableConfig, target: DocTableConfig) -> MappingChange | None:
    """The deploy's change to the mapping (None: it leaves the mapping as it is)."""
    before, after = mapping_shape(deployed), mapping_shape(target)
    if before is None and after is None:
        return None
    if before is None:
        assert after is not None
        return MappingChange(
            CREATES, "absent", after.starting_position,
            f"creates the event-source mapping: it reads the stream from {after.starting_position}",
        )  # fmt: skip
    if after is None:
        return MappingChange(
            DELETES, before.starting_position, "absent",
            "deletes the event-source mapping: the stream is no longer consumed",
        )  # fmt: skip
    stream_changes = deployed.stream_view_type != target.stream_view_type
    if (
        before.starting_position != after.starting_position
        or _target_function(deployed) != _target_function(target)
        or stream_changes
    ):
        records = (
            "records written before the new poller settles may be skipped"
            if after.starting_position == LATEST
            else "the new one reads the stream from its start (records are re-delivered; the consumer tolerates it)"
        )
        return MappingChange(
            REPLACES, f"{before.starting_position} → {_target_function(deployed)}",
            f"{after.starting_position} → {_target_function(target)}",
            f"replaces the event-source mapping (a new one is created first, then the old one deleted; no 409: "
            f"the built-in consumer's mapping targets an alias per position): {records}",
        )  # fmt: skip
    was, will = before.live_fields(), after.live_fields()
    changed = [name for name in will if was[name] != will[name]]
    if not changed:
        return None
    return MappingChange(
        UPDATES,
        ", ".join(f"{name} {was[name]}" for name in changed),
        ", ".join(f"{name} {will[name]}" for name in changed),
        "updates the event-source mapping in place (same UUID, no re-read)",
    )
