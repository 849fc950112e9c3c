"""Lambda entry point of every subscriber's function: doctable's wrapper around the team's function. The settings
and the team's function are loaded at import (cold start): a bad setting or a handler that cannot be imported
fails the init with one :class:`~.settings.SubscriberInitError` line naming the subscriber.

Each batch: one proof line that is also the ``RecordsReceived`` metric (emit.py), the team's function, then the
``RecordsFailed`` metric. Powertools' Logger writes the error lines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.logging import Logger

from .batch import UnexpectedEventError, call_per_record, failed_count, stream_records, summarize
from .constants import SUBSCRIBER_SERVICE_NAME
from .emit import BatchOutput
from .settings import SubscriberSettings, load_handler

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

settings = SubscriberSettings.from_env()

logger = Logger(service=SUBSCRIBER_SERVICE_NAME)
output = BatchOutput(settings.name, settings.table_name, settings.environment)
team_function = load_handler(settings)


def lambda_handler(event: dict[str, Any], context: LambdaContext) -> Any:
    try:
        records, kinesis = stream_records(event)
    except UnexpectedEventError as exc:  # refused, and the (zero) metrics still emitted
        _error(context, "unexpected_event", error=str(exc))
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
        _error(
            context,
            "subscriber_record_failed",
            sequence_number=first.sequence_number,
            error=f"{type(first.error).__name__}: {first.error}",
            later_records_failed_uncalled=len(failures) - 1,
            exc_info=first.error,
        )
    output.failed(len(failures))
    return {"batchItemFailures": [{"itemIdentifier": f.sequence_number} for f in failures]}


def _error(context: Any, message: str, exc_info: BaseException | None = None, **fields: Any) -> None:
    """An error line through Powertools' Logger, with the invocation's keys as ``inject_lambda_context`` adds."""
    logger.error(
        message,
        extra={
            "subscriber": settings.name,
            "function_name": getattr(context, "function_name", None),
            "function_request_id": getattr(context, "aws_request_id", None),
            **fields,
        },
        exc_info=exc_info,
    )
