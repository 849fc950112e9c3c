"""ProjectionExpression on the local AWS as DynamoDB reads and applies it (local/services/dynamodb/api/projection.py):
document paths with members and list indexes, each keeping only what it names; overlapping, conflicting, too deep
and out-of-range paths refused in DynamoDB's words (boto3 against moto in-process with the adaptations)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from local import state
from local.services.dynamodb.api import projection

pytestmark = pytest.mark.unit

CONFIG = Config(retries={"total_max_attempts": 1}, account_id_endpoint_mode="disabled")
ITEM = {"p": "k", "a": {"b": [2, 4, {"x": "hi", "y": "yo"}], "c": 5}, "l": [7, 42]}


@pytest.fixture
def table(local_moto: None) -> Iterator[Any]:
    """GIVEN a table keyed by a string ``p`` holding one nested item."""
    ddb = boto3.resource("dynamodb", region_name=state.REGION, config=CONFIG)
    created = ddb.create_table(
        TableName="tbl",
        KeySchema=[{"AttributeName": "p", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "p", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    created.put_item(Item=ITEM)
    yield created


def projected(table: Any, text: str) -> Any:
    return table.get_item(Key={"p": "k"}, ProjectionExpression=text)["Item"]


def test_each_path_keeps_only_what_it_names(table: Any) -> None:
    assert projected(table, "a.b") == {"a": {"b": [2, 4, {"x": "hi", "y": "yo"}]}}
    assert projected(table, "a.b[2].y") == {"a": {"b": [{"y": "yo"}]}}
    assert projected(table, "a.b[0], a.b[2].x, a.c") == {"a": {"b": [2, {"x": "hi"}], "c": 5}}
    assert projected(table, "l[1]") == {"l": [42]}
    # into what is not there, or a list read as a map and a map as a list: nothing
    for text in ("x", "a.b[3]", "a.x.y", "a.b.x", "a[0]", "l[999]"):
        assert projected(table, text) == {}, text
    scanned = table.scan(ProjectionExpression="a.b[1]")["Items"]
    assert scanned == [{"a": {"b": [4]}}]


def refused(table: Any, text: str) -> str:
    with pytest.raises(ClientError) as caught:
        projected(table, text)
    assert caught.value.response["Error"]["Code"] == "ValidationException"
    return str(caught.value.response["Error"]["Message"])


def test_paths_dynamodb_cannot_read_together_are_refused_in_its_words(table: Any) -> None:
    assert refused(table, "a, a.b") == projection.INVALID.format(
        detail=projection.OVERLAP.format(one="[a]", two="[a, b]")
    )
    assert refused(table, "a.b, a[1]") == projection.INVALID.format(
        detail=projection.CONFLICT.format(one="[a, b]", two="[a, [1]]")
    )
    deep = "a" + ".b" * 32
    assert refused(table, deep) == projection.INVALID.format(detail=projection.TOO_DEEP.format(levels=33))
    assert projected(table, "a" + ".b" * 31) == {}
    assert refused(table, "l[99999999999999]") == projection.INVALID.format(
        detail=projection.INDEX_RANGE.format(index=99999999999999)
    )
    for text in ("a,", ",a", "a,,b", "l[-1]", "l[]"):
        assert refused(table, text).startswith("Invalid ProjectionExpression: Syntax error"), text
