"""The consumer reading the Kinesis data stream (consumer_source=kinesis): Kinesis Data Streams for DynamoDB puts
each change record, base64-encoded JSON, under ``Records[].kinesis.data``. The same cleanup, proof line and
failure handling as a DynamoDB stream event; a record is named by its Kinesis sequence number."""

from __future__ import annotations

import base64
from typing import Any

import boto3
import pytest
from stream_consumer.domain import UnexpectedEventError, parse_batch, sequence_number_of, stream_records

from tests.unit.events import (
    LATER,
    REGION,
    TABLE,
    FakeLambdaContext,
    av,
    change_data,
    insert,
    kinesis_failures,
    kinesis_record,
    kseq,
    modify,
    remove,
    stream_event,
    via_kinesis,
)
from tests.unit.test_consumer_handler import NO_FAILURES, counts, emitted_metrics, messages

A, B = "blobs/doc#1/v#1/a.pdf", "blobs/doc#1/v#1/b.pdf"
OTHER = "blobs/doc#2/v#1/c.pdf"


def put_item(pk: str, sk: str, blobs: list[str]) -> None:
    boto3.client("dynamodb", region_name=REGION).put_item(
        TableName=TABLE, Item={"pk": av(pk), "sk": av(sk), "blobs": av(blobs)}
    )


def test_a_kinesis_remove_deletes_its_blobs_and_logs_the_proof_line(s3, load_consumer, stdout_json):
    # GIVEN the blobs of a deleted item and of a modified one, and their changes as Kinesis records
    s3.put(A, B, OTHER, "blobs/doc#2/v#1/kept.pdf")
    handler = load_consumer()
    event = stream_event(
        via_kinesis(remove(1, "doc#1", "v#1", [A, B]), 1),
        via_kinesis(
            modify(2, "doc#2", "v#1", [OTHER, "blobs/doc#2/v#1/kept.pdf"], ["blobs/doc#2/v#1/kept.pdf"]), 2
        ),
    )

    # WHEN the consumer receives them
    response = handler.lambda_handler(event, FakeLambdaContext())

    # THEN the REMOVE's blobs and the MODIFY's orphan are deleted, and the proof line names the Kinesis records
    assert response == NO_FAILURES
    assert s3.keys() == {"blobs/doc#2/v#1/kept.pdf"}
    lines = stdout_json()
    (proof,) = messages(lines, "stream_records_received")
    assert proof["record_count"] == 2
    assert proof["event_names"] == {"INSERT": 0, "MODIFY": 1, "REMOVE": 1}
    assert (proof["first_sequence_number"], proof["last_sequence_number"]) == (kseq(1), kseq(2))
    assert proof["table_name"] == TABLE
    cleaned = messages(lines, "record_cleaned")
    assert [(c["sequence_number"], c["reason"], c["keys_deleted"]) for c in cleaned] == [
        (kseq(1), "deleted", 2),
        (kseq(2), "orphaned", 1),
    ]
    assert emitted_metrics(lines) == counts(received=2, deleted=3)


def test_the_change_records_time_is_read_in_milliseconds():
    # GIVEN a Kinesis record whose change was made at LATER + 7 seconds (epoch milliseconds in the data)
    raw = via_kinesis(remove(7, "doc#1", "v#1", [A]), 7)
    assert change_data(remove(7, "doc#1", "v#1", [A]))["dynamodb"]["ApproximateCreationDateTime"] == (
        (LATER + 7) * 1000
    )

    # WHEN it is parsed  THEN its creation second and its sequence number are the ones a stream record gives
    batch = parse_batch([raw], TABLE)
    (record,) = batch.records
    assert (record.created, record.sequence_number, record.event_name) == (LATER + 7, kseq(7), "REMOVE")
    assert record.old_blobs == [A]
    assert sequence_number_of(raw) == kseq(7)


def test_a_kinesis_event_is_accepted_and_the_refusal_names_both_sources():
    # GIVEN a Kinesis event and a record of neither source
    good = stream_event(via_kinesis(insert(1), 1))
    assert stream_records(good) == good["Records"]
    odd = via_kinesis(insert(1), 1)
    odd["eventSource"] = "aws:sqs"

    # WHEN the odd one is checked  THEN the error says which sources are expected
    with pytest.raises(UnexpectedEventError, match="'aws:dynamodb' or 'aws:kinesis'"):
        stream_records(stream_event(odd))


NOT_BASE64 = "%%% not base64 %%%"
NOT_JSON = base64.b64encode(b"\x00\x01 not json").decode()
NOT_CHANGE = {"hello": "world"}


def _no_table(raw: dict[str, Any]) -> dict[str, Any]:
    data = change_data(raw)
    del data["tableName"]
    return data


def _bad_event_name(raw: dict[str, Any]) -> dict[str, Any]:
    data = change_data(raw)
    data["eventName"] = "TRUNCATE"
    return data


