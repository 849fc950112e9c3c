"""Pure domain rules of the stream consumer (no AWS, no handler)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from stream_consumer.domain import (
    MalformedRecordError,
    UnexpectedEventError,
    chunked,
    key_refusal,
    parse_batch,
    parse_record,
    plan_cleanup,
    retained_keys,
    stream_records,
    table_name_from_arn,
)

from tests.unit.events import (
    STREAM_ARN,
    TABLE,
    av,
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

PREFIX = "blobs/doc#1/v#1/"


def test_images_keep_their_dynamodb_types():
    # GIVEN an old image with numbers, sets, binary, nested maps and NULL
    old = image(
        "doc#1",
        "v#1",
        ["blobs/doc#1/v#1/a"],
        price=Decimal("12.50"),
        tags={"x", "y"},
        raw=b"\x00\x01",
        nums={Decimal("1"), Decimal("2.5")},
        nested={"n": Decimal("1E+3"), "l": [Decimal("1"), "s", {"b": True}]},
        nothing=None,
    )

    # WHEN the record is parsed
    parsed = parse_record(record("REMOVE", 1, "doc#1", "v#1", old=old))

    # THEN every value survives exactly
    assert parsed.old_image == {
        "pk": "doc#1",
        "sk": "v#1",
        "blobs": ["blobs/doc#1/v#1/a"],
        "price": Decimal("12.50"),
        "tags": {"x", "y"},
        "raw": b"\x00\x01",
        "nums": {Decimal("1"), Decimal("2.5")},
        "nested": {"n": Decimal("1E+3"), "l": [Decimal("1"), "s", {"b": True}]},
        "nothing": None,
    }
    assert (parsed.sequence_number, parsed.event_name, parsed.new_image) == (seq(1), "REMOVE", None)


def test_ttl_identity_marks_only_service_removes():
    # GIVEN a TTL REMOVE and a user REMOVE  WHEN parsed  THEN only the first is a TTL expiry
    assert parse_record(remove(1, "a", "1", [], ttl=True)).ttl_expiry is True
    assert parse_record(remove(2, "a", "1", [])).ttl_expiry is False
    user = remove(3, "a", "1", [])
    user["userIdentity"] = {"type": "User", "principalId": "dynamodb.amazonaws.com"}
    assert parse_record(user).ttl_expiry is False


def _without(raw: dict, *path: str) -> dict:
    target = raw
    for part in path[:-1]:
        target = target[part]
    del target[path[-1]]
    return raw


def _blobs_as(value: dict) -> dict:
    raw = remove(1, "doc#1", "v#1", [])
    raw["dynamodb"]["OldImage"]["blobs"] = value
    return raw


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("not a record", "record is not an object"),
        (record("UPSERT", 1), "eventName 'UPSERT' is not one of INSERT, MODIFY, REMOVE"),
        (_without(remove(1, "a", "1", []), "dynamodb"), "missing 'dynamodb' object"),
        (_without(remove(1, "a", "1", []), "dynamodb", "SequenceNumber"), "missing dynamodb.SequenceNumber"),
        (_without(remove(1, "a", "1", []), "dynamodb", "Keys"), "missing dynamodb.Keys"),
        (
            record("REMOVE", 1, keys={"pk": av("a")}),
            "key attribute 'sk' must be a non-empty string, got missing",
        ),
        (
            record("REMOVE", 1, keys={"pk": av(b"a"), "sk": av("1")}),
            "key attribute 'pk' must be a non-empty string, got a bytes",
        ),
        (
            record("REMOVE", 1, keys={"pk": {"X": "a"}, "sk": av("1")}),
            "attribute values do not deserialize: TypeError: Dynamodb type X is not supported",
        ),
        (_blobs_as(av(5)), "OldImage.blobs must be a list or a string set, got Decimal"),
        (_blobs_as(av({"k": "v"})), "OldImage.blobs must be a list or a string set, got dict"),
        (_blobs_as({"NS": ["1"]}), "OldImage.blobs must be a list or a string set, got number set"),
        (_blobs_as(av("blobs/doc#1/v#1/a")), "OldImage.blobs must be a list or a string set, got str"),
    ],
)
def test_malformed_records_are_rejected_with_the_reason(raw, problem):
    # GIVEN a malformed record  WHEN parsed  THEN it is rejected naming the problem
    with pytest.raises(MalformedRecordError) as caught:
        parse_record(raw)
    assert caught.value.problem == problem


def test_null_blobs_attribute_means_no_blobs():
    # GIVEN blobs = NULL  WHEN planned  THEN nothing to delete and no failure
    plan = plan_cleanup(parse_record(_blobs_as({"NULL": True})), "blobs/", False)
    assert (plan.keys, plan.refused, plan.reason) == ((), (), "deleted")


@pytest.mark.parametrize(
    ("key", "reason"),
    [
        (PREFIX + "a.pdf", None),
        (PREFIX + "deep/er/a.pdf", None),
        ("blobs/doc#1/v#10/a.pdf", "outside-record-prefix"),
        ("blobs/doc#1/v#1", "outside-record-prefix"),
        ("blobs/doc#2/v#1/a.pdf", "outside-record-prefix"),
        ("../other/x", "dot-dot-segment"),
        (PREFIX + "../../doc#2/v#1/a", "dot-dot-segment"),
        ("/abs", "absolute"),
        (PREFIX + "a\\b", "backslash"),
        (PREFIX + "a\nb", "control-character"),
        (PREFIX + "a\x7f", "control-character"),
        ("", "empty"),
        (Decimal(1), "not-a-string"),
        (None, "not-a-string"),
        ({"k": "v"}, "not-a-string"),
    ],
)
def test_key_refusal(key, reason):
    # GIVEN a listed key  WHEN checked against the record's prefix  THEN refused for the expected reason
    assert key_refusal(key, PREFIX) == reason


def test_plan_for_each_event_name():
    # GIVEN one record of each kind  WHEN planned  THEN the reason and the keys follow the rules
    insert_plan = plan_cleanup(parse_record(insert(1, "doc#1", "v#1", [PREFIX + "a"])), "blobs/", True)
    assert (insert_plan.reason, insert_plan.keys, insert_plan.list_prefix) == (None, (), None)

    orphan = plan_cleanup(
        parse_record(modify(2, "doc#1", "v#1", [PREFIX + "a", PREFIX + "b"], [PREFIX + "a"])), "blobs/", True
    )
    assert (orphan.reason, orphan.keys, orphan.list_prefix) == ("orphaned", (PREFIX + "b",), None)

    unchanged = plan_cleanup(
        parse_record(modify(3, "doc#1", "v#1", [PREFIX + "a"], {PREFIX + "a"})), "blobs/", False
    )
    assert unchanged.reason is None

    removal = plan_cleanup(
        parse_record(remove(4, "doc#1", "v#1", {PREFIX + "b", PREFIX + "a"}, as_set=True)), "blobs/", True
    )
    assert (removal.reason, removal.keys, removal.list_prefix) == (
        "deleted",
        (PREFIX + "a", PREFIX + "b"),
        PREFIX,
    )

    keys = plan_cleanup(parse_record(keys_only("MODIFY", 5, "doc#1", "v#1")), "blobs/", True)
    assert (keys.missing_images, keys.keys, keys.list_prefix) == (True, (), None)


def test_empty_root_gives_pk_sk_prefix():
    plan = plan_cleanup(
        parse_record(remove(1, "doc#1", "v#1", ["doc#1/v#1/a", "blobs/doc#1/v#1/a"])), "", False
    )
    assert plan.keys == ("doc#1/v#1/a",)
    assert [(r.key, r.reason) for r in plan.refused] == [("blobs/doc#1/v#1/a", "outside-record-prefix")]


def test_retained_keys_follow_the_items_last_state_in_the_batch():
    # GIVEN an item modified twice then removed, and another removed then re-inserted
    records = [
        parse_record(raw, position)
        for position, raw in enumerate(
            [
                modify(1, "a", "1", ["x", "y"], ["x"]),
                modify(2, "a", "1", ["x"], ["x", "y"]),
                remove(3, "b", "1", ["p", "q"]),
                insert(4, "b", "1", ["q"]),
                modify(5, "c", "1", ["m"], ["n"]),
                remove(6, "c", "1", ["n"]),
            ]
        )
    ]

    # WHEN retention is computed  THEN only keys of surviving final states are retained
    assert retained_keys(records) == {0: frozenset({"x", "y"}), 2: frozenset({"q"})}


def test_stream_records_accepts_only_dynamodb_stream_events():
    expected = "expected a DynamoDB Streams event with Records[].eventSource == 'aws:dynamodb'"
    good = stream_event(insert(1))
    assert stream_records(good) == good["Records"]
    for event in ({}, {"Records": []}, {"Records": "x"}, sqs_event(), None, "text", {"Records": [None]}):
        with pytest.raises(UnexpectedEventError, match=expected.replace("[", r"\[").replace("]", r"\]")):
            stream_records(event)
    with pytest.raises(UnexpectedEventError, match=r"Records\[0\]\.eventSource is 'aws:sqs'"):
        stream_records(sqs_event())


def test_summary_counts_names_and_sequence_numbers():
    # GIVEN a mixed batch whose first record is broken
    broken = remove(0, "a", "1", [])
    del broken["dynamodb"]
    broken["eventName"] = None
    records = [
        broken,
        insert(1),
        modify(2, "a", "1", [], []),
        remove(3, "a", "1", []),
        remove(4, "a", "1", []),
    ]

    # WHEN the batch is parsed
    summary = parse_batch(records).summary.as_log_fields()

    # THEN it counts every record and names the first/last known sequence numbers and the table
    assert summary == {
        "record_count": 5,
        "event_names": {"INSERT": 1, "MODIFY": 1, "REMOVE": 2, "UNKNOWN": 1},
        "first_sequence_number": seq(1),
        "last_sequence_number": seq(4),
        "table_name": TABLE,
        "old_image_blobs": {"with_etag": 0, "without_etag": 0},
    }


def test_one_walk_sorts_the_batch_into_parsed_malformed_and_foreign_records():
    # GIVEN a good record, a poison one, one without a sequence number, and one from another table's stream
    foreign = insert(4, "d", "1")
    foreign["eventSourceARN"] = STREAM_ARN.replace(TABLE, "other-table")
    unnamed = insert(3, "c", "1")
    del unnamed["dynamodb"]["SequenceNumber"]
    records = [insert(1, "a", "1"), record("REMOVE", 2, keys={}), unnamed, foreign]

    # WHEN parsed for this table
    batch = parse_batch(records, expected_table=TABLE)

    # THEN each record lands where the cleanup needs it, in batch order
    assert [r.sequence_number for r in batch.records] == [seq(1), seq(4)]
    assert [(m.position, m.sequence_number, m.problem) for m in batch.malformed] == [
        (1, seq(2), "missing dynamodb.Keys"),
        (2, None, "missing dynamodb.SequenceNumber"),
    ]
    assert [(f.position, f.sequence_number, f.table_name) for f in batch.foreign] == [
        (3, seq(4), "other-table")
    ]
    assert batch.summary.record_count == 4
    # AND without an expected table nothing is foreign
    assert parse_batch(records).foreign == ()


@pytest.mark.parametrize(
    ("arn", "name"),
    [
        (STREAM_ARN, TABLE),
        ("arn:aws-us-gov:dynamodb:us-gov-west-1:1:table/t.x-1_y/stream/2024-01-01T00:00:00.000", "t.x-1_y"),
        ("arn:aws:dynamodb:eu-west-1:1:table/t", None),
        ("arn:aws:sqs:eu-west-1:1:table/t/stream/x", None),
        (None, None),
    ],
)
def test_table_name_from_stream_arn(arn, name):
    assert table_name_from_arn(arn) == name


def test_chunked():
    assert [list(c) for c in chunked(list(range(5)), 2)] == [[0, 1], [2, 3], [4]]
    assert list(chunked([], 1000)) == []
