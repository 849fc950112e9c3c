"""A condition expression's functions and operators on the local AWS read their operands as DynamoDB does
(local/services/dynamodb/api/expressions.py): begins_with, size and attribute_type take a value where a path could
be, only attribute_exists and attribute_not_exists need a path; a value of a type the operator cannot read is a
ValidationException, while the same type read from the item is a failed condition; a syntax error is named before
an unused value; the update expressions' functions are not allowed in a condition. Select and AttributesToGet of a
Query or Scan agree or are refused in AWS's words."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from local import state
from tests.unit.test_local_legacy_conditions import CONFIG, N, S, refused
from tests.unit.test_local_transactions import keyed_table

pytestmark = pytest.mark.unit

KEY = {"pk": S("p"), "sk": N(1)}


@pytest.fixture
def ddb(local_moto: None) -> Iterator[Any]:
    """GIVEN a table holding one item: a = 'hello', n = 5, l = [1, 2]."""
    client = keyed_table(boto3.client("dynamodb", region_name=state.REGION, config=CONFIG))
    item = {**KEY, "a": S("hello"), "n": N(5), "l": {"L": [N(1), N(2)]}}
    client.put_item(TableName="tbl", Item=item)
    yield client


def holds(ddb: Any, condition: str, values: dict[str, Any]) -> bool:
    """Whether an UpdateItem under ``condition`` passes (True) or fails its condition (False)."""
    try:
        ddb.update_item(
            TableName="tbl",
            Key=KEY,
            UpdateExpression="SET z = :z",
            ConditionExpression=condition,
            ExpressionAttributeValues={":z": N(1), **values},
        )
    except ClientError as exc:
        assert exc.response["Error"]["Code"] == "ConditionalCheckFailedException", exc.response["Error"]
        return False
    return True


def update_refused(ddb: Any, condition: str, values: dict[str, Any]) -> str:
    return refused(
        ddb.update_item,
        Key=KEY,
        UpdateExpression="SET z = :z",
        ConditionExpression=condition,
        ExpressionAttributeValues={":z": N(1), **values},
    )


def test_functions_read_a_value_where_a_path_could_be(ddb: Any) -> None:
    # THEN begins_with, size and attribute_type evaluate a value operand, in either place
    assert holds(ddb, "begins_with(:s, a)", {":s": S("hello world")})
    assert not holds(ddb, "begins_with(:s, a)", {":s": S("help")})
    assert holds(ddb, "size(:s) = :three", {":s": S("abc"), ":three": N(3)})
    assert holds(ddb, "attribute_type(:v, :t)", {":v": N(0), ":t": S("N")})
    assert not holds(ddb, "attribute_type(:v, :t)", {":v": N(0), ":t": S("S")})
    # AND only attribute_exists and attribute_not_exists insist on a path
    message = update_refused(ddb, "attribute_exists(:v)", {":v": N(0)})
    assert message.endswith("requires a document path; operator or function: attribute_exists")


def test_a_value_of_the_wrong_type_is_refused_but_an_attribute_of_it_fails_the_condition(ddb: Any) -> None:
    # WHEN the request's own value cannot be read by the operator  THEN ValidationException, naming its type
    for condition, values, kind in (
        ("size(:v) > :one", {":v": N(123), ":one": N(1)}, "size, operand type: N"),
        ("size(size(a)) > :one", {":one": N(1)}, "size, operand type: N"),
        ("begins_with(:v, a)", {":v": N(1)}, "begins_with, operand type: N"),
        ("a BETWEEN :lo AND :hi", {":lo": {"L": [N(1)]}, ":hi": {"L": [N(2)]}}, "BETWEEN, operand type: L"),
    ):
        message = update_refused(ddb, condition, values)
        assert message.startswith("Invalid ConditionExpression: Incorrect operand type"), message
        assert message.endswith(kind), message
    # BUT the same types read from the item make the condition false
    assert not holds(ddb, "size(n) > :one", {":one": N(1)})
    assert not holds(ddb, "begins_with(n, :s)", {":s": S("5")})
    assert not holds(ddb, "a BETWEEN l AND l", {})


def test_a_syntax_error_is_named_before_an_unused_value(ddb: Any) -> None:
    # WHEN an IN lists nothing, and values are given that the broken expression never reaches
    message = update_refused(ddb, "a IN ()", {":x": N(1), ":y": N(2)})
    # THEN the syntax error is the answer, not the unused values
    assert message.startswith('Invalid ConditionExpression: Syntax error; token: ")"'), message


def test_the_update_functions_are_not_allowed_in_a_condition(ddb: Any) -> None:
    for function in ("if_not_exists(a, a)", "list_append(l, l)"):
        message = update_refused(ddb, f"{function} = :v", {":v": N(5)})
        name = function.split("(")[0]
        assert message == (
            "Invalid ConditionExpression: The function is not allowed to be used this way in an expression; "
            f"function: {name}"
        )
    # AND an unknown function is named as one
    assert update_refused(ddb, "dog(a) = :v", {":v": N(5)}).endswith("Invalid function name; function: dog")


def test_select_other_than_specific_attributes_refuses_attributes_to_get(ddb: Any) -> None:
    condition = {"pk": {"AttributeValueList": [S("p")], "ComparisonOperator": "EQ"}}
    for select in ("ALL_ATTRIBUTES", "ALL_PROJECTED_ATTRIBUTES"):
        message = refused(ddb.query, KeyConditions=condition, Select=select, AttributesToGet=["a"])
        assert message.endswith(f"Cannot specify the AttributesToGet when choosing to get {select}")
        message = refused(ddb.scan, Select=select, AttributesToGet=["a"])
        assert message.endswith(f"Cannot specify the AttributesToGet when choosing to get {select}")
    # AND SPECIFIC_ATTRIBUTES (or no Select) with AttributesToGet reads those attributes
    got = ddb.query(
        KeyConditions=condition, TableName="tbl", Select="SPECIFIC_ATTRIBUTES", AttributesToGet=["a"]
    )
    assert got["Items"] == [{"a": S("hello")}]
