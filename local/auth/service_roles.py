"""A service acting as a function's execution role: the event-source mapping's stream reads and on-failure writes.

On AWS, Lambda's pollers read a mapping's stream and write its on-failure destination with the function's
role; CreateEventSourceMapping checks the stream permissions up front. These are the checks, evaluated
against the role's policies (always allowed when IAM is off).
"""

from __future__ import annotations

from typing import Any

from local.auth import principals

STREAM_ACTIONS = ("dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:DescribeStream")
SESSION = "lambda-esm"


def function_role(account_id: str, region: str, function_arn: str) -> str:
    """The execution role of the function (empty when the function is gone)."""
    from moto.awslambda.models import lambda_backends

    try:
        return str(lambda_backends[account_id][region].get_function(function_arn).role or "")
    except Exception:
        return ""


def stream_access_refusal(role: str, stream_arn: str) -> str | None:
    """AWS's message when ``role`` lacks an action a mapping reads its stream with; None if it has them all."""
    checks = [(action, stream_arn) for action in STREAM_ACTIONS] + [("dynamodb:ListStreams", "*")]
    for action, resource in checks:
        if not principals.role_may(role, SESSION, action, resource).allowed:
            return (
                f"Cannot access stream {stream_arn}. Please ensure the role can perform the GetRecords, "
                "GetShardIterator, DescribeStream, and ListStreams Actions on your stream in IAM."
            )
    return None


def may_read(status: Any, esm: Any) -> bool:
    """Whether the mapping's role may read its stream now; a refusal shows in the mapping's status as on AWS."""
    role = function_role(esm.account_id, esm.region, esm.function_arn)
    refusal = stream_access_refusal(role, esm.event_source_arn)
    if refusal is not None:
        status.reason = status.last_result = f"PROBLEM: {refusal}"
        return False
    if status.reason.startswith("PROBLEM: Cannot access stream"):
        status.reason = "USER_INITIATED"
    return True


def check_failure_write(esm: Any, bucket: str, key: str) -> None:
    """PermissionError unless the mapping's role may put ``key`` into the on-failure bucket (bucket policy too)."""
    role = function_role(esm.account_id, esm.region, esm.function_arn)
    resource = f"arn:aws:s3:::{bucket}/{key}"
    bucket_policy = principals.bucket_policy(bucket)
    if not principals.role_may(role, SESSION, "s3:PutObject", resource, bucket_policy).allowed:
        raise PermissionError(f"{role} may not s3:PutObject on {resource}")
