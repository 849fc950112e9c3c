"""verify's rows for Kinesis Data Streams for DynamoDB (the ``kinesis`` knob): the table's streaming destination
(DescribeKinesisStreamingDestination) and the stream itself (DescribeStreamSummary); and the nudge's sequence
number read off the Kinesis data stream when the mapping reads it (``consumer_source=kinesis``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from contract import names
from contract.knobs import KINESIS_RETENTION_HOURS, DocTableConfig
from doctable.capabilities.kinesis import (
    ACTIVE,
    DISABLED,
    ENABLING,
    KMS,
    ON_DEMAND,
    declared_stream,
    destination_text,
    destinations,
    streaming,
)
from doctable.core.answers import is_not_found
from doctable.verify.proof import NEWEST, follow_shards, is_change_of, open_iterators
from doctable.verify.record import CheckFailed, Skip

if TYPE_CHECKING:
    from doctable.core.aws import Aws
    from doctable.core.deployment import Deployment
    from doctable.core.render import Progress

STREAM_OK_STATES = (ACTIVE, "UPDATING")  # DescribeStreamSummary's StreamStatus of a readable stream
NO_DESTINATION = "no destination enabled"


def _declared_text(config: DocTableConfig) -> str:
    return config.borrowed_kinesis_arn or f"the stack's {names.OUT_KINESIS_STREAM_ARN}"


def kinesis_rows(config: DocTableConfig) -> list[tuple[str, str, str]]:
    """(row id, check, expected), in the order verify runs them. With kinesis=off only the destination row: the
    table streams to no Kinesis stream, and there is no stream to check."""
    if not config.has_kinesis:
        return [("kinesis-destination", "Kinesis streaming destination as declared", NO_DESTINATION)]
    destination = f"{ACTIVE} → {_declared_text(config)}, and no other"
    stream = (
        f"{ACTIVE}, {ON_DEMAND}, {KMS} encrypted, {KINESIS_RETENTION_HOURS} h retention"
        if config.creates_kinesis_stream
        else f"{ACTIVE} (your stream: its mode and encryption are its owner's)"
    )
    return [
        ("kinesis-destination", "Kinesis streaming destination as declared", destination),
        ("kinesis-stream", "Kinesis data stream as declared", stream),
    ]


def kinesis_checks(aws: Aws, deployment: Deployment) -> dict[str, Callable[[], str]]:
    """Row id -> its check: returns the observed value, raises ``CheckFailed(observed)`` when it differs."""
    config = deployment.config
    ddb, table = aws.client("dynamodb"), deployment.table_name

    def destination() -> str:
        found = destinations(ddb, table)
        if found is None:
            if not config.has_kinesis:
                raise Skip("this endpoint does not implement DescribeKinesisStreamingDestination")
            raise CheckFailed(
                "DescribeKinesisStreamingDestination is not implemented here: streaming unproven"
            )
        want = declared_stream(config, deployment.out)
        others = [arn for arn in streaming(found) if arn != want]
        if not config.has_kinesis:
            if others:
                raise CheckFailed(
                    f"unexpected destination(s) with kinesis={config.kinesis}: {', '.join(others)}"
                )
            return NO_DESTINATION
        if want is None:
            raise CheckFailed(f"the stack has no {names.OUT_KINESIS_STREAM_ARN} output")
        mine = next((d for d in found if d.get("StreamArn") == want), None)
        status = (mine or {}).get("DestinationStatus")
        observed = destination_text(mine, want)
        if status == ENABLING:
            raise CheckFailed(
                f"{observed}: not streaming yet (changes are captured from ACTIVE on); re-run verify"
            )
        if status != ACTIVE:
            has = ", ".join(destination_text(d) for d in found) or "none"
            repair = "; `doctable reconcile --apply` re-enables it" if status in (DISABLED, None) else ""
            raise CheckFailed(f"{observed} (destinations: {has}){repair}")
        if others:
            raise CheckFailed(f"{observed}, but also streaming to {', '.join(others)}")
        return observed

    def stream() -> str:
        if not config.has_kinesis:
            raise Skip(f"kinesis={config.kinesis}: no Kinesis data stream")
        arn = declared_stream(config, deployment.out)
        if arn is None:
            raise CheckFailed(f"the stack has no {names.OUT_KINESIS_STREAM_ARN} output")
        try:
            summary = aws.client("kinesis").describe_stream_summary(StreamARN=arn)["StreamDescriptionSummary"]
        except ClientError as exc:
            if is_not_found(exc):
                raise CheckFailed(f"stream {arn} not found") from exc
            raise
        status = summary.get("StreamStatus")
        mode = (summary.get("StreamModeDetails") or {}).get("StreamMode")
        encryption = summary.get("EncryptionType") or "NONE"
        hours = summary.get("RetentionPeriodHours")
        key = summary.get("KeyId")
        observed = f"{status}, {mode}, {encryption}" + (f" ({key})" if key else "") + f", {hours} h retention"
        problems = [] if status in STREAM_OK_STATES else [f"status {status}"]
        if config.creates_kinesis_stream:
            if mode != ON_DEMAND:
                problems.append(f"mode {mode}, not {ON_DEMAND}")
            if encryption != KMS:
                problems.append("not encrypted")
            elif not _key_matches(config, deployment, key):
                problems.append(f"key {key}, not the stack's {deployment.out(names.OUT_KMS_KEY_ARN)}")
            if hours != KINESIS_RETENTION_HOURS:
                problems.append(f"retention {hours} h, not {KINESIS_RETENTION_HOURS} h")
        if problems:
            raise CheckFailed("; ".join(problems) + f" — {observed}")
        return observed

    return {"kinesis-destination": destination, "kinesis-stream": stream}


def _key_matches(config: DocTableConfig, deployment: Deployment, key: str | None) -> bool:
    """With a customer managed key the stream is under the stack's key (else the AWS managed alias/aws/kinesis)."""
    if not config.customer_managed_key:
        return True
    want = config.borrowed_kms_key_arn or deployment.out(names.OUT_KMS_KEY_ARN)
    if not want or not key:
        return want is None
    return key == want or want.endswith(f"/{key}")


