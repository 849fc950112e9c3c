"""An item's size as DynamoDB counts it against its 400 KB limit (developer guide, "Item sizes and formats").

A binary counts its bytes, a number one byte per two significant digits plus one, a list or map three bytes plus
one per element (local/services/dynamodb/api/capacity.py, which counts the same sizes for the consumed capacity),
and an item may reach 400 KB: 409,600 bytes. moto counted a binary by its base64 text (a third more), a number by
its characters, and refused past 405,000 bytes: a 409,500-byte binary that AWS stores was refused.

Checked before a request runs (api/wire.py calls ``written_refusal``): an item nested past 32 levels (the item
and the maps and lists in it) is "Nesting Levels have exceeded supported limits: ..." (moto stored it), and
AttributeUpdates that PUT or DELETE an empty set are refused as PutItem refuses one.
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


MOTO_TARGETS = (*PATCHES.targets, Target("moto.dynamodb.exceptions", "ItemSizeTooLarge"))
