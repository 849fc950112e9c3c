"""`doctable logs`: the deployed built-in consumer's log lines, read from its log group (CloudWatch Logs
FilterLogEvents), the proof lines (``stream_records_received``: the consumer received a batch) marked.

The log group is the stack's ``ConsumerLogGroupName`` output, so the same command reads AWS and the local AWS.
``--follow`` polls until interrupted; an event is printed once even when two polls overlap (late ingestion).
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from contract import names
from doctable.core.answers import is_not_found
from doctable.core.command import connect
from doctable.core.deployment import require_deployed, subscriber_output
from doctable.core.errors import UserError
from doctable.core.render import Progress
from doctable.verify.proof import parse_proof_line

if TYPE_CHECKING:
    from doctable.core.target import Target

DEFAULT_SINCE = "10m"
DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
DURATION_RE = re.compile(r"^\s*(\d+)\s*([smhd])\s*$")
DURATION_FORMS = "a whole number followed by s, m, h or d (e.g. 30s, 10m, 1h, 2d)"
POLL_SECONDS = 1.0
# A poll of --follow reads again from this long before the newest event it printed: CloudWatch Logs may ingest
# an event after a later one (another log stream); the events already printed are recognized by their id.
FOLLOW_OVERLAP_MS = 10_000
PROOF_MARK = "PROOF"


def parse_duration(text: str, option: str = "--since") -> float:
    """``10m`` -> 600.0 seconds; UserError naming the allowed forms otherwise."""
    match = DURATION_RE.match(text or "")
    if not match or int(match.group(1)) == 0:
        raise UserError(f"{option} {text!r} is not a duration: use {DURATION_FORMS}")
    return float(int(match.group(1)) * DURATION_UNITS[match.group(2)])


def iso_ms(timestamp_ms: int) -> str:
    """Epoch milliseconds as ISO-8601 UTC with milliseconds (``2024-05-01T12:00:00.123Z``)."""
    moment = datetime.fromtimestamp(timestamp_ms / 1000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{timestamp_ms % 1000:03d}Z"


def proof_summary(fields: dict[str, Any]) -> str:
    """One line saying what a ``stream_records_received`` line says: records, event names, table, sequence."""
    count = int(fields.get("record_count") or 0)
    kinds = fields.get("event_names") or {}
    by_name = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()) if v) if isinstance(kinds, dict) else ""
    first, last = fields.get("first_sequence_number"), fields.get("last_sequence_number")
    span = f", sequence {first}..{last}" if first or last else ""
    table = f" of {fields['table_name']}" if fields.get("table_name") else ""
    plural = "" if count == 1 else "s"
    return (
        f"{names.PROOF_LOG_MESSAGE}: {count} record{plural}{f' ({by_name})' if by_name else ''}{table}{span}"
    )


# The fields Powertools adds to every structured line: the same on each line of an invocation, left out of the
# text view (--json keeps every field).
_CONTEXT_FIELDS = frozenset(
    {
        "level",
        "location",
        "message",
        "timestamp",
        "service",
        "cold_start",
        "function_name",
        "function_memory_size",
        "function_arn",
        "function_request_id",
        "xray_trace_id",
        "sampling_rate",
    }
)


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def readable(text: str) -> str:
    """A structured (JSON) line in a few words: a Powertools line as ``LEVEL message key=value...``, an
    embedded-metric-format line as ``metrics Name=value...``; any other line as it is."""
    if not text.startswith("{"):
        return text
    try:
        line = json.loads(text)
    except ValueError:
        return text
    if not isinstance(line, dict):
        return text
    directives = (
        (line.get("_aws") or {}).get("CloudWatchMetrics") if isinstance(line.get("_aws"), dict) else None
    )
    if isinstance(directives, list):
        metric_names = [
            m.get("Name") for d in directives for m in d.get("Metrics", []) if isinstance(m, dict)
        ]
        values = {name: line.get(name) for name in metric_names if name in line}
        shown = {k: (sum(v) if isinstance(v, list) and all(isinstance(x, int | float) for x in v) else v)
                 for k, v in values.items()}  # fmt: skip
        return "metrics " + " ".join(f"{k}={v:g}" if isinstance(v, int | float) else f"{k}={_value(v)}"
                                     for k, v in shown.items())  # fmt: skip
    if "message" not in line:
        return text
    rest = " ".join(f"{k}={_value(v)}" for k, v in line.items() if k not in _CONTEXT_FIELDS)
    return " ".join(part for part in (str(line.get("level") or ""), _value(line["message"]), rest) if part)


def marked(message: str) -> tuple[dict[str, Any] | None, str]:
    """A log message's proof fields (None when it is not a proof line) and the text shown for it."""
    text = message.rstrip("\n")
    fields = parse_proof_line(text)
    return fields, (proof_summary(fields) if fields is not None else readable(text))


