"""`doctable invoke`: one DynamoDB-stream change record, built from the data contract, sent synchronously to the
deployed consumer (what its event-source mapping invokes), with its answer and its log lines.

The record is what the table's stream would carry for the change (docs/data-contract.md): keys ``pk``/``sk``
(strings), the ``blobs`` list, NEW_AND_OLD_IMAGES images, the stack's stream ARN as ``eventSourceARN`` (the
consumer refuses a record of another table). insert: the new image lists the blobs; modify: the old image lists
them and the new one does not (they become orphans); remove: the old image lists them. ``--file`` sends an event
file as it is.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from contract import names
from contract.knobs import STREAM_NEW_AND_OLD, STREAM_VIEW_TYPES
from doctable.core.answers import arn_region, call_or_none
from doctable.core.command import connect
from doctable.core.deployment import Deployment, require_deployed, subscriber_output
from doctable.core.errors import EXIT_FAILED, EXIT_OK, UserError
from doctable.core.render import Progress
from doctable.operate.logs import PROOF_MARK, marked

if TYPE_CHECKING:
    from doctable.core.target import Target

EVENT_NAMES = {"insert": "INSERT", "modify": "MODIFY", "remove": "REMOVE"}
STREAM_SOURCE = "aws:dynamodb"
STREAM_EVENT_VERSION = "1.1"


# ------------------------------------------------------------------------------------------ the event
def _image(pk: str, sk: str, blobs: list[str] | None) -> dict[str, Any]:
    """An item image with its keys and, when ``blobs`` is not None, the ``blobs`` list (L of S)."""
    item: dict[str, Any] = {names.PARTITION_KEY: {"S": pk}, names.SORT_KEY: {"S": sk}}
    if blobs is not None:
        item[names.BLOBS_ATTRIBUTE] = {"L": [{"S": key} for key in blobs]}
    return item


def build_record(
    kind: str,
    pk: str,
    sk: str,
    blobs: list[str],
    *,
    stream_arn: str,
    region: str,
    view_type: str = STREAM_VIEW_TYPES[STREAM_NEW_AND_OLD],
    now: float | None = None,
    sequence: str | None = None,
    event_id: str | None = None,
) -> dict[str, Any]:
    """One stream record as Lambda delivers it for an ``insert``, ``modify`` or ``remove`` of item (pk, sk)."""
    if kind not in EVENT_NAMES:
        raise UserError(f"--event {kind!r}: use one of {', '.join(EVENT_NAMES)}")
    if not pk or not sk:
        raise UserError("--pk and --sk must be non-empty strings (the table's keys)")
    moment = time.time() if now is None else now
    change: dict[str, Any] = {
        "ApproximateCreationDateTime": int(moment),
        "Keys": {names.PARTITION_KEY: {"S": pk}, names.SORT_KEY: {"S": sk}},
        # Numeric and increasing, as DynamoDB's are; the proof line names it (first/last_sequence_number).
        "SequenceNumber": sequence or str(int(moment * 1_000_000)),
        "StreamViewType": view_type,
    }
    if kind == "insert":
        change["NewImage"] = _image(pk, sk, blobs)
    elif kind == "modify":
        change["OldImage"] = _image(pk, sk, blobs)
        change["NewImage"] = _image(pk, sk, None)
    else:
        change["OldImage"] = _image(pk, sk, blobs)
    change["SizeBytes"] = len(json.dumps({k: v for k, v in change.items() if k.endswith(("Keys", "Image"))}))
    return {
        "eventID": event_id or uuid.uuid4().hex,
        "eventName": EVENT_NAMES[kind],
        "eventVersion": STREAM_EVENT_VERSION,
        "eventSource": STREAM_SOURCE,
        "awsRegion": region,
        "dynamodb": change,
        "eventSourceARN": stream_arn,
    }


def read_event_file(path: str) -> dict[str, Any]:
    """The event in ``path``: a JSON object with a non-empty ``Records`` list; UserError in one line if not."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise UserError(f"--file {path}: {exc.strerror or exc}") from exc
    try:
        event = json.loads(text)
    except ValueError as exc:
        where = f" (line {exc.lineno}, column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise UserError(f"--file {path}: not JSON{where}: {getattr(exc, 'msg', exc)}") from exc
    records = event.get("Records") if isinstance(event, dict) else None
    if not isinstance(records, list) or not records or not all(isinstance(r, dict) for r in records):
        got = (
            "a JSON object without a non-empty Records list"
            if isinstance(event, dict)
            else "JSON " + type(event).__name__
        )
        raise UserError(
            f"--file {path}: expected a stream event, a JSON object with a Records list of records; got {got}"
        )
    return event


