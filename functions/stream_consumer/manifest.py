"""An image's ``blobs`` attribute as entries: plain keys, and manifest entries ``{key, etag, size}`` carrying the
ETag the application recorded at upload (docs/data-contract.md). Pure; no I/O."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from .constants import MANIFEST_ETAG, MANIFEST_KEY, MANIFEST_SIZE

# An S3 ETag as PutObject returns it: hex (an MD5, with "-<parts>" after a multipart upload) or, in a directory
# bucket, alphanumeric; quoted, or not. "*" (any object) and weak ETags are not an object's identity.
_ETAG = re.compile(r'^("?)([0-9A-Za-z]{1,1024}(?:-[0-9]{1,5})?)\1$')


class ManifestError(ValueError):
    """A ``blobs`` attribute, or one of its entries, that does not say which blobs an item lists."""


@dataclass(frozen=True)
class BlobEntry:
    """One entry of an image's ``blobs`` (docs/data-contract.md): a plain key, or a manifest entry carrying the
    ETag the application recorded when it uploaded the object (quoted, as S3 returns it). ``key`` is what was
    listed: a non-string is refused by :func:`key_refusal`, as is any key outside the record's prefix."""

    key: Any
    etag: str | None = None
    size: int | None = None


def manifest_of(value: Any) -> tuple[BlobEntry, ...]:
    """A deserialized ``blobs`` value as entries; :class:`ManifestError` (its text continues ``blobs``) when it
    cannot say which blobs the item lists: not a list or a string set, or a map entry that is not a manifest
    entry. A string is a plain key; anything else in the list (a number...) is an entry refused at planning."""
    if value is None:  # absent, or NULL
        return ()
    if isinstance(value, set):
        if all(isinstance(item, str) for item in value):
            return tuple(BlobEntry(key) for key in sorted(value))  # deterministic order for string sets
        raise ManifestError(" must be a list or a string set, got number set")
    if not isinstance(value, list):
        raise ManifestError(f" must be a list or a string set, got {type(value).__name__}")
    entries = tuple(
        _manifest_entry(item, index) if isinstance(item, dict) else BlobEntry(item)
        for index, item in enumerate(value)
    )
    recorded: dict[str, str] = {}
    for entry in entries:
        if entry.etag is None:
            continue
        if recorded.setdefault(entry.key, entry.etag) != entry.etag:
            raise ManifestError(
                f" lists {entry.key!r} with two ETags, {recorded[entry.key]} and {entry.etag}"
            )
    return entries


def _manifest_entry(entry: dict[str, Any], index: int) -> BlobEntry:
    """A map entry: ``key`` (S) and ``etag`` (S, an S3 ETag) required, ``size`` (N) optional, others ignored."""
    where = f"[{index}]"
    if MANIFEST_KEY not in entry:
        raise ManifestError(
            f"{where} is a map without '{MANIFEST_KEY}' (a manifest entry is {{key, etag, size}})"
        )
    key, etag, size = entry[MANIFEST_KEY], entry.get(MANIFEST_ETAG), entry.get(MANIFEST_SIZE)
    if not isinstance(key, str):
        raise ManifestError(f"{where}.{MANIFEST_KEY} must be a string, got {_shown(key)}")
    if MANIFEST_ETAG not in entry:
        raise ManifestError(f"{where} has no '{MANIFEST_ETAG}' (a manifest entry records its object's ETag)")
    match = _ETAG.match(etag) if isinstance(etag, str) else None
    if match is None:
        raise ManifestError(
            f"{where}.{MANIFEST_ETAG} must be an S3 ETag (hex, optionally quoted), got {_shown(etag)}"
        )
    if size is not None and (not isinstance(size, Decimal) or size < 0 or size % 1):
        raise ManifestError(f"{where}.{MANIFEST_SIZE} must be a whole number of bytes, got {_shown(size)}")
    return BlobEntry(key, f'"{match.group(2)}"', None if size is None else int(size))


def _shown(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, (str, Decimal)):
        return repr(value) if isinstance(value, str) else f"the number {value}"
    return f"a {type(value).__name__}"
