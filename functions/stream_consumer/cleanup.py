"""Application service: the batch-wide cleanup of one parsed batch, and the per-record verdicts.

:meth:`BlobCleaner.clean` (called once per invocation, from :class:`~.processor.CleanupProcessor`'s ``_prepare``):

1. log the proof line (``stream_records_received``);
2. refuse a batch holding records of another table; fail malformed records (see :mod:`.domain`);
3. plan every record, list prefixes (prefix cleanup), refuse foreign keys, drop keys a later record of
   the same item references again;
4. pool the keys of ALL records (deduplicated) and delete them in as few requests as possible
   (one DeleteObjects per 1,000 keys for the whole batch).

:meth:`BlobCleaner.settle` then runs once per record in Powertools' pass and raises for a failed record, so
Powertools reports exactly those in ``batchItemFailures``: a record fails iff it is foreign or malformed, its
prefix listing failed, or one of its keys failed (a request that fails as a whole fails all its keys).
:meth:`BlobCleaner.publish` emits the four metrics (always all four, zeros included).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from aws_lambda_powertools.metrics import MetricUnit

from .blob_store import BlobStore
from .constants import (
    ENV_FLAG_OFF,
    ENV_FLAG_ON,
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
    RefusedKey,
    StreamBatch,
    UnexpectedEventError,
    chunked,
    key_refusal,
    plan_cleanup,
    retained_keys,
    stream_records,
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
class _Work:
    plan: CleanupPlan
    keys: list[str] = field(default_factory=list)
    refused: list[RefusedKey] = field(default_factory=list)
    retained: int = 0


@dataclass
class BatchOutcome:
    received: int = 0
    deleted: int = 0
    refused: int = 0
    failures: dict[str, str] = field(default_factory=dict)  # sequence number -> why the record failed
    batch_failed: bool = False  # an unidentifiable record failed the whole invocation
    work: dict[str, _Work] = field(default_factory=dict)  # sequence number -> the parsed record's cleanup
    key_errors: dict[str, str] = field(default_factory=dict)  # blob key -> why its delete failed


class BlobCleaner:
    def __init__(self, store: BlobStore, settings: Settings, logger: Log, metrics: MetricsSink) -> None:
        self.store = store
        self.settings = settings
        self.log = logger
        self.metrics = metrics

    def accept(self, event: Any) -> None:
        """Logs and re-raises :class:`UnexpectedEventError` unless ``event`` is a DynamoDB Streams event.

        The four metrics are still published (as zeros): every invocation emits every metric name.
        """
        try:
            stream_records(event)
        except UnexpectedEventError as exc:
            self.log.error("unexpected_event", extra={"error": str(exc)})
            self.publish(BatchOutcome())
            raise

    def clean(self, batch: StreamBatch) -> BatchOutcome:
        """Everything batch-wide: proof line, refusals, planning, listing and the pooled deletes.

        Publishes the metrics itself only when it raises (the whole invocation fails); otherwise the caller
        publishes them once every record is settled.
        """
        self.log.info(PROOF_LOG_MESSAGE, extra=batch.summary.as_log_fields())
        outcome = BatchOutcome(received=batch.summary.record_count)
        try:
            if batch.foreign:
                self._refuse_foreign_records(batch, outcome)
            else:
                self._reject_malformed(batch, outcome)
                self._plan_and_delete(batch.records, outcome)
        except BaseException:
            self.publish(outcome)
            raise
        return outcome

    def settle(self, outcome: BatchOutcome, sequence_number: str | None) -> None:
        """One record's verdict: raises :class:`RecordCleanupError` if it failed, else logs what was cleaned."""
        item = outcome.work.get(sequence_number or "")
        if item is not None and sequence_number not in outcome.failures:
            self._report(item, outcome)
        reason = outcome.failures.get(sequence_number or "")
        if reason is not None:
            raise RecordCleanupError(reason)

    def _refuse_foreign_records(self, batch: StreamBatch, outcome: BatchOutcome) -> None:
        """A mapping wired to another table's stream must not delete anything in this table's bucket.

        Every foreign record fails instead (retried, then kept on the failure destination, where the alarm and
        an operator see it) and nothing of the batch is cleaned: nothing is deleted and nothing is lost.
        """
        expected = self.settings.table_name
        self.log.error(
            "records_from_foreign_table",
            extra={
                "expected": expected,
                "received": sorted({record.table_name for record in batch.foreign}),
                "records": len(batch.foreign),
            },
        )
        for record in batch.foreign:
            outcome.failures[record.sequence_number] = (
                f"record from table {record.table_name}; this consumer cleans up after {expected}"
            )

    # ------------------------------------------------------------------ steps

    def _reject_malformed(self, batch: StreamBatch, outcome: BatchOutcome) -> None:
        unidentifiable: list[str] = []
        for rejected in batch.malformed:
            self.log.error(
                "record_rejected",
                extra={
                    "position": rejected.position,
                    "sequence_number": rejected.sequence_number,
                    "problem": rejected.problem,
                },
            )
            if rejected.sequence_number is None:
                unidentifiable.append(f"Records[{rejected.position}]: {rejected.problem}")
            else:
                outcome.failures[rejected.sequence_number] = f"malformed record: {rejected.problem}"
        if unidentifiable:
            # batchItemFailures needs a SequenceNumber; without one only failing the whole batch gets the
            # record retried (Lambda bisects the batch and finally sends the lone poison record on failure).
            outcome.batch_failed = True
            raise UnidentifiableRecordError(
                "malformed record(s) without dynamodb.SequenceNumber, failing the whole batch: "
                + "; ".join(unidentifiable)
            )

    def _plan_and_delete(self, parsed: Sequence[ChangeRecord], outcome: BatchOutcome) -> None:
        work = [
            self._plan(plan_cleanup(r, self.settings.blob_root, self.settings.prefix_cleanup), outcome)
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
            outcome.work[item.plan.record.sequence_number] = item

        outcome.key_errors = self._delete(list(owners))
        outcome.deleted = len(owners) - len(outcome.key_errors)

    def _plan(self, plan: CleanupPlan, outcome: BatchOutcome) -> _Work:
        item = _Work(plan, list(plan.keys), list(plan.refused))
        record = plan.record
        if plan.missing_images:
            self.log.info(
                "record_without_images",
                extra={
                    "sequence_number": record.sequence_number,
                    "event_name": record.event_name,
                    "view_type": record.view_type,
                    "prefix_cleanup": ENV_FLAG_ON if self.settings.prefix_cleanup else ENV_FLAG_OFF,
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

    def _report(self, item: _Work, outcome: BatchOutcome) -> None:
        record = item.plan.record
        failed = {key: outcome.key_errors[key] for key in item.keys if key in outcome.key_errors}
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

    def publish(self, outcome: BatchOutcome) -> None:
        """The four metrics, zeros included: every invocation emits every metric name."""
        failed = outcome.received if outcome.batch_failed else len(outcome.failures)
        for name, value in (
            (METRIC_RECORDS_RECEIVED, outcome.received),
            (METRIC_BLOBS_DELETED, outcome.deleted),
            (METRIC_RECORDS_FAILED, failed),
            (METRIC_KEYS_REFUSED, outcome.refused),
        ):
            self.metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
