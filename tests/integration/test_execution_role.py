"""CloudFormation on the local AWS acts as the bootstrap's execution role, as on AWS: bootstrapped by the real CDK
CLI with ``--cloudformation-execution-policies`` naming a policy that denies ``dynamodb:CreateTable``, a
`cdk deploy` fails with AWS's reason and the stack rolls back, nothing of it left; once that policy allows it (a
new default version), the same deploy succeeds."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import localaws as lt

pytestmark = pytest.mark.integration

KNOBS = {"env": "dev", "table_base": "itexec"}
ALLOW_ALL = {"Effect": "Allow", "Action": "*", "Resource": "*"}
NO_TABLES = {"Effect": "Deny", "Action": "dynamodb:CreateTable", "Resource": "*"}


@pytest.fixture(scope="module")
def aws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[lt.LocalAWS]:
    if not lt.CDK_BIN.exists():
        pytest.fail("the CDK CLI is not installed: run `npm ci` in the project root")
    with lt.private_local_aws(tmp_path_factory.mktemp("exec-aws")) as aws:
        yield aws


def bootstrap_with(aws: lt.LocalAWS, name: str, statements: list[dict[str, str]], out: Path) -> str:
    """Bootstrap with the execution role's policies replaced by the managed policy ``name`` (its ARN)."""
    document = {"Version": "2012-10-17", "Statement": statements}
    arn = aws.client("iam").create_policy(PolicyName=name, PolicyDocument=json.dumps(document))["Policy"][
        "Arn"
    ]
    lt.run_cdk(
        aws,
        ["bootstrap", f"aws://{lt.ACCOUNT}/{lt.REGION}", "--cloudformation-execution-policies", arn],
        out,
    )
    return str(arn)


def test_a_deploy_its_execution_role_may_not_make_fails_and_the_same_deploy_passes_under_one_that_may(
    aws: lt.LocalAWS, tmp_path: Path
) -> None:
    cfn = aws.client("cloudformation")
    name = lt.stack_name(KNOBS)
    # GIVEN the bootstrap's execution role may do anything but create tables
    policy = bootstrap_with(aws, "exec-no-tables", [ALLOW_ALL, NO_TABLES], tmp_path / "boot-1")
    # WHEN the stack is deployed with the real CDK CLI
    with pytest.raises(lt.CdkFailed):
        lt.deploy(aws, KNOBS, tmp_path / "deploy-1")
    # THEN the table failed with AWS's reason, as the execution role's session, and the stack rolled back
    events = cfn.describe_stack_events(StackName=name)["StackEvents"]
    failed = [
        e
        for e in events
        if e["ResourceStatus"] == "CREATE_FAILED" and e["ResourceType"] == "AWS::DynamoDB::Table"
    ]
    assert failed, [(e["LogicalResourceId"], e["ResourceStatus"]) for e in events]
    reason = failed[0]["ResourceStatusReason"]
    assert reason.startswith(
        'Resource handler returned message: "User: arn:aws:sts::123456789012:assumed-role/cdk-'
    )
    assert "/AWSCloudFormation is not authorized to perform: dynamodb:CreateTable on resource: " in reason
    assert (
        "with an explicit deny in an identity-based policy" in reason
        and "(HandlerErrorCode: AccessDenied)" in reason
    )
    stack = cfn.describe_stacks(StackName=name)["Stacks"][0]
    assert (stack["StackStatus"], stack["StackStatusReason"]) == ("ROLLBACK_COMPLETE", reason)
    leftovers = [
        r["PhysicalResourceId"] for r in cfn.list_stack_resources(StackName=name)["StackResourceSummaries"]
    ]
    assert leftovers == []
    # AND once the execution policy allows it (its new default version), the same deploy goes through
    document = json.dumps({"Version": "2012-10-17", "Statement": [ALLOW_ALL]})
    aws.client("iam").create_policy_version(PolicyArn=policy, PolicyDocument=document, SetAsDefault=True)
    deployed = lt.deploy(aws, KNOBS, tmp_path / "deploy-2")
    assert cfn.describe_stacks(StackName=name)["Stacks"][0]["StackStatus"] == "CREATE_COMPLETE"
    assert aws.client("dynamodb").describe_table(TableName=deployed.outputs["TableName"])["Table"][
        "TableStatus"
    ]
