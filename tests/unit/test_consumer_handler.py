"""End-to-end unit tests of ``stream_consumer.handler.lambda_handler`` against a moto S3 bucket."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from tests.unit.events import (
    ACCOUNT,
    REGION,
    TABLE,
    FakeLambdaContext,
    av,
    failures,
    image,
    insert,
    keys_only,
    modify,
    record,
    remove,
    seq,
    sqs_event,
    stream_event,
)

NO_FAILURES: dict[str, list[Any]] = {"batchItemFailures": []}


def messages(lines: list[dict[str, Any]], message: str) -> list[dict[str, Any]]:
    return [line for line in lines if line.get("message") == message]


def emitted_metrics(lines: list[dict[str, Any]]) -> dict[str, Any]:
    blobs = [line for line in lines if "_aws" in line]
    assert len(blobs) == 1, blobs
    (directive,) = blobs[0]["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "Doctable"
    names = {m["Name"]: m["Unit"] for m in directive["Metrics"]}
    assert set(names.values()) == {"Count"}
    values = {name: blobs[0][name] for name in names}
    return {name: sum(v) if isinstance(v, list) else v for name, v in values.items()}


def counts(
    received: int = 1,
    deleted: int = 0,
    failed: int = 0,
    refused: int = 0,
    *,
    with_etag: int = 0,
    without_etag: int | None = None,
    precondition_failed: int = 0,
) -> dict[str, int]:
    """Every metric the consumer emits; the dropped keys without an ETag are by default the deleted ones."""
    return {
        "RecordsReceived": received,
        "BlobsDeleted": deleted,
        "RecordsFailed": failed,
        "KeysRefused": refused,
        "DroppedKeysWithEtag": with_etag,
        "DroppedKeysWithoutEtag": deleted - with_etag if without_etag is None else without_etag,
        "BlobsKeptPreconditionFailed": precondition_failed,
    }


def test_insert_deletes_nothing_and_logs_the_proof_line_first(s3, load_consumer, stdout_json):
    # GIVEN a blob that a freshly inserted item lists
    s3.put("blobs/doc#1/v#1/a.pdf")
    handler = load_consumer()
    event = stream_event(insert(1, "doc#1", "v#1", ["blobs/doc#1/v#1/a.pdf"]), insert(2, "doc#2", "v#1"))

    # WHEN the consumer receives the INSERTs
    response = handler.lambda_handler(event, FakeLambdaContext())

    # THEN nothing is deleted, nothing fails, and exactly one proof line describes the batch
    assert response == NO_FAILURES
    assert s3.keys() == {"blobs/doc#1/v#1/a.pdf"}
    lines = stdout_json()
    (proof,) = messages(lines, "stream_records_received")
    assert proof["record_count"] == 2
    assert proof["event_names"] == {"INSERT": 2, "MODIFY": 0, "REMOVE": 0}
    assert proof["first_sequence_number"] == seq(1)
    assert proof["last_sequence_number"] == seq(2)
    assert proof["table_name"] == TABLE
    assert proof["service"] == "doctable-consumer"
    assert proof["function_request_id"] == FakeLambdaContext.aws_request_id
    assert lines.index(proof) == 0  # logged before any processing
    assert emitted_metrics(lines) == counts(received=2)


def test_modify_deletes_only_the_orphans(s3, load_consumer, stdout_json):
    # GIVEN an item whose update dropped b.pdf and added c.pdf
    s3.put("blobs/doc#1/v#1/a.pdf", "blobs/doc#1/v#1/b.pdf", "blobs/doc#1/v#1/c.pdf")
    handler = load_consumer()
    event = stream_event(
        modify(
            1,
            "doc#1",
            "v#1",
            ["blobs/doc#1/v#1/a.pdf", "blobs/doc#1/v#1/b.pdf"],
            ["blobs/doc#1/v#1/a.pdf", "blobs/doc#1/v#1/c.pdf"],
        ),
    )

    # WHEN the MODIFY is consumed
    response = handler.lambda_handler(event, FakeLambdaContext())

    # THEN only the orphan is gone
    assert response == NO_FAILURES
    assert s3.keys() == {"blobs/doc#1/v#1/a.pdf", "blobs/doc#1/v#1/c.pdf"}
    lines = stdout_json()
    (cleaned,) = messages(lines, "record_cleaned")
    assert cleaned["reason"] == "orphaned"
    assert cleaned["keys_deleted"] == 1
    assert emitted_metrics(lines) == counts(deleted=1)


@pytest.mark.parametrize("as_set", [False, True], ids=["list", "string-set"])
def test_remove_deletes_the_listed_blobs(s3, load_consumer, stdout_json, as_set):
    # GIVEN a deleted item listing two blobs (as a list or as a string set) and a neighbour's blob
    own = ["blobs/doc#1/v#1/a.pdf", "blobs/doc#1/v#1/sub/b.png"]
    s3.put(*own, "blobs/doc#1/v#10/neighbour.pdf")
    handler = load_consumer()

    # WHEN the REMOVE is consumed
    response = handler.lambda_handler(
        stream_event(remove(1, "doc#1", "v#1", own, as_set=as_set)), FakeLambdaContext()
    )

    # THEN both blobs are deleted, the neighbour survives
    assert response == NO_FAILURES
    assert s3.keys() == {"blobs/doc#1/v#10/neighbour.pdf"}
    lines = stdout_json()
    (cleaned,) = messages(lines, "record_cleaned")
    assert (cleaned["reason"], cleaned["pk"], cleaned["sk"]) == ("deleted", "doc#1", "v#1")
    assert emitted_metrics(lines) == counts(deleted=2)


def test_ttl_remove_is_cleaned_and_logged_as_ttl_expiry(s3, load_consumer, stdout_json):
    # GIVEN an item expired by the DynamoDB TTL service
    s3.put("blobs/doc#1/v#1/a.pdf")
    handler = load_consumer()

    # WHEN its REMOVE is consumed
    event = stream_event(remove(1, "doc#1", "v#1", ["blobs/doc#1/v#1/a.pdf"], ttl=True))
    response = handler.lambda_handler(event, FakeLambdaContext())

    # THEN the blob is gone and the reason says ttl-expiry
    assert response == NO_FAILURES
    assert s3.keys() == set()
    (cleaned,) = messages(stdout_json(), "record_cleaned")
    assert cleaned["reason"] == "ttl-expiry"


def test_keys_only_record_deletes_nothing_without_prefix_cleanup(s3, load_consumer, stdout_json):
    # GIVEN a KEYS_ONLY-shaped REMOVE and prefix cleanup off
    s3.put("blobs/doc#1/v#1/a.pdf")
    handler = load_consumer(BLOB_PREFIX_CLEANUP="off")

    # WHEN it is consumed
    response = handler.lambda_handler(
        stream_event(keys_only("REMOVE", 1, "doc#1", "v#1")), FakeLambdaContext()
    )

    # THEN nothing is deleted and the missing images are logged
    assert response == NO_FAILURES
    assert s3.keys() == {"blobs/doc#1/v#1/a.pdf"}
    (note,) = messages(stdout_json(), "record_without_images")
    assert (note["view_type"], note["prefix_cleanup"], note["action"]) == ("KEYS_ONLY", "off", "none")


def test_prefix_cleanup_clears_the_records_own_prefix_only(s3, load_consumer, stdout_json):
    # GIVEN prefix cleanup on, a KEYS_ONLY REMOVE and a full REMOVE, and blobs of other items around them
    s3.put(
        "blobs/doc#1/v#1/a.pdf",
        "blobs/doc#1/v#1/deep/b.pdf",
        "blobs/doc#1/v#10/keep.pdf",
        "blobs/doc#2/v#1/unlisted.pdf",
        "blobs/doc#2/v#1/listed.pdf",
        "blobs/doc#3/v#1/keep.pdf",
        "blobs/doc#1/v#1",
    )
    handler = load_consumer(BLOB_PREFIX_CLEANUP="on")
    event = stream_event(
        keys_only("REMOVE", 1, "doc#1", "v#1"),
        remove(2, "doc#2", "v#1", ["blobs/doc#2/v#1/listed.pdf"]),
        keys_only("MODIFY", 3, "doc#3", "v#1"),  # a MODIFY never triggers prefix cleanup
    )

    # WHEN the batch is consumed
    response = handler.lambda_handler(event, FakeLambdaContext())

    # THEN exactly the two removed items' prefixes are empty
    assert response == NO_FAILURES
    assert s3.keys() == {"blobs/doc#1/v#10/keep.pdf", "blobs/doc#3/v#1/keep.pdf", "blobs/doc#1/v#1"}
    assert emitted_metrics(stdout_json()) == counts(received=3, deleted=4)


def test_escaping_keys_are_refused_logged_and_counted_without_failing(s3, load_consumer, stdout_json):
    # GIVEN a deleted item listing its own blob plus keys that are not its own
    foreign = [
        "../other/x",
        "/abs",
        "blobs/doc#2/v#1/theirs.pdf",  # another record's prefix
        "blobs/doc#1/v#1/../../doc#2/v#1/theirs.pdf",
        "blobs/doc#1/v#1\\win.pdf",
        "",
    ]
    s3.put("blobs/doc#1/v#1/own.pdf", "blobs/doc#2/v#1/theirs.pdf")
    handler = load_consumer()
    event = stream_event(remove(1, "doc#1", "v#1", ["blobs/doc#1/v#1/own.pdf", *foreign, 42]))

    # WHEN it is consumed
    response = handler.lambda_handler(event, FakeLambdaContext())

    # THEN only its own blob is deleted; every foreign key is logged with a reason and counted; no failure
    assert response == NO_FAILURES
    assert s3.keys() == {"blobs/doc#2/v#1/theirs.pdf"}
    lines = stdout_json()
    refused = {line["key"]: line["reason"] for line in messages(lines, "blob_key_refused")}
    assert refused == {
        "../other/x": "dot-dot-segment",
        "/abs": "absolute",
        "blobs/doc#2/v#1/theirs.pdf": "outside-record-prefix",
        "blobs/doc#1/v#1/../../doc#2/v#1/theirs.pdf": "dot-dot-segment",
        "blobs/doc#1/v#1\\win.pdf": "backslash",
        "": "empty",
        "42": "not-a-string",  # the number 42 (a Decimal once deserialized), logged via str()
    }
    assert all((line["pk"], line["sk"]) == ("doc#1", "v#1") for line in messages(lines, "blob_key_refused"))
    assert emitted_metrics(lines) == counts(deleted=1, refused=7)


def test_poison_records_fail_alone_beside_good_records(s3, load_consumer, stdout_json):
    # GIVEN good REMOVEs around records that cannot be interpreted
    s3.put("blobs/a/1/x", "blobs/b/1/y")
    number_blobs = image("c", "1")
    number_blobs["blobs"] = av(5)
    event = stream_event(
        remove(1, "a", "1", ["blobs/a/1/x"]),
        record("REMOVE", 2, keys={"pk": av(7), "sk": av("1")}, old=image("c", "1")),  # pk is a number
        record("REMOVE", 3, "c", "1", old=number_blobs),  # blobs is a number
        record("REMOVE", 4, keys={}),  # no Keys
        remove(5, "b", "1", ["blobs/b/1/y"]),
    )
    handler = load_consumer()

    # WHEN the batch is consumed
    response = handler.lambda_handler(event, FakeLambdaContext())

    # THEN only the poison records are reported (and retried), the good ones are cleaned
    assert response == failures(2, 3, 4)
    assert s3.keys() == set()
    lines = stdout_json()
    problems = {line["sequence_number"]: line["problem"] for line in messages(lines, "record_rejected")}
    assert problems == {
        seq(2): "key attribute 'pk' must be a non-empty string, got a Decimal",
        seq(3): "OldImage.blobs must be a list or a string set, got Decimal",
        seq(4): "missing dynamodb.Keys",
    }
    assert emitted_metrics(lines) == counts(received=5, deleted=2, failed=3)


def test_all_records_failing_still_returns_a_partial_batch_response(s3, load_consumer, stdout_json):
    # GIVEN a batch made of one poison record
    handler = load_consumer()
    event = stream_event(record("MODIFY", 1, keys={"sk": av("1")}, old=image("a", "1"), new=image("a", "1")))

    # WHEN it is consumed
    response = handler.lambda_handler(event, FakeLambdaContext())

    # THEN it is reported, not raised
    assert response == failures(1)


def test_record_without_sequence_number_fails_the_whole_invocation(s3, load_consumer, stdout_json):
    # GIVEN a record without a dynamodb body beside a good one: it cannot be named in batchItemFailures
    s3.put("blobs/a/1/x")
    broken = remove(2, "b", "1", [])
    del broken["dynamodb"]
    handler = load_consumer()

    # WHEN the batch is consumed
    # THEN the invocation fails as a whole (Lambda retries and bisects), before anything is deleted
    with pytest.raises(
        ValueError,
        match=r"without a sequence number \(dynamodb.SequenceNumber;.*Records\[1\]: missing 'dynamodb'",
    ):
        handler.lambda_handler(
            stream_event(remove(1, "a", "1", ["blobs/a/1/x"]), broken), FakeLambdaContext()
        )
    assert s3.keys() == {"blobs/a/1/x"}
    lines = stdout_json()
    assert len(messages(lines, "stream_records_received")) == 1
    assert emitted_metrics(lines) == counts(received=2, failed=2)


@pytest.mark.parametrize(
    "event", [{}, sqs_event(), {"Records": []}, []], ids=["empty", "sqs", "no-records", "list"]
)
def test_non_stream_event_is_rejected_loudly(s3, load_consumer, stdout_json, event):
    # GIVEN an event that is not a DynamoDB Streams event
    handler = load_consumer()

    # WHEN it is handled
    # THEN a ValueError says what was expected, it is logged, and no proof line claims records were received
    expected = "expected a DynamoDB Streams event with Records[].eventSource == 'aws:dynamodb'"
    with pytest.raises(ValueError) as caught:
        handler.lambda_handler(event, FakeLambdaContext())
    assert expected in str(caught.value)
    lines = stdout_json()
    (logged,) = messages(lines, "unexpected_event")
    assert expected in logged["error"]
    assert messages(lines, "stream_records_received") == []
    assert emitted_metrics(lines) == counts(received=0)


def test_records_from_another_table_are_refused_not_cleaned(s3, load_consumer, stdout_json):
    # GIVEN TABLE_NAME names another table than the stream's ARN, and the record lists an existing blob
    s3.put("blobs/doc#1/v#1/a.pdf")
    handler = load_consumer(TABLE_NAME="some-other-table")

    # WHEN a REMOVE arrives from the foreign stream
    event = stream_event(remove(1, "doc#1", "v#1", ["blobs/doc#1/v#1/a.pdf"]))
    response = handler.lambda_handler(event, FakeLambdaContext())

    # THEN nothing is deleted, the record fails (retried, then kept on the failure bucket), and it is logged
    assert response == {
        "batchItemFailures": [{"itemIdentifier": event["Records"][0]["dynamodb"]["SequenceNumber"]}]
    }
    assert s3.keys() == {"blobs/doc#1/v#1/a.pdf"}
    (error,) = messages(stdout_json(), "records_from_foreign_table")
    assert (error["expected"], error["received"]) == ("some-other-table", [TABLE])


def test_batch_deletes_use_one_request_per_thousand_keys(s3, load_consumer, stdout_json):
    # GIVEN 5 deleted items listing 500 existing blobs each (2,500 keys)
    keys = {n: [f"blobs/doc#{n}/v#1/{i:04d}" for i in range(500)] for n in range(5)}
    s3.put(*[k for n in keys for k in keys[n]], "blobs/keep/v#1/x")
    handler = load_consumer()
    calls: list[int] = []
    handler.cleaner.store.client.meta.events.register(
        "before-call.s3.DeleteObjects", lambda **kwargs: calls.append(1)
    )

    # WHEN the batch is consumed
    event = stream_event(*(remove(n + 1, f"doc#{n}", "v#1", keys[n]) for n in keys))
    response = handler.lambda_handler(event, FakeLambdaContext())

    # THEN 3 DeleteObjects requests cleared everything
    assert response == NO_FAILURES
    assert len(calls) == 3
    assert s3.keys() == {"blobs/keep/v#1/x"}
    assert emitted_metrics(stdout_json()) == counts(received=5, deleted=2500)


def _owners_sent(handler: Any) -> list[tuple[str, str | None]]:
    """(operation, the x-amz-expected-bucket-owner header) of each S3 request the consumer's client sends."""
    sent: list[tuple[str, str | None]] = []

    def record_owner(params: dict[str, Any], model: Any, **_: Any) -> None:
        sent.append((model.name, params["headers"].get("x-amz-expected-bucket-owner")))

    handler.cleaner.store.client.meta.events.register("before-call.s3", record_owner)
    return sent