def stream_arn_of(deployment: Deployment) -> str:
    """The table's stream ARN (the stack's output); for a stack without one (Kinesis only), an ARN of the
    table's form: the consumer reads only the table's name from it."""
    arn = deployment.out(names.OUT_STREAM_ARN)
    if arn:
        return arn
    table_arn = deployment.out(names.OUT_TABLE_ARN)
    if not table_arn:
        raise UserError(f"stack {deployment.stack_name} has no {names.OUT_TABLE_ARN} output")
    return f"{table_arn}/stream/doctable-invoke"


# ------------------------------------------------------------------------------------------ the call
def consumer_target(aws: Any, deployment: Deployment) -> str:
    """What the event-source mapping invokes (its FunctionArn: the alias, which with snapstart points to the
    published version); without a mapping to read, the function replay invokes (the built-in consumer's name,
    else the borrowed consumer's ARN)."""
    uuid_ = deployment.out(names.OUT_MAPPING_UUID)
    if uuid_:
        mapping = call_or_none(aws.client("lambda").get_event_source_mapping, UUID=uuid_) or {}
        if mapping.get("FunctionArn"):
            return str(mapping["FunctionArn"])
    function = deployment.out(names.OUT_CONSUMER_FUNCTION_NAME) or deployment.config.borrowed_consumer_arn
    if not function:
        raise UserError(f"stack {deployment.stack_name} has no consumer: nothing to invoke")
    return function


def decode_log(log_result: str | None) -> list[str]:
    """Lambda's ``LogResult`` (base64 of the invocation's last 4 KB of log) as lines."""
    if not log_result:
        return []
    try:
        text = base64.b64decode(log_result).decode("utf-8", errors="replace")
    except ValueError:
        return []
    return [line for line in text.splitlines() if line.strip()]


@dataclass
class Invocation:
    function: str
    status_code: int = 0
    function_error: str | None = None
    executed_version: str | None = None
    response: Any = None
    log: list[str] = field(default_factory=list)

    @property
    def failures(self) -> list[str]:
        reply = self.response if isinstance(self.response, dict) else {}
        items = reply.get("batchItemFailures") or []
        return [str(f.get("itemIdentifier")) for f in items if isinstance(f, dict)]

    @property
    def exit_code(self) -> int:
        return EXIT_FAILED if self.function_error or self.failures else EXIT_OK

    def log_dicts(self) -> list[dict[str, Any]]:
        out = []
        for line in self.log:
            fields, _text = marked(line)
            out.append({"message": line, "proof": fields is not None, "fields": fields})
        return out


def invoke_consumer(lambda_client: Any, function: str, event: dict[str, Any]) -> Invocation:
    """Invoke ``function`` synchronously with ``event`` and its log tail."""
    reply = lambda_client.invoke(
        FunctionName=function,
        InvocationType="RequestResponse",
        LogType="Tail",
        Payload=json.dumps(event).encode(),
    )
    raw = reply["Payload"].read() if reply.get("Payload") is not None else b""
    try:
        response = json.loads(raw) if raw else None
    except ValueError:
        response = raw.decode("utf-8", errors="replace")
    return Invocation(
        function=function,
        status_code=int(reply.get("StatusCode") or 0),
        function_error=reply.get("FunctionError"),
        executed_version=reply.get("ExecutedVersion"),
        response=response,
        log=decode_log(reply.get("LogResult")),
    )


# ---------------------------------------------------------------------------------------------- command
@dataclass(frozen=True)
class InvokeLogLine:
    """One line of the invocation's log tail; a proof line (stream_records_received) with its fields."""

    message: str
    proof: bool
    fields: Mapping[str, Any] | None

    def as_dict(self) -> dict[str, Any]:
        return {"message": self.message, "proof": self.proof, "fields": self.fields}

    def render(self) -> str:
        """The line as the text output shows it: proof lines marked and summarized, structured lines in a few
        words."""
        _fields, text = marked(self.message)
        return f"{PROOF_MARK if self.proof else ' ' * len(PROOF_MARK)}  {text}"


