"""BASELINE consumer: written the way the Powertools documentation shows (batch processing of DynamoDB
Streams), NOT the project's code. It exists so the bench can report every figure against it.

What makes it "the documented way":

* Logger, Metrics and Tracer are created at module level; ``Tracer()`` auto-patches every supported library;
* ``boto3.client("s3")`` is created at module level (outside the handler, "for connection reuse");
* ``BatchProcessor(event_type=EventType.DynamoDBStreams)`` + ``process_partial_response``;
* the per-record handler receives the ``DynamoDBRecord`` stream data class and calls ``s3.delete_object``
  once per key (a REMOVE deletes the old image's ``blobs``; a MODIFY the keys the new image dropped).

Same contract as the project's consumer where the bench looks: same env vars, the same proof log line
(``stream_records_received`` with the record count and first/last sequence numbers, which the end-to-end
bench matches on), a ``BlobsDeleted`` metric, a failed delete fails (only) its record.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import boto3
from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import (
    DynamoDBRecord,
    DynamoDBRecordEventName,
)
from aws_lambda_powertools.utilities.typing import LambdaContext

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse

processor = BatchProcessor(event_type=EventType.DynamoDBStreams)
tracer = Tracer()
logger = Logger()
metrics = Metrics()

s3 = boto3.client("s3")
BUCKET = os.environ["BLOB_BUCKET"]


def _blobs(image: dict | None) -> list[str]:
    return list((image or {}).get("blobs") or [])


@tracer.capture_method
def record_handler(record: DynamoDBRecord) -> None:
    stream = record.dynamodb
    if stream is None:
        return
    if record.event_name == DynamoDBRecordEventName.REMOVE:
        keys = _blobs(stream.old_image)
    elif record.event_name == DynamoDBRecordEventName.MODIFY:
        still_listed = set(_blobs(stream.new_image))
        keys = [key for key in _blobs(stream.old_image) if key not in still_listed]
    else:
        return
    for key in keys:
        s3.delete_object(Bucket=BUCKET, Key=key)
    if keys:
        logger.info("record_cleaned", extra={"sequence_number": stream.sequence_number, "keys": len(keys)})
        metrics.add_metric(name="BlobsDeleted", unit=MetricUnit.Count, value=len(keys))


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict, context: LambdaContext) -> PartialItemFailureResponse:
    records = event.get("Records", [])
    logger.info(
        "stream_records_received",
        extra={
            "record_count": len(records),
            "first_sequence_number": records[0]["dynamodb"]["SequenceNumber"] if records else None,
            "last_sequence_number": records[-1]["dynamodb"]["SequenceNumber"] if records else None,
        },
    )
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
