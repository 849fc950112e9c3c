"""Preflight's check of a borrowed consumer (``consumer=<Lambda ARN>``): it exists in the table's region, and its
role can read the source the mapping reads (the table's DynamoDB stream, or the Kinesis data stream)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from contract.findings import Finding, Level
from doctable.capabilities.sources import declared_stream
from doctable.core.answers import arn_region, call_or_none
from doctable.core.grants import (
    KINESIS_READ_ACTIONS,
    LIST_STREAMS_ACTION,
    STREAM_READ_ACTIONS,
    missing_kinesis_grants,
    missing_stream_grants,
)
from doctable.core.live import ACTIVE, LiveTable

if TYPE_CHECKING:
    from contract.knobs import DocTableConfig
    from doctable.capabilities.protocol import Observed
    from doctable.core.aws import Aws


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


def _found_in_region(
    aws: Aws,
    arn: str,
    subject: str,
    other_region: tuple[str, str],
    missing: tuple[str, str],
    describe: Callable[[], dict[str, Any] | None],
) -> tuple[dict[str, Any] | None, list[Finding]]:
    """The borrowed ``arn`` as ``describe`` reads it (None: not found), with no finding; else None and the STOP
    finding that it is in another region than the table's or not found (``other_region``, ``missing``: the
    finding's code and what to do)."""
    region = arn_region(arn)
    if region and region != aws.region:
        code, effect = other_region
        return None, [
            Finding(
                Level.STOP, code, subject, f"in {region}", f"in {aws.region}", effect,
                before=region, after=aws.region,
            )
        ]  # fmt: skip
    reply = describe()
    if reply is None:
        code, effect = missing
        return None, [Finding(Level.STOP, code, subject, "not found", arn, effect, before=None, after=arn)]
    return reply, []


def consumer_findings(
    aws: Aws, config: DocTableConfig, stream_arn: str | None, out: Callable[[str], str | None]
) -> list[Finding]:
    """Preflight's findings on the borrowed consumer (none without one); ``out``: the deployment's outputs."""
    arn = config.borrowed_consumer_arn
    if not arn:
        return []
    function, stop = _found_in_region(
        aws, arn, "borrowed consumer",
        ("consumer.other_region", "a mapping needs the function in the table's region: fix the consumer knob or AWS_REGION"),
        ("consumer.missing", f"consumer {arn} not found — apply its plan first (this stack wires it, never creates it)"),
        lambda: call_or_none(aws.client("lambda").get_function, FunctionName=arn),
    )  # fmt: skip
    if function is None:
        return stop
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
            Finding(
                Level.WARN, "consumer.cannot_read_stream", "consumer role grants", f"lacks {', '.join(missing)}",
                ", ".join(a.split(":")[1] for a in wanted),
                f"role {role} cannot read {source} ({how}): creating the mapping will fail until the function's "
                "own plan grants them",
                before=[a for a in wanted if a not in missing], after=list(wanted),
            )
        ]  # fmt: skip
    granted = "Kinesis stream" if reads_kinesis else "stream"
    return [
        Finding(
            Level.OK, "consumer.ok", "borrowed consumer", f"exists, {granted} grants present", arn,
            f"checked by {how}", before=arn, after=arn,
        )
    ]  # fmt: skip


def kinesis_stream_findings(aws: Aws, config: DocTableConfig) -> list[Finding]:
    """Preflight's findings on a borrowed Kinesis stream (``kinesis=<ARN>``): it must exist, ACTIVE, in the table's
    region, or enabling the destination fails the deploy."""
    arn = config.borrowed_kinesis_arn
    if not arn:
        return []
    reply, stop = _found_in_region(
        aws, arn, "borrowed kinesis stream",
        ("kinesis.stream_other_region", "the table streams only to a Kinesis stream in its own region: fix the kinesis knob or AWS_REGION"),
        ("kinesis.stream_missing", f"stream {arn} not found — create it first (this stack streams into it, never creates it)"),
        lambda: call_or_none(aws.client("kinesis").describe_stream_summary, StreamARN=arn),
    )  # fmt: skip
    if reply is None:
        return stop
    summary = reply["StreamDescriptionSummary"]
    status = summary.get("StreamStatus")
    mode = (summary.get("StreamModeDetails") or {}).get("StreamMode")
    live = f"{status}, {mode}, {summary.get('EncryptionType') or 'NONE'}"
    if status != ACTIVE:
        return [
            Finding(
                Level.WARN, "kinesis.stream_not_active", "borrowed kinesis stream", live, ACTIVE,
                "enabling the destination fails until it is ACTIVE", before=status, after=ACTIVE,
            )
        ]  # fmt: skip
    return [
        Finding(
            Level.OK, "kinesis.ok", "borrowed kinesis stream", live, arn, "exists and is ACTIVE",
            before=status, after=ACTIVE,
        )
    ]  # fmt: skip


class BorrowedCapability:
    """What the knobs borrow (a consumer function, a Kinesis stream): it exists, in the table's region, readable."""

    name = "borrowed"
    compares_live = False
    codes = frozenset(
        {
            "consumer.other_region",
            "consumer.missing",
            "consumer.cannot_read_stream",
            "consumer.ok",
            "kinesis.stream_other_region",
            "kinesis.stream_missing",
            "kinesis.stream_not_active",
            "kinesis.ok",
        }
    )

    def findings(self, observed: Observed) -> list[Finding]:
        aws, config = observed.aws, observed.target
        # The live stream the consumer's role is checked against, when the deploy keeps it.
        stream_arn: str | None = None
        if observed.compared:
            live = LiveTable.of(observed.live_table)
            if live.stream_view is not None and live.stream_view == config.stream_view_type:
                stream_arn = live.latest_stream_arn
        found = consumer_findings(aws, config, stream_arn, observed.deployment.out)
        return found + kinesis_stream_findings(aws, config)


BORROWED = BorrowedCapability()
