"""`doctable invoke`: one DynamoDB-stream change record, built from the data contract, sent synchronously to the
deployed consumer (what its event-source mapping invokes), with its answer and its log lines.

The record is what the table's stream would carry for the change (docs/data-contract.md): keys ``pk``/``sk``
(strings), the ``blobs`` list, NEW_AND_OLD_IMAGES images, the stack's stream ARN as ``eventSourceARN`` (the
consumer refuses a record of another table). insert: the new image lists the blobs; modify: the old image lists
them and the new one does not (they become orphans); remove: the old image lists them. ``--file`` sends an event
file as it is.
"""

from __future__ import annotations

import argparse
import base64
import json
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract import names
from contract.knobs import STREAM_NEW_AND_OLD, STREAM_VIEW_TYPES
from doctable.core.answers import arn_region, call_or_none
from doctable.core.command import add_command, connect, print_json
from doctable.core.deployment import Deployment, require_deployed, subscriber_output
from doctable.core.errors import EXIT_FAILED, EXIT_OK, UserError
from doctable.core.render import Progress
from doctable.operate.logs import PROOF_MARK, marked

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
        raise UserError(f"stack {deployment.config.stack_name} has no {names.OUT_TABLE_ARN} output")
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
        raise UserError(f"stack {deployment.config.stack_name} has no consumer: nothing to invoke")
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
def given_event(args: argparse.Namespace) -> dict[str, Any] | None:
    """The event of ``--file`` (None with ``--event``), after checking the arguments agree: before any AWS call."""
    given = [flag for flag, value in (("--pk", args.pk), ("--sk", args.sk), ("--blobs", args.blobs)) if value]
    if args.file:
        if given:
            raise UserError(f"{'/'.join(given)} build an event with --event; --file sends its own: give one")
        return read_event_file(args.file)
    if args.pk is None or args.sk is None:
        raise UserError("--event needs --pk and --sk (the item's keys)")
    return None


def built_event(
    args: argparse.Namespace, deployment: Deployment, region: str, progress: Progress
) -> dict[str, Any]:
    """The event of ``--event``: one record of the stack's table and stream."""
    config = deployment.config
    prefix = f"{config.blob_root}{args.pk}/{args.sk}/"
    outside = [key for key in args.blobs or [] if not key.startswith(prefix)]
    if outside:
        progress.say(
            f"the consumer refuses a blob key outside {prefix} (the record's prefix): {', '.join(outside)}"
        )
    stream_arn = stream_arn_of(deployment)
    record = build_record(
        args.event,
        args.pk,
        args.sk,
        list(args.blobs or []),
        stream_arn=stream_arn,
        region=arn_region(stream_arn) or region,
        view_type=config.stream_view_type or STREAM_VIEW_TYPES[STREAM_NEW_AND_OLD],
    )
    return {"Records": [record]}


def cmd_invoke(args: argparse.Namespace) -> int:
    event = given_event(args)
    config, aws, deployment = connect(args)
    require_deployed(deployment)
    progress = Progress("doctable invoke", quiet=args.quiet)
    if event is None:
        event = built_event(args, deployment, aws.region, progress)
    if args.dry_run:
        print_json(event)
        return EXIT_OK
    function = (
        subscriber_output(deployment, args.subscriber, names.OUT_SUBSCRIBER_FUNCTION)
        if args.subscriber
        else consumer_target(aws, deployment)
    )
    progress.say(f"invoking {function} with {len(event['Records'])} record(s) (RequestResponse)")
    result = invoke_consumer(aws.client("lambda"), function, event)
    if args.json:
        log = result.log_dicts()
        print_json(
            {
                "kind": "doctable-invoke",
                "stack": config.stack_name,
                "function": function,
                "executed_version": result.executed_version,
                "status_code": result.status_code,
                "function_error": result.function_error,
                "event": event,
                "response": result.response,
                "batch_item_failures": result.failures,
                "log": log,
                "proof_lines": sum(1 for line in log if line["proof"]),
                "exit": result.exit_code,
            }
        )
        return result.exit_code
    version = f" (version {result.executed_version})" if result.executed_version else ""
    print(f"invoked {function}{version}: status {result.status_code}")
    if result.function_error:
        print(f"function error ({result.function_error}): {json.dumps(result.response)}")
    else:
        print(f"response: {json.dumps(result.response)}")
    print("log (the invocation's last 4 KB; `doctable logs` has every line):")
    for line in result.log:
        fields, text = marked(line)
        print(f"  {PROOF_MARK if fields is not None else ' ' * len(PROOF_MARK)}  {text}")
    if result.failures:
        print(f"{len(result.failures)} record(s) failed: {', '.join(result.failures)}")
    return result.exit_code


def register(sub: Any) -> None:
    invoke = add_command(
        sub,
        "invoke",
        cmd_invoke,
        help="send one stream change record (or an event file) to the deployed consumer; print its answer and log",
        description="Build a DynamoDB-stream change record of item (--pk, --sk) listing --blobs, as the table's "
        "stream would deliver it (NEW_AND_OLD_IMAGES; insert: the new image lists the blobs; modify: the old "
        "image lists them, the new one does not; remove: the old image lists them), or read one from --file, "
        "and invoke the deployed consumer with it synchronously (what its event-source mapping invokes). Prints "
        "the response (batchItemFailures) and the log lines, proof lines marked. The consumer really acts: a "
        "remove or modify deletes the blobs it drops. Exit 0: every record succeeded; 1: a record failed or the "
        "function errored.",
        json_help="print the event, the response and the log as one JSON document",
    )
    what = invoke.add_mutually_exclusive_group(required=True)
    what.add_argument("--event", choices=list(EVENT_NAMES), help="the change to build a record of")
    what.add_argument(
        "--file", metavar="EVENT.json", help="send this event as it is (a JSON object with a Records list)"
    )
    invoke.add_argument(
        "--subscriber", metavar="NAME", help="invoke this subscriber's function (through its wrapper) instead"
    )
    invoke.add_argument("--pk", metavar="PK", help="the item's partition key (with --event)")
    invoke.add_argument("--sk", metavar="SK", help="the item's sort key (with --event)")
    invoke.add_argument(
        "--blobs",
        nargs="+",
        metavar="KEY",
        default=[],
        help="the blob keys the item lists (under <blob_root><pk>/<sk>/, or the consumer refuses them)",
    )
    invoke.add_argument(
        "--dry-run", action="store_true", help="print the event that would be sent (JSON), invoke nothing"
    )
