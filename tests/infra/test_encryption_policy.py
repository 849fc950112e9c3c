"""Encryption at rest (table, stream, buckets) and the table's resource policy, over the encryption knob's values."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contract.knobs import ENCRYPTION_VALUES, ENV_VALUES, RETAINING_TIERS
from tests.infra.synth import only, resources, synth

pytestmark = pytest.mark.infra

BORROWED_KEY = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
POLICY = "examples/table-policy.json"
KMS_ACTIONS = {"kms:Decrypt", "kms:DescribeKey", "kms:GenerateDataKey"}


def _kms_statements(template: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for type_name in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
        for logical_id, policy in resources(template, type_name).items():
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                actions = (
                    statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
                )
                if any(a.startswith("kms:") for a in actions):
                    found.append((logical_id, statement))
    return found


def _bucket_sse(template: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        b["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
        for b in resources(template, "AWS::S3::Bucket").values()
    ]


@pytest.mark.parametrize("env", ENV_VALUES)
def test_customer_managed_creates_one_rotating_key_retained_with_the_table(env: str) -> None:
    # GIVEN encryption=customer-managed with the built-in consumer
    _, template, _ = synth(stream="new-and-old", encryption="customer-managed", env=env)
    # THEN one key, rotation on, kept (with the table) where the environment retains data
    keys = resources(template, "AWS::KMS::Key")
    assert len(keys) == 1
    (key_id, key), table = next(iter(keys.items())), only(template, "AWS::DynamoDB::Table")
    assert key["Properties"]["EnableKeyRotation"] is True
    assert key["Properties"]["PendingWindowInDays"] == 30
    assert (
        key["DeletionPolicy"] == table["DeletionPolicy"] == ("Retain" if env in RETAINING_TIERS else "Delete")
    )
    # AND the table, both buckets and the output name that key
    key_arn = {"Fn::GetAtt": [key_id, "Arn"]}
    assert table["Properties"]["SSESpecification"] == {
        "SSEEnabled": True,
        "SSEType": "KMS",
        "KMSMasterKeyId": key_arn,
    }
    buckets = _bucket_sse(template)
    assert len(buckets) == 2
    for sse in buckets:
        assert sse["ServerSideEncryptionByDefault"] == {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": key_arn}
        assert sse["BucketKeyEnabled"] is True
    assert template["Outputs"]["KmsKeyArn"]["Value"] == key_arn


def test_kms_grants_are_scoped_to_the_one_key_through_the_services_that_use_it() -> None:
    _, template, _ = synth(stream="new-and-old", encryption="customer-managed")
    key_id = next(iter(resources(template, "AWS::KMS::Key")))
    statements = dict(_kms_statements(template))
    # The consumer's role and the runtime policy, nothing else
    assert {k.split("RolePolicy")[0].split("RuntimePolicy")[0] for k in statements} == {
        "StreamConsumer",
        "DocumentTable",
    }
    for logical_id, statement in statements.items():
        assert statement["Effect"] == "Allow"
        assert statement["Resource"] == {"Fn::GetAtt": [key_id, "Arn"]}, logical_id
        assert set(statement["Action"]) == KMS_ACTIONS, logical_id
        via = statement["Condition"]["StringEquals"]["kms:ViaService"]
        services = {part["Fn::Join"][1][0].rstrip(".") for part in via}
        # the runtime policy's users reach the key through DynamoDB; the consumer also through S3 (failure bucket)
        wanted = {"dynamodb", "s3"} if "StreamConsumer" in logical_id else {"dynamodb"}
        assert services == wanted, logical_id


def test_a_borrowed_key_is_named_everywhere_and_no_key_is_created() -> None:
    _, template, _ = synth(stream="new-and-old", encryption="customer-managed", kms_key=BORROWED_KEY)
    assert resources(template, "AWS::KMS::Key") == {}
    table = only(template, "AWS::DynamoDB::Table")
    assert table["Properties"]["SSESpecification"]["KMSMasterKeyId"] == BORROWED_KEY
    for sse in _bucket_sse(template):
        assert sse["ServerSideEncryptionByDefault"]["KMSMasterKeyID"] == BORROWED_KEY
    statements = _kms_statements(template)
    assert len(statements) == 2
    assert all(s["Resource"] == BORROWED_KEY for _, s in statements)


@pytest.mark.parametrize("encryption", ENCRYPTION_VALUES)
def test_each_encryption_value_reaches_table_and_buckets(encryption: str) -> None:
    _, template, _ = synth(stream="new-and-old", encryption=encryption)
    sse = only(template, "AWS::DynamoDB::Table")["Properties"].get("SSESpecification")
    buckets = [s["ServerSideEncryptionByDefault"] for s in _bucket_sse(template)]
    if encryption == "aws-owned":
        # DynamoDB's default: no SSESpecification (or disabled), S3-managed keys, no KMS grant
        assert sse in (None, {"SSEEnabled": False})
        assert all(b == {"SSEAlgorithm": "AES256"} for b in buckets)
        assert _kms_statements(template) == []
    elif encryption == "aws-managed":
        assert sse == {"SSEEnabled": True}
        assert all(b == {"SSEAlgorithm": "aws:kms"} for b in buckets)  # the aws/s3 key
        # the AWS managed keys' policies admit the account's principals: no grant
        assert _kms_statements(template) == []
    else:
        assert sse is not None and sse["SSEType"] == "KMS"
    assert len(buckets) == 2


def test_resource_policy_is_attached_with_the_stacks_account_and_table() -> None:
    _, template, _ = synth(resource_policy=POLICY)
    policy = only(template, "AWS::DynamoDB::Table")["Properties"]["ResourcePolicy"]["PolicyDocument"]
    sids = {s["Sid"]: s for s in policy["Statement"]}
    assert set(sids) == {"DenyWithoutTLS", "DenyOtherAccounts"}
    assert all(s["Effect"] == "Deny" for s in sids.values())
    assert sids["DenyWithoutTLS"]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert sids["DenyOtherAccounts"]["Condition"] == {
        "StringNotEquals": {"aws:PrincipalAccount": {"Ref": "AWS::AccountId"}}
    }
    rendered = json.dumps(policy)
    assert "{{" not in rendered  # every placeholder resolved
    assert ":table/items-dev" in rendered
    assert "Fn::GetAtt" not in rendered  # never a reference to the table it is attached to


def test_no_resource_policy_by_default() -> None:
    _, template, _ = synth()
    assert "ResourcePolicy" not in only(template, "AWS::DynamoDB::Table")["Properties"]
