"""The client's errors: one hierarchy, each error naming the document (pk, sk) and the step that failed.

``str(error)`` is one line: ``<step> of document (pk='a', sk='b'): <what happened>``, followed by the keys of
any blob this call uploaded and could not delete (``error.orphans``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# The steps an error can name.
VALIDATE = "validate"
CONFIGURE = "configure"
READ_VERSION = "read-version"
UPLOAD = "upload"
PUT_ITEM = "put-item"
DELETE_ITEM = "delete-item"
UPDATE_ITEM = "update-item"
GET_ITEM = "get-item"
QUERY = "query"
DESCRIBE_TABLE = "describe-table"
READ_MANIFEST = "read-manifest"
READ_BLOB = "read-blob"
ROLLBACK = "rollback"


class DocTableError(Exception):
    """Base of every error the client raises."""

    def __init__(
        self,
        detail: str,
        *,
        step: str,
        pk: str | None = None,
        sk: str | None = None,
        orphans: Sequence[str] = (),
    ) -> None:
        self.detail = " ".join(str(detail).split())  # one line, whatever the cause said
        self.step = step
        self.pk = pk
        self.sk = sk
        # Keys this call uploaded and could not delete again: no item lists them; delete them or let a lifecycle
        # rule of the bucket do it.
        self.orphans: tuple[str, ...] = tuple(orphans)
        super().__init__(self.detail)

    def __str__(self) -> str:
        where = "doctable" if self.pk is None else f"document (pk={self.pk!r}, sk={self.sk!r})"
        text = f"{self.step} of {where}: {self.detail}"
        if self.orphans:
            text += f"; {len(self.orphans)} uploaded blob(s) left behind (orphans): {', '.join(self.orphans)}"
        return text


class ValidationError(DocTableError, ValueError):
    """A bad argument, refused before any call to AWS."""


class ConfigurationError(DocTableError):
    """The deployment cannot be used: a missing stack output, a blob root that disagrees with the stack's."""


# The stable code of BucketOwnerError (its ``code``), as ``--json`` and tests key on it.
BUCKET_NOT_OWNED = "bucket.not_owned"


class BucketOwnerError(ConfigurationError):
    """S3 refused a call that named the account expected to own the bucket (``ExpectedBucketOwner``): the bucket
    is another account's, or this identity may not make the call there (S3 answers both with 403). Nothing was
    written to it."""

    code = BUCKET_NOT_OWNED

    def __init__(
        self,
        detail: str,
        *,
        step: str,
        bucket: str,
        owner: str,
        pk: str | None = None,
        sk: str | None = None,
        orphans: Sequence[str] = (),
    ) -> None:
        super().__init__(detail, step=step, pk=pk, sk=sk, orphans=orphans)
        self.bucket = bucket
        self.expected_owner = owner


class ConflictError(DocTableError):
    """Another writer changed the document first: its version is not the one this write expected."""

    def __init__(
        self,
        detail: str,
        *,
        step: str,
        pk: str,
        sk: str,
        expected_version: int | None,
        current_version: int | None,
        orphans: Sequence[str] = (),
    ) -> None:
        super().__init__(detail, step=step, pk=pk, sk=sk, orphans=orphans)
        self.expected_version = expected_version  # None: the write expected no document
        self.current_version = current_version  # None: the document does not exist (any more)


class NotFoundError(DocTableError):
    """The document does not exist."""


class BlobMissingError(NotFoundError):
    """A blob the document lists is not in the bucket."""


class BlobChangedError(DocTableError):
    """A blob the document lists was overwritten: its ETag is not the one in the manifest."""


class ManifestError(DocTableError):
    """The item's ``blobs`` attribute is not a list of manifest entries (another writer's item)."""


class UploadError(DocTableError):
    """Uploading a blob failed (AWS refused it, the connection failed, or reading its source failed)."""

    def __init__(self, detail: str, *, pk: str, sk: str, blob: str, orphans: Sequence[str] = ()) -> None:
        super().__init__(detail, step=UPLOAD, pk=pk, sk=sk, orphans=orphans)
        self.blob = blob


class AwsError(DocTableError):
    """AWS refused or failed a call the client cannot interpret; ``code`` is AWS's error code."""

    def __init__(
        self,
        detail: str,
        *,
        step: str,
        pk: str | None,
        sk: str | None,
        code: str,
        attempts: int,
        response: Mapping[str, Any] | None = None,
        orphans: Sequence[str] = (),
    ) -> None:
        super().__init__(detail, step=step, pk=pk, sk=sk, orphans=orphans)
        self.code = code  # "" for a failure with no answer (connection, timeout)
        self.attempts = attempts
        self.response: Mapping[str, Any] = response or {}


class ThrottledError(AwsError):
    """AWS throttled every attempt, backoff and jitter included."""
