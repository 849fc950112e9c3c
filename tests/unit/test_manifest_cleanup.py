"""The guarded cleanup of manifest entries: one BatchGetItem, then one DeleteObjects carrying each recorded ETag,
no HEAD; a plain key keeps its HEAD; a precondition failure keeps the object and is logged and counted. Counted
with fake botocore clients behind the real S3 and DynamoDB adapters, which record every call."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError
from stream_consumer.blob_store import S3BlobStore
from stream_consumer.cleanup import KEPT_LIVE, KEPT_OTHER_OBJECT, BatchOutcome, BlobCleaner
from stream_consumer.domain import parse_batch
from stream_consumer.live_items import DynamoLiveItems
from stream_consumer.processor import process
from stream_consumer.settings import Settings

from tests.support import s3_model
from tests.unit import test_consumer_key_reuse as reuse
from tests.unit.events import ACCOUNT, LATER, TABLE, av, image, record, remove, seq
from tests.unit.test_consumer_handler import counts, emitted_metrics, messages

BUCKET = "bucket"
PREFIX = "blobs/doc#1/v#1/"
A, B, C = PREFIX + "a.pdf", PREFIX + "b.pdf", PREFIX + "c.pdf"
UPLOADED = LATER - 3_600  # every object was uploaded an hour before the records


def etag(body: str) -> str:
    return f'"{body.encode().hex():0>32}"'


def entry(key: str, body: str) -> dict[str, Any]:
    """The manifest entry the application recorded when it uploaded ``body`` under ``key``."""
    return {"key": key, "etag": etag(body), "size": len(body)}


@dataclass
class FakeAws:
    """A bucket and a table behind botocore-shaped clients: DeleteObjects evaluates each object's ETag as S3 does
    (PreconditionFailed for another one), and every call is recorded."""

    objects: dict[str, str] = field(default_factory=dict)  # key -> ETag
    items: dict[tuple[str, str], dict[str, Any]] = field(
        default_factory=dict
    )  # DynamoDB JSON blobs attribute
    calls: list[tuple[str, Any]] = field(default_factory=list)

    def upload(self, key: str, body: str) -> None:
        self.objects[key] = etag(body)

    def ops(self) -> list[str]:
        return [op for op, _ in self.calls]

    # ---- the S3 client
    # (every S3 call must name the bucket's owner: the parameter is required here)
    def head_object(self, Bucket: str, Key: str, ExpectedBucketOwner: str) -> dict[str, Any]:  # noqa: N803
        self.calls.append(("HeadObject", Key))
        if Key not in self.objects:
            raise ClientError({"Error": {"Code": "404", "Message": "Not Found"}}, "HeadObject")
        return {"ETag": self.objects[Key], "LastModified": datetime.fromtimestamp(UPLOADED, UTC)}

    def delete_objects(  # noqa: N803 - botocore's parameter names
        self, Bucket: str, Delete: dict[str, Any], ExpectedBucketOwner: str
    ) -> dict[str, Any]:
        self.calls.append(("DeleteObjects", Delete["Objects"]))
        return s3_model.delete_objects(
            self.objects, Delete
        )  # S3's per-key verdicts, as the local AWS gives them

    # ---- the DynamoDB client
    def batch_get_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:  # noqa: N803
        keys = RequestItems[TABLE]["Keys"]
        self.calls.append(("BatchGetItem", keys))
        found = [
            {"pk": k["pk"], "sk": k["sk"], **self.items[(k["pk"]["S"], k["sk"]["S"])]}
            for k in keys
            if (k["pk"]["S"], k["sk"]["S"]) in self.items
        ]
        return {"Responses": {TABLE: found}}


class Recorder:
    """Logger and metrics sink: what was logged (event name -> extra fields) and each metric's value."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, dict[str, Any]]] = []
        self.metrics: dict[str, float] = {}

    def _log(self, msg: str, *args: Any, extra: dict[str, Any] | None = None, **kwargs: Any) -> None:
        self.lines.append((msg, extra or {}))

    info = warning = error = _log

    def add_metric(self, name: str, unit: Any, value: float) -> None:
        self.metrics[name] = value

    def logged(self, name: str) -> list[dict[str, Any]]:
        return [extra for msg, extra in self.lines if msg == name]


def cleaner(aws: FakeAws, recorder: Recorder, *, guarded: bool = True) -> BlobCleaner:
    settings = Settings(BUCKET, "blobs/", False, TABLE, guard_key_reuse=guarded)
    store = S3BlobStore(BUCKET, client=aws, owner=ACCOUNT)
    live = DynamoLiveItems(TABLE, client=aws, sleep=lambda _: None)
    return BlobCleaner(store, settings, recorder, recorder, live, clock=lambda: LATER + 3_600.0)


