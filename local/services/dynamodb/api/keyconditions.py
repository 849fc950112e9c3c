"""A Query's KeyConditionExpression read as DynamoDB reads it: by the condition expression parser (expressions.py),
then held to what a key condition may be (developer guide, "Key condition expressions for Query").

DynamoDB parses a KeyConditionExpression with the parser of every other condition, so what that parser refuses is
refused with its words ("Invalid KeyConditionExpression: Syntax error; ..."), and what it parses but a key
condition may not hold is refused after it: OR, NOT, IN, ``<>`` and any function but begins_with ("Invalid operator
used in KeyConditionExpression: OR"), a nested path, a function inside a comparison, a comparison of two attributes
or of two values, a second condition on one key. The comparison may be written either way round (``:v = p``).
moto's own reader of it refused the reversed form and answered the rest in other words. What is left is a list of
(attribute, operator, values) conditions, which legacy.py checks against the key schema as it checks KeyConditions.

Pure: no moto import.
"""

from __future__ import annotations

from typing import Any

from local.services.dynamodb.api import expressions

INVALID = "Invalid KeyConditionExpression: {detail}"
OPERATOR = "Invalid operator used in KeyConditionExpression: {operator}"
NESTED_OPERATION = "KeyConditionExpressions cannot contain nested operations"
NESTED_ATTRIBUTE = "KeyConditionExpressions cannot have conditions on nested attributes"
TWO_ATTRIBUTES = "Invalid condition in KeyConditionExpression: Multiple attribute names used in one condition"
NO_ATTRIBUTE = "Invalid condition in KeyConditionExpression: No key attribute specified"
FIRST_OPERAND = "Invalid condition in KeyConditionExpression: {operator} operator must have the key attribute as its first operand"
ONE_PER_KEY = "KeyConditionExpressions must only contain one condition per key"
# A multi-attribute key (a GSI's, developer guide "Multi-attribute key schemas"): the RANGE refusal is AWS's, as a
# conformance suite run on AWS records it; the HASH one is modelled on it (AWS's words quoted only in part).
HASH_EQUALITY = "HASH key attributes {name} must have equality conditions specified in the query"
RANGE_EQUALITY = (
    "RANGE key attributes {name} must have equality conditions specified in the query because a condition is "
    "present on key attribute {later}"
)
# A comparison written value-first, turned round: ``:v < p`` is ``p > :v``.
FLIPPED = {"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
# The legacy operator each allowed form stands for (legacy.py checks it against the key schema).
LEGACY = {
    "=": "EQ",
    "<": "LT",
    "<=": "LE",
    ">": "GT",
    ">=": "GE",
    "between": "BETWEEN",
    "begins_with": "BEGINS_WITH",
}


class Refused(Exception):
    """A KeyConditionExpression DynamoDB refuses, with its message."""


def _conjuncts(node: Any) -> list[Any]:
    """The conditions ANDed at the top (parentheses unwrapped); any other connective is refused by name."""
    kind = node[0]
    if kind == "paren":
        return _conjuncts(node[1])
    if kind == "and":
        return _conjuncts(node[1]) + _conjuncts(node[2])
    if kind in ("or", "not", "in"):
        raise Refused(OPERATOR.format(operator=kind.upper()))
    if kind == "cmp" and node[1] == "<>":
        raise Refused(OPERATOR.format(operator="<>"))
    if kind == "func" and node[1] != "begins_with":
        raise Refused(OPERATOR.format(operator=node[1]))
    return [node]


def _operands(node: Any) -> tuple[str, list[Any]]:
    """A condition's operator and its operands in order."""
    if node[0] == "cmp":
        return node[1], [node[2], node[3]]
    if node[0] == "between":
        return "between", [node[1], node[2], node[3]]
    return "begins_with", list(node[2])


def _condition(node: Any) -> tuple[str, str, list[str]]:
    """One condition as (attribute, legacy operator, value placeholders)."""
    operator, operands = _operands(node)
    if any(o[0] not in ("path", "value") for o in operands):
        raise Refused(NESTED_OPERATION)
    paths = [o for o in operands if o[0] == "path"]
    if len(paths) > 1:
        raise Refused(TWO_ATTRIBUTES)
    if not paths:
        raise Refused(NO_ATTRIBUTE)
    if len(paths[0][1]) > 1:
        raise Refused(NESTED_ATTRIBUTE)
    if operands[0][0] != "path":
        if operator not in FLIPPED:
            raise Refused(
                FIRST_OPERAND.format(operator=operator.upper() if operator == "between" else operator)
            )
        operator, operands = FLIPPED[operator], [operands[1], operands[0]]
    values = [str(o[2]) for o in operands[1:]]
    return str(paths[0][1][0]), LEGACY[operator], values


def conditions(
    text: str, names: dict[str, str] | None, values: dict[str, Any] | None, reserved: frozenset[str]
) -> list[tuple[str, str, list[str]]]:
    """The key conditions ``text`` states, as (attribute, legacy operator, value placeholders); Refused in
    DynamoDB's words."""
    try:
        parser = expressions.parse(text, names, values, reserved)
    except expressions.ExpressionError as error:
        raise Refused(INVALID.format(detail=str(error))) from None
    found = [_condition(node) for node in _conjuncts(parser.tree)]  # type: ignore[attr-defined]
    attributes = [attribute for attribute, _, _ in found]
    if len(set(attributes)) != len(attributes):
        raise Refused(ONE_PER_KEY)
    return found


def multi_attribute_refusal(operators: dict[str, str], keys: list[tuple[str, str]]) -> str | None:
    """DynamoDB's refusal of key conditions (attribute -> legacy operator) on a key of several attributes, or None:
    an equality on every HASH attribute; RANGE attributes left to right, each before the last one named with an
    equality, none skipped (a range condition only on the last). Conditions on other attributes are not judged
    here."""
    for name, kind in keys:
        if kind == "HASH" and operators.get(name) != "EQ":
            return HASH_EQUALITY.format(name=name)
    ranges = [name for name, kind in keys if kind == "RANGE"]
    for position, later in enumerate(ranges):
        if later not in operators:
            continue
        for name in ranges[:position]:
            if operators.get(name) != "EQ":
                return RANGE_EQUALITY.format(name=name, later=later)
    return None