@pytest.mark.parametrize(
    ("make_data", "problem"),
    [
        (lambda raw: NOT_BASE64, "kinesis.data is not base64-encoded JSON"),
        (lambda raw: NOT_JSON, "kinesis.data is not base64-encoded JSON"),
        (lambda raw: NOT_CHANGE, "kinesis.data is not a DynamoDB change record"),
        (lambda raw: [1, 2], "kinesis.data is not a DynamoDB change record"),
        (_no_table, "kinesis.data is not a DynamoDB change record"),
        (_bad_event_name, "eventName 'TRUNCATE' is not one of INSERT, MODIFY, REMOVE"),
    ],
    ids=["not-base64", "not-json", "not-a-change-record", "json-array", "no-table-name", "unknown-event"],
)
def test_a_malformed_kinesis_record_fails_alone(s3, load_consumer, stdout_json, make_data, problem):
    # GIVEN a batch of a Kinesis record whose data is not a DynamoDB change record, and a good REMOVE
    s3.put(A, OTHER)
    handler = load_consumer()
    bad = kinesis_record(1, make_data(remove(1, "doc#1", "v#1", [A])))
    event = stream_event(bad, via_kinesis(remove(2, "doc#2", "v#1", [OTHER]), 2))

    # WHEN the batch is consumed
    response = handler.lambda_handler(event, FakeLambdaContext())

    # THEN only the bad record fails (retried, then kept on the failure bucket), named by its Kinesis sequence
    # number, with one line saying what was wrong; nothing of it is deleted and the good record is cleaned
    assert response == kinesis_failures(1)
    assert s3.keys() == {A}
    lines = stdout_json()
    (rejected,) = messages(lines, "record_rejected")
    assert rejected["sequence_number"] == kseq(1)
    assert problem in rejected["problem"]
    assert emitted_metrics(lines) == counts(received=2, deleted=1, failed=1)


def test_a_malformed_kinesis_record_without_a_sequence_number_fails_the_invocation(s3, load_consumer):
    # GIVEN a Kinesis record with undecodable data and no sequence number
    s3.put(A)
    handler = load_consumer()
    bad = kinesis_record(1, NOT_BASE64)
    del bad["kinesis"]["sequenceNumber"]

    # WHEN it is consumed  THEN the whole invocation fails (the record cannot be named alone) and nothing goes
    with pytest.raises(
        ValueError, match=r"failing the whole batch: Records\[0\]: missing kinesis.sequenceNumber$"
    ):
        handler.lambda_handler(stream_event(bad), FakeLambdaContext())
    assert s3.keys() == {A}


def test_a_change_of_another_table_is_refused(s3, load_consumer, stdout_json):
    # GIVEN a Kinesis stream carrying another table's change beside this table's
    s3.put(A, OTHER)
    handler = load_consumer()
    event = stream_event(
        via_kinesis(remove(1, "doc#1", "v#1", [A]), 1, table="other-table"),
        via_kinesis(remove(2, "doc#2", "v#1", [OTHER]), 2),
    )

    # WHEN the batch is consumed
    response = handler.lambda_handler(event, FakeLambdaContext())

    # THEN the foreign change fails and deletes nothing; the table's own is cleaned
    assert response == kinesis_failures(1)
    assert s3.keys() == {A}
    (foreign,) = messages(stdout_json(), "records_from_foreign_table")
    assert (foreign["expected"], foreign["received"], foreign["records"]) == (TABLE, ["other-table"], 1)


def test_a_remove_delivered_after_a_later_reput_keeps_the_reput_items_blobs(s3, load_consumer, stdout_json):
    # GIVEN the item was deleted (REMOVE at second 1) and put back listing the same blob (INSERT at second 2);
    # Kinesis delivers the re-put first and the REMOVE after it, in one batch and again in a later one (a duplicate)
    s3.put(A, B)
    put_item("doc#1", "v#1", [A])
    handler = load_consumer()
    reput = via_kinesis(insert(2, "doc#1", "v#1", [A]), 2)
    late_remove = via_kinesis(remove(1, "doc#1", "v#1", [A, B]), 1)

    # WHEN both batches are consumed
    first = handler.lambda_handler(stream_event(reput, late_remove), FakeLambdaContext())
    again = handler.lambda_handler(stream_event(late_remove), FakeLambdaContext())

    # THEN the blob the live (re-put) item lists stays both times; the one only the deleted item listed goes
    assert first == again == NO_FAILURES
    assert s3.keys() == {A}
    cleaned = messages(stdout_json(), "record_cleaned")
    assert [c["keys_kept"] for c in cleaned] == [{"listed-by-live-item": 1}, {"listed-by-live-item": 1}]
    assert cleaned[0]["keys_deleted"] == 1  # B (the second time already gone, which counts as done)


def test_a_duplicated_remove_in_one_batch_deletes_once_and_fails_nothing(s3, load_consumer, stdout_json):
    # GIVEN the same change delivered twice in one batch (Kinesis delivers at least once)
    s3.put(A)
    handler = load_consumer()
    event = stream_event(
        via_kinesis(remove(1, "doc#1", "v#1", [A]), 1), via_kinesis(remove(1, "doc#1", "v#1", [A]), 1)
    )

    # WHEN the batch is consumed  THEN the blob is deleted once and neither copy fails
    assert handler.lambda_handler(event, FakeLambdaContext()) == NO_FAILURES
    assert s3.keys() == set()
    assert emitted_metrics(stdout_json()) == counts(received=2, deleted=1)
