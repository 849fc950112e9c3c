"""Kinesis Data Streams for DynamoDB (the ``kinesis`` and ``consumer_source`` knobs) in operations: which stream a
table's changes must reach and which one the mapping must read, what a deploy changing them does and costs
(preflight), and the destination's drift with the calls that restore it (reconcile)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from contract import names
from contract.findings import Finding, Level
from contract.knobs import KINESIS_RETENTION_HOURS, RETAINING_TIERS, DocTableConfig
from doctable.capabilities.protocol import Drift, Observed
from doctable.capabilities.sources import CREATED, declared_stream
from doctable.core.answers import error_code
from doctable.plan.figures import HOURS_PER_MONTH, value

if TYPE_CHECKING:
    from doctable.core.aws import Aws
    from doctable.core.deployment import Deployment

# DescribeKinesisStreamingDestination's DestinationStatus values.
ACTIVE, ENABLING, UPDATING = "ACTIVE", "ENABLING", "UPDATING"
DISABLING, DISABLED, ENABLE_FAILED = "DISABLING", "DISABLED", "ENABLE_FAILED"
STREAMING_STATES = (ACTIVE, ENABLING, UPDATING)  # the table writes (or is about to write) its changes there
# The timestamp precision the stack enables the destination with (the consumer reads epoch milliseconds).
PRECISION = "MILLISECOND"
PRECISION_FIELD = "ApproximateCreationDateTimePrecision"
ON_DEMAND, KMS = (
    "ON_DEMAND",
    "KMS",
)  # DescribeStreamSummary's StreamMode and EncryptionType of the created stream
# What an endpoint without the Kinesis-destination API answers (moto in-process raises NotImplementedError).
NOT_IMPLEMENTED_CODES = ("UnknownOperationException", "NotImplemented", "InvalidAction")

ENABLE_CALL = "EnableKinesisStreamingDestination"
UPDATE_CALL = "UpdateKinesisStreamingDestination"
CALLS = (ENABLE_CALL, UPDATE_CALL)
PROP_DESTINATION, PROP_PRECISION, PROP_OTHERS = "kinesis:destination", "kinesis:precision", "kinesis:others"


# ------------------------------------------------------------------------------------------- the facts


def destinations(ddb: Any, table_name: str) -> list[dict[str, Any]] | None:
    """The table's Kinesis streaming destinations (any status); None when the endpoint does not implement
    DescribeKinesisStreamingDestination."""
    try:
        reply = ddb.describe_kinesis_streaming_destination(TableName=table_name)
    except NotImplementedError:
        return None
    except ClientError as exc:
        if error_code(exc) in NOT_IMPLEMENTED_CODES:
            return None
        raise
    return list(reply.get("KinesisDataStreamDestinations") or [])


def streaming(found: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Stream ARN -> destination, for the destinations the table writes (or is about to write) to."""
    return {d["StreamArn"]: d for d in found if d.get("DestinationStatus") in STREAMING_STATES}


def destination_text(destination: dict[str, Any] | None, arn: str | None = None) -> str:
    """``ACTIVE arn:...`` (with DynamoDB's reason for a failed or disabled one), or ``absent``."""
    if destination is None:
        return f"absent ({arn})" if arn else "absent"
    text = f"{destination.get('DestinationStatus')} {destination.get('StreamArn')}"
    reason = destination.get("DestinationStatusDescription")
    return f"{text} ({reason})" if reason else text


def event_source(
    config: DocTableConfig, out: Callable[[str], str | None], table: dict[str, Any]
) -> tuple[str | None, str]:
    """(the ARN the mapping must read, what it is): the Kinesis data stream, or the table's live DynamoDB stream."""
    if config.reads_kinesis:
        return declared_stream(config, out), "the Kinesis data stream"
    return table.get("LatestStreamArn"), "the live stream"


# ------------------------------------------------------------------------------------------- preflight
def _stream_label(config: DocTableConfig) -> str:
    if not config.has_kinesis:
        return config.kinesis
    return config.borrowed_kinesis_arn or f"on-demand stream {CREATED}"


def cost_text() -> str:
    """What streaming a table's changes to a stream the stack creates costs, with the published prices."""
    idle = value("price_kinesis_stream_hour") * HOURS_PER_MONTH
    return (
        f"billed: DynamoDB change data capture units, ${value('price_cdc_per_m'):.2f} per million (one per write "
        "per KB) [aws.amazon.com/dynamodb/pricing/on-demand/], and the on-demand stream, "
        f"${value('price_kinesis_stream_hour'):.2f} per stream-hour (~${idle:.2f}/month even idle), "
        f"${value('price_kinesis_ingest_gb'):.2f} per GB ingested (records rounded up to 1 KB), "
        f"${value('price_kinesis_retrieval_gb'):.2f} per GB retrieved by each reader "
        "[aws.amazon.com/kinesis/data-streams/pricing/] (us-east-1 list prices)"
    )


