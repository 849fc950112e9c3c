"""CloudWatch dashboards on the local AWS's adaptations in process (local/services/cloudwatch.py): global to the
account, the body and name checked as CloudWatch checks them, tags, and AWS::CloudWatch::Dashboard in templates."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from local import state
from tests.unit.test_local_kinesis_destination import isolated_services

pytestmark = pytest.mark.unit

REGION = state.REGION
OTHER_REGION = "eu-west-1"
BODY = json.dumps({"widgets": [{"type": "text", "properties": {"markdown": "hello"}}]})
METRIC_ROW = 'Field "metrics" has to be an array of array of strings, with an optional metricRenderer object as last element'


@pytest.fixture
def cloudwatch(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x")):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with isolated_services(), mock_aws():
        yield boto3.client("cloudwatch", region_name=REGION)


def names(client: Any) -> list[str]:
    return [d["DashboardName"] for d in client.list_dashboards()["DashboardEntries"]]


def refusal(call: Any, **kwargs: Any) -> dict[str, Any]:
    with pytest.raises(ClientError) as caught:
        call(**kwargs)
    return caught.value.response


def test_a_dashboard_is_global_to_the_account(cloudwatch: Any) -> None:
    # GIVEN a dashboard put in one region
    cloudwatch.put_dashboard(DashboardName="overview", DashboardBody=BODY)
    other = boto3.client("cloudwatch", region_name=OTHER_REGION)
    # THEN every region gets and lists it, with an ARN that names no region
    got = other.get_dashboard(DashboardName="overview")
    assert (got["DashboardBody"], got["DashboardArn"]) == (
        BODY,
        "arn:aws:cloudwatch::123456789012:dashboard/overview",
    )
    assert names(other) == ["overview"]
    # WHEN another region deletes it THEN it is gone everywhere
    other.delete_dashboards(DashboardNames=["overview"])
    assert names(cloudwatch) == []


@pytest.mark.parametrize(
    ("body", "problems"),
    [
        ("{}", [("", "Should have required property 'widgets'")]),
        ("[]", [("", "Should be object")]),
        ('{"widgets": {}}', [("/widgets", "Should be array")]),
        (
            json.dumps(
                {
                    "widgets": [
                        3,
                        {"type": "metric", "properties": {"metrics": [["AWS/Lambda", "Errors"], "Errors"]}},
                    ]
                }
            ),
            [
                ("/widgets/0", "Should be object"),
                ("/widgets/1/properties/metrics/1", "Should be array"),
                ("/widgets/1/properties/metrics/1", METRIC_ROW),
            ],
        ),
    ],
    ids=["no-widgets", "not-an-object", "widgets-not-an-array", "bad-widget-and-row"],
)
def test_put_dashboard_refuses_a_body_cloudwatch_refuses(
    cloudwatch: Any, body: str, problems: list[tuple[str, str]]
) -> None:
    # WHEN the body's structure is not a dashboard's
    answer = refusal(cloudwatch.put_dashboard, DashboardName="bad", DashboardBody=body)
    # THEN InvalidParameterInput lists each error (data path and message) in its message and its validation messages
    assert answer["Error"]["Code"] == "InvalidParameterInput"
    messages = answer["dashboardValidationMessages"]
    assert [(m["DataPath"], m["Message"]) for m in messages] == problems
    listed = json.loads(answer["Error"]["Message"].split("errors:\n", 1)[1])
    assert [(e["dataPath"], e["message"]) for e in listed] == problems
    assert names(cloudwatch) == []


def test_put_dashboard_refuses_a_body_that_is_not_json_and_a_name_cloudwatch_does_not_allow(
    cloudwatch: Any,
) -> None:
    answer = refusal(cloudwatch.put_dashboard, DashboardName="bad", DashboardBody="widgets")
    assert answer["Error"]["Code"] == "InvalidParameterInput"
    for name in ("two words", "a" * 256, "dots.not.allowed"):
        answer = refusal(cloudwatch.put_dashboard, DashboardName=name, DashboardBody=BODY)
        assert answer["Error"]["Code"] == "InvalidParameterValue", name
    # AND the longest name of the allowed characters is accepted
    cloudwatch.put_dashboard(DashboardName="A-z_9" + "x" * 250, DashboardBody=BODY)
    assert names(cloudwatch) == ["A-z_9" + "x" * 250]


def test_delete_dashboards_deletes_those_that_exist_and_names_the_others(cloudwatch: Any) -> None:
    cloudwatch.put_dashboard(DashboardName="kept", DashboardBody=BODY)
    cloudwatch.put_dashboard(DashboardName="gone", DashboardBody=BODY)
    answer = refusal(cloudwatch.delete_dashboards, DashboardNames=["gone", "missing"])
    assert answer["Error"]["Code"] == "ResourceNotFound"
    assert names(cloudwatch) == ["kept"]


def test_put_dashboards_tags_apply_when_it_creates_the_dashboard_only(cloudwatch: Any) -> None:
    tags = [{"Key": "Environment", "Value": "dev"}]
    cloudwatch.put_dashboard(DashboardName="tagged", DashboardBody=BODY, Tags=tags)
    arn = cloudwatch.get_dashboard(DashboardName="tagged")["DashboardArn"]
    # WHEN an update names other tags THEN they are ignored, and every region reads the same tags
    cloudwatch.put_dashboard(
        DashboardName="tagged", DashboardBody=BODY, Tags=[{"Key": "Environment", "Value": "x"}]
    )
    other = boto3.client("cloudwatch", region_name=OTHER_REGION)
    assert other.list_tags_for_resource(ResourceARN=arn)["Tags"] == tags


# ---- AWS::CloudWatch::Dashboard ----
def _template(name: str, body: str, environment: str = "dev", *, output: bool = True) -> str:
    properties = {
        "DashboardName": name,
        "DashboardBody": body,
        "Tags": [{"Key": "Environment", "Value": environment}],
    }
    resources = {"Overview": {"Type": "AWS::CloudWatch::Dashboard", "Properties": properties}}
    # (without the output for a creation that fails: the local AWS cannot describe a stack whose output reads a
    # resource that was never made, a difference local/README.md lists)
    outputs = {"Name": {"Value": {"Ref": "Overview"}}} if output else {}
    return json.dumps({"Resources": resources, "Outputs": outputs})


def _stack(cfn: Any) -> dict[str, Any]:
    stack: dict[str, Any] = cfn.describe_stacks(StackName="s")["Stacks"][0]
    return stack


def test_a_templates_dashboard_is_created_updated_replaced_and_deleted(cloudwatch: Any) -> None:
    cfn = boto3.client("cloudformation", region_name=REGION)
    # GIVEN a stack with a dashboard
    cfn.create_stack(StackName="s", TemplateBody=_template("first", BODY))
    stack = _stack(cfn)
    assert stack["StackStatus"] == "CREATE_COMPLETE"
    assert stack["Outputs"][0]["OutputValue"] == "first"
    arn = cloudwatch.get_dashboard(DashboardName="first")["DashboardArn"]
    assert cloudwatch.list_tags_for_resource(ResourceARN=arn)["Tags"] == [
        {"Key": "Environment", "Value": "dev"}
    ]
    # WHEN its body and tags change THEN the same dashboard has them
    changed = json.dumps({"widgets": []})
    cfn.update_stack(StackName="s", TemplateBody=_template("first", changed, "prod"))
    assert _stack(cfn)["StackStatus"] == "UPDATE_COMPLETE"
    assert cloudwatch.get_dashboard(DashboardName="first")["DashboardBody"] == changed
    assert cloudwatch.list_tags_for_resource(ResourceARN=arn)["Tags"] == [
        {"Key": "Environment", "Value": "prod"}
    ]
    # WHEN its name changes THEN it is replaced: the new one made, the old one deleted
    cfn.update_stack(StackName="s", TemplateBody=_template("second", changed))
    assert (_stack(cfn)["StackStatus"], names(cloudwatch)) == ("UPDATE_COMPLETE", ["second"])
    assert cloudwatch.list_tags_for_resource(ResourceARN=arn)["Tags"] == []
    # WHEN the new body is one CloudWatch refuses THEN the update fails with its message and is rolled back
    cfn.update_stack(StackName="s", TemplateBody=_template("second", "{}"))
    stack = _stack(cfn)
    assert stack["StackStatus"] == "UPDATE_ROLLBACK_COMPLETE"
    failed = [
        e
        for e in cfn.describe_stack_events(StackName="s")["StackEvents"]
        if e["ResourceStatus"] == "UPDATE_FAILED"
    ]
    assert "HandlerErrorCode: InvalidParameterInput" in failed[0]["ResourceStatusReason"]
    assert cloudwatch.get_dashboard(DashboardName="second")["DashboardBody"] == changed
    # WHEN the stack is deleted THEN so is the dashboard
    cfn.delete_stack(StackName="s")
    assert names(cloudwatch) == []


def test_a_template_whose_dashboard_body_cloudwatch_refuses_fails_its_stack(cloudwatch: Any) -> None:
    cfn = boto3.client("cloudformation", region_name=REGION)
    cfn.create_stack(
        StackName="s", TemplateBody=_template("refused", json.dumps({"widgets": 1}), output=False)
    )
    assert _stack(cfn)["StackStatus"] == "ROLLBACK_COMPLETE"
    assert names(cloudwatch) == []
