"""The environment's dashboard in the template (infra/monitoring/dashboard.py): named after the stack and its region, output,
and a body whose metrics select what the table, Lambda and the functions themselves publish: the table's row, the
cleanup consumer's and each subscriber's (its dimensions as its wrapper writes them), failure destinations, alarms.
The body is compared as parsed JSON, with the template's references in place of the names they resolve to."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from contract import names
from contract.knobs import resolve_config
from infra.stack import create_stack
from local.services.cloudwatch import body_problems
from tests.infra.synth import only, resources, stack_template, synth

ROOT = Path(__file__).resolve().parents[2]
# The functions' own modules (on pytest's path, functions/) are imported by the tests that read them:
# tests/infra/synth_matrix.py imports this module for its shapes without them.
HANDLER = "examples/subscribers/search.py:handler"
SUBSCRIBERS = {
    "search": {
        "handler": HANDLER,
        "filters": ['{"eventName": ["INSERT", "MODIFY"]}'],
        "grants": ["table:read"],
    },
    "audit-trail": {"handler": HANDLER, "source": "kinesis", "per_record": True},
}
# CloudWatch's rule for a dashboard name (PutDashboard's DashboardName, botocore's model documentation).
DASHBOARD_NAME = re.compile(r"^[A-Za-z0-9_-]{1,255}$")
GRID_WIDTH = 24


# ---- reading a template ----
def _text(value: Any) -> str:
    """A template value as text, each reference written as ``<Ref X>`` or ``<X.Attribute>``."""
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(_text(part) for part in parts)
    if "Ref" in value:
        return f"<Ref {value['Ref']}>"
    if "Fn::GetAtt" in value:
        return "<{}.{}>".format(*value["Fn::GetAtt"])
    raise AssertionError(f"unexpected intrinsic {value}")


def _body(template: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(
        _text(only(template, "AWS::CloudWatch::Dashboard")["Properties"]["DashboardBody"])
    )
    return body


def _widgets(template: dict[str, Any], title_prefix: str) -> dict[str, dict[str, Any]]:
    """The metric widgets whose title starts so, by the rest of their title."""
    return {
        w["properties"]["title"][len(title_prefix) :]: w["properties"]
        for w in _body(template)["widgets"]
        if w["type"] == "metric" and w["properties"]["title"].startswith(title_prefix)
    }


def _metrics(widget: dict[str, Any]) -> dict[str, tuple[str, dict[str, str]]]:
    """A graph's metric rows by metric name: (namespace, dimensions)."""
    found = {}
    for row in widget["metrics"]:
        if isinstance(row[0], dict):  # a math expression
            continue
        namespace, name, *rest = row
        pairs = rest[:-1] if isinstance(rest[-1], dict) else rest
        found[name] = (namespace, dict(zip(pairs[::2], pairs[1::2], strict=True)))
    return found


def _logical(template: dict[str, Any], type_name: str, prefix: str = "") -> str:
    (found,) = [k for k in resources(template, type_name) if k.startswith(prefix)]
    return found


def _ref(logical: str) -> str:
    return f"<Ref {logical}>"


