"""A service acting as a function's execution role: the event-source mapping's stream reads and on-failure writes.

On AWS, Lambda's pollers read a mapping's stream and write its on-failure destination with the function's
role; CreateEventSourceMapping checks the stream permissions up front. These are the checks, evaluated
against the role's policies (always allowed when IAM is off).
"""

from __future__ import annotations

from typing import Any

from local.auth import principals

STREAM_ACTIONS = ("dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:DescribeStream")
# What Lambda's pollers call on a Kinesis data stream (shared-throughput consumer), on the stream's ARN.
KINESIS_ACTIONS = (
    "kinesis:GetRecords",
    "kinesis:GetShardIterator",
    "kinesis:DescribeStream",
    "kinesis:DescribeStreamSummary",
    "kinesis:ListShards",
)
# What Lambda's pollers call on an enhanced fan-out consumer (the resource type of SubscribeToShard).
FAN_OUT_ACTION = "kinesis:SubscribeToShard"
SESSION = "lambda-esm"


def function_role(account_id: str, region: str, function_arn: str) -> str:
    """The execution role of the function (empty when the function is gone)."""
    from moto.awslambda.exceptions import LambdaClientError
    from moto.awslambda.models import lambda_backends

    try:
        return str(lambda_backends[account_id][region].get_function(function_arn).role or "")
    except LambdaClientError:  # Lambda's own answer (the function is gone): no role, so nothing is allowed
        return ""


def stream_access_refusal(role: str, source_arn: str) -> str | None:
    """AWS's message when ``role`` lacks an action a mapping reads its source with; None if it has them all. A
    Kinesis enhanced fan-out consumer's ARN: the stream's reads on its stream, and SubscribeToShard on it."""
    checks: list[tuple[str, str, dict[str, list[str]]]]
    stream_arn, _, consumer = source_arn.partition("/consumer/")
    if stream_arn.split(":")[2:3] == ["kinesis"]:
        checks = [(action, stream_arn, {}) for action in KINESIS_ACTIONS]
        if consumer:
            checks.append((FAN_OUT_ACTION, source_arn, {}))
        key = kinesis_customer_key(stream_arn)
        if key is not None:  # records of a stream under a customer managed key are decrypted as the role
            region = stream_arn.split(":")[3]
            checks.append(("kms:Decrypt", key, {"kms:ViaService": [f"kinesis.{region}.amazonaws.com"]}))
    else:
        checks = [(action, stream_arn, {}) for action in STREAM_ACTIONS]
        checks.append(("dynamodb:ListStreams", "*", {}))
    for action, resource, context in checks:
        if not principals.role_may(role, SESSION, action, resource, context=context).allowed:
            return (
                f"Cannot access stream {source_arn}. Please ensure the role can perform the GetRecords, "
                "GetShardIterator, DescribeStream, and ListStreams Actions on your stream in IAM."
            )
    return None


def kinesis_customer_key(stream_arn: str) -> str | None:
    """The ARN of the customer managed key a Kinesis stream is encrypted with; None for none or AWS's own."""
    from moto.kinesis.exceptions import ResourceNotFoundError
    from moto.kinesis.models import kinesis_backends
    from moto.kms.exceptions import NotFoundException
    from moto.kms.models import kms_backends

    _, _, _, region, account, _ = (stream_arn.split(":", 5) + [""] * 6)[:6]
    try:
        stream = kinesis_backends[account][region].describe_stream(stream_arn, None)
    except ResourceNotFoundError:  # no stream, no records to decrypt: the stream actions' checks refuse it
        return None
    if stream.encryption_type != "KMS" or not stream.key_id or str(stream.key_id).startswith("alias/aws/"):
        return None
    try:
        key: Any = kms_backends[account][region].describe_key(str(stream.key_id))
    except (NotFoundException, KeyError):  # KMS has no such key: there is no key policy to decrypt under
        return None
    return str(key.arn) if getattr(key, "key_manager", "CUSTOMER") == "CUSTOMER" else None


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
