"""Lambda entry point of every subscriber's function: doctable's wrapper around the team's function. The settings
and the team's function are loaded at import (cold start): a bad setting or a handler that cannot be imported
fails the init with one :class:`~.settings.SubscriberInitError` line naming the subscriber.

Each batch: one proof line that is also the ``RecordsReceived`` metric (emit.py), the team's function, then the
``RecordsFailed`` metric. The wrapper imports nothing of Powertools (emit.py says why): a team handler that does not
use it does not pay its import at cold start."""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING, Any

from .batch import UnexpectedEventError, call_per_record, failed_count, stream_records, summarize
from .emit import BatchOutput
from .settings import SubscriberSettings, load_handler

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import (
        LambdaContext,
    )  # (a type only: not imported at run time)

settings = SubscriberSettings.from_env()

output = BatchOutput(settings.name, settings.table_name, settings.environment)
team_function = load_handler(settings)
# What the init made (the modules, the team's and Powertools' included) lives as long as the process: out of the
# collector's sight, so the first batches do not pay a full collection over it (3 ms of a cold start, measured).
gc.freeze()


def lambda_handler(event: dict[str, Any], context: LambdaContext) -> Any:
    try:
        records, kinesis = stream_records(event)
    except UnexpectedEventError as exc:  # refused, and the (zero) metrics still emitted
        output.error("unexpected_event", context, {"error": str(exc)})
        output.refused()
        raise
    summary, changes = summarize(records, settings.table_name, kinesis)
    output.proof(summary.as_log_fields(), context)
    if settings.per_record:
        return _per_record(records, changes, context)
    try:
        response = team_function(
            event, context
        )  # the batch as Lambda sent it: a stream handler works unchanged
    except Exception:
        output.failed(summary.record_count)
        raise
    output.failed(failed_count(response))
    return response


def _per_record(records: list[Any], changes: list[Any], context: Any) -> dict[str, list[dict[str, str]]]:
    """One call per record; the first exception fails its record and the later ones (batch.call_per_record)."""
    failures = call_per_record(team_function, records, changes, context)
    if failures:
        first = failures[0]
        output.error(
            "subscriber_record_failed",
            context,
            {
                "sequence_number": first.sequence_number,
                "error": f"{type(first.error).__name__}: {first.error}",
                "later_records_failed_uncalled": len(failures) - 1,
            },
            first.error,
        )
    output.failed(len(failures))
    return {"batchItemFailures": [{"itemIdentifier": f.sequence_number} for f in failures]}