@dataclass(frozen=True)
class LogLine:
    """One log event of the consumer's log group."""

    timestamp: int  # epoch ms, as the function wrote it
    message: str
    stream: str = ""
    event_id: str = ""

    @property
    def proof(self) -> dict[str, Any] | None:
        return parse_proof_line(self.message)

    def render(self) -> str:
        fields, text = marked(self.message)
        return (
            f"{iso_ms(self.timestamp)}  {PROOF_MARK if fields is not None else ' ' * len(PROOF_MARK)}  {text}"
        )

    def as_dict(self) -> dict[str, Any]:
        fields = self.proof
        return {
            "timestamp": self.timestamp,
            "time": iso_ms(self.timestamp),
            "stream": self.stream,
            "message": self.message.rstrip("\n"),
            "proof": fields is not None,
            "fields": fields,
        }


def line_of(event: dict[str, Any]) -> LogLine:
    return LogLine(
        timestamp=int(event.get("timestamp") or 0),
        message=str(event.get("message", "")),
        stream=str(event.get("logStreamName", "")),
        event_id=str(event.get("eventId", "")),
    )


def read_lines(logs: Any, group: str, start_ms: int) -> list[LogLine] | None:
    """Every event of ``group`` from ``start_ms`` on, oldest first; None when the group does not exist."""
    lines: list[LogLine] = []
    kwargs: dict[str, Any] = {"logGroupName": group, "startTime": max(0, start_ms)}
    while True:
        try:
            page = logs.filter_log_events(**kwargs)
        except ClientError as exc:
            if is_not_found(exc):
                return None
            raise
        lines += [line_of(event) for event in page.get("events", [])]
        token = page.get("nextToken")
        if not token or token == kwargs.get("nextToken"):
            break
        kwargs["nextToken"] = token
    # Events of several streams come stream by stream (without `interleaved`): one timeline.
    return sorted(lines, key=lambda line: (line.timestamp, line.event_id))


def follow_group(
    logs: Any,
    group: str,
    start_ms: int,
    emit: Callable[[LogLine], None],
    *,
    interval: float = POLL_SECONDS,
    sleep: Callable[[float], None] = time.sleep,
    polls: int | None = None,
    missing: Callable[[], None] = lambda: None,
    stop: Callable[[], bool] | None = None,
) -> None:
    """Emit each new event of ``group`` (from ``start_ms`` on) once, polling every ``interval`` seconds until
    interrupted, ``stop()`` answers true (asked before each poll but the first) or ``polls`` polls (the tests);
    ``missing`` is called once if the group does not exist yet."""
    seen: dict[str, int] = {}  # event id -> timestamp, of what was emitted within the overlap
    newest = start_ms
    told = False
    for poll in _count(polls):
        if poll:
            if stop is not None and stop():
                return
            sleep(interval)
        lines = read_lines(logs, group, max(start_ms, newest - FOLLOW_OVERLAP_MS))
        if lines is None:
            if not told:
                missing()
                told = True
            continue
        for line in lines:
            key = line.event_id or f"{line.stream}/{line.timestamp}/{line.message}"
            if key in seen:
                continue
            seen[key] = line.timestamp
            newest = max(newest, line.timestamp)
            emit(line)
        horizon = newest - FOLLOW_OVERLAP_MS
        for key in [k for k, ts in seen.items() if ts < horizon]:
            del seen[key]


