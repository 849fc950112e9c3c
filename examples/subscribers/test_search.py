"""The search subscriber tested as its team tests it, with doctable's pytest plugin on the local AWS::

    pytest -p doctable.testing --doctable-config doctable.toml test_search.py

The plugin deploys env dev of doctable.toml (the table, the cleanup consumer, this subscriber) once per session;
each ``nudge`` writes through the application client and returns once every reader of the stream has processed the
record, or raises when one failed it.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from doctable.testing import NudgeFailed

SEARCH_TABLE = "search-team-dev"
SEARCH, CONSUMER = "subscriber:search", "consumer"


@pytest.fixture(scope="module")
def search(doctable_local: Any) -> Any:
    """The table the projection writes (the team's own, made beside the stack)."""
    dynamodb = doctable_local.environment("dev").aws("dynamodb")
    if SEARCH_TABLE not in dynamodb.list_tables()["TableNames"]:
        dynamodb.create_table(
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
    return dynamodb


def projected(search: Any, pk: str) -> Any:
    return search.get_item(TableName=SEARCH_TABLE, Key={"pk": {"S": pk}, "sk": {"S": "v1"}}).get("Item")


def test_an_insert_is_projected(doctable_env: Any, search: Any) -> None:
    pk = f"doc#{uuid.uuid4().hex[:8]}"
    # WHEN a document is written
    nudged = doctable_env.nudge("put", pk, "v1", {"title": "Hello Search World"}, blobs={"scan": b"%PDF"})
    # THEN both readers received its INSERT, and the projection holds its words
    assert (nudged.event_name, nudged.reached) == ("INSERT", {CONSUMER, SEARCH})
    assert set(projected(search, pk)["terms"]["SS"]) == {"hello", "search", "world"}
    (line,) = [p for p in doctable_env.proof_lines("search") if p["first_sequence_number"] == nudged.sequence]
    assert (line["subscriber"], line["record_count"], line["event_names"]["INSERT"]) == ("search", 1, 1)


def test_a_delete_reaches_the_consumer_alone(doctable_env: Any, search: Any) -> None:
    pk = f"doc#{uuid.uuid4().hex[:8]}"
    doctable_env.nudge("put", pk, "v1", {"title": "Gone soon"}, blobs={"scan": b"%PDF"})
    assert len(doctable_env.blobs(pk, "v1")) == 1
    # WHEN it is deleted
    nudged = doctable_env.nudge("delete", pk, "v1")
    # THEN the cleanup consumer deleted its blob, and the subscriber's filter left the REMOVE out
    assert (nudged.reached, nudged.passed) == ({CONSUMER}, {SEARCH})
    assert doctable_env.blobs(pk, "v1") == []
    assert projected(search, pk) is not None


def test_a_title_that_is_not_text_is_kept_on_the_failure_bucket(doctable_env: Any, search: Any) -> None:
    pk = f"doc#{uuid.uuid4().hex[:8]}"
    # WHEN a document's title is a number, which the projection refuses
    with pytest.raises(NudgeFailed) as failed:
        doctable_env.nudge("put", pk, "v1", {"title": 42})
    # THEN the subscriber failed it and its mapping kept it, after its retry, on its failure bucket
    assert (failed.value.reader, failed.value.kept["requestContext"]["condition"]) == (
        SEARCH,
        "RetryAttemptsExhausted",
    )
    assert any("search_projection_failed" in line for line in failed.value.errors)
    kept = [f["DDBStreamBatchInfo"]["startSequenceNumber"] for f in doctable_env.failures("search")]
    assert failed.value.sequence in kept
    assert projected(search, pk) is None