def _enable_text(target: DocTableConfig) -> str:
    capture = (
        "only changes made after the destination is ACTIVE are captured (no backfill of existing items); records "
        "can arrive duplicated or out of order"
    )
    if target.creates_kinesis_stream:
        return (
            f"creates an ON_DEMAND Kinesis data stream (KMS encrypted, {KINESIS_RETENTION_HOURS} h retention) and "
            f"enables Kinesis Data Streams for DynamoDB on the table: {capture}; {cost_text()}"
        )
    return (
        f"enables Kinesis Data Streams for DynamoDB into your stream (the stack never creates or changes it; it "
        f"must be ACTIVE, in the table's account and region): {capture}; billed: DynamoDB change data capture units, "
        f"${value('price_cdc_per_m'):.2f} per million (one per write per KB) [aws.amazon.com/dynamodb/pricing/"
        "on-demand/]; the stream's own hours and GB go to its owner at its capacity mode's prices"
    )


def _leave_text(deployed: DocTableConfig) -> str:
    """What happens to the stream the table stops writing to."""
    if not deployed.creates_kinesis_stream:
        return "your stream stays as it is (the stack never deletes it)"
    if deployed.retain_on_delete:
        return (
            f"the stack's stream is RETAINED (env={deployed.env}, tier {deployed.tier}: the {'|'.join(RETAINING_TIERS)} tiers keep it, like the "
            "table): its unread records stay readable until its retention ends, and its stream-hours (~$"
            f"{value('price_kinesis_stream_hour') * HOURS_PER_MONTH:.2f}/month) are billed until you delete it"
        )
    return "the stack deletes the stream it created (its own line says what is lost)"


def _knob_value(config: DocTableConfig) -> str | None:
    """The ``kinesis`` knob as a finding's value: ``on``, a stream ARN, or None when off."""
    return config.kinesis if config.has_kinesis else None


def deletes_stack_stream(deployed: DocTableConfig, target: DocTableConfig) -> bool:
    """The deploy deletes the stream the stack created (outside uat|prod, which retain it)."""
    return (
        deployed.creates_kinesis_stream
        and not target.creates_kinesis_stream
        and not deployed.retain_on_delete
    )


def findings(deployed: DocTableConfig, target: DocTableConfig) -> list[Finding]:
    """Preflight's findings for a change of the ``kinesis`` knob (and the stack's stream deleted with it)."""
    if deployed.kinesis == target.kinesis:
        return []
    if not deployed.has_kinesis:
        code, effect = "kinesis.enabled", _enable_text(target)
    elif not target.has_kinesis:
        code = "kinesis.disabled"
        effect = (
            "disables Kinesis Data Streams for DynamoDB (DisableKinesisStreamingDestination): changes stop reaching "
            f"the stream and change data capture billing stops; {_leave_text(deployed)}"
        )
    else:
        code = "kinesis.changed"
        effect = (
            "switches the destination: the old one is disabled, then the new one enabled; changes made between "
            "the old one's DISABLED and the new one's ACTIVE reach NEITHER stream (a gap), and the new stream holds "
            f"only changes after its ACTIVE; {_leave_text(deployed)}"
            + (f"; {cost_text()}" if target.creates_kinesis_stream else "")
        )
    if deployed.reads_kinesis or target.reads_kinesis:
        effect += "; the mapping line says what the consumer's source change does"
    before, after = _knob_value(deployed), _knob_value(target)
    found = [
        Finding(
            Level.CHANGE, code, "kinesis", _stream_label(deployed), _stream_label(target), effect,
            before=before, after=after,
        )
    ]  # fmt: skip
    if deletes_stack_stream(deployed, target):
        found.append(
            Finding(
                Level.CHANGE, "kinesis.stream_deleted", "kinesis stream", f"on-demand stream {CREATED}", "deleted",
                "the stack DELETES the stream it created, with the records no reader has read yet (its "
                f"{KINESIS_RETENTION_HOURS} h of changes)",
                destructive=True, before=CREATED, after=None,
            )
        )  # fmt: skip
    return found


