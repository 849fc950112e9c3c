"""The local AWS itself: start/stop/env, the start-up check, and Lambda without Docker through the Invoke API."""

from __future__ import annotations

import base64
import io
import json
import zipfile

import pytest

from contract import names
from local import api, compat
from local.patching import Target
from tests.support import localaws as lt
from tests.support import s3_model

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

HANDLER = """
import json, os, sys, time
import boto3

def handler(event, context):
    action = event.get("action")
    print("event", json.dumps(event))
    if action == "fail":
        raise ValueError("asked to fail")
    if action == "sleep":
        time.sleep(event["seconds"])
    if action == "exit":
        sys.exit(3)
    if action == "tables":
        return boto3.client("dynamodb").list_tables()["TableNames"]
    print("second line", file=sys.stderr)
    return {
        "memory": os.environ["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"],
        "name": os.environ["AWS_LAMBDA_FUNCTION_NAME"],
        "greeting": os.environ.get("GREETING"),
        "endpoint": os.environ.get("AWS_ENDPOINT_URL"),
        "remaining_ms": context.get_remaining_time_in_millis(),
        "request_id": context.aws_request_id,
        "pid": os.getpid(),
        "powertools": __import__("importlib.util").util.find_spec("aws_lambda_powertools") is not None,
    }
"""


def _zip(source: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("app.py", source)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def probe(local_aws: lt.LocalAWS) -> str:
    iam = local_aws.client("iam")
    role = iam.create_role(
        RoleName="probe-role", AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17"})
    )
    # What the probe does as its role (IAM is enforced): list tables, and Lambda writing its logs.
    grants = {
        "Effect": "Allow",
        "Action": ["dynamodb:ListTables", "logs:CreateLogStream", "logs:PutLogEvents"],
    }
    iam.put_role_policy(
        RoleName="probe-role",
        PolicyName="probe",
        PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [dict(grants, Resource="*")]}),
    )
    local_aws.client("lambda").create_function(
        FunctionName="probe",
        Runtime="python3.13",
        Role=role["Role"]["Arn"],
        Handler="app.handler",
        Code={"ZipFile": _zip(HANDLER)},
        Timeout=2,
        MemorySize=512,
        Environment={"Variables": {"GREETING": "hello"}},
    )
    return "probe"


def _invoke(aws: lt.LocalAWS, event: dict, **kwargs: str) -> tuple[dict, object]:
    response = aws.client("lambda").invoke(FunctionName="probe", Payload=json.dumps(event).encode(), **kwargs)
    return response, json.loads(response["Payload"].read() or b"null")


def test_up_is_idempotent_and_env_points_at_it(local_aws: lt.LocalAWS) -> None:
    again = api.start(local_aws.info.port, local_aws.directory)
    assert again.pid == local_aws.info.pid
    assert api.running(local_aws.directory) == local_aws.info
    env = dict(line.removeprefix("export ").split("=", 1) for line in api.env_lines(local_aws.info.port))
    assert env["AWS_ENDPOINT_URL"] == f"https://localhost:{local_aws.info.port}"
    assert env["DOCTABLE_DEPLOY_TARGET"] == "local"
    assert env["CDK_DEFAULT_ACCOUNT"] == "123456789012" and env["AWS_REGION"] == env["CDK_DEFAULT_REGION"]


def test_compat_check_names_what_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    from local import server

    compat.check(server.declared())
    monkeypatch.setattr(compat, "PINNED_MOTO", "0.0.1")
    with pytest.raises(compat.CompatError) as excinfo:
        compat.check([Target("moto.awslambda.models", "LambdaFunction.gone")])
    assert "moto.awslambda.models.LambdaFunction.gone is gone" in str(excinfo.value)
    assert "local/ is written against moto 0.0.1" in str(excinfo.value)


def test_powertools_parameters_are_seeded(local_aws: lt.LocalAWS) -> None:
    ssm = local_aws.client("ssm")
    lam = local_aws.client("lambda")
    for arch in ("arm64", "x86_64"):
        # The parameter the stack reads; the stand-in layer is seeded under the installed Powertools version.
        value = ssm.get_parameter(Name=names.powertools_layer_parameter(arch))["Parameter"]["Value"]
        assert f"AWSLambdaPowertoolsPythonV3-python313-{arch}" in value
        name, version = value.split(":")[6:8]
        assert lam.get_layer_version(LayerName=name, VersionNumber=int(version))["LayerVersionArn"] == value


def test_public_powertools_layer_arn_provides_powertools(local_aws: lt.LocalAWS, probe: str) -> None:
    lam = local_aws.client("lambda")
    role = lam.get_function(FunctionName=probe)["Configuration"]["Role"]
    public = "arn:aws:lambda:us-east-1:017000801446:layer:AWSLambdaPowertoolsPythonV3-python313-x86_64:18"
    lam.create_function(
        FunctionName="probe-layer", Runtime="python3.13", Role=role, Handler="app.handler",
        Code={"ZipFile": _zip(HANDLER)}, Layers=[public], Timeout=10,
    )  # fmt: skip
    body = json.loads(
        lam.invoke(FunctionName="probe-layer", Payload=b'{"action": "hello"}')["Payload"].read()
    )
    assert body["powertools"] is True


