"""Pure domain logic: stream records in, cleanup plans out; no I/O. The decisions: docs/consumer.md."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

# What Powertools' StreamRecord deserializes with, without importing every event data class (~50 ms).
from aws_lambda_powertools.shared.dynamodb_deserializer import TypeDeserializer

from .constants import (
    BLOBS_ATTRIBUTE,
    EVENT_SOURCE,
    KINESIS_SOURCE,
    PARTITION_KEY,
    SORT_KEY,
    TTL_IDENTITY_PRINCIPAL,
    TTL_IDENTITY_TYPE,
)
from .manifest import BlobEntry, ManifestError, manifest_of

__all__ = ["BlobEntry", "ManifestError", "manifest_of"]  # the manifest's types, where the records use them

T = TypeVar("T")
_TYPES = TypeDeserializer()

EVENT_NAMES = ("INSERT", "MODIFY", "REMOVE")
EXPECTED_EVENT = (
    f"expected a DynamoDB Streams event with Records[].eventSource == '{EVENT_SOURCE}' or '{KINESIS_SOURCE}'"
)

REASON_DELETED = "deleted"
REASON_TTL = "ttl-expiry"
REASON_ORPHANED = "orphaned"

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_STREAM_ARN = re.compile(r"^arn:[\w-]+:dynamodb:[^:]*:[^:]*:table/([^/]+)/stream/.+$")


class UnexpectedEventError(ValueError):
    """The invocation event is not a stream event."""


class MalformedRecordError(ValueError):
    """A stream record that cannot be interpreted; it fails (and is retried / dead-lettered)."""

    def __init__(self, problem: str, sequence_number: str | None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.sequence_number = sequence_number


@dataclass(frozen=True)
class ChangeRecord:
    """One parsed stream record; images deserialized with the DynamoDB type rules (Decimal, sets, bytes)."""

    position: int
    sequence_number: str
    event_name: str
    pk: str
    sk: str
    old_image: Mapping[str, Any] | None
    new_image: Mapping[str, Any] | None
    ttl_expiry: bool = False
    view_type: str | None = None
    event_id: str | None = None
    created: int | None = None  # dynamodb.ApproximateCreationDateTime: epoch seconds, rounded down
    old_entries: tuple[BlobEntry, ...] = ()  # the old image's blobs, parsed (manifest_of)
    new_entries: tuple[BlobEntry, ...] = ()

    @property
    def item(self) -> tuple[str, str]:
        return (self.pk, self.sk)

    @property
    def old_blobs(self) -> list[Any]:
        return [entry.key for entry in self.old_entries]

    @property
    def new_blobs(self) -> list[Any]:
        return [entry.key for entry in self.new_entries]


@dataclass(frozen=True)
class RefusedKey:
    key: Any
    reason: str
    source: str  # "blobs" (listed in the image) or "prefix" (found by / refused for prefix cleanup)


@dataclass(frozen=True)
class CleanupPlan:
    record: ChangeRecord
    prefix: str
    reason: str | None = (
        None  # deleted | ttl-expiry | orphaned; None: nothing to clean (INSERT, unchanged MODIFY)
    )
    keys: tuple[str, ...] = ()
    # key -> the ETag the old image recorded for it (manifest entries); the other keys have none
    etags: Mapping[str, str] = field(default_factory=dict)
    refused: tuple[RefusedKey, ...] = ()
    list_prefix: str | None = None  # prefix cleanup: list this prefix and delete what is under it
    missing_images: bool = False


@dataclass
class BatchSummary:
    record_count: int
    event_names: dict[str, int] = field(default_factory=dict)
    first_sequence_number: str | None = None
    last_sequence_number: str | None = None
    table_name: str | None = None
    # The entries the records' old images list (the blobs the batch may drop), by form.
    old_blobs_with_etag: int = 0
    old_blobs_without_etag: int = 0

    def as_log_fields(self) -> dict[str, Any]:
        return {
            "record_count": self.record_count,
            "event_names": self.event_names,
            "first_sequence_number": self.first_sequence_number,
            "last_sequence_number": self.last_sequence_number,
            "table_name": self.table_name,
            "old_image_blobs": {
                "with_etag": self.old_blobs_with_etag,
                "without_etag": self.old_blobs_without_etag,
            },
        }


@dataclass(frozen=True)
class ForeignRecord:
    """A record from another table's stream, or from no DynamoDB stream this consumer can name."""

    position: int
    sequence_number: str
    table_name: str | None  # None: eventSourceARN missing or not a DynamoDB stream ARN
    source: Any = None  # the eventSourceARN as received

    @property
    def why(self) -> str:
        if self.table_name is not None:
            return f"record from table {self.table_name}"
        return f"record from an unknown source (eventSourceARN {self.source!r} is not a DynamoDB stream ARN)"