# --------------------------------------------------------------------------------------- drift, repairs
def differences(
    ddb: Any, config: DocTableConfig, out: Callable[[str], str | None], table_name: str
) -> list[tuple[str, str, str, str, str | None, dict[str, Any], str]]:
    """(prop, subject, live, declared, call, parameters, how) of each difference between the table's Kinesis
    destinations and ``config``'s; call None when reconcile cannot restore it (``how`` says what can)."""
    found = destinations(ddb, table_name)
    want = declared_stream(config, out)
    if found is None:
        if not config.has_kinesis:
            return []  # nothing declared, and the endpoint cannot show more
        how = "this endpoint does not implement DescribeKinesisStreamingDestination"
        return [(PROP_DESTINATION, "kinesis destination", "unknown", f"{ACTIVE} {want}", None, {}, how)]
    drifts: list[tuple[str, str, str, str, str | None, dict[str, Any], str]] = []
    live = {d["StreamArn"]: d for d in found}
    if config.has_kinesis and want is None:
        how = f"the stack has no {names.OUT_KINESIS_STREAM_ARN} output: redeploy"
        drifts.append((PROP_DESTINATION, "kinesis destination", "?", "the stack's stream", None, {}, how))
    elif want is not None:
        mine = live.get(want)
        status = (mine or {}).get("DestinationStatus")
        if status not in STREAMING_STATES:
            params = {"StreamArn": want, "EnableKinesisStreamingConfiguration": {PRECISION_FIELD: PRECISION}}
            declared = f"{ACTIVE} {want}"
            drifts.append(
                (PROP_DESTINATION, "kinesis destination", destination_text(mine, want), declared, ENABLE_CALL, params, "")
            )  # fmt: skip
        elif mine is not None and mine.get(PRECISION_FIELD, PRECISION) != PRECISION:
            params = {"StreamArn": want, "UpdateKinesisStreamingConfiguration": {PRECISION_FIELD: PRECISION}}
            drifts.append(
                (PROP_PRECISION, "kinesis timestamp precision", str(mine.get(PRECISION_FIELD)), PRECISION,
                 UPDATE_CALL, params, "")
            )  # fmt: skip
    others = sorted(arn for arn in streaming(found) if arn != want)
    if others:
        how = (
            "a destination the knobs do not declare feeds a stream someone may read: reconcile leaves it; "
            "DisableKinesisStreamingDestination it once nothing reads it"
        )
        drifts.append(
            (PROP_OTHERS, "other kinesis destinations", ", ".join(others), want or "none", None, {}, how)
        )
    return drifts


def kinesis_drift(aws: Aws, deployment: Deployment, table: dict[str, Any]) -> list[Drift]:
    """The table's Kinesis streaming destination against the deployed knobs."""
    found = differences(aws.client("dynamodb"), deployment.config, deployment.out, table["TableName"])
    return [
        Drift(prop, subject, have, want, op, params, how)
        for prop, subject, have, want, op, params, how in found
    ]


def apply_repair(ddb: Any, table_name: str, call: str, params: dict[str, Any]) -> None:
    if call == ENABLE_CALL:
        ddb.enable_kinesis_streaming_destination(TableName=table_name, **params)
    elif call == UPDATE_CALL:
        ddb.update_kinesis_streaming_destination(TableName=table_name, **params)
    else:  # pragma: no cover - CALLS only
        raise ValueError(call)


def changed_by_deploy(deployed: DocTableConfig, target: DocTableConfig) -> bool:
    """A deploy that changes the ``kinesis`` knob rewrites the destination (its state is then the deploy's)."""
    return deployed.kinesis != target.kinesis


# ------------------------------------------------------------------------------------------ capability
class KinesisCapability:
    """The ``kinesis`` knob: findings of a change against the recorded knobs; the destination's drift."""

    name = "kinesis"
    compares_live = False
    codes = frozenset({"kinesis.enabled", "kinesis.disabled", "kinesis.changed", "kinesis.stream_deleted"})
    calls = CALLS

    def findings(self, observed: Observed) -> list[Finding]:
        return findings(observed.deployed, observed.target) if observed.deployment.recorded else []

    def drift(self, observed: Observed) -> list[Drift]:
        return kinesis_drift(observed.aws, observed.deployment, observed.live_table)

    def apply(
        self, aws: Aws, deployment: Deployment, table: dict[str, Any], call: str, params: dict[str, Any]
    ) -> None:
        apply_repair(aws.client("dynamodb"), table["TableName"], call, params)


KINESIS = KinesisCapability()
