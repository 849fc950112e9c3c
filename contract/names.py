"""Construct ids, output keys and runtime contract names shared by the stack, the console script, the consumer's
contract test and the tests. Standard library only."""

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
OUT_KMS_KEY_ARN = "KmsKeyArn"  # only with encryption=customer-managed
OUT_KINESIS_STREAM_ARN = "KinesisStreamArn"  # with kinesis on or an ARN: where table changes go
ID_KINESIS_STREAM = "ChangeStream"  # the Kinesis data stream the stack creates with kinesis=on
OUT_REPLICA_REGIONS = "ReplicaRegions"  # with replicas: the global table's other regions, comma-separated
# while a single-region table is converted to a global table: the step the stack is at (infra/data/handover.py)
OUT_TABLE_HANDOVER = "TableHandover"
OUT_KNOBS = "Knobs"  # the resolved knobs the stack was deployed with (DocTableConfig.deployed_record)

# Construct ids.
ID_TABLE = "DocumentTable"
ID_RUNTIME_POLICY = "RuntimePolicy"
ID_CONSUMER = "StreamConsumer"
ID_BLOB_BUCKET = "BlobBucket"
ID_ALARMS = "Alarms"
ID_TABLE_RESOURCE = "Table"  # the table's construct in ID_TABLE, single-region (Table) or global (TableV2)


def cdk_logical_id(*path: str) -> str:
    """The logical id the CDK gives the resource at construct ``path`` below its stack (aws-cdk-lib's
    makeUniqueId: the path's components, consecutive repeats and ``Resource`` left out, then the first 8 hex
    digits of the MD5 of the whole path)."""
    import hashlib

    components = [c for c in path if c != "Default"]
    digest = hashlib.md5("/".join(components).encode(), usedforsecurity=False).hexdigest()[:8].upper()
    human: list[str] = []
    for component in components:
        if not human or not human[-1].endswith(component):
            human.append(component)
    text = "".join("".join(ch for ch in c if ch.isalnum()) for c in human if c != "Resource")
    return text[:240] + digest


def table_logical_id() -> str:
    """The table's logical id, the same for AWS::DynamoDB::Table and AWS::DynamoDB::GlobalTable (one construct
    path): the import of a converted table adopts it under this id."""
    return cdk_logical_id(ID_TABLE, ID_TABLE_RESOURCE, "Resource")


# Table shape: a single-table design; the gsi knob adds the generic overloaded index, the settings file others.
PARTITION_KEY = "pk"
SORT_KEY = "sk"
GSI_NAME = "gsi1"
GSI_PARTITION_KEY = "gsi1pk"
GSI_SORT_KEY = "gsi1sk"
TTL_ATTRIBUTE = "expiresAt"


def index_query_sid(number: int, index_name: str) -> str:
    """The runtime policy's Sid for Query on the ``number``-th index (Sids are alphanumeric and unique)."""
    return (
        "IndexQuery"
        + "".join(c for c in index_name if c.isalnum()).capitalize()[:40]
        + (str(number) if number else "")
    )


BLOBS_ATTRIBUTE = "blobs"

# The stack's buckets, named exactly (bucket_names=exact): ``<table>-<account>-<region>-<suffix>``. The account makes
# the name AWS-wide unique (S3 bucket names are global) and the table name, unique per account and region like the
# stack's, one per environment; the stack's ``doctable-`` prefix would take 9 of S3's 63 characters for nothing.
BLOB_BUCKET_SUFFIX = "blobs"
FAILURE_BUCKET_SUFFIX = "failures"
BUCKET_NAME_MAX = 63  # S3's limit (3..63 characters)
ACCOUNT_ID_LENGTH = 12
# The longest region name AWS has (ap-southeast-5, us-isob-east-1, eusc-de-east-1): an environment-agnostic stack
# names its buckets with the AWS::Region pseudo parameter, so its names' length is bounded by this one.
REGION_NAME_MAX = 14