def test_invoke_runs_the_code_with_its_configuration(local_aws: lt.LocalAWS, probe: str) -> None:
    response, body = _invoke(local_aws, {"action": "hello"}, LogType="Tail")
    assert "FunctionError" not in response
    assert body["memory"] == "512" and body["name"] == "probe" and body["greeting"] == "hello"
    assert body["endpoint"] == local_aws.info.url
    assert 0 < body["remaining_ms"] <= 2000
    assert body["powertools"] is False, "no layer: Powertools must not leak in from the venv"
    tail = base64.b64decode(response["LogResult"]).decode()
    assert "second line" in tail
    # Warm: the same execution environment serves the next invocation.
    _, again = _invoke(local_aws, {"action": "hello"})
    assert again["pid"] == body["pid"] and again["request_id"] != body["request_id"]
    # Its AWS calls come back to the local endpoint.
    local_aws.client("dynamodb").create_table(
        TableName="probe-table",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    _, tables = _invoke(local_aws, {"action": "tables"})
    assert "probe-table" in tables


def test_invoke_logs_like_lambda(local_aws: lt.LocalAWS, probe: str) -> None:
    since = lt.now_ms()
    response, body = _invoke(local_aws, {"action": "hello"})
    logs = local_aws.client("logs")

    def lines() -> list[str]:
        events = logs.filter_log_events(logGroupName="/aws/lambda/probe", startTime=since)["events"]
        return [e["message"] for e in events]

    messages = lt.wait_for(
        lambda: [m for m in lines() if m.startswith("REPORT")] and lines(), what="REPORT line"
    )
    request_id = body["request_id"]
    assert f"START RequestId: {request_id} Version: $LATEST" in messages
    assert f"END RequestId: {request_id}" in messages
    assert any(
        m.startswith(f"REPORT RequestId: {request_id}\tDuration:") and "Memory Size: 512 MB" in m
        for m in messages
    )
    assert any(m.startswith("event ") for m in messages) and "second line" in messages
    streams = logs.describe_log_streams(logGroupName="/aws/lambda/probe")["logStreams"]
    assert all("/[$LATEST]" in s["logStreamName"] for s in streams)


def test_errors_timeouts_and_crashes_are_function_errors(local_aws: lt.LocalAWS, probe: str) -> None:
    response, body = _invoke(local_aws, {"action": "fail"})
    assert response["FunctionError"] == "Unhandled"
    assert body["errorType"] == "ValueError" and body["errorMessage"] == "asked to fail"

    response, body = _invoke(local_aws, {"action": "sleep", "seconds": 10})
    assert response["FunctionError"] == "Unhandled"
    assert "Task timed out after 2.00 seconds" in body["errorMessage"]

    response, body = _invoke(local_aws, {"action": "exit"})
    assert response["FunctionError"] == "Unhandled" and body["errorType"] == "Runtime.ExitError"

    response, body = _invoke(local_aws, {"action": "hello"})  # a fresh environment replaces the dead one
    assert "FunctionError" not in response and body["greeting"] == "hello"


def test_event_invocations_are_accepted(local_aws: lt.LocalAWS, probe: str) -> None:
    response = local_aws.client("lambda").invoke(
        FunctionName="probe",
        InvocationType="Event",
        Payload=json.dumps({"action": "sleep", "seconds": 1}).encode(),
    )
    assert response["StatusCode"] == 202


# ---------------------------------------------------------------------------------------------- the S3 model
def test_the_tests_s3_model_answers_conditional_deletes_as_the_local_aws_does(local_aws: lt.LocalAWS) -> None:
    """tests/support/s3_model.py (the consumer's unit tests of cleanup races run on it) against the local AWS's
    DeleteObjects, key by key: the ETag matches, another ETag, ``*``, a missing key with and without an ETag."""
    s3 = local_aws.client("s3")
    bucket = "doctable-s3-model"
    s3.create_bucket(Bucket=bucket)
    for key in ("same", "other", "star", "plain"):
        s3.put_object(Bucket=bucket, Key=key, Body=key.encode())
    model = {o["Key"]: o["ETag"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]}
    objects = [
        {"Key": "same", "ETag": model["same"]},
        {"Key": "other", "ETag": '"0123456789abcdef0123456789abcdef"'},
        {"Key": "star", "ETag": "*"},
        {"Key": "plain"},
        {"Key": "gone", "ETag": '"0123456789abcdef0123456789abcdef"'},
        {"Key": "gone-plain"},
    ]
    # WHEN the same DeleteObjects goes to the local AWS and to the model
    answered = s3.delete_objects(Bucket=bucket, Delete={"Objects": objects, "Quiet": True})
    modelled = s3_model.delete_objects(model, {"Objects": objects, "Quiet": True})
    # THEN each key gets the same verdict, and the same objects are left
    assert sorted((e["Key"], e["Code"]) for e in answered.get("Errors", [])) == sorted(
        (e["Key"], e["Code"]) for e in modelled.get("Errors", [])
    ) == [("gone", "NoSuchKey"), ("other", "PreconditionFailed")]  # fmt: skip
    left = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", []))
    assert left == sorted(model) == ["other"]
