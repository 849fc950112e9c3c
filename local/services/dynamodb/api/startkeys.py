"""ExclusiveStartKey as DynamoDB checks it before a Query or Scan reads (API reference, Query and Scan,
"ExclusiveStartKey"; the messages are DynamoDB's as the outside suite, verified on AWS, quotes them).

The key a page starts after names exactly the attributes of the key read (the table's key, and an index's too
when an index is read), each of its type: a missing or extra attribute is "The provided starting key is invalid",
a value of another type "... The provided key element does not match the schema". A Query's starting key lies in
the partition it queries ("... outside query boundaries ..."), a parallel Scan's in its segment. moto started from
whatever it was given: a key without its sort key restarted the whole partition, a key of another partition read
that partition.

Pure: no moto import.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

INVALID = "The provided starting key is invalid"
NOT_SCHEMA = "The provided starting key is invalid: The provided key element does not match the schema"
OUTSIDE = "The provided starting key is outside query boundaries based on provided conditions"
# DynamoDB's words for this one are not published; the refusal names what was wrong, as its others do.
OTHER_SEGMENT = (
    "The provided ExclusiveStartKey does not map to the provided Segment {segment} of TotalSegments {total}"
)


class Refused(Exception):
    """An ExclusiveStartKey DynamoDB refuses, with its message."""


def _type(value: Any) -> str:
    return next(iter(value)) if isinstance(value, dict) and value else "?"


def segment_of(hash_value: Mapping[str, Any], total: int) -> int:
    """The parallel-scan segment of a partition key value, as the local AWS's Scan assigns items to segments (the
    first byte of the MD5 of the value's text, modulo TotalSegments: moto's Item.is_within_segment)."""
    raw = next(iter(hash_value.values()), "")
    data = raw if isinstance(raw, bytes) else str(raw).encode("utf8")
    return hashlib.md5(data, usedforsecurity=False).digest()[0] % total


def check(
    start: Mapping[str, Any] | None,
    names: Sequence[str],
    types: Mapping[str, str],
    *,
    scan: bool,
    hash_name: str,
    partition: Mapping[str, Any] | None = None,
    segment: tuple[int, int] | None = None,
) -> None:
    """``start`` (an ExclusiveStartKey) against the key ``names`` read, of ``types``; ``partition``: the value a
    Query's partition condition states; ``segment``: a parallel Scan's (Segment, TotalSegments)."""
    if not isinstance(start, Mapping):
        return
    if set(start) != set(names):
        raise Refused(NOT_SCHEMA if scan else INVALID)
    if any(_type(start[name]) != types.get(name) for name in names):
        raise Refused(NOT_SCHEMA)
    if partition is not None and dict(start[hash_name]) != dict(partition):
        raise Refused(OUTSIDE)
    if segment is not None and segment_of(start[hash_name], segment[1]) != segment[0]:
        raise Refused(OTHER_SEGMENT.format(segment=segment[0], total=segment[1]))