def _count(limit: int | None) -> Iterator[int]:
    number = 0
    while limit is None or number < limit:
        yield number
        number += 1


def consumer_log_group(deployment: Any) -> str:
    """The built-in consumer's log group (the stack's output); UserError when the stack has none."""
    group = deployment.out(names.OUT_CONSUMER_LOG_GROUP)
    if not group:
        config = deployment.config
        borrowed = (
            f" (the consumer is borrowed: {config.borrowed_consumer_arn})"
            if config.borrowed_consumer_arn
            else ""
        )
        raise UserError(
            f"stack {deployment.stack_name} has no built-in consumer, so no {names.OUT_CONSUMER_LOG_GROUP} "
            f"output{borrowed}: nothing to read"
        )
    return group


# ---------------------------------------------------------------------------------------------- command
@dataclass(frozen=True)
class LogsResult:
    """What ``doctable logs`` read: the log group's lines since ``start`` (none kept with ``follow``: each went
    to ``on_line`` as it came, ``followed`` counts them)."""

    stack: str
    log_group: str
    since: str  # the duration asked for, as given (``10m``)
    start: str  # ISO-8601 UTC, the first moment read
    lines: tuple[LogLine, ...]
    proof_lines: int  # how many of ``lines`` are proof lines (stream_records_received)
    dashboard_url: str | None
    follow: bool = False
    followed: int = 0  # with ``follow``: the lines handed to ``on_line`` before it stopped

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "doctable-logs",
            "stack": self.stack,
            "log_group": self.log_group,
            "since": self.since,
            "start": self.start,
            "events": [line.as_dict() for line in self.lines],
            "proof_lines": self.proof_lines,
            "dashboard_url": self.dashboard_url,
        }


def logs(
    target: Target,
    *,
    since: str = DEFAULT_SINCE,
    subscriber: str | None = None,
    follow: bool = False,
    on_line: Callable[[LogLine], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> LogsResult:
    """The consumer's (or subscriber ``subscriber``'s) log lines of the last ``since``. With ``follow``: each new
    line goes to ``on_line`` as it comes, polling until ``stop()`` answers true or Ctrl-C (KeyboardInterrupt)."""
    seconds_back = parse_duration(since)
    _config, aws, deployment = connect(target, command="logs", regional=True)
    require_deployed(deployment)
    group = (
        subscriber_output(deployment, subscriber, names.OUT_SUBSCRIBER_LOG_GROUP)
        if subscriber
        else consumer_log_group(deployment)
    )
    start_ms = int((time.time() - seconds_back) * 1000)
    progress = Progress("doctable logs", quiet=target.quiet)
    client = aws.client("logs")
    dashboard = names.dashboard_url(deployment.region, deployment.out(names.OUT_DASHBOARD_NAME))

    def missing() -> None:
        progress.say(f"log group {group} does not exist yet: the consumer has not run since it was created")

    result = functools.partial(
        LogsResult, deployment.stack_name, group, since, iso_ms(start_ms), dashboard_url=dashboard
    )
    if follow:
        progress.say(f"{group} since {iso_ms(start_ms)} ({since}), following: Ctrl-C stops")
        if dashboard:
            progress.say(f"dashboard: {dashboard}")
        count = 0

        def emit(line: LogLine) -> None:
            nonlocal count
            count += 1
            if on_line is not None:
                on_line(line)

        with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C: the way out of follow, not an error
            follow_group(client, group, start_ms, emit, missing=missing, stop=stop)
        return result((), 0, follow=True, followed=count)
    lines = read_lines(client, group, start_ms)
    if lines is None:
        missing()
        lines = []
    return result(tuple(lines), sum(1 for line in lines if line.proof is not None))
