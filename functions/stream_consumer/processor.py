"""Powertools' DynamoDB Streams batch processor, extended with the consumer's batch-wide work.

Why the batch-wide work runs in `_prepare` and `_clean`: docs/consumer.md.
"""

from __future__ import annotations

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from .cleanup import BatchOutcome, BlobCleaner
from .domain import parse_batch


class CleanupProcessor(BatchProcessor):
    """Batch processor that runs :class:`~.cleanup.BlobCleaner` over each batch; pass :meth:`settle` as handler."""

    def __init__(self, cleaner: BlobCleaner) -> None:
        # Always a partial batch response, even when every record failed (no BatchProcessingError).
        super().__init__(event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False)
        self.cleaner = cleaner
        self.outcome = BatchOutcome()

    def _prepare(self) -> None:
        super()._prepare()
        batch = parse_batch(self.records, self.cleaner.settings.table_name)
        self.outcome = self.cleaner.clean(batch)

    def settle(self, record: DynamoDBRecord) -> None:
        """Record handler: raises for a record the batch-wide cleanup failed, so Powertools reports it."""
        stream = record.dynamodb
        self.cleaner.settle(self.outcome, stream.sequence_number if stream is not None else None)

    def _clean(self) -> None:
        self.cleaner.publish(self.outcome)
        super()._clean()
