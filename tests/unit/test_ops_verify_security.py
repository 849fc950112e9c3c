"""verify's encryption-at-rest and resource-policy rows (doctable/verify/security.py) against moto."""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from moto import mock_aws

from contract import names, policy_doc
from contract.knobs import resolve_config
from contract.shape import encryption_shape
from doctable.core.aws import Aws
from doctable.verify.record import CheckFailed as Failed
from doctable.verify.security import AWS_OWNED_TEXT, NO_POLICY, security_checks, security_rows

pytestmark = pytest.mark.unit

EXAMPLE = "examples/table-policy.json"


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x")):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        yield Aws(region="us-east-1", session=boto3.session.Session(region_name="us-east-1"))


def _table(aws: Aws, **extra: Any) -> dict[str, Any]:
    ddb = aws.client("dynamodb")
    ddb.create_table(
        TableName="items-dev",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        **extra,
    )
    return ddb.describe_table(TableName="items-dev")["Table"]  # type: ignore[no-any-return]


def _checks(aws: Aws, table: dict[str, Any], outputs: dict[str, str], **knobs: str) -> dict[str, Any]:
    shape = encryption_shape(resolve_config(context=knobs, environ={}))
    return security_checks(aws, shape, lambda: table, SimpleNamespace(out=outputs.get))  # type: ignore[arg-type]


def test_rows_say_what_each_encryption_expects() -> None:
    def expected(**knobs: str) -> dict[str, str]:
        shape = encryption_shape(resolve_config(context=knobs, environ={}))
        return {row: text for row, _, text in security_rows(shape)}

    assert expected() == {"encryption": AWS_OWNED_TEXT, "resource-policy": NO_POLICY}
    assert "rotation on" in expected(encryption="customer-managed")["encryption"]
    assert expected(resource_policy=EXAMPLE)["resource-policy"] == f"= {EXAMPLE}"


def test_customer_managed_key_passes_when_it_is_the_stacks_rotating_key(aws: Aws) -> None:
    kms = aws.client("kms")
    key = kms.create_key()["KeyMetadata"]
    kms.enable_key_rotation(KeyId=key["KeyId"])
    table = _table(aws, SSESpecification={"Enabled": True, "SSEType": "KMS", "KMSMasterKeyId": key["Arn"]})
    checks = _checks(aws, table, {names.OUT_KMS_KEY_ARN: key["Arn"]}, encryption="customer-managed")
    assert checks["encryption"]().endswith("rotation on")
    # another key than the stack's, or an AWS owned key declared, fails naming what is live
    other = _checks(
        aws,
        table,
        {names.OUT_KMS_KEY_ARN: "arn:aws:kms:us-east-1:123456789012:key/x"},
        encryption="customer-managed",
    )
    with pytest.raises(Failed, match=key["Arn"]):
        other["encryption"]()
    with pytest.raises(Failed):
        _checks(aws, table, {})["encryption"]()


def test_aws_owned_passes_without_sse_description(aws: Aws) -> None:
    assert _checks(aws, _table(aws), {})["encryption"]() == AWS_OWNED_TEXT


def test_resource_policy_equal_in_meaning_passes_and_a_changed_one_fails(aws: Aws) -> None:
    table = _table(aws)
    arn = table["TableArn"]
    ddb = aws.client("dynamodb")
    checks = _checks(aws, table, {}, resource_policy=EXAMPLE)
    with pytest.raises(Failed, match=NO_POLICY):
        checks["resource-policy"]()
    document = policy_doc.resolve_placeholders(
        policy_doc.load_policy_document(EXAMPLE), account="123456789012", table_arn=arn
    )
    document["Statement"][0]["Principal"] = {"AWS": "*"}  # as another tool spells it
    document["Statement"].reverse()
    ddb.put_resource_policy(ResourceArn=arn, Policy=json.dumps(document))
    assert checks["resource-policy"]() == f"= {EXAMPLE} (2 statements)"
    document["Statement"].pop()
    ddb.put_resource_policy(ResourceArn=arn, Policy=json.dumps(document))
    with pytest.raises(Failed, match="different policy"):
        checks["resource-policy"]()
    # declared off, a live policy fails
    with pytest.raises(Failed, match="1 statement"):
        _checks(aws, table, {})["resource-policy"]()
