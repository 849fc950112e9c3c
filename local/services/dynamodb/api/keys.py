"""An item's key as DynamoDB checks it in every request that names one.

GetItem, DeleteItem and UpdateItem name an item by its key: DynamoDB refuses a key that lacks one of the table's
key attributes or gives one another type than declared ("The provided key element does not match the schema"), and a key value
that is an empty string or binary ("One or more parameter values are not valid. The AttributeValue for a key
attribute cannot contain an empty string value. Key: p"; binary: "an empty binary value"); PutItem and
BatchWriteItem refuse the same empty values in an item's key attributes. moto read a key by its names only (a key
of the wrong type found nothing, an extra attribute was ignored), and its empty-key check compared a parsed binary
(bytes) with "" and let it through. A key past DynamoDB's lengths (a partition key of 2,048 bytes, a sort key of 1,024,
a binary counted by its bytes) is refused in reads as in writes. Source: API_GetItem.html ("you must provide all of the attributes"), the
developer guide's HowItWorks.NamingRulesDataTypes ("key attributes ... cannot be empty").
"""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from typing import Any

from local.patching import Patches, Target

PATCHES = Patches()
_MODELS = "moto.dynamodb.models"
_RESPONSES = "moto.dynamodb.responses"
MISMATCH = "The provided key element does not match the schema"
HASH_KEY_BYTES, RANGE_KEY_BYTES = 2048, 1024
# DynamoDB's words, its missing space included.
HASH_KEY_TOO_LONG = "One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of2048 bytes"
RANGE_KEY_TOO_LONG = (
    "One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of "
    "1024 bytes"
)
EMPTY = (
    "One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty "
    "{kind} value. Key: {key}"
)
MISSING_KEY = "One or more parameter values were invalid: Missing the key {name} in the item"
DUPLICATES = "Provided list of item keys contains duplicates"
EMPTY_INDEX_KEY = (
    "One or more parameter values are not valid. A value specified for a secondary index key is not supported. The "
    "AttributeValue for a key attribute cannot contain an empty {kind} value. IndexName: {index}, IndexKey: {key}"
)


def _refusal(message: str) -> Exception:
    from moto.dynamodb.exceptions import MockValidationException

    return MockValidationException(message)


def _empty(value: Any) -> str | None:
    """ "string" or "binary" when ``value`` (AttributeValue JSON) is an empty one, else None."""
    if not isinstance(value, dict) or len(value) != 1:
        return None
    (kind, content), *_ = value.items()
    if kind in ("S", "B") and content in ("", b""):
        return "string" if kind == "S" else "binary"
    return None


def key_refusal(table: Any, key: dict[str, Any]) -> str | None:
    """Why DynamoDB refuses ``key`` as a key of ``table``, or None."""
    types = {d["AttributeName"]: d["AttributeType"] for d in table.attr}
    names = [table.hash_key_attr, *([table.range_key_attr] if table.range_key_attr else [])]
    # Only the key attributes are read: moto also reads a whole item's key through here (PutItem's ALL_OLD), so an
    # attribute more is not refused here (a known difference: AWS refuses it in a request's Key).
    if any(name not in key for name in names):
        return MISMATCH
    for name in names:
        value = key[name]
        if not isinstance(value, dict) or list(value) != [types.get(name)]:
            return MISMATCH
    for name in names:
        kind = _empty(key[name])
        if kind is not None:
            return EMPTY.format(kind=kind, key=name)
    if _bytes(key[names[0]]) > HASH_KEY_BYTES:
        return HASH_KEY_TOO_LONG
    if len(names) > 1 and _bytes(key[names[1]]) > RANGE_KEY_BYTES:
        return RANGE_KEY_TOO_LONG
    return None


def _bytes(value: dict[str, Any]) -> int:
    """A key value's length as DynamoDB limits it: a string's UTF-8 bytes, a binary's own bytes."""
    from local.services.dynamodb.api import capacity

    return capacity.value_size(value)


@PATCHES.replace(Target(_MODELS, "DynamoDBBackend.get_keys_value", ("self", "table", "keys")))
def get_keys_value(self: Any, table: Any, keys: dict[str, Any]) -> Any:
    """Every request that names an item by its key: the key must be the table's, typed as declared, not empty."""
    problem = key_refusal(table, keys)
    if problem is not None:
        raise _refusal(problem)
    return PATCHES.original(get_keys_value)(self, table, keys)


@PATCHES.replace(Target(_RESPONSES, "validate_put_has_empty_keys", ("field_updates", "table")))
def validate_put_has_empty_keys(
    field_updates: dict[str, Any], table: Any, custom_error_msg: str | None = None
) -> None:
    """An item written (PutItem, BatchWriteItem): none of its table or index key attributes is empty."""
    if not table:
        return
    for index in [*(table.global_indexes or []), *(table.indexes or [])]:
        for name in index.schema_key_attrs:
            kind = _empty(field_updates.get(name))
            if kind is not None:
                raise _refusal(EMPTY_INDEX_KEY.format(kind=kind, index=index.name, key=name))
    for name in table.attribute_keys:
        kind = _empty(field_updates.get(name))
        if kind is not None:
            raise _refusal(EMPTY.format(kind=kind, key=name))


def _canonical(value: Any) -> Any:
    """A key value as DynamoDB compares keys: a number by its value (1000 and 1e3 are one key)."""
    if isinstance(value, dict) and list(value) == ["N"]:
        try:
            return ("N", Decimal(str(value["N"])).normalize())
        except (InvalidOperation, ValueError):
            return ("N", value["N"])
    return json.dumps(value, sort_keys=True, default=repr)  # a binary arrives decoded: bytes


def batch_write_refusal(backend: Any, request_items: Any) -> str | None:
    """Why DynamoDB refuses a BatchWriteItem before writing anything: a request whose key lacks a key attribute
    or types one otherwise than declared, or two requests (puts or deletes) on one item; None when it may run."""
    if not isinstance(request_items, dict):
        return None
    for table_name, requests in request_items.items():
        table = backend.tables.get(table_name)
        if table is None or not isinstance(requests, list):
            continue  # a missing table is moto's ResourceNotFoundException
        names = [table.hash_key_attr, *([table.range_key_attr] if table.range_key_attr else [])]
        seen: set[tuple[Any, ...]] = set()
        for request in requests:
            put = (request or {}).get("PutRequest") if isinstance(request, dict) else None
            if put is not None:
                item = put.get("Item") or {}
                missing = [name for name in names if name not in item]
                if missing:
                    return MISSING_KEY.format(name=missing[0])
                key = {name: item[name] for name in names}
            else:
                key = ((request or {}).get("DeleteRequest") or {}).get("Key") or {}
            problem = key_refusal(table, key)
            if problem is not None:
                return problem
            identity = tuple(_canonical(key[name]) for name in names)
            if identity in seen:
                return DUPLICATES
            seen.add(identity)
    return None


MOTO_TARGETS = (
    *PATCHES.targets,
    Target("moto.dynamodb.exceptions", "MockValidationException"),
)
