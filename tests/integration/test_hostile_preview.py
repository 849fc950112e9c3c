"""A hostile pull request on the local AWS, whose CloudFormation acts as the execution role it is given: the
previews' own bootstrap (`doctable bootstrap --preview`: a qualifier of their own, the execution policy and the
boundary of the previews' names) refuses what a pull request's app could add, and the preview role reaches
nothing outside the previews.

(a) a role with AdministratorAccess, (b) a bucket policy on stg's blob bucket, (c) a role without the boundary:
each is refused by CloudFormation acting as the execution role, with AWS's reason, the stack rolled back; the
same kind of stack with a bounded role of its own deploys. The preview role (d) cannot assume the lookup role nor
the default qualifier's deploy role, and (e) cannot read stg's table or objects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.support import localaws as lt
from tests.support.cli import run_doctable

pytestmark = pytest.mark.integration

SETTINGS = """
[defaults]
table_base = "hostile"

[environments.stg]
tier = "stg"
qualifier = "hoststg"
stream = "new-and-old"

[previews]
qualifier = "hostprev"
"""
TRUST_ACCOUNT = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                 "Principal": {"AWS": f"arn:aws:iam::{lt.ACCOUNT}:root"}}]}  # fmt: skip
LAMBDA_TRUST = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                "Principal": {"Service": "lambda.amazonaws.com"}}]}  # fmt: skip


def role_arn(kind: str, qualifier: str = "hostprev") -> str:
    return f"arn:aws:iam::{lt.ACCOUNT}:role/cdk-{qualifier}-{kind}-role-{lt.ACCOUNT}-{lt.REGION}"


def session(aws: lt.LocalAWS, arn: str, client: Any | None = None) -> dict[str, str]:
    """Credentials of a session of ``arn``, assumed by ``client`` (an STS client; default the admin's)."""
    sts = client or aws.client("sts")
    found = sts.assume_role(RoleArn=arn, RoleSessionName="hostile")["Credentials"]
    return {"aws_access_key_id": found["AccessKeyId"], "aws_secret_access_key": found["SecretAccessKey"],
            "aws_session_token": found["SessionToken"]}  # fmt: skip


def refused(call: Any) -> str:
    with pytest.raises(ClientError) as caught:
        call()
    return str(caught.value.response["Error"]["Code"])


def test_a_hostile_pull_request_reaches_only_its_preview(local_aws: lt.LocalAWS, tmp_path: Path) -> None:
    settings = tmp_path / "doctable.toml"
    settings.write_text(SETTINGS)
    env = {**local_aws.env, "DOCTABLE_CONFIG": str(settings)}
    # GIVEN the previews' bootstrap of stg's template, and stg's table and blob bucket (made as the admin)
    done = run_doctable(["bootstrap", "--env", "stg", "--preview", "--json"], env=env, timeout=300)
    assert done.code == 0, done.err
    boundary = f"arn:aws:iam::{lt.ACCOUNT}:policy/{done.json()['policies'][0]['name']}"
    ddb, s3 = local_aws.client("dynamodb"), local_aws.client("s3")
    ddb.create_table(TableName="hostile-stg", BillingMode="PAY_PER_REQUEST",
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                     KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}])  # fmt: skip
    stg_bucket = f"hostile-stg-{lt.ACCOUNT}-{lt.REGION}-blobs"
    s3.create_bucket(Bucket=stg_bucket)
    s3.put_object(Bucket=stg_bucket, Key="doc/1", Body=b"stg's")
    # AND the deploy role a pull request's job assumes, passing the previews' execution role to CloudFormation
    deployer = local_aws.client("cloudformation", **session(local_aws, role_arn("deploy")))

    def stack(name: str, resources: dict[str, Any]) -> dict[str, Any]:
        deployer.create_stack(StackName=name, TemplateBody=json.dumps({"Resources": resources}),
                              RoleARN=role_arn("cfn-exec"), Capabilities=["CAPABILITY_IAM"])  # fmt: skip
        return dict(deployer.describe_stacks(StackName=name)["Stacks"][0])

    bounded = {"AssumeRolePolicyDocument": LAMBDA_TRUST, "PermissionsBoundary": boundary}
    bounded_role = {"Own": {"Type": "AWS::IAM::Role", "Properties": bounded}}
    hostile = {
        # (a) a role with AdministratorAccess (under the boundary, so that only the attachment is wrong)
        "iam:AttachRolePolicy": {"Admin": {"Type": "AWS::IAM::Role", "Properties": {
            **bounded, "ManagedPolicyArns": ["arn:aws:iam::aws:policy/AdministratorAccess"]}}},
        # (b) a bucket policy on stg's blob bucket
        "s3:PutBucketPolicy": {"Steal": {"Type": "AWS::S3::BucketPolicy", "Properties": {
            "Bucket": stg_bucket, "PolicyDocument": {"Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{stg_bucket}/*"}]}}}},
        # (c) a role without the boundary
        "iam:CreateRole": {"Free": {"Type": "AWS::IAM::Role", "Properties": {"AssumeRolePolicyDocument": LAMBDA_TRUST}}},
    }  # fmt: skip
    for n, (action, resources) in enumerate(hostile.items()):
        # WHEN a preview's stack holds it
        failed = stack(f"doctable-hostile-pr-{n + 1}", resources)
        # THEN CloudFormation, acting as the execution role, is refused the call, and the stack rolled back
        assert failed["StackStatus"] == "ROLLBACK_COMPLETE", action
        assert (
            f"/AWSCloudFormation is not authorized to perform: {action} on resource: "
            in failed["StackStatusReason"]
        )
        assert failed["StackStatusReason"].endswith("(HandlerErrorCode: AccessDenied)")
    # AND stg's bucket kept no policy, and no unbounded or admin role was left
    assert refused(lambda: s3.get_bucket_policy(Bucket=stg_bucket)) == "NoSuchBucketPolicy"
    # AND the deploy role passes its own qualifier's execution role only (the bootstrap's deploy role policy)
    other = role_arn("cfn-exec", "hnb659fds")
    assert refused(lambda: deployer.create_stack(StackName="doctable-hostile-pr-8", RoleARN=other,
                                                 TemplateBody=json.dumps({"Resources": bounded_role}))) == "AccessDenied"  # fmt: skip
    # AND a preview's own bounded role deploys through the same bootstrap
    fine = stack("doctable-hostile-pr-9", bounded_role)
    assert fine["StackStatus"] == "CREATE_COMPLETE", fine.get("StackStatusReason")

    # GIVEN the preview role, with the policy `doctable policy deployer --preview` prints
    printed = run_doctable(["policy", "deployer", "--preview", "--env", "stg", "--json", "--offline"],
                           env=env, timeout=60)  # fmt: skip
    assert printed.code == 0, printed.err
    iam = local_aws.client("iam")
    iam.create_role(RoleName="preview-ci", AssumeRolePolicyDocument=json.dumps(TRUST_ACCOUNT))
    iam.put_role_policy(RoleName="preview-ci", PolicyName="preview",
                        PolicyDocument=json.dumps(printed.json()["policy"]))  # fmt: skip
    preview = session(local_aws, f"arn:aws:iam::{lt.ACCOUNT}:role/preview-ci")
    preview_sts = local_aws.client("sts", **preview)
    # THEN (d) it may assume its own bootstrap's deploy role, never the lookup role nor the default qualifier's
    assert session(local_aws, role_arn("deploy"), preview_sts)["aws_access_key_id"]
    assert (
        refused(lambda: preview_sts.assume_role(RoleArn=role_arn("lookup"), RoleSessionName="probe"))
        == "AccessDenied"
    )
    for other in (role_arn("deploy", "hnb659fds"), role_arn("deploy", "hoststg")):
        assert (
            refused(lambda o=other: preview_sts.assume_role(RoleArn=o, RoleSessionName="probe"))
            == "AccessDenied"
        )
    # AND (e) it cannot read stg's table nor its objects
    as_preview = boto3.Session(**preview, region_name=lt.REGION)
    kw = {"endpoint_url": local_aws.info.url, "verify": local_aws.ca_bundle}
    dynamodb, s3_preview = as_preview.client("dynamodb", **kw), as_preview.client("s3", **kw)
    assert refused(lambda: dynamodb.get_item(TableName="hostile-stg", Key={"pk": {"S": "x"}})) == (
        "AccessDeniedException"
    )
    assert refused(lambda: s3_preview.get_object(Bucket=stg_bucket, Key="doc/1")) == "AccessDenied"