@dataclass(frozen=True)
class RejectedRecord:
    """A record :func:`parse_record` refused; without a sequence number it cannot be reported alone."""

    position: int
    sequence_number: str | None
    problem: str


@dataclass(frozen=True)
class StreamBatch:
    """One invocation's records, parsed once."""

    summary: BatchSummary
    records: tuple[ChangeRecord, ...]
    malformed: tuple[RejectedRecord, ...]
    foreign: tuple[ForeignRecord, ...]


def stream_records(event: Any) -> list[dict[str, Any]]:
    """The event's records, or :class:`UnexpectedEventError` if this is not a DynamoDB Streams event."""
    if not isinstance(event, Mapping):
        raise UnexpectedEventError(f"{EXPECTED_EVENT}; got a {type(event).__name__}")
    records = event.get("Records")
    if not isinstance(records, list) or not records:
        raise UnexpectedEventError(f"{EXPECTED_EVENT}; got an event with top-level keys {sorted(event)[:10]}")
    for index, record in enumerate(records):
        source = record.get("eventSource") if isinstance(record, Mapping) else None
        if source not in (EVENT_SOURCE, KINESIS_SOURCE):
            raise UnexpectedEventError(f"{EXPECTED_EVENT}; Records[{index}].eventSource is {source!r}")
    return records


def sequence_number_of(raw: Any) -> str | None:
    fields = raw if isinstance(raw, Mapping) else {}
    kinesis = fields.get("eventSource") == KINESIS_SOURCE
    holder = fields.get("kinesis" if kinesis else "dynamodb")
    holder = holder if isinstance(holder, Mapping) else {}
    number = holder.get("sequenceNumber" if kinesis else "SequenceNumber")
    return number if isinstance(number, str) and number else None


def from_kinesis(raw: Mapping[str, Any], number: str | None) -> dict[str, Any]:
    """A Kinesis record's DynamoDB change record as a stream record; ValueError saying why it is not one."""
    kinesis = raw.get("kinesis")
    try:
        change = json.loads(base64.b64decode(kinesis["data"], validate=True))  # type: ignore[index]
    except Exception:  # not a mapping, no data, not base64, not JSON
        raise ValueError("kinesis.data is not base64-encoded JSON") from None
    images = change.get("dynamodb") if isinstance(change, dict) else None
    if (
        not isinstance(images, dict)
        or change.get("eventSource") != EVENT_SOURCE
        or not isinstance(change.get("tableName"), str)
    ):
        raise ValueError("kinesis.data is not a DynamoDB change record (eventSource, tableName, dynamodb)")
    created = images.get("ApproximateCreationDateTime")
    if isinstance(created, (int, float)) and not isinstance(created, bool):
        images["ApproximateCreationDateTime"] = created / 1000  # epoch milliseconds
    if number:
        images["SequenceNumber"] = number
    return change


