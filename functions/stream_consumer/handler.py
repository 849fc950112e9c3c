"""Lambda entry point: Powertools wiring only. Settings are validated at import (cold start): a bad environment
fails the init with a clear :class:`~.settings.SettingsError`."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.logging import Logger
from aws_lambda_powertools.metrics import Metrics

from .blob_store import S3BlobStore, account_of
from .cleanup import BlobCleaner
from .constants import (
    ENV_INITIALIZATION_TYPE,
    INITIALIZATION_SNAPSTART,
    METRIC_DIMENSION_ENVIRONMENT,
    METRIC_DIMENSION_TABLE,
    METRICS_NAMESPACE,
    SERVICE_NAME,
)
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
# X-Ray: Lambda traces each invocation itself; each AWS call is a subsegment (xray.py).
store = S3BlobStore(settings.blob_bucket)
live = DynamoLiveItems(settings.table_name)
cleaner = BlobCleaner(store, settings, logger, metrics, live)
if os.environ.get(ENV_INITIALIZATION_TYPE) == INITIALIZATION_SNAPSTART:
    # This init runs when a version is published, and new environments resume from its snapshot: the clients
    # are built now so the snapshot holds them (otherwise the first batch of each environment would build
    # them). Under SnapStart Lambda serves the role's credentials from its container credentials endpoint, not
    # environment variables; botocore refreshes those before they expire, so a restored copy renews them.
    if settings.blob_cleanup:
        _ = store.client
    if settings.blob_cleanup and settings.guard_key_reuse:
        live.prepare()


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics(raise_on_empty_metrics=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # A non-stream event is refused with an error that says what was expected, and still emits the metrics.
    cleaner.accept(event)
    # The blob bucket must be the function's own account's (the stack made both): every S3 call names it.
    store.owner = account_of(context.invoked_function_arn)
    return process(cleaner, event["Records"])
