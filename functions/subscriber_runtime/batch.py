"""One batch as the wrapper sees it: the records checked to be a stream's, the proof line's fields, and the
per-record calls with their partial-batch failures. Pure: no logging, no metrics (handler.py does those).

Records come from the table's DynamoDB stream (``dynamodb.SequenceNumber``) or from its Kinesis destination
(``kinesis.sequenceNumber``; ``kinesis.data`` is the base64 JSON of the DynamoDB change record). Kinesis may deliver
a change twice or out of order: a per-record function orders and deduplicates by the change's
``dynamodb.ApproximateCreationDateTime`` and its item's keys, never by the Kinesis sequence number alone.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from .constants import EVENT_SOURCE, KINESIS_SOURCE

EVENT_NAMES = ("INSERT", "MODIFY", "REMOVE")
UNKNOWN = "UNKNOWN"
EXPECTED_EVENT = f"expected a DynamoDB Streams or Kinesis event with Records[].eventSource '{EVENT_SOURCE}' or '{KINESIS_SOURCE}'"
_SOURCES = frozenset((EVENT_SOURCE, KINESIS_SOURCE))
# The batch is read by C-level maps: the wrapper's cost per batch is measured against the team's handler alone
# (bench/subscriber), and Python loops over the records were most of it.
_source_of, _event_name_of = operator.itemgetter("eventSource"), operator.itemgetter("eventName")
_STREAM_ARN = re.compile(r"^arn:aws[a-z-]*:dynamodb:[^:]*:\d*:table/([^/]+)/stream/")


class UnexpectedEventError(ValueError):
    """The invocation event is not a stream's batch."""


class UnreportableFailureError(RuntimeError):
    """A record failed that has no sequence number, so it cannot be reported alone: the whole batch fails."""


class BatchSummary(NamedTuple):
    """The proof line's fields: the same as the consumer's (doctable/verify/proof.py reads them). (Named tuples, not
    dataclasses, here and in settings.py: dataclasses imports inspect, a cold start's milliseconds.)"""

    record_count: int
    event_names: dict[str, int]
    first_sequence_number: str | None = None
    last_sequence_number: str | None = None
    table_name: str | None = None

    def as_log_fields(self) -> dict[str, Any]:
        return {
            "record_count": self.record_count,
            "event_names": self.event_names,
            "first_sequence_number": self.first_sequence_number,
            "last_sequence_number": self.last_sequence_number,
            "table_name": self.table_name,
        }


def stream_records(event: Any) -> tuple[list[Any], bool]:
    """The event's records and whether any is a Kinesis record, or :class:`UnexpectedEventError` saying what was
    expected and what came."""
    if not isinstance(event, dict):
        raise UnexpectedEventError(f"{EXPECTED_EVENT}; got a {type(event).__name__}")
    records = event.get("Records")
    if not isinstance(records, list) or not records:
        raise UnexpectedEventError(f"{EXPECTED_EVENT}; got an event with top-level keys {sorted(event)[:10]}")
    try:
        sources = list(map(_source_of, records))
    except (KeyError, TypeError):  # a record without a source, or not an object: named below
        sources = []
    dynamodb = sources.count(EVENT_SOURCE)
    if sources and dynamodb == len(records):
        return records, False
    if sources and dynamodb + sources.count(KINESIS_SOURCE) == len(records):
        return records, True
    for index, record in enumerate(records):
        source = record.get("eventSource") if type(record) is dict else None
        if source not in _SOURCES:
            raise UnexpectedEventError(f"{EXPECTED_EVENT}; Records[{index}].eventSource is {source!r}")
    return records, True  # (not reached: some record failed the counts above)


def sequence_number_of(raw: dict[str, Any]) -> str | None:
    kinesis = raw.get("eventSource") == KINESIS_SOURCE
    holder = raw.get("kinesis" if kinesis else "dynamodb")
    number = holder.get("sequenceNumber" if kinesis else "SequenceNumber") if type(holder) is dict else None
    return number if type(number) is str and number else None