def parse_record(raw: Any, position: int = 0) -> ChangeRecord:
    """Parse one raw stream record; raise :class:`MalformedRecordError` saying what is wrong."""
    sequence_number = sequence_number_of(raw)

    def malformed(problem: str) -> MalformedRecordError:
        return MalformedRecordError(problem, sequence_number)

    if not isinstance(raw, Mapping):
        raise malformed("record is not an object")
    event_name = raw.get("eventName")
    if event_name not in EVENT_NAMES:
        raise malformed(f"eventName {event_name!r} is not one of {', '.join(EVENT_NAMES)}")
    dynamodb = raw.get("dynamodb")
    if not isinstance(dynamodb, Mapping):
        raise malformed("missing 'dynamodb' object")
    if sequence_number is None:
        raise malformed("missing dynamodb.SequenceNumber")
    if not isinstance(dynamodb.get("Keys"), Mapping) or not dynamodb["Keys"]:
        raise malformed("missing dynamodb.Keys")
    for name in ("OldImage", "NewImage"):
        if name in dynamodb and not isinstance(dynamodb[name], Mapping):
            raise malformed(f"dynamodb.{name} is not an object")

    try:
        keys = _deserialize(dynamodb["Keys"])
        old_image = _deserialize(dynamodb["OldImage"]) if "OldImage" in dynamodb else None
        new_image = _deserialize(dynamodb["NewImage"]) if "NewImage" in dynamodb else None
    except Exception as exc:  # the deserializer raises TypeError/KeyError/AttributeError/decimal errors
        raise malformed(f"attribute values do not deserialize: {type(exc).__name__}: {exc}") from None

    pk, sk = keys.get(PARTITION_KEY), keys.get(SORT_KEY)
    for name, value in ((PARTITION_KEY, pk), (SORT_KEY, sk)):
        if not isinstance(value, str) or not value:
            shown = "missing" if value is None else f"a {type(value).__name__}"
            raise malformed(f"key attribute '{name}' must be a non-empty string, got {shown}")
    entries: dict[str, tuple[BlobEntry, ...]] = {}
    for name, image in (("OldImage", old_image), ("NewImage", new_image)):
        try:
            entries[name] = manifest_of(None if image is None else image.get(BLOBS_ATTRIBUTE))
        except ManifestError as exc:
            raise malformed(f"{name}.{BLOBS_ATTRIBUTE}{exc}") from None

    identity = raw.get("userIdentity")
    ttl_expiry = (
        event_name == "REMOVE"
        and isinstance(identity, Mapping)
        and identity.get("type") == TTL_IDENTITY_TYPE
        and identity.get("principalId") == TTL_IDENTITY_PRINCIPAL
    )
    created = dynamodb.get("ApproximateCreationDateTime")
    if isinstance(created, bool) or not isinstance(created, (int, float)):
        if event_name != "INSERT":
            raise malformed(f"dynamodb.ApproximateCreationDateTime must be epoch seconds, got {created!r}")
        created = None
    view_type = dynamodb.get("StreamViewType")
    return ChangeRecord(
        position=position,
        sequence_number=sequence_number,
        event_name=event_name,
        pk=pk,  # type: ignore[arg-type]  # checked above
        sk=sk,  # type: ignore[arg-type]
        old_image=old_image,
        new_image=new_image,
        ttl_expiry=ttl_expiry,
        view_type=view_type if isinstance(view_type, str) else None,
        event_id=raw.get("eventID") if isinstance(raw.get("eventID"), str) else None,
        created=None if created is None else int(created),
        old_entries=entries["OldImage"],
        new_entries=entries["NewImage"],
    )


def _deserialize(image: Mapping[str, Any]) -> dict[str, Any]:
    return {name: _TYPES.deserialize(value) for name, value in image.items()}


def record_prefix(root: str, pk: str, sk: str) -> str:
    return f"{root}{pk}/{sk}/"


def _unsafe_part(part: str) -> bool:
    return part in (".", "..") or "/" in part or "\\" in part or bool(_CONTROL.search(part))


def prefix_problem(pk: str, sk: str) -> str | None:
    """Why ``pk``/``sk`` cannot form an unambiguous prefix, or None."""
    if _unsafe_part(pk) or _unsafe_part(sk):
        return "record-prefix-ambiguous"
    return None


def key_refusal(key: Any, prefix: str, prefix_issue: str | None = None) -> str | None:
    """Why ``key`` must not be deleted on behalf of the record owning ``prefix``; None if it may."""
    if not isinstance(key, str):
        return "not-a-string"
    if not key:
        return "empty"
    if _CONTROL.search(key):
        return "control-character"
    if "\\" in key:
        return "backslash"
    if key.startswith("/"):
        return "absolute"
    if ".." in key.split("/"):
        return "dot-dot-segment"
    if prefix_issue:
        return prefix_issue
    if not key.startswith(prefix):
        return "outside-record-prefix"
    return None


