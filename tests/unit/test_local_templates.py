"""Resources from templates as CloudFormation makes them, on the local AWS's adaptations in process: a role's
managed policies (local/services/iam.py) and a log group's retention and Arn (local/services/logs.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from local import state
from tests.unit.test_local_kinesis_destination import isolated_services

pytestmark = pytest.mark.unit

REGION = state.REGION
BASIC = "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
    ],
}


@pytest.fixture
def cfn(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x")):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with isolated_services(), mock_aws():
        yield boto3.client("cloudformation", region_name=REGION)


def _deploy(
    cfn: Any, resources: dict[str, Any], outputs: dict[str, Any], *, update: bool = False
) -> dict[str, str]:
    body = json.dumps({"Resources": resources, "Outputs": outputs})
    (cfn.update_stack if update else cfn.create_stack)(StackName="s", TemplateBody=body)
    stack = cfn.describe_stacks(StackName="s")["Stacks"][0]
    assert stack["StackStatus"] in ("CREATE_COMPLETE", "UPDATE_COMPLETE"), stack.get("StackStatusReason")
    return {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}


def test_a_templates_role_attaches_its_managed_policies_and_updates_them(cfn: Any) -> None:
    # GIVEN a role with an AWS managed policy and an inline policy
    def role(actions: list[str]) -> dict[str, Any]:
        inline = {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": actions, "Resource": "*"}],
        }
        return {
            "Role": {
                "Type": "AWS::IAM::Role",
                "Properties": {
                    "AssumeRolePolicyDocument": TRUST,
                    "ManagedPolicyArns": [BASIC],
                    "Policies": [{"PolicyName": "reads", "PolicyDocument": inline}],
                },
            }
        }

    outputs = _deploy(cfn, role(["dynamodb:GetItem"]), {"Name": {"Value": {"Ref": "Role"}}})
    iam = boto3.client("iam", region_name=REGION)
    # THEN the managed policy is attached (loaded on demand, as AWS has it) and the inline policy is the template's
    attached = iam.list_attached_role_policies(RoleName=outputs["Name"])["AttachedPolicies"]
    assert [p["PolicyArn"] for p in attached] == [BASIC]
    # WHEN the inline policy changes THEN the same role has the new one (updated in place, not replaced)
    again = _deploy(
        cfn, role(["dynamodb:GetItem", "dynamodb:Query"]), {"Name": {"Value": {"Ref": "Role"}}}, update=True
    )
    assert again["Name"] == outputs["Name"]
    document = iam.get_role_policy(RoleName=outputs["Name"], PolicyName="reads")["PolicyDocument"]
    assert document["Statement"][0]["Action"] == ["dynamodb:GetItem", "dynamodb:Query"]


def test_a_roles_update_keeps_the_policies_other_resources_put_on_it(cfn: Any) -> None:
    # GIVEN a role whose inline policy is an AWS::IAM::Policy resource of its own (as the CDK writes a role's
    # default policy, and the CDK bootstrap its roles')
    def template(description: str) -> dict[str, Any]:
        document = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:GetObject",
                    "Resource": "*"}]}  # fmt: skip
        return {
            "Role": {"Type": "AWS::IAM::Role",
                     "Properties": {"AssumeRolePolicyDocument": TRUST, "Description": description}},
            "Default": {"Type": "AWS::IAM::Policy", "Properties": {
                "PolicyName": "default", "Roles": [{"Ref": "Role"}], "PolicyDocument": document}},
        }  # fmt: skip

    outputs = _deploy(cfn, template("one"), {"Name": {"Value": {"Ref": "Role"}}})
    # WHEN only the role changes (its description)
    _deploy(cfn, template("two"), {"Name": {"Value": {"Ref": "Role"}}}, update=True)
    # THEN the policy resource's inline policy is still on the role (moto's update had taken it off: a second
    # `cdk bootstrap` left the file-publishing role without its rights)
    iam = boto3.client("iam", region_name=REGION)
    assert iam.list_role_policies(RoleName=outputs["Name"])["PolicyNames"] == ["default"]


def test_a_templates_log_group_keeps_its_retention_and_its_arn_form(cfn: Any) -> None:
    # GIVEN a log group with a retention, its Arn an output
    def group(days: int) -> dict[str, Any]:
        return {
            "Logs": {
                "Type": "AWS::Logs::LogGroup",
                "Properties": {"LogGroupName": "/doctable/t", "RetentionInDays": days},
            }
        }

    outputs = {"Arn": {"Value": {"Fn::GetAtt": ["Logs", "Arn"]}}}
    created = _deploy(cfn, group(14), outputs)
    logs = boto3.client("logs", region_name=REGION)
    # THEN it keeps the retention, and its Arn is CloudFormation's form (ending in :*)
    described = logs.describe_log_groups(logGroupNamePrefix="/doctable/t")["logGroups"]
    assert [g["retentionInDays"] for g in described] == [14]
    assert created["Arn"] == f"arn:aws:logs:{REGION}:{state.ACCOUNT_ID}:log-group:/doctable/t:*"
    # WHEN the retention changes THEN the same group has the new one
    _deploy(cfn, group(30), outputs, update=True)
    assert [
        g["retentionInDays"] for g in logs.describe_log_groups(logGroupNamePrefix="/doctable/t")["logGroups"]
    ] == [30]


@pytest.mark.parametrize(("policy", "kept"), [("Retain", True), ("Delete", False)])
def test_a_replaced_resource_is_kept_when_its_update_replace_policy_is_retain(
    cfn: Any, policy: str, kept: bool
) -> None:
    # GIVEN a bucket with its UpdateReplacePolicy  WHEN its name changes (a create-only property: a replacement)
    def bucket(name: str) -> dict[str, Any]:
        return {
            "Bucket": {
                "Type": "AWS::S3::Bucket",
                "UpdateReplacePolicy": policy,
                "Properties": {"BucketName": name},
            }
        }

    _deploy(cfn, bucket("doctable-old-name"), {})
    _deploy(cfn, bucket("doctable-new-name"), {}, update=True)
    # THEN the new bucket exists, and the old one stays only under Retain (AWS: UpdateReplacePolicy attribute)
    names = {b["Name"] for b in boto3.client("s3", region_name=REGION).list_buckets()["Buckets"]}
    assert "doctable-new-name" in names
    assert ("doctable-old-name" in names) is kept