@pytest.mark.parametrize("account", [ACCOUNT, "210987654321"])
def test_every_s3_call_names_the_functions_own_account_as_the_buckets_owner(
    s3, load_consumer, stdout_json, account
):
    # GIVEN a REMOVE whose blobs are listed without ETags (a HEAD each) with prefix cleanup on (a list)
    s3.put("blobs/doc#1/v#1/a.pdf", "blobs/doc#1/v#1/stray.pdf")
    handler = load_consumer(BLOB_PREFIX_CLEANUP="on")
    sent = _owners_sent(handler)
    context = FakeLambdaContext(
        invoked_function_arn=f"arn:aws:lambda:{REGION}:{account}:function:doctable-StreamConsumer"
    )

    # WHEN the consumer of the function in ``account`` cleans up
    response = handler.lambda_handler(
        stream_event(remove(1, "doc#1", "v#1", ["blobs/doc#1/v#1/a.pdf"])), context
    )

    # THEN every S3 request it sent (list, HEAD, batch delete) named that account as the bucket's owner (S3
    # answers 403 to a request naming another account than the bucket's: moto does not check it)
    assert response == NO_FAILURES
    assert {op for op, _ in sent} == {"ListObjectsV2", "HeadObject", "DeleteObjects"}
    assert {owner for _, owner in sent} == {account}


