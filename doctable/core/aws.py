"""AWS access for the operations commands: one session, retrying clients, and errors a user can act on.

The same code talks to real AWS (the default credential chain) and to the local AWS: boto3 reads
``AWS_ENDPOINT_URL`` itself, so nothing here special-cases either.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
    ProfileNotFound,
    ReadTimeoutError,
    SSLError,
)
from botocore.parsers import ResponseParserError

from doctable.core.answers import error_code, is_not_found
from doctable.core.errors import AwsError, UserError

DEFAULT_RETRY_MODE = "adaptive"
DEFAULT_MAX_ATTEMPTS = 8
THROTTLING_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "RequestThrottled",
        "RequestThrottledException",
        "SlowDown",
        "LimitExceededException",
    }
)
OWNER_PARAM = "ExpectedBucketOwner"  # S3's check that the bucket is the named account's (403 if not)
CREDENTIAL_CODES = frozenset(
    {
        "ExpiredToken",
        "ExpiredTokenException",
        "InvalidClientTokenId",
        "UnrecognizedClientException",
        "SignatureDoesNotMatch",
        "InvalidSignatureException",
        "AuthFailure",
    }
)


def retry_config() -> Config:
    """botocore's standard/adaptive retries (backoff with jitter on throttling); env vars still tune them."""
    mode = os.environ.get("AWS_RETRY_MODE") or DEFAULT_RETRY_MODE
    if mode not in ("legacy", "standard", "adaptive"):
        mode = DEFAULT_RETRY_MODE
    try:
        attempts = int(os.environ.get("AWS_MAX_ATTEMPTS") or DEFAULT_MAX_ATTEMPTS)
    except ValueError:
        attempts = DEFAULT_MAX_ATTEMPTS
    return Config(
        retries={"mode": mode, "total_max_attempts": max(1, attempts)},  # type: ignore[typeddict-item]
        connect_timeout=10,
        read_timeout=60,
    )


def endpoint_hint() -> str:
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        return f" (endpoint {endpoint} from AWS_ENDPOINT_URL: is the local AWS running? `doctable local up`)"
    return ""


def tls_hint() -> str:
    """The local AWS serves HTTPS under its own CA: a shell pointed at it without the bundle cannot verify it."""
    if os.environ.get("AWS_ENDPOINT_URL") and not os.environ.get("AWS_CA_BUNDLE"):
        return (
            ' (AWS_ENDPOINT_URL is set but AWS_CA_BUNDLE is not: `eval "$(doctable local env)"` exports both)'
        )
    return ""


# AWS's refusal message: "User: <principal> is not authorized to perform: <action> on resource: <resource>"
# (IAM's documented form, with "because ..." after it; S3 quotes the resource). A message without it (S3's bare
# "Access Denied") leaves action, resource and principal out.
REFUSAL = re.compile(
    r"User: (?P<principal>\S+) is not authorized to perform: (?P<action>[\w-]+:\w+)"
    r"(?: on resource: \"?(?P<resource>[^\s\"]+)\"?)?"
)
ACCESS_DENIED_CODES = frozenset({"AccessDenied", "AccessDeniedException", "UnauthorizedOperation"})


def failure_fields(exc: BaseException) -> dict[str, str]:
    """What ``--json`` says of an AWS failure, besides the message: ``code`` (aws.access_denied, aws.throttled,
    aws.credentials_rejected, aws.no_credentials, aws.no_region, aws.tls, aws.unreachable, aws.refused,
    aws.client), AWS's own ``aws_code`` and ``operation``, and for a refusal the ``action``, ``resource`` and
    ``principal`` AWS named."""
    if isinstance(exc, NoCredentialsError | PartialCredentialsError | ProfileNotFound):
        return {"code": "aws.no_credentials"}
    if isinstance(exc, NoRegionError):
        return {"code": "aws.no_region"}
    if isinstance(exc, SSLError):
        return {"code": "aws.tls"}
    if isinstance(exc, EndpointConnectionError | ConnectTimeoutError | ReadTimeoutError):
        return {"code": "aws.unreachable"}
    if not isinstance(exc, ClientError):
        return {"code": "aws.client"}
    aws_code = error_code(exc)
    fields = {"aws_code": aws_code, "operation": getattr(exc, "operation_name", "") or ""}
    if aws_code in THROTTLING_CODES:
        return {"code": "aws.throttled", **fields}
    if aws_code in CREDENTIAL_CODES:
        return {"code": "aws.credentials_rejected", **fields}
    if aws_code not in ACCESS_DENIED_CODES:
        return {"code": "aws.refused", **fields}
    found = REFUSAL.search(exc.response.get("Error", {}).get("Message", "") or "")
    named = {k: v for k, v in (found.groupdict() if found else {}).items() if v}
    return {"code": "aws.access_denied", **fields, **named}


def user_error_for(exc: BaseException, action: str = "") -> UserError | None:
    """The one-line message for an AWS failure a user can act on, with its fields for ``--json``."""
    error = _user_error_for(exc, action)
    if error is not None:
        error.fields = failure_fields(exc)
    return error


