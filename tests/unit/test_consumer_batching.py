"""Batch-level deletes and failure mapping, through the handler with a fake blob store (no S3)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.unit.events import (
    ACCOUNT,
    FakeLambdaContext,
    failures,
    insert,
    keys_only,
    modify,
    remove,
    seq,
    stream_event,
)

NO_FAILURES: dict[str, list[Any]] = {"batchItemFailures": []}


@dataclass
class FakeStore:
    """A BlobStore that records every request and can fail single keys, whole requests or listings."""

    objects: set[str] = field(default_factory=set)
    failing_keys: dict[str, str] = field(default_factory=dict)
    failing_requests: set[str] = field(default_factory=set)  # first keys of the delete requests that raise
    failing_prefixes: set[str] = field(default_factory=set)
    delete_calls: list[list[str]] = field(default_factory=list)

    def observe(self, key: str) -> Any:
        """Every key names an object older than any test record (this fake models requests, not absence)."""
        from stream_consumer.blob_store import ObjectIdentity

        return ObjectIdentity(etag=f'"{key}"', last_modified=0.0)

    def delete_keys(self, keys: Sequence[str], etags: Any = None) -> Any:
        from stream_consumer.blob_store import DeleteResult

        assert 0 < len(keys) <= 1000
        self.delete_calls.append(list(keys))
        if keys[0] in self.failing_requests:  # by content: the requests are sent in parallel, in any order
            raise RuntimeError("SlowDown: Please reduce your request rate.")
        failed = {key: error for key, error in self.failing_keys.items() if key in keys}
        self.objects -= set(keys) - set(failed)
        return DeleteResult(failed)

    def list_prefix(self, prefix: str) -> list[str]:
        if prefix in self.failing_prefixes:
            raise RuntimeError("AccessDenied: listing refused")
        return sorted(key for key in self.objects if key.startswith(prefix))


class NothingLive:
    """Live items: none of the records' items exists any more."""

    def prepare(self) -> None: ...

    def listed_keys(self, items: Any) -> dict[Any, frozenset[str]]:
        return {}


@pytest.fixture
def consumer(load_consumer, monkeypatch):
    """A freshly loaded handler whose S3 store is replaced by a FakeStore (and whose items are all deleted)."""

    def load(store: FakeStore, **env: str) -> Any:
        handler = load_consumer(**env)
        monkeypatch.setattr(handler.cleaner, "store", store)
        monkeypatch.setattr(handler.cleaner, "live", NothingLive())
        return handler

    return load


def blob_keys(n: int, count: int) -> list[str]:
    return [f"blobs/doc#{n}/v#1/{i:04d}" for i in range(count)]


def messages(lines: list[dict[str, Any]], message: str) -> list[dict[str, Any]]:
    return [line for line in lines if line.get("message") == message]


def test_keys_of_the_whole_batch_are_pooled_into_requests_of_1000(consumer, stdout_json):
    # GIVEN 5 REMOVEs listing 500 keys each: 2,500 keys in one batch
    store = FakeStore()
    handler = consumer(store)
    event = stream_event(*(remove(n, f"doc#{n}", "v#1", blob_keys(n, 500)) for n in range(1, 6)))

    # WHEN the batch is consumed
    response = handler.lambda_handler(event, FakeLambdaContext())

    # THEN exactly 3 DeleteObjects requests of 1000, 1000 and 500 keys were made (in parallel: in any order), in
    # the batch's order within each request, every key once
    assert response == NO_FAILURES
    assert sorted(len(call) for call in store.delete_calls) == [500, 1000, 1000]
    expected = [key for n in range(1, 6) for key in blob_keys(n, 500)]
    chunks = [expected[:1000], expected[1000:2000], expected[2000:]]
    assert sorted(store.delete_calls, key=lambda call: expected.index(call[0])) == chunks


def test_small_records_share_one_request_and_duplicates_are_sent_once(consumer):
    # GIVEN 10 records with 3 keys each, one key listed twice, and an orphan a later REMOVE also lists
    store = FakeStore()
    handler = consumer(store)
    records = [remove(n, f"doc#{n}", "v#1", blob_keys(n, 3)) for n in range(1, 10)]
    records.append(remove(10, "doc#10", "v#1", [*blob_keys(10, 3), blob_keys(10, 1)[0]]))

    # WHEN the batch is consumed
    handler.lambda_handler(stream_event(*records), FakeLambdaContext())

    # THEN one request carried the 30 distinct keys
    assert [len(call) for call in store.delete_calls] == [30]