@pytest.fixture(scope="module")
def subscribed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The stack with the built-in consumer, a Kinesis data stream and two subscribers (one on each source)."""
    config = resolve_config(
        context={"stream": "new-and-old", "kinesis": "on"},
        environ={},
        subscribers=SUBSCRIBERS,
        settings_dir=ROOT,
    )
    outdir = tmp_path_factory.mktemp("dashboard")
    app = cdk.App(outdir=str(outdir))
    create_stack(app, config)
    app.synth()  # raises on any unacknowledged cdk-nag finding
    return stack_template(outdir, config.stack_name)


# ---- the dashboard ----
def test_one_dashboard_named_after_the_stack_and_its_region_is_an_output() -> None:
    # GIVEN the stack with its consumer  WHEN synthesized (environment-agnostic: the region is the stack's)
    config, template, _ = synth(stream="new-and-old")
    dashboard = _logical(template, "AWS::CloudWatch::Dashboard")
    name = _text(template["Resources"][dashboard]["Properties"]["DashboardName"])
    # THEN its name is <stack>-<region> (dashboards are global to the account), within CloudWatch's rule
    assert name == f"{config.stack_name}-<Ref AWS::Region>"
    assert DASHBOARD_NAME.match(f"{config.stack_name}-ap-southeast-2")
    # AND the stack outputs it
    assert template["Outputs"][names.OUT_DASHBOARD_NAME]["Value"] == {"Ref": dashboard}


def test_the_body_is_one_cloudwatch_accepts_and_fills_the_grid(subscribed: dict[str, Any]) -> None:
    body = _body(subscribed)
    # THEN the local AWS's checks (CloudWatch's) find nothing, and every widget sits on the 24-unit grid
    assert body_problems(body) == []
    rows: dict[int, int] = {}
    for widget in body["widgets"]:
        assert widget["x"] + widget["width"] <= GRID_WIDTH
        rows[widget["y"]] = rows.get(widget["y"], 0) + widget["width"]
    assert set(rows.values()) == {GRID_WIDTH}
    # AND every metric widget reads the stack's region
    assert {w["properties"]["region"] for w in body["widgets"] if w["type"] == "metric"} == {
        "<Ref AWS::Region>"
    }


def test_the_alarm_widget_lists_every_alarm_of_the_stack(subscribed: dict[str, Any]) -> None:
    (widget,) = [w for w in _body(subscribed)["widgets"] if w["type"] == "alarm"]
    alarms = {f"<{logical}.Arn>" for logical in resources(subscribed, "AWS::CloudWatch::Alarm")}
    assert len(alarms) >= 9  # the consumer's five, two per subscriber
    assert set(widget["properties"]["alarms"]) == alarms


def test_the_table_row_selects_the_table_and_its_kinesis_data_stream(subscribed: dict[str, Any]) -> None:
    table = only(subscribed, "AWS::DynamoDB::Table")["Properties"]["TableName"]
    row = _widgets(subscribed, "Table: ")
    capacity = _metrics(row["consumed capacity"])
    assert capacity == {
        "ConsumedReadCapacityUnits": ("AWS/DynamoDB", {"TableName": table}),
        "ConsumedWriteCapacityUnits": ("AWS/DynamoDB", {"TableName": table}),
    }
    assert set(_metrics(row["throttles"])) == {"ReadThrottleEvents", "WriteThrottleEvents"}
    # System errors per data-plane operation of the runtime policy, summed; UserErrors has no dimension
    errors = next(w for title, w in row.items() if title.startswith("errors"))
    operations = [
        dict(zip(r[2:-1:2], r[3:-1:2], strict=True)) for r in errors["metrics"][1:] if r[1] == "SystemErrors"
    ]
    assert [o["Operation"] for o in operations] == [a.split(":")[1] for a in names.RUNTIME_ACTIONS]
    assert {o["TableName"] for o in operations} == {table}
    assert _metrics(errors)["UserErrors"] == ("AWS/DynamoDB", {})
    stream = _ref(_logical(subscribed, "AWS::Kinesis::Stream"))
    kinesis = _metrics(_widgets(subscribed, "Kinesis data stream: ")["iterator age, throttles"])
    assert {dims["StreamName"] for _, dims in kinesis.values()} == {stream}


def test_the_consumer_row_reads_what_the_consumer_and_its_mapping_publish(subscribed: dict[str, Any]) -> None:
    from stream_consumer import constants as consumer_constants

    function = _logical(subscribed, "AWS::Lambda::Function", names.ID_CONSUMER)
    env = subscribed["Resources"][function]["Properties"]["Environment"]["Variables"]
    table = only(subscribed, "AWS::DynamoDB::Table")
    row = _widgets(subscribed, "Cleanup consumer: ")
    assert set(row) == {"iterator age", "invocations, errors, throttles", "records", "failure destination"}
    # THEN Lambda's metrics select its function
    assert _metrics(row["iterator age"]) == {"IteratorAge": ("AWS/Lambda", {"FunctionName": _ref(function)})}
    assert set(_metrics(row["invocations, errors, throttles"])) == {"Invocations", "Errors", "Throttles"}
    # AND its own metrics are the names it emits, under the dimensions its environment gives it (service, the
    # environment and the table its TABLE_NAME resolves to: tests/unit/test_consumer_handler.py shows the handler
    # publishing exactly these)
    assert env[consumer_constants.ENV_TABLE_NAME] == {"Ref": _logical(subscribed, "AWS::DynamoDB::Table")}
    emitted = {
        "service": env["POWERTOOLS_SERVICE_NAME"],
        consumer_constants.METRIC_DIMENSION_ENVIRONMENT: env[consumer_constants.ENV_ENVIRONMENT],
        consumer_constants.METRIC_DIMENSION_TABLE: table["Properties"]["TableName"],
    }
    own = _metrics(row["records"])
    assert own == {
        name: ("Doctable", emitted)
        for name in (
            consumer_constants.METRIC_RECORDS_RECEIVED,
            consumer_constants.METRIC_BLOBS_DELETED,
            consumer_constants.METRIC_RECORDS_FAILED,
            consumer_constants.METRIC_KEYS_REFUSED,
        )
    }
    # AND failed batches: the failure bucket's request metrics (the filter the bucket has), the mapping's event
    # counts (its MetricsConfig asks for them) and the function's failed deliveries
    bucket = _logical(subscribed, "AWS::S3::Bucket", f"{names.ID_CONSUMER}FailureBucket")
    (filter_id,) = [c["Id"] for c in subscribed["Resources"][bucket]["Properties"]["MetricsConfigurations"]]
    mapping = _logical(subscribed, "AWS::Lambda::EventSourceMapping", names.ID_CONSUMER)
    assert subscribed["Resources"][mapping]["Properties"]["MetricsConfig"] == {"Metrics": ["EventCount"]}
    assert _metrics(row["failure destination"]) == {
        "PutRequests": ("AWS/S3", {"BucketName": _ref(bucket), "FilterId": filter_id}),
        "OnFailureDestinationDeliveredEventCount": ("AWS/Lambda", {"EventSourceMappingUUID": _ref(mapping)}),
        "DroppedEventCount": ("AWS/Lambda", {"EventSourceMappingUUID": _ref(mapping)}),
        "DestinationDeliveryFailures": ("AWS/Lambda", {"FunctionName": _ref(function)}),
    }


def _emitted_dimensions(environment: dict[str, Any], template: dict[str, Any]) -> dict[str, str]:
    """The dimensions the subscriber's wrapper writes with the environment the template gives its function."""
    from subscriber_runtime.emit import BatchOutput

    table = environment[names.ENV_SUBSCRIBER_TABLE_NAME]
    assert table == {"Ref": _logical(template, "AWS::DynamoDB::Table")}
    lines: list[str] = []
    output = BatchOutput(
        environment[names.ENV_SUBSCRIBER_NAME],
        only(template, "AWS::DynamoDB::Table")["Properties"]["TableName"],
        environment[names.ENV_SUBSCRIBER_ENVIRONMENT],
        write=lines.append,
    )
    output.refused()  # a metrics line of both metrics
    (line,) = [json.loads(text) for text in lines]
    (directive,) = line["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == names.METRICS_NAMESPACE
    assert {m["Name"] for m in directive["Metrics"]} == set(SUBSCRIBER_METRIC_NAMES)
    (dimensions,) = directive["Dimensions"]
    return {key: line[key] for key in dimensions}


SUBSCRIBER_METRIC_NAMES = (names.METRIC_SUBSCRIBER_RECORDS_RECEIVED, names.METRIC_SUBSCRIBER_RECORDS_FAILED)


@pytest.mark.parametrize("subscriber", sorted(SUBSCRIBERS))
def test_each_subscriber_has_its_row_with_the_dimensions_its_wrapper_writes(
    subscribed: dict[str, Any], subscriber: str
) -> None:
    prefix = f"Subscriber{names.subscriber_id(subscriber)}"
    function = _logical(subscribed, "AWS::Lambda::Function", prefix)
    environment = subscribed["Resources"][function]["Properties"]["Environment"]["Variables"]
    row = _widgets(subscribed, f"Subscriber {subscriber}: ")
    # THEN its row: iterator age, invocations, its records, its failure destination
    assert set(row) == {"iterator age", "invocations, errors, throttles", "records", "failure destination"}
    assert _metrics(row["iterator age"])["IteratorAge"] == ("AWS/Lambda", {"FunctionName": _ref(function)})
    # AND its records are selected by the very dimensions its wrapper writes (Subscriber among them)
    emitted = _emitted_dimensions(environment, subscribed)
    assert emitted[names.METRIC_DIMENSION_SUBSCRIBER] == subscriber
    assert _metrics(row["records"]) == {name: ("Doctable", emitted) for name in SUBSCRIBER_METRIC_NAMES}
    # AND its failure destination: its function's failed deliveries, and what its bucket and mapping publish (a
    # subscriber's bucket has no request metrics and its mapping no MetricsConfig today: the deliveries alone)
    bucket_id = _logical(subscribed, "AWS::S3::Bucket", f"{prefix}FailureBucket")
    mapping_id = _logical(subscribed, "AWS::Lambda::EventSourceMapping", prefix)
    expected = {"DestinationDeliveryFailures": ("AWS/Lambda", {"FunctionName": _ref(function)})}
    for configuration in subscribed["Resources"][bucket_id]["Properties"].get("MetricsConfigurations", []):
        expected["PutRequests"] = ("AWS/S3", {"BucketName": _ref(bucket_id), "FilterId": configuration["Id"]})
    if "MetricsConfig" in subscribed["Resources"][mapping_id]["Properties"]:
        for name in ("OnFailureDestinationDeliveredEventCount", "DroppedEventCount"):
            expected[name] = ("AWS/Lambda", {"EventSourceMappingUUID": _ref(mapping_id)})
    assert _metrics(row["failure destination"]) == expected


def test_a_table_without_readers_has_the_table_row_alone() -> None:
    # GIVEN the stack without a stream (no consumer, no alarm)
    _, template, _ = synth()
    body = _body(template)
    # THEN the header (no alarm widget) and the table's row
    assert [w["type"] for w in body["widgets"]] == ["text", "metric", "metric", "metric"]
    assert not any(
        w["properties"]["title"].startswith(("Cleanup", "Subscriber")) for w in body["widgets"][1:]
    )


def test_the_metric_names_the_dashboard_shows_are_the_consumers() -> None:
    from stream_consumer import constants as consumer_constants

    for name in (
        "METRIC_RECORDS_RECEIVED",
        "METRIC_BLOBS_DELETED",
        "METRIC_RECORDS_FAILED",
        "METRIC_KEYS_REFUSED",
    ):
        assert getattr(names, name) == getattr(consumer_constants, name)
