"""AWS failures as data: a command's ``--json`` error carries a stable ``code`` and, for a refusal, the action,
resource and principal AWS named (doctable.core.aws.failure_fields), so a machine reads fields, not prose."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError

from doctable.cli import error_document
from doctable.core.aws import failure_fields, user_error_for

pytestmark = pytest.mark.unit

PRINCIPAL = "arn:aws:iam::123456789012:user/reader"
TABLE = "arn:aws:dynamodb:us-east-1:123456789012:table/items-dev"


def client_error(code: str, message: str, operation: str = "TagResource") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, operation)


@pytest.mark.parametrize(
    ("message", "named"),
    [
        (f"User: {PRINCIPAL} is not authorized to perform: dynamodb:TagResource on resource: {TABLE} because no "
         "identity-based policy allows the dynamodb:TagResource action",
         {"principal": PRINCIPAL, "action": "dynamodb:TagResource", "resource": TABLE}),
        (f'User: {PRINCIPAL} is not authorized to perform: s3:DeleteObject on resource: "arn:aws:s3:::b/k" '
         "because no identity-based policy allows the s3:DeleteObject action",
         {"principal": PRINCIPAL, "action": "s3:DeleteObject", "resource": "arn:aws:s3:::b/k"}),
        (f"User: {PRINCIPAL} is not authorized to perform: logs:DescribeLogGroups",
         {"principal": PRINCIPAL, "action": "logs:DescribeLogGroups"}),
        ("Access Denied", {}),
    ],
)  # fmt: skip
def test_a_refusal_names_the_action_resource_and_principal_aws_named(
    message: str, named: dict[str, str]
) -> None:
    fields = failure_fields(client_error("AccessDeniedException", message))
    assert fields == {"code": "aws.access_denied", "aws_code": "AccessDeniedException", "operation": "TagResource",
                      **named}  # fmt: skip


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (client_error("ThrottlingException", "Rate exceeded"), "aws.throttled"),
        (client_error("ExpiredTokenException", "expired"), "aws.credentials_rejected"),
        (client_error("ResourceNotFoundException", "no table"), "aws.refused"),
        (NoCredentialsError(), "aws.no_credentials"),
        (EndpointConnectionError(endpoint_url="https://x"), "aws.unreachable"),
    ],
)
def test_every_aws_failure_has_a_stable_code(exc: Exception, code: str) -> None:
    assert failure_fields(exc)["code"] == code
    error = user_error_for(exc, "doing it")
    assert error is not None and error.fields["code"] == code


def test_the_json_error_document_carries_the_fields_beside_the_message() -> None:
    exc = client_error("AccessDenied", f"User: {PRINCIPAL} is not authorized to perform: dynamodb:TagResource "
                       f"on resource: {TABLE}")  # fmt: skip
    error = user_error_for(exc, "restoring tags")
    assert error is not None
    document = error_document("reconcile", str(error), 4, error.fields)
    assert (document["code"], document["action"], document["resource"], document["principal"]) == (
        "aws.access_denied", "dynamodb:TagResource", TABLE, PRINCIPAL
    )  # fmt: skip
    assert document["exit"] == 4 and document["error"] == str(error)
    assert error_document("settings", "bad knob", 2)["code"] == "usage"
