"""The local AWS's IAM evaluator and request reader, without a server: AWS's decisions on policy documents."""

from __future__ import annotations

import json
from typing import Any

import pytest

from local.auth import policy, requests

ACCOUNT = "123456789012"
TABLE = f"arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/items-dev"
USER = f"arn:aws:iam::{ACCOUNT}:user/x"
RUNTIME = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Action": ["dynamodb:GetItem", "dynamodb:Query"], "Resource": TABLE},
        {"Effect": "Allow", "Action": "dynamodb:Query", "Resource": f"{TABLE}/index/gsi1"},
    ],
}
TLS_ONLY = {
    "Statement": [
        {
            "Effect": "Deny",
            "Principal": {"AWS": "*"},
            "Action": "s3:*",
            "Resource": ["arn:aws:s3:::b", "arn:aws:s3:::b/*"],
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        }
    ]
}


def ask(action: str, resource: str, **context: list[str]) -> policy.Request:
    keys = {k.replace("__", ":"): v for k, v in context.items()}
    return policy.Request(principal=USER, action=action, resource=resource, context=keys, account=ACCOUNT)


@pytest.mark.parametrize(
    ("action", "resource", "allowed"),
    [
        ("dynamodb:GetItem", TABLE, True),
        ("dynamodb:getitem", TABLE, True),  # action names are case-insensitive
        ("dynamodb:Query", f"{TABLE}/index/gsi1", True),
        ("dynamodb:Query", f"{TABLE}/index/other", False),
        ("dynamodb:Scan", TABLE, False),
        ("dynamodb:GetItem", TABLE.replace("items-dev", "items-prd"), False),
    ],
)
def test_identity_policy_allows_only_its_actions_on_its_resources(
    action: str, resource: str, allowed: bool
) -> None:
    # GIVEN the runtime policy  WHEN a request is evaluated  THEN only its actions on its resources pass
    decision = policy.evaluate(ask(action, resource), [RUNTIME])
    assert decision.allowed is allowed
    assert decision.reason == ("allowed" if allowed else "implicit")


def test_explicit_deny_wins_over_any_allow() -> None:
    # GIVEN an allow-everything policy and a deny of Scan
    admin = {"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    deny = {"Statement": [{"Effect": "Deny", "Action": "dynamodb:Scan", "Resource": TABLE}]}
    # WHEN Scan is evaluated THEN the explicit deny decides
    assert policy.evaluate(ask("dynamodb:Scan", TABLE), [admin, deny]) == policy.Decision(
        False, "explicit-identity"
    )
    assert policy.evaluate(ask("dynamodb:GetItem", TABLE), [admin, deny]).allowed


def test_a_permissions_boundary_intersects_the_identity_policies() -> None:
    # GIVEN an identity policy allowing every DynamoDB action and a boundary allowing reads and denying Scan
    admin = {"Statement": [{"Effect": "Allow", "Action": "dynamodb:*", "Resource": "*"}]}
    boundary = {"Statement": [{"Effect": "Allow", "Action": ["dynamodb:GetItem", "dynamodb:Scan"], "Resource": "*"},
                              {"Effect": "Deny", "Action": "dynamodb:Scan", "Resource": "*"}]}  # fmt: skip
    # THEN only what both allow is allowed, and the refusals say which policy refused, in AWS's words
    assert policy.evaluate(ask("dynamodb:GetItem", TABLE), [admin], None, [boundary]).allowed
    put = policy.evaluate(ask("dynamodb:PutItem", TABLE), [admin], None, [boundary])
    scan = policy.evaluate(ask("dynamodb:Scan", TABLE), [admin], None, [boundary])
    assert (put.reason, scan.reason) == ("boundary", "explicit-boundary")
    assert policy.denial_message("P", "dynamodb:PutItem", TABLE, put.reason).endswith(
        "because no permissions boundary allows the dynamodb:PutItem action"
    )
    assert policy.denial_message("P", "dynamodb:Scan", TABLE, scan.reason).endswith(
        "with an explicit deny in a permissions boundary"
    )
    # AND a boundary never allows what no identity policy does; without one the identity policies decide
    assert policy.evaluate(ask("dynamodb:GetItem", TABLE), [], None, [boundary]).reason == "implicit"
    assert policy.evaluate(ask("dynamodb:PutItem", TABLE), [admin]).allowed


def test_not_action_and_not_resource() -> None:
    # GIVEN a policy that allows everything but IAM, on everything but one table
    document = {"Statement": [{"Effect": "Allow", "NotAction": "iam:*", "NotResource": TABLE}]}
    other = TABLE.replace("items-dev", "other")
    # THEN
    assert policy.evaluate(ask("s3:GetObject", "arn:aws:s3:::b/k"), [document]).allowed
    assert not policy.evaluate(ask("iam:CreateUser", "*"), [document]).allowed
    assert not policy.evaluate(ask("dynamodb:GetItem", TABLE), [document]).allowed
    assert policy.evaluate(ask("dynamodb:GetItem", other), [document]).allowed


@pytest.mark.parametrize(("secure", "allowed"), [("true", True), ("false", False)])
def test_tls_only_bucket_policy_is_evaluated_on_secure_transport(secure: str, allowed: bool) -> None:
    # GIVEN an identity allowed to read and the bucket's TLS-only deny
    reader = {"Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*"}]}
    request = ask("s3:GetObject", "arn:aws:s3:::b/k", aws__SecureTransport=[secure])
    # WHEN evaluated THEN only a request that arrived over TLS passes
    decision = policy.evaluate(request, [reader], json.dumps(TLS_ONLY))
    assert decision.allowed is allowed
    if not allowed:
        assert decision.reason == "explicit-resource"