def bucket_name(table_name: str, account: str, region: str, suffix: str) -> str:
    """The exact name of the stack's blob (``BLOB_BUCKET_SUFFIX``) or failure bucket. ``account`` and ``region``
    may be CloudFormation's pseudo parameters (a CDK token) when the stack is environment-agnostic."""
    return f"{table_name}-{account}-{region}-{suffix}"


def subscriber_failure_suffix(subscriber: str) -> str:
    """The suffix of a subscriber's own failure bucket: ``<table>-<account>-<region>-<subscriber>-failures``."""
    return f"{subscriber}-{FAILURE_BUCKET_SUFFIX}"


def bucket_name_fixed_length(suffix: str) -> int:
    """The characters of an exact bucket name besides the table name, with the longest region name."""
    return len(bucket_name("", "0" * ACCOUNT_ID_LENGTH, "r" * REGION_NAME_MAX, suffix))


# The consumer's environment-variable contract (functions/stream_consumer/settings.py validates it).
ENV_BLOB_BUCKET = "BLOB_BUCKET"
ENV_BLOB_ROOT = "BLOB_ROOT"
ENV_BLOB_PREFIX_CLEANUP = "BLOB_PREFIX_CLEANUP"
ENV_BLOB_KEY_REUSE = "BLOB_KEY_REUSE"
ENV_TABLE_NAME = "TABLE_NAME"
# The stack's environment: a metrics dimension beside the service and the table.
ENV_ENVIRONMENT = "ENVIRONMENT"
# off: the consumer logs what it receives and deletes nothing (a replica region's consumer; the home region's
# consumer deletes, its stream carrying every change, local and replicated). Default on.
ENV_BLOB_CLEANUP = "BLOB_CLEANUP"
# The consumer's metrics dimensions besides Powertools' `service` (the alarms select each stack's own series).
METRIC_DIMENSION_ENVIRONMENT = "environment"
METRIC_DIMENSION_TABLE = "table"
SERVICE_NAME = "doctable-consumer"
METRICS_NAMESPACE = "Doctable"
PROOF_LOG_MESSAGE = "stream_records_received"

# The seven data-plane actions the runtime policy grants the table's users.
RUNTIME_ACTIONS = (
    "dynamodb:BatchGetItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:DeleteItem",
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:Query",
    "dynamodb:UpdateItem",
)

# The consumer's runtime and the Powertools release it runs with (pinned in pyproject.toml too: a test checks).
LAMBDA_RUNTIME = "python3.13"
POWERTOOLS_VERSION = "3.37.0"
# Powertools publishes each release's layer ARN, per architecture and runtime, as a public SSM parameter.
POWERTOOLS_SSM_PATH = "/aws/service/powertools/python/{arch}/{runtime}/{version}"
# The public layers that parameter names begin so (AWSLambdaPowertoolsPythonV3-python313-arm64, ...).
POWERTOOLS_LAYER_PREFIX = "AWSLambdaPowertoolsPythonV3-"


def powertools_layer_parameter(architecture: str) -> str:
    """The public SSM parameter holding the pinned Powertools layer's ARN for ``architecture``."""
    return POWERTOOLS_SSM_PATH.format(arch=architecture, runtime=LAMBDA_RUNTIME, version=POWERTOOLS_VERSION)


# The AWS operations the consumer calls, per botocore service. Its asset carries botocore's models of these
# operations alone (sdk_models/), so building its clients at a cold start reads kilobytes, not whole models.
CONSUMER_SDK_OPERATIONS = {
    "s3": ("DeleteObjects", "HeadObject", "ListObjectsV2"),
    "dynamodb": ("BatchGetItem",),
}
SDK_MODELS_DIR = "sdk_models"

# How the stack names a boolean in the consumer's environment (BLOB_PREFIX_CLEANUP).
ENV_FLAG_ON, ENV_FLAG_OFF = "on", "off"
# The partial-batch protocol the mapping and the consumer speak.
FUNCTION_RESPONSE_TYPES = ("ReportBatchItemFailures",)

