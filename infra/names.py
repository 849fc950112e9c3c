"""Construct ids, output keys and runtime contract names shared by the stack, the console script and the tests."""

# Stack outputs (stable keys: `cdk deploy --outputs-file`, `doctable verify` and the tests read them).
OUT_TABLE_NAME = "TableName"
OUT_TABLE_ARN = "TableArn"
OUT_STREAM_ARN = "StreamArn"
OUT_RUNTIME_POLICY_ARN = "RuntimePolicyArn"
OUT_CONSUMER_FUNCTION_NAME = "ConsumerFunctionName"
OUT_CONSUMER_FUNCTION_ARN = "ConsumerFunctionArn"
OUT_CONSUMER_LOG_GROUP = "ConsumerLogGroupName"
OUT_MAPPING_UUID = "EventSourceMappingUuid"
OUT_BLOB_BUCKET = "BlobBucketName"
OUT_FAILURE_BUCKET = "FailureBucketName"
OUT_ALARM_TOPIC_ARN = "AlarmTopicArn"

# Construct ids.
ID_TABLE = "DocumentTable"
ID_RUNTIME_POLICY = "RuntimePolicy"
ID_CONSUMER = "StreamConsumer"
ID_BLOB_BUCKET = "BlobBucket"
ID_ALARMS = "Alarms"

# Table shape (fixed: the seed's single-table design).
PARTITION_KEY = "pk"
SORT_KEY = "sk"
GSI_NAME = "gsi1"
GSI_PARTITION_KEY = "gsi1pk"
GSI_SORT_KEY = "gsi1sk"
TTL_ATTRIBUTE = "expiresAt"
BLOBS_ATTRIBUTE = "blobs"

# The consumer's environment-variable contract (functions/stream_consumer/settings.py validates it).
ENV_BLOB_BUCKET = "BLOB_BUCKET"
ENV_BLOB_ROOT = "BLOB_ROOT"
ENV_BLOB_PREFIX_CLEANUP = "BLOB_PREFIX_CLEANUP"
ENV_TABLE_NAME = "TABLE_NAME"
SERVICE_NAME = "doctable-consumer"
METRICS_NAMESPACE = "Doctable"
PROOF_LOG_MESSAGE = "stream_records_received"

# The data-plane actions the runtime policy grants the table's users (the seed's seven).
RUNTIME_ACTIONS = (
    "dynamodb:BatchGetItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:DeleteItem",
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:Query",
    "dynamodb:UpdateItem",
)

POWERTOOLS_VERSION = "3.37.0"
