"""The entry of DynamoDB's item operations on the local AWS: what happens around moto's handler of each.

One owner of ``DynamoHandler.get_item``, ``put_item``, ``update_item``, ``delete_item``, ``query``, ``scan``,
``batch_get_item`` and ``batch_write_item``: before moto's handler reads the request, its legacy conditional
parameters are checked and rewritten into expressions (legacy.py); after it answers, a ConsumedCapacity it was
asked for carries the units DynamoDB counts for the items read or written (capacity.py), where moto put a fixed
figure. The items a write replaces are read before it only when the capacity is asked for. A Query's or Scan's
Select is handed to local/services/dynamodb/indexes.py (``selecting``) around moto's handler, for a local index
read in it: a step of this owner, not a second replacement of the handler.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from local.patching import Patches, Target
from local.services.dynamodb import indexes as dynamodb_indexes
from local.services.dynamodb.api import capacity, keys, legacy, updates

PATCHES = Patches()
_DDB = "moto.dynamodb.responses"
ITEM_OPERATIONS = ("get_item", "put_item", "update_item", "delete_item", "query", "scan")
BATCHES = ("batch_get_item", "batch_write_item")
READS = ("query", "scan")


def _stored(handler: Any, table_name: str, key: dict[str, Any] | None) -> dict[str, Any] | None:
    """The item stored under ``key`` as DynamoDB JSON, or None (missing, or a key the operation will refuse)."""
    from moto.core.exceptions import JsonRESTError

    if not key:
        return None
    try:
        item = handler.dynamodb_backend.get_item(table_name, key)
    except (JsonRESTError, KeyError, TypeError, ValueError):
        return None
    return item.to_json()["Attributes"] if item is not None else None


def _key_of(handler: Any, table_name: str, item: dict[str, Any] | None) -> dict[str, Any] | None:
    from moto.core.exceptions import JsonRESTError

    try:
        table = handler.dynamodb_backend.get_table(table_name)
    except JsonRESTError:
        return None
    names = [n for n in (table.hash_key_attr, table.range_key_attr) if n]
    item = item or {}
    return {n: item[n] for n in names if n in item} if all(n in item for n in names) else None


def _set_units(consumed: Any, units: float) -> None:
    """``units`` into a ConsumedCapacity moto wrote (its total, and the table's with INDEXES)."""
    if not isinstance(consumed, dict):
        return
    consumed["CapacityUnits"] = units
    if isinstance(consumed.get("Table"), dict):
        consumed["Table"]["CapacityUnits"] = units


def _answer(result: Any) -> dict[str, Any] | None:
    body = getattr(result, "result", None)
    return body if isinstance(body, dict) and "ConsumedCapacity" in body else None


def _item_capacity(operation: str, handler: Any, body: dict[str, Any]) -> Callable[[Any], None]:
    """What reads the item before ``operation`` (for its capacity), and sets the capacity on its answer."""
    name = body.get("TableName", "")
    consistent = bool(body.get("ConsistentRead"))
    key = body.get("Key") if operation != "put_item" else _key_of(handler, name, body.get("Item"))
    before = capacity.item_size(_stored(handler, name, key)) if operation != "get_item" else 0

    def settle(result: Any) -> None:
        answer = _answer(result)
        if answer is None:
            return
        if operation == "get_item":
            units = capacity.read_units(capacity.item_size(_stored(handler, name, key)), consistent)
        elif operation in ("query", "scan"):
            items = answer.get("Items") or []
            size = sum(capacity.item_size(_stored(handler, name, _key_of(handler, name, i))) for i in items)
            units = capacity.read_units(size, consistent)
        else:
            after = body.get("Item") if operation == "put_item" else _stored(handler, name, key)
            sizes = (before, capacity.item_size(after)) if operation != "delete_item" else (before,)
            units = capacity.write_units(sizes)
        _set_units(answer["ConsumedCapacity"], units)

    return settle


def _batch_capacity(operation: str, handler: Any, body: dict[str, Any]) -> Callable[[Any], None]:
    """Per table, the sum of each item's units: a read of each key asked for, or each write's."""
    requests = body.get("RequestItems") or {}
    units: dict[str, float] = {}
    for name, request in requests.items():
        if operation == "batch_get_item":
            consistent = bool((request or {}).get("ConsistentRead"))
            sizes = [capacity.item_size(_stored(handler, name, k)) for k in (request or {}).get("Keys") or []]
            units[name] = sum(capacity.read_units(size, consistent) for size in sizes)
            continue
        total = 0.0
        for write in request or []:
            put = (write or {}).get("PutRequest")
            key = (
                _key_of(handler, name, put.get("Item"))
                if put
                else ((write or {}).get("DeleteRequest") or {}).get("Key")
            )
            sizes = [capacity.item_size(_stored(handler, name, key))]
            if put:
                sizes.append(capacity.item_size(put.get("Item")))
            total += capacity.write_units(sizes)
        units[name] = total

    def settle(result: Any) -> None:
        answer = _answer(result)
        for consumed in (answer or {}).get("ConsumedCapacity") or []:
            if isinstance(consumed, dict) and consumed.get("TableName") in units:
                _set_units(consumed, units[consumed["TableName"]])

    return settle


def _index_types_checked(backend: Any, operation: str, body: dict[str, Any]) -> None:
    """Before anything is written: every item a BatchWriteItem puts, and the values an UpdateItem's legacy
    AttributeUpdates PUT, give each index key attribute its declared type (NULL included: a type mismatch)."""
    from local.services.dynamodb import index_rules

    if operation == "update_item":
        written = {
            name: update.get("Value")
            for name, update in (body.get("AttributeUpdates") or {}).items()
            if isinstance(update, dict) and update.get("Action", "PUT") == "PUT"
        }
        table = backend.tables.get(body.get("TableName"))
        if table is not None and written:
            index_rules.check_index_key_types(written, table)
        return
    for table_name, requests in (body.get("RequestItems") or {}).items():
        table = backend.tables.get(table_name)
        for request in requests if table is not None and isinstance(requests, list) else ():
            item = (
                ((request or {}).get("PutRequest") or {}).get("Item") if isinstance(request, dict) else None
            )
            if isinstance(item, dict):
                index_rules.check_index_key_types(item, table)


def _entry(operation: str) -> Any:
    """The replacement of ``DynamoHandler.<operation>``: the legacy parameters rewritten, moto's handler, then
    the capacity it was asked for."""

    @PATCHES.replace(Target(_DDB, f"DynamoHandler.{operation}", ("self",)))
    def action(self: Any) -> Any:
        from moto.dynamodb.exceptions import MockValidationException

        body = self.body
        if not isinstance(body, dict):
            return PATCHES.original(action)(self)
        try:
            legacy.rewrite(operation, self, body)
        except legacy.Legacy as refused:
            raise MockValidationException(str(refused)) from None
        if operation == "batch_write_item":
            problem = keys.batch_write_refusal(self.dynamodb_backend, body.get("RequestItems"))
            if problem is not None:
                raise MockValidationException(problem)
        if operation in ("batch_write_item", "update_item"):
            _index_types_checked(self.dynamodb_backend, operation, body)
        settle = None
        if body.get("ReturnConsumedCapacity") in ("TOTAL", "INDEXES"):
            measure = _batch_capacity if operation in BATCHES else _item_capacity
            settle = measure(operation, self, body)
        returned = operation == "update_item" and body.get("ReturnValues") in updates.RETURNED
        before = updates.stored(self, body) if returned else None
        with (
            dynamodb_indexes.selecting(body.get("Select")) if operation in READS else contextlib.nullcontext()
        ):
            result = PATCHES.original(action)(self)
        if settle is not None:
            settle(result)
        answer = getattr(result, "result", None)
        if returned and isinstance(answer, dict):
            updates.return_values(self, body, before, answer)
        return result

    action.__qualname__ = f"DynamoHandler.{operation}"
    return action


ENTRIES = tuple(_entry(operation) for operation in (*ITEM_OPERATIONS, *BATCHES))
MOTO_TARGETS = (
    *PATCHES.targets,
    Target("moto.dynamodb.exceptions", "MockValidationException"),
    Target("moto.dynamodb.models", "DynamoDBBackend.get_schema"),
    Target("moto.dynamodb.models", "DynamoDBBackend.get_item"),
    Target("moto.dynamodb.models", "DynamoDBBackend.get_table"),
    Target("moto.dynamodb.models.dynamo_type", "Item.to_json"),
    Target("moto.core.exceptions", "JsonRESTError"),
)