# A subscriber's function (issue 37): doctable's wrapper (functions/subscriber_runtime/) around a team's handler.
# Its environment-variable contract, checked at cold start; the names are under DOCTABLE_, which a subscriber's own
# `environment` may not use, so a team's variables (TABLE_NAME, ENVIRONMENT...) never collide with them.
ENV_SUBSCRIBER_NAME = "DOCTABLE_SUBSCRIBER"
ENV_SUBSCRIBER_HANDLER = "DOCTABLE_SUBSCRIBER_HANDLER"  # module:function, importable from the asset's root
# true: one call per record; false (default): the batch, as Lambda sends it
ENV_SUBSCRIBER_PER_RECORD = "DOCTABLE_SUBSCRIBER_PER_RECORD"
ENV_SUBSCRIBER_TABLE_NAME = "DOCTABLE_TABLE_NAME"
ENV_SUBSCRIBER_ENVIRONMENT = "DOCTABLE_ENVIRONMENT"
ENV_SUBSCRIBER_TRUE, ENV_SUBSCRIBER_FALSE = "true", "false"
SUBSCRIBER_SERVICE_NAME = "doctable-subscriber"
# Its metrics: the consumer's namespace and dimensions, plus the subscriber's name.
METRIC_DIMENSION_SUBSCRIBER = "Subscriber"
METRIC_SUBSCRIBER_RECORDS_RECEIVED = "RecordsReceived"
METRIC_SUBSCRIBER_RECORDS_FAILED = "RecordsFailed"
# The asset: the runtime package, and the team's handler file as <SUBSCRIBER_CODE_PACKAGE>/<module>.py.
SUBSCRIBER_RUNTIME_PACKAGE = "subscriber_runtime"
SUBSCRIBER_CODE_PACKAGE = "subscriber_code"
SUBSCRIBER_HANDLER = "subscriber_runtime.handler.lambda_handler"  # the function's Handler

# A subscriber's stack outputs: Subscriber<Id><What>, <Id> its name in CamelCase (infra/compute/subscribers.py).
OUT_SUBSCRIBER_FUNCTION = "FunctionName"
OUT_SUBSCRIBER_LOG_GROUP = "LogGroup"
OUT_SUBSCRIBER_MAPPING = "MappingUuid"
OUT_SUBSCRIBER_FAILURE_BUCKET = "FailureBucketName"


def subscriber_id(name: str) -> str:
    """A subscriber's construct and output id: its name in CamelCase (``search-index`` -> ``SearchIndex``)."""
    return "".join(part.capitalize() for part in name.split("-"))


def subscriber_output(name: str, what: str) -> str:
    """The output key of one of a subscriber's names (``SubscriberSearchFunctionName``)."""
    return f"Subscriber{subscriber_id(name)}{what}"


# The environment's CloudWatch dashboard (infra/monitoring/dashboard.py): its construct id, and the output naming it, which
# `doctable verify` and `doctable logs` turn into its console link (a stack deployed before it has none).
ID_DASHBOARD = "Overview"
OUT_DASHBOARD_NAME = "DashboardName"
# The built-in consumer's own metrics the dashboard shows (functions/stream_consumer/constants.py writes them).
METRIC_RECORDS_RECEIVED = "RecordsReceived"
METRIC_BLOBS_DELETED = "BlobsDeleted"
METRIC_RECORDS_FAILED = "RecordsFailed"
METRIC_KEYS_REFUSED = "KeysRefused"
# The console's host per partition (a region's prefix); aws elsewhere.
_CONSOLE_HOSTS = (("cn-", "console.amazonaws.cn"), ("us-gov-", "console.amazonaws-us-gov.com"))


def dashboard_url(region: str, dashboard_name: str | None) -> str | None:
    """The CloudWatch console's link to a dashboard (its name: letters, digits, ``-`` and ``_``, nothing to
    escape); None without one (a stack deployed before the dashboard has no OUT_DASHBOARD_NAME output)."""
    if not dashboard_name:
        return None
    host = next(
        (host for prefix, host in _CONSOLE_HOSTS if region.startswith(prefix)),
        f"{region}.console.aws.amazon.com",
    )
    return f"https://{host}/cloudwatch/home?region={region}#dashboards/dashboard/{dashboard_name}"
