"""The example subscriber (``examples/subscribers/search.py``): a search projection in a second table, against
moto's DynamoDB."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3
import pytest
from moto import mock_aws

from tests.unit.events import (
    LATER,
    REGION,
    FakeLambdaContext,
    failures,
    image,
    kinesis_failures,
    kinesis_record,
    record,
    remove,
    stream_event,
    via_kinesis,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "subscribers" / "search.py"
SEARCH_TABLE = "search-test"
NO_FAILURES: dict[str, list[Any]] = {"batchItemFailures": []}


@pytest.fixture
def search(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """GIVEN the example loaded afresh, and an empty search table (moto) named by SEARCH_TABLE."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "SEARCH_TABLE": SEARCH_TABLE,
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    spec = importlib.util.spec_from_file_location("example_search", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with mock_aws():
        boto3.client("dynamodb", region_name=REGION).create_table(
            TableName=SEARCH_TABLE,
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        yield module


def projected() -> dict[tuple[str, str], dict[str, Any]]:
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName=SEARCH_TABLE)["Items"]
    return {(item["pk"]["S"], item["sk"]["S"]): item for item in items}


def doc(event_name: str, n: int, pk: str, *, created: int | None = None, **fields: Any) -> dict[str, Any]:
    new = image(pk, "v#1", **fields)
    return record(event_name, n, pk, "v#1", new=new, created=created)


def test_an_insert_projects_the_searchable_fields_and_their_words(search):
    # GIVEN a new document with a title, a summary and an attribute that is not searchable
    event = stream_event(
        doc("INSERT", 1, "doc#1", title="Quarterly Report", summary="Sales, 2026", secret="x")
    )

    # WHEN the projection handles it
    response = search.handler(event, FakeLambdaContext())

    # THEN the search table holds its searchable fields, its words and the change's time, nothing else
    assert response == NO_FAILURES
    item = projected()[("doc#1", "v#1")]
    assert set(item) == {"pk", "sk", "title", "summary", "terms", "changed_at"}
    assert sorted(item["terms"]["SS"]) == ["2026", "quarterly", "report", "sales"]
    assert item["changed_at"] == {"N": str(LATER + 1)}


def test_a_modify_replaces_and_a_remove_deletes(search):
    search.handler(stream_event(doc("INSERT", 1, "doc#1", title="Draft"), doc("INSERT", 2, "doc#2")), None)
    # WHEN the first is modified and the second removed
    response = search.handler(
        stream_event(doc("MODIFY", 3, "doc#1", title="Final"), remove(4, "doc#2", "v#1", [])), None
    )
    # THEN the first is projected anew and the second is gone
    assert response == NO_FAILURES
    assert list(projected()) == [("doc#1", "v#1")]
    assert projected()[("doc#1", "v#1")]["title"] == {"S": "Final"}


def test_an_older_change_delivered_late_is_skipped(search):
    # GIVEN the projection of a change made at LATER + 5
    search.handler(stream_event(doc("MODIFY", 5, "doc#1", title="New")), None)
    # WHEN an older change of the same item arrives after it (Kinesis may reorder), then a duplicate of the newer
    response = search.handler(
        stream_event(doc("MODIFY", 4, "doc#1", title="Old"), doc("MODIFY", 5, "doc#1", title="New")), None
    )
    # THEN neither fails and the newer one stays
    assert response == NO_FAILURES
    assert projected()[("doc#1", "v#1")]["title"] == {"S": "New"}


def test_kinesis_records_are_read_as_the_stream_records(search):
    event = stream_event(
        via_kinesis(doc("INSERT", 1, "doc#1", title="From Kinesis"), 1),
        via_kinesis(remove(2, "doc#2", "v#1", []), 2),
    )
    assert search.handler(event, None) == NO_FAILURES
    item = projected()[("doc#1", "v#1")]
    assert sorted(item["terms"]["SS"]) == ["from", "kinesis"]
    assert item["changed_at"] == {"N": str(float(LATER + 1))}


def test_a_poison_record_fails_with_every_later_one(search):
    # GIVEN a batch whose second record lacks the item's sort key (a poison record)
    poison = doc("INSERT", 2, "doc#2")
    del poison["dynamodb"]["Keys"]["sk"]
    event = stream_event(doc("INSERT", 1, "doc#1"), poison, doc("INSERT", 3, "doc#3"))

    # WHEN the projection handles it
    response = search.handler(event, None)

    # THEN the first is projected, the poison record and the later one are reported failed (retried in order)
    assert response == failures(2, 3)
    assert list(projected()) == [("doc#1", "v#1")]


def test_a_kinesis_record_that_is_not_a_change_fails_alone_at_the_end(search):
    event = stream_event(via_kinesis(doc("INSERT", 1, "doc#1"), 1), kinesis_record(2, "bm90IGpzb24="))
    assert search.handler(event, None) == kinesis_failures(2)


def test_without_search_table_every_record_fails(search, monkeypatch):
    monkeypatch.delenv("SEARCH_TABLE")
    assert search.handler(
        stream_event(doc("INSERT", 1, "doc#1"), doc("INSERT", 2, "doc#2")), None
    ) == failures(1, 2)


def test_an_item_whose_title_is_not_a_string_is_refused_with_every_later_one(search, capsys):
    # GIVEN a batch whose second item has a number for a title
    event = stream_event(
        doc("INSERT", 1, "doc#1", title="Fine"),
        doc("INSERT", 2, "doc#2", title=42),
        doc("INSERT", 3, "doc#3"),
    )

    # WHEN the projection handles it
    response = search.handler(event, None)

    # THEN that record and the later one are reported failed (the mapping retries, then keeps them), the first is
    # projected, and the failure is logged with the record's sequence number
    assert response == failures(2, 3)
    assert list(projected()) == [("doc#1", "v#1")]
    logged = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [(line["message"], line["sequence_number"]) for line in logged] == [
        ("search_projection_failed", response["batchItemFailures"][0]["itemIdentifier"])
    ]
    assert logged[0]["error"].startswith("ValueError(")