def test_a_context_without_an_account_fails_the_batch_before_any_s3_call(s3, load_consumer):
    # GIVEN a context whose function ARN names no account
    s3.put("blobs/doc#1/v#1/a.pdf")
    handler = load_consumer()
    sent = _owners_sent(handler)
    context = FakeLambdaContext(invoked_function_arn="doctable-StreamConsumer")

    # WHEN THEN the invocation fails whole (the mapping retries it) and nothing was sent to S3
    with pytest.raises(ValueError):
        handler.lambda_handler(stream_event(remove(1, "doc#1", "v#1", ["blobs/doc#1/v#1/a.pdf"])), context)
    assert sent == [] and s3.keys() == {"blobs/doc#1/v#1/a.pdf"}


def test_foreign_records_fail_while_the_tables_own_are_cleaned(s3, load_consumer, stdout_json):
    # GIVEN a batch holding a REMOVE from another table's stream and one from this table's
    s3.put("blobs/doc#1/v#1/a.pdf", "blobs/doc#2/v#1/b.pdf")
    handler = load_consumer()
    foreign = remove(1, "doc#1", "v#1", ["blobs/doc#1/v#1/a.pdf"])
    foreign["eventSourceARN"] = foreign["eventSourceARN"].replace(f"table/{TABLE}/", "table/other/")
    event = stream_event(foreign, remove(2, "doc#2", "v#1", ["blobs/doc#2/v#1/b.pdf"]))

    # WHEN the batch is consumed
    response = handler.lambda_handler(event, FakeLambdaContext())

    # THEN the foreign record fails and deletes nothing, and the table's own record is cleaned
    assert response == failures(1)
    assert s3.keys() == {"blobs/doc#1/v#1/a.pdf"}