def test_a_stack_operation_without_a_role_acts_as_its_caller(local_aws: lt.LocalAWS) -> None:
    # GIVEN a user who may run CloudFormation but create no table
    iam = local_aws.client("iam")
    iam.create_user(UserName="cfn-only")
    allow = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "cloudformation:*", "Resource": "*"}],
    }
    iam.put_user_policy(UserName="cfn-only", PolicyName="cfn", PolicyDocument=json.dumps(allow))
    key = iam.create_access_key(UserName="cfn-only")["AccessKey"]
    cfn = local_aws.client(
        "cloudformation", aws_access_key_id=key["AccessKeyId"], aws_secret_access_key=key["SecretAccessKey"]
    )
    table = {"Type": "AWS::DynamoDB::Table", "Properties": {
        "TableName": "caller-only", "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}]}}  # fmt: skip
    # WHEN it creates a stack with a table, naming no role
    cfn.create_stack(StackName="caller-only", TemplateBody=json.dumps({"Resources": {"T": table}}))
    stack = cfn.describe_stacks(StackName="caller-only")["Stacks"][0]
    # THEN CloudFormation acted as the user: refused the table with AWS's reason, naming the user, rolled back
    assert stack["StackStatus"] == "ROLLBACK_COMPLETE"
    assert (
        f"User: arn:aws:iam::{lt.ACCOUNT}:user/cfn-only is not authorized to perform: dynamodb:CreateTable"
        in stack["StackStatusReason"]
    )
    assert "caller-only" not in local_aws.client("dynamodb").list_tables()["TableNames"]
