"""Runtime contract strings.

Duplicated on purpose from ``contract/names.py``: the function's asset imports nothing outside ``functions/``.
``tests/unit/test_consumer_contract.py`` asserts that both stay equal.
"""

SERVICE_NAME = "doctable-consumer"
METRICS_NAMESPACE = "Doctable"
PROOF_LOG_MESSAGE = "stream_records_received"

PARTITION_KEY = "pk"
SORT_KEY = "sk"
BLOBS_ATTRIBUTE = "blobs"

ENV_BLOB_BUCKET = "BLOB_BUCKET"
ENV_BLOB_ROOT = "BLOB_ROOT"
ENV_BLOB_PREFIX_CLEANUP = "BLOB_PREFIX_CLEANUP"
ENV_TABLE_NAME = "TABLE_NAME"
ENV_ENVIRONMENT = "ENVIRONMENT"
# How the stack writes a boolean into BLOB_PREFIX_CLEANUP (read case-insensitively).
ENV_FLAG_ON, ENV_FLAG_OFF = "on", "off"

METRIC_DIMENSION_ENVIRONMENT = "environment"
METRIC_DIMENSION_TABLE = "table"

# Metric names (all Count, one namespace).
METRIC_RECORDS_RECEIVED = "RecordsReceived"
METRIC_BLOBS_DELETED = "BlobsDeleted"
METRIC_RECORDS_FAILED = "RecordsFailed"
METRIC_KEYS_REFUSED = "KeysRefused"

EVENT_SOURCE = "aws:dynamodb"
# S3 DeleteObjects accepts at most this many keys per request.
MAX_KEYS_PER_DELETE = 1000
# DynamoDB BatchGetItem accepts at most this many keys per request.
MAX_ITEMS_PER_BATCH_GET = 100
# An object modified in the record's own second is deleted only if the live-item read, made this long after that
# second ended, finds no item listing it: a re-put within this time of the re-upload is seen (docs/consumer.md).
REUPLOAD_SETTLE_SECONDS = 1.0
# HEAD requests in flight at once while observing a batch's keys (and the S3 client's connection pool): at S3's
# published 100-200 ms small-object latency, 8 would spend ~23 s of a 1,000-record batch waiting on 1,200 HEADs.
OBSERVE_CONCURRENCY = 64
# userIdentity of a REMOVE made by the DynamoDB TTL process.
TTL_IDENTITY_TYPE = "Service"
TTL_IDENTITY_PRINCIPAL = "dynamodb.amazonaws.com"