@dataclass(frozen=True)
class InvokeResult:
    """The event sent (or, with ``dry_run``, the one that would be) and the function's answer."""

    stack: str
    function: str | None  # None with ``dry_run``: nothing was invoked
    event: Mapping[str, Any]
    dry_run: bool = False
    executed_version: str | None = None
    status_code: int = 0
    function_error: str | None = None
    response: Any = None
    batch_item_failures: tuple[str, ...] = ()
    log: tuple[InvokeLogLine, ...] = ()
    exit: int = EXIT_OK  # 1 when a record failed or the function errored

    @property
    def ok(self) -> bool:
        return self.exit == EXIT_OK

    @property
    def proof_lines(self) -> int:
        return sum(1 for line in self.log if line.proof)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "doctable-invoke",
            "stack": self.stack,
            "function": self.function,
            "executed_version": self.executed_version,
            "status_code": self.status_code,
            "function_error": self.function_error,
            "event": self.event,
            "response": self.response,
            "batch_item_failures": list(self.batch_item_failures),
            "log": [line.as_dict() for line in self.log],
            "proof_lines": self.proof_lines,
            "exit": self.exit,
        }


def given_event(
    file: str | None, pk: str | None, sk: str | None, blobs: Sequence[str], event: str | None
) -> dict[str, Any] | None:
    """The event of ``file`` (None with ``event``), after checking the arguments agree: before any AWS call."""
    if (file is None) == (event is None):
        raise UserError("give one of --event (a change to build a record of) and --file (an event to send)")
    given = [flag for flag, value in (("--pk", pk), ("--sk", sk), ("--blobs", blobs)) if value]
    if file:
        if given:
            raise UserError(f"{'/'.join(given)} build an event with --event; --file sends its own: give one")
        return read_event_file(file)
    if pk is None or sk is None:
        raise UserError("--event needs --pk and --sk (the item's keys)")
    return None


def built_event(
    kind: str,
    pk: str,
    sk: str,
    blobs: Sequence[str],
    deployment: Deployment,
    region: str,
    progress: Progress,
) -> dict[str, Any]:
    """The event of ``--event``: one record of the stack's table and stream."""
    config = deployment.config
    prefix = f"{config.blob_root}{pk}/{sk}/"
    outside = [key for key in blobs if not key.startswith(prefix)]
    if outside:
        progress.say(
            f"the consumer refuses a blob key outside {prefix} (the record's prefix): {', '.join(outside)}"
        )
    stream_arn = stream_arn_of(deployment)
    record = build_record(
        kind,
        pk,
        sk,
        list(blobs),
        stream_arn=stream_arn,
        region=arn_region(stream_arn) or region,
        view_type=config.stream_view_type or STREAM_VIEW_TYPES[STREAM_NEW_AND_OLD],
    )
    return {"Records": [record]}


def invoke(
    target: Target,
    *,
    event: Literal["insert", "modify", "remove"] | None = None,
    file: str | None = None,
    pk: str | None = None,
    sk: str | None = None,
    blobs: Sequence[str] = (),
    subscriber: str | None = None,
    dry_run: bool = False,
) -> InvokeResult:
    """Send one change record of item (``pk``, ``sk``) listing ``blobs`` (``event``), or the event in ``file``,
    to the deployed consumer (or subscriber ``subscriber``'s function), synchronously; ``dry_run``: build the
    event, invoke nothing."""
    sent = given_event(file, pk, sk, blobs, event)
    _config, aws, deployment = connect(target, command="invoke", regional=True)
    require_deployed(deployment)
    progress = Progress("doctable invoke", quiet=target.quiet)
    if sent is None:
        assert event is not None and pk is not None and sk is not None  # given_event checked them
        sent = built_event(event, pk, sk, blobs, deployment, aws.region, progress)
    if dry_run:
        return InvokeResult(stack=deployment.stack_name, function=None, event=sent, dry_run=True)
    function = (
        subscriber_output(deployment, subscriber, names.OUT_SUBSCRIBER_FUNCTION)
        if subscriber
        else consumer_target(aws, deployment)
    )
    progress.say(f"invoking {function} with {len(sent['Records'])} record(s) (RequestResponse)")
    result = invoke_consumer(aws.client("lambda"), function, sent)
    return InvokeResult(
        stack=deployment.stack_name,
        function=function,
        event=sent,
        executed_version=result.executed_version,
        status_code=result.status_code,
        function_error=result.function_error,
        response=result.response,
        batch_item_failures=tuple(result.failures),
        log=tuple(
            InvokeLogLine(line["message"], line["proof"], line["fields"]) for line in result.log_dicts()
        ),
        exit=result.exit_code,
    )