def test_no_request_when_nothing_to_delete(consumer):
    # GIVEN only INSERTs and an unchanged MODIFY
    store = FakeStore()
    handler = consumer(store)
    event = stream_event(
        insert(1, blobs=["blobs/doc#1/v#1/a"]),
        modify(2, "doc#1", "v#1", ["blobs/doc#1/v#1/a"], ["blobs/doc#1/v#1/a"]),
    )

    # WHEN consumed
    # THEN S3 is not called at all
    assert handler.lambda_handler(event, FakeLambdaContext()) == NO_FAILURES
    assert store.delete_calls == []


def test_a_failed_key_fails_only_the_record_that_owns_it(consumer, stdout_json):
    # GIVEN three REMOVEs in one request, and S3 refusing one key of the second
    bad = "blobs/doc#2/v#1/0001"
    store = FakeStore(
        objects={k for n in (1, 2, 3) for k in blob_keys(n, 3)}, failing_keys={bad: "AccessDenied: no"}
    )
    handler = consumer(store)
    event = stream_event(*(remove(n, f"doc#{n}", "v#1", blob_keys(n, 3)) for n in (1, 2, 3)))

    # WHEN consumed
    response = handler.lambda_handler(event, FakeLambdaContext())

    # THEN only record 2 is reported; everything but the refused key is gone
    assert response == failures(2)
    assert len(store.delete_calls) == 1
    assert store.objects == {bad}
    lines = stdout_json()
    (failed,) = messages(lines, "record_failed")
    assert failed["sequence_number"] == seq(2)
    assert failed["failed_keys"] == {bad: "AccessDenied: no"}
    assert [line["sequence_number"] for line in messages(lines, "record_cleaned")] == [seq(1), seq(3)]


def test_a_failed_key_fails_every_record_listing_it(consumer):
    # GIVEN an orphaned key that a later REMOVE of the same item lists too, and S3 failing it
    shared = "blobs/doc#1/v#1/b"
    store = FakeStore(failing_keys={shared: "InternalError: try again"})
    handler = consumer(store)
    event = stream_event(
        modify(1, "doc#1", "v#1", ["blobs/doc#1/v#1/a", shared], ["blobs/doc#1/v#1/a"]),
        remove(2, "doc#1", "v#1", ["blobs/doc#1/v#1/a"]),
        remove(3, "doc#9", "v#1", ["blobs/doc#9/v#1/z", shared]),  # refused (foreign), so not an owner
    )

    # WHEN consumed
    response = handler.lambda_handler(event, FakeLambdaContext())

    # THEN the owner of the failing key fails; the key is requested once
    assert response == failures(1)
    assert store.delete_calls == [[shared, "blobs/doc#1/v#1/a", "blobs/doc#9/v#1/z"]]


@pytest.mark.parametrize(
    ("failing_call", "failed_records"),
    [(0, (1, 2)), (1, (2, 3))],
    ids=["first-request", "second-request"],
)
def test_a_whole_request_failure_fails_only_the_records_in_it(
    consumer, stdout_json, failing_call, failed_records
):
    # GIVEN 3 x 600 keys: request 1 holds record 1 and part of record 2, request 2 the rest of 2 and record 3
    first_keys = [blob_keys(1, 600)[0], blob_keys(2, 600)[400]]
    store = FakeStore(failing_requests={first_keys[failing_call]})
    handler = consumer(store)
    event = stream_event(*(remove(n, f"doc#{n}", "v#1", blob_keys(n, 600)) for n in (1, 2, 3)))

    # WHEN one request is throttled as a whole
    response = handler.lambda_handler(event, FakeLambdaContext())

    # THEN exactly the records with keys in that request fail
    assert sorted((call[0], len(call)) for call in store.delete_calls) == sorted(
        zip(first_keys, [1000, 800], strict=True)
    )
    assert response == failures(*failed_records)
    (warning,) = messages(stdout_json(), "delete_request_failed")
    assert warning["key_count"] == [1000, 800][failing_call]