def clean(aws: FakeAws, *records: dict[str, Any], guarded: bool = True) -> tuple[BatchOutcome, Recorder]:
    recorder = Recorder()
    consumer = cleaner(aws, recorder, guarded=guarded)
    outcome = consumer.clean(parse_batch(list(records), TABLE))
    consumer.publish(outcome)
    return outcome, recorder


def test_manifest_entries_cost_one_item_read_and_one_delete_and_no_head():
    # GIVEN three blobs the application recorded with their ETags, and a REMOVE of their item
    aws = FakeAws()
    for key, body in ((A, "a"), (B, "b"), (C, "c")):
        aws.upload(key, body)
    removed = remove(1, "doc#1", "v#1", [entry(A, "a"), entry(B, "b"), entry(C, "c")])

    # WHEN the consumer cleans up (blob_key_reuse=guarded)
    outcome, recorder = clean(aws, removed)

    # THEN it read the item once and deleted all three in one DeleteObjects conditional on the recorded ETags
    assert aws.ops() == ["BatchGetItem", "DeleteObjects"]
    assert aws.calls[1][1] == [{"Key": k, "ETag": etag(b)} for k, b in ((A, "a"), (B, "b"), (C, "c"))]
    assert aws.objects == {} and outcome.failures == {} and outcome.kept == {}
    # AND the metrics count the three keys as dropped with an ETag
    assert recorder.metrics["DroppedKeysWithEtag"] == 3 and recorder.metrics["DroppedKeysWithoutEtag"] == 0
    assert recorder.metrics["BlobsDeleted"] == 3 and recorder.metrics["BlobsKeptPreconditionFailed"] == 0


def test_a_thousand_manifest_keys_need_no_head_at_all():
    # GIVEN 400 REMOVEs of 3 manifest entries each (1,200 keys)
    aws = FakeAws()
    records = []
    for n in range(400):
        keys = [f"blobs/doc#{n}/v#1/{i}.bin" for i in range(3)]
        for key in keys:
            aws.upload(key, key)
        records.append(remove(n + 1, f"doc#{n}", "v#1", [entry(key, key) for key in keys]))

    # WHEN they are cleaned up in one batch
    outcome, _ = clean(aws, *records)

    # THEN: no HEAD, 4 BatchGetItem (100 items each), 2 DeleteObjects (1,000 keys each), everything deleted
    assert sorted(set(aws.ops())) == ["BatchGetItem", "DeleteObjects"]
    assert aws.ops().count("BatchGetItem") == 4 and aws.ops().count("DeleteObjects") == 2
    assert aws.objects == {} and outcome.deleted == 1_200


def test_a_mixed_batch_heads_only_its_plain_keys_and_deletes_all_in_one_request():
    # GIVEN a REMOVE listing A with its ETag and B plain, and a REMOVE of another item listing C plain
    aws = FakeAws()
    for key, body in ((A, "a"), (B, "b"), ("blobs/doc#2/v#1/c", "c")):
        aws.upload(key, body)
    first = remove(1, "doc#1", "v#1", [entry(A, "a"), B])
    second = remove(2, "doc#2", "v#1", ["blobs/doc#2/v#1/c"])

    # WHEN cleaned up together
    outcome, recorder = clean(aws, first, second)

    # THEN one HEAD per plain key, one item read, one DeleteObjects with both kinds of ETag
    assert sorted(aws.ops()) == ["BatchGetItem", "DeleteObjects", "HeadObject", "HeadObject"]
    assert {key for op, key in aws.calls if op == "HeadObject"} == {B, "blobs/doc#2/v#1/c"}
    (objects,) = [arg for op, arg in aws.calls if op == "DeleteObjects"]
    assert objects == [
        {"Key": A, "ETag": etag("a")},
        {"Key": B, "ETag": etag("b")},
        {"Key": "blobs/doc#2/v#1/c", "ETag": etag("c")},
    ]
    assert aws.objects == {} and outcome.failures == {}
    assert (recorder.metrics["DroppedKeysWithEtag"], recorder.metrics["DroppedKeysWithoutEtag"]) == (1, 2)
    # AND the proof line's counterpart, the summary, counted the listed entries by form
    (proof,) = recorder.logged("stream_records_received")
    assert proof["old_image_blobs"] == {"with_etag": 1, "without_etag": 2}


