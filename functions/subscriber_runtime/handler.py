"""Lambda entry point of every subscriber's function: Powertools wiring around the team's function. The settings
and the team's function are loaded at import (cold start): a bad setting or a handler that cannot be imported
fails the init with one :class:`~.settings.SubscriberInitError` line naming the subscriber."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.logging import Logger
from aws_lambda_powertools.metrics import Metrics, MetricUnit

from .batch import UnexpectedEventError, call_per_record, failed_count, stream_records, summarize
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
from .settings import SubscriberSettings, load_handler

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

settings = SubscriberSettings.from_env()

logger = Logger(service=SUBSCRIBER_SERVICE_NAME)
metrics = Metrics(namespace=METRICS_NAMESPACE, service=SUBSCRIBER_SERVICE_NAME)
# The consumer's dimensions (each stack's series apart), plus the subscriber's: its alarms select its own.
metrics.set_default_dimensions(
    **{METRIC_DIMENSION_TABLE: settings.table_name, METRIC_DIMENSION_SUBSCRIBER: settings.name},
    **({METRIC_DIMENSION_ENVIRONMENT: settings.environment} if settings.environment else {}),
)
team_function = load_handler(settings)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics(raise_on_empty_metrics=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> Any:
    try:
        records = stream_records(event)
    except UnexpectedEventError as exc:  # refused, and the (zero) metrics still emitted
        logger.error("unexpected_event", extra={"subscriber": settings.name, "error": str(exc)})
        metrics.add_metric(METRIC_SUBSCRIBER_RECORDS_RECEIVED, MetricUnit.Count, 0)
        metrics.add_metric(METRIC_SUBSCRIBER_RECORDS_FAILED, MetricUnit.Count, 0)
        raise
    summary, changes = summarize(records, settings.table_name)
    logger.info(PROOF_LOG_MESSAGE, extra={"subscriber": settings.name, **summary.as_log_fields()})
    metrics.add_metric(METRIC_SUBSCRIBER_RECORDS_RECEIVED, MetricUnit.Count, summary.record_count)
    if settings.per_record:
        return _per_record(records, changes, context)
    try:
        response = team_function(
            event, context
        )  # the batch as Lambda sent it: a stream handler works unchanged
    except Exception:
        metrics.add_metric(METRIC_SUBSCRIBER_RECORDS_FAILED, MetricUnit.Count, summary.record_count)
        raise
    metrics.add_metric(METRIC_SUBSCRIBER_RECORDS_FAILED, MetricUnit.Count, failed_count(response))
    return response


def _per_record(records: list[Any], changes: list[Any], context: Any) -> dict[str, list[dict[str, str]]]:
    """One call per record; the first exception fails its record and the later ones (batch.call_per_record)."""
    failures = call_per_record(team_function, records, changes, context)
    if failures:
        first = failures[0]
        logger.error(
            "subscriber_record_failed",
            extra={
                "subscriber": settings.name,
                "sequence_number": first.sequence_number,
                "error": f"{type(first.error).__name__}: {first.error}",
                "later_records_failed_uncalled": len(failures) - 1,
            },
            exc_info=first.error,
        )
    metrics.add_metric(METRIC_SUBSCRIBER_RECORDS_FAILED, MetricUnit.Count, len(failures))
    return {"batchItemFailures": [{"itemIdentifier": f.sequence_number} for f in failures]}
