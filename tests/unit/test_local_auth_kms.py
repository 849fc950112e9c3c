"""The local AWS authorizes a KMS call on the key it names, as KMS does (local/auth/requests.py kms_resource): a
key id, a key ARN, or an alias name or ARN resolved to its key, so a policy scoped to a key's ARN allows the
calls on that key and refuses them on another."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws

from local import state
from local.auth import policy, requests

pytestmark = pytest.mark.unit


def checks(operation: str, data: dict[str, str]) -> list[requests.Check]:
    environ = {
        "HTTP_AUTHORIZATION": f"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261204/{state.REGION}/kms/aws4_request",
        "HTTP_X_AMZ_TARGET": f"TrentService.{operation}",
    }
    parsed = requests.parse(environ, json.dumps(data).encode())
    assert parsed is not None
    return parsed.checks


def test_a_key_call_is_authorized_on_the_key_however_it_is_named() -> None:
    with mock_aws():
        kms = boto3.client("kms", region_name=state.REGION)
        key = kms.create_key(Description="table key")["KeyMetadata"]
        kms.create_alias(AliasName="alias/doctable-items-dev", TargetKeyId=key["KeyId"])
        alias_arn = f"arn:aws:kms:{state.REGION}:{state.ACCOUNT_ID}:alias/doctable-items-dev"
        # WHEN DescribeKey names the key by its id, its ARN, its alias and its alias's ARN
        named = [key["KeyId"], key["Arn"], "alias/doctable-items-dev", alias_arn]
        found = [checks("DescribeKey", {"KeyId": k}) for k in named]
        # THEN each is the one check kms:DescribeKey on the key's ARN
        assert all([(c.action, c.resource) for c in f] == [("kms:DescribeKey", key["Arn"])] for f in found)
        # AND an alias that points to no key, and a call on no key, are authorized on "*"
        assert checks("DescribeKey", {"KeyId": "alias/none"})[0].resource == "*"
        assert checks("ListKeys", {})[0].resource == "*"


def test_a_policy_scoped_to_one_key_allows_that_key_only() -> None:
    arn = f"arn:aws:kms:{state.REGION}:{state.ACCOUNT_ID}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    scoped = {"Effect": "Allow", "Action": "kms:GetKeyRotationStatus", "Resource": arn}

    def allowed(key_id: str) -> bool:
        (check,) = checks("GetKeyRotationStatus", {"KeyId": key_id})
        request = policy.Request(
            "arn:aws:iam::123456789012:user/op", check.action, check.resource, check.context
        )
        return policy.evaluate(request, [{"Version": "2012-10-17", "Statement": [scoped]}]).allowed

    assert allowed(arn) and allowed(arn.rsplit("/", 1)[1])
    assert not allowed(arn.replace("1234abcd", "9999abcd"))