def test_a_reupload_under_the_same_key_is_kept_logged_and_counted_not_failed():
    # GIVEN A was uploaded again (another ETag) after the item that recorded "a" was deleted, B was not
    aws = FakeAws()
    aws.upload(A, "a, again")
    aws.upload(B, "b")
    removed = remove(1, "doc#1", "v#1", [entry(A, "a"), entry(B, "b")])

    # WHEN the consumer cleans up
    outcome, recorder = clean(aws, removed)
    cleaned = cleaner(aws, recorder)
    cleaned.settle(outcome, seq(1))  # the record's verdict: it does not fail

    # THEN the re-upload is in place, B is gone, and the kept object is logged and counted, not a failure
    assert aws.objects == {A: etag("a, again")}
    assert outcome.failures == {} and outcome.kept == {A: KEPT_OTHER_OBJECT}
    (line,) = recorder.logged("delete_precondition_failed")
    assert line == {"key_count": 1, "keys": {A: KEPT_OTHER_OBJECT}}
    (report,) = recorder.logged("record_cleaned")
    assert report["keys_deleted"] == 1 and report["keys_kept"] == {KEPT_OTHER_OBJECT: 1}
    assert recorder.metrics["BlobsKeptPreconditionFailed"] == 1 and recorder.metrics["BlobsDeleted"] == 1
    assert recorder.metrics["RecordsFailed"] == 0


@pytest.mark.parametrize(
    "listed",
    [
        pytest.param({"L": [{"M": {"key": {"S": A}, "etag": {"S": etag("a2")}}}]}, id="map"),
        pytest.param({"L": [{"S": A}]}, id="plain"),
        pytest.param({"SS": [A]}, id="string-set"),
    ],
)
def test_a_key_the_live_item_lists_in_either_form_is_kept(listed: dict[str, Any]):
    # GIVEN the item was deleted and put back listing A again, in any form
    aws = FakeAws(items={("doc#1", "v#1"): {"blobs": listed}})
    aws.upload(A, "a")
    aws.upload(B, "b")

    # WHEN the consumer cleans up after the REMOVE that listed A and B with their ETags
    outcome, _ = clean(aws, remove(1, "doc#1", "v#1", [entry(A, "a"), entry(B, "b")]))

    # THEN A is kept (the live item lists it) and only B is deleted
    assert outcome.kept == {A: KEPT_LIVE}
    assert aws.objects == {A: etag("a")}
    (objects,) = [arg for op, arg in aws.calls if op == "DeleteObjects"]
    assert objects == [{"Key": B, "ETag": etag("b")}]


def test_with_key_reuse_never_manifest_keys_are_deleted_unconditionally():
    # GIVEN blob_key_reuse=never (the role can neither read blobs nor items) and a REMOVE of manifest entries
    aws = FakeAws()
    aws.upload(A, "a")
    aws.upload(B, "b")

    # WHEN cleaned up
    outcome, recorder = clean(aws, remove(1, "doc#1", "v#1", [entry(A, "a"), B]), guarded=False)

    # THEN one DeleteObjects without conditions and nothing else
    assert aws.calls == [("DeleteObjects", [{"Key": A}, {"Key": B}])]
    assert aws.objects == {} and outcome.deleted == 2
    assert (recorder.metrics["DroppedKeysWithEtag"], recorder.metrics["DroppedKeysWithoutEtag"]) == (1, 1)


def test_the_latest_record_dropping_a_key_names_the_object_to_delete():
    # GIVEN A dropped with ETag "a", re-uploaded and listed again with "a2", then the item removed, in one batch
    aws = FakeAws()
    aws.upload(A, "a2")
    records = [
        record(
            "MODIFY", 1, "doc#1", "v#1", old=image("doc#1", "v#1", [entry(A, "a")]), new=image("doc#1", "v#1", [])
        ),
        record("MODIFY", 2, "doc#1", "v#1", old=image("doc#1", "v#1", []), new=image("doc#1", "v#1", [entry(A, "a2")])),
        remove(3, "doc#1", "v#1", [entry(A, "a2")]),
    ]  # fmt: skip

    # WHEN cleaned up  THEN the object the last state dropped ("a2") is deleted, with one request
    outcome, _ = clean(aws, *records)
    assert [arg for op, arg in aws.calls if op == "DeleteObjects"] == [[{"Key": A, "ETag": etag("a2")}]]
    assert aws.objects == {} and outcome.failures == {}


def test_a_failed_item_read_deletes_nothing_and_fails_the_records():
    # GIVEN the item read fails
    aws = FakeAws()
    aws.upload(A, "a")

    def throttled(**_: Any) -> dict[str, Any]:
        raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException"}}, "BatchGetItem")

    aws.batch_get_item = throttled  # type: ignore[method-assign]

    # WHEN cleaned up  THEN nothing is deleted and the record fails (retried)
    outcome, _ = clean(aws, remove(1, "doc#1", "v#1", [entry(A, "a")]))
    assert aws.objects == {A: etag("a")}
    assert "reading the live items failed" in outcome.key_errors[A]