@pytest.mark.parametrize("source", ["eventsource_arn", None, "arn:aws:sqs:eu-west-1:123456789012:queue"])
def test_a_record_of_an_unknown_source_is_refused(s3, load_consumer, source):
    # GIVEN a REMOVE whose eventSourceARN is not a DynamoDB stream ARN (or is missing)
    s3.put("blobs/doc#1/v#1/a.pdf")
    handler = load_consumer()
    raw = remove(1, "doc#1", "v#1", ["blobs/doc#1/v#1/a.pdf"])
    raw.pop("eventSourceARN")
    if source is not None:
        raw["eventSourceARN"] = source

    # WHEN it is consumed
    response = handler.lambda_handler(stream_event(raw), FakeLambdaContext())

    # THEN it is refused like a foreign record: it fails and its blob stays
    assert response == failures(1)
    assert s3.keys() == {"blobs/doc#1/v#1/a.pdf"}


def test_a_key_the_live_item_lists_again_is_kept(s3, load_consumer, stdout_json):
    # GIVEN the item was deleted (the REMOVE) and put back listing one of its keys again
    s3.put("blobs/doc#1/v#1/a.pdf", "blobs/doc#1/v#1/b.pdf")
    boto3.client("dynamodb", region_name="eu-west-1").put_item(
        TableName=TABLE,
        Item={"pk": av("doc#1"), "sk": av("v#1"), "blobs": av(["blobs/doc#1/v#1/a.pdf"])},
    )
    handler = load_consumer()
    event = stream_event(remove(1, "doc#1", "v#1", ["blobs/doc#1/v#1/a.pdf", "blobs/doc#1/v#1/b.pdf"]))

    # WHEN the REMOVE is consumed
    response = handler.lambda_handler(event, FakeLambdaContext())

    # THEN the key the live item lists stays, the other is deleted, and the log says why the first was kept
    assert response == NO_FAILURES
    assert s3.keys() == {"blobs/doc#1/v#1/a.pdf"}
    (cleaned,) = messages(stdout_json(), "record_cleaned")
    assert (cleaned["keys_deleted"], cleaned["keys_kept"]) == (1, {"listed-by-live-item": 1})


