"""The local AWS's Lambda event filtering (local/pollers/filtering.py): the documented rule syntax, matched against
records as Lambda's poller matches them, and the patterns CreateEventSourceMapping refuses."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contract.shape import cleanup_filter_patterns
from local.pollers.filtering import (
    INVALID_PATTERN,
    FilterError,
    matches,
    parse_criteria,
    parse_pattern,
    passes,
)

pytestmark = pytest.mark.unit


def match(pattern: dict[str, Any], record: dict[str, Any]) -> bool:
    return matches(parse_pattern(json.dumps(pattern)), record)


KINESIS = {
    "kinesis": {
        "partitionKey": "1",
        "data": {"City": "Seattle", "State": "WA", "Temperature": 46, "Month": "December"},
    }
}


def ddb(
    event_name: str, old: dict[str, Any] | None = None, new: dict[str, Any] | None = None
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "eventName": event_name,
        "eventSource": "aws:dynamodb",
        "dynamodb": {
            "Keys": {"pk": {"S": "a"}, "sk": {"S": "b"}},
            "SequenceNumber": "111",
            "SizeBytes": 26,
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        },
    }
    if old is not None:
        record["dynamodb"]["OldImage"] = old
    if new is not None:
        record["dynamodb"]["NewImage"] = new
    return record


# ------------------------------------------------------------------------------- documented comparisons
@pytest.mark.parametrize(
    ("rule", "value", "expected"),
    [
        ([None], None, True),  # Null: UserID is null
        ([None], "x", False),
        ([""], "", True),  # Empty: LastName is empty
        ([""], "x", False),
        (["Alice"], "Alice", True),  # Equals
        (["Alice"], "alice", False),  # exact, no case folding
        ([{"equals-ignore-case": "alice"}], "ALICE", True),
        ([{"equals-ignore-case": "alice"}], "bob", False),
        (["Credit", "Debit"], "Debit", True),  # Or: one of the values
        (["Credit", "Debit"], "Cash", False),
        ([{"anything-but": ["Raining"]}], "Sunny", True),  # Not
        ([{"anything-but": ["Raining"]}], "Raining", False),
        ([{"anything-but": "Raining"}], "Raining", False),
        ([{"anything-but": [1, 2]}], 3, True),
        ([{"anything-but": [1, 2]}], 2, False),
        ([{"anything-but": {"prefix": "us-"}}], "eu-west-1", True),
        ([{"anything-but": {"prefix": "us-"}}], "us-east-1", False),
        ([{"anything-but": {"suffix": ".png"}}], "a.jpg", True),
        ([{"anything-but": {"suffix": ".png"}}], "a.png", False),
        ([{"anything-but": {"equals-ignore-case": ["A", "b"]}}], "B", False),
        ([{"anything-but": {"equals-ignore-case": ["A", "b"]}}], "c", True),
        ([{"numeric": ["=", 100]}], 100, True),  # Numeric (equals)
        ([{"numeric": ["=", 100]}], 101, False),
        ([{"numeric": [">", 10, "<=", 20]}], 20, True),  # Numeric (range)
        ([{"numeric": [">", 10, "<=", 20]}], 10, False),
        ([{"numeric": [">", 10, "<=", 20]}], 21, False),
        ([{"numeric": [">=", 10, "<", 20]}], 10, True),
        ([{"numeric": ["<", 0]}], -0.5, True),
        ([{"numeric": [">", 0]}], "5", False),  # a string is not a number
        ([{"prefix": "us-"}], "us-east-1", True),  # Begins with
        ([{"prefix": "us-"}], "eu-west-1", False),
        ([{"prefix": {"equals-ignore-case": "US-"}}], "us-east-1", True),
        ([{"suffix": ".png"}], "photo.png", True),  # Ends with
        ([{"suffix": ".png"}], "photo.jpg", False),
        ([True], True, True),
        ([True], "true", False),
        ([300], 300.0, False),  # numbers compare as their text: 300 and 300.0 differ
        ([300], 300, True),
    ],
)
def test_comparison_operators(rule: list[Any], value: Any, expected: bool) -> None:
    # GIVEN a one-field pattern  WHEN a record carries the value  THEN it matches as the documentation says
    assert match({"field": rule}, {"field": value}) is expected


def test_exists_and_does_not_exist() -> None:
    assert match({"ProductName": [{"exists": True}]}, {"ProductName": "x"})
    assert not match({"ProductName": [{"exists": True}]}, {"Other": "x"})
    assert match({"ProductName": [{"exists": False}]}, {"Other": "x"})
    assert not match({"ProductName": [{"exists": False}]}, {"ProductName": "x"})
    # exists works on leaves only: an object is not a leaf
    assert not match({"ProductName": [{"exists": True}]}, {"ProductName": {"inner": 1}})
    # a rule other than exists needs the field: anything-but does not match a missing field
    assert not match({"ProductName": [{"anything-but": "x"}]}, {"Other": "y"})


def test_and_across_fields_and_nested_keys() -> None:
    # the documented Kinesis example: a metadata property and a data property, both must hold
    pattern = {"kinesis": {"partitionKey": ["1"], "data": {"City": ["Seattle"]}}}
    assert match(pattern, KINESIS)
    assert not match({"kinesis": {"partitionKey": ["2"], "data": {"City": ["Seattle"]}}}, KINESIS)
    assert match({"kinesis": {"data": {"Temperature": [{"numeric": [">", 40, "<=", 60]}]}}}, KINESIS)
    # the documented DynamoDB multi-level example
    assert match({"dynamodb": {"Keys": {"pk": {"S": ["a"]}}}}, ddb("INSERT"))
    assert not match({"dynamodb": {"Keys": {"pk": {"S": ["b"]}}}}, ddb("INSERT"))


def test_or_across_fields() -> None:
    pattern = {"$or": [{"Location": ["New York"]}, {"Day": ["Monday"]}]}
    assert match(pattern, {"Location": "New York", "Day": "Sunday"})
    assert match(pattern, {"Location": "Paris", "Day": "Monday"})
    assert not match(pattern, {"Location": "Paris", "Day": "Sunday"})


def test_arrays_in_the_record_match_element_by_element() -> None:
    assert match({"tags": ["b"]}, {"tags": ["a", "b"]})
    assert not match({"tags": ["c"]}, {"tags": ["a", "b"]})
    image = {"blobs": {"L": [{"S": "a/b/1"}, {"S": "a/b/2"}]}}
    assert match(
        {"dynamodb": {"OldImage": {"blobs": {"L": {"S": [{"prefix": "a/b/"}]}}}}}, ddb("MODIFY", image)
    )


def test_filters_are_ored_and_none_passes_everything() -> None:
    patterns = parse_criteria(
        {
            "Filters": [
                {"Pattern": json.dumps({"eventName": ["INSERT"]})},
                {"Pattern": '{"eventName":["REMOVE"]}'},
            ]
        }
    )
    assert passes(patterns, ddb("INSERT")) and passes(patterns, ddb("REMOVE"))
    assert not passes(patterns, ddb("MODIFY"))
    for empty in (None, {}, {"Filters": []}):
        assert parse_criteria(empty) == []
        assert passes(parse_criteria(empty), ddb("MODIFY"))


# ----------------------------------------------------------------------------- the cleanup filter itself
MANIFEST_ENTRY = {"M": {"key": {"S": "a/b/1"}, "etag": {"S": '"e1"'}, "size": {"N": "3"}}}


@pytest.mark.parametrize(
    ("record", "passed"),
    [
        (ddb("INSERT", new={"blobs": {"L": [{"S": "a/b/1"}]}}), False),
        (ddb("REMOVE", old={"pk": {"S": "a"}}), True),
        (ddb("REMOVE"), True),  # KEYS_ONLY-like: still a REMOVE (prefix cleanup needs only the keys)
        (ddb("MODIFY", old={"blobs": {"L": [{"S": "a/b/1"}]}}, new={"blobs": {"L": []}}), True),
        (ddb("MODIFY", old={"blobs": {"SS": ["a/b/1", "a/b/2"]}}, new={}), True),
        (ddb("MODIFY", old={"title": {"S": "x"}}, new={"blobs": {"L": [{"S": "a/b/1"}]}}), False),
        (ddb("MODIFY", old={"blobs": {"L": []}}, new={}), False),
        (ddb("MODIFY", old={"blobs": {"NULL": True}}, new={}), False),
        (
            ddb("MODIFY", old={"blobs": {"L": [{"N": "1"}]}}, new={}),
            False,
        ),  # no string key: nothing to delete
        # manifest entries (docs/data-contract.md): a list of maps, matched element by element, alone or mixed
        (ddb("MODIFY", old={"blobs": {"L": [MANIFEST_ENTRY]}}, new={"blobs": {"L": []}}), True),
        (ddb("MODIFY", old={"blobs": {"L": [{"N": "1"}, MANIFEST_ENTRY]}}, new={}), True),
        (ddb("MODIFY", old={"blobs": {"L": [{"S": "a/b/1"}, MANIFEST_ENTRY]}}, new={}), True),
        (ddb("INSERT", new={"blobs": {"L": [MANIFEST_ENTRY]}}), False),
        (ddb("MODIFY", old={"blobs": {"L": [{"M": {"etag": {"S": '"e1"'}}}]}}, new={}), False),  # no key
        (ddb("MODIFY", old={"blobs": {"L": [{"M": {"key": {"N": "1"}}}]}}, new={}), False),
        (ddb("MODIFY", old={"blobs": {"M": {"key": {"S": "a/b/1"}}}}, new={}), False),  # a map, not a list
    ],
)
def test_cleanup_filter_passes_only_what_can_need_cleanup(record: dict[str, Any], passed: bool) -> None:
    patterns = parse_criteria({"Filters": [{"Pattern": p} for p in cleanup_filter_patterns()]})
    assert passes(patterns, record) is passed


# --------------------------------------------------------------------------------------------- refusals
@pytest.mark.parametrize(
    "pattern",
    [
        "",
        "not json",
        "null",
        "[]",
        '"eventName"',
        "{}",
        '{"eventName": "INSERT"}',  # a rule must be an array
        '{"eventName": []}',
        '{"eventName": [{"prefix": 1}]}',
        '{"eventName": [{"suffix": ["a"]}]}',
        '{"eventName": [{"equals-ignore-case": 1}]}',
        '{"eventName": [{"exists": "yes"}]}',
        '{"eventName": [{"numeric": [">"]}]}',
        '{"eventName": [{"numeric": [">", "1"]}]}',
        '{"eventName": [{"numeric": ["!=", 1]}]}',
        '{"eventName": [{"numeric": [">", 5, ">", 6]}]}',
        '{"eventName": [{"numeric": [">", 6, "<", 5]}]}',
        '{"eventName": [{"anything-but": []}]}',
        '{"eventName": [{"anything-but": ["a", 1]}]}',
        '{"eventName": [{"anything-but": {"wildcard": "a*"}}]}',
        '{"eventName": [{"wildcard": "IN*"}]}',
        '{"ip": [{"cidr": "10.0.0.0/24"}]}',
        '{"eventName": [{"prefix": "a", "suffix": "b"}]}',
        '{"eventName": [["INSERT"]]}',
        '{"$or": [{"a": ["1"]}]}',
        '{"$or": {"a": ["1"]}}',
        '{"a": {}}',
    ],
)
def test_invalid_patterns_are_refused_with_lambdas_message(pattern: str) -> None:
    with pytest.raises(FilterError) as refused:
        parse_criteria({"Filters": [{"Pattern": pattern}]})
    assert str(refused.value) == INVALID_PATTERN


def test_more_filters_than_the_quota_are_refused() -> None:
    with pytest.raises(FilterError, match="exceeds the limit of 5"):
        parse_criteria({"Filters": [{"Pattern": '{"a": ["1"]}'}] * 6})
    with pytest.raises(FilterError):
        parse_criteria({"Filters": [{"Pattern": '{"a": ["' + "x" * 4100 + '"]}'}]})
    with pytest.raises(FilterError):
        parse_criteria({"Filters": [{}]})