def test_keys_referenced_again_later_in_the_batch_are_retained(consumer):
    # GIVEN b.pdf orphaned, then listed again by a later MODIFY; and an item removed then re-inserted
    store = FakeStore()
    handler = consumer(store)
    event = stream_event(
        modify(1, "doc#1", "v#1", ["blobs/doc#1/v#1/a", "blobs/doc#1/v#1/b"], ["blobs/doc#1/v#1/a"]),
        modify(2, "doc#1", "v#1", ["blobs/doc#1/v#1/a"], ["blobs/doc#1/v#1/a", "blobs/doc#1/v#1/b"]),
        remove(3, "doc#2", "v#1", ["blobs/doc#2/v#1/old", "blobs/doc#2/v#1/kept"]),
        insert(4, "doc#2", "v#1", ["blobs/doc#2/v#1/kept"]),
    )

    # WHEN consumed
    response = handler.lambda_handler(event, FakeLambdaContext())

    # THEN only keys that the items' final states no longer reference are deleted
    assert response == NO_FAILURES
    assert store.delete_calls == [["blobs/doc#2/v#1/old"]]


def test_a_failed_prefix_listing_fails_only_its_record(consumer):
    # GIVEN prefix cleanup on and the listing of one record's prefix failing
    store = FakeStore(
        objects={"blobs/doc#1/v#1/a", "blobs/doc#2/v#1/b", "blobs/doc#3/v#1/c"},
        failing_prefixes={"blobs/doc#2/v#1/"},
    )
    handler = consumer(store, BLOB_PREFIX_CLEANUP="on")
    event = stream_event(*(keys_only("REMOVE", n, f"doc#{n}", "v#1") for n in (1, 2, 3)))

    # WHEN consumed
    response = handler.lambda_handler(event, FakeLambdaContext())

    # THEN record 2 fails (and will be retried); 1 and 3 are cleaned in one request
    assert response == failures(2)
    assert store.objects == {"blobs/doc#2/v#1/b"}
    assert len(store.delete_calls) == 1


def test_ambiguous_record_prefix_is_refused_not_listed(consumer, stdout_json):
    # GIVEN prefix cleanup on and a removed item whose sk contains '/' (its prefix could be another item's)
    store = FakeStore(objects={"blobs/doc#1/v/2/x"})
    handler = consumer(store, BLOB_PREFIX_CLEANUP="on")

    # WHEN consumed
    response = handler.lambda_handler(
        stream_event(remove(1, "doc#1", "v/2", ["blobs/doc#1/v/2/x"])), FakeLambdaContext()
    )

    # THEN nothing is listed or deleted; the prefix and the key are refused and counted; the record succeeds
    assert response == NO_FAILURES
    assert store.delete_calls == []
    refused = [(line["key"], line["reason"]) for line in messages(stdout_json(), "blob_key_refused")]
    assert refused == [
        ("blobs/doc#1/v/2/", "record-prefix-ambiguous"),
        ("blobs/doc#1/v/2/x", "record-prefix-ambiguous"),
    ]


class StubS3:
    def __init__(self, errors: list[dict[str, str]]) -> None:
        self.errors = errors
        self.requests: list[dict[str, Any]] = []

    def delete_objects(self, **request: Any) -> dict[str, Any]:
        self.requests.append(request)
        return {"Errors": self.errors} if self.errors else {}


def test_s3_adapter_treats_missing_keys_as_deleted_and_reports_other_errors():
    # GIVEN S3 answering NoSuchKey for one key and AccessDenied for another
    from stream_consumer.blob_store import S3BlobStore

    client = StubS3(
        [
            {"Key": "gone", "Code": "NoSuchKey", "Message": "The specified key does not exist."},
            {"Key": "locked", "Code": "AccessDenied", "Message": "Access Denied"},
        ]
    )
    store = S3BlobStore("bucket", client=client, owner=ACCOUNT)

    # WHEN three keys are deleted
    result = store.delete_keys(["gone", "locked", "fine"])

    # THEN one Quiet request was sent and only AccessDenied is a failure
    assert client.requests == [
        {
            "Bucket": "bucket",
            "ExpectedBucketOwner": ACCOUNT,
            "Delete": {"Objects": [{"Key": "gone"}, {"Key": "locked"}, {"Key": "fine"}], "Quiet": True},
        }
    ]
    assert dict(result.failures) == {"locked": "AccessDenied: Access Denied"}


def test_s3_adapter_refuses_more_than_1000_keys_per_request():
    from stream_consumer.blob_store import S3BlobStore

    # GIVEN the adapter WHEN asked for 1001 keys THEN it refuses before calling S3
    client = StubS3([])
    with pytest.raises(ValueError, match="at most 1000"):
        S3BlobStore("bucket", client=client, owner=ACCOUNT).delete_keys([str(i) for i in range(1001)])
    assert client.requests == []
