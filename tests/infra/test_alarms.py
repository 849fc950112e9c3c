"""Alarms an operator must hear about: iterator age, consumer errors, failed batches, keys refused, dropped events."""

from __future__ import annotations

from typing import Any

from contract import names
from tests.infra.synth import only, resources, synth


def _alarms(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        next(
            part
            for part in ("IteratorAge", "ConsumerErrors", "FailedBatches", "KeysRefused", "DroppedEvents")
            if part in k
        ): v["Properties"]
        for k, v in resources(template, "AWS::CloudWatch::Alarm").items()
    }


def test_five_alarms_with_justified_thresholds_publish_to_the_topic() -> None:
    # GIVEN the stack with the built-in consumer
    _, template, _ = synth(stream="new-and-old")
    alarms = _alarms(template)
    topic_id = next(iter(resources(template, "AWS::SNS::Topic")))
    function_ref = {"Ref": next(iter(resources(template, "AWS::Lambda::Function")))}
    # THEN each alarm watches the right metric with the documented threshold
    assert set(alarms) == {"IteratorAge", "ConsumerErrors", "FailedBatches", "KeysRefused", "DroppedEvents"}
    age = alarms["IteratorAge"]
    assert (age["Namespace"], age["MetricName"], age["Statistic"]) == ("AWS/Lambda", "IteratorAge", "Maximum")
    assert age["Dimensions"] == [{"Name": "FunctionName", "Value": function_ref}]
    # the documented thresholds: iterator age above 10 minutes (in ms) for 3 one-minute periods
    assert (age["Threshold"], age["Period"], age["EvaluationPeriods"]) == (10 * 60 * 1000, 60, 3)
    errors = alarms["ConsumerErrors"]
    # consumer errors in 2 of 3 five-minute periods
    assert (errors["MetricName"], errors["Threshold"], errors["DatapointsToAlarm"]) == ("Errors", 1, 2)
    assert (errors["Period"], errors["EvaluationPeriods"]) == (300, 3)
    failed = alarms["FailedBatches"]
    assert (failed["Namespace"], failed["MetricName"], failed["Threshold"]) == ("AWS/S3", "PutRequests", 1)
    filter_id = next(d["Value"] for d in failed["Dimensions"] if d["Name"] == "FilterId")
    refused = alarms["KeysRefused"]
    assert (refused["Namespace"], refused["MetricName"]) == (names.METRICS_NAMESPACE, "KeysRefused")
    assert refused["Dimensions"] == [
        {"Name": "environment", "Value": "dev"},
        {"Name": "service", "Value": names.SERVICE_NAME},
        {"Name": "table", "Value": "items-dev"},
    ]
    # the mapping's own metrics (MetricsConfig EventCount): any record dropped without being kept
    dropped = alarms["DroppedEvents"]
    assert (dropped["Namespace"], dropped["MetricName"], dropped["Threshold"]) == (
        "AWS/Lambda",
        "DroppedEventCount",
        1,
    )
    mapping_id = next(iter(resources(template, "AWS::Lambda::EventSourceMapping")))
    assert dropped["Dimensions"] == [{"Name": "EventSourceMappingUUID", "Value": {"Ref": mapping_id}}]
    for alarm in alarms.values():
        assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
        assert alarm["TreatMissingData"] == "notBreaching"
        assert alarm["AlarmActions"] == [{"Ref": topic_id}]
    # AND the failure bucket counts its PUTs under the filter the alarm reads
    failure_bucket = next(v for k, v in resources(template, "AWS::S3::Bucket").items() if "Failure" in k)
    assert failure_bucket["Properties"]["MetricsConfigurations"] == [{"Id": filter_id}]
    assert names.OUT_ALARM_TOPIC_ARN in template["Outputs"]


def test_topic_enforces_tls() -> None:
    _, template, _ = synth(stream="new-and-old")
    policy = only(template, "AWS::SNS::TopicPolicy")["Properties"]["PolicyDocument"]["Statement"]
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in policy
    )


def test_no_alarms_without_the_builtin_consumer() -> None:
    _, template, _ = synth()
    assert resources(template, "AWS::CloudWatch::Alarm") == {}


def test_no_dropped_events_alarm_without_the_mapping_metrics() -> None:
    _, template, _ = synth(stream="new-and-old", mapping_metrics="off")
    assert set(_alarms(template)) == {"IteratorAge", "ConsumerErrors", "FailedBatches", "KeysRefused"}


def test_each_environment_alarms_on_its_own_series_only() -> None:
    # GIVEN two environments' stacks in one account and region
    for env in ("dev", "prod"):
        _, template, _ = synth(stream="new-and-old", env=env)
        refused = _alarms(template)["KeysRefused"]
        variables = only(template, "AWS::Lambda::Function")["Properties"]["Environment"]["Variables"]
        table_ref = {"Ref": next(iter(resources(template, "AWS::DynamoDB::Table")))}

        # THEN its alarm selects only its own environment's and table's series
        dimensions = {d["Name"]: d["Value"] for d in refused["Dimensions"]}
        assert dimensions == {"service": names.SERVICE_NAME, "environment": env, "table": f"items-{env}"}
        # AND its consumer publishes exactly that series (the table's name is the Ref of items-<env>)
        assert variables[names.ENV_ENVIRONMENT] == env
        assert variables[names.ENV_TABLE_NAME] == table_ref
        assert only(template, "AWS::DynamoDB::Table")["Properties"]["TableName"] == f"items-{env}"
