"""The legacy conditional parameters as DynamoDB reads them: checked in AWS's words, then rewritten into the
expressions they stand for, so that one parser and evaluator (expressions.py) answers both kinds.

DynamoDB still takes the parameters that came before expressions (developer guide, "Legacy conditional
parameters"): ``KeyConditions`` and ``QueryFilter`` of Query, ``ScanFilter`` of Scan, ``Expected`` of PutItem,
UpdateItem and DeleteItem, each a map of attribute -> {ComparisonOperator, AttributeValueList} joined by
``ConditionalOperator``, and ``AttributesToGet``. moto evaluates them with an evaluator of its own that raises
Python errors on what DynamoDB refuses (HTTP 500: BETWEEN without two values, BEGINS_WITH on a number, NULL on a
missing attribute), accepts what DynamoDB refuses (a filter on a key attribute, an empty IN, an Exists without its
Value, a ConditionalOperator without conditions) and answers some wrongly (NOT_CONTAINS on a missing attribute).

Before moto's operation reads the request (operations.py owns the handlers' entries and calls ``rewrite``), each
legacy parameter is checked as DynamoDB checks it (the argument count and types of each ComparisonOperator, the key schema for KeyConditions) and replaced by its
expression: KeyConditions by a KeyConditionExpression, QueryFilter and ScanFilter by a FilterExpression, Expected
by a ConditionExpression, AttributesToGet of Query and Scan by a ProjectionExpression. What the rewrite changes is
only the request's form; what it means is the legacy operator's (NE holds for a missing attribute, NOT_CONTAINS
does not).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from local.services.dynamodb.api import conditions, keyconditions

# Each ComparisonOperator's number of values (low, high; None: no upper bound) and the value types it takes (None:
# any). API_Condition.html, "ComparisonOperator".
_SCALARS = ("S", "N", "B")
OPERANDS: dict[str, tuple[int, int | None]] = {
    **dict.fromkeys(("EQ", "NE", "LE", "LT", "GE", "GT", "CONTAINS", "NOT_CONTAINS", "BEGINS_WITH"), (1, 1)),
    "NULL": (0, 0),
    "NOT_NULL": (0, 0),
    "IN": (1, None),
    "BETWEEN": (2, 2),
}
TYPES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("LE", "LT", "GE", "GT", "CONTAINS", "NOT_CONTAINS", "IN", "BETWEEN"), _SCALARS),
    "BEGINS_WITH": ("S", "B"),
}
KEY_OPERATORS = ("EQ", "LE", "LT", "GE", "GT", "BEGINS_WITH", "BETWEEN")  # what a key condition may use

INVALID = "One or more parameter values were invalid: "
COUNT = INVALID + "Invalid number of argument(s) for the {op} ComparisonOperator"
SAME_TYPE = INVALID + "AttributeValues inside AttributeValueList must be of same type"
WRONG_TYPE = INVALID + "ComparisonOperator {op} is not valid for {type} AttributeValue type"
REVERSED = "The BETWEEN condition was provided a range where the lower bound is greater than the upper bound"
WITHOUT_CONDITIONS = "ConditionalOperator cannot be used without Filter or Expected"
ONE_CONDITION = "ConditionalOperator can only be used when Filter or Expected has two or more elements"
NO_KEY_CONDITION = (
    "Either the KeyConditions or KeyConditionExpression parameter must be specified in the request."
)
KEY_CONDITION_COUNT = "Conditions can be of length 1 or 2 only"
MISSED_KEY = "Query condition missed key schema element: {name}"
NOT_SUPPORTED = "Query key condition not supported"
NOT_INDEXABLE = "Attempted conditional constraint is not an indexable operation"
KEY_TYPE = INVALID + "Condition parameter type does not match schema type"
FILTER_ON_KEY = "QueryFilter can only contain non-primary key attributes: Primary key attribute: {name}"
EXPRESSION_ON_KEY = (
    "Filter Expression can only contain non-primary key attributes: Primary key attribute: {name}"
)
DUPLICATE = INVALID + "Duplicate value in attribute name: {name}"
COUNT_WITH_ATTRIBUTES = "Cannot specify the AttributesToGet when choosing to get only the Count"
SELECT_WITH_ATTRIBUTES = "Cannot specify the AttributesToGet when choosing to get {select}"
# An Expected entry's own shape (ExpectedAttributeValue): AWS names the attribute, after "1 validation error
# detected: " (verified against DynamoDB by floci-io/floci#2126).
_ENTRY = "1 validation error detected: " + INVALID
VALUE_AND_LIST = _ENTRY + "Value and AttributeValueList cannot be used together for Attribute: {name}"
EXISTS_AND_OPERATOR = _ENTRY + "Exists and ComparisonOperator cannot be used together for Attribute: {name}"
OPERATOR_WITHOUT_VALUE = (
    _ENTRY + "Value or AttributeValueList must be used with ComparisonOperator: {op} for Attribute: {name}"
)
LIST_WITHOUT_OPERATOR = (
    _ENTRY + "AttributeValueList can only be used with a ComparisonOperator for Attribute: {name}"
)
VALUE_REQUIRED = _ENTRY + "Value must be provided when Exists is {exists} for Attribute: {name}"
VALUE_WITH_ABSENCE = _ENTRY + "Value cannot be used when Exists is false for Attribute: {name}"


EXPRESSION_MEMBERS = ("KeyConditionExpression", "FilterExpression", "ProjectionExpression", "ConditionExpression",
                      "UpdateExpression")  # fmt: skip


class Legacy(Exception):
    """A legacy parameter DynamoDB refuses, with its message (raised as moto's ValidationException)."""


def _type(value: Any) -> str:
    return next(iter(value)) if isinstance(value, dict) and value else "?"


def _number_order(low: Any, high: Any) -> bool:
    import decimal

    try:
        return decimal.Decimal(low) > decimal.Decimal(high)
    except (decimal.InvalidOperation, TypeError, ValueError):
        return False


def _reversed(low: dict[str, Any], high: dict[str, Any]) -> bool:
    """The lower bound of a BETWEEN is greater than its upper bound (same-typed S, N or B values)."""
    kind = _type(low)
    a, b = low.get(kind), high.get(kind)
    if kind == "N":
        return _number_order(a, b)
    if isinstance(a, str) and isinstance(b, str):
        return a.encode() > b.encode() if kind == "S" else _blob(a) > _blob(b)
    if isinstance(a, bytes | bytearray) and isinstance(b, bytes | bytearray):
        return bytes(a) > bytes(b)
    return False


def _blob(text: str) -> bytes:
    import base64
    import binascii

    try:
        return base64.b64decode(text)
    except (binascii.Error, ValueError):
        return text.encode()


def check_condition(op: str, values: list[Any]) -> None:
    """One condition's values as DynamoDB checks them for ``op``: how many, of one type, of a type ``op`` takes,
    and a BETWEEN's bounds in order."""
    low, high = OPERANDS.get(op, (0, None))
    if len(values) < low or (high is not None and len(values) > high):
        raise Legacy(COUNT.format(op=op))
    kinds = [_type(v) for v in values]
    if len(set(kinds)) > 1:
        raise Legacy(SAME_TYPE)
    allowed = TYPES.get(op)
    for kind in kinds:
        if allowed is not None and kind not in allowed:
            raise Legacy(WRONG_TYPE.format(op=op, type=kind))
    if op == "BETWEEN" and _reversed(values[0], values[1]):
        raise Legacy(REVERSED)


class Rewrite:
    """The expression being written for one request: its names and values, under placeholders of its own that no
    name or value the request defines uses."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body
        self.names: dict[str, str] = dict(body.get("ExpressionAttributeNames") or {})
        self.values: dict[str, Any] = dict(body.get("ExpressionAttributeValues") or {})
        taken = " ".join([*self.names, *self.values])
        self.tag = next(t for t in (f"lg{i}" for i in range(1000)) if t not in taken)

    def name(self, attribute: str) -> str:
        ref = f"#{self.tag}n{len(self.names)}"
        self.names[ref] = attribute
        return ref

    def value(self, value: Any) -> str:
        ref = f":{self.tag}v{len(self.values)}"
        self.values[ref] = value
        return ref

    def condition(self, attribute: str, op: str, values: list[Any]) -> str:
        """The expression of one legacy condition, with the legacy operator's meaning."""
        return self.stated(attribute, op, [self.value(v) for v in values])

    def stated(self, attribute: str, op: str, refs: list[str]) -> str:
        """The expression of one condition on values the request already defines (``refs``: placeholders)."""
        n = self.name(attribute)
        simple = {"EQ": "=", "LE": "<=", "LT": "<", "GE": ">=", "GT": ">"}
        if op in simple:
            return f"{n} {simple[op]} {refs[0]}"
        forms: dict[str, Callable[[], str]] = {
            "NE": lambda: f"(attribute_not_exists({n}) OR {n} <> {refs[0]})",
            "NULL": lambda: f"attribute_not_exists({n})",
            "NOT_NULL": lambda: f"attribute_exists({n})",
            "CONTAINS": lambda: f"contains({n}, {refs[0]})",
            "NOT_CONTAINS": lambda: f"(attribute_exists({n}) AND NOT contains({n}, {refs[0]}))",
            "BEGINS_WITH": lambda: f"begins_with({n}, {refs[0]})",
            "IN": lambda: f"{n} IN ({', '.join(refs)})",
            "BETWEEN": lambda: f"{n} BETWEEN {refs[0]} AND {refs[1]}",
        }
        return forms[op]()

    def finish(self, member: str, text: str) -> None:
        self.body[member] = text
        self.body["ExpressionAttributeNames"] = self.names
        if self.values:
            self.body["ExpressionAttributeValues"] = self.values


def _conditions(body: dict[str, Any], member: str) -> dict[str, Any] | None:
    """The legacy map ``member`` checked with the request's ConditionalOperator, or None when absent."""
    conditions = body.get(member)
    return conditions if isinstance(conditions, dict) else None


def _check_operator(body: dict[str, Any], conditions: dict[str, Any] | None) -> None:
    if body.get("ConditionalOperator") is None:
        return
    if not conditions:
        raise Legacy(WITHOUT_CONDITIONS)
    if len(conditions) == 1:
        raise Legacy(ONE_CONDITION)


def _check(condition: dict[str, Any]) -> None:
    check_condition(condition.get("ComparisonOperator", ""), list(condition.get("AttributeValueList") or []))


def _filter(rewrite: Rewrite, conditions: dict[str, Any], joiner: str) -> str:
    parts = []
    for attribute, condition in conditions.items():
        op, values = condition.get("ComparisonOperator", ""), list(condition.get("AttributeValueList") or [])
        check_condition(op, values)
        parts.append(rewrite.condition(attribute, op, values))
    return f" {joiner} ".join(parts)


def _expected_entry(rewrite: Rewrite, attribute: str, entry: dict[str, Any]) -> str:
    """One Expected entry: its shape checked (Value or AttributeValueList, Exists or ComparisonOperator), then
    its expression."""
    listed, value, exists = entry.get("AttributeValueList"), entry.get("Value"), entry.get("Exists")
    op = entry.get("ComparisonOperator")
    if listed is not None and value is not None:
        raise Legacy(VALUE_AND_LIST.format(name=attribute))
    if op is not None:
        if exists is not None:
            raise Legacy(EXISTS_AND_OPERATOR.format(name=attribute))
        if op not in ("NULL", "NOT_NULL") and listed is None and value is None:
            raise Legacy(OPERATOR_WITHOUT_VALUE.format(op=op, name=attribute))
        values = list(listed) if listed is not None else [value] if value is not None else []
        check_condition(op, values)
        return rewrite.condition(attribute, op, values)
    if listed is not None:
        raise Legacy(LIST_WITHOUT_OPERATOR.format(name=attribute))
    if exists is None or exists:
        if value is None:
            raise Legacy(VALUE_REQUIRED.format(exists="null" if exists is None else "true", name=attribute))
        return rewrite.condition(attribute, "EQ", [value])
    if value is not None:
        raise Legacy(VALUE_WITH_ABSENCE.format(name=attribute))
    return rewrite.condition(attribute, "NULL", [])


def _joiner(body: dict[str, Any]) -> str:
    """The ConditionalOperator (AND unless OR), taken out of the request: the expression carries it now."""
    return "OR" if body.pop("ConditionalOperator", None) == "OR" else "AND"


def rewrite_expected(body: dict[str, Any]) -> None:
    """PutItem, UpdateItem, DeleteItem: Expected (and ConditionalOperator) as a ConditionExpression; an empty
    Expected is no condition."""
    expected = _conditions(body, "Expected")
    _check_operator(body, expected)
    joiner = _joiner(body)
    if not body.pop("Expected", None):
        return
    assert expected is not None
    rewrite = Rewrite(body)
    parts = [_expected_entry(rewrite, attribute, entry or {}) for attribute, entry in expected.items()]
    rewrite.finish("ConditionExpression", f" {joiner} ".join(parts))


def _projection(body: dict[str, Any], rewrite: Rewrite | None = None) -> None:
    """Query and Scan: AttributesToGet as a ProjectionExpression (no duplicate; not with Select=COUNT)."""
    names = body.get("AttributesToGet")
    if not isinstance(names, list):
        return
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise Legacy(DUPLICATE.format(name=name))
        seen.add(name)
    select = body.get("Select")
    if select == "COUNT":
        raise Legacy(COUNT_WITH_ATTRIBUTES)
    if select not in (None, "SPECIFIC_ATTRIBUTES"):
        raise Legacy(SELECT_WITH_ATTRIBUTES.format(select=select))
    rewrite = rewrite or Rewrite(body)
    body.pop("AttributesToGet")
    rewrite.finish("ProjectionExpression", ", ".join(rewrite.name(n) for n in names))


def rewrite_scan(handler: Any, body: dict[str, Any]) -> None:
    """Scan: its starting key checked; ScanFilter (and ConditionalOperator) as a FilterExpression, AttributesToGet
    as a projection."""
    if body.get("ExclusiveStartKey") is not None:
        keys, types, start_names = _key_schema(handler, body)
        segment, total = body.get("Segment"), body.get("TotalSegments")
        parallel = isinstance(segment, int) and isinstance(total, int) and 0 <= segment < total
        where = {"segment": (segment, total)} if parallel else {}
        _start_key(body, start_names, types, keys[0][0], scan=True, **where)
    conditions = _conditions(body, "ScanFilter")
    _check_operator(body, conditions)
    joiner = _joiner(body)
    rewrite = Rewrite(body)
    if body.pop("ScanFilter", None):
        assert conditions is not None
        rewrite.finish("FilterExpression", _filter(rewrite, conditions, joiner))
    _projection(body, rewrite)


def _key_schema(
    handler: Any, body: dict[str, Any]
) -> tuple[list[tuple[str, str]], dict[str, str], list[str]]:
    """The key schema read as (attribute, HASH|RANGE) pairs, the table's attribute types, and every key attribute
    a page's starting key names (the table's, and the index's when an index is read)."""
    backend = handler.dynamodb_backend
    table = backend.get_table(body["TableName"])
    schema = backend.get_schema(table_name=body["TableName"], index_name=body.get("IndexName"))
    keys = [(k["AttributeName"], k["KeyType"]) for k in schema]
    keys.sort(key=lambda pair: pair[1] != "HASH")
    types = {a["AttributeName"]: a["AttributeType"] for a in table.attr}
    table_keys = [n for n in (table.hash_key_attr, table.range_key_attr) if n]
    return keys, types, [*table_keys, *(n for n, _ in keys if n not in table_keys)]


def _start_key(
    body: dict[str, Any], names: list[str], types: dict[str, str], hash_name: str, **where: Any
) -> None:
    from local.services.dynamodb.api import startkeys

    try:
        startkeys.check(body.get("ExclusiveStartKey"), names, types, hash_name=hash_name, **where)
    except startkeys.Refused as refused:
        raise Legacy(str(refused)) from None


def _key_types(
    conditions: dict[str, Any], keys: list[tuple[str, str]], types: dict[str, str], single: bool
) -> None:
    """Every rule of key conditions on a key of one partition and at most one sort attribute; on a key of several
    attributes the types of its values, then keyconditions.py's rules (moto's reader: conditions on others)."""
    if single:
        _key_schema_conditions(conditions, keys, types)
        return
    for attribute, _ in keys:
        values = (conditions.get(attribute) or {}).get("AttributeValueList") or []
        if any(_type(v) != types.get(attribute) for v in values):
            raise Legacy(KEY_TYPE)
    operators = {a: str(c.get("ComparisonOperator")) for a, c in conditions.items()}
    if (problem := keyconditions.multi_attribute_refusal(operators, keys)) is not None:
        raise Legacy(problem)


def _key_schema_conditions(
    conditions: dict[str, Any], keys: list[tuple[str, str]], types: dict[str, str]
) -> None:
    """Key conditions against a key of one partition and at most one sort attribute, as DynamoDB checks them."""
    if len(conditions) not in (1, 2):
        raise Legacy(KEY_CONDITION_COUNT)
    for attribute, kind in keys:
        is_hash = kind == "HASH"
        if is_hash and len(keys) == 1 and len(conditions) > 1:
            raise Legacy(NOT_SUPPORTED)
        condition = conditions.get(attribute)
        if condition is None:
            if is_hash or len(conditions) > 1:
                raise Legacy(MISSED_KEY.format(name=attribute))
            continue
        op = condition.get("ComparisonOperator", "")
        if op not in KEY_OPERATORS:
            raise Legacy(NOT_INDEXABLE)
        if any(_type(v) != types.get(attribute) for v in condition.get("AttributeValueList") or []):
            raise Legacy(KEY_TYPE)
        if is_hash and op != "EQ":
            raise Legacy(NOT_SUPPORTED)


def _heads(node: Any) -> list[str]:
    """The top-level attribute of each path in an expression tree (expressions.py's tuples)."""
    if isinstance(node, tuple) and node and node[0] == "path":
        return [str(node[1][0])]
    if isinstance(node, tuple | list):
        return [head for child in node for head in _heads(child)]
    return []


def _filtered_attributes(body: dict[str, Any]) -> list[str]:
    """The attributes a Query's own FilterExpression reads (none when it does not parse: the operation refuses
    it in its own words)."""
    from local.services.dynamodb.api import expressions

    text = body.get("FilterExpression")
    if not isinstance(text, str):
        return []
    try:
        parser = expressions.parse(
            text, body.get("ExpressionAttributeNames"), body.get("ExpressionAttributeValues")
        )
    except (expressions.ExpressionError, ValueError, TypeError, KeyError, AttributeError):
        return []
    return _heads(parser.tree)  # type: ignore[attr-defined]


def _stated_key_conditions(body: dict[str, Any]) -> list[tuple[str, str, list[str]]] | None:
    """A KeyConditionExpression read and held to a key condition's form (keyconditions.py), or None."""
    from local.services.dynamodb.api.conditions import _reserved

    text = body.get("KeyConditionExpression")
    if not isinstance(text, str):
        return None
    try:
        return keyconditions.conditions(
            text, body.get("ExpressionAttributeNames"), body.get("ExpressionAttributeValues"), _reserved()
        )
    except keyconditions.Refused as refused:
        raise Legacy(str(refused)) from None


def _prune_names(body: dict[str, Any]) -> None:
    """The names no expression of the request uses any more (the key condition was written anew) taken out."""
    import re

    names = body.get("ExpressionAttributeNames") or {}
    texts = " ".join(str(body[m]) for m in EXPRESSION_MEMBERS if isinstance(body.get(m), str))
    used = set(re.findall(r"#[A-Za-z0-9_]+", texts))
    body["ExpressionAttributeNames"] = {k: v for k, v in names.items() if k in used}


def rewrite_query(handler: Any, body: dict[str, Any]) -> None:
    """Query: QueryFilter as a FilterExpression, KeyConditions as a KeyConditionExpression, AttributesToGet as a
    projection, each checked first (a filter never on a key attribute)."""
    conditions = _conditions(body, "QueryFilter")
    _check_operator(body, conditions)
    joiner = _joiner(body)
    for condition in (conditions or {}).values():
        _check(condition)
    key_conditions = _conditions(body, "KeyConditions")
    if key_conditions is None and body.get("KeyConditionExpression") is None:
        raise Legacy(NO_KEY_CONDITION)
    rewrite = Rewrite(body)
    stated = _stated_key_conditions(body)
    if key_conditions is not None:
        for condition in key_conditions.values():
            _check(condition)
    keys, types, start_names = _key_schema(handler, body)
    single = sum(kind == "HASH" for _, kind in keys) == 1 and sum(kind == "RANGE" for _, kind in keys) <= 1
    if key_conditions is not None:
        _key_types(key_conditions, keys, types, single)
        body.pop("KeyConditions")
        text = " AND ".join(
            rewrite.condition(a, c["ComparisonOperator"], list(c.get("AttributeValueList") or []))
            for a, c in key_conditions.items()
        )
        rewrite.finish("KeyConditionExpression", text)
    if stated is not None:
        values = body.get("ExpressionAttributeValues") or {}
        as_legacy = {a: {"ComparisonOperator": op, "AttributeValueList": [values[r] for r in refs]}
                     for a, op, refs in stated}  # fmt: skip
        _key_types(as_legacy, keys, types, single)
        rewrite.finish(
            "KeyConditionExpression", " AND ".join(rewrite.stated(a, op, refs) for a, op, refs in stated)
        )
        key_conditions = as_legacy
    hash_name = keys[0][0]
    partition = ((key_conditions or {}).get(hash_name) or {}).get("AttributeValueList") or [None]
    _start_key(body, start_names, types, hash_name, scan=False, partition=partition[0] if single else None)
    key_names = {name for name, _ in keys}
    for attribute in conditions or {}:
        if attribute in key_names:
            raise Legacy(FILTER_ON_KEY.format(name=attribute))
    for attribute in _filtered_attributes(body):
        if attribute in key_names:
            raise Legacy(EXPRESSION_ON_KEY.format(name=attribute))
    if body.pop("QueryFilter", None):
        assert conditions is not None
        rewrite.finish("FilterExpression", _filter(rewrite, conditions, joiner))
    _projection(body, rewrite)
    if stated is not None:
        _prune_names(body)


def _item_key(handler: Any, body: dict[str, Any]) -> None:
    """The key a request names, checked before anything else reads it (keys.py: the table's names, their types,
    nothing empty); moto's GetItem took a false boolean for an empty string."""
    from local.services.dynamodb.api import keys

    key = body.get("Key")
    if isinstance(key, dict) and isinstance(body.get("TableName"), str):
        problem = keys.key_refusal(handler.dynamodb_backend.get_table(body["TableName"]), key)
        if problem is not None:
            raise Legacy(problem)


def rewrite(operation: str, handler: Any, body: dict[str, Any]) -> None:
    """The request of ``operation`` (moto's handler method name) with its legacy parameters checked and
    rewritten; Legacy when DynamoDB refuses them."""
    if operation == "query":
        rewrite_query(handler, body)
    elif operation == "scan":
        rewrite_scan(handler, body)
    elif operation in ("put_item", "update_item", "delete_item"):
        rewrite_expected(body)
        problem = conditions.attribute_updates_refusal(body.get("AttributeUpdates"))
        if problem is not None:
            raise Legacy(problem)
    elif operation == "get_item":
        _projection(body)
        _item_key(handler, body)
