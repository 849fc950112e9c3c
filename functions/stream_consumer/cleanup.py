"""Application service: runs the domain over a whole batch and talks to the blob store.

Flow of :meth:`BlobCleaner.clean` (called once per invocation, BEFORE Powertools' per-record pass):

1. log the proof line (``stream_records_received``);
2. parse every record (malformed ones fail, see :mod:`.domain`);
3. plan every record, list prefixes (prefix cleanup), refuse foreign keys, drop keys a later record of
   the same item references again;
4. pool the keys of ALL records (deduplicated) and delete them in as few requests as possible
   (one DeleteObjects per 1,000 keys for the whole batch);
5. map per-key failures back to every record owning the key; a request that fails as a whole fails all its
   keys. A record fails iff it is malformed, its prefix listing failed, or one of its keys failed;
6. publish the four metrics (always all four, zeros included).

The returned :class:`BatchOutcome` provides the per-record handler for ``process_partial_response``: it raises
for failed records, so Powertools reports exactly those in ``batchItemFailures``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from aws_lambda_powertools.metrics import MetricUnit

from .blob_store import BlobStore
from .constants import (
    MAX_KEYS_PER_DELETE,
    METRIC_BLOBS_DELETED,
    METRIC_KEYS_REFUSED,
    METRIC_RECORDS_FAILED,
    METRIC_RECORDS_RECEIVED,
    PROOF_LOG_MESSAGE,
)
from .domain import (
    ChangeRecord,
    CleanupPlan,
    MalformedRecordError,
    RefusedKey,
    UnexpectedEventError,
    chunked,
    key_refusal,
    parse_record,
    plan_cleanup,
    retained_keys,
    stream_records,
    summarize,
    table_name_from_arn,
)
from .settings import Settings

# At most this many keys are repeated in one log line (the counts are always complete).
_LOGGED_KEYS = 20


class Log(Protocol):
    def info(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...
    def warning(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...
    def error(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...


class MetricsSink(Protocol):
    def add_metric(self, name: str, unit: Any, value: float) -> Any: ...


class RecordCleanupError(Exception):
    """Raised by the per-record handler for a failed record; Powertools makes it a batchItemFailure."""


class UnidentifiableRecordError(ValueError):
    """A malformed record without SequenceNumber cannot be reported alone: the whole invocation fails."""


@dataclass
class BatchOutcome:
    received: int = 0
    deleted: int = 0
    refused: int = 0
    failures: dict[str, str] = field(default_factory=dict)  # sequence number -> why the record failed
    batch_failed: bool = False  # an unidentifiable record failed the whole invocation

    def record_handler(self, record: Any) -> None:
        """Per-record handler for ``process_partial_response`` (receives a Powertools ``DynamoDBRecord``)."""
        reason = self.failures.get(record.dynamodb.sequence_number)
        if reason is not None:
            raise RecordCleanupError(reason)


@dataclass
class _Work:
    plan: CleanupPlan
    keys: list[str] = field(default_factory=list)
    refused: list[RefusedKey] = field(default_factory=list)
    retained: int = 0


class BlobCleaner:
    def __init__(self, store: BlobStore, settings: Settings, logger: Log, metrics: MetricsSink) -> None:
        self.store = store
        self.settings = settings
        self.log = logger
        self.metrics = metrics

    def accept(self, event: Any) -> list[dict[str, Any]]:
        """The event's stream records; logs and re-raises :class:`UnexpectedEventError` for anything else.

        The four metrics are still published (as zeros): every invocation emits every metric name.
        """
        try:
            return stream_records(event)
        except UnexpectedEventError as exc:
            self.log.error("unexpected_event", extra={"error": str(exc)})
            self._publish(BatchOutcome())
            raise

    def clean(self, records: Sequence[Any]) -> BatchOutcome:
        summary = summarize(records)
        self.log.info(PROOF_LOG_MESSAGE, extra=summary.as_log_fields())
        outcome = BatchOutcome(received=len(records))
        try:
            if not self._refuse_foreign_records(records, outcome):
                self._clean(records, outcome)
        finally:
            self._publish(outcome)
        return outcome

    def _refuse_foreign_records(self, records: Sequence[Any], outcome: BatchOutcome) -> bool:
        """A mapping wired to another table's stream must not delete anything in this table's bucket.

        Every record fails instead (retried, then kept on the failure destination, where the alarm and an
        operator see it): nothing is deleted and nothing is lost. True when the batch was refused.
        """
        expected = self.settings.table_name
        foreign: list[tuple[str, str]] = []
        for raw in records:
            source = table_name_from_arn(raw.get("eventSourceARN")) if isinstance(raw, Mapping) else None
            sequence = (raw.get("dynamodb") or {}).get("SequenceNumber") if isinstance(raw, Mapping) else None
            if expected and source and source != expected and sequence:
                foreign.append((str(sequence), source))
        if not foreign:
            return False
        self.log.error(
            "records_from_foreign_table",
            extra={
                "expected": expected,
                "received": sorted({t for _, t in foreign}),
                "records": len(foreign),
            },
        )
        for sequence, source in foreign:
            outcome.failures[sequence] = (
                f"record from table {source}; this consumer cleans up after {expected}"
            )
        return True

    # ------------------------------------------------------------------ steps

    def _clean(self, records: Sequence[Any], outcome: BatchOutcome) -> None:
        parsed = self._parse(records, outcome)
        work = [
            self._prepare(plan_cleanup(r, self.settings.blob_root, self.settings.prefix_cleanup), outcome)
            for r in parsed
        ]
        retained = retained_keys(parsed)
        # key -> sequence numbers of the records owning it (insertion-ordered: stable requests)
        owners: dict[str, list[str]] = {}
        for item in work:
            keep = retained.get(item.plan.record.position, frozenset())
            item.retained = sum(1 for key in item.keys if key in keep)
            item.keys = [key for key in item.keys if key not in keep]
            for key in item.keys:
                owners.setdefault(key, []).append(item.plan.record.sequence_number)
            for refused in item.refused:
                self._log_refused(item.plan.record, refused)
            outcome.refused += len(item.refused)

        key_errors = self._delete(list(owners))
        outcome.deleted = len(owners) - len(key_errors)
        for item in work:
            self._report(item, key_errors, outcome)

    def _parse(self, records: Sequence[Any], outcome: BatchOutcome) -> list[ChangeRecord]:
        parsed: list[ChangeRecord] = []
        unidentifiable: list[str] = []
        for position, raw in enumerate(records):
            try:
                parsed.append(parse_record(raw, position))
            except MalformedRecordError as exc:
                self.log.error(
                    "record_rejected",
                    extra={
                        "position": position,
                        "sequence_number": exc.sequence_number,
                        "problem": exc.problem,
                    },
                )
                if exc.sequence_number is None:
                    unidentifiable.append(f"Records[{position}]: {exc.problem}")
                else:
                    outcome.failures[exc.sequence_number] = f"malformed record: {exc.problem}"
        if unidentifiable:
            # batchItemFailures needs a SequenceNumber; without one only failing the whole batch gets the
            # record retried (Lambda bisects the batch and finally sends the lone poison record on failure).
            outcome.batch_failed = True
            raise UnidentifiableRecordError(
                "malformed record(s) without dynamodb.SequenceNumber, failing the whole batch: "
                + "; ".join(unidentifiable)
            )
        return parsed

    def _prepare(self, plan: CleanupPlan, outcome: BatchOutcome) -> _Work:
        item = _Work(plan, list(plan.keys), list(plan.refused))
        record = plan.record
        if plan.missing_images:
            self.log.info(
                "record_without_images",
                extra={
                    "sequence_number": record.sequence_number,
                    "event_name": record.event_name,
                    "view_type": record.view_type,
                    "prefix_cleanup": "on" if self.settings.prefix_cleanup else "off",
                    "action": "clear-prefix" if plan.list_prefix else "none",
                },
            )
        if plan.list_prefix:
            try:
                listed = self.store.list_prefix(plan.list_prefix)
            except Exception as exc:  # any store failure: only this record fails and is retried
                self._fail(
                    record,
                    f"listing prefix {plan.list_prefix!r} failed: {type(exc).__name__}: {exc}",
                    outcome,
                )
                item.keys = []
                return item
            seen = set(item.keys)
            for key in listed:
                refusal = key_refusal(key, plan.prefix)
                if refusal:
                    item.refused.append(RefusedKey(key, refusal, "prefix"))
                elif key not in seen:
                    seen.add(key)
                    item.keys.append(key)
        return item

    def _delete(self, keys: list[str]) -> dict[str, str]:
        """Delete the pooled keys, ``MAX_KEYS_PER_DELETE`` per request; return the failed keys with errors."""
        errors: dict[str, str] = {}
        for chunk in chunked(keys, MAX_KEYS_PER_DELETE):
            try:
                result = self.store.delete_keys(chunk)
            except Exception as exc:  # the whole request failed: every key of it failed
                error = f"{type(exc).__name__}: {exc}"
                self.log.warning("delete_request_failed", extra={"key_count": len(chunk), "error": error})
                errors.update(dict.fromkeys(chunk, error))
            else:
                requested = set(chunk)
                errors.update({key: msg for key, msg in result.failures.items() if key in requested})
        return errors

    def _report(self, item: _Work, key_errors: Mapping[str, str], outcome: BatchOutcome) -> None:
        record = item.plan.record
        if record.sequence_number in outcome.failures:
            return  # already failed (listing)
        failed = {key: key_errors[key] for key in item.keys if key in key_errors}
        if failed:
            self._fail(
                record,
                f"{len(failed)} blob key(s) could not be deleted",
                outcome,
                failed_keys=dict(list(failed.items())[:_LOGGED_KEYS]),
            )
            return
        if item.plan.reason:
            self.log.info(
                "record_cleaned",
                extra={
                    "sequence_number": record.sequence_number,
                    "event_name": record.event_name,
                    "pk": record.pk,
                    "sk": record.sk,
                    "reason": item.plan.reason,
                    "keys_deleted": len(item.keys),
                    "keys_refused": len(item.refused),
                    "keys_retained": item.retained,
                },
            )

    # ------------------------------------------------------------------ logging / metrics helpers

    def _fail(self, record: ChangeRecord, why: str, outcome: BatchOutcome, **fields: Any) -> None:
        outcome.failures[record.sequence_number] = why
        self.log.error(
            "record_failed",
            extra={
                "sequence_number": record.sequence_number,
                "pk": record.pk,
                "sk": record.sk,
                "error": why,
                **fields,
            },
        )

    def _log_refused(self, record: ChangeRecord, refused: RefusedKey) -> None:
        self.log.warning(
            "blob_key_refused",
            extra={
                "key": refused.key,
                "pk": record.pk,
                "sk": record.sk,
                "reason": refused.reason,
                "source": refused.source,
                "sequence_number": record.sequence_number,
            },
        )

    def _publish(self, outcome: BatchOutcome) -> None:
        failed = outcome.received if outcome.batch_failed else len(outcome.failures)
        for name, value in (
            (METRIC_RECORDS_RECEIVED, outcome.received),
            (METRIC_BLOBS_DELETED, outcome.deleted),
            (METRIC_RECORDS_FAILED, failed),
            (METRIC_KEYS_REFUSED, outcome.refused),
        ):
            self.metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
