"""An item's size as DynamoDB counts it against its 400 KB limit (developer guide, "Item sizes and formats").

A binary counts its bytes, a number one byte per two significant digits plus one, a list or map three bytes plus
one per element (local/services/dynamodb/api/capacity.py, which counts the same sizes for the consumed capacity),
and an item may reach 400 KB: 409,600 bytes. moto counted a binary by its base64 text (a third more), a number by
its characters, and refused past 405,000 bytes: a 409,500-byte binary that AWS stores was refused.
"""

from __future__ import annotations

from typing import Any

from local.patching import Patches, Target
from local.services.dynamodb.api import capacity

PATCHES = Patches()
_TYPES = "moto.dynamodb.models.dynamo_type"
ITEM_BYTES_MAX = 400 * 1024


def value_size(value: Any) -> int:
    """The bytes one of moto's DynamoType values counts for (its lists and maps hold DynamoTypes)."""
    kind: str | None = getattr(value, "type", None)
    inner: Any = getattr(value, "value", None)
    if kind == "L":
        return 3 + sum(1 + value_size(member) for member in inner)
    if kind == "M":
        return 3 + sum(1 + len(name.encode()) + value_size(member) for name, member in inner.items())
    if kind is None:
        return len(str(value).encode())
    return capacity.value_size({kind: inner})


@PATCHES.replace(Target(_TYPES, "DynamoType.size", ("self",)))
def size(self: Any) -> int:
    """DynamoType.size: the value's bytes as DynamoDB counts them (moto counted a binary's base64 text, so a
    2,048-byte binary key was refused as longer than 2,048 bytes)."""
    return value_size(self)


@PATCHES.replace(Target(_TYPES, "LimitedSizeDict.__setitem__", ("self", "key", "value")))
def __setitem__(self: Any, key: str, value: Any) -> None:  # noqa: N807 - the method it replaces
    """An attribute set on an item: refused (ItemSizeTooLarge) when the item would pass 400 KB."""
    from moto.dynamodb.exceptions import ItemSizeTooLarge

    size = sum(len(name.encode()) + value_size(member) for name, member in self.items() if name != key)
    if size + len(key.encode()) + value_size(value) > ITEM_BYTES_MAX:
        raise ItemSizeTooLarge
    dict.__setitem__(self, key, value)


MOTO_TARGETS = (*PATCHES.targets, Target("moto.dynamodb.exceptions", "ItemSizeTooLarge"))