def change_of(raw: dict[str, Any]) -> Mapping[str, Any] | None:
    """The DynamoDB change record a stream record carries: itself, or a Kinesis record's decoded ``data`` (its
    ``dynamodb.SequenceNumber`` the Kinesis one, its ``ApproximateCreationDateTime`` in epoch seconds as a
    DynamoDB stream's); None when the Kinesis data is not one."""
    if raw.get("eventSource") != KINESIS_SOURCE:
        return raw
    import base64  # Kinesis records only: not a DynamoDB stream subscriber's cold start
    import binascii

    kinesis = raw.get("kinesis")
    try:
        change = json.loads(base64.b64decode(kinesis["data"], validate=True))  # type: ignore[index]
    except (TypeError, KeyError, ValueError, binascii.Error):
        return None
    images = change.get("dynamodb") if isinstance(change, dict) else None
    if not isinstance(images, dict) or change.get("eventSource") != EVENT_SOURCE:
        return None
    created = images.get("ApproximateCreationDateTime")
    if isinstance(created, (int, float)) and not isinstance(created, bool):
        images["ApproximateCreationDateTime"] = created / 1000  # Kinesis carries epoch milliseconds
    number = sequence_number_of(raw)
    if number:
        images["SequenceNumber"] = number
    return change


def summarize(
    records: list[Any], table_name: str, kinesis: bool
) -> tuple[BatchSummary, list[Mapping[str, Any] | None]]:
    """The proof line's fields, and each record's change record (for the per-record calls). A DynamoDB stream's
    records are their own change records (the same list, read once for their event names); a Kinesis record's is
    decoded from its data."""
    changes: list[Mapping[str, Any] | None] = records
    if kinesis:
        changes = [change_of(raw) for raw in records]
        names = [change.get("eventName") if change is not None else None for change in changes]
    else:
        try:
            names = list(map(_event_name_of, records))
        except KeyError:  # a record without one: UNKNOWN
            names = [record.get("eventName") for record in records]
    return _summary(records, changes, _count(names), table_name), changes


def _count(names: list[Any]) -> dict[str, int]:
    """Records per event name (a name that is not a string counts as UNKNOWN), by set and list.count per distinct
    name (a batch has one to three)."""
    counts = dict.fromkeys(EVENT_NAMES, 0)
    try:
        distinct = set(names)
    except TypeError:  # an unhashable eventName: counted one by one
        tally = [(name, 1) for name in names]
    else:
        tally = [(name, len(names) if len(distinct) == 1 else names.count(name)) for name in distinct]
    for name, count in tally:
        label = name if type(name) is str else UNKNOWN
        counts[label] = counts.get(label, 0) + count
    return counts


def _summary(
    records: list[Any], changes: list[Mapping[str, Any] | None], counts: dict[str, int], table_name: str
) -> BatchSummary:
    numbers = (sequence_number_of(raw) for raw in records)
    first = next((n for n in numbers if n), None)
    last = next((n for n in map(sequence_number_of, reversed(records)) if n), None)
    return BatchSummary(len(records), counts, first, last, _table_of(changes) or table_name)


def _table_of(changes: list[Mapping[str, Any] | None]) -> str | None:
    """The table the first change names: its stream ARN's (DynamoDB) or its ``tableName`` (Kinesis)."""
    change = next((c for c in changes if c is not None), None)
    if change is None:
        return None
    name = change.get("tableName")
    if isinstance(name, str):
        return name
    arn = change.get("eventSourceARN")
    match = _STREAM_ARN.match(arn) if isinstance(arn, str) else None
    return match.group(1) if match else None


def failed_count(response: Any) -> int:
    """How many records a batch handler's response reports failed (its ``batchItemFailures``)."""
    failures = response.get("batchItemFailures") if isinstance(response, Mapping) else None
    return len(failures) if isinstance(failures, list) else 0


class RecordFailure(NamedTuple):
    sequence_number: str
    error: BaseException | None  # None: not called, a record before it failed


def call_per_record(
    function: Callable[[Any, Any], Any],
    records: list[Any],
    changes: list[Mapping[str, Any] | None],
    context: Any,
) -> list[RecordFailure]:
    """Call ``function(change, context)`` for each record in order. The first exception fails its record, and
    every later record is failed without a call: Lambda retries a shard from the lowest failed sequence number
    (bisecting the batch), so a later record processed now would run again on the retry, before the one that
    failed. A failing record without a sequence number cannot be reported alone:
    :class:`UnreportableFailureError` fails the whole batch."""
    failures: list[RecordFailure] = []
    for raw, change in zip(records, changes, strict=True):
        number = sequence_number_of(raw)
        if failures:
            if number:  # (one without is retried anyway: it comes after the first failure)
                failures.append(RecordFailure(number, None))
            continue
        try:
            if change is None:
                raise ValueError("kinesis.data is not base64 JSON of a DynamoDB change record")
            function(change, context)
        except (
            Exception
        ) as exc:  # the record's verdict: reported, retried by the mapping, then its destination's
            if number is None:
                raise UnreportableFailureError("a record without a sequence number failed") from exc
            failures.append(RecordFailure(number, exc))
    return failures
