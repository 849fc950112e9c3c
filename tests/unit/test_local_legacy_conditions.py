"""The legacy conditional parameters on the local AWS as DynamoDB reads them (local/services/dynamodb/api/legacy.py):
KeyConditions, QueryFilter, ScanFilter, Expected with ConditionalOperator, and AttributesToGet, each checked in
AWS's words and answered with the legacy operator's meaning.

boto3 against moto in-process with the local AWS's adaptations; botocore's own parameter validation is off, so
what is refused is refused by the local AWS, as AWS would."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from local import state
from local.services.dynamodb.api import legacy

pytestmark = pytest.mark.unit

CONFIG = Config(
    parameter_validation=False, retries={"total_max_attempts": 1}, account_id_endpoint_mode="disabled"
)


@pytest.fixture
def ddb(local_moto: None) -> Iterator[Any]:
    """GIVEN a table keyed by a string ``pk`` and a number ``sk``, holding one partition of five items."""
    client = boto3.client("dynamodb", region_name=state.REGION, config=CONFIG)
    client.create_table(
        TableName="tbl",
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "N"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    for i in range(5):
        item = {"pk": S("p"), "sk": {"N": str(i)}, "word": S(f"w{i}")}
        if i % 2:
            item["odd"] = {"BOOL": True}
        client.put_item(TableName="tbl", Item=item)
    yield client


def S(text: str) -> dict[str, str]:  # noqa: N802 - DynamoDB's own letter for a string value
    return {"S": text}


def N(number: int) -> dict[str, str]:  # noqa: N802
    return {"N": str(number)}


def cond(op: str, *values: dict[str, Any]) -> dict[str, Any]:
    return {"ComparisonOperator": op, "AttributeValueList": list(values)}


PARTITION = {"pk": cond("EQ", S("p"))}


def refused(call: Any, **request: Any) -> str:
    with pytest.raises(ClientError) as caught:
        call(TableName="tbl", **request)
    error = caught.value.response["Error"]
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400, error
    assert error["Code"] == "ValidationException", error
    return str(error["Message"])


def sks(reply: dict[str, Any]) -> list[int]:
    return [int(item["sk"]["N"]) for item in reply["Items"]]


def test_a_legacy_condition_is_checked_in_aws_words_before_anything_is_read(ddb: Any) -> None:
    # WHEN a filter's values do not fit its operator  THEN DynamoDB's message, never an HTTP 500
    cases = [
        ({"sk": cond("EQ", N(1))}, legacy.COUNT.format(op="BETWEEN"), {"word": cond("BETWEEN", S("a"))}),
        ({}, legacy.COUNT.format(op="IN"), {"word": cond("IN")}),
        ({}, legacy.SAME_TYPE, {"word": cond("IN", S("a"), N(3))}),
        ({}, legacy.WRONG_TYPE.format(op="BEGINS_WITH", type="N"), {"word": cond("BEGINS_WITH", N(3))}),
        ({}, legacy.WRONG_TYPE.format(op="LT", type="L"), {"word": cond("LT", {"L": []})}),
        ({}, legacy.REVERSED, {"word": cond("BETWEEN", N(9), N(2))}),
        ({}, legacy.FILTER_ON_KEY.format(name="sk"), {"sk": cond("EQ", N(1))}),
    ]
    for keys, message, query_filter in cases:
        assert refused(ddb.query, KeyConditions={**PARTITION, **keys}, QueryFilter=query_filter) == message
    assert refused(ddb.query, QueryFilter={"word": cond("EQ", S("w1"))}) == legacy.NO_KEY_CONDITION
    assert refused(ddb.scan, ScanFilter={"word": cond("NULL", S("x"))}) == legacy.COUNT.format(op="NULL")


def test_key_conditions_are_checked_against_the_key_schema(ddb: Any) -> None:
    cases = [
        ({"sk": cond("EQ", N(1))}, legacy.MISSED_KEY.format(name="pk")),
        ({**PARTITION, "word": cond("EQ", S("w"))}, legacy.MISSED_KEY.format(name="sk")),
        ({"pk": cond("BEGINS_WITH", S("p"))}, legacy.NOT_SUPPORTED),
        ({**PARTITION, "sk": cond("NE", N(1))}, legacy.NOT_INDEXABLE),
        ({"pk": cond("EQ", N(1))}, legacy.KEY_TYPE),
        ({**PARTITION, "sk": cond("EQ", N(1)), "word": cond("EQ", S("w"))}, legacy.KEY_CONDITION_COUNT),
    ]
    for key_conditions, message in cases:
        assert refused(ddb.query, KeyConditions=key_conditions) == message


def test_filters_answer_with_the_legacy_operators_meaning(ddb: Any) -> None:
    def query(**request: Any) -> list[int]:
        return sks(ddb.query(TableName="tbl", KeyConditions=PARTITION, **request))

    # a range of the sort key, a filter on a missing attribute, NE and NOT_CONTAINS on it
    assert sks(
        ddb.query(TableName="tbl", KeyConditions={**PARTITION, "sk": cond("BETWEEN", N(1), N(3))})
    ) == [1, 2, 3]
    assert query(QueryFilter={"odd": cond("NULL")}) == [0, 2, 4]
    assert query(QueryFilter={"odd": cond("NE", {"BOOL": True})}) == [0, 2, 4]  # missing: not equal
    # NOT_CONTAINS holds where the attribute is present without it, and not where it is missing
    assert query(QueryFilter={"odd": cond("NOT_CONTAINS", S("x"))}) == [1, 3]
    assert query(QueryFilter={"word": cond("IN", S("w1"), S("w4"))}) == [1, 4]
    either = {"word": cond("EQ", S("w0")), "odd": cond("NOT_NULL")}
    assert query(QueryFilter=either, ConditionalOperator="OR") == [0, 1, 3]
    assert query(QueryFilter=either) == []
    # AttributesToGet: exactly the attributes named
    reply = ddb.query(TableName="tbl", KeyConditions=PARTITION, AttributesToGet=["word"])
    assert reply["Items"][0] == {"word": S("w0")}
    scanned = ddb.scan(TableName="tbl", ScanFilter={"word": cond("BEGINS_WITH", S("w3"))})
    assert sks(scanned) == [3]


def test_conditional_operator_needs_two_conditions(ddb: Any) -> None:
    one = {"word": cond("EQ", S("w1"))}
    assert refused(ddb.scan, ConditionalOperator="OR") == legacy.WITHOUT_CONDITIONS
    assert refused(ddb.scan, ScanFilter=one, ConditionalOperator="AND") == legacy.ONE_CONDITION
    key = {"pk": S("p"), "sk": N(1)}
    update = {"z": {"Action": "PUT", "Value": N(1)}}
    assert refused(
        ddb.update_item, Key=key, AttributeUpdates=update, Expected={}, ConditionalOperator="OR"
    ) == (legacy.WITHOUT_CONDITIONS)


def test_expected_is_checked_and_evaluated_as_dynamodb_does(ddb: Any) -> None:
    key = {"pk": S("p"), "sk": N(1)}
    update = {"z": {"Action": "PUT", "Value": N(1)}}

    def write(expected: dict[str, Any], **extra: Any) -> None:
        ddb.update_item(TableName="tbl", Key=key, AttributeUpdates=update, Expected=expected, **extra)

    # a malformed entry: one line naming the attribute
    for entry, message in [
        ({"Exists": True}, legacy.VALUE_REQUIRED.format(exists="true", name="word")),
        ({"Exists": False, "Value": S("w1")}, legacy.VALUE_WITH_ABSENCE.format(name="word")),
        ({"Exists": False, **cond("EQ", S("w1"))}, legacy.EXISTS_AND_OPERATOR.format(name="word")),
        ({"Value": S("w1"), **cond("EQ", S("w1"))}, legacy.VALUE_AND_LIST.format(name="word")),
        ({"AttributeValueList": [S("w1")]}, legacy.LIST_WITHOUT_OPERATOR.format(name="word")),
        ({"ComparisonOperator": "EQ"}, legacy.OPERATOR_WITHOUT_VALUE.format(op="EQ", name="word")),
    ]:
        assert refused(ddb.update_item, Key=key, AttributeUpdates=update, Expected={"word": entry}) == message
    # a false condition fails the write; NOT_CONTAINS on a missing attribute is false, NE on it true
    for expected in ({"word": {"Value": S("w2")}}, {"gone": cond("NOT_CONTAINS", S("x"))}):
        with pytest.raises(ClientError, match="ConditionalCheckFailedException"):
            write(expected)
    write({"gone": cond("NE", S("x")), "word": cond("BEGINS_WITH", S("w"))})
    write(
        {"word": {"Value": S("nope")}, "odd": {"Exists": True, "Value": {"BOOL": True}}},
        ConditionalOperator="OR",
    )
    item = ddb.get_item(TableName="tbl", Key=key)["Item"]
    assert item["z"] == N(1)
    ddb.delete_item(TableName="tbl", Key=key, Expected={"word": {"Value": S("w1")}})
    assert "Item" not in ddb.get_item(TableName="tbl", Key=key)


def test_a_query_filter_expression_on_a_key_and_get_items_attributes_to_get(ddb: Any) -> None:
    on_key = {"FilterExpression": "#k = :v", "ExpressionAttributeNames": {"#k": "sk"},
              "ExpressionAttributeValues": {":v": N(1)}}  # fmt: skip
    message = refused(ddb.query, KeyConditionExpression="pk = :p", **{**on_key, "ExpressionAttributeValues": {
        ":v": N(1), ":p": S("p")}})  # fmt: skip
    assert message == legacy.EXPRESSION_ON_KEY.format(name="sk")
    key = {"pk": S("p"), "sk": N(1)}
    assert ddb.get_item(TableName="tbl", Key=key, AttributesToGet=["odd"])["Item"] == {"odd": {"BOOL": True}}
    assert refused(ddb.get_item, Key=key, AttributesToGet=["odd", "odd"]) == legacy.DUPLICATE.format(
        name="odd"
    )


def test_a_key_condition_expression_is_held_to_a_key_conditions_form(ddb: Any) -> None:
    from local.services.dynamodb.api import keyconditions as kc

    p, n = {":p": S("p")}, {":p": S("p"), ":n": N(2)}
    cases = [
        ("", {}, kc.INVALID.format(detail="The expression can not be empty;")),
        ("pk = :p OR sk = :n", n, kc.OPERATOR.format(operator="OR")),
        ("pk = :p AND sk <> :n", n, kc.OPERATOR.format(operator="<>")),
        ("pk = :p AND attribute_exists(sk)", p, kc.OPERATOR.format(operator="attribute_exists")),
        ("pk = :p AND pk = :p", p, kc.ONE_PER_KEY),
        ("pk = :p AND sk.x < :n", n, kc.NESTED_ATTRIBUTE),
        ("pk = :p AND size(sk) < :n", n, kc.NESTED_OPERATION),
        ("pk = :p AND :n < :n", n, kc.NO_ATTRIBUTE),
        ("pk = :p AND sk < word", p, kc.TWO_ATTRIBUTES),
        ("pk = :p AND word < :n", n, legacy.MISSED_KEY.format(name="sk")),
        ("pk = :n", {":n": N(2)}, legacy.KEY_TYPE),
        ("pk < :p", p, legacy.NOT_SUPPORTED),
    ]
    for text, values, message in cases:
        extra = {"ExpressionAttributeValues": values} if values else {}
        assert refused(ddb.query, KeyConditionExpression=text, **extra) == message, text
    # either way round, and with names of its own
    reply = ddb.query(TableName="tbl", KeyConditionExpression=":p = #k AND :n < sk",
                      ExpressionAttributeNames={"#k": "pk"}, ExpressionAttributeValues=n)  # fmt: skip
    assert sks(reply) == [3, 4]


def test_a_starting_key_names_the_key_read_in_its_types_and_lies_where_the_read_does(ddb: Any) -> None:
    from local.services.dynamodb.api import startkeys

    def query(start: dict[str, Any]) -> str:
        return refused(ddb.query, KeyConditions=PARTITION, ExclusiveStartKey=start)

    assert query({"pk": S("p")}) == startkeys.INVALID  # the sort key is missing
    assert query({"pk": S("p"), "sk": N(1), "word": S("x")}) == startkeys.INVALID
    assert query({"pk": S("p"), "sk": S("1")}) == startkeys.NOT_SCHEMA
    assert query({"pk": S("other"), "sk": N(1)}) == startkeys.OUTSIDE
    assert refused(ddb.scan, ExclusiveStartKey={"pk": S("p")}) == startkeys.NOT_SCHEMA
    # a parallel scan starts inside its own segment
    start = {"pk": S("p"), "sk": N(1)}
    mine = startkeys.segment_of(S("p"), 4)
    assert ddb.scan(TableName="tbl", Segment=mine, TotalSegments=4, ExclusiveStartKey=start)["Count"] >= 0
    other = (mine + 1) % 4
    assert refused(ddb.scan, Segment=other, TotalSegments=4, ExclusiveStartKey=start) == (
        startkeys.OTHER_SEGMENT.format(segment=other, total=4)
    )
    # and a page that does start there goes on after it
    page = ddb.query(TableName="tbl", KeyConditions=PARTITION, ExclusiveStartKey=start)
    assert sks(page) == [2, 3, 4]


def test_attribute_updates_and_arithmetic_as_dynamodb_applies_them(ddb: Any) -> None:
    from local.services.dynamodb.api import conditions, numbers

    key = {"pk": S("p"), "sk": N(0)}

    def update(**updates: Any) -> dict[str, Any]:
        ddb.update_item(TableName="tbl", Key=key, AttributeUpdates=updates)
        return dict(ddb.get_item(TableName="tbl", Key=key)["Item"])

    item = update(n={"Action": "ADD", "Value": N(5)}, s={"Action": "ADD", "Value": {"SS": ["a", "b"]}})
    assert (item["n"], sorted(item["s"]["SS"])) == (N(5), ["a", "b"])
    item = update(s={"Action": "DELETE", "Value": {"SS": ["a"]}}, n={"Action": "ADD", "Value": {"N": "-7.5"}})
    assert (item["n"], item["s"]) == ({"N": "-2.5"}, {"SS": ["b"]})
    assert "s" not in update(s={"Action": "DELETE", "Value": {"SS": ["b"]}})  # no member left: no attribute
    # refused before anything is written: a value-less PUT, a DELETE of a string, an ADD of a string
    for updates, message in [
        ({"word": {"Action": "PUT"}}, conditions.ONLY_DELETE_WITHOUT_VALUE),
        ({"word": {"Action": "DELETE", "Value": S("x")}}, conditions.DELETE_VALUE_TYPE.format(type="S")),
        ({"word": {"Action": "ADD", "Value": S("x")}}, conditions.ADD_VALUE_TYPE.format(type="S")),
        ({"word": {"Action": "ADD", "Value": N(1)}}, conditions.MISMATCH),  # word is a string
    ]:
        assert refused(ddb.update_item, Key=key, AttributeUpdates=updates) == message
    # arithmetic is exact, and a result DynamoDB cannot store is refused
    values = {":big": {"N": "9E+125"}, ":one": N(1), ":tenth": {"N": "0.1"}}
    for text, message in [
        ("SET x = :big + :big", numbers.OVERFLOW),
        ("SET x = :big - :one", numbers.OVERFLOW),
    ]:
        expression = {
            "UpdateExpression": text,
            "ExpressionAttributeValues": {k: values[k] for k in values if k in text},
        }
        assert refused(ddb.update_item, Key=key, **expression) == message
    ddb.update_item(TableName="tbl", Key=key, UpdateExpression="SET x = :tenth + :tenth",
                    ExpressionAttributeValues={":tenth": {"N": "0.1"}})  # fmt: skip
    assert ddb.get_item(TableName="tbl", Key=key)["Item"]["x"] == {"N": "0.2"}


def test_a_table_without_attribute_definitions_is_refused_naming_them(ddb: Any) -> None:
    with pytest.raises(ClientError) as caught:
        ddb.create_table(TableName="undefined", KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
                         BillingMode="PAY_PER_REQUEST")  # fmt: skip
    error = caught.value.response["Error"]
    assert error["Message"] == (
        "1 validation error detected: Value null at 'attributeDefinitions' failed to satisfy constraint: Member must "
        "not be null"
    )


def test_list_append_of_a_missing_attribute_is_refused_on_either_side(ddb: Any) -> None:
    from local.services.dynamodb.api import updates

    key = {"pk": S("p"), "sk": N(0)}
    for args in ("gone, :l", ":l, gone"):
        message = refused(ddb.update_item, Key=key, UpdateExpression=f"SET a = list_append({args})",
                          ExpressionAttributeValues={":l": {"L": [N(1)]}})  # fmt: skip
        assert message == updates.MISSING, args


def test_update_actions_on_overlapping_or_conflicting_paths_are_refused(ddb: Any) -> None:
    key = {"pk": S("p"), "sk": N(0)}
    values = {":a": N(1), ":b": S("t")}

    def update(expression: str, **names: str) -> str | None:
        extra = {"ExpressionAttributeNames": names} if names else {}
        try:
            ddb.update_item(TableName="tbl", Key=key, UpdateExpression=expression, ExpressionAttributeValues=values,
                            **extra)  # fmt: skip
        except ddb.exceptions.ClientError as exc:
            return str(exc.response["Error"]["Message"])
        return None

    overlap = (
        "Invalid UpdateExpression: Two document paths overlap with each other; must remove or rewrite one of "
    )
    # GIVEN two actions of one update on paths where one is the other or lies inside it (indexes included)
    assert update("SET a = :a, a.b = :b") == overlap + "these paths; path one: [a], path two: [a, b]"
    assert (
        update("SET a[1][1] = :a, a[1] = :b")
        == overlap + "these paths; path one: [a, [1], [1]], path two: [a, [1]]"
    )
    assert (
        update("SET a.b = :a REMOVE a.b ADD c :b")
        == overlap + "these paths; path one: [a, b], path two: [a, b]"
    )
    # AND two that step into one place as a map and as a list
    assert update("SET a.b = :a, a[1] = :b") == (
        "Invalid UpdateExpression: Two document paths conflict with each other; must remove or rewrite one of these "
        "paths; path one: [a, b], path two: [a, [1]]"
    )
    # THEN neighbours are not refused for it, and a #placeholder alone clashes only with the same path
    assert "overlap" not in (update("SET a.b = :a, a.c = :b") or "")
    assert "overlap" not in (update("SET #n = :a, a.b = :b", **{"#n": "a"}) or "")
    assert "overlap" in (update("SET #n = :a, a = :b", **{"#n": "a"}) or "")


def test_a_key_attribute_may_be_read_by_an_update_never_written_and_one_operator_per_value(ddb: Any) -> None:
    key = {"pk": S("p"), "sk": N(0)}
    # GIVEN an update reading the key attributes into others
    ddb.update_item(TableName="tbl", Key=key, UpdateExpression="SET #n = #p, m = sk + :one",
                    ExpressionAttributeNames={"#n": "n", "#p": "pk"}, ExpressionAttributeValues={":one": N(1)})  # fmt: skip
    # THEN it is made, while writing a key attribute is refused in DynamoDB's words
    item = ddb.get_item(TableName="tbl", Key=key)["Item"]
    assert (item["n"], item["m"]) == (S("p"), N(1))
    message = refused(ddb.update_item, Key=key, UpdateExpression="SET #p = :one",
                      ExpressionAttributeNames={"#p": "pk"}, ExpressionAttributeValues={":one": N(1)})  # fmt: skip
    assert (
        message
        == "One or more parameter values were invalid: Cannot update attribute pk. This attribute is part of the key"
    )
    # AND a value with a second + or - is a syntax error, near the tokens around it
    message = refused(ddb.update_item, Key=key, UpdateExpression="SET m = :one + :one - m",
                      ExpressionAttributeValues={":one": N(1)})  # fmt: skip
    assert message == 'Invalid UpdateExpression: Syntax error; token: "-", near: ":one - m"'


def test_an_updates_return_values_are_the_paths_it_names(ddb: Any) -> None:
    key = {"pk": S("rv"), "sk": N(0)}
    ddb.put_item(
        TableName="tbl", Item={**key, "a": {"M": {"b": S("dog"), "c": {"L": [N(1), N(2)]}}}, "d": S("cat")}
    )

    def update(mode: str, expression: str, **values: Any) -> Any:
        extra = {"ExpressionAttributeValues": values} if values else {}
        answer = ddb.update_item(
            TableName="tbl", Key=key, ReturnValues=mode, UpdateExpression=expression, **extra
        )
        return answer.get("Attributes")

    # GIVEN nested updates: UPDATED_OLD and UPDATED_NEW hold the named path only, in its hierarchy
    assert update("UPDATED_OLD", "SET a.b = :v", **{":v": S("hi")}) == {"a": {"M": {"b": S("dog")}}}
    assert update("UPDATED_NEW", "SET a.c[1] = :v", **{":v": N(7)}) == {"a": {"M": {"c": {"L": [N(7)]}}}}
    # AND an attribute set to the value it had still counts as updated
    assert update("UPDATED_OLD", "SET d = :v", **{":v": S("cat")}) == {"d": S("cat")}
    # THEN a REMOVE's UPDATED_NEW has nothing to return, and ALL_NEW of an update that made no item neither
    assert update("UPDATED_NEW", "REMOVE d") is None
    # AND the legacy AttributeUpdates name top-level attributes (none: nothing returned)
    legacy = {"d": {"Action": "PUT", "Value": S("owl")}}
    assert ddb.update_item(TableName="tbl", Key=key, ReturnValues="UPDATED_NEW", AttributeUpdates=legacy)[
        "Attributes"] == {"d": S("owl")}  # fmt: skip
    assert "Attributes" not in ddb.update_item(TableName="tbl", Key=key, ReturnValues="UPDATED_OLD",
                                               AttributeUpdates={})  # fmt: skip
    assert ddb.update_item(TableName="tbl", Key={"pk": S("none"), "sk": N(1)}, ReturnValues="ALL_NEW",
                           UpdateExpression="REMOVE x").get("Attributes") is None  # fmt: skip


def test_an_action_stepping_into_a_value_of_another_kind_is_refused(ddb: Any) -> None:
    key = {"pk": S("kinds"), "sk": N(0)}
    ddb.put_item(
        TableName="tbl", Item={**key, "a": S("hello"), "b": {"L": [S("hi")]}, "m": {"M": {"k": N(1)}}}
    )
    invalid = "The document path provided in the update expression is invalid for update"
    # GIVEN a string, a list and a map: a name into the string or the list, an index into the map
    for expression in ("SET a.c = :v", "SET b.c = :v", "REMOVE a.c", "REMOVE b.c", "SET m[0] = :v"):
        values = {"ExpressionAttributeValues": {":v": N(7)}} if ":v" in expression else {}
        # THEN each is refused and nothing changes
        assert refused(ddb.update_item, Key=key, UpdateExpression=expression, **values) == invalid, expression
    # AND the steps of the right kind go through
    ddb.update_item(TableName="tbl", Key=key, UpdateExpression="SET m.z = :v, b[5] = :v",
                    ExpressionAttributeValues={":v": N(7)})  # fmt: skip
    item = ddb.get_item(TableName="tbl", Key=key)["Item"]
    assert (item["a"], item["m"]["M"]["z"], item["b"]["L"][-1]) == (S("hello"), N(7), N(7))


def test_list_elements_are_set_and_removed_by_their_numbers_in_the_list_as_it_was(ddb: Any) -> None:
    key = {"pk": S("lists"), "sk": N(0)}

    def after(expression: str, **values: Any) -> list[Any]:
        ddb.put_item(TableName="tbl", Item={**key, "a": {"L": [N(n) for n in (2, 3, 4, 5, 6, 7)]}})
        extra = {"ExpressionAttributeValues": values} if values else {}
        ddb.update_item(TableName="tbl", Key=key, UpdateExpression=expression, **extra)
        return [v.get("N") or v.get("S") for v in ddb.get_item(TableName="tbl", Key=key)["Item"]["a"]["L"]]

    # GIVEN SETs past the list's end: appended in the order of their element numbers
    appended = after("SET a[84] = :x, a[37] = :y, a[17] = :z", **{":x": S("x"), ":y": S("y"), ":z": S("z")})
    assert appended == ["2", "3", "4", "5", "6", "7", "z", "y", "x"]
    # AND REMOVEs and SETs naming elements of the list as it was, whatever their order in the expression
    assert after("REMOVE a[1], a[3]") == ["2", "4", "6", "7"]
    assert after("REMOVE a[1] SET a[3] = :v", **{":v": N(17)}) == ["2", "4", "17", "6", "7"]
    assert after("SET a[3] = :v REMOVE a[1]", **{":v": N(17)}) == ["2", "4", "17", "6", "7"]


def test_an_update_that_only_deletes_makes_no_item(ddb: Any) -> None:
    key = {"pk": S("nobody"), "sk": N(9)}
    ddb.update_item(TableName="tbl", Key=key, AttributeUpdates={"a": {"Action": "DELETE"}})
    ddb.update_item(
        TableName="tbl", Key=key, AttributeUpdates={"s": {"Action": "DELETE", "Value": {"SS": ["x"]}}}
    )
    assert "Item" not in ddb.get_item(TableName="tbl", Key=key)


def test_numbers_are_stored_in_dynamodbs_canonical_form(ddb: Any) -> None:
    from local.services.dynamodb.api import numbers

    for sent, stored in [("007", "7"), ("1.0e3", "1000"), (".5", "0.5"), ("-0.0", "0"), ("1.10", "1.1"),
                         ("1e-3", "0.001"), ("+3", "3")]:  # fmt: skip
        assert numbers.canonical(__import__("decimal").Decimal(sent)) == stored, sent
    assert numbers.normalized({"Item": {"a": {"N": "1e3"}, "s": {"NS": ["01", "2.0"]}, "N": {"S": "x"}}}) == (
        {"Item": {"a": {"N": "1000"}, "s": {"NS": ["1", "2"]}, "N": {"S": "x"}}},
        True,
    )
    # AND through the API: what is written one way is read back canonical, and found by any of its forms
    ddb.put_item(TableName="tbl", Item={"pk": S("n"), "sk": {"N": "1.0e3"}, "a": {"N": "+007.50"}})
    for form in ("1000", "1e3", "001000", "+1000.0"):
        item = ddb.get_item(TableName="tbl", Key={"pk": S("n"), "sk": {"N": form}})["Item"]
        assert (item["sk"], item["a"]) == ({"N": "1000"}, {"N": "7.5"}), form


def test_a_key_of_another_type_and_a_malformed_table_name_are_refused(ddb: Any) -> None:
    from local.services.dynamodb.api import keys

    for value in ({"BOOL": False}, {"NULL": True}, {"L": []}, {"SS": ["a"]}):
        assert refused(ddb.get_item, Key={"pk": value, "sk": N(1)}) == keys.MISMATCH, value
    for name in ("no!such!table", "xx"):
        with pytest.raises(ClientError) as caught:
            ddb.put_item(TableName=name, Item={"pk": S("p"), "sk": N(1)})
        assert caught.value.response["Error"]["Code"] == "ValidationException", name
