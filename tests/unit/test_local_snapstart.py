"""The local AWS's Lambda SnapStart, versions and aliases: SnapStart.ApplyOn kept and reported (OptimizationStatus
On for a version published with it), Lambda's refusals, the init run at publish, and a stack of Function +
Version + Alias + DynamoDB-stream mapping whose records reach the code of the version the alias points to.

The functions run for real (local/runtime/runner.py, a subprocess per execution environment) and write what they saw
to their CloudWatch log group, which the tests read back."""

from __future__ import annotations

import io
import json
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from local import state
from local.auth import ENV as IAM_ENV
from local.pollers import streams as esm
from local.runtime import runner
from tests.unit.test_local_kinesis_destination import isolated_services

pytestmark = pytest.mark.unit

REGION = state.REGION
ACCOUNT = state.ACCOUNT_ID
TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
    ],
}


def _code(tag: str, init_fails: bool = False) -> str:
    """A handler that logs its tag, initialization type and version at init and per invocation."""
    failing = 'raise RuntimeError("init broke")\n' if init_fails else ""
    return (
        "import os\n"
        f"{failing}"
        'SEEN = (os.environ["AWS_LAMBDA_INITIALIZATION_TYPE"], os.environ["AWS_LAMBDA_FUNCTION_VERSION"])\n'
        f'print("init {tag} %s %s" % SEEN)\n'
        "def handler(event, context):\n"
        f'    print("ran {tag} %s %s records=%d" % (*SEEN, len(event.get("Records", []))))\n'
        "    return {}\n"
    )


def _zip(code: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("index.py", code)
    return buffer.getvalue()


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Callable[[str], Any]]:
    """The local AWS's services in process, with the real Lambda runner and mapping pollers (IAM off)."""
    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x"), (IAM_ENV, "off")):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    lambda_runner = runner.LambdaRunner(tmp_path, "https://localhost:1")
    monkeypatch.setattr(runner, "_RUNNER", lambda_runner)  # what runner.install does, undone after the test
    manager = esm.MappingManager()
    monkeypatch.setattr(esm, "_MANAGER", manager)
    with isolated_services(), mock_aws():
        try:
            yield lambda service: boto3.client(service, region_name=REGION)
        finally:
            manager.shutdown()
            lambda_runner.shutdown()


def _role(client: Callable[[str], Any]) -> str:
    iam = client("iam")
    return str(iam.create_role(RoleName="fn-role", AssumeRolePolicyDocument=json.dumps(TRUST))["Role"]["Arn"])


def _function(client: Callable[[str], Any], name: str = "fn", **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "FunctionName": name,
        "Runtime": "python3.13",
        "Role": _role(client),
        "Handler": "index.handler",
        "Code": {"ZipFile": _zip(_code("v1"))},
        **extra,
    }
    return client("lambda").create_function(**spec)  # type: ignore[no-any-return]


def _error(call: Callable[..., Any], **kwargs: Any) -> tuple[str, str]:
    with pytest.raises(ClientError) as caught:
        call(**kwargs)
    return caught.value.response["Error"]["Code"], caught.value.response["Error"]["Message"]


def _log_lines(client: Callable[[str], Any], prefix: str, group: str = "/aws/lambda/fn") -> list[str]:
    logs = client("logs")
    try:
        events = logs.filter_log_events(logGroupName=group)["events"]
    except logs.exceptions.ResourceNotFoundException:
        return []
    return [e["message"].strip() for e in events if e["message"].startswith(prefix)]


