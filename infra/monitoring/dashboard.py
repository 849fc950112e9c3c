"""One CloudWatch dashboard per environment: the table, its change stream, the cleanup consumer and each subscriber
on one page, with the stack's alarms.

The dashboard is the CDK's own ``AWS::CloudWatch::Dashboard`` (``aws_cloudwatch.CfnDashboard``) with its body
written here as CloudWatch documents it (Dashboard Body Structure and Syntax): one JSON document holding the
stack's names as CDK tokens, which the synth turns into one ``Fn::Join``. Neither cdk-monitoring-constructs (a
second jsii library loaded into every synth) nor the L2 ``Dashboard`` (a jsii object per metric and widget): each
added several percent to a synth's CPU (measured, docs/subscribers.md), this adds a handful of calls.

What each reader's row shows, and where the numbers come from:
- iterator age, invocations, errors and throttles: Lambda's ``AWS/Lambda`` metrics of its function (FunctionName);
- its own work: the ``Doctable`` namespace under the dimensions the function itself writes (the consumer's
  ``service``/``table``/``environment``, functions/stream_consumer/handler.py; a subscriber's plus ``Subscriber``,
  functions/subscriber_runtime/emit.py): records received and failed, and the consumer's blobs deleted and keys
  refused;
- failure-destination writes: S3's ``PutRequests`` of the failure bucket where the stack turned on its request
  metrics (the consumer's, for its FailedBatches alarm), the mapping's ``OnFailureDestinationDeliveredEventCount``
  and ``DroppedEventCount`` where its MetricsConfig asks Lambda for them, and in every case Lambda's
  ``DestinationDeliveryFailures`` of the function (failed batches that could not be written). A subscriber's
  bucket has no request metrics and its mapping no MetricsConfig: its row shows the deliveries that failed and
  its ``RecordsFailed`` (records its handler failed, each retried before its batch goes to the bucket).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from constructs import Construct

from contract import names
from contract.knobs import DocTableConfig
from infra.compute.consumer import StreamConsumer
from infra.compute.subscribers import Subscriber
from infra.monitoring.alarms import FAILED_BATCHES_FILTER_ID

Widget = dict[str, Any]
GRID_WIDTH = 24  # CloudWatch's dashboard grid is 24 units wide
GRAPH_HEIGHT, HEADER_HEIGHT = 6, 4
MINUTE, FIVE_MINUTES = 60, 300  # metric periods, seconds
DEFAULT_RANGE = "-PT3H"  # what the dashboard shows when opened
LAMBDA, DYNAMODB, S3, KINESIS = "AWS/Lambda", "AWS/DynamoDB", "AWS/S3", "AWS/Kinesis"
# The table's data-plane operations (the runtime policy's), each a SystemErrors series of its own.
TABLE_OPERATIONS = tuple(action.split(":", 1)[1] for action in names.RUNTIME_ACTIONS)
CONSUMER_METRICS = (
    names.METRIC_RECORDS_RECEIVED,
    names.METRIC_BLOBS_DELETED,
    names.METRIC_RECORDS_FAILED,
    names.METRIC_KEYS_REFUSED,
)
SUBSCRIBER_METRICS = (names.METRIC_SUBSCRIBER_RECORDS_RECEIVED, names.METRIC_SUBSCRIBER_RECORDS_FAILED)


def dashboard_name(config: DocTableConfig, region: str) -> str:
    """``<stack>-<region>`` (the environment's stack; a global table's replica region's dashboard is named by its
    region the same way, which the execution policy's ``Dashboard`` statement names): CloudWatch's dashboards are
    global to the account (PutDashboard's documentation), so the same stack name deployed in two regions needs two
    names. Stack names are letters, digits and ``-``, and at most 128 characters: within a dashboard name's A-Z,
    a-z, 0-9, ``-``, ``_`` and 255."""
    return f"{config.stack_name}-{region}"


# ---------------------------------------------------------------------------------------- the readers
@dataclass(frozen=True)
class Reader:
    """One reader of the stream as its row shows it (names may be CDK tokens)."""

    title: str
    function_name: str  # the FunctionName dimension of its Lambda metrics
    mapping_uuid: str
    mapping_metrics: bool = False  # its MetricsConfig asks Lambda for the EventCount metrics
    own_metrics: Sequence[str] = ()  # what it counts itself, in the Doctable namespace, under ``dimensions``
    dimensions: dict[str, str] = field(default_factory=dict)
    failure_bucket: str | None = (
        None  # a failure bucket with S3 request metrics under FAILED_BATCHES_FILTER_ID
    )


def consumer_dimensions(config: DocTableConfig) -> dict[str, str]:
    """The built-in consumer's metric dimensions: Powertools' ``service`` and the stack's environment and table."""
    return {
        "service": names.SERVICE_NAME,
        names.METRIC_DIMENSION_ENVIRONMENT: config.env,
        names.METRIC_DIMENSION_TABLE: config.table_name,
    }


def subscriber_dimensions(config: DocTableConfig, subscriber: str) -> dict[str, str]:
    """A subscriber's metric dimensions: its own service, the stack's environment and table, and its name."""
    return {
        "service": names.SUBSCRIBER_SERVICE_NAME,
        names.METRIC_DIMENSION_ENVIRONMENT: config.env,
        names.METRIC_DIMENSION_TABLE: config.table_name,
        names.METRIC_DIMENSION_SUBSCRIBER: subscriber,
    }


def consumer_reader(config: DocTableConfig, consumer: StreamConsumer) -> Reader:
    """The cleanup consumer's row (or a borrowed consumer's: Lambda's metrics of its function, nothing of its own)."""
    mapping = consumer.mapping
    if consumer.function is None:
        assert config.borrowed_consumer_arn is not None
        arn = config.borrowed_consumer_arn
        function_name = arn.split(":")[6] if arn.startswith("arn:") else arn
        return Reader(
            f"Consumer {function_name} (borrowed)", function_name, mapping.ref, _has_event_counts(mapping)
        )
    return Reader(
        "Cleanup consumer",
        consumer.function.function_name,
        mapping.ref,
        _has_event_counts(mapping),
        CONSUMER_METRICS,
        consumer_dimensions(config),
        _counted_bucket(consumer.failure_bucket),
    )


def replica_consumer_reader(
    config: DocTableConfig, function_name: str, mapping: lambda_.CfnEventSourceMapping
) -> Reader:
    """A replica region's built-in consumer (infra/replica_stack.py): its proof of delivery there, no cleanup
    (the home region's consumer deletes) and no failure bucket."""
    return Reader(
        "Consumer (proof of delivery; cleanup is the home region's)",
        function_name,
        mapping.ref,
        _has_event_counts(mapping),
        (names.METRIC_RECORDS_RECEIVED, names.METRIC_RECORDS_FAILED),
        consumer_dimensions(config),
    )


def subscriber_reader(config: DocTableConfig, subscriber: Subscriber) -> Reader:
    name = subscriber.spec.name
    return Reader(
        f"Subscriber {name}",
        subscriber.function.function_name,
        subscriber.mapping.ref,
        _has_event_counts(subscriber.mapping),
        SUBSCRIBER_METRICS,
        subscriber_dimensions(config, name),
        _counted_bucket(subscriber.failure_bucket),
    )


def _has_event_counts(mapping: lambda_.CfnEventSourceMapping) -> bool:
    return mapping.metrics_config is not None


def _counted_bucket(bucket: s3.IBucket) -> str | None:
    """The bucket's name when it has the request metrics the FailedBatches alarm reads (infra/monitoring/alarms.py)."""
    cfn = bucket.node.default_child
    if not isinstance(cfn, s3.CfnBucket):
        return None
    configurations = Stack.of(cfn).resolve(cfn.metrics_configurations) or []
    counted = any(c.get("id") == FAILED_BATCHES_FILTER_ID for c in configurations)
    return bucket.bucket_name if counted else None


# ------------------------------------------------------------------------------------------ the construct
class Overview(Construct):
    """The environment's dashboard: a header with the stack's alarms, the table's row, then one row per reader.
    A global table's replica region has its own (``home_region`` given: infra/replica_stack.py), its replica's
    row and the readers running there; the home region's header links to each."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DocTableConfig,
        readers: Sequence[Reader],
        alarm_arns: Sequence[str],
        kinesis_stream_name: str | None = None,
        home_region: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        rows = [
            header(config, alarm_arns, stack.region if home_region else None),
            table_row(config, kinesis_stream_name, replica=home_region is not None),
            *(reader_row(reader) for reader in readers),
        ]
        self.dashboard = cloudwatch.CfnDashboard(
            self,
            "Dashboard",
            dashboard_name=dashboard_name(config, stack.region),
            dashboard_body=dashboard_body(rows, stack.region),
        )


# ---------------------------------------------------------------------------------------------- the body
def dashboard_body(rows: Sequence[Sequence[Widget]], region: str) -> str:
    """The DashboardBody: the rows laid out on the grid top to bottom, each row's widgets sharing its width, every
    metric widget reading ``region``."""
    widgets: list[Widget] = []
    y = 0
    for row in rows:
        width = GRID_WIDTH // len(row)
        for column, widget in enumerate(row):
            placed = {**widget, "x": column * width, "y": y, "width": width}
            if placed["type"] == "metric":
                placed["properties"] = {**placed["properties"], "region": region}
            widgets.append(placed)
        y += max(widget["height"] for widget in row)
    return json.dumps({"start": DEFAULT_RANGE, "widgets": widgets}, separators=(",", ":"))


def metric(
    namespace: str,
    metric_name: str,
    dimensions: dict[str, str],
    *,
    stat: str = "Sum",
    period: int = FIVE_MINUTES,
    label: str | None = None,
    **options: Any,
) -> list[Any]:
    """One metric row of a graph: namespace, name, each dimension's name and value, then its rendering."""
    dims = [part for key in sorted(dimensions) for part in (key, dimensions[key])]
    return [
        namespace,
        metric_name,
        *dims,
        {"label": label or metric_name, "stat": stat, "period": period, **options},
    ]


def graph(title: str, metrics: list[list[Any]], unit_label: str | None = None) -> Widget:
    axis: dict[str, Any] = {"min": 0, "showUnits": False, **({"label": unit_label} if unit_label else {})}
    return {
        "type": "metric",
        "height": GRAPH_HEIGHT,
        "properties": {"view": "timeSeries", "title": title, "metrics": metrics, "yAxis": {"left": axis}},
    }


def header(config: DocTableConfig, alarm_arns: Sequence[str], replica: str | None = None) -> list[Widget]:
    """The title, what the page shows and its alarms; ``replica``: the replica region whose page it is."""
    if replica is None:
        shows = "the table, its change stream, the cleanup consumer and each subscriber"
        stack = config.stack_name
        others = [
            f"[{r}]({names.dashboard_url(r, dashboard_name(config, r))})"
            for r in config.replicas
            if config.builtin_consumer
        ]
        more = f" Each replica region's consumer and subscribers: {', '.join(others)}." if others else ""
    else:
        shows = f"the replica in {replica}, its change stream, its consumer and the subscribers running there"
        stack, more = config.replica_stack_name(replica), ""
    text = {
        "type": "text",
        "height": HEADER_HEIGHT,
        "properties": {
            "markdown": f"## doctable {config.table_name}{f' in {replica}' if replica else ''}\n"
            f"Environment **{config.env}**, stack `{stack}`: {shows}. Made by the stack: edits here are undone by "
            f"the next `doctable deploy`.{more}"
        },
    }
    if not alarm_arns:
        return [text]
    alarms = {
        "type": "alarm",
        "height": HEADER_HEIGHT,
        "properties": {"title": "Alarms", "alarms": list(alarm_arns)},
    }
    return [text, alarms]


def table_row(
    config: DocTableConfig, kinesis_stream_name: str | None, *, replica: bool = False
) -> list[Widget]:
    """The table's capacity, throttles and errors in the dashboard's region; the home region's adds the Kinesis
    data stream and the replication latency to each replica region."""
    table = {"TableName": config.table_name}
    errors = [
        metric(DYNAMODB, "SystemErrors", {**table, "Operation": op}, id=f"e{i}", visible=False)
        for i, op in enumerate(TABLE_OPERATIONS)
    ]
    total = {"expression": f"SUM([{','.join(f'e{i}' for i in range(len(errors)))}])", "label": "SystemErrors"}
    row = [
        graph(
            "Table: consumed capacity",
            [
                metric(DYNAMODB, name, table)
                for name in ("ConsumedReadCapacityUnits", "ConsumedWriteCapacityUnits")
            ],
        ),
        graph(
            "Table: throttles",
            [metric(DYNAMODB, name, table) for name in ("ReadThrottleEvents", "WriteThrottleEvents")],
        ),
        # UserErrors has no dimension: it counts every table's (and stream's) 400s in the account and region.
        graph(
            "Table: errors (UserErrors: the account's, in this region)",
            [[total], *errors, metric(DYNAMODB, "UserErrors", {})],
        ),
    ]
    if kinesis_stream_name is not None:
        stream = {"StreamName": kinesis_stream_name}
        row.append(
            graph(
                "Kinesis data stream: iterator age, throttles",
                [
                    metric(
                        KINESIS, "GetRecords.IteratorAgeMilliseconds", stream, stat="Maximum", period=MINUTE
                    ),
                    metric(KINESIS, "ReadProvisionedThroughputExceeded", stream),
                    metric(KINESIS, "WriteProvisionedThroughputExceeded", stream),
                ],
            )
        )
    if config.replicas and not replica:
        latency = [
            metric(
                DYNAMODB,
                "ReplicationLatency",
                {**table, "ReceivingRegion": region},
                stat="Average",
                label=f"to {region}",
            )
            for region in config.replicas
        ]
        row.append(graph("Global table: replication latency", latency, "milliseconds"))
    return row


def reader_row(reader: Reader) -> list[Widget]:
    function = {"FunctionName": reader.function_name}
    row = [
        graph(
            f"{reader.title}: iterator age",
            [metric(LAMBDA, "IteratorAge", function, stat="Maximum", period=MINUTE)],
            "milliseconds",
        ),
        graph(
            f"{reader.title}: invocations, errors, throttles",
            [metric(LAMBDA, name, function) for name in ("Invocations", "Errors", "Throttles")],
        ),
    ]
    if reader.own_metrics:
        own = [metric(names.METRICS_NAMESPACE, name, reader.dimensions) for name in reader.own_metrics]
        row.append(graph(f"{reader.title}: records", own))
    row.append(graph(f"{reader.title}: failure destination", failure_metrics(reader)))
    return row


def failure_metrics(reader: Reader) -> list[list[Any]]:
    """What says that failed batches were written to (or could not reach) the reader's failure destination."""
    found = []
    if reader.failure_bucket is not None:
        bucket = {"BucketName": reader.failure_bucket, "FilterId": FAILED_BATCHES_FILTER_ID}
        found.append(metric(S3, "PutRequests", bucket, label="PutRequests (failed batches kept)"))
    if reader.mapping_metrics:
        mapping = {"EventSourceMappingUUID": reader.mapping_uuid}
        found += [
            metric(LAMBDA, name, mapping)
            for name in ("OnFailureDestinationDeliveredEventCount", "DroppedEventCount")
        ]
    found.append(metric(LAMBDA, "DestinationDeliveryFailures", {"FunctionName": reader.function_name}))
    return found
