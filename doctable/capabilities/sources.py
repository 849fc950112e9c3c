"""What a mapping reads, from the knobs alone: the stream the table's changes must reach, the source as one phrase,
and what moving a mapping to another source misses or re-reads. Shared by the Kinesis, mapping and borrowed
capabilities; pure (no AWS)."""

from __future__ import annotations

from collections.abc import Callable

from contract import names
from contract.knobs import KINESIS_RETENTION_HOURS, DocTableConfig

CREATED = "created by the stack"


def declared_stream(config: DocTableConfig, out: Callable[[str], str | None]) -> str | None:
    """The stream the table's changes must reach: the knob's ARN, or the stack's ``KinesisStreamArn`` output
    (``out``: the deployment's output reader); None with kinesis=off or without the output."""
    if not config.has_kinesis:
        return None
    return config.borrowed_kinesis_arn or out(names.OUT_KINESIS_STREAM_ARN)


def source_text(config: DocTableConfig) -> str:
    """The source a mapping of these knobs reads, as one phrase (different phrases: a different source)."""
    if config.reads_kinesis:
        return f"Kinesis stream {config.borrowed_kinesis_arn or CREATED}"
    return f"DynamoDB stream {config.stream_view_type}"


def switch_text(deployed: DocTableConfig, target: DocTableConfig, starting_position: str, latest: str) -> str:
    """What records a mapping moved to another source misses or re-reads (``latest``: the LATEST position)."""
    new = source_text(target)
    if starting_position == latest:
        return (
            f"the new mapping reads {new} from {latest}: changes made before its poller settles, and those the old "
            "mapping had not read when CloudFormation deletes it, are never delivered (lost to the consumer)"
        )
    retention = (
        f"{KINESIS_RETENTION_HOURS} h"
        if not target.reads_kinesis or target.creates_kinesis_stream
        else "that stream's retention"
    )
    kinesis_note = ", only changes since its destination became ACTIVE" if target.reads_kinesis else ""
    return (
        f"the new mapping reads {new} from {starting_position}: it re-delivers every change that source still "
        f"holds (up to {retention}{kinesis_note}), changes the old mapping already delivered included (the "
        "consumer tolerates duplicates)"
    )
