"""The local AWS's DynamoDB encryption at rest and resource policies (local/services/dynamodb/security.py), and
how local/auth evaluates a table's resource policy and its customer managed key (local/auth/table_access.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from local import patching, state
from local.auth import policy, table_access
from local.auth.requests import Check
from local.services.dynamodb import options as dynamodb_options
from local.services.dynamodb import security as dynamodb_security
from local.services.dynamodb import tables as dynamodb_tables

pytestmark = pytest.mark.unit

REGION = state.REGION


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    # security.py's steps run in the operations' owners: UpdateTable's (options.py) and DeleteTable's (tables.py)
    point = patching.checkpoint()
    patching.install(dynamodb_security.PATCHES, dynamodb_options.PATCHES, dynamodb_tables.PATCHES)
    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x")):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    try:
        with mock_aws():
            yield boto3.client("dynamodb", region_name=REGION), boto3.client("kms", region_name=REGION)
    finally:
        patching.rollback(point)


def _table(ddb: Any, name: str = "t", sse: dict[str, Any] | None = None) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"SSESpecification": sse} if sse else {}
    return ddb.create_table(  # type: ignore[no-any-return]
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        **kwargs,
    )["TableDescription"]


def test_customer_managed_key_is_reported_by_its_arn_even_when_given_by_id(aws: tuple[Any, Any]) -> None:
    ddb, kms = aws
    key = kms.create_key()["KeyMetadata"]
    _table(ddb, sse={"Enabled": True, "SSEType": "KMS", "KMSMasterKeyId": key["KeyId"]})
    described = ddb.describe_table(TableName="t")["Table"]
    assert described["SSEDescription"] == {
        "Status": "ENABLED",
        "SSEType": "KMS",
        "KMSMasterKeyArn": key["Arn"],
    }


def test_aws_managed_key_is_alias_aws_dynamodb_managed_by_aws(aws: tuple[Any, Any]) -> None:
    ddb, kms = aws
    _table(ddb, sse={"Enabled": True})
    arn = ddb.describe_table(TableName="t")["Table"]["SSEDescription"]["KMSMasterKeyArn"]
    metadata = kms.describe_key(KeyId="alias/aws/dynamodb")["KeyMetadata"]
    assert arn == metadata["Arn"]
    assert metadata["KeyManager"] == "AWS"


def test_aws_owned_key_shows_no_sse_description_and_update_table_switches(aws: tuple[Any, Any]) -> None:
    ddb, kms = aws
    _table(ddb)
    assert "SSEDescription" not in ddb.describe_table(TableName="t")["Table"]
    key = kms.create_key()["KeyMetadata"]
    ddb.update_table(
        TableName="t", SSESpecification={"Enabled": True, "SSEType": "KMS", "KMSMasterKeyId": key["Arn"]}
    )
    assert ddb.describe_table(TableName="t")["Table"]["SSEDescription"]["KMSMasterKeyArn"] == key["Arn"]
    ddb.update_table(TableName="t", SSESpecification={"Enabled": False})
    assert "SSEDescription" not in ddb.describe_table(TableName="t")["Table"]


def test_an_unknown_key_is_refused(aws: tuple[Any, Any]) -> None:
    ddb, _ = aws
    with pytest.raises(ClientError) as caught:
        _table(ddb, sse={"Enabled": True, "SSEType": "KMS", "KMSMasterKeyId": "alias/nope"})
    assert caught.value.response["Error"]["Code"] == "ValidationException"


def test_template_form_and_resource_policy_follow_the_template(aws: tuple[Any, Any]) -> None:
    from moto.dynamodb.models import dynamodb_backends

    ddb, kms = aws
    key = kms.create_key()["KeyMetadata"]
    arn = _table(ddb)["TableArn"]
    table = dynamodb_backends[state.ACCOUNT_ID][REGION].tables["t"]
    document = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Deny", "Principal": "*", "Action": "dynamodb:Scan", "Resource": arn}],
    }
    # WHEN a template sets the key (its SSEEnabled form) and a policy
    dynamodb_security.apply_template(
        table,
        {
            "SSESpecification": {"SSEEnabled": "true", "SSEType": "KMS", "KMSMasterKeyId": key["Arn"]},
            "ResourcePolicy": {"PolicyDocument": document},
        },
    )
    assert ddb.describe_table(TableName="t")["Table"]["SSEDescription"]["KMSMasterKeyArn"] == key["Arn"]
    assert json.loads(ddb.get_resource_policy(ResourceArn=arn)["Policy"]) == document
    # WHEN the next template drops both
    dynamodb_security.apply_template(table, {})
    assert "SSEDescription" not in ddb.describe_table(TableName="t")["Table"]
    with pytest.raises(ClientError) as caught:
        ddb.get_resource_policy(ResourceArn=arn)
    assert caught.value.response["Error"]["Code"] == "PolicyNotFoundException"


def test_delete_resource_policy_without_one_is_policy_not_found_and_a_deleted_table_drops_it(
    aws: tuple[Any, Any],
) -> None:
    ddb, _ = aws
    arn = _table(ddb)["TableArn"]
    with pytest.raises(ClientError) as caught:
        ddb.delete_resource_policy(ResourceArn=arn)
    assert caught.value.response["Error"]["Code"] == "PolicyNotFoundException"
    ddb.put_resource_policy(ResourceArn=arn, Policy=json.dumps({"Version": "2012-10-17", "Statement": []}))
    ddb.delete_table(TableName="t")
    _table(ddb)
    with pytest.raises(ClientError):
        ddb.get_resource_policy(ResourceArn=arn)


def test_table_resource_policy_explicit_deny_denies_an_admin_and_governs_indexes(
    aws: tuple[Any, Any],
) -> None:
    ddb, _ = aws
    arn = _table(ddb)["TableArn"]
    deny = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Deny",
                "Principal": "*",
                "Action": "dynamodb:Query",
                "Resource": [arn, f"{arn}/index/*"],
            }
        ],
    }
    ddb.put_resource_policy(ResourceArn=arn, Policy=json.dumps(deny))
    admin = [json.dumps({"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})]
    for resource in (arn, f"{arn}/index/gsi1"):
        request = policy.Request(
            principal="arn:aws:iam::123456789012:user/u", action="dynamodb:Query", resource=resource
        )
        decision = policy.evaluate(request, admin, table_access.resource_policy(resource))
        assert decision == policy.Decision(False, "explicit-resource")
    get = policy.Request(
        principal="arn:aws:iam::123456789012:user/u", action="dynamodb:GetItem", resource=arn
    )
    assert policy.evaluate(get, admin, table_access.resource_policy(arn)).allowed
    assert table_access.resource_policy(f"{arn}/stream/2026") is None


def test_reads_under_a_customer_managed_key_need_kms_decrypt_through_dynamodb(aws: tuple[Any, Any]) -> None:
    ddb, kms = aws
    key = kms.create_key()["KeyMetadata"]
    arn = _table(ddb, sse={"Enabled": True, "SSEType": "KMS", "KMSMasterKeyId": key["Arn"]})["TableArn"]
    _table(ddb, name="managed", sse={"Enabled": True})
    reads = [
        Check("dynamodb:GetItem", arn),
        Check("dynamodb:Query", f"{arn}/index/gsi1"),
        Check("dynamodb:PutItem", arn),
    ]
    (decrypt,) = table_access.key_checks(reads)  # one per key; a write needs none here
    assert (decrypt.action, decrypt.resource) == ("kms:Decrypt", key["Arn"])
    assert decrypt.context["kms:ViaService"] == [f"dynamodb.{REGION}.amazonaws.com"]
    managed = ddb.describe_table(TableName="managed")["Table"]["TableArn"]
    assert table_access.key_checks([Check("dynamodb:GetItem", managed)]) == []  # an AWS managed key: no grant
    # a role whose grant is conditioned on DynamoDB passes; one without the grant does not
    grant = {
        "Statement": [
            {
                "Effect": "Allow",
                "Action": "kms:Decrypt",
                "Resource": key["Arn"],
                "Condition": {"StringEquals": {"kms:ViaService": f"dynamodb.{REGION}.amazonaws.com"}},
            }
        ]
    }
    request = policy.Request(
        principal="r", action="kms:Decrypt", resource=key["Arn"], context=decrypt.context
    )
    assert policy.evaluate(request, [json.dumps(grant)]).allowed
    assert not policy.evaluate(request, []).allowed


def test_a_templates_kms_key_keeps_its_tags_policy_and_rotation(aws: tuple[Any, Any]) -> None:
    from moto.kms.models import Key

    from local.services import kms as local_kms

    patching.install(local_kms.PATCHES)
    _, kms = aws
    properties = {
        "KeyPolicy": {"Version": "2012-10-17", "Statement": []},
        "EnableKeyRotation": "true",
        "Tags": [{"Key": "ManagedBy", "Value": "ephemera"}],
    }
    key = Key.create_from_cloudformation_json("K", {"Properties": properties}, state.ACCOUNT_ID, REGION)
    assert kms.get_key_rotation_status(KeyId=key.id)["KeyRotationEnabled"] is True
    assert kms.list_resource_tags(KeyId=key.id)["Tags"] == [{"TagKey": "ManagedBy", "TagValue": "ephemera"}]
    policy = kms.get_key_policy(KeyId=key.id, PolicyName="default")["Policy"]
    assert json.loads(policy) == properties["KeyPolicy"]
    # an update in place turns rotation off and keeps the key
    Key.update_from_cloudformation_json(
        key, "K", {"Properties": {**properties, "EnableKeyRotation": False}}, state.ACCOUNT_ID, REGION
    )
    assert kms.get_key_rotation_status(KeyId=key.id)["KeyRotationEnabled"] is False
