"""Capacity units as DynamoDB counts them for ReturnConsumedCapacity (developer guide, "Read/write capacity unit
consumption" and "Item sizes and formats").

An item's size is the sum of its attributes' names and values in bytes: a string's UTF-8 bytes, a binary's bytes,
a number's one byte per two significant digits plus one (and one more when negative), a boolean or null one
byte, a list or map three bytes plus one per element plus its elements (a map's keys counted as names), a set the
sum of its members. A read costs one unit per 4 KB of the item read, at least one, half of it when eventually
consistent; a write one unit per 1 KB of the larger of the item before and after it, at least one. moto answered
one fixed figure per operation (0.5 for an update, 1.0 for anything else, one unit per key of a batch).

Pure: items are DynamoDB JSON (``{"S": "x"}``, a binary as base64 text or bytes); no moto import.
"""

from __future__ import annotations

import base64
import binascii
import decimal
import math
from collections.abc import Iterable, Mapping
from typing import Any

READ_BLOCK, WRITE_BLOCK = 4096, 1024


def _binary(value: Any) -> int:
    if isinstance(value, bytes | bytearray):
        return len(value)
    try:
        return len(base64.b64decode(str(value), validate=True))
    except (binascii.Error, ValueError):
        return len(str(value).encode())


def _number(text: Any) -> int:
    try:
        number = decimal.Decimal(str(text))
    except decimal.InvalidOperation:
        return len(str(text))
    digits = "".join(map(str, number.as_tuple().digits)).strip("0")
    return math.ceil(len(digits) / 2) + 1 + (1 if number.is_signed() and digits else 0)


def value_size(value: Mapping[str, Any]) -> int:
    """The bytes one attribute value counts for."""
    kind: str = next(iter(value), "NULL")
    inner: Any = value.get(kind)
    if kind == "S":
        return len(str(inner).encode())
    if kind == "N":
        return _number(inner)
    if kind == "B":
        return _binary(inner)
    if kind in ("SS", "NS", "BS"):
        return sum(value_size({kind[0]: member}) for member in inner)
    if kind == "L":
        return 3 + sum(1 + value_size(v) for v in inner)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + value_size(v) for k, v in inner.items())
    return 1  # BOOL, NULL


def item_size(item: Mapping[str, Mapping[str, Any]] | None) -> int:
    """The bytes an item counts for (a missing item: none)."""
    return sum(len(name.encode()) + value_size(value) for name, value in (item or {}).items())


def read_units(size: int, consistent: bool) -> float:
    """The read units of reading ``size`` bytes (a missing item counts as one unit's read)."""
    units = max(1, math.ceil(size / READ_BLOCK))
    return float(units) if consistent else units / 2


def write_units(sizes: Iterable[int]) -> float:
    """The write units of a write whose item is, before and after it, of these sizes."""
    return float(max(1, math.ceil(max(sizes, default=0) / WRITE_BLOCK)))
