"""Preflight's check of a borrowed consumer (``consumer=<Lambda ARN>``): it exists in the table's region, and its
role can read the source the mapping reads (the table's DynamoDB stream, or the Kinesis data stream)."""

from __future__ import annotations

from collections.abc import Callable

from contract.knobs import DocTableConfig
from doctable.aws import Aws, arn_region, call_or_none
from doctable.ops.grants import (
    KINESIS_READ_ACTIONS,
    LIST_STREAMS_ACTION,
    STREAM_READ_ACTIONS,
    missing_kinesis_grants,
    missing_stream_grants,
)
from doctable.ops.kinesis import ACTIVE, declared_stream

STOP, WARN, OK = "STOP", "WARN", "OK"
Found = tuple[str, str, str, str, str]  # (level, subject, live, declared, effect)


def _probe_arns(
    aws: Aws, config: DocTableConfig, stream_arn: str | None, out: Callable[[str], str | None]
) -> tuple[str, bool]:
    """(the source ARN the role is checked against, whether it is a Kinesis stream); before the deploy creates
    the source, an ARN of its future shape."""
    where = f"arn:{aws.partition}:%s:{aws.region}:{aws.account}"
    if config.reads_kinesis:
        return declared_stream(config, out) or f"{where % 'kinesis'}:stream/{config.table_name}", True
    return (
        stream_arn or f"{where % 'dynamodb'}:table/{config.table_name}/stream/2026-01-01T00:00:00.000",
        False,
    )


def consumer_findings(
    aws: Aws, config: DocTableConfig, stream_arn: str | None, out: Callable[[str], str | None]
) -> list[Found]:
    """Preflight's findings on the borrowed consumer (none without one); ``out``: the deployment's outputs."""
    arn = config.borrowed_consumer_arn
    if not arn:
        return []
    region = arn_region(arn)
    if region and region != aws.region:
        return [
            (
                STOP, "borrowed consumer", f"in {region}", f"in {aws.region}",
                "a mapping needs the function in the table's region: fix the consumer knob or AWS_REGION",
            )
        ]  # fmt: skip
    function = call_or_none(aws.client("lambda").get_function, FunctionName=arn)
    if function is None:
        return [
            (
                STOP,
                "borrowed consumer",
                "not found",
                arn,
                f"consumer {arn} not found — apply its plan first (this stack wires it, never creates it)",
            )
        ]
    role = function["Configuration"].get("Role", "")
    probe_arn, reads_kinesis = _probe_arns(aws, config, stream_arn, out)
    if reads_kinesis:
        missing, how = missing_kinesis_grants(aws, role, probe_arn)
        wanted: tuple[str, ...] = KINESIS_READ_ACTIONS
    else:
        missing, how = missing_stream_grants(aws, role, probe_arn)
        wanted = (*STREAM_READ_ACTIONS, LIST_STREAMS_ACTION)
    source = "the Kinesis data stream" if reads_kinesis else "the stream"
    if missing:
        return [
            (
                WARN,
                "consumer role grants",
                f"lacks {', '.join(missing)}",
                ", ".join(a.split(":")[1] for a in wanted),
                f"role {role} cannot read {source} ({how}): creating the mapping will fail until the function's "
                "own plan grants them",
            )
        ]
    granted = "Kinesis stream" if reads_kinesis else "stream"
    return [(OK, "borrowed consumer", f"exists, {granted} grants present", arn, f"checked by {how}")]


def kinesis_stream_findings(aws: Aws, config: DocTableConfig) -> list[Found]:
    """Preflight's findings on a borrowed Kinesis stream (``kinesis=<ARN>``): it must exist, ACTIVE, in the table's
    region, or enabling the destination fails the deploy."""
    arn = config.borrowed_kinesis_arn
    if not arn:
        return []
    region = arn_region(arn)
    if region and region != aws.region:
        return [
            (
                STOP, "borrowed kinesis stream", f"in {region}", f"in {aws.region}",
                "the table streams only to a Kinesis stream in its own region: fix the kinesis knob or AWS_REGION",
            )
        ]  # fmt: skip
    reply = call_or_none(aws.client("kinesis").describe_stream_summary, StreamARN=arn)
    if reply is None:
        return [
            (
                STOP, "borrowed kinesis stream", "not found", arn,
                f"stream {arn} not found — create it first (this stack streams into it, never creates it)",
            )
        ]  # fmt: skip
    summary = reply["StreamDescriptionSummary"]
    status = summary.get("StreamStatus")
    mode = (summary.get("StreamModeDetails") or {}).get("StreamMode")
    live = f"{status}, {mode}, {summary.get('EncryptionType') or 'NONE'}"
    if status != ACTIVE:
        return [
            (
                WARN,
                "borrowed kinesis stream",
                live,
                ACTIVE,
                "enabling the destination fails until it is ACTIVE",
            )
        ]
    return [(OK, "borrowed kinesis stream", live, arn, "exists and is ACTIVE")]
