"""The blob side of a write and a read: what a blob may be given as, uploads under fresh keys (never over an
existing object), the deletes that undo a failed write, and conditional fetches."""

from __future__ import annotations

import functools
import io
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Union

from botocore.exceptions import BotoCoreError, ClientError

from doctable.client.document import BlobEntry, BlobReader
from doctable.client.errors import (
    CONFIGURE,
    READ_BLOB,
    ROLLBACK,
    UPLOAD,
    VALIDATE,
    AwsError,
    BlobChangedError,
    BlobMissingError,
    BucketOwnerError,
    UploadError,
    ValidationError,
)
from doctable.client.retry import TRANSIENT, RetryPolicy, classify, error_code

# What a blob's content may be given as: bytes, a binary file object (read from its current position), or a
# path (os.PathLike; a str is refused: content or a path?).
BlobSource = Union[
    bytes, bytearray, memoryview, "os.PathLike[str]", IO[bytes], io.RawIOBase, io.BufferedIOBase
]

DELETE_BATCH = 1000  # keys per DeleteObjects
_MISSING = ("NoSuchKey", "404", "NotFound")
_PRECONDITION = ("PreconditionFailed", "412")
_REFUSED = ("AccessDenied", "403")  # a HEAD's refusal has no body: its code is the status


@dataclass(frozen=True)
class Source:
    """A validated blob source; ``body()`` gives (body, size) for one attempt, rewound for each retry."""

    name: str
    body: Callable[[], Any]


def source_of(pk: str, sk: str, name: str, value: Any) -> Source:
    """Check a blob's value before anything is uploaded (ValidationError with one line)."""

    def refuse(detail: str) -> ValidationError:
        return ValidationError(f"blob {name!r}: {detail}", step=VALIDATE, pk=pk, sk=sk)

    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        return Source(name, lambda: nullcontext((data, len(data))))
    if isinstance(value, str):
        raise refuse("a str is ambiguous; give bytes (the content) or a pathlib.Path (a file)")
    if isinstance(value, os.PathLike):
        path = Path(value)
        if not path.is_file():
            raise refuse(f"{str(path)!r} is not a file")
        return Source(name, lambda: _path_body(path))
    if callable(getattr(value, "read", None)):
        if isinstance(value, io.TextIOBase):
            raise refuse("a text-mode file; open it in binary mode ('rb')")
        return Source(name, _stream_body(value))
    raise refuse(f"{type(value).__name__} is not bytes, a binary file object or a path")


@contextmanager
def _path_body(path: Path) -> Iterator[tuple[Any, int]]:
    with path.open("rb") as handle:
        yield handle, os.fstat(handle.fileno()).st_size


def _stream_body(stream: Any) -> Callable[[], Any]:
    """A seekable stream is rewound to where it stood for each attempt; another is read once into memory (it
    cannot be sent twice). The caller keeps ownership: it is never closed here."""
    seekable = bool(getattr(stream, "seekable", lambda: False)())
    start = stream.tell() if seekable else 0
    cached: list[bytes] = []

    @contextmanager
    def body() -> Iterator[tuple[Any, int]]:
        if seekable:
            size = stream.seek(0, io.SEEK_END) - start
            stream.seek(start)
            yield stream, size
            return
        if not cached:
            data = stream.read()
            if not isinstance(data, (bytes, bytearray)):
                raise TypeError(f"the stream gave {type(data).__name__}, not bytes")
            cached.append(bytes(data))
        yield cached[0], len(cached[0])

    return body


