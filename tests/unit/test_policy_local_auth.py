"""The local AWS evaluates ``lambda:FunctionArn`` on a call about one event-source mapping, as AWS does: the
condition `doctable policy` scopes the mapping's calls with (local/auth/lambda_access.py)."""

from __future__ import annotations

import io
import zipfile

import boto3
import pytest
from moto import mock_aws

from local import state
from local.auth import lambda_access, policy, requests

pytestmark = pytest.mark.unit

FUNCTION = f"arn:aws:lambda:{state.REGION}:{state.ACCOUNT_ID}:function:doctable-items-dev-Consumer-1:live"
SCOPED = {
    "Effect": "Allow",
    "Action": "lambda:GetEventSourceMapping",
    "Resource": f"arn:aws:lambda:{state.REGION}:{state.ACCOUNT_ID}:event-source-mapping:*",
    "Condition": {"ArnLike": {"lambda:FunctionArn": "arn:aws:lambda:*:*:function:doctable-items-dev-*"}},
}


def decide(check: requests.Check) -> bool:
    request = policy.Request("arn:aws:iam::123456789012:user/op", check.action, check.resource, check.context)
    return policy.evaluate(request, [{"Version": "2012-10-17", "Statement": [SCOPED]}]).allowed


def test_a_mapping_call_carries_the_function_it_invokes(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a mapping of a function of the stack, and one of another function
    arns = {"ours": FUNCTION, "theirs": FUNCTION.replace("doctable-items-dev-", "other-")}
    monkeypatch.setattr(lambda_access, "mapping_function_arn", lambda uuid, region: arns.get(uuid))
    # WHEN each is read THEN the condition key names its function, and the scoped statement allows only ours
    ours = requests._lambda_check("GetEventSourceMapping", {"UUID": "ours"}, state.REGION)
    assert ours.context == {"lambda:FunctionArn": [FUNCTION]}
    assert decide(ours)
    assert not decide(requests._lambda_check("GetEventSourceMapping", {"UUID": "theirs"}, state.REGION))
    # AND a mapping that does not exist carries no key: the scoped statement does not apply
    assert not decide(requests._lambda_check("GetEventSourceMapping", {"UUID": "gone"}, state.REGION))
    # AND the key is AWS's for Get/Update/DeleteEventSourceMapping only
    assert lambda_access.mapping_context("ListEventSourceMappings", "ours", state.REGION) == {}


def test_the_function_arn_is_read_from_the_mapping() -> None:
    with mock_aws():
        ddb = boto3.client("dynamodb", region_name=state.REGION)
        stream = ddb.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        )["TableDescription"]["LatestStreamArn"]
        role = boto3.client("iam", region_name=state.REGION).create_role(
            RoleName="r", AssumeRolePolicyDocument="{}"
        )["Role"]["Arn"]
        code = io.BytesIO()
        with zipfile.ZipFile(code, "w") as archive:
            archive.writestr("h.py", "def handler(e, c):\n    return {}\n")
        lam = boto3.client("lambda", region_name=state.REGION)
        function = lam.create_function(
            FunctionName="f",
            Runtime="python3.13",
            Role=role,
            Handler="h.handler",
            Code={"ZipFile": code.getvalue()},
        )["FunctionArn"]
        uuid = lam.create_event_source_mapping(
            EventSourceArn=stream, FunctionName=function, StartingPosition="LATEST"
        )["UUID"]
        assert lambda_access.mapping_function_arn(uuid, state.REGION) == function
        assert lambda_access.mapping_function_arn("no-such-mapping", state.REGION) is None
