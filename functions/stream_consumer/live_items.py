"""Live-item port and its DynamoDB adapter: which blob keys the table's items list now (strongly consistent
BatchGetItem, so a write acknowledged before the call is seen; a failure raises and the records are retried)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from .blob_store import lazy_client
from .constants import BLOBS_ATTRIBUTE, MANIFEST_KEY, MAX_ITEMS_PER_BATCH_GET, PARTITION_KEY, SORT_KEY

Item = tuple[str, str]
# Rounds of asking again for UnprocessedKeys (throttling).
_UNPROCESSED_ROUNDS = 5


class LiveItems(Protocol):
    def prepare(self) -> None:
        """Get ready to read (build the client) while other requests are in flight; never raises."""
        ...

    def listed_keys(self, items: Sequence[Item]) -> dict[Item, frozenset[str]]:
        """Per existing item, the string keys its ``blobs`` lists; raise if any item could not be read."""
        ...


class DynamoLiveItems:
    """DynamoDB adapter (client built on first use)."""

    def __init__(
        self,
        table_name: str,
        client: Any | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.table_name = table_name
        self._client = client
        self._sleep = sleep

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = lazy_client("dynamodb")
        return self._client

    def prepare(self) -> None:
        # A failure to build shows again, and is handled, at the read.
        with contextlib.suppress(Exception):
            self.client  # noqa: B018 - builds it

    def listed_keys(self, items: Sequence[Item]) -> dict[Item, frozenset[str]]:
        found: dict[Item, frozenset[str]] = {}
        unique = list(dict.fromkeys(items))
        for start in range(0, len(unique), MAX_ITEMS_PER_BATCH_GET):
            keys = [
                {PARTITION_KEY: {"S": pk}, SORT_KEY: {"S": sk}}
                for pk, sk in unique[start : start + MAX_ITEMS_PER_BATCH_GET]
            ]
            for _ in range(_UNPROCESSED_ROUNDS):
                response = self.client.batch_get_item(
                    RequestItems={
                        self.table_name: {
                            "Keys": keys,
                            "ConsistentRead": True,
                            "ProjectionExpression": "#pk, #sk, #blobs",
                            "ExpressionAttributeNames": {
                                "#pk": PARTITION_KEY,
                                "#sk": SORT_KEY,
                                "#blobs": BLOBS_ATTRIBUTE,
                            },
                        }
                    }
                )
                for item in response.get("Responses", {}).get(self.table_name, []):
                    found[(item[PARTITION_KEY]["S"], item[SORT_KEY]["S"])] = _listed(
                        item.get(BLOBS_ATTRIBUTE)
                    )
                keys = response.get("UnprocessedKeys", {}).get(self.table_name, {}).get("Keys", [])
                if not keys:
                    break
                self._sleep(0.05)
            else:
                raise RuntimeError(
                    f"BatchGetItem left {len(keys)} item(s) unprocessed after {_UNPROCESSED_ROUNDS} rounds"
                )
        return found


def _listed(value: Any) -> frozenset[str]:
    """The string keys a ``blobs`` attribute value lists: a string set, or a list of strings and of manifest
    entries (``{"M": {"key": {"S": ...}, ...}}``), whatever else the list holds (docs/data-contract.md)."""
    if not isinstance(value, dict):
        return frozenset()
    if "SS" in value:
        return frozenset(value["SS"])
    return frozenset(key for entry in value.get("L", []) if (key := _listed_key(entry)) is not None)


def _listed_key(entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return None
    if isinstance(entry.get("S"), str):
        return entry["S"]  # type: ignore[no-any-return]
    fields = entry.get("M")
    key = fields.get(MANIFEST_KEY) if isinstance(fields, dict) else None
    return key["S"] if isinstance(key, dict) and isinstance(key.get("S"), str) else None