class BlobStore:
    """The bucket's side of the client; ``clients`` gives the client's boto3 clients by service, built on first use.
    Every call names the account the bucket must belong to (``ExpectedBucketOwner``): ``owner``, else the
    credentials' own (STS GetCallerIdentity, once). S3 refuses (403) a bucket that a name borrowed or claimed first
    in another account points at, and nothing is written to it."""

    def __init__(
        self, clients: Callable[[str], Any], bucket: str, retry: RetryPolicy, owner: str | None = None
    ) -> None:
        self._clients = clients
        self._owner_of = owner
        self.bucket = bucket
        self.retry = retry

    def _s3(self) -> Any:
        return self._clients("s3")

    def _owner(self) -> str:
        if self._owner_of is None:
            reply = self.retry.call(self._clients("sts").get_caller_identity, step=CONFIGURE)
            self._owner_of = str(reply["Account"])
        return self._owner_of

    def _named(self) -> dict[str, str]:
        """The parameters every call names the bucket by: its name and the account expected to own it."""
        return {"Bucket": self.bucket, "ExpectedBucketOwner": self._owner()}

    def refused(
        self, exc: BaseException, operation: str, step: str, pk: str, sk: str
    ) -> BucketOwnerError | None:
        """The error of a call S3 refused while it named the bucket's owner; None for any other failure."""
        cause = exc.__cause__ if isinstance(exc, AwsError) else exc
        if cause is None or error_code(cause) not in _REFUSED:
            return None
        owner = self._owner()
        return BucketOwnerError(
            f"bucket {self.bucket} refused {operation} (403) naming account {owner} as its owner: it is another "
            f"account's bucket, or this identity may not call {operation} there; allowed: a bucket of account "
            f"{owner} (the stack's, or the one bucket_owner names)",
            step=step, bucket=self.bucket, owner=owner, pk=pk, sk=sk,
        )  # fmt: skip

    def _if_none_match(self, s3: Any) -> dict[str, str]:
        # S3's conditional writes (2024): an upload never replaces an object. Left out for a botocore too old
        # to know the parameter; fresh keys (uuid4) alone still never collide.
        members = s3.meta.service_model.operation_model("PutObject").input_shape.members
        return {"IfNoneMatch": "*"} if "IfNoneMatch" in members else {}

    def upload(self, pk: str, sk: str, source: Source, key: str, attempted: list[str]) -> BlobEntry:
        """Upload ``source`` to ``key``, retried on throttling and transient failures; the key is recorded in
        ``attempted`` before the first request (a request with no answer may have created the object)."""
        s3 = self._s3()
        condition = {**self._if_none_match(s3), **self._named()}
        attempted.append(key)
        maybe_created = False  # an attempt failed without a definite answer: the object may exist

        def failed(detail: str, exc: BaseException | None = None) -> UploadError | BucketOwnerError:
            if not maybe_created:
                attempted.remove(key)  # S3 answered: nothing was created, nothing to take back
            refused = None if exc is None else self.refused(exc, "PutObject", UPLOAD, pk, sk)
            return refused or UploadError(f"blob {source.name!r}: {detail}", pk=pk, sk=sk, blob=source.name)

        attempt = 0
        while True:
            attempt += 1
            try:
                with source.body() as (body, size):
                    reply = s3.put_object(Key=key, Body=body, **condition)
                return BlobEntry(key, str(reply["ETag"]), int(size))
            except (ClientError, BotoCoreError) as exc:
                if error_code(exc) in _PRECONDITION:
                    if maybe_created:  # an earlier attempt of ours created it and its answer was lost
                        try:
                            head = self.retry.call(
                                functools.partial(s3.head_object, Key=key, **self._named()),
                                step=UPLOAD,
                                pk=pk,
                                sk=sk,
                            )
                        except AwsError as lost:
                            raise failed(f"uploaded, but its ETag could not be read: {lost.detail}") from lost
                        return BlobEntry(key, str(head["ETag"]), int(head["ContentLength"]))
                    raise failed(f"an object already exists at {key}") from exc  # not ours: never deleted
                kind = classify(exc)
                maybe_created = maybe_created or kind == TRANSIENT
                if kind is None or attempt >= self.retry.max_attempts:
                    after = f" (after {attempt} attempts)" if attempt > 1 else ""
                    raise failed(f"{exc}{after}", exc) from exc
                self.retry.sleep(self.retry.delay(attempt))
            except Exception as exc:  # the source failed: a file or stream the application gave
                raise failed(f"reading its content failed: {type(exc).__name__}: {exc}") from exc

    def delete(self, pk: str, sk: str, keys: Sequence[str]) -> list[str]:
        """Delete ``keys`` (a failed write's uploads); the keys that could not be deleted."""
        left: list[str] = []
        for start in range(0, len(keys), DELETE_BATCH):
            chunk = list(keys[start : start + DELETE_BATCH])
            request = {
                **self._named(),
                "Delete": {"Objects": [{"Key": k} for k in chunk], "Quiet": True},
            }
            try:
                reply = self.retry.call(
                    functools.partial(self._s3().delete_objects, **request),
                    step=ROLLBACK,
                    pk=pk,
                    sk=sk,
                )
            except AwsError:
                left.extend(chunk)
                continue
            left.extend(e["Key"] for e in reply.get("Errors", []) if e.get("Code") not in _MISSING)
        return left

    def fetch(self, reader: BlobReader) -> Any:
        """The body of ``reader``'s object, if it still has the manifest's ETag."""
        pk, sk = reader.pk, reader.sk
        request: dict[str, Any] = {**self._named(), "Key": reader.key}
        if reader.etag:
            request["IfMatch"] = reader.etag
        try:
            reply = self.retry.call(lambda: self._s3().get_object(**request), step=READ_BLOB, pk=pk, sk=sk)
        except AwsError as exc:
            refused = self.refused(exc, "GetObject", READ_BLOB, pk, sk)
            if refused is not None:
                raise refused from exc
            if exc.code in _PRECONDITION:
                raise BlobChangedError(
                    f"blob {reader.name!r} ({reader.key}) no longer has ETag {reader.etag}",
                    step=READ_BLOB,
                    pk=pk,
                    sk=sk,
                ) from exc
            if exc.code in _MISSING:
                raise BlobMissingError(
                    f"blob {reader.name!r} ({reader.key}) is not in bucket {self.bucket}",
                    step=READ_BLOB,
                    pk=pk,
                    sk=sk,
                ) from exc
            raise
        return reply["Body"]
