"""Lambda entry point: Powertools wiring only. Settings are validated at import (cold start): a bad environment
fails the init with a clear :class:`~.settings.SettingsError`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics, Tracer

from .blob_store import S3BlobStore
from .cleanup import BlobCleaner
from .constants import METRIC_DIMENSION_ENVIRONMENT, METRIC_DIMENSION_TABLE, METRICS_NAMESPACE, SERVICE_NAME
from .live_items import DynamoLiveItems
from .processor import process
from .settings import Settings

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

settings = Settings.from_env()

logger = Logger(service=SERVICE_NAME)
metrics = Metrics(namespace=METRICS_NAMESPACE, service=SERVICE_NAME)
# Each stack's series apart: its alarms select its environment and table.
metrics.set_default_dimensions(
    **{METRIC_DIMENSION_TABLE: settings.table_name},
    **({METRIC_DIMENSION_ENVIRONMENT: settings.environment} if settings.environment else {}),
)
# Patch only botocore (the S3 calls), not every supported library, and only when the S3 client is created:
# patching imports botocore.client (~100-200 ms of init), which a batch with nothing to delete never needs.
tracer = Tracer(service=SERVICE_NAME, auto_patch=False)

cleaner = BlobCleaner(
    S3BlobStore(settings.blob_bucket, on_client=lambda: tracer.patch(("botocore",))),
    settings,
    logger,
    metrics,
    DynamoLiveItems(settings.table_name, on_client=lambda: tracer.patch(("botocore",))),
)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics(raise_on_empty_metrics=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # A non-stream event is refused with an error that says what was expected, and still emits the metrics.
    cleaner.accept(event)
    return process(cleaner, event["Records"])