# ------------------------------------------------------------------------ the key-reuse race, with an ETag
RECORDED = (
    '"v0"'  # the ETag the item recorded for KEY's first upload (the race's World names uploads v0, v1...)
)


def clean_the_manifest_remove(world: reuse.World) -> dict[str, str]:
    consumer = BlobCleaner(
        world, Settings(BUCKET, "", False, TABLE), reuse.Quiet(), reuse.Quiet(), world, clock=world.clock,
        sleep=world.sleep,
    )  # fmt: skip
    raw = remove(1, *reuse.ITEM, [{"key": reuse.KEY, "etag": RECORDED}], created=reuse.RECORD_SECOND)
    world.run_due(
        "observe"
    )  # there is no HEAD: what comes before it comes before the consumer's first request
    outcome = consumer.clean(parse_batch([raw], TABLE))
    assert outcome.failures == {} and outcome.key_errors == {}
    for step in reuse.STEPS:
        world.run_due(step)
    return outcome.kept


ORDERINGS = [
    pytest.param(u, p, start, id=f"{'same-second' if start == reuse.SAME_SECOND else 'later'}-U<{u}-P<{p}")
    for start in (reuse.SAME_SECOND, reuse.LATER_SECOND)
    for u, p in itertools.product(reuse.STEPS, reuse.STEPS)
    if reuse.STEPS.index(u) <= reuse.STEPS.index(p)
]


@pytest.mark.parametrize(("upload_before", "put_before", "starts_at"), ORDERINGS)
def test_with_the_recorded_etag_the_reupload_survives_every_ordering_even_the_residual_one(
    upload_before: str, put_before: str, starts_at: float
):
    # GIVEN the race of test_consumer_key_reuse (re-upload, re-put) around a REMOVE that recorded KEY's ETag
    world = reuse.race(upload_before, put_before, consumer_starts_at=starts_at)
    heads: list[str] = []
    observe: Callable[[str], Any] = world.observe
    world.observe = lambda key: heads.append(key) or observe(key)  # type: ignore[method-assign]

    # WHEN the consumer cleans up while the application re-uploads and re-puts
    kept = clean_the_manifest_remove(world)

    # THEN it made no HEAD, and KEY holds the re-uploaded object (v1): never deleted, in every ordering
    assert heads == []
    assert world.items == {reuse.ITEM: [reuse.KEY]}
    assert world.objects.get(reuse.KEY, ("<deleted>",))[0] == '"v1"'
    # AND a re-upload after the delete means the old object was cleaned first; otherwise the key was kept, why
    if upload_before == "after":
        assert kept == {}
    else:
        assert kept[reuse.KEY] in (KEPT_LIVE, KEPT_OTHER_OBJECT)


# ---------------------------------------------------------------------------------------- through the handler
def test_the_handler_logs_both_forms_on_the_proof_line_and_emits_every_metric(
    load_consumer, stdout_json, monkeypatch
):
    # GIVEN the deployed handler with fake clients, a REMOVE listing both forms, and a malformed record
    aws = FakeAws()
    aws.upload(A, "a")
    aws.upload(B, "b")
    handler = load_consumer(BLOB_ROOT="blobs/")
    monkeypatch.setattr(handler.cleaner.store, "_client", aws)
    monkeypatch.setattr(handler.cleaner.store, "owner", ACCOUNT)  # what lambda_handler sets from its context
    monkeypatch.setattr(handler.cleaner.live, "_client", aws)
    bad = record("REMOVE", 2, "doc#2", "v#1", old={**image("doc#2", "v#1"), "blobs": av([{"etag": '"e"'}])})
    event = {"Records": [remove(1, "doc#1", "v#1", [entry(A, "a"), B]), bad]}

    # WHEN it handles the batch
    response = process(handler.cleaner, event["Records"])
    handler.metrics.flush_metrics()

    # THEN the malformed record alone fails (retried, then kept on the failure destination); the other is cleaned
    assert response == {"batchItemFailures": [{"itemIdentifier": seq(2)}]}
    assert aws.objects == {}
    lines = stdout_json()
    (proof,) = messages(lines, "stream_records_received")
    assert proof["old_image_blobs"] == {"with_etag": 1, "without_etag": 1}
    (rejected,) = messages(lines, "record_rejected")
    assert rejected["problem"].startswith("OldImage.blobs[0] is a map without 'key'")
    assert emitted_metrics(lines) == counts(received=2, deleted=2, failed=1, with_etag=1, without_etag=1)
