"""Application service: the batch-wide cleanup of one parsed batch, and the per-record verdicts (the steps, and
why no blob a live item lists is deleted even when keys are reused: docs/consumer.md)."""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from aws_lambda_powertools.metrics import MetricUnit

from .blob_store import BlobStore, ObjectIdentity
from .constants import (
    ENV_FLAG_OFF,
    ENV_FLAG_ON,
    MAX_KEYS_PER_DELETE,
    METRIC_BLOBS_DELETED,
    METRIC_KEYS_REFUSED,
    METRIC_KEYS_WITH_ETAG,
    METRIC_KEYS_WITHOUT_ETAG,
    METRIC_PRECONDITION_FAILED,
    METRIC_RECORDS_FAILED,
    METRIC_RECORDS_RECEIVED,
    OBSERVE_CONCURRENCY,
    PROOF_LOG_MESSAGE,
    REUPLOAD_SETTLE_SECONDS,
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
from .live_items import LiveItems
from .settings import Settings

T = TypeVar("T")
R = TypeVar("R")
# At most this many keys are repeated in one log line (the counts are always complete).
_LOGGED_KEYS = 20
# Why a dropped key was left in place (the reasons counted in record_cleaned's keys_kept).
KEPT_NEWER = "newer-upload"  # modified after the record
KEPT_LIVE = "listed-by-live-item"  # the item, read after the record, lists it
KEPT_CHANGED = "replaced-during-check"  # ETag changed between HEAD and delete
KEPT_OTHER_OBJECT = "not-the-recorded-object"  # the key holds another object than the ETag the item recorded
# Kept because a conditional delete's precondition failed (counted in BlobsKeptPreconditionFailed).
KEPT_BY_PRECONDITION = frozenset({KEPT_CHANGED, KEPT_OTHER_OBJECT})


class Log(Protocol):
    def info(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...
    def warning(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...
    def error(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...


class MetricsSink(Protocol):
    def add_metric(self, name: str, unit: Any, value: float) -> Any: ...


class RecordCleanupError(Exception):
    """Raised by :meth:`BlobCleaner.settle` for a failed record: a batchItemFailure."""


class UnidentifiableRecordError(ValueError):
    """A malformed record without SequenceNumber cannot be reported alone: the whole invocation fails."""


@dataclass
class _Work:
    plan: CleanupPlan
    keys: list[str] = field(default_factory=list)
    refused: list[RefusedKey] = field(default_factory=list)
    retained: int = 0
    etags: dict[str, str] = field(default_factory=dict)  # key -> the ETag the record's old image recorded


@dataclass(frozen=True)
class Dropped:
    """A dropped key's item, the latest second of the records dropping it, and the ETag the latest of them
    recorded for it (None: a plain key, or one found by prefix cleanup)."""

    item: tuple[str, str]
    created: int
    etag: str | None = None


@dataclass
class BatchOutcome:
    received: int = 0
    deleted: int = 0
    refused: int = 0
    with_etag: int = 0  # dropped keys (deduplicated) whose ETag was recorded
    without_etag: int = 0
    failures: dict[str, str] = field(default_factory=dict)  # sequence number -> why the record failed
    batch_failed: bool = False  # an unidentifiable record failed the whole invocation
    work: dict[str, _Work] = field(default_factory=dict)  # sequence number -> the parsed record's cleanup
    key_errors: dict[str, str] = field(default_factory=dict)  # blob key -> why its delete failed
    kept: dict[str, str] = field(default_factory=dict)  # blob key -> why it was left in place (KEPT_*)


class BlobCleaner:
    def __init__(
        self,
        store: BlobStore,
        settings: Settings,
        logger: Log,
        metrics: MetricsSink,
        live: LiveItems,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.store = store
        self.settings = settings
        self.log = logger
        self.metrics = metrics
        self.live = live
        self.clock = clock
        self.sleep = sleep

    def accept(self, event: Any) -> None:
        """Logs, publishes zero metrics and re-raises :class:`UnexpectedEventError` for a non-stream event."""
        try:
            stream_records(event)
        except UnexpectedEventError as exc:
            self.log.error("unexpected_event", extra={"error": str(exc)})
            self.publish(BatchOutcome())
            raise

    def clean(self, batch: StreamBatch) -> BatchOutcome:
        """Everything batch-wide; publishes the metrics itself only when it raises (else the caller does)."""
        self.log.info(PROOF_LOG_MESSAGE, extra=batch.summary.as_log_fields())
        outcome = BatchOutcome(received=batch.summary.record_count)
        try:
            self._reject_malformed(batch, outcome)
            foreign = self._refuse_foreign_records(batch, outcome)
            self._plan_and_delete([r for r in batch.records if r.position not in foreign], outcome)
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

    def _refuse_foreign_records(self, batch: StreamBatch, outcome: BatchOutcome) -> set[int]:
        """Fail each foreign record (retried, then kept on the failure bucket); return their positions."""
        if not batch.foreign:
            return set()
        expected = self.settings.table_name
        self.log.error(
            "records_from_foreign_table",
            extra={
                "expected": expected,
                "received": sorted({record.table_name or repr(record.source) for record in batch.foreign}),
                "records": len(batch.foreign),
            },
        )
        for record in batch.foreign:
            outcome.failures[record.sequence_number] = (
                f"{record.why}; this consumer cleans up after {expected}"
            )
        return {record.position for record in batch.foreign}

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
            # Lambda bisects the failed batch and finally sends the lone poison record on failure.
            outcome.batch_failed = True
            raise UnidentifiableRecordError(
                "malformed record(s) without a sequence number (dynamodb.SequenceNumber; kinesis.sequenceNumber "
                "for a Kinesis record), failing the whole batch: " + "; ".join(unidentifiable)
            )

    def _plan_and_delete(self, parsed: Sequence[ChangeRecord], outcome: BatchOutcome) -> None:
        if not self.settings.blob_cleanup:
            self._log_uncleaned(parsed)
            return
        work = [
            self._plan(plan_cleanup(r, self.settings.blob_root, self.settings.prefix_cleanup), outcome)
            for r in parsed
        ]
        retained = retained_keys(parsed)
        # key -> the latest creation second of the records dropping it (insertion-ordered: stable requests)
        dropped: dict[str, Dropped] = {}
        for item in work:
            record = item.plan.record
            keep = retained.get(record.position, frozenset())
            item.retained = sum(1 for key in item.keys if key in keep)
            item.keys = [key for key in item.keys if key not in keep]
            created = record.created or 0
            for key in item.keys:
                earlier = dropped.get(key)
                latest = max(created, earlier.created if earlier else 0)  # and its ETag names the object
                dropped[key] = Dropped(record.item, latest, item.etags.get(key))
            for refused in item.refused:
                self._log_refused(record, refused)
            outcome.refused += len(item.refused)
            outcome.work[record.sequence_number] = item
        outcome.with_etag = sum(1 for entry in dropped.values() if entry.etag is not None)
        outcome.without_etag = len(dropped) - outcome.with_etag
        if dropped:
            outcome.key_errors, outcome.kept = self._delete_dropped(dropped)
        outcome.deleted = len(dropped) - len(outcome.key_errors) - len(outcome.kept)

    def _log_uncleaned(self, parsed: Sequence[ChangeRecord]) -> None:
        """BLOB_CLEANUP=off: one line per record that would need cleanup, no S3 or DynamoDB request."""
        for record in parsed:
            plan = plan_cleanup(record, self.settings.blob_root, self.settings.prefix_cleanup)
            if plan.reason:
                self.log.info(
                    "record_not_cleaned",
                    extra={
                        "sequence_number": record.sequence_number,
                        "event_name": record.event_name,
                        "pk": record.pk,
                        "sk": record.sk,
                        "reason": plan.reason,
                        "keys_dropped": len(plan.keys),
                        "blob_cleanup": ENV_FLAG_OFF,
                    },
                )

    def _plan(self, plan: CleanupPlan, outcome: BatchOutcome) -> _Work:
        item = _Work(plan, list(plan.keys), list(plan.refused), etags=dict(plan.etags))
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

    def _delete_dropped(self, dropped: dict[str, Dropped]) -> tuple[dict[str, str], dict[str, str]]:
        """Delete each dropped key unless a live item lists it or its object is not the one the record dropped;
        return (key -> error) for failed keys and (key -> KEPT_*) for keys left in place on purpose."""
        errors: dict[str, str] = {}
        kept: dict[str, str] = {}
        if not self.settings.guard_key_reuse:  # no key is listed again once dropped: nothing to check
            self._delete(list(dropped), {}, errors, kept)
            return errors, kept
        # A recorded ETag names the dropped object: no HEAD. A key without one is observed first.
        recorded = {key: entry.etag for key, entry in dropped.items() if entry.etag is not None}
        unrecorded = [key for key in dropped if key not in recorded]
        observed = self._observe(unrecorded, errors) if unrecorded else {}
        settle_until = 0.0
        etags = dict(recorded)
        for key, identity in observed.items():
            if identity is None:
                continue
            modified, created = math.floor(identity.last_modified), dropped[key].created
            if modified > created:
                kept[key] = KEPT_NEWER
                continue
            if modified == created:
                settle_until = max(settle_until, modified + 1 + REUPLOAD_SETTLE_SECONDS)
            etags[key] = identity.etag
        candidates = [key for key in dropped if key in etags]
        if not candidates:
            return errors, kept
        wait = settle_until - self.clock()
        if wait > 0:
            self.sleep(wait)
        try:
            live = self.live.listed_keys([dropped[key].item for key in candidates])
        except Exception as exc:  # nothing is deleted unchecked: the records are retried
            error = f"reading the live items failed: {type(exc).__name__}: {exc}"
            self.log.warning("live_items_read_failed", extra={"key_count": len(candidates), "error": error})
            errors.update(dict.fromkeys(candidates, error))
            return errors, kept
        deletable = []
        for key in candidates:
            if key in live.get(dropped[key].item, frozenset()):
                kept[key] = KEPT_LIVE
            else:
                deletable.append(key)
        self._delete(deletable, {key: etags[key] for key in deletable}, errors, kept)
        changed = {
            key: KEPT_OTHER_OBJECT if key in recorded else why
            for key, why in kept.items()
            if why == KEPT_CHANGED
        }
        if changed:  # another object under the key: a re-upload, or an ETag the application got wrong
            kept.update(changed)
            self.log.warning(
                "delete_precondition_failed",
                extra={"key_count": len(changed), "keys": dict(list(changed.items())[:_LOGGED_KEYS])},
            )
        return errors, kept

    def _delete(
        self, keys: list[str], etags: dict[str, str], errors: dict[str, str], kept: dict[str, str]
    ) -> None:
        """DeleteObjects requests in parallel, each key with an ETag only if its object still has it."""

        def delete(chunk: Sequence[str]) -> None:
            try:
                result = self.store.delete_keys(chunk, {key: etags[key] for key in chunk if key in etags})
            except Exception as exc:  # the whole request failed: every key of it failed
                error = f"{type(exc).__name__}: {exc}"
                self.log.warning("delete_request_failed", extra={"key_count": len(chunk), "error": error})
                errors.update(dict.fromkeys(chunk, error))
            else:
                requested = set(chunk)
                errors.update({key: msg for key, msg in result.failures.items() if key in requested})
                kept.update({key: KEPT_CHANGED for key in result.changed if key in requested})

        _in_parallel(delete, list(chunked(keys, MAX_KEYS_PER_DELETE)))

    def _observe(self, keys: list[str], errors: dict[str, str]) -> dict[str, ObjectIdentity | None]:
        """One HEAD per key, several in flight; a failed HEAD fails its key (``errors``); absent objects: None."""

        def head(key: str) -> tuple[str, ObjectIdentity | None, str | None]:
            try:
                return key, self.store.observe(key), None
            except Exception as exc:  # this key's records are retried
                return key, None, f"observing the object failed: {type(exc).__name__}: {exc}"

        # The item read comes after the HEADs; its client is built while they are in flight.
        results = _in_parallel(head, keys, meanwhile=self.live.prepare)
        errors.update({key: error for key, _, error in results if error is not None})
        return {key: identity for key, identity, error in results if error is None}

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
                    "keys_deleted": sum(1 for key in item.keys if key not in outcome.kept),
                    "keys_refused": len(item.refused),
                    "keys_retained": item.retained,
                    "keys_kept": dict(Counter(outcome.kept[key] for key in item.keys if key in outcome.kept)),
                },
            )

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
        """The seven metrics, zeros included: every invocation emits every metric name."""
        failed = outcome.received if outcome.batch_failed else len(outcome.failures)
        changed = sum(1 for why in outcome.kept.values() if why in KEPT_BY_PRECONDITION)
        for name, value in (
            (METRIC_RECORDS_RECEIVED, outcome.received),
            (METRIC_BLOBS_DELETED, outcome.deleted),
            (METRIC_RECORDS_FAILED, failed),
            (METRIC_KEYS_REFUSED, outcome.refused),
            (METRIC_KEYS_WITH_ETAG, outcome.with_etag),
            (METRIC_KEYS_WITHOUT_ETAG, outcome.without_etag),
            (METRIC_PRECONDITION_FAILED, changed),
        ):
            self.metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)


def _in_parallel(
    call: Callable[[T], R], items: list[T], meanwhile: Callable[[], object] | None = None
) -> list[R]:
    """``call`` on each item, up to OBSERVE_CONCURRENCY at once (S3 requests wait, they do not compute); the
    calling thread runs ``meanwhile`` while they are in flight."""
    if not items or (len(items) < 2 and meanwhile is None):
        results = [call(item) for item in items]
        if meanwhile is not None:
            meanwhile()
        return results
    from concurrent.futures import ThreadPoolExecutor  # ~10 ms of import a batch with no key never needs

    with ThreadPoolExecutor(max_workers=min(OBSERVE_CONCURRENCY, len(items))) as pool:
        pending = pool.map(call, items)  # every call is submitted here
        if meanwhile is not None:
            meanwhile()
        return list(pending)
