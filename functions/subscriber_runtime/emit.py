"""The wrapper's per-batch output, written straight to stdout as Lambda's runtime ships it to CloudWatch Logs.

One JSON line per batch is both the proof line (``stream_records_received``: the keys Powertools' Logger writes,
the subscriber's name and the batch's fields, which ``doctable/verify/proof.py`` reads) and the Embedded Metric
Format document of ``RecordsReceived`` (CloudWatch extracts a metric from a log line's ``_aws`` directive, whose
dimensions and values are the line's own keys: the consumer's dimensions plus ``Subscriber``, and ``service`` as
Powertools' Metrics adds it), and of ``RecordsFailed`` = 0. A batch whose records fail adds a line of
``RecordsFailed`` = their count after the team's function: the metric's sum per period is the failed records, with a
point for every batch.

Its error lines (an unexpected event, a record that failed) have the same keys at level ERROR, with the exception's
name and traceback as Powertools writes them (``exception_name``, ``exception``).

Why not Powertools' Logger and Metrics: a batch through them cost 56 us of CPU (the log record's formatting and the
metric set's validation), as much as a small handler's whole batch of 100 records, and importing them is most of
the wrapper's cold start for a team handler that does not use Powertools itself (``make bench``:
``bench/subscriber``, whose goal is the wrapper within 1.1x of the handler alone).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from .constants import (
    METRIC_DIMENSION_ENVIRONMENT,
    METRIC_DIMENSION_SUBSCRIBER,
    METRIC_DIMENSION_TABLE,
    METRIC_SUBSCRIBER_RECORDS_FAILED,
    METRIC_SUBSCRIBER_RECORDS_RECEIVED,
    METRICS_NAMESPACE,
    PROOF_LOG_MESSAGE,
    SUBSCRIBER_SERVICE_NAME,
)

TRACE_HEADER_ENV = "_X_AMZN_TRACE_ID"  # set by Lambda's runtime per invocation
COUNT = "Count"
_dumps = json.JSONEncoder(separators=(",", ":"), default=str).encode


_second: list[Any] = [None, ""]  # the last second formatted, and its text


def _timestamp(now: float) -> str:
    """Powertools' Logger's timestamp: ``2026-12-05 05:26:19,123+0000`` (UTC); a second formatted once."""
    second = int(now)
    if _second[0] != second:
        _second[:] = [second, time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(second))]
    return f"{_second[1]},{int(now * 1000) % 1000:03d}+0000"


class BatchOutput:
    """The lines of one subscriber's function; ``write`` takes a whole line (stdout's, flushed, by default)."""

    def __init__(
        self,
        subscriber: str,
        table_name: str,
        environment: str | None,
        write: Callable[[str], Any] | None = None,
    ) -> None:
        self.dimensions: dict[str, str] = {
            "service": SUBSCRIBER_SERVICE_NAME,
            METRIC_DIMENSION_TABLE: table_name,
            METRIC_DIMENSION_SUBSCRIBER: subscriber,
            **({METRIC_DIMENSION_ENVIRONMENT: environment} if environment else {}),
        }
        self.subscriber = subscriber
        self.cold_start = True
        self._write = write or _stdout
        directive = {"Namespace": METRICS_NAMESPACE, "Dimensions": [list(self.dimensions)]}
        received = {"Name": METRIC_SUBSCRIBER_RECORDS_RECEIVED, "Unit": COUNT}
        failed = {"Name": METRIC_SUBSCRIBER_RECORDS_FAILED, "Unit": COUNT}
        self._failed = {**directive, "Metrics": [failed]}
        self._both = {**directive, "Metrics": [received, failed]}
        # The proof line's keys that do not change between batches, encoded once: the line is this, the context's
        # keys (encoded once per function ARN), the batch's keys and the EMF directive with its timestamp.
        self._static = _members(
            {
                "level": "INFO",
                "location": "lambda_handler",
                "message": PROOF_LOG_MESSAGE,
                "subscriber": subscriber,
                **self.dimensions,
                METRIC_SUBSCRIBER_RECORDS_FAILED: 0,
            }
        )
        self._directive = _dumps([self._both])
        self._function: tuple[Any, str] = (None, "")

    def _context_members(self, context: Any) -> str:
        """Powertools' Logger's keys of a Lambda context that do not change between invocations, encoded."""
        arn = getattr(context, "invoked_function_arn", None)
        if self._function[0] != arn or not self._function[1]:
            members = {
                "function_name": getattr(context, "function_name", None),
                "function_memory_size": getattr(context, "memory_limit_in_mb", None),
                "function_arn": arn,
            }
            self._function = (arn, _members(members))
        return self._function[1]

    def proof(self, fields: Mapping[str, Any], context: Any) -> None:
        """The proof line of a batch of ``fields["record_count"]`` records: ``RecordsReceived``, ``RecordsFailed`` 0.
        Keys as Powertools' Logger writes them with ``inject_lambda_context`` (and ``cold_start``)."""
        now = time.time()
        cold, self.cold_start = self.cold_start, False
        batch = {
            "timestamp": _timestamp(now),
            "cold_start": cold,
            "function_request_id": getattr(context, "aws_request_id", None),
            **fields,
            METRIC_SUBSCRIBER_RECORDS_RECEIVED: fields["record_count"],
        }
        trace = os.environ.get(TRACE_HEADER_ENV)
        if trace:
            batch["xray_trace_id"] = trace.partition(";")[0].partition("=")[2] or trace
        self._write(
            f"{{{self._static},{self._context_members(context)},{_members(batch)},"
            f'"_aws":{{"Timestamp":{int(now * 1000)},"CloudWatchMetrics":{self._directive}}}}}\n'
        )

    def error(
        self, message: str, context: Any, fields: Mapping[str, Any], exc: BaseException | None = None
    ) -> None:
        """An ERROR line with the invocation's keys, ``fields``, and the exception's name and traceback."""
        now = time.time()
        line: dict[str, Any] = {
            "level": "ERROR",
            "location": "lambda_handler",
            "message": message,
            "timestamp": _timestamp(now),
            "service": SUBSCRIBER_SERVICE_NAME,
            "cold_start": self.cold_start,
            "function_name": getattr(context, "function_name", None),
            "function_request_id": getattr(context, "aws_request_id", None),
            "subscriber": self.subscriber,
            **fields,
        }
        if exc is not None:
            import traceback  # an error line's only: not a cold start's

            line["exception_name"] = type(exc).__name__
            line["exception"] = "".join(traceback.format_exception(exc)).rstrip()
        self._write(_dumps(line) + "\n")

    def failed(self, count: int) -> None:
        """``RecordsFailed`` of the batch's failed records, when there are any (the proof line counted 0)."""
        if count:
            self._metrics(self._failed, {METRIC_SUBSCRIBER_RECORDS_FAILED: count})

    def refused(self) -> None:
        """A refused event: both metrics, 0 (no records were read)."""
        self._metrics(
            self._both, {METRIC_SUBSCRIBER_RECORDS_RECEIVED: 0, METRIC_SUBSCRIBER_RECORDS_FAILED: 0}
        )

    def _metrics(self, directive: dict[str, Any], values: dict[str, int]) -> None:
        stamp = int(time.time() * 1000)
        doc = {**self.dimensions, **values, "_aws": {"Timestamp": stamp, "CloudWatchMetrics": [directive]}}
        self._write(_dumps(doc) + "\n")


def _members(values: Mapping[str, Any]) -> str:
    """A JSON object's members without its braces, to be joined with others into one object."""
    return _dumps(values)[1:-1]


def _stdout(line: str) -> None:
    stream = sys.stdout
    stream.write(line)
    stream.flush()
