"""Reading AWS's answers, without a client: an error's code, a missing resource, an ARN's region and account, a
call whose "does not exist" answer is None. A leaf: what sits on it needs no AWS connection to be imported."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

from botocore.exceptions import ClientError

NOT_FOUND_CODES = frozenset(
    {"ResourceNotFoundException", "ResourceNotFound", "NoSuchEntity", "NoSuchBucket", "NotFound", "404"}
)
ARN_RE = re.compile(r"^arn:(?P<partition>[^:]+):(?P<service>[^:]+):(?P<region>[^:]*):(?P<account>[^:]*):")

T = TypeVar("T")


def error_code(exc: BaseException) -> str:
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code", ""))
    return ""


def is_not_found(exc: BaseException) -> bool:
    if not isinstance(exc, ClientError):
        return False
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return error_code(exc) in NOT_FOUND_CODES or status == 404


def arn_region(arn: str | None) -> str | None:
    match = ARN_RE.match(arn or "")
    return match.group("region") if match and match.group("region") else None


def arn_account(arn: str | None) -> str | None:
    match = ARN_RE.match(arn or "")
    return match.group("account") if match and match.group("account") else None


def call_or_none(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
    """``fn(...)``, or None when AWS says the resource does not exist."""
    try:
        return fn(*args, **kwargs)
    except ClientError as exc:
        if is_not_found(exc):
            return None
        raise
