"""The data contract as the application writes it: attribute names, where a record's blobs live, fresh blob keys,
and the checks that refuse a bad call with one line before any call to AWS.

The names are copies of contract/'s (this package must stay installable with boto3 alone, and imports nothing of
the project): tests/unit/test_client_contract.py checks that they are equal.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from doctable.client.errors import VALIDATE, ValidationError

# The table (contract/names.py).
PARTITION_KEY = "pk"
SORT_KEY = "sk"
BLOBS_ATTRIBUTE = "blobs"
TTL_ATTRIBUTE = "expiresAt"
GSI_KEYS = ("gsi1pk", "gsi1sk")  # the generic index's keys: strings when present
GSI_INDEX = GSI_KEYS[0].removesuffix("pk")  # the generic index's name (the gsi knob's value when it is on)
# The application's half of the contract: the document's version, for conditional writes.
VERSION_ATTRIBUTE = "version"
RESERVED_ATTRIBUTES = frozenset({PARTITION_KEY, SORT_KEY, BLOBS_ATTRIBUTE, VERSION_ATTRIBUTE, TTL_ATTRIBUTE})

# A manifest entry: one DynamoDB map per blob.
ENTRY_KEY, ENTRY_ETAG, ENTRY_SIZE = "key", "etag", "size"

# The stack (contract/names.py, contract/knobs/__init__.py).
STACK_PREFIX = "doctable-"
DEFAULT_TABLE_BASE = "items"
OUT_TABLE_NAME = "TableName"
OUT_BLOB_BUCKET = "BlobBucketName"
OUT_KNOBS = "Knobs"  # JSON of the knobs the stack was deployed with; blob_root among them
BLOB_ROOT_KNOB = "blob_root"
DEFAULT_BLOB_ROOT = ""
BLOB_ROOT_RE = re.compile(r"^([A-Za-z0-9!_.*'()-]+/)*$")

# DynamoDB's and S3's limits.
MAX_PARTITION_KEY_BYTES = 2048
MAX_SORT_KEY_BYTES = 1024
MAX_OBJECT_KEY_BYTES = 1024
# An expiresAt above this is milliseconds (the year 5138 in seconds): DynamoDB's TTL would never expire it.
MAX_EPOCH_SECONDS = 10**11

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_FRESH_SUFFIX = re.compile(r"-[0-9a-f]{32}$")


def _refuse(pk: Any, sk: Any, detail: str) -> ValidationError:
    return ValidationError(detail, step=VALIDATE, pk=pk if isinstance(pk, str) else repr(pk), sk=sk)


def check_key(pk: Any, sk: Any) -> None:
    """The document's key: two non-empty strings within DynamoDB's sizes."""
    for name, value, limit in (("pk", pk, MAX_PARTITION_KEY_BYTES), ("sk", sk, MAX_SORT_KEY_BYTES)):
        if not isinstance(value, str):
            raise _refuse(pk, sk, f"{name} must be a string, got {type(value).__name__}")
        if not value:
            raise _refuse(pk, sk, f"{name} must not be empty")
        if len(value.encode()) > limit:
            raise _refuse(pk, sk, f"{name} is longer than DynamoDB's {limit} bytes")


def _unsafe_segment(text: str) -> str | None:
    if text in (".", ".."):
        return f"is {text!r}"
    for char, label in (("/", "'/'"), ("\\", "a backslash")):
        if char in text:
            return f"contains {label}"
    if _CONTROL.search(text):
        return "contains a control character"
    return None


def check_blob_key_parts(pk: str, sk: str) -> None:
    """A document with blobs owns ``<blob_root><pk>/<sk>/``: the consumer refuses every key of a record whose pk
    or sk would make that prefix ambiguous (``a`` + ``b/c`` and ``a/b`` + ``c`` share it), so such a document
    could never have its blobs cleaned. Refused here instead of leaking."""
    for name, value in (("pk", pk), ("sk", sk)):
        problem = _unsafe_segment(value)
        if problem:
            raise _refuse(
                pk,
                sk,
                f"{name} {problem}: a document with blobs needs a pk and sk without '/', '\\', control characters, '.' or '..' (its blobs live under <blob_root><pk>/<sk>/)",
            )


def check_blob_name(pk: str, sk: str, name: Any) -> None:
    if not isinstance(name, str):
        raise _refuse(pk, sk, f"a blob name must be a string, got {type(name).__name__}")
    if not name:
        raise _refuse(pk, sk, "a blob name must not be empty")
    problem = _unsafe_segment(name)
    if problem:
        raise _refuse(pk, sk, f"blob name {name!r} {problem}")


def check_attributes(pk: str, sk: str, attributes: Any) -> dict[str, Any]:
    """The document's own attributes: a mapping of non-empty names, none of them the contract's."""
    if attributes is None:
        return {}
    if not isinstance(attributes, Mapping):
        raise _refuse(pk, sk, f"attributes must be a mapping, got {type(attributes).__name__}")
    for name, value in attributes.items():
        if not isinstance(name, str) or not name:
            raise _refuse(pk, sk, f"attribute names must be non-empty strings, got {name!r}")
        if name in RESERVED_ATTRIBUTES:
            hint = "pass expires_at=" if name == TTL_ATTRIBUTE else "the client writes it"
            raise _refuse(
                pk, sk, f"attribute {name!r} is reserved ({', '.join(sorted(RESERVED_ATTRIBUTES))}): {hint}"
            )
        if name in GSI_KEYS and not (isinstance(value, str) and value):
            raise _refuse(
                pk, sk, f"attribute {name!r} is a key of the index gsi1: it must be a non-empty string"
            )
    return dict(attributes)


def check_version(pk: str, sk: str, version: Any) -> int | None:
    if version is None:
        return None
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise _refuse(pk, sk, f"expected_version must be an integer >= 0 or None, got {version!r}")
    return version


def epoch_seconds(pk: str, sk: str, at: Any) -> int | None:
    """``at`` as DynamoDB's TTL reads it: epoch seconds, an int; a datetime must be timezone-aware."""
    if at is None:
        return None
    if isinstance(at, datetime):
        if at.tzinfo is None or at.utcoffset() is None:
            raise _refuse(pk, sk, f"expires_at {at.isoformat()} has no timezone: give an aware datetime")
        return int(at.timestamp())
    if not isinstance(at, int) or isinstance(at, bool):
        raise _refuse(
            pk, sk, f"expires_at must be epoch seconds (int) or a datetime, got {type(at).__name__}"
        )
    if not 0 <= at < MAX_EPOCH_SECONDS:
        raise _refuse(pk, sk, f"expires_at {at} is not epoch seconds (milliseconds would never expire)")
    return at


