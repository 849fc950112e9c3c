"""Encryption at rest and the table's resource policy on the local AWS, deployed with the real CDK CLI.

A stack of its own with ``encryption=customer-managed`` and a resource policy (the shipped example, which denies
requests without TLS and principals of other accounts, plus a Deny of Scan so that an explicit resource-policy
deny can be shown to an administrator of this account). verify passes; the policy is enforced with AWS's
AccessDeniedException messages; a read without kms:Decrypt on the key is refused while the runtime policy's
grant suffices; then encryption is changed on the live stack (day 2) and verify passes after each change, the
data kept.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from contract import names
from tests.support import localaws as lt
from tests.support.cli import context_args, run_doctable

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "table-policy.json"
BASE = {"env": "dev", "table_base": "itsec", "stream": "new-and-old"}
ADMIN = f"arn:aws:iam::{lt.ACCOUNT}:user/doctable-local-deployer"
KEPT = {"pk": {"S": "kept"}, "sk": {"S": "doc"}, "body": {"S": "survives every change"}}


def _error(call: Callable[[], Any]) -> dict[str, str]:
    with pytest.raises(ClientError) as caught:
        call()
    return dict(caught.value.response["Error"])


@pytest.fixture(scope="module")
def policy_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    document = json.loads(EXAMPLE.read_text())
    document["Statement"].append(
        {
            "Sid": "NoScans",
            "Effect": "Deny",
            "Principal": "*",
            "Action": "dynamodb:Scan",
            "Resource": "{{table_arn}}",
        }
    )
    path = tmp_path_factory.mktemp("policy") / "table-policy.json"
    path.write_text(json.dumps(document))
    return str(path)


@pytest.fixture(scope="module")
def knobs(policy_file: str) -> dict[str, str]:
    return {**BASE, "encryption": "customer-managed", "resource_policy": policy_file}


@pytest.fixture(scope="module")
def stack(deploy: Callable[..., lt.Deployed], local_aws: lt.LocalAWS, knobs: dict[str, str]) -> lt.Deployed:
    deployed = deploy(knobs)
    local_aws.client("dynamodb").put_item(TableName=deployed.outputs[names.OUT_TABLE_NAME], Item=KEPT)
    return deployed


def verify(aws: lt.LocalAWS, workdir: Path, knobs: dict[str, str]) -> str:
    env = {**aws.env, "DOCTABLE_STATE_DIR": str(workdir / "state")}
    result = run_doctable(["verify", "--timeout", "60", *context_args(knobs)], env=env, timeout=600)
    assert result.code == 0, result.out + result.err
    return result.out


def rows(output: str) -> dict[str, str]:
    """verify's text table: check label -> its whole line."""
    return {line.split("  ")[0].strip(): line for line in output.splitlines() if "  " in line}


def test_customer_managed_key_and_policy_are_live_and_verify_passes(
    local_aws: lt.LocalAWS, stack: lt.Deployed, knobs: dict[str, str], tmp_path: Path
) -> None:
    # GIVEN the deployed stack
    ddb, kms = local_aws.client("dynamodb"), local_aws.client("kms")
    table = ddb.describe_table(TableName=stack.outputs[names.OUT_TABLE_NAME])["Table"]
    key_arn = stack.outputs[names.OUT_KMS_KEY_ARN]
    # THEN DescribeTable reports the stack's key, which rotates, and the resource policy is attached
    assert table["SSEDescription"] == {"Status": "ENABLED", "SSEType": "KMS", "KMSMasterKeyArn": key_arn}
    assert kms.get_key_rotation_status(KeyId=key_arn)["KeyRotationEnabled"] is True
    policy = json.loads(ddb.get_resource_policy(ResourceArn=table["TableArn"])["Policy"])
    assert {s["Sid"] for s in policy["Statement"]} == {"DenyWithoutTLS", "DenyOtherAccounts", "NoScans"}
    assert table["TableArn"] in json.dumps(policy) and "{{" not in json.dumps(policy)
    # AND verify passes, its encryption and policy rows included
    out = verify(local_aws, tmp_path, knobs)
    assert "PASS" in rows(out)["encryption at rest as declared"]
    assert "PASS" in rows(out)["table resource policy as declared"]


def test_the_resource_policy_denies_as_aws_does(local_aws: lt.LocalAWS, stack: lt.Deployed) -> None:
    table_name = stack.outputs[names.OUT_TABLE_NAME]
    arn = stack.outputs[names.OUT_TABLE_ARN]
    ddb = local_aws.client("dynamodb")
    # An explicit Deny in the table's policy beats the administrator's Allow
    error = _error(lambda: ddb.scan(TableName=table_name))
    assert error["Code"] == "AccessDeniedException"
    assert error["Message"] == (
        f"User: {ADMIN} is not authorized to perform: dynamodb:Scan on resource: {arn} "
        "with an explicit deny in a resource-based policy"
    )
    # A request that did not arrive over TLS is denied by the example's first statement
    plain = local_aws.client("dynamodb", url=local_aws.http_url)
    error = _error(lambda: plain.get_item(TableName=table_name, Key={"pk": KEPT["pk"], "sk": KEPT["sk"]}))
    assert error["Code"] == "AccessDeniedException"
    assert (
        "dynamodb:GetItem" in error["Message"]
        and "explicit deny in a resource-based policy" in error["Message"]
    )
    # What the policy does not deny still works over TLS
    assert ddb.get_item(TableName=table_name, Key={"pk": KEPT["pk"], "sk": KEPT["sk"]})["Item"] == KEPT


