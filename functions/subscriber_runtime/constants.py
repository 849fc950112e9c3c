"""Runtime contract strings of a subscriber's function.

Duplicated on purpose from ``contract/names.py``: the function's asset imports nothing outside ``functions/``.
``tests/unit/test_subscriber_runtime.py`` asserts that both stay equal.
"""

SUBSCRIBER_SERVICE_NAME = "doctable-subscriber"
METRICS_NAMESPACE = "Doctable"
PROOF_LOG_MESSAGE = "stream_records_received"

ENV_SUBSCRIBER_NAME = "DOCTABLE_SUBSCRIBER"
ENV_SUBSCRIBER_HANDLER = "DOCTABLE_SUBSCRIBER_HANDLER"
ENV_SUBSCRIBER_PER_RECORD = "DOCTABLE_SUBSCRIBER_PER_RECORD"
ENV_SUBSCRIBER_TABLE_NAME = "DOCTABLE_TABLE_NAME"
ENV_SUBSCRIBER_ENVIRONMENT = "DOCTABLE_ENVIRONMENT"
ENV_SUBSCRIBER_TRUE, ENV_SUBSCRIBER_FALSE = "true", "false"
SUBSCRIBER_CODE_PACKAGE = "subscriber_code"

# The consumer's dimensions (its alarms' selection), plus the subscriber's name.
METRIC_DIMENSION_ENVIRONMENT = "environment"
METRIC_DIMENSION_TABLE = "table"
METRIC_DIMENSION_SUBSCRIBER = "Subscriber"
METRIC_SUBSCRIBER_RECORDS_RECEIVED = "RecordsReceived"
METRIC_SUBSCRIBER_RECORDS_FAILED = "RecordsFailed"

EVENT_SOURCE = "aws:dynamodb"
KINESIS_SOURCE = "aws:kinesis"