def plan_cleanup(record: ChangeRecord, root: str, prefix_cleanup: bool) -> CleanupPlan:
    """What to delete for one record (before prefix listing and batch-level retention)."""
    prefix = record_prefix(root, record.pk, record.sk)
    if record.event_name == "INSERT":
        return CleanupPlan(record, prefix)

    issue = prefix_problem(record.pk, record.sk)
    list_prefix: str | None = None
    refused: list[RefusedKey] = []
    reason: str | None
    if record.event_name == "MODIFY":
        reason = REASON_ORPHANED
        missing = record.old_image is None or record.new_image is None
        still_listed = record.new_blobs
        candidates = [] if missing else [e for e in record.old_entries if e.key not in still_listed]
    else:
        reason = REASON_TTL if record.ttl_expiry else REASON_DELETED
        missing = record.old_image is None
        candidates = list(record.old_entries)
        if prefix_cleanup:
            if issue:
                refused.append(RefusedKey(prefix, issue, "prefix"))
            else:
                list_prefix = prefix

    keys: dict[str, None] = {}
    etags: dict[str, str] = {}
    for entry in candidates:
        refusal = key_refusal(entry.key, prefix, issue)
        if refusal:
            refused.append(RefusedKey(entry.key, refusal, "blobs"))
            continue
        keys[entry.key] = None
        if entry.etag is not None:  # listed both plain and with an ETag: the ETag says which object it is
            etags[entry.key] = entry.etag
    if record.event_name == "MODIFY" and not keys and not refused:
        reason = None  # nothing became an orphan
    return CleanupPlan(
        record=record,
        prefix=prefix,
        reason=reason,
        keys=tuple(keys),
        etags=etags,
        refused=tuple(refused),
        list_prefix=list_prefix,
        missing_images=missing,
    )


def retained_keys(records: Sequence[ChangeRecord]) -> dict[int, frozenset[str]]:
    """Per record position: keys the item's LAST state in this batch references again (must not be deleted).

    Only records followed by a later record of the same item get an entry; a last record that is a REMOVE (or
    has no new image) retains nothing.
    """
    final_keys: dict[tuple[str, str], frozenset[str]] = {}
    retained: dict[int, frozenset[str]] = {}
    for record in reversed(records):
        if record.item in final_keys:
            if final_keys[record.item]:
                retained[record.position] = final_keys[record.item]
        else:
            final_keys[record.item] = frozenset(key for key in record.new_blobs if isinstance(key, str))
    return retained


def chunked(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def table_name_from_arn(arn: Any) -> str | None:
    """``arn:aws:dynamodb:<region>:<acct>:table/<name>/stream/<ts>`` -> ``<name>``."""
    match = _STREAM_ARN.match(arn) if isinstance(arn, str) else None
    return match.group(1) if match else None


def parse_batch(records: Sequence[Any], expected_table: str | None = None) -> StreamBatch:
    """The raw records, walked once: the summary (the proof line's fields), foreign, malformed, parsed records.
    With ``expected_table``, a record of another table (or of no DynamoDB stream ARN) is foreign."""
    counts = dict.fromkeys(EVENT_NAMES, 0)
    sequence_numbers: list[str] = []
    table_name: str | None = None
    foreign: list[ForeignRecord] = []
    malformed: list[RejectedRecord] = []
    parsed: list[ChangeRecord] = []
    with_etag = without_etag = 0
    for position, raw in enumerate(records):
        number = sequence_number_of(raw)
        if number:
            sequence_numbers.append(number)
        fields: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        origin = fields.get("eventSourceARN")
        source = table_name_from_arn(origin)
        if fields.get("eventSource") == KINESIS_SOURCE:
            try:
                if number is None:
                    raise ValueError("missing kinesis.sequenceNumber")
                fields = raw = from_kinesis(fields, number)
            except ValueError as exc:
                counts["UNKNOWN"] = counts.get("UNKNOWN", 0) + 1
                malformed.append(RejectedRecord(position, number, str(exc)))
                continue
            origin = source = fields["tableName"]
        name = fields.get("eventName")
        label = name if isinstance(name, str) else "UNKNOWN"
        counts[label] = counts.get(label, 0) + 1
        table_name = table_name or source
        if expected_table and source != expected_table and number:
            foreign.append(ForeignRecord(position, number, source, origin))
        try:
            change = parse_record(raw, position)
        except MalformedRecordError as exc:
            malformed.append(RejectedRecord(position, exc.sequence_number, exc.problem))
            continue
        parsed.append(change)
        recorded = sum(1 for entry in change.old_entries if entry.etag is not None)
        with_etag, without_etag = with_etag + recorded, without_etag + len(change.old_entries) - recorded
    summary = BatchSummary(
        record_count=len(records),
        event_names=counts,
        first_sequence_number=sequence_numbers[0] if sequence_numbers else None,
        last_sequence_number=sequence_numbers[-1] if sequence_numbers else None,
        table_name=table_name,
        old_blobs_with_etag=with_etag,
        old_blobs_without_etag=without_etag,
    )
    return StreamBatch(summary, tuple(parsed), tuple(malformed), tuple(foreign))