def test_with_key_reuse_never_dropped_keys_are_deleted_at_once(s3, load_consumer, stdout_json):
    # GIVEN blob_key_reuse=never, and an item deleted then put back listing one of its keys again: the promise
    # that no key is listed again, broken
    s3.put("blobs/doc#1/v#1/a.pdf", "blobs/doc#1/v#1/b.pdf")
    boto3.client("dynamodb", region_name="eu-west-1").put_item(
        TableName=TABLE,
        Item={"pk": av("doc#1"), "sk": av("v#1"), "blobs": av(["blobs/doc#1/v#1/a.pdf"])},
    )
    handler = load_consumer(BLOB_KEY_REUSE="never")
    calls: list[str] = []
    for operation in ("HeadObject", "DeleteObjects"):
        handler.cleaner.store.client.meta.events.register(
            f"before-call.s3.{operation}", lambda model, **kwargs: calls.append(model.name)
        )
    event = stream_event(remove(1, "doc#1", "v#1", ["blobs/doc#1/v#1/a.pdf", "blobs/doc#1/v#1/b.pdf"]))

    # WHEN the REMOVE is consumed
    response = handler.lambda_handler(event, FakeLambdaContext())

    # THEN one DeleteObjects and nothing else: no HEAD, no live item read (no DynamoDB client was even built), so
    # the key the live item lists is gone too: what breaking the promise costs
    assert response == NO_FAILURES
    assert calls == ["DeleteObjects"]
    assert handler.cleaner.live._client is None
    assert s3.keys() == set()
    (cleaned,) = messages(stdout_json(), "record_cleaned")
    assert (cleaned["keys_deleted"], cleaned["keys_kept"]) == (2, {})


def test_metrics_carry_the_environment_and_the_table(s3, load_consumer, stdout_json):
    # GIVEN the stack's environment and table in the function's environment
    handler = load_consumer(ENVIRONMENT="prod")

    # WHEN a batch is consumed
    handler.lambda_handler(stream_event(insert(1)), FakeLambdaContext())

    # THEN the metrics are published under service, environment and table
    (blob,) = [line for line in stdout_json() if "_aws" in line]
    (directive,) = blob["_aws"]["CloudWatchMetrics"]
    assert sorted(directive["Dimensions"][0]) == ["environment", "service", "table"]
    assert (blob["environment"], blob["table"], blob["service"]) == ("prod", TABLE, "doctable-consumer")