def _wait_for_line(client: Callable[[str], Any], prefix: str, timeout: float = 30.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        lines = _log_lines(client, prefix)
        if lines:
            return lines
        assert time.monotonic() < deadline, f"no log line starting {prefix!r}: {_log_lines(client, '')}"
        time.sleep(0.1)


# ------------------------------------------------------------------------------------------------ the API
def test_latest_reports_apply_on_off_and_a_published_version_keeps_what_it_was_published_with(
    aws: Callable[[str], Any],
) -> None:
    # GIVEN a function created with SnapStart on published versions
    lam = aws("lambda")
    created = _function(aws, SnapStart={"ApplyOn": "PublishedVersions"})
    # THEN $LATEST reports it, not optimized
    assert created["SnapStart"] == {"ApplyOn": "PublishedVersions", "OptimizationStatus": "Off"}
    # WHEN a version is published, then SnapStart is turned off on $LATEST and another version published
    first = lam.publish_version(FunctionName="fn")
    lam.update_function_configuration(FunctionName="fn", SnapStart={"ApplyOn": "None"})
    second = lam.publish_version(FunctionName="fn")
    # THEN the first version is optimized and stays so; $LATEST and the second version are off
    assert (first["Version"], first["State"]) == ("1", "Active")
    assert first["SnapStart"] == {"ApplyOn": "PublishedVersions", "OptimizationStatus": "On"}
    one = lam.get_function_configuration(FunctionName="fn", Qualifier="1")
    assert one["SnapStart"] == {"ApplyOn": "PublishedVersions", "OptimizationStatus": "On"}
    latest = lam.get_function_configuration(FunctionName="fn")
    assert latest["SnapStart"] == {"ApplyOn": "None", "OptimizationStatus": "Off"}
    assert second["Version"] == "2"
    assert second["SnapStart"] == {"ApplyOn": "None", "OptimizationStatus": "Off"}
    # AND publishing ran the init once, in a snap-start environment of version 1 only
    assert _log_lines(aws, "init v1") == ["init v1 snap-start 1"]


def test_snap_start_refusals_name_the_value_lambda_refuses(aws: Callable[[str], Any]) -> None:
    # GIVEN the calls Lambda refuses
    lam = aws("lambda")
    role = _role(aws)
    base = {"Role": role, "Handler": "index.handler", "Code": {"ZipFile": _zip(_code("v1"))}}
    on = {"ApplyOn": "PublishedVersions"}
    # THEN an unknown ApplyOn is a validation error
    assert _error(
        lam.create_function, FunctionName="a", Runtime="python3.13", SnapStart={"ApplyOn": "Always"}, **base
    ) == (
        "ValidationException",
        "1 validation error detected: Value 'Always' at 'snapStart.applyOn' failed to satisfy constraint: "
        "Member must satisfy enum value set: [PublishedVersions, None]",
    )
    # AND a runtime without SnapStart, more than 512 MB of ephemeral storage, or EFS is refused
    assert _error(lam.create_function, FunctionName="b", Runtime="python3.11", SnapStart=on, **base) == (
        "InvalidParameterValueException",
        "python3.11 is not supported for SnapStart enabled functions.",
    )
    assert _error(
        lam.create_function,
        FunctionName="c",
        Runtime="python3.13",
        SnapStart=on,
        EphemeralStorage={"Size": 1024},
        **base,
    ) == (
        "InvalidParameterValueException",
        "EphemeralStorage greater than 512 MB is not supported for SnapStart enabled functions.",
    )
    efs = [
        {
            "Arn": f"arn:aws:elasticfilesystem:{REGION}:{ACCOUNT}:access-point/fsap-1",
            "LocalMountPath": "/mnt/x",
        }
    ]
    assert _error(
        lam.create_function,
        FunctionName="d",
        Runtime="python3.13",
        SnapStart=on,
        FileSystemConfigs=efs,
        **base,
    ) == ("InvalidParameterValueException", "EFS is not supported for SnapStart enabled functions.")
    assert [f["FunctionName"] for f in lam.list_functions()["Functions"]] == []
    # AND the same checks hold for updates, which then change nothing
    lam.create_function(FunctionName="e", Runtime="python3.11", **base)
    code, _ = _error(lam.update_function_configuration, FunctionName="e", SnapStart=on)
    assert code == "InvalidParameterValueException"
    lam.create_function(FunctionName="f", Runtime="python3.12", SnapStart=on, **base)
    assert _error(lam.update_function_configuration, FunctionName="f", Runtime="python3.11") == (
        "InvalidParameterValueException",
        "python3.11 is not supported for SnapStart enabled functions.",
    )
    code, _ = _error(lam.update_function_configuration, FunctionName="f", EphemeralStorage={"Size": 2048})
    assert code == "InvalidParameterValueException"
    unchanged = lam.get_function_configuration(FunctionName="f")
    assert (unchanged["Runtime"], unchanged["EphemeralStorage"]["Size"]) == ("python3.12", 512)
    assert lam.get_function_configuration(FunctionName="e")["SnapStart"]["ApplyOn"] == "None"
    # AND SnapStart off is accepted on any runtime
    lam.update_function_configuration(FunctionName="e", SnapStart={"ApplyOn": "None"})


def test_a_version_an_alias_points_to_cannot_be_deleted_and_numbers_are_never_reused(
    aws: Callable[[str], Any],
) -> None:
    # GIVEN two versions, the second one behind an alias
    lam = aws("lambda")
    _function(aws)
    lam.publish_version(FunctionName="fn")
    lam.update_function_configuration(FunctionName="fn", Description="second")
    lam.publish_version(FunctionName="fn")
    lam.create_alias(FunctionName="fn", Name="live", FunctionVersion="2")
    # THEN deleting version 2 is refused with Lambda's conflict
    assert _error(lam.delete_function, FunctionName="fn", Qualifier="2") == (
        "ResourceConflictException",
        "Unable to delete version because the following aliases reference it: [live]",
    )
    # WHEN the alias moves to version 1, version 2 is deleted and another version published
    lam.update_alias(FunctionName="fn", Name="live", FunctionVersion="1")
    lam.delete_function(FunctionName="fn", Qualifier="2")
    lam.update_function_configuration(FunctionName="fn", Description="third")
    third = lam.publish_version(FunctionName="fn")
    # THEN the new version is 3, not 2 again
    assert third["Version"] == "3"
    versions = [v["Version"] for v in lam.list_versions_by_function(FunctionName="fn")["Versions"]]
    assert versions == ["$LATEST", "1", "3"]


def test_a_failing_init_at_publish_leaves_the_version_failed(aws: Callable[[str], Any]) -> None:
    # GIVEN a SnapStart function whose init raises
    lam = aws("lambda")
    _function(aws, SnapStart={"ApplyOn": "PublishedVersions"}, Code={"ZipFile": _zip(_code("v1", True))})
    # WHEN a version is published
    published = lam.publish_version(FunctionName="fn")
    # THEN the version is Failed for a function error, and the init's error is in the log
    assert (published["State"], published["StateReasonCode"], published["StateReason"]) == (
        "Failed",
        "FunctionError",
        "An error occurred during function initialization.",
    )
    assert lam.get_function_configuration(FunctionName="fn", Qualifier="1")["State"] == "Failed"
    assert lam.get_function_configuration(FunctionName="fn")["State"] == "Active"
    assert any("init broke" in line for line in _log_lines(aws, ""))


# ------------------------------------------------------------------------------------------------ templates
def _template(
    version_id: str, tag: str, init_fails: bool = False, retain: bool = False, snap_start: bool = True
) -> dict[str, Any]:
    version: dict[str, Any] = {"Type": "AWS::Lambda::Version", "Properties": {"FunctionName": {"Ref": "Fn"}}}
    policy = "Retain" if retain else "Delete"
    version.update({"DeletionPolicy": policy, "UpdateReplacePolicy": policy})
    function: dict[str, Any] = {
        "FunctionName": "fn",
        "Runtime": "python3.13",
        "Handler": "index.handler",
        "Role": {"Fn::GetAtt": ["Role", "Arn"]},
        "Code": {"ZipFile": _code(tag, init_fails)},
    }
    if snap_start:
        function["SnapStart"] = {"ApplyOn": "PublishedVersions"}
    return {
        "Resources": {
            "Role": {
                "Type": "AWS::IAM::Role",
                "Properties": {"RoleName": "fn-role", "AssumeRolePolicyDocument": TRUST},
            },
            "Table": {
                "Type": "AWS::DynamoDB::Table",
                "Properties": {
                    "TableName": "tbl",
                    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
                    "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
                    "BillingMode": "PAY_PER_REQUEST",
                    "StreamSpecification": {"StreamViewType": "NEW_AND_OLD_IMAGES"},
                },
            },
            "Fn": {"Type": "AWS::Lambda::Function", "Properties": function},
            version_id: version,
            "Alias": {
                "Type": "AWS::Lambda::Alias",
                "Properties": {
                    "FunctionName": {"Ref": "Fn"},
                    "Name": "live",
                    "FunctionVersion": {"Fn::GetAtt": [version_id, "Version"]},
                },
            },
            "Mapping": {
                "Type": "AWS::Lambda::EventSourceMapping",
                "Properties": {
                    "FunctionName": {"Ref": "Alias"},
                    "EventSourceArn": {"Fn::GetAtt": ["Table", "StreamArn"]},
                    "StartingPosition": "TRIM_HORIZON",
                    "BatchSize": 10,
                },
            },
        },
        "Outputs": {
            "VersionArn": {"Value": {"Ref": version_id}},
            "VersionNumber": {"Value": {"Fn::GetAtt": [version_id, "Version"]}},
            "AliasArn": {"Value": {"Ref": "Alias"}},
        },
    }


def _outputs(cfn: Any) -> dict[str, str]:
    stack = cfn.describe_stacks(StackName="s")["Stacks"][0]
    assert stack["StackStatus"] in ("CREATE_COMPLETE", "UPDATE_COMPLETE"), stack.get("StackStatusReason")
    return {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}


def _versions(lam: Any) -> list[str]:
    return [v["Version"] for v in lam.list_versions_by_function(FunctionName="fn")["Versions"]]


def test_a_stack_of_function_version_alias_and_mapping_runs_the_versions_code_and_moves_on_update(
    aws: Callable[[str], Any],
) -> None:
    # GIVEN a stack of a SnapStart function, its version, an alias on it and a mapping through the alias
    cfn, lam, ddb = aws("cloudformation"), aws("lambda"), aws("dynamodb")
    cfn.create_stack(StackName="s", TemplateBody=json.dumps(_template("VersionA", "v1")))
    outputs = _outputs(cfn)
    fn_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:fn"
    # THEN Ref is the version's ARN, GetAtt Version its number, and the alias points at it
    assert (outputs["VersionArn"], outputs["VersionNumber"]) == (f"{fn_arn}:1", "1")
    assert lam.get_alias(FunctionName="fn", Name="live")["FunctionVersion"] == "1"
    assert lam.get_function_configuration(FunctionName="fn", Qualifier="live")["SnapStart"] == {
        "ApplyOn": "PublishedVersions",
        "OptimizationStatus": "On",
    }
    # WHEN an item is written
    ddb.put_item(TableName="tbl", Item={"pk": {"S": "a"}})
    # THEN version 1's code ran it in a snap-start environment of version 1
    assert _wait_for_line(aws, "ran v1") == ["ran v1 snap-start 1 records=1"]
    # WHEN the code changes and CDK's current version gets a new logical id
    cfn.update_stack(StackName="s", TemplateBody=json.dumps(_template("VersionB", "v2")))
    outputs = _outputs(cfn)
    # THEN a new version exists, the alias moved to it and the old version was deleted
    assert (outputs["VersionArn"], outputs["VersionNumber"]) == (f"{fn_arn}:2", "2")
    assert lam.get_alias(FunctionName="fn", Name="live")["FunctionVersion"] == "2"
    assert _versions(lam) == ["$LATEST", "2"]
    summaries = cfn.list_stack_resources(StackName="s")["StackResourceSummaries"]
    assert {"VersionB"} <= {r["LogicalResourceId"] for r in summaries} - {"VersionA"}
    # WHEN another item is written THEN the new code runs it, as version 2
    ddb.put_item(TableName="tbl", Item={"pk": {"S": "b"}})
    assert _wait_for_line(aws, "ran v2") == ["ran v2 snap-start 2 records=1"]
    assert _log_lines(aws, "ran v1") == ["ran v1 snap-start 1 records=1"]
    # AND deleting the stack deletes the alias before the version it points to, then the function
    cfn.delete_stack(StackName="s")
    assert [f["FunctionName"] for f in lam.list_functions()["Functions"]] == []


def test_a_retained_version_stays_and_keeps_snap_start_when_the_template_drops_it(
    aws: Callable[[str], Any],
) -> None:
    # GIVEN a stack whose SnapStart version has DeletionPolicy Retain
    cfn, lam = aws("cloudformation"), aws("lambda")
    cfn.create_stack(StackName="s", TemplateBody=json.dumps(_template("VersionA", "v1", retain=True)))
    # WHEN the template drops SnapStart and the stack moves to a new version
    template = _template("VersionB", "v2", retain=True, snap_start=False)
    cfn.update_stack(StackName="s", TemplateBody=json.dumps(template))
    # THEN the old version is kept beside the new one, still optimized; $LATEST and the new one are not
    assert _outputs(cfn)["VersionNumber"] == "2"
    assert _versions(lam) == ["$LATEST", "1", "2"]
    status = {
        q: lam.get_function_configuration(FunctionName="fn", Qualifier=q)["SnapStart"] for q in ("1", "2")
    }
    assert status == {
        "1": {"ApplyOn": "PublishedVersions", "OptimizationStatus": "On"},
        "2": {"ApplyOn": "None", "OptimizationStatus": "Off"},
    }
    assert lam.get_function_configuration(FunctionName="fn")["SnapStart"]["ApplyOn"] == "None"


def test_a_failing_snap_start_init_fails_the_version_and_rolls_the_stack_back(
    aws: Callable[[str], Any],
) -> None:
    # GIVEN a deployed stack on version 1
    cfn, lam = aws("cloudformation"), aws("lambda")
    cfn.create_stack(StackName="s", TemplateBody=json.dumps(_template("VersionA", "v1")))
    # WHEN an update brings code whose init fails
    cfn.update_stack(StackName="s", TemplateBody=json.dumps(_template("VersionB", "v2", init_fails=True)))
    # THEN the update is rolled back with CloudFormation's reason naming the version
    stack = cfn.describe_stacks(StackName="s")["Stacks"][0]
    assert stack["StackStatus"] == "UPDATE_ROLLBACK_COMPLETE"
    fn_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:fn"
    assert stack["StackStatusReason"] == (
        "Resource handler returned message: \"Resource of type 'AWS::Lambda::Version' with identifier "
        f"'{fn_arn}:2' did not stabilize. Status Reason is An error occurred during function initialization.\" "
        "(HandlerErrorCode: NotStabilized)"
    )
    # AND the alias stays on version 1, the failed version is gone, and $LATEST has the old code back
    assert lam.get_alias(FunctionName="fn", Name="live")["FunctionVersion"] == "1"
    assert _versions(lam) == ["$LATEST", "1"]
    # AND a stack whose first version fails is rolled back whole
    cfn.delete_stack(StackName="s")
    failing = _template("VersionA", "v1", init_fails=True)
    del failing["Outputs"]  # DescribeStacks would resolve them again (moto builds outputs lazily)
    cfn.create_stack(StackName="s", TemplateBody=json.dumps(failing))
    stack = cfn.describe_stacks(StackName="s")["Stacks"][0]
    assert stack["StackStatus"] == "ROLLBACK_COMPLETE"
    assert "did not stabilize" in stack["StackStatusReason"]
    assert [f["FunctionName"] for f in lam.list_functions()["Functions"]] == []