@pytest.fixture
def reader(local_aws: lt.LocalAWS, stack: lt.Deployed) -> Iterator[tuple[Any, dict[str, str]]]:
    """A user allowed dynamodb:GetItem on the table and nothing on its key."""
    iam = local_aws.client("iam")
    iam.create_user(UserName="sec-reader")
    grant = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": stack.outputs["TableArn"]}
        ],
    }
    iam.put_user_policy(UserName="sec-reader", PolicyName="read", PolicyDocument=json.dumps(grant))
    key = iam.create_access_key(UserName="sec-reader")["AccessKey"]
    credentials = {"aws_access_key_id": key["AccessKeyId"], "aws_secret_access_key": key["SecretAccessKey"]}
    yield iam, credentials
    iam.delete_access_key(UserName="sec-reader", AccessKeyId=key["AccessKeyId"])
    for name in iam.list_user_policies(UserName="sec-reader")["PolicyNames"]:
        iam.delete_user_policy(UserName="sec-reader", PolicyName=name)
    iam.delete_user(UserName="sec-reader")


def test_a_read_needs_kms_decrypt_on_the_customer_managed_key(
    local_aws: lt.LocalAWS, stack: lt.Deployed, reader: tuple[Any, dict[str, str]]
) -> None:
    iam, credentials = reader
    table_name, key_arn = stack.outputs[names.OUT_TABLE_NAME], stack.outputs[names.OUT_KMS_KEY_ARN]
    user_arn = f"arn:aws:iam::{lt.ACCOUNT}:user/sec-reader"
    ddb = local_aws.client("dynamodb", **credentials)
    key = {"pk": KEPT["pk"], "sk": KEPT["sk"]}
    # WHEN the user reads without a grant on the key
    error = _error(lambda: ddb.get_item(TableName=table_name, Key=key))
    # THEN it is refused naming kms:Decrypt on that key
    assert error["Code"] == "AccessDeniedException"
    assert error["Message"] == (
        f"User: {user_arn} is not authorized to perform: kms:Decrypt on resource: {key_arn} "
        "because no identity-based policy allows the kms:Decrypt action"
    )
    # WHEN it gets the runtime policy (whose KMS grant is the key's, through DynamoDB only)
    iam.attach_user_policy(UserName="sec-reader", PolicyArn=stack.outputs[names.OUT_RUNTIME_POLICY_ARN])
    try:
        assert ddb.get_item(TableName=table_name, Key=key)["Item"] == KEPT
    finally:
        iam.detach_user_policy(UserName="sec-reader", PolicyArn=stack.outputs[names.OUT_RUNTIME_POLICY_ARN])


def preflight_changes(aws: lt.LocalAWS, knobs: dict[str, str]) -> dict[str, dict[str, Any]]:
    """preflight's CHANGE findings for a deploy of ``knobs``, by code."""
    result = run_doctable(["preflight", "--json", *context_args(knobs)], env=aws.env, timeout=300)
    assert result.code == 0, result.out + result.err
    return {f["code"]: f for f in result.json()["findings"] if f["level"] == "CHANGE"}


def test_day2_encryption_changes_on_the_live_stack_keep_the_data_and_verify_passes(
    local_aws: lt.LocalAWS,
    stack: lt.Deployed,
    knobs: dict[str, str],
    deploy: Callable[..., lt.Deployed],
    tmp_path: Path,
) -> None:
    ddb, kms = local_aws.client("dynamodb"), local_aws.client("kms")
    table_name = stack.outputs[names.OUT_TABLE_NAME]

    # customer-managed -> aws-managed: preflight names the key change, destructive (the gate stops it)
    managed = {**knobs, "encryption": "aws-managed"}
    changes = preflight_changes(local_aws, managed)
    key = changes["key.changed"]
    assert key["destructive"]
    assert key["before"] == {"encryption": "customer-managed", "key": stack.outputs[names.OUT_KMS_KEY_ARN]}
    assert key["after"] == {"encryption": "aws-managed", "key": None}
    deployed = deploy(managed)
    assert names.OUT_KMS_KEY_ARN not in deployed.outputs
    sse = ddb.describe_table(TableName=table_name)["Table"]["SSEDescription"]
    assert sse["KMSMasterKeyArn"] == kms.describe_key(KeyId="alias/aws/dynamodb")["KeyMetadata"]["Arn"]
    assert "PASS" in rows(verify(local_aws, tmp_path, managed))["encryption at rest as declared"]

    # aws-managed -> aws-owned, and the resource policy removed
    owned = {**BASE, "encryption": "aws-owned", "resource_policy": "off"}
    changes = preflight_changes(local_aws, owned)
    assert set(changes) >= {"key.changed", "resource_policy.changed"}
    deploy(owned)
    described = ddb.describe_table(TableName=table_name)["Table"]
    assert "SSEDescription" not in described
    error = _error(lambda: ddb.get_resource_policy(ResourceArn=described["TableArn"]))
    assert error["Code"] == "PolicyNotFoundException"
    out = verify(local_aws, tmp_path, owned)
    assert "PASS" in rows(out)["encryption at rest as declared"]
    assert "PASS" in rows(out)["table resource policy as declared"]
    # the item written before every change is still there, and a scan is no longer denied
    assert ddb.get_item(TableName=table_name, Key={"pk": KEPT["pk"], "sk": KEPT["sk"]})["Item"] == KEPT
    assert ddb.scan(TableName=table_name)["Count"] >= 1
