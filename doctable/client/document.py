"""What the table holds for a document, read back: the manifest entries, the document, and lazy blob readers.

A manifest entry is a DynamoDB map ``{"key": S, "etag": S, "size": N}``: the blob's object key, its ETag as
PutObject returned it (quotes included) and its size in bytes. A plain string (another writer's item) is read as
a key with no ETag and no size.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import BotoCoreError

from doctable.client import rules
from doctable.client.errors import READ_BLOB, READ_MANIFEST, DocTableError, ManifestError

_DESERIALIZER = TypeDeserializer()


@dataclass(frozen=True)
class BlobEntry:
    key: str
    etag: str | None
    size: int | None

    def to_attribute(self) -> dict[str, Any]:
        """The entry as a DynamoDB attribute value (a map); only entries with an ETag and a size are written."""
        assert self.etag is not None and self.size is not None
        return {
            "M": {
                rules.ENTRY_KEY: {"S": self.key},
                rules.ENTRY_ETAG: {"S": self.etag},
                rules.ENTRY_SIZE: {"N": str(self.size)},
            }
        }


def manifest_attribute(entries: list[BlobEntry]) -> dict[str, Any]:
    return {"L": [entry.to_attribute() for entry in entries]}


def manifest_of(item: Mapping[str, Any], *, pk: str, sk: str) -> list[BlobEntry]:
    """The entries of a raw item's ``blobs`` (absent or NULL: none); ManifestError when it is not a manifest."""
    raw = item.get(rules.BLOBS_ATTRIBUTE)
    if raw is None or "NULL" in raw:
        return []
    if "SS" in raw:
        return [BlobEntry(key, None, None) for key in sorted(raw["SS"])]
    if "L" not in raw:
        raise ManifestError(f"blobs is {next(iter(raw), '?')}, not a list", step=READ_MANIFEST, pk=pk, sk=sk)
    entries = []
    for position, value in enumerate(raw["L"]):
        if "S" in value:
            entries.append(BlobEntry(value["S"], None, None))
            continue
        fields = value.get("M", {})
        key, etag, size = (fields.get(n, {}) for n in (rules.ENTRY_KEY, rules.ENTRY_ETAG, rules.ENTRY_SIZE))
        if "S" not in key or "S" not in etag or "N" not in size:
            raise ManifestError(
                f"blobs[{position}] is not a map of key (S), etag (S) and size (N)",
                step=READ_MANIFEST,
                pk=pk,
                sk=sk,
            )
        entries.append(BlobEntry(key["S"], etag["S"], int(size["N"])))
    return entries


def version_of(item: Mapping[str, Any]) -> int:
    """The item's version; 0 for an item written without one."""
    raw = item.get(rules.VERSION_ATTRIBUTE, {})
    return int(raw["N"]) if "N" in raw else 0


@dataclass(frozen=True)
class BlobReader:
    """One blob of a document; nothing is fetched until ``read()`` or ``open()``. Each fetch is conditional on
    the manifest's ETag (If-Match): BlobChangedError if the object was overwritten, BlobMissingError if it is
    gone."""

    pk: str
    sk: str
    name: str
    entry: BlobEntry
    _fetch: Callable[[BlobReader], Any] = field(repr=False, compare=False)

    @property
    def key(self) -> str:
        return self.entry.key

    @property
    def etag(self) -> str | None:
        return self.entry.etag

    @property
    def size(self) -> int | None:
        return self.entry.size

    def open(self) -> Any:
        """The object's body, a botocore StreamingBody (``read()``, ``iter_chunks()``, ``close()``)."""
        return self._fetch(self)

    def read(self) -> bytes:
        body = self.open()
        try:
            return bytes(body.read())
        except (BotoCoreError, OSError) as exc:  # the connection failed while the body streamed
            raise DocTableError(
                f"blob {self.name!r} ({self.key}): reading its body failed: {exc}",
                step=READ_BLOB,
                pk=self.pk,
                sk=self.sk,
            ) from exc
        finally:
            body.close()


@dataclass(frozen=True)
class Document:
    """A document as stored: its key, version, own attributes, expiry and blobs by name."""

    pk: str
    sk: str
    version: int
    attributes: Mapping[str, Any]
    blobs: Mapping[str, BlobReader]
    expires_at: int | None = None

    @property
    def manifest(self) -> list[BlobEntry]:
        return [reader.entry for reader in self.blobs.values()]


def document_of(item: Mapping[str, Any], *, blob_root: str, fetch: Callable[[BlobReader], Any]) -> Document:
    """A raw item (DynamoDB's JSON) as a Document; numbers come back as Decimal (boto3's convention).
    ``fetch(reader)`` gets a blob's body when a reader is read."""
    pk, sk = item[rules.PARTITION_KEY]["S"], item[rules.SORT_KEY]["S"]
    prefix = rules.record_prefix(blob_root, pk, sk)
    readers: dict[str, BlobReader] = {}
    for entry in manifest_of(item, pk=pk, sk=sk):
        name = rules.name_of(entry.key, prefix)
        readers[entry.key if name in readers else name] = BlobReader(pk, sk, name, entry, fetch)
    expires = item.get(rules.TTL_ATTRIBUTE, {})
    attributes = {
        name: _DESERIALIZER.deserialize(value)
        for name, value in item.items()
        if name not in rules.RESERVED_ATTRIBUTES
    }
    return Document(
        pk=pk,
        sk=sk,
        version=version_of(item),
        attributes=attributes,
        blobs=readers,
        expires_at=int(Decimal(expires["N"])) if "N" in expires else None,
    )
