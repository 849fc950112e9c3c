"""CloudFormation on the local AWS acts as the role a stack operation is given
(local/services/cloudformation/acting_role.py): a resource its role may not create fails with AWS's reason and
the stack rolls back; the same template deploys under a role that allows it; a function's role must be
passable (iam:PassRole); without a role nothing is checked here (the caller's own call was)."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from local.services.cloudformation import acting_role

pytestmark = pytest.mark.unit

TRUST = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
         "Principal": {"Service": "cloudformation.amazonaws.com"}}]}  # fmt: skip
TABLE = {"Type": "AWS::DynamoDB::Table", "Properties": {
    "TableName": "items-dev", "BillingMode": "PAY_PER_REQUEST",
    "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}]}}  # fmt: skip


def role(iam: Any, name: str, statements: list[dict[str, Any]]) -> str:
    arn = str(iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(TRUST))["Role"]["Arn"])
    document = {"Version": "2012-10-17", "Statement": statements}
    iam.put_role_policy(RoleName=name, PolicyName="p", PolicyDocument=json.dumps(document))
    return arn


def deploy(cfn: Any, name: str, resources: dict[str, Any], role_arn: str | None) -> dict[str, Any]:
    extra = {"RoleARN": role_arn} if role_arn else {}
    cfn.create_stack(StackName=name, TemplateBody=json.dumps({"Resources": resources}), **extra)
    return dict(cfn.describe_stacks(StackName=name)["Stacks"][0])


def test_a_resource_its_role_may_not_create_fails_and_rolls_back(local_moto: None) -> None:
    iam, cfn = (
        boto3.client("iam", region_name="us-east-1"),
        boto3.client("cloudformation", region_name="us-east-1"),
    )
    ddb = boto3.client("dynamodb", region_name="us-east-1")
    # GIVEN an execution role that may create tables named other-* only, and one that may create any
    narrow = role(iam, "cfn-narrow", [{"Effect": "Allow", "Action": "dynamodb:*",
                  "Resource": "arn:aws:dynamodb:us-east-1:123456789012:table/other-*"}])  # fmt: skip
    wide = role(iam, "cfn-wide", [{"Effect": "Allow", "Action": "dynamodb:*", "Resource": "*"}])
    # WHEN a stack with the table items-dev is created as the narrow role
    failed = deploy(cfn, "narrow", {"Items": TABLE}, narrow)
    # THEN the stack rolled back with AWS's reason, naming the session, the action and the table
    assert failed["StackStatus"] == "ROLLBACK_COMPLETE"
    reason = failed["StackStatusReason"]
    assert reason.startswith('Resource handler returned message: "User: arn:aws:sts::123456789012:assumed-role/'
                             "cfn-narrow/AWSCloudFormation is not authorized to perform: dynamodb:CreateTable on "
                             "resource: arn:aws:dynamodb:us-east-1:123456789012:table/items-dev because no "
                             "identity-based policy allows the dynamodb:CreateTable action")  # fmt: skip
    assert reason.endswith("(HandlerErrorCode: AccessDenied)")
    assert "items-dev" not in ddb.list_tables()["TableNames"]
    # AND the same template deploys as the wide role
    assert deploy(cfn, "wide", {"Items": TABLE}, wide)["StackStatus"] == "CREATE_COMPLETE"
    assert "items-dev" in ddb.list_tables()["TableNames"]
    # AND the narrow role may not delete it either: the stack's deletion fails, the table stays
    cfn.update_stack(
        StackName="wide", TemplateBody=json.dumps({"Resources": {"Items": TABLE}}), RoleARN=narrow
    )
    cfn.delete_stack(StackName="wide")
    stack = cfn.describe_stacks(StackName="wide")["Stacks"][0]
    assert stack["StackStatus"] == "DELETE_FAILED" and "dynamodb:DeleteTable" in stack["StackStatusReason"]
    assert "items-dev" in ddb.list_tables()["TableNames"]


def test_a_function_needs_its_role_passed(local_moto: None) -> None:
    iam, cfn = (
        boto3.client("iam", region_name="us-east-1"),
        boto3.client("cloudformation", region_name="us-east-1"),
    )
    fn_role = iam.create_role(RoleName="fn", AssumeRolePolicyDocument=json.dumps(TRUST))["Role"]["Arn"]
    function = {"Type": "AWS::Lambda::Function", "Properties": {
        "FunctionName": "cleanup", "Runtime": "python3.13", "Handler": "index.handler", "Role": fn_role,
        "Code": {"ZipFile": "def handler(event, context):\n    return None\n"}}}  # fmt: skip
    # GIVEN a role that may create functions but not pass roles, and one that may also pass the function's
    no_pass = role(iam, "cfn-nopass", [{"Effect": "Allow", "Action": "lambda:*", "Resource": "*"}])
    passes = role(iam, "cfn-pass", [{"Effect": "Allow", "Action": "lambda:*", "Resource": "*"},
                  {"Effect": "Allow", "Action": "iam:PassRole", "Resource": fn_role,
                   "Condition": {"StringEquals": {"iam:PassedToService": "lambda.amazonaws.com"}}}])  # fmt: skip
    # WHEN each deploys the function; THEN only the one that may pass the role succeeds
    refused = deploy(cfn, "nopass", {"Fn": function}, no_pass)
    assert refused["StackStatus"] == "ROLLBACK_COMPLETE"
    assert "iam:PassRole on resource: " + fn_role in refused["StackStatusReason"]
    assert deploy(cfn, "pass", {"Fn": function}, passes)["StackStatus"] == "CREATE_COMPLETE"


def test_without_a_role_nothing_is_checked_here(local_moto: None) -> None:
    cfn = boto3.client("cloudformation", region_name="us-east-1")
    assert deploy(cfn, "norole", {"Items": TABLE}, None)["StackStatus"] == "CREATE_COMPLETE"


def test_a_type_not_listed_is_held_to_its_registry_handlers_first_permission() -> None:
    # GIVEN a type the module lists no call for: its registry schema's create handler names its permissions
    found = acting_role.calls("AWS::SQS::Queue", "create", "jobs", {}, "us-east-1")
    assert found == [("sqs:CreateQueue", "*")]
    # AND CloudFormation's own types need nothing
    assert acting_role.calls("AWS::CDK::Metadata", "create", "x", {}, "us-east-1") == []


def test_deleting_a_stack_as_its_role_leaves_nothing_behind(local_moto: None) -> None:
    iam, cfn = (
        boto3.client("iam", region_name="us-east-1"),
        boto3.client("cloudformation", region_name="us-east-1"),
    )
    # GIVEN a stack, deployed as a role that may do anything, whose policy names its role by Ref
    wide = role(iam, "cfn-all", [{"Effect": "Allow", "Action": "*", "Resource": "*"}])
    resources = {
        "Fn": {"Type": "AWS::IAM::Role", "Properties": {"RoleName": "fn-role", "AssumeRolePolicyDocument": TRUST}},
        "Grant": {"Type": "AWS::IAM::Policy", "Properties": {"PolicyName": "grant", "Roles": [{"Ref": "Fn"}],
                  "PolicyDocument": {"Version": "2012-10-17", "Statement": [
                      {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}]}}},
    }  # fmt: skip
    assert deploy(cfn, "refs", resources, wide)["StackStatus"] == "CREATE_COMPLETE"
    # WHEN it is deleted (the policy's check reads its role's name; the role may already be gone)
    cfn.delete_stack(StackName="refs")
    # THEN nothing was created again on the way: the role is gone
    assert [r["RoleName"] for r in iam.list_roles()["Roles"] if r["RoleName"] == "fn-role"] == []


def test_roles_are_created_only_with_the_boundary_and_a_bounded_role_gets_the_intersection(
    local_moto: None,
) -> None:
    iam = boto3.client("iam", region_name="us-east-1")
    cfn = boto3.client("cloudformation", region_name="us-east-1")
    # GIVEN a boundary allowing S3 reads only, and an execution role that may create roles only with it
    limit = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}],
    }
    boundary = iam.create_policy(PolicyName="doctable-boundary", PolicyDocument=json.dumps(limit))["Policy"][
        "Arn"
    ]
    execution = role(iam, "cfn-bounded", [{"Effect": "Allow", "Action": ["iam:CreateRole", "iam:PutRolePermissionsBoundary",
                     "iam:DeleteRole"], "Resource": "*",
                     "Condition": {"StringEquals": {"iam:PermissionsBoundary": boundary}}},
                     # the handler's read of the role it made (its schema lists iam:GetRole)
                     {"Effect": "Allow", "Action": "iam:GetRole", "Resource": "*"}])  # fmt: skip

    def fn_role(name: str, bounded: bool) -> dict[str, Any]:
        props: dict[str, Any] = {"RoleName": name, "AssumeRolePolicyDocument": TRUST}
        if bounded:
            props["PermissionsBoundary"] = boundary
        return {"Role": {"Type": "AWS::IAM::Role", "Properties": props}}

    # WHEN a stack creates a role without the boundary, and another with it
    without = deploy(cfn, "unbounded", fn_role("free", bounded=False), execution)
    with_it = deploy(cfn, "bounded", fn_role("kept", bounded=True), execution)
    # THEN only the bounded one is created; the other is refused naming iam:CreateRole
    assert without["StackStatus"] == "ROLLBACK_COMPLETE"
    assert (
        "is not authorized to perform: iam:CreateRole on resource: arn:aws:iam::123456789012:role/free"
        in (without["StackStatusReason"])
    )
    assert with_it["StackStatus"] == "CREATE_COMPLETE"
    # AND the bounded role, however wide its own policy, may do only what the boundary also allows
    iam.put_role_policy(RoleName="kept", PolicyName="all", PolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))  # fmt: skip
    from local.auth import principals

    kept = "arn:aws:iam::123456789012:role/kept"
    assert principals.role_may(kept, "s", "s3:GetObject", "arn:aws:s3:::b/k").allowed
    denied = principals.role_may(kept, "s", "s3:PutObject", "arn:aws:s3:::b/k")
    assert (denied.allowed, denied.reason) == (False, "boundary")


def test_a_handlers_calls_after_its_first_are_made_as_the_role(local_moto: None) -> None:
    iam, cfn = (
        boto3.client("iam", region_name="us-east-1"),
        boto3.client("cloudformation", region_name="us-east-1"),
    )
    # GIVEN an execution role that may create and read tables, but not tag them nor turn their PITR on
    narrow = role(iam, "cfn-no-tags", [{"Effect": "Allow", "Action": ["dynamodb:CreateTable",
                  "dynamodb:DescribeTable", "dynamodb:DeleteTable"], "Resource": "*"}])  # fmt: skip
    tagged = {
        **TABLE,
        "Properties": {**TABLE["Properties"], "Tags": [{"Key": "Source", "Value": "doctable"}]},
    }
    pitr = {**TABLE, "Properties": {**TABLE["Properties"], "TableName": "items-pitr",
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True}}}  # fmt: skip
    # WHEN a table with tags, then one with PITR, is created as that role
    # THEN each rolls back naming the call after CreateTable it needed
    for name, table, action in (("tags", tagged, "dynamodb:TagResource"),
                                ("pitr", pitr, "dynamodb:UpdateContinuousBackups")):  # fmt: skip
        failed = deploy(cfn, name, {"Items": table}, narrow)
        assert failed["StackStatus"] == "ROLLBACK_COMPLETE"
        assert f"is not authorized to perform: {action} on resource: " in failed["StackStatusReason"]
    # AND a table asking for neither is created by the same role
    assert deploy(cfn, "plain", {"Items": TABLE}, narrow)["StackStatus"] == "CREATE_COMPLETE"
    # AND the calls listed follow the properties: PITR turned off asks for no call
    off = {**TABLE["Properties"], "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": False}}
    listed = [a for a, _ in acting_role.calls("AWS::DynamoDB::Table", "create", "t", off, "us-east-1")]
    assert listed == ["dynamodb:CreateTable", "dynamodb:DescribeTable"]


def test_delete_stacks_own_role_is_the_one_its_deletion_acts_as(local_moto: None) -> None:
    iam, cfn = (
        boto3.client("iam", region_name="us-east-1"),
        boto3.client("cloudformation", region_name="us-east-1"),
    )
    ddb = boto3.client("dynamodb", region_name="us-east-1")
    # GIVEN a table created as a role that may do anything with tables
    wide = role(iam, "cfn-tables", [{"Effect": "Allow", "Action": "dynamodb:*", "Resource": "*"}])
    assert deploy(cfn, "owned", {"Items": TABLE}, wide)["StackStatus"] == "CREATE_COMPLETE"
    # WHEN it is deleted naming a role that may not delete tables
    keeps = role(
        iam, "cfn-keeps", [{"Effect": "Allow", "Action": ["dynamodb:DescribeTable"], "Resource": "*"}]
    )
    cfn.delete_stack(StackName="owned", RoleARN=keeps)
    # THEN the deletion acted as that role: refused, the table kept, the stack DELETE_FAILED with the reason
    stack = cfn.describe_stacks(StackName="owned")["Stacks"][0]
    assert stack["StackStatus"] == "DELETE_FAILED"
    assert (
        "assumed-role/cfn-keeps/AWSCloudFormation is not authorized to perform: dynamodb:DeleteTable"
        in (stack["StackStatusReason"])
    )
    assert "items-dev" in ddb.list_tables()["TableNames"]
    # AND deleted again without a role, it acts as that last role still (the stack keeps the role it was given)
    cfn.delete_stack(StackName="owned")
    assert cfn.describe_stacks(StackName="owned")["Stacks"][0]["StackStatus"] == "DELETE_FAILED"


def test_a_stack_is_deleted_in_reverse_dependency_order(local_moto: None) -> None:
    iam, cfn = (
        boto3.client("iam", region_name="us-east-1"),
        boto3.client("cloudformation", region_name="us-east-1"),
    )
    document = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}],
    }
    boundary = iam.create_policy(PolicyName="b", PolicyDocument=json.dumps(document))["Policy"]["Arn"]
    # GIVEN an execution role that may take a policy off a role only while that role carries the boundary
    bounded = {"StringEquals": {"iam:PermissionsBoundary": boundary}}
    execution = role(iam, "cfn-ordered", [
        {"Effect": "Allow", "Action": ["iam:CreateRole", "iam:PutRolePolicy", "iam:DeleteRolePolicy"],
         "Resource": "*", "Condition": bounded},
        {"Effect": "Allow", "Action": ["iam:GetRole", "iam:DeleteRole", "iam:ListAttachedRolePolicies",
                                       "iam:ListRolePolicies"], "Resource": "*"}])  # fmt: skip
    resources = {
        "Worker": {"Type": "AWS::IAM::Role", "Properties": {"AssumeRolePolicyDocument": TRUST,
                                                             "PermissionsBoundary": boundary}},
        "Reads": {"Type": "AWS::IAM::Policy", "Properties": {"PolicyName": "reads", "Roles": [{"Ref": "Worker"}],
                                                              "PolicyDocument": document}},
    }  # fmt: skip
    assert deploy(cfn, "ordered", resources, execution)["StackStatus"] == "CREATE_COMPLETE"
    # WHEN the stack is deleted THEN the policy goes before its role (the role still bounded), and nothing is left
    stack_id = cfn.describe_stacks(StackName="ordered")["Stacks"][0]["StackId"]
    cfn.delete_stack(StackName="ordered")
    assert cfn.describe_stacks(StackName=stack_id)["Stacks"][0]["StackStatus"] == "DELETE_COMPLETE"
    assert [r["RoleName"] for r in iam.list_roles()["Roles"] if "Worker" in r["RoleName"]] == []
