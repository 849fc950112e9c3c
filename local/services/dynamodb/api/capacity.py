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


# ---- what a write may carry, checked before a request runs (wire.py calls written_refusal): an item nested past
# 32 levels (the item and the maps and lists in it) is "Nesting Levels have exceeded supported limits: ..." (moto
# stored it), and AttributeUpdates that PUT or DELETE an empty set are refused as PutItem refuses one.
LEVELS_MAX = 32  # an item and the maps and lists nested in it (the developer guide's limits page)
TOO_NESTED = "Nesting Levels have exceeded supported limits: Attributes in the item have nested levels beyond supported limit"


def levels(value: Any, depth: int = 1) -> int:
    """The levels of an item (1) and of the maps and lists nested in it, iteratively (a deep item is no recursion)."""
    deepest, pending = depth, [(value, depth)]
    while pending:
        node, level = pending.pop()
        deepest = max(deepest, level)
        if level > LEVELS_MAX:
            return level
        members = node.values() if isinstance(node, dict) else ()
        for member in members:
            inner = member.get("M") if isinstance(member, dict) else None
            inner = inner if isinstance(inner, dict) else None
            listed = member.get("L") if isinstance(member, dict) and inner is None else None
            if inner is not None:
                pending.append((inner, level + 1))
            elif isinstance(listed, list):
                pending.append(({str(i): v for i, v in enumerate(listed)}, level + 1))
    return deepest


def written_items(params: dict[str, Any], actions: list[dict[str, Any]]) -> list[Any]:
    """The items a request writes whole: PutItem's, a BatchWriteItem's puts, a transaction's puts."""
    found = [params.get("Item")]
    for requests in (
        (params.get("RequestItems") or {}).values() if isinstance(params.get("RequestItems"), dict) else ()
    ):
        for request in requests if isinstance(requests, list) else ():
            found.append(
                ((request or {}).get("PutRequest") or {}).get("Item") if isinstance(request, dict) else None
            )
    found += [action.get("Item") for action in actions]
    return [item for item in found if isinstance(item, dict)]


EMPTY_SET = "One or more parameter values were invalid: An {kind} set  may not be empty"
_SET_KINDS = {"SS": "string", "NS": "number", "BS": "binary"}


def empty_set(updates: Any) -> str | None:
    """The kind of an empty set an AttributeUpdates entry would write (PUT) or take away (DELETE), or None."""
    for update in (updates or {}).values() if isinstance(updates, dict) else ():
        value = update.get("Value") if isinstance(update, dict) else None
        if isinstance(value, dict):
            for kind, name in _SET_KINDS.items():
                if value.get(kind) == []:
                    return name
    return None


def written_refusal(params: dict[str, Any], actions: list[dict[str, Any]]) -> str | None:
    """Why DynamoDB refuses what a request writes before it runs: an empty set AttributeUpdates would write or
    take away, an item nested past 32 levels; None otherwise."""
    empty = empty_set(params.get("AttributeUpdates"))
    if empty is not None:
        return EMPTY_SET.format(kind=empty)
    if any(levels(item) > LEVELS_MAX for item in written_items(params, actions)):
        return TOO_NESTED
    return None