# ------------------------------------------------------------------------------- the nudge's record
def _open_shard_iterators(client: Any, stream_arn: str) -> list[str]:
    """A LATEST iterator on each open shard of the Kinesis stream (none when there are too many to follow)."""

    def page(token: str | None) -> tuple[list[dict[str, Any]], str | None]:
        reply = client.list_shards(**({"NextToken": token} if token else {"StreamARN": stream_arn}))
        return reply.get("Shards", []), reply.get("NextToken")

    def iterator_at(shard: str) -> str:
        reply = client.get_shard_iterator(StreamARN=stream_arn, ShardId=shard, ShardIteratorType=NEWEST)
        return reply["ShardIterator"]

    return open_iterators(page, iterator_at)


def change_record(data: Any) -> dict[str, Any] | None:
    """The DynamoDB change record a Kinesis record's data holds (JSON), else None."""
    try:
        record = json.loads(data.decode() if isinstance(data, bytes | bytearray) else str(data))
    except (ValueError, UnicodeDecodeError):
        return None
    return record if isinstance(record, dict) else None


def capture_kinesis_sequence(
    aws: Aws,
    stream_arn: str | None,
    write: Callable[[], None],
    key: Mapping[str, str],
    *,
    bound: float,
    progress: Progress,
    event_name: str | None = None,
) -> str | None:
    """As ``proof.capture_sequence``, on the Kinesis data stream: run ``write`` and return the Kinesis sequence
    number of the record carrying its change (the number the consumer's proof line spans); None if not found
    within ``bound`` seconds. Polls every 0.5 s: two of a shard's five GetRecords a second, beside the mapping's."""
    client = aws.client("kinesis")

    def sequence_of(record: dict[str, Any]) -> str | None:
        change = change_record(record.get("Data"))
        if change is None or not is_change_of(change, key, event_name):
            return None
        return str(record["SequenceNumber"])

    return follow_shards(
        (lambda: _open_shard_iterators(client, stream_arn)) if stream_arn else None,
        lambda iterator: client.get_records(ShardIterator=iterator, Limit=1000, StreamARN=stream_arn),
        sequence_of,
        write,
        bound=bound,
        progress=progress,
        what="the write's Kinesis record",
    )
