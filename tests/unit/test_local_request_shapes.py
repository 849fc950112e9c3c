"""Requests DynamoDB refuses by their shape, before anything runs (local/services/dynamodb/api/wire.py): an
AttributeValue of no type or of two, a null where a batch names its requests, and a body past 16 MB (HTTP 413)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from local.services.dynamodb.api import wire

pytestmark = pytest.mark.unit


def refusal(operation: str, params: dict[str, Any]) -> str:
    found = wire.refusal_of("dynamodb", f"DynamoDB_20120810.{operation}", json.dumps(params).encode())
    assert found is not None, params
    return f"{found.args[0]}: {found.args[1]}" if len(found.args) > 1 else str(found)


def test_an_attribute_value_carries_exactly_one_type() -> None:
    # WHEN a value names no type DynamoDB knows, or two  THEN refused in DynamoDB's words
    for value, message in (
        ({"dog": "cat"}, wire.ATTRIBUTE_VALUE_EMPTY),
        ({}, wire.ATTRIBUTE_VALUE_EMPTY),
        ({"S": "a", "N": "1"}, wire.ATTRIBUTE_VALUE_TYPES),
    ):
        assert refusal("PutItem", {"TableName": "tbl", "Item": {"pk": {"S": "a"}, "x": value}}).endswith(
            message
        )
    # BUT one type, null ones beside it ignored, is a value
    ok = {"TableName": "tbl", "Item": {"pk": {"S": "a"}, "x": {"BOOL": False, "S": None}}}
    assert wire.refusal_of("dynamodb", "DynamoDB_20120810.PutItem", json.dumps(ok).encode()) is None


def test_a_null_where_a_batch_lists_its_requests_is_a_validation_error() -> None:
    message = refusal("BatchWriteItem", {"RequestItems": {"tbl": None}})
    assert message.endswith(
        "at 'requestItems.tbl.member' failed to satisfy constraint: Member must not be null"
    )


class _Request:
    """What the dispatcher reads of a request: its body and headers."""

    def __init__(self, body: bytes) -> None:
        self.data = body
        self.headers = {"X-Amz-Target": "DynamoDB_20120810.ListTables"}

    def get_data(self) -> bytes:
        return self.data


def test_a_body_past_16_mb_is_answered_413() -> None:
    answer = wire._refused("dynamodb", _Request(b"{" + b" " * (16 * 1024 * 1024) + b"}"))
    assert answer is not None and answer[0] == 413
    assert json.loads(answer[2])["__type"].endswith("#RequestEntityTooLargeException")
    # AND a body of 16 MB is read on (a ListTables of spaces: no refusal)
    assert wire._refused("dynamodb", _Request(b"{" + b" " * (16 * 1024 * 1024 - 2) + b"}")) is None
