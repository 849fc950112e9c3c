"""Answers held against botocore's service models (the shapes AWS publishes for its SDKs): each success parses
to the operation's output shape with its required members present and, for the JSON protocols, no member the
model lacks; each error code is one the model names for the operation, or one of the service's common errors.
"""

from __future__ import annotations

import json
from typing import Any

from botocore.model import ListShape, MapShape, Shape, StructureShape

from tests.conformance.servers import Answer

JSON_PROTOCOLS = frozenset({"json"})

# Errors any operation of a service may answer, beyond those its model lists per operation, from each service's
# "Common Errors" page (which botocore's models do not carry).
COMMON_ERRORS: dict[str, tuple[str, frozenset[str]]] = {
    "dynamodb": (
        "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/CommonErrors.html",
        frozenset(
            {
                "AccessDeniedException",
                "IncompleteSignature",
                "InternalFailure",
                "InvalidAction",
                "InvalidClientTokenId",
                "NotAuthorized",
                "OptInRequired",
                "RequestExpired",
                "ServiceUnavailable",
                "ThrottlingException",
                "ValidationError",
                "ValidationException",
                "UnrecognizedClientException",
                # the developer guide's "Error handling with DynamoDB" (Programming.Errors) adds these 400s:
                "IncompleteSignatureException",
                "MissingAuthenticationTokenException",
                # and the signature errors DynamoDB answers as 400s (com.amazon.coral.service#...), which no page
                # lists: a signature that does not match, a request dated past the skew, an expired session
                "InvalidSignatureException",
                "ExpiredTokenException",
            }
        ),
    ),
    "dynamodbstreams": (
        "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/CommonErrors.html",
        frozenset({"AccessDeniedException", "InternalFailure", "ThrottlingException", "ValidationException"}),
    ),
    "kms": (
        "https://docs.aws.amazon.com/kms/latest/APIReference/CommonErrors.html",
        frozenset({"AccessDeniedException", "InternalFailure", "ThrottlingException", "ValidationException"}),
    ),
    "kinesis": (
        "https://docs.aws.amazon.com/kinesis/latest/APIReference/CommonErrors.html",
        frozenset({"AccessDeniedException", "InternalFailure", "ThrottlingException", "ValidationException"}),
    ),
    "cloudformation": (
        "https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/CommonErrors.html",
        frozenset({"AccessDenied", "InternalFailure", "Throttling", "ValidationError"}),
    ),
    # S3's error codes are listed on one page for every operation; its model names few of them.
    "s3": (
        "https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html#ErrorCodeList",
        frozenset(
            {
                "AccessDenied",
                "InternalError",
                "InvalidBucketName",
                "NoSuchBucket",
                "NoSuchKey",
                "PreconditionFailed",
                "ConditionalRequestConflict",
                "NotImplemented",  # a header S3 does not implement (If-None-Match other than *), 501
                "SlowDown",
                "InvalidArgument",
                "BucketNotEmpty",
                "NoSuchPublicAccessBlockConfiguration",
                # a body or a signature S3 refuses (the same page)
                "BadDigest",
                "InvalidDigest",
                "XAmzContentSHA256Mismatch",
                "IncompleteBody",
                "SignatureDoesNotMatch",
                "AuthorizationHeaderMalformed",
                "AuthorizationQueryParametersError",
            }
        ),
    ),
}


def problems(answer: Answer) -> list[str]:
    """What in ``answer`` its operation's model does not allow; empty when it conforms."""
    model = answer.model
    where = f"{answer.service}:{answer.operation}"
    code = answer.error_code
    if answer.status >= 300:
        if code is None:
            return [f"{where}: HTTP {answer.status} without an error code"]
        allowed = {shape.name for shape in model.error_shapes}
        allowed |= {shape.error_code for shape in model.error_shapes if getattr(shape, "error_code", None)}
        common = COMMON_ERRORS.get(answer.service, ("", frozenset()))[1]
        if code not in allowed and code not in common:
            return [
                f"{where}: error {code} is neither in the model's errors {sorted(allowed)} nor a common error"
            ]
        return []
    shape = model.output_shape
    if shape is None:
        return []
    found: list[str] = []
    raw: Any = None
    if model.metadata.get("protocol") in JSON_PROTOCOLS and answer.body:
        raw = json.loads(answer.body)
    _check(shape, answer.parsed, raw, where, found)
    return found


def _check(shape: Shape, parsed: Any, raw: Any, path: str, found: list[str]) -> None:
    if isinstance(shape, StructureShape):
        if not isinstance(parsed, dict):
            found.append(f"{path}: expected a structure, found {type(parsed).__name__}")
            return
        for name in shape.required_members:
            if name not in parsed:
                found.append(f"{path}.{name}: required by the model, missing")
        if isinstance(raw, dict):
            wire = {shape.members[m].serialization.get("name", m): m for m in shape.members}
            for key in raw:
                if key not in wire:
                    found.append(f"{path}.{key}: not a member of {shape.name} in the model")
        for name, member in shape.members.items():
            if name in parsed and name != "ResponseMetadata":
                wire_name = member.serialization.get("name", name)
                inner_raw = raw.get(wire_name) if isinstance(raw, dict) else None
                _check(member, parsed[name], inner_raw, f"{path}.{name}", found)
    elif isinstance(shape, ListShape):
        if isinstance(parsed, list):
            raws = raw if isinstance(raw, list) else [None] * len(parsed)
            for item, item_raw in zip(parsed, raws, strict=False):
                _check(shape.member, item, item_raw, f"{path}[]", found)
    elif isinstance(shape, MapShape):
        if isinstance(parsed, dict):
            for key, value in parsed.items():
                inner_raw = raw.get(key) if isinstance(raw, dict) else None
                _check(shape.value, value, inner_raw, f"{path}{{}}", found)
    elif getattr(shape, "enum", None) and isinstance(parsed, str) and parsed not in shape.enum:
        found.append(f"{path}: {parsed!r} is not one of the model's values {shape.enum}")