@pytest.mark.parametrize(
    ("context", "allowed"),
    [({"s3__prefix": ["blobs/a"]}, True), ({"s3__prefix": ["other/"]}, False), ({}, False)],
)
def test_string_like_on_s3_prefix(context: dict[str, list[str]], allowed: bool) -> None:
    # GIVEN ListBucket allowed under one prefix only
    document = {
        "Statement": [
            {
                "Effect": "Allow",
                "Action": "s3:ListBucket",
                "Resource": "arn:aws:s3:::b",
                "Condition": {"StringLike": {"s3:prefix": ["blobs/*"]}},
            }
        ]
    }
    # THEN the listing passes only under that prefix (a missing key does not satisfy StringLike)
    assert policy.evaluate(ask("s3:ListBucket", "arn:aws:s3:::b", **context), [document]).allowed is allowed


@pytest.mark.parametrize(
    ("operator", "expected", "actual", "holds"),
    [
        ("StringEquals", "a", ["a"], True),
        ("StringNotEquals", "a", ["a"], False),
        ("StringNotEquals", "a", None, True),  # a key the request lacks: negated operators hold
        ("StringEqualsIfExists", "a", None, True),
        ("ArnLike", "arn:aws:iam::*:role/cdk-*", [f"arn:aws:iam::{ACCOUNT}:role/cdk-deploy"], True),
        ("ArnEquals", "arn:aws:iam::1:role/a", ["arn:aws:iam::1:role/b"], False),
        ("Bool", "true", ["true"], True),
        ("Null", "true", None, True),
        ("ForAnyValue:StringLike", ["x*"], ["a", "xb"], True),
        ("ForAllValues:StringLike", ["x*"], ["a", "xb"], False),
    ],
)
def test_condition_operators(operator: str, expected: Any, actual: list[str] | None, holds: bool) -> None:
    # GIVEN a statement with one condition on aws:PrincipalArn
    document = {
        "Statement": [
            {
                "Effect": "Allow",
                "Action": "s3:*",
                "Resource": "*",
                "Condition": {operator: {"aws:PrincipalArn": expected}},
            }
        ]
    }
    request = ask("s3:GetObject", "*", **({"aws__PrincipalArn": actual} if actual is not None else {}))
    # THEN the statement applies exactly when the condition holds
    assert policy.evaluate(request, [document]).allowed is holds


def test_trust_policy_trusting_the_account_lets_its_principals_assume() -> None:
    # GIVEN a bootstrap role's trust policy (the account's root)
    trust = {
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
                "Action": "sts:AssumeRole",
            }
        ]
    }
    lambda_only = {
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ]
    }
    request = ask("sts:AssumeRole", f"arn:aws:iam::{ACCOUNT}:role/r")
    # THEN a principal of the account may assume it, but not a role only Lambda may assume
    assert policy.trust_allows(trust, request)
    assert not policy.trust_allows(lambda_only, request)
    assert not policy.trust_allows(
        trust,
        policy.Request(USER.replace(ACCOUNT, "999999999999"), "sts:AssumeRole", "r", account="999999999999"),
    )


def test_denial_message_is_aws_s() -> None:
    # WHEN an implicit deny is reported THEN it is AWS's sentence
    message = policy.denial_message(USER, "dynamodb:Scan", TABLE, "implicit")
    assert message == (
        f"User: {USER} is not authorized to perform: dynamodb:Scan on resource: {TABLE} "
        "because no identity-based policy allows the dynamodb:Scan action"
    )


def _environ(method: str, path: str, service: str, query: str = "", **extra: str) -> dict[str, Any]:
    credential = f"AKIAX/20260101/us-east-1/{service}/aws4_request"
    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "HTTP_HOST": "localhost:4566",
        "HTTP_AUTHORIZATION": f"AWS4-HMAC-SHA256 Credential={credential}, SignedHeaders=host, Signature=0",
    }
    environ.update(extra)
    return environ


