"""Blob-store port and its S3 adapter.

The port is deliberately small: one ``delete_keys`` call is ONE store request (at most
:data:`~.constants.MAX_KEYS_PER_DELETE` keys) so the caller controls batching, and a whole-request
failure is an exception (the caller fails every key of that request).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .constants import MAX_KEYS_PER_DELETE


@dataclass(frozen=True)
class DeleteResult:
    """Outcome of one delete request: keys that could NOT be deleted, each with an error text.

    Keys not listed succeeded; a key that did not exist counts as success.
    """

    failures: Mapping[str, str] = field(default_factory=dict)


class BlobStore(Protocol):
    def delete_keys(self, keys: Sequence[str]) -> DeleteResult:
        """Delete up to ``MAX_KEYS_PER_DELETE`` keys in one request; raise if the request as a whole fails."""
        ...

    def list_prefix(self, prefix: str) -> list[str]:
        """Every key under ``prefix``; raise on failure."""
        ...


class S3BlobStore:
    """S3 adapter. The boto3 client is created on first use (not at import) and then reused.

    ``on_client`` runs once, just before that client is created (the handler patches botocore for X-Ray there).
    """

    def __init__(
        self, bucket: str, client: Any | None = None, on_client: Callable[[], object] | None = None
    ) -> None:
        self.bucket = bucket
        self._client = client
        self._on_client = on_client

    @property
    def client(self) -> Any:
        if self._client is None:
            import boto3  # deferred: batches with nothing to delete never pay for it
            from botocore.config import Config

            if self._on_client is not None:
                self._on_client()
            # Bounded so that all attempts fit in the function's 30 s default timeout (3 x 8 s reads + backoff):
            # a throttled key then fails its record, which the mapping retries, instead of timing out the batch.
            self._client = boto3.client(
                "s3",
                config=Config(
                    retries={"mode": "standard", "max_attempts": 3}, connect_timeout=2, read_timeout=8
                ),
            )
        return self._client

    def delete_keys(self, keys: Sequence[str]) -> DeleteResult:
        if not keys:
            return DeleteResult()
        if len(keys) > MAX_KEYS_PER_DELETE:
            raise ValueError(f"at most {MAX_KEYS_PER_DELETE} keys per DeleteObjects request, got {len(keys)}")
        response = self.client.delete_objects(
            Bucket=self.bucket,
            Delete={"Objects": [{"Key": key} for key in keys], "Quiet": True},
        )
        failures = {
            error["Key"]: f"{error.get('Code', 'Unknown')}: {error.get('Message', '')}".rstrip(": ")
            for error in response.get("Errors", [])
            if error.get("Code") != "NoSuchKey"  # already gone: the goal is reached
        }
        return DeleteResult(failures)

    def list_prefix(self, prefix: str) -> list[str]:
        paginator = self.client.get_paginator("list_objects_v2")
        return [
            item["Key"]
            for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix)
            for item in page.get("Contents", [])
        ]
