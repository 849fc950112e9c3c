"""DynamoDB's transactions as the API reference describes them, where moto's handlers differ.

- TransactGetItems takes up to 100 actions (moto stopped at 25, the limit before September 2022) and answers each
  Get with the attributes its ProjectionExpression names (moto returned whole items).
- TransactWriteItems with a ClientRequestToken is idempotent for ten minutes: the same token with the same request
  succeeds again without writing anything; the same token with another request is
  IdempotentParameterMismatchException. A token is kept once its transaction committed.
- A key that does not match its table's schema (a key attribute of another type than declared) cancels the
  transaction: TransactionCanceledException whose reason for that action is ValidationError with the message, and
  None for every other action (DynamoDB stops at the first). moto refused the whole request with a
  ValidationException. The checks that do not depend on the tables (an expression's names and values) stay a
  ValidationException of the request: local/services/dynamodb/api/wire.py checks each action's.

Sources: API_TransactGetItems.html, API_TransactWriteItems.html (ClientRequestToken, CancellationReasons).
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any

from local import clock
from local.patching import Patches, Target
from local.services.dynamodb.api import keys, projection

PATCHES = Patches()
_RESPONSES = "moto.dynamodb.responses"
_EXCEPTIONS = "moto.dynamodb.exceptions"
TOKEN_SECONDS = 600  # a ClientRequestToken is valid for ten minutes after the request that used it first
MISMATCH = (
    "DynamoDB rejected the request because you retried a request with a different payload but with an idempotent "
    "token that was already used."
)
_TOKENS: dict[
    tuple[str, str, str], tuple[str, float]
] = {}  # (account, region, token) -> (fingerprint, until)
_TOKENS_LOCK = threading.Lock()


@PATCHES.replace(Target(_RESPONSES, "DynamoHandler.transact_get_items", ("self",)))
def transact_get_items(self: Any) -> Any:
    """Each Get's item as its ProjectionExpression shapes it, up to 100 actions."""
    from moto.dynamodb.exceptions import MockValidationException
    from moto.dynamodb.responses import DynamoResult

    from local.services.dynamodb.api.conditions import _reserved

    actions = self.body["TransactItems"]  # at most 100: the service model's limit, checked by wire.py
    responses: list[dict[str, Any]] = []
    consumed: dict[str, dict[str, Any]] = {}
    for action in actions:
        get = action["Get"]
        paths = None
        if get.get("ProjectionExpression") is not None:
            try:
                paths, _ = projection.paths(
                    get["ProjectionExpression"], get.get("ExpressionAttributeNames"), _reserved()
                )
            except projection.Refused as refused:
                raise MockValidationException(str(refused)) from None
        item = self.dynamodb_backend.get_item(get["TableName"], get["Key"], paths)
        if item is None:
            responses.append({})
            continue
        responses.append(item.describe_attrs(attributes=None))
        units = consumed.setdefault(get["TableName"], {"TableName": get["TableName"], "CapacityUnits": 0.0,
                                                       "ReadCapacityUnits": 0.0})  # fmt: skip
        units["CapacityUnits"] += 2.0
        units["ReadCapacityUnits"] += 2.0
        if self.body.get("ReturnConsumedCapacity") == "INDEXES":
            units["Table"] = {
                "CapacityUnits": units["CapacityUnits"],
                "ReadCapacityUnits": units["ReadCapacityUnits"],
            }
    result: dict[str, Any] = {"Responses": responses}
    if self.body.get("ReturnConsumedCapacity", "NONE") != "NONE":
        result["ConsumedCapacity"] = list(consumed.values())
    return DynamoResult(result)


def _key_of(table: Any, kind: str, action: dict[str, Any]) -> dict[str, Any] | None:
    if kind != "Put":
        key = action.get("Key")
        return key if isinstance(key, dict) else None
    item = action.get("Item") or {}
    names = [table.hash_key_attr, *([table.range_key_attr] if table.range_key_attr else [])]
    if not all(name in item for name in names):
        return None  # moto names a missing key attribute itself
    return {name: item[name] for name in names}


def _invalid_key(self: Any, actions: list[dict[str, Any]]) -> None:
    """TransactionCanceledException at the first action whose key does not match its table's schema."""
    from moto.dynamodb.exceptions import TransactionCanceledException

    for index, entry in enumerate(actions):
        if not isinstance(entry, dict) or len(entry) != 1:
            return  # moto refuses an action of no or several kinds
        (kind, action), *_ = entry.items()
        table = (
            self.dynamodb_backend.tables.get(action.get("TableName")) if isinstance(action, dict) else None
        )
        if table is None:
            continue  # a missing table is moto's ResourceNotFoundException
        key = _key_of(table, kind, action)
        problem = keys.key_refusal(table, key) if key is not None else None
        if problem == keys.MISMATCH:
            reasons: list[Any] = [(None, None, None)] * len(actions)
            reasons[index] = ("ValidationError", problem, None)
            raise TransactionCanceledException(reasons)


def _fingerprint(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


@PATCHES.replace(Target(_RESPONSES, "DynamoHandler.transact_write_items", ("self",)))
def transact_write_items(self: Any) -> Any:
    """moto's TransactWriteItems, idempotent by ClientRequestToken, a key of the wrong type cancelling it."""
    from moto.dynamodb.exceptions import ERROR_TYPE_PREFIX, DynamodbException
    from moto.dynamodb.responses import DynamoResult

    body = self.body
    token = body.get("ClientRequestToken") if isinstance(body, dict) else None
    slot = (self.current_account, self.region, str(token))
    if token is not None:
        now = clock.now()
        with _TOKENS_LOCK:
            for stale in [k for k, (_, until) in _TOKENS.items() if until <= now]:
                del _TOKENS[stale]
            seen = _TOKENS.get(slot)
        if seen is not None:
            if seen[0] != _fingerprint(body):
                raise DynamodbException(ERROR_TYPE_PREFIX + "IdempotentParameterMismatchException", MISMATCH)
            return DynamoResult({})  # the same request again: it already committed
    _invalid_key(self, body["TransactItems"])
    result = PATCHES.original(transact_write_items)(self)
    if token is not None:
        with _TOKENS_LOCK:
            _TOKENS[slot] = (_fingerprint(body), clock.now() + TOKEN_SECONDS)
    return result


MOTO_TARGETS = (
    *PATCHES.targets,
    Target(_EXCEPTIONS, "MockValidationException"),
    Target(_EXCEPTIONS, "TransactionCanceledException"),
    Target(_RESPONSES, "DynamoResult"),
    Target(_EXCEPTIONS, "DynamodbException"),
    Target(_EXCEPTIONS, "ERROR_TYPE_PREFIX"),
    Target("moto.dynamodb.models", "DynamoDBBackend.get_item"),
    Target("moto.dynamodb.models.dynamo_type", "Item.describe_attrs"),
)