@pytest.mark.parametrize(
    ("environ", "body", "expected"),
    [
        (
            _environ("POST", "/", "dynamodb", HTTP_X_AMZ_TARGET="DynamoDB_20120810.Query"),
            b'{"TableName": "items-dev", "IndexName": "gsi1"}',
            [("dynamodb:Query", f"{TABLE}/index/gsi1")],
        ),
        (  # PartiQL: each statement by its verb on the table it names (ExecuteStatement is no IAM action)
            _environ("POST", "/", "dynamodb", HTTP_X_AMZ_TARGET="DynamoDB_20120810.BatchExecuteStatement"),
            b'{"Statements": [{"Statement": "SELECT * FROM \\"items-dev\\" WHERE pk = ?"},'
            b' {"Statement": "delete from t2 where pk = ?"}]}',
            [("dynamodb:PartiQLSelect", TABLE), ("dynamodb:PartiQLDelete", TABLE.replace("items-dev", "t2"))],
        ),
        (  # a re-encryption is authorized on each of its keys
            _environ("POST", "/", "kms", HTTP_X_AMZ_TARGET="TrentService.ReEncrypt"),
            b'{"SourceKeyId": "k1", "DestinationKeyId": "k2", "CiphertextBlob": "eA=="}',
            [
                ("kms:ReEncryptFrom", f"arn:aws:kms:us-east-1:{ACCOUNT}:key/k1"),
                ("kms:ReEncryptTo", f"arn:aws:kms:us-east-1:{ACCOUNT}:key/k2"),
            ],
        ),
        (
            _environ("POST", "/", "dynamodb", HTTP_X_AMZ_TARGET="DynamoDB_20120810.TransactWriteItems"),
            b'{"TransactItems": [{"Put": {"TableName": "items-dev"}}, {"Delete": {"TableName": "t2"}}]}',
            [("dynamodb:PutItem", TABLE), ("dynamodb:DeleteItem", TABLE.replace("items-dev", "t2"))],
        ),
        (
            _environ("POST", "/", "dynamodb", HTTP_X_AMZ_TARGET="DynamoDBStreams_20120810.GetRecords"),
            f'{{"ShardIterator": "{TABLE}/stream/L|1|abc"}}'.encode(),
            [("dynamodb:GetRecords", f"{TABLE}/stream/L")],
        ),
        (
            _environ("POST", "/", "logs", HTTP_X_AMZ_TARGET="Logs_20140328.PutLogEvents"),
            b'{"logGroupName": "/g", "logStreamName": "s"}',
            [("logs:PutLogEvents", f"arn:aws:logs:us-east-1:{ACCOUNT}:log-group:/g:log-stream:s")],
        ),
        (
            _environ("POST", "/", "ssm", HTTP_X_AMZ_TARGET="AmazonSSM.GetParameter"),
            b'{"Name": "/cdk-bootstrap/hnb659fds/version"}',
            [
                (
                    "ssm:GetParameter",
                    f"arn:aws:ssm:us-east-1:{ACCOUNT}:parameter/cdk-bootstrap/hnb659fds/version",
                )
            ],
        ),
        (_environ("DELETE", "/b/blobs/k", "s3"), None, [("s3:DeleteObject", "arn:aws:s3:::b/blobs/k")]),
        (
            _environ("DELETE", "/b/k", "s3", "versionId=1"),
            None,
            [("s3:DeleteObjectVersion", "arn:aws:s3:::b/k")],
        ),
        (
            _environ("GET", "/", "s3", HTTP_HOST="b.localhost:4566"),
            None,
            [("s3:ListBucket", "arn:aws:s3:::b")],
        ),
        (
            _environ("POST", "/2015-03-31/functions/fn/invocations", "lambda"),
            None,
            [("lambda:InvokeFunction", f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:fn")],
        ),
    ],
)
def test_requests_name_the_resources_aws_authorizes(
    environ: dict[str, Any], body: bytes | None, expected: list[tuple[str, str]]
) -> None:
    # WHEN a request is read THEN each check is the action and resource ARN AWS authorizes
    parsed = requests.parse(environ, body)
    assert parsed is not None
    assert [(c.action, c.resource) for c in parsed.checks] == expected


def test_list_objects_carries_s3_prefix() -> None:
    # WHEN a listing under a prefix is read THEN s3:prefix is in its context
    parsed = requests.parse(_environ("GET", "/b", "s3", "list-type=2&prefix=blobs/"), None)
    assert parsed is not None and parsed.checks[0].context == {"s3:prefix": ["blobs/"]}


def test_a_stack_operation_with_a_role_passes_it_to_cloudformation() -> None:
    # WHEN a stack is created with a service role THEN it also needs iam:PassRole on that role, passed to
    # CloudFormation
    role = "arn:aws:iam::000000000000:role/deploy"
    parsed = requests.parse(
        _environ("POST", "/", "cloudformation", f"Action=CreateStack&StackName=s1&RoleARN={role}"), None
    )
    assert parsed is not None
    assert [(c.action, c.resource, c.context) for c in parsed.checks][1:] == [
        ("iam:PassRole", role, {"iam:PassedToService": ["cloudformation.amazonaws.com"]})
    ]
