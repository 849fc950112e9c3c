"""Blob-store port and its S3 adapter.

One ``delete_keys`` call is ONE request (at most :data:`~.constants.MAX_KEYS_PER_DELETE` keys, each deleted only
if it still has the ETag given); ``observe`` is one HEAD. A whole-request failure is an exception.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from threading import Lock
from typing import Any, Protocol

from .constants import MAX_KEYS_PER_DELETE, OBSERVE_CONCURRENCY, SDK_MODELS_DIR

PRECONDITION_FAILED = "PreconditionFailed"


_lock = Lock()
_session: Any = None


def lazy_client(service: str) -> Any:
    """A client built on first use; botocore's, as boto3 adds only its resource layer and s3transfer (~100 ms).
    Its calls are X-Ray subsegments (:mod:`.xray`)."""
    global _session
    from botocore.config import Config
    from botocore.session import get_session

    with _lock:  # a botocore session builds one client at a time
        if _session is None:
            from .xray import AwsCallTracer

            _session = get_session()
            _use_sdk_models(_session)
            _session.get_component("response_parser_factory").set_parser_defaults(
                timestamp_parser=parse_timestamp
            )
            AwsCallTracer().install(_session)
        # All attempts fit the function's 30 s default timeout (3 x 8 s reads + backoff): a throttled call fails
        # its records (retried by the mapping) instead of timing out the batch. Lambda sets AWS_REGION; botocore
        # reads only AWS_DEFAULT_REGION.
        return _session.create_client(
            service,
            region_name=os.environ.get("AWS_REGION") or None,
            config=Config(
                retries={"mode": "standard", "max_attempts": 3},
                connect_timeout=2,
                read_timeout=8,
                max_pool_connections=OBSERVE_CONCURRENCY,
            ),
        )


def _use_sdk_models(session: Any) -> None:
    """Put the package's own botocore models of its operations (staged with the asset) on the session's data
    path, after any the environment names: botocore then loads them instead of the whole S3 and DynamoDB models.
    Without them (the sources run unstaged) botocore's models are used."""
    models = os.path.join(os.path.dirname(os.path.abspath(__file__)), SDK_MODELS_DIR)
    if os.path.isdir(models):
        configured = session.get_config_variable("data_path")
        session.set_config_variable("data_path", os.pathsep.join(p for p in (configured, models) if p))


def parse_timestamp(value: Any) -> Any:
    """botocore's timestamp parser, with S3's HTTP-date headers (a HEAD's Last-Modified) parsed by the standard
    library: botocore hands them to dateutil's general parser, about a third of a HEAD's CPU."""
    from email.utils import parsedate_to_datetime

    from botocore.utils import parse_timestamp as general

    if isinstance(value, str) and value.endswith(" GMT"):
        try:
            parsed = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return general(value)
        if parsed.tzinfo is not None:
            return parsed
    return general(value)


@dataclass(frozen=True)
class DeleteResult:
    """Keys of one request that could NOT be deleted (with the error), and keys left because their ETag changed.

    Keys not listed succeeded; a key that did not exist counts as success.
    """

    failures: Mapping[str, str] = field(default_factory=dict)
    changed: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ObjectIdentity:
    """What one HEAD observed: the object's ETag (as S3 returns it, quoted) and LastModified (epoch seconds)."""

    etag: str
    last_modified: float


class BlobStore(Protocol):
    def delete_keys(self, keys: Sequence[str], etags: Mapping[str, str] | None = None) -> DeleteResult:
        """Delete up to ``MAX_KEYS_PER_DELETE`` keys in one request, each key in ``etags`` only if its object
        still has that ETag; raise if the request as a whole fails."""
        ...

    def observe(self, key: str) -> ObjectIdentity | None:
        """The identity of the object ``key`` names now (one HEAD), None if there is none; raise on failure."""
        ...

    def list_prefix(self, prefix: str) -> list[str]:
        """Every key under ``prefix``; raise on failure."""
        ...


def account_of(function_arn: str) -> str:
    """The account of a Lambda function's ARN (``arn:<partition>:lambda:<region>:<account>:function:<name>``)."""
    parts = function_arn.split(":")
    account = parts[4] if len(parts) > 5 and parts[2] == "lambda" else ""
    if not (len(account) == 12 and account.isdigit()):
        raise ValueError(f"no 12-digit account in the function ARN {function_arn!r}")
    return account


class S3BlobStore:
    """S3 adapter (client built on first use). Every call names ``owner``, the account the bucket must belong to
    (``ExpectedBucketOwner``: S3 refuses it with 403 on a bucket of another account); the handler sets it from
    the function's own ARN, the account the stack deployed the bucket in."""

    def __init__(self, bucket: str, client: Any | None = None, *, owner: str | None = None) -> None:
        self.bucket = bucket
        self.owner = owner
        self._client = client
        self._lock = Lock()

    def _owned(self) -> dict[str, str]:
        """The parameters every call names the bucket by: its name and its expected owner."""
        if self.owner is None:
            raise RuntimeError(f"the owner of bucket {self.bucket} is not known: no S3 call without it")
        return {"Bucket": self.bucket, "ExpectedBucketOwner": self.owner}

    @property
    def client(self) -> Any:
        with self._lock:  # the first batch's parallel HEADs build one client, not one each
            if self._client is None:
                self._client = lazy_client("s3")
        return self._client

    def delete_keys(self, keys: Sequence[str], etags: Mapping[str, str] | None = None) -> DeleteResult:
        if not keys:
            return DeleteResult()
        if len(keys) > MAX_KEYS_PER_DELETE:
            raise ValueError(f"at most {MAX_KEYS_PER_DELETE} keys per DeleteObjects request, got {len(keys)}")
        conditions = etags or {}
        response = self.client.delete_objects(
            **self._owned(),
            Delete={
                "Objects": [
                    {"Key": key, "ETag": conditions[key]} if key in conditions else {"Key": key}
                    for key in keys
                ],
                "Quiet": True,
            },
        )
        errors = response.get("Errors", [])
        changed = frozenset(e["Key"] for e in errors if e.get("Code") == PRECONDITION_FAILED)
        failures = {
            error["Key"]: f"{error.get('Code', 'Unknown')}: {error.get('Message', '')}".rstrip(": ")
            for error in errors
            # NoSuchKey: already gone, the goal is reached; PreconditionFailed: another object now, left alone
            if error.get("Code") not in ("NoSuchKey", PRECONDITION_FAILED)
        }
        return DeleteResult(failures, changed)

    def observe(self, key: str) -> ObjectIdentity | None:
        from botocore.exceptions import ClientError

        try:
            head = self.client.head_object(**self._owned(), Key=key)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise
        return ObjectIdentity(head["ETag"], head["LastModified"].timestamp())

    def list_prefix(self, prefix: str) -> list[str]:
        paginator = self.client.get_paginator("list_objects_v2")
        return [
            item["Key"]
            for page in paginator.paginate(**self._owned(), Prefix=prefix)
            for item in page.get("Contents", [])
        ]