def _user_error_for(exc: BaseException, action: str = "") -> UserError | None:
    """The one-line message for an AWS failure a user can act on; None if it is not one of those."""
    doing = f" while {action}" if action else ""
    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        return UserError(
            f"no usable AWS credentials{doing}: configure the default chain (AWS_PROFILE, `aws configure`, "
            'SSO, an instance role) or, for the local AWS, `eval "$(doctable local env)"`'
        )
    if isinstance(exc, ProfileNotFound):
        return UserError(f"{exc}{doing}: fix AWS_PROFILE or ~/.aws/config")
    if isinstance(exc, NoRegionError):
        return UserError(f"no AWS region{doing}: set AWS_REGION (or pass --region)")
    if isinstance(exc, SSLError):
        return UserError(f"cannot verify AWS's TLS certificate{doing}: {exc}{tls_hint()}")
    if isinstance(exc, EndpointConnectionError | ConnectTimeoutError | ReadTimeoutError):
        return UserError(f"cannot reach AWS{doing}: {exc}{endpoint_hint()}")
    if isinstance(exc, ClientError):
        code = error_code(exc)
        operation = getattr(exc, "operation_name", "") or "a call"
        message = exc.response.get("Error", {}).get("Message", "")
        if code in THROTTLING_CODES:
            attempts = exc.response.get("ResponseMetadata", {}).get("RetryAttempts", 0)
            return UserError(
                f"AWS kept throttling {operation}{doing} ({code}) through {attempts} retries with backoff: "
                "wait a minute and re-run, or raise AWS_MAX_ATTEMPTS"
            )
        if code in CREDENTIAL_CODES:
            return UserError(
                f"AWS rejected the credentials{doing} ({code}: {message}): refresh them and re-run"
            )
        if code in ACCESS_DENIED_CODES:
            return UserError(f"access denied to {operation}{doing}: {message or code}")
        return UserError(f"{operation} failed{doing}: {code}: {message}")
    if isinstance(exc, BotoCoreError):
        return UserError(f"AWS client error{doing}: {exc}")
    if isinstance(exc, ResponseParserError):
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return UserError(
            f"AWS answered with a reply the client cannot parse{doing}: {first}{endpoint_hint()}"
        )
    return None


@contextmanager
def user_errors(action: str = "") -> Iterator[None]:
    """Turn botocore failures into :class:`UserError` (one line, exit 2) instead of a traceback."""
    try:
        yield
    except (BotoCoreError, ClientError, ResponseParserError) as exc:
        translated = user_error_for(exc, action)
        if translated is None:  # pragma: no cover - every botocore error is translated above
            raise
        raise translated from exc


@dataclass
class Aws:
    """One boto3 session and its clients (created on first use, all with the retry config)."""

    region: str
    session: boto3.session.Session
    _clients: dict[str, Any] = field(default_factory=dict)
    _identity: dict[str, str] | None = None

    @classmethod
    def connect(cls, region: str | None = None, profile: str | None = None) -> Aws:
        # botocore reads AWS_DEFAULT_REGION and AWS_PROFILE; the AWS CLI and the CDK also honour AWS_REGION.
        region = region or os.environ.get("AWS_REGION") or None
        with user_errors(f"starting the AWS session{f' with profile {profile}' if profile else ''}"):
            session = boto3.session.Session(region_name=region, profile_name=profile or None)
        if not session.region_name:
            raise UserError("no AWS region: set AWS_REGION (or pass --region)")
        return cls(region=session.region_name, session=session)

    def client(self, service: str) -> Any:
        if service not in self._clients:
            client = self.session.client(service, region_name=self.region, config=retry_config())
            if service == "s3":
                client.meta.events.register("provide-client-params.s3.*", self._name_bucket_owner)
            self._clients[service] = client
        return self._clients[service]

    def _name_bucket_owner(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        """Every S3 call names the environment's account as the bucket's owner (``ExpectedBucketOwner``): S3
        refuses it (403) on a bucket of another account, so no command reads, writes or empties a bucket that a
        name borrowed or claimed first elsewhere points at. A caller's own value is kept."""
        if OWNER_PARAM in model.input_shape.members:
            params.setdefault(OWNER_PARAM, self.account)

    def in_region(self, region: str) -> Aws:
        """The same session and identity with clients in ``region`` (a global table's replica region)."""
        if region == self.region:
            return self
        return Aws(region=region, session=self.session, _identity=self._identity)

    def identity(self) -> dict[str, str]:
        """Who we are (STS): the first call every command makes, so missing credentials fail fast and clearly."""
        if self._identity is None:
            with user_errors("checking who you are (sts get-caller-identity)"):
                reply = self.client("sts").get_caller_identity()
            self._identity = {"account": reply["Account"], "arn": reply["Arn"]}
        return self._identity

    @property
    def account(self) -> str:
        return self.identity()["account"]

    @property
    def partition(self) -> str:
        return self.session.get_partition_for_region(self.region) if self.region else "aws"


def bucket_exists(s3: Any, bucket: str) -> bool:
    """HeadBucket: True, or False when S3 says there is no such bucket. Its 403 carries no reason (a HEAD
    answer has no body), so the refusal is named here: s3:ListBucket is what authorizes HeadBucket."""
    try:
        s3.head_bucket(Bucket=bucket)
    except ClientError as exc:
        if is_not_found(exc):
            return False
        if exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 403:
            resource = f"arn:aws:s3:::{bucket}"
            raise AwsError(
                f"HeadBucket of {bucket} answered 403 without a reason: the caller is not authorized to perform: "
                f"s3:ListBucket on resource: {resource} (or the bucket is another account's)",
                {"code": "aws.access_denied", "aws_code": "403", "operation": "HeadBucket"}
                | {"action": "s3:ListBucket", "resource": resource},
            ) from None
        raise
    return True
