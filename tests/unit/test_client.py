"""doctable.client against moto: writes with blobs, the undo of a failed write, conflicts between writers,
retries of throttled calls, and the one-line refusals of bad input."""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError
from botocore.stub import Stubber
from moto import mock_aws

from doctable.client import (
    AwsError,
    BlobChangedError,
    BlobMissingError,
    ConflictError,
    DocClient,
    DocTableError,
    ManifestError,
    NotFoundError,
    RetryPolicy,
    ThrottledError,
    UploadError,
    ValidationError,
)
from doctable.client.blobs import source_of

REGION = "eu-west-1"
TABLE = "items-test"
BUCKET = "doctable-client-test"
ROOT = "docs/"
FRESH_KEY = re.compile(r"^docs/(?P<pk>[^/]+)/(?P<sk>[^/]+)/(?P<name>.+)-[0-9a-f]{32}$")


@dataclass
class Aws:
    session: boto3.session.Session
    ddb: Any
    s3: Any

    def keys(self) -> list[str]:
        return sorted(o["Key"] for o in self.s3.list_objects_v2(Bucket=BUCKET).get("Contents", []))

    def item(self, pk: str, sk: str = "v") -> dict[str, Any] | None:
        return self.ddb.get_item(TableName=TABLE, Key={"pk": {"S": pk}, "sk": {"S": sk}}).get("Item")


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    """GIVEN moto's DynamoDB table (pk, sk) and blob bucket, with fake credentials."""
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_CA_BUNDLE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        session = boto3.session.Session(region_name=REGION)
        ddb, s3 = session.client("dynamodb"), session.client("s3")
        ddb.create_table(
            TableName=TABLE,
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
        s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
        yield Aws(session, ddb, s3)


@dataclass
class Sleeps:
    delays: list[float]

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def client(aws: Aws, **options: Any) -> DocClient:
    options.setdefault("retry", RetryPolicy(sleep=lambda _: None))
    return DocClient(TABLE, BUCKET, blob_root=ROOT, session=aws.session, **options)


class Faulty:
    """A boto3 client whose named operations are replaced (the others pass through)."""

    def __init__(self, real: Any, **operations: Callable[..., Any]) -> None:
        self._real = real
        self._operations = operations

    def __getattr__(self, name: str) -> Any:
        return self._operations.get(name) or getattr(self._real, name)


def aws_error(code: str, status: int = 400, operation: str = "Call") -> ClientError:
    return ClientError(
        {
            "Error": {"Code": code, "Message": f"{code} (injected)"},
            "ResponseMetadata": {"HTTPStatusCode": status},
        },
        operation,
    )


def fail_after(real: Callable[..., Any], passes: int, error: Exception) -> Callable[..., Any]:
    """``real`` for the first ``passes`` calls, then ``error`` every time."""
    calls = {"n": 0}

    def call(**kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] > passes:
            raise error
        return real(**kwargs)

    return call


def fail_first(real: Callable[..., Any], errors: list[Exception]) -> Callable[..., Any]:
    """``errors`` one per call, then ``real``."""
    pending = list(errors)

    def call(**kwargs: Any) -> Any:
        if pending:
            raise pending.pop(0)
        return real(**kwargs)

    return call


# ---- writes and reads ----
def test_put_then_get_round_trips_attributes_and_blobs_with_their_etags(aws: Aws, tmp_path: Path) -> None:
    # GIVEN three blobs given three ways: bytes, a path, a binary stream
    path = tmp_path / "scan.pdf"
    path.write_bytes(b"%PDF scan")
    docs = client(aws)

    # WHEN a document is put with them
    written = docs.put(
        "invoice#42",
        "v",
        {"title": "hello", "total": 12, "tags": {"a", "b"}},
        blobs={"note": b"paid", "scan": path, "log": io.BytesIO(b"line 1\n")},
    )

    # THEN the item's manifest is a list of maps {key, etag, size}, the ETags PutObject returned (quoted)
    item = aws.item("invoice#42")
    assert item is not None
    assert item["version"] == {"N": "1"}
    entries = [entry["M"] for entry in item["blobs"]["L"]]
    assert [set(entry) for entry in entries] == [{"key", "etag", "size"}] * 3
    for entry, content in zip(entries, (b"paid", b"%PDF scan", b"line 1\n"), strict=True):
        head = aws.s3.head_object(Bucket=BUCKET, Key=entry["key"]["S"])
        assert entry["etag"]["S"] == head["ETag"] and head["ETag"].startswith('"')
        assert entry["size"]["N"] == str(len(content)) == str(head["ContentLength"])
    # AND each key is fresh, in the record's prefix, named after its blob
    names = [FRESH_KEY.match(entry["key"]["S"]).group("name") for entry in entries]  # type: ignore[union-attr]
    assert names == ["note", "scan", "log"]
    assert written.version == 1 and set(written.blobs) == {"note", "scan", "log"}

    # AND get returns the attributes and readers of the same blobs
    doc = docs.get("invoice#42", "v")
    assert doc.attributes == {"title": "hello", "total": Decimal(12), "tags": {"a", "b"}}
    assert doc.version == 1 and doc.expires_at is None
    assert doc.blobs["note"].read() == b"paid"
    assert doc.blobs["scan"].read() == b"%PDF scan"
    assert doc.blobs["log"].read() == b"line 1\n"
    assert doc.manifest == written.manifest


def test_blob_readers_fetch_on_demand_with_if_match(aws: Aws) -> None:
    # GIVEN a document with two blobs, read through an S3 client whose GetObject requests are recorded
    s3 = aws.session.client("s3")
    requests: list[dict[str, Any]] = []
    s3.meta.events.register("provide-client-params.s3.GetObject", lambda params, **_: requests.append(params))
    docs = client(aws, s3=s3)
    docs.put("doc", "v", blobs={"a": b"A", "b": b"B"})

    # WHEN the document is read  THEN no blob is fetched
    doc = docs.get("doc", "v")
    assert requests == []

    # WHEN one blob is read  THEN one GetObject, conditional on the manifest's ETag
    assert doc.blobs["b"].read() == b"B"
    assert [{k: r.get(k) for k in ("Bucket", "Key", "IfMatch")} for r in requests] == [
        {"Bucket": BUCKET, "Key": doc.blobs["b"].key, "IfMatch": doc.blobs["b"].etag}
    ]


def test_every_write_uploads_under_fresh_keys_and_never_deletes_old_blobs(aws: Aws) -> None:
    # GIVEN a document replaced twice with the same blob name and content
    docs = client(aws)
    keys = [docs.put("doc", "v", blobs={"body": b"same"}).blobs["body"].key]
    for _ in range(2):
        keys.append(docs.replace("doc", "v", blobs={"body": b"same"}).blobs["body"].key)

    # THEN every write used a key of its own, and the old blobs are left for the consumer to delete
    assert len(set(keys)) == 3
    assert aws.keys() == sorted(keys)
    assert docs.get("doc", "v").version == 3


def test_replace_without_blobs_writes_an_empty_manifest(aws: Aws) -> None:
    docs = client(aws)
    docs.put("doc", "v", {"n": 1}, blobs={"body": b"x"})
    docs.replace("doc", "v", {"n": 2})
    assert aws.item("doc")["blobs"] == {"L": []}  # type: ignore[index]
    assert docs.get("doc", "v").blobs == {}


def test_a_document_without_blobs_may_have_a_slash_in_its_key(aws: Aws) -> None:
    docs = client(aws)
    docs.put("tenant/1", "a/b", {"n": 1})
    assert docs.get("tenant/1", "a/b").attributes == {"n": Decimal(1)}


def test_reading_a_blob_that_changed_or_vanished_says_so(aws: Aws) -> None:
    # GIVEN a document whose blobs are then overwritten and deleted behind its back
    docs = client(aws)
    doc = docs.put("doc", "v", blobs={"a": b"A", "b": b"B"})
    aws.s3.put_object(Bucket=BUCKET, Key=doc.blobs["a"].key, Body=b"other")
    aws.s3.delete_object(Bucket=BUCKET, Key=doc.blobs["b"].key)

    # THEN each read fails with its own error, naming the document, the step and the blob
    with pytest.raises(BlobChangedError, match=r"^read-blob of document \(pk='doc', sk='v'\): blob 'a'"):
        doc.blobs["a"].read()
    with pytest.raises(BlobMissingError, match="blob 'b'"):
        doc.blobs["b"].read()


def test_items_of_another_writer_are_read_too(aws: Aws) -> None:
    # GIVEN an item written without the client: a string key, no version
    aws.s3.put_object(Bucket=BUCKET, Key="docs/legacy/v/body.txt", Body=b"old")
    aws.ddb.put_item(
        TableName=TABLE,
        Item={"pk": {"S": "legacy"}, "sk": {"S": "v"}, "blobs": {"L": [{"S": "docs/legacy/v/body.txt"}]}},
    )
    docs = client(aws)

    # THEN it reads as version 0, its blob named by its path under the prefix, fetched without a condition
    doc = docs.get("legacy", "v")
    assert doc.version == 0 and doc.blobs["body.txt"].read() == b"old"
    # AND a replace expecting version 0 (read or given) takes it to version 1
    assert docs.replace("legacy", "v", {"n": 1}).version == 1

    # GIVEN an item whose blobs is not a manifest  THEN reading it is a ManifestError
    aws.ddb.put_item(
        TableName=TABLE, Item={"pk": {"S": "odd"}, "sk": {"S": "v"}, "blobs": {"L": [{"N": "1"}]}}
    )
    with pytest.raises(
        ManifestError, match=r"blobs\[0\] is not a map of key \(S\), etag \(S\) and size \(N\)"
    ):
        docs.get("odd", "v")


def test_get_of_a_missing_document_is_not_found(aws: Aws) -> None:
    with pytest.raises(
        NotFoundError, match=r"^get-item of document \(pk='nope', sk='v'\): no such document$"
    ):
        client(aws).get("nope", "v")


# ---- a write that fails leaves nothing behind ----
def test_a_put_whose_item_write_fails_deletes_its_uploads(aws: Aws) -> None:
    # GIVEN DynamoDB refuses the item
    ddb = Faulty(aws.ddb, put_item=fail_after(aws.ddb.put_item, 0, aws_error("AccessDeniedException")))
    docs = client(aws, dynamodb=ddb)

    # WHEN a document with two blobs is put
    with pytest.raises(AwsError) as refused:
        docs.put("doc", "v", blobs={"a": b"A", "b": b"B"})

    # THEN the error names the step and AWS's code, no item exists and both uploads are gone
    assert refused.value.step == "put-item" and refused.value.code == "AccessDeniedException"
    assert refused.value.orphans == ()
    assert aws.item("doc") is None
    assert aws.keys() == []


def test_a_put_over_an_existing_document_conflicts_and_deletes_its_uploads(aws: Aws) -> None:
    docs = client(aws)
    first = docs.put("doc", "v", blobs={"a": b"first"})
    with pytest.raises(ConflictError) as conflict:
        docs.put("doc", "v", blobs={"a": b"second"})
    assert "exists already (version 1): replace it instead" in str(conflict.value)
    assert (conflict.value.expected_version, conflict.value.current_version) == (None, 1)
    assert aws.keys() == [first.blobs["a"].key]


@pytest.mark.parametrize("concurrency", [1, 4])
def test_an_upload_failing_halfway_takes_the_others_back_and_writes_no_item(
    aws: Aws, concurrency: int
) -> None:
    # GIVEN S3 accepts two uploads, then refuses every other one (a 403 is BucketOwnerError: see test_bucket_owner)
    s3 = Faulty(
        aws.s3, put_object=fail_after(aws.s3.put_object, 2, aws_error("InvalidRequest", 400, "PutObject"))
    )
    docs = client(aws, s3=s3, upload_concurrency=concurrency)

    # WHEN a document with four blobs is put
    with pytest.raises(UploadError) as failed:
        docs.put("doc", "v", blobs={n: n.encode() for n in "abcd"})

    # THEN the error names the document, the step and a blob; no item; every upload deleted
    assert re.match(
        r"^upload of document \(pk='doc', sk='v'\): blob '[abcd]': .*InvalidRequest", str(failed.value)
    )
    assert failed.value.blob in "abcd" and failed.value.orphans == ()
    assert aws.item("doc") is None
    assert aws.keys() == []


def test_a_blob_source_failing_midway_is_an_upload_error(aws: Aws) -> None:
    class Broken(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def readinto(self, buffer: Any) -> int:
            raise OSError("disk gone")

    docs = client(aws, upload_concurrency=4)
    with pytest.raises(UploadError, match=r"blob 'broken': reading its content failed: OSError: disk gone"):
        docs.put("doc", "v", blobs={"a": b"A", "broken": Broken(), "c": b"C"})
    assert aws.item("doc") is None and aws.keys() == []


def test_uploads_that_cannot_be_deleted_are_reported_as_orphans(aws: Aws) -> None:
    # GIVEN the second upload fails and the undo's DeleteObjects is refused
    s3 = Faulty(
        aws.s3,
        put_object=fail_after(aws.s3.put_object, 1, aws_error("InvalidRequest", 400)),
        delete_objects=fail_after(aws.s3.delete_objects, 0, aws_error("AccessDenied", 403)),
    )
    docs = client(aws, s3=s3, upload_concurrency=1)

    with pytest.raises(UploadError) as failed:
        docs.put("doc", "v", blobs={"a": b"A", "b": b"B"})

    # THEN the one blob left behind is named, in the exception and its one line
    left = aws.keys()
    assert len(left) == 1 and failed.value.orphans == tuple(left)
    assert str(failed.value).endswith(f"1 uploaded blob(s) left behind (orphans): {left[0]}")
    assert "\n" not in str(failed.value)


def test_an_item_write_whose_answer_was_lost_is_recognised_as_written(aws: Aws) -> None:
    # GIVEN the first PutItem is applied but its answer is lost (a read timeout); the retry is then refused by
    # its own condition
    def applied_then_lost(**kwargs: Any) -> Any:
        ddb.put_item = aws.ddb.put_item  # type: ignore[attr-defined]
        aws.ddb.put_item(**kwargs)
        raise ReadTimeoutError(endpoint_url="https://dynamodb")

    ddb = Faulty(aws.ddb)
    ddb._operations["put_item"] = applied_then_lost
    docs = client(aws, dynamodb=ddb)

    # WHEN a document is put  THEN it succeeds, and its blobs stay: the item lists them
    doc = docs.put("doc", "v", blobs={"a": b"A"})
    assert [e["M"]["key"]["S"] for e in aws.item("doc")["blobs"]["L"]] == [doc.blobs["a"].key]  # type: ignore[index]
    assert aws.keys() == [doc.blobs["a"].key]


def test_when_the_item_write_outcome_is_unknown_the_uploads_stay(aws: Aws) -> None:
    # GIVEN DynamoDB answers nothing at all: PutItem and the GetItem that would tell whether it was applied
    lost = EndpointConnectionError(endpoint_url="https://dynamodb")
    ddb = Faulty(
        aws.ddb,
        put_item=fail_after(aws.ddb.put_item, 0, lost),
        get_item=fail_after(aws.ddb.get_item, 0, lost),
    )
    docs = client(aws, dynamodb=ddb, retry=RetryPolicy(max_attempts=2, sleep=lambda _: None))

    with pytest.raises(AwsError) as unknown:
        docs.put("doc", "v", blobs={"a": b"A"})

    # THEN the blob is kept (the item may list it) and named
    assert unknown.value.orphans == tuple(aws.keys()) and len(aws.keys()) == 1
    assert "may or may not have been written, so its uploads were kept" in str(unknown.value)


# ---- two writers ----
def test_concurrent_replaces_one_wins_the_other_conflicts_and_nothing_is_lost(aws: Aws) -> None:
    # GIVEN two writers that read version 1 of one document
    alice, bob = client(aws), client(aws)
    alice.put("doc", "v", {"by": "nobody"}, blobs={"body": b"v1"})
    seen_by_alice, seen_by_bob = alice.get("doc", "v"), bob.get("doc", "v")

    # WHEN both replace it, each expecting the version it read
    won = alice.replace(
        "doc", "v", {"by": "alice"}, blobs={"body": b"alice"}, expected_version=seen_by_alice.version
    )
    with pytest.raises(ConflictError) as lost:
        bob.replace("doc", "v", {"by": "bob"}, blobs={"body": b"bob"}, expected_version=seen_by_bob.version)

    # THEN the second is refused, naming the document and both versions, its upload taken back
    assert str(lost.value) == (
        "put-item of document (pk='doc', sk='v'): version 1 expected, 2 found: another writer changed the document"
    )
    assert (lost.value.expected_version, lost.value.current_version) == (1, 2)
    assert aws.keys() == sorted([seen_by_alice.blobs["body"].key, won.blobs["body"].key])
    assert alice.get("doc", "v").blobs["body"].read() == b"alice"

    # AND once bob reads again, his replace lands on alice's
    again = bob.get("doc", "v")
    assert again.attributes == {"by": "alice"}
    assert (
        bob.replace("doc", "v", {"by": "bob"}, blobs={"body": b"bob"}, expected_version=again.version).version
        == 3
    )


def test_replace_and_delete_of_a_missing_document_are_not_found(aws: Aws) -> None:
    docs = client(aws)
    with pytest.raises(
        NotFoundError, match=r"^read-version of document \(pk='doc', sk='v'\): no such document"
    ):
        docs.replace("doc", "v", {"n": 1}, blobs={"a": b"A"})
    with pytest.raises(NotFoundError, match="no such document"):
        docs.replace("doc", "v", {"n": 1}, blobs={"a": b"A"}, expected_version=1)
    with pytest.raises(NotFoundError, match=r"^read-version of document"):
        docs.delete("doc", "v")
    assert aws.keys() == []


def test_delete_is_conditional_on_the_version(aws: Aws) -> None:
    docs = client(aws)
    docs.put("doc", "v", blobs={"a": b"A"})
    docs.replace("doc", "v", blobs={"a": b"B"})
    with pytest.raises(ConflictError, match=r"^delete-item of document .*version 1 expected, 2 found"):
        docs.delete("doc", "v", expected_version=1)
    docs.delete("doc", "v", expected_version=2)
    assert aws.item("doc") is None
    # the client leaves blobs to the consumer, which deletes them from the REMOVE
    assert len(aws.keys()) == 2


def test_expire_sets_expires_at_and_bumps_the_version(aws: Aws) -> None:
    docs = client(aws)
    docs.put("doc", "v", {"n": 1}, blobs={"a": b"A"})
    at = datetime(2030, 1, 1, tzinfo=UTC)

    assert docs.expire("doc", "v", at) == 2
    assert aws.item("doc")["expiresAt"] == {"N": "1893456000"}  # type: ignore[index]
    doc = docs.get("doc", "v")
    assert (doc.expires_at, doc.version, doc.attributes) == (1893456000, 2, {"n": Decimal(1)})
    assert docs.expire("doc", "v", 1_900_000_000, expected_version=2) == 3
    assert docs.get("doc", "v").expires_at == 1_900_000_000
    assert docs.expire("doc", "v", None) == 4
    assert "expiresAt" not in aws.item("doc")  # type: ignore[operator]

    with pytest.raises(ConflictError, match=r"^update-item of document .*version 2 expected, 4 found"):
        docs.expire("doc", "v", at, expected_version=2)
    with pytest.raises(NotFoundError, match=r"^update-item of document \(pk='nope'"):
        docs.expire("nope", "v", at)


def test_put_and_replace_take_an_expiry(aws: Aws) -> None:
    docs = client(aws)
    assert docs.put("doc", "v", expires_at=1_800_000_000).expires_at == 1_800_000_000
    assert docs.replace("doc", "v").expires_at is None  # a replace replaces the whole document


# ---- throttling ----
def test_throttled_calls_are_retried_with_exponential_backoff_and_jitter(aws: Aws) -> None:
    # GIVEN DynamoDB throttles PutItem twice and S3 asks to slow down once
    throttled = [aws_error("ProvisionedThroughputExceededException"), aws_error("ThrottlingException")]
    ddb = Faulty(aws.ddb, put_item=fail_first(aws.ddb.put_item, throttled))
    s3 = Faulty(aws.s3, put_object=fail_first(aws.s3.put_object, [aws_error("SlowDown", 503)]))
    sleeps = Sleeps([])
    docs = client(
        aws, dynamodb=ddb, s3=s3, retry=RetryPolicy(base_delay=0.1, sleep=sleeps, jitter=lambda: 0.5)
    )

    # WHEN a document is put  THEN it is written, after a backoff per throttled call (half of 0.1 * 2**n)
    doc = docs.put("doc", "v", blobs={"a": b"A"})
    assert doc.blobs["a"].read() == b"A"
    assert sleeps.delays == [0.05, 0.05, 0.1]


def test_the_backoff_is_capped_and_jittered() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=4.0, jitter=lambda: 1.0)
    assert [policy.delay(n) for n in range(1, 6)] == [1.0, 2.0, 4.0, 4.0, 4.0]
    assert RetryPolicy(jitter=lambda: 0.0).delay(3) == 0.0


def test_throttling_on_every_attempt_is_a_throttled_error_naming_the_document(aws: Aws) -> None:
    # GIVEN a DynamoDB client stubbed (botocore's Stubber) to throttle three times, then answer
    ddb = aws.session.client("dynamodb", config=Config(retries={"total_max_attempts": 1}))
    stubber = Stubber(ddb)
    item = {"pk": {"S": "doc"}, "sk": {"S": "v"}, "version": {"N": "4"}, "blobs": {"L": []}}
    for _ in range(2):
        stubber.add_client_error("get_item", "ThrottlingException", http_status_code=400)
    stubber.add_response("get_item", {"Item": item})
    for _ in range(3):
        stubber.add_client_error("get_item", "ProvisionedThroughputExceededException", http_status_code=400)
    docs = client(aws, dynamodb=ddb, retry=RetryPolicy(max_attempts=3, sleep=lambda _: None))

    with stubber:
        # WHEN two throttles precede the answer  THEN the read succeeds
        assert docs.get("doc", "v").version == 4
        # WHEN all three attempts are throttled  THEN ThrottledError, with the step and the attempts
        with pytest.raises(ThrottledError) as throttled:
            docs.get("doc", "v")
    assert throttled.value.attempts == 3 and throttled.value.code == "ProvisionedThroughputExceededException"
    assert str(throttled.value).startswith("get-item of document (pk='doc', sk='v'): ")
    assert str(throttled.value).endswith("(after 3 attempts)")


# ---- validation ----
TEXT = io.StringIO("text")
BAD_CALLS: list[tuple[str, Callable[[DocClient], Any], str]] = [
    ("empty pk", lambda d: d.put("", "v"), "pk must not be empty"),
    ("empty sk", lambda d: d.put("doc", ""), "sk must not be empty"),
    ("sk not a string", lambda d: d.put("doc", 5), "sk must be a string, got int"),  # type: ignore[arg-type]
    ("slash in a blob name", lambda d: d.put("doc", "v", blobs={"a/b": b"x"}), "blob name 'a/b' contains '/'"),
    ("dot-dot blob name", lambda d: d.put("doc", "v", blobs={"..": b"x"}), "blob name '..' is '..'"),
    ("empty blob name", lambda d: d.put("doc", "v", blobs={"": b"x"}), "a blob name must not be empty"),
    ("reserved version", lambda d: d.put("doc", "v", {"version": 3}), "attribute 'version' is reserved"),
    ("reserved blobs", lambda d: d.put("doc", "v", {"blobs": []}), "attribute 'blobs' is reserved"),
    ("reserved pk", lambda d: d.replace("doc", "v", {"pk": "x"}), "attribute 'pk' is reserved"),
    ("expiresAt as attribute", lambda d: d.put("doc", "v", {"expiresAt": 1}), "reserved (blobs, expiresAt, pk, sk, version): pass expires_at="),
    ("float attribute", lambda d: d.put("doc", "v", {"ratio": 0.5}), "attribute 'ratio': Float types are not supported"),
    ("index key not a string", lambda d: d.put("doc", "v", {"gsi1pk": 3}), "'gsi1pk' is a key of the index gsi1"),
    ("slash in pk with blobs", lambda d: d.put("a/b", "v", blobs={"x": b"x"}), "pk contains '/': a document with blobs needs"),
    ("dot sk with blobs", lambda d: d.put("doc", ".", blobs={"x": b"x"}), "sk is '.': a document with blobs needs"),
    ("str content", lambda d: d.put("doc", "v", blobs={"x": "text"}), "blob 'x': a str is ambiguous"),  # type: ignore[dict-item]
    ("missing file", lambda d: d.put("doc", "v", blobs={"x": Path("/no/such/file")}), "blob 'x': '/no/such/file' is not a file"),
    ("text stream", lambda d: d.put("doc", "v", blobs={"x": TEXT}), "blob 'x': a text-mode file; open it in binary mode"),  # type: ignore[dict-item]
    ("naive datetime", lambda d: d.expire("doc", "v", datetime(2030, 1, 1)), "expires_at 2030-01-01T00:00:00 has no timezone"),
    ("milliseconds", lambda d: d.put("doc", "v", expires_at=1_893_456_000_000), "is not epoch seconds (milliseconds would never expire)"),
    ("negative version", lambda d: d.replace("doc", "v", expected_version=-1), "expected_version must be an integer >= 0"),
    ("bool version", lambda d: d.delete("doc", "v", expected_version=True), "expected_version must be an integer >= 0"),
    ("blobs not a mapping", lambda d: d.put("doc", "v", blobs=[b"x"]), "blobs must be a mapping of name to content"),  # type: ignore[arg-type]
]  # fmt: skip


class NoCalls:
    """A client any call to which fails the test: bad input is refused before AWS is asked anything."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"no AWS call may be made for bad input (called {name})")


@pytest.mark.parametrize(("call", "message"), [c[1:] for c in BAD_CALLS], ids=[c[0] for c in BAD_CALLS])
def test_bad_input_is_refused_in_one_line_before_any_call(call: Callable[..., Any], message: str) -> None:
    docs = DocClient(TABLE, BUCKET, blob_root=ROOT, dynamodb=NoCalls(), s3=NoCalls())
    with pytest.raises(ValidationError) as refused:
        call(docs)
    text = str(refused.value)
    assert message in text and "\n" not in text
    assert text.startswith("validate of document (pk=") and refused.value.step == "validate"


def test_a_deployment_without_a_blob_bucket_refuses_blobs(aws: Aws) -> None:
    docs = DocClient(TABLE, session=aws.session)
    assert docs.put("doc", "v", {"n": 1}).blobs == {}
    with pytest.raises(ValidationError, match=f"the deployment of table {TABLE} has no blob bucket"):
        docs.put("other", "v", blobs={"a": b"A"})


# ---- uploads never replace an object ----
def test_an_upload_never_replaces_an_existing_object(aws: Aws) -> None:
    # GIVEN an object already at the key an upload is about to use
    store = client(aws)._store
    assert store is not None
    aws.s3.put_object(Bucket=BUCKET, Key="docs/doc/v/a-taken", Body=b"someone's")
    source = source_of("doc", "v", "a", b"mine")
    attempted: list[str] = []

    # WHEN it is uploaded  THEN S3 refuses it (If-None-Match), the object is intact and not to be taken back
    with pytest.raises(UploadError, match="an object already exists at docs/doc/v/a-taken"):
        store.upload("doc", "v", source, "docs/doc/v/a-taken", attempted)
    assert aws.s3.get_object(Bucket=BUCKET, Key="docs/doc/v/a-taken")["Body"].read() == b"someone's"
    assert attempted == []


def test_an_upload_whose_answer_was_lost_is_recognised_on_retry(aws: Aws) -> None:
    # GIVEN the first PutObject creates the object but its answer is lost
    def created_then_lost(**kwargs: Any) -> Any:
        s3._operations.pop("put_object")
        aws.s3.put_object(**kwargs)
        raise ReadTimeoutError(endpoint_url="https://s3")

    s3 = Faulty(aws.s3, put_object=created_then_lost)
    docs = client(aws, s3=s3)

    # WHEN a document is put  THEN the retry's 412 is read as our own object: the put succeeds with its ETag
    doc = docs.put("doc", "v", blobs={"a": b"A"})
    head = aws.s3.head_object(Bucket=BUCKET, Key=doc.blobs["a"].key)
    assert (doc.blobs["a"].etag, doc.blobs["a"].size) == (head["ETag"], 1)
    assert doc.blobs["a"].read() == b"A"


def test_a_blob_body_failing_midway_is_a_read_error_naming_the_blob(aws: Aws) -> None:
    class Dropped:
        def read(self) -> bytes:
            raise ReadTimeoutError(endpoint_url="https://s3")

        def close(self) -> None:
            pass

    docs = client(aws)
    doc = docs.put("doc", "v", blobs={"a": b"A"})
    reader = (
        client(aws, s3=Faulty(aws.s3, get_object=lambda **_: {"Body": Dropped()})).get("doc", "v").blobs["a"]
    )
    with pytest.raises(
        DocTableError,
        match=rf"^read-blob of document \(pk='doc', sk='v'\): blob 'a' \({doc.blobs['a'].key}\): reading its body failed",
    ):
        reader.read()