def check_blob_root(root: Any) -> str:
    if not isinstance(root, str) or not BLOB_ROOT_RE.match(root) or ".." in root.split("/"):
        raise ValidationError(
            f"blob_root {root!r} is malformed; allowed: empty or a key prefix of safe characters ending in '/'",
            step=VALIDATE,
        )
    return root


def is_account(value: Any) -> bool:
    """An AWS account ID: 12 digits."""
    return isinstance(value, str) and len(value) == 12 and value.isdigit()


def account_of_arn(arn: str) -> str | None:
    """The account an ARN names (``arn:<partition>:<service>:<region>:<account>:...``), None without one."""
    parts = arn.split(":")
    return parts[4] if len(parts) > 5 and parts[0] == "arn" and is_account(parts[4]) else None


def record_prefix(root: str, pk: str, sk: str) -> str:
    """Where the consumer lets the record (pk, sk) own blobs."""
    return f"{root}{pk}/{sk}/"


def fresh_key(root: str, pk: str, sk: str, name: str) -> str:
    """A key never used before: ``<blob_root><pk>/<sk>/<name>-<uuid4 hex>`` (the consumer may then delete a
    dropped key at once, whatever ``blob_key_reuse`` says)."""
    key = f"{record_prefix(root, pk, sk)}{name}-{uuid.uuid4().hex}"
    if len(key.encode()) > MAX_OBJECT_KEY_BYTES:
        raise _refuse(pk, sk, f"blob {name!r} would get a key longer than S3's {MAX_OBJECT_KEY_BYTES} bytes")
    return key


def name_of(key: str, prefix: str) -> str:
    """The blob name a key was made from (``fresh_key``); another writer's key is named by its path under the
    record's prefix, or whole when outside it."""
    if not key.startswith(prefix):
        return key
    rest = key[len(prefix) :]
    return _FRESH_SUFFIX.sub("", rest) if _FRESH_SUFFIX.search(rest) and "/" not in rest else rest


def stack_name(env: str, table_base: str = DEFAULT_TABLE_BASE) -> str:
    """The stack of an environment: ``doctable-<table_base>-<env>``."""
    return f"{STACK_PREFIX}{table_base}-{env}"
