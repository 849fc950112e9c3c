"""Retries of throttled and transient AWS calls: capped exponential backoff with full jitter.

The clients the client builds have botocore's own retries turned off, so this policy alone decides; clients you
pass in keep theirs, and both apply.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError, ConnectionError, HTTPClientError

from doctable.client.errors import AwsError, ThrottledError

T = TypeVar("T")

# AWS asks the caller to slow down: the request was not applied.
THROTTLING_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "Throttling",
        "ThrottledException",
        "RequestLimitExceeded",
        "RequestThrottled",
        "RequestThrottledException",
        "TooManyRequestsException",
        "SlowDown",
    }
)
# The service failed or was busy; the request may or may not have been applied.
TRANSIENT_CODES = frozenset(
    {
        "InternalServerError",
        "InternalError",
        "InternalFailure",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "RequestTimeout",
        "RequestTimeoutException",
        "TransactionConflictException",
        "ConditionalRequestConflict",  # S3: two conditional writes of one key at once
    }
)
THROTTLED, TRANSIENT = "throttled", "transient"


def error_code(exc: BaseException) -> str:
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code", ""))
    return ""


def classify(exc: BaseException) -> str | None:
    """THROTTLED, TRANSIENT (worth retrying), or None."""
    if isinstance(exc, ClientError):
        code = error_code(exc)
        if code in THROTTLING_CODES:
            return THROTTLED
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code in TRANSIENT_CODES or (isinstance(status, int) and status >= 500):
            return TRANSIENT
        return None
    if isinstance(exc, (ConnectionError, HTTPClientError)):
        return TRANSIENT
    return None


def applied_maybe(exc: BaseException) -> bool:
    """Whether a failed write may have been applied all the same (no answer, or a server-side failure)."""
    return classify(exc) == TRANSIENT


@dataclass(frozen=True)
class RetryPolicy:
    """``max_attempts`` calls at most; before attempt n+1 a sleep drawn uniformly from
    ``[0, min(max_delay, base_delay * 2**(n-1))]`` (full jitter)."""

    max_attempts: int = 8
    base_delay: float = 0.05
    max_delay: float = 5.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    jitter: Callable[[], float] = field(default=random.random, repr=False)

    def __post_init__(self) -> None:
        if self.max_attempts < 1 or self.base_delay < 0 or self.max_delay < 0:
            raise ValueError("RetryPolicy needs max_attempts >= 1 and non-negative delays")

    def delay(self, failed_attempts: int) -> float:
        return self.jitter() * min(self.max_delay, self.base_delay * 2 ** (failed_attempts - 1))

    def call(self, call: Callable[[], T], *, step: str, pk: str | None = None, sk: str | None = None) -> T:
        """``call()``, retried while it is throttled or fails transiently; AwsError (ThrottledError) naming
        ``step`` and the document when it fails for good. The AWS error is the AwsError's cause."""
        attempt = 0
        while True:
            attempt += 1
            try:
                return call()
            except (ClientError, BotoCoreError) as exc:
                kind = classify(exc)
                if kind is None or attempt >= self.max_attempts:
                    raise as_aws_error(exc, step=step, pk=pk, sk=sk, attempts=attempt) from exc
                self.sleep(self.delay(attempt))


def as_aws_error(
    exc: ClientError | BotoCoreError, *, step: str, pk: str | None, sk: str | None, attempts: int
) -> AwsError:
    code = error_code(exc)
    response: dict[str, Any] = dict(exc.response) if isinstance(exc, ClientError) else {}
    kind = ThrottledError if classify(exc) == THROTTLED else AwsError
    after = f" (after {attempts} attempts)" if attempts > 1 else ""
    return kind(f"{exc}{after}", step=step, pk=pk, sk=sk, code=code, attempts=attempts, response=response)
