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
# A manifest entry of ``blobs`` (a map): the blob's key, the ETag S3 gave its upload, its size in bytes.
MANIFEST_KEY, MANIFEST_ETAG, MANIFEST_SIZE = "key", "etag", "size"

ENV_BLOB_BUCKET = "BLOB_BUCKET"
ENV_BLOB_ROOT = "BLOB_ROOT"
ENV_BLOB_PREFIX_CLEANUP = "BLOB_PREFIX_CLEANUP"
ENV_BLOB_KEY_REUSE = "BLOB_KEY_REUSE"
ENV_TABLE_NAME = "TABLE_NAME"
ENV_ENVIRONMENT = "ENVIRONMENT"
# off: the consumer logs what it receives and deletes nothing (a replica region's consumer; the home region's
# consumer deletes, its stream carrying every change, local and replicated). Default on.
ENV_BLOB_CLEANUP = "BLOB_CLEANUP"
# How the stack writes a boolean into BLOB_PREFIX_CLEANUP (read case-insensitively).
ENV_FLAG_ON, ENV_FLAG_OFF = "on", "off"

METRIC_DIMENSION_ENVIRONMENT = "environment"
METRIC_DIMENSION_TABLE = "table"

# Metric names (all Count, one namespace).
METRIC_RECORDS_RECEIVED = "RecordsReceived"
METRIC_BLOBS_DELETED = "BlobsDeleted"
METRIC_RECORDS_FAILED = "RecordsFailed"
METRIC_KEYS_REFUSED = "KeysRefused"
# The batch's dropped keys by form (docs/data-contract.md): with the ETag the application recorded (no HEAD), or
# without (a plain key, or a key found by prefix cleanup: one HEAD each with blob_key_reuse=guarded).
METRIC_KEYS_WITH_ETAG = "DroppedKeysWithEtag"
METRIC_KEYS_WITHOUT_ETAG = "DroppedKeysWithoutEtag"
# Conditional deletes S3 refused (PreconditionFailed): another object under the key now, left in place.
METRIC_PRECONDITION_FAILED = "BlobsKeptPreconditionFailed"

EVENT_SOURCE = "aws:dynamodb"
KINESIS_SOURCE = "aws:kinesis"
# The directory of the package that holds botocore's models of the consumer's operations (staged with the asset).
SDK_MODELS_DIR = "sdk_models"
# S3 DeleteObjects accepts at most this many keys per request.
MAX_KEYS_PER_DELETE = 1000
# DynamoDB BatchGetItem accepts at most this many keys per request.
MAX_ITEMS_PER_BATCH_GET = 100
# The wait after the record's second before the live-item read, for an object modified in it (docs/consumer.md).
REUPLOAD_SETTLE_SECONDS = 1.0
# HEAD requests in flight at once (and the S3 client's pool): 8 would wait ~23 s on 1,200 HEADs of 100-200 ms.
OBSERVE_CONCURRENCY = 64
# Lambda's variable naming how an execution environment was initialized; snap-start: the init of a version being
# published, whose snapshot new environments resume from.
ENV_INITIALIZATION_TYPE = "AWS_LAMBDA_INITIALIZATION_TYPE"
INITIALIZATION_SNAPSTART = "snap-start"
# userIdentity of a REMOVE made by the DynamoDB TTL process.
TTL_IDENTITY_TYPE = "Service"
TTL_IDENTITY_PRINCIPAL = "dynamodb.amazonaws.com"
