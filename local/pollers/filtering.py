"""Lambda event filtering (an event-source mapping's FilterCriteria): the pattern grammar Lambda documents for
its event sources (EventBridge's), validated as CreateEventSourceMapping/UpdateEventSourceMapping validate it and
applied to each record as Lambda's poller applies it.

A pattern is a JSON object whose keys follow the record's fields (``{"dynamodb": {"OldImage": ...}}``) and whose
leaves are non-empty arrays of rules, ORed: a value (string, number, boolean, null), ``{"prefix": s}``,
``{"suffix": s}``, ``{"equals-ignore-case": s}``, ``{"numeric": [op, n, ...]}`` (``=``, or one or two bounds
among ``<``, ``<=``, ``>``, ``>=``), ``{"exists": bool}``, ``{"anything-but": value | [values] | {"prefix": s} |
{"suffix": s} | {"equals-ignore-case": s | [s]}}``. The keys of an object are ANDed; ``"$or": [pattern, ...]``
ORs whole sub-patterns; the filters of one mapping are ORed (a record passes if any filter matches).

Matching follows the event's JSON: an array in the record is matched element by element (a rule holds if it
holds for any element), and only leaves (not objects) exist for ``exists``. A Kinesis record is matched as Lambda
matches it (``view``): on its ``data`` key alone, base64-decoded and parsed as JSON (``{"data": {...}}``).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from typing import Any

INVALID_PATTERN = "Invalid filter pattern definition."
MAX_FILTERS = 5  # AWS's default quota of filters per event source
MAX_PATTERN_LENGTH = 4096  # Filter.Pattern's length constraint
_NUMERIC_OPS = ("=", "<", "<=", ">", ">=")
_LOWER, _UPPER = (">", ">="), ("<", "<=")
_STRING_OPERATORS = ("prefix", "suffix", "equals-ignore-case")
OR_KEY = "$or"


class FilterError(ValueError):
    """A FilterCriteria Lambda refuses: InvalidParameterValueException with this message."""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# ------------------------------------------------------------------------------------------- validation
def _check_string_operand(value: Any) -> None:
    """prefix/suffix take a string, or ``{"equals-ignore-case": s}`` (a case-insensitive prefix or suffix)."""
    if isinstance(value, str):
        return
    if (
        isinstance(value, dict)
        and list(value) == ["equals-ignore-case"]
        and isinstance(value["equals-ignore-case"], str)
    ):
        return
    raise FilterError(INVALID_PATTERN)


def _check_numeric(operands: Any) -> None:
    if not isinstance(operands, list) or len(operands) not in (2, 4):
        raise FilterError(INVALID_PATTERN)
    pairs = [(operands[i], operands[i + 1]) for i in range(0, len(operands), 2)]
    for op, number in pairs:
        if op not in _NUMERIC_OPS or not _is_number(number):
            raise FilterError(INVALID_PATTERN)
    if len(pairs) == 2:
        (op1, n1), (op2, n2) = pairs
        # A range is one lower and one upper bound, the lower below the upper.
        if not (op1 in _LOWER and op2 in _UPPER and n1 < n2):
            raise FilterError(INVALID_PATTERN)


def _check_anything_but(operand: Any) -> None:
    if isinstance(operand, str) or _is_number(operand):
        return
    if isinstance(operand, list):
        if operand and (all(isinstance(v, str) for v in operand) or all(_is_number(v) for v in operand)):
            return
        raise FilterError(INVALID_PATTERN)
    if isinstance(operand, dict) and len(operand) == 1:
        (kind, value), *_ = operand.items()
        if kind in ("prefix", "suffix") and isinstance(value, str):
            return
        if kind == "equals-ignore-case" and (
            isinstance(value, str)
            or (isinstance(value, list) and value and all(isinstance(v, str) for v in value))
        ):
            return
    raise FilterError(INVALID_PATTERN)


def _check_rule(rule: Any) -> None:
    if rule is None or isinstance(rule, (str, bool)) or _is_number(rule):
        return
    if not isinstance(rule, dict) or len(rule) != 1:
        raise FilterError(INVALID_PATTERN)
    (kind, operand), *_ = rule.items()
    if kind in ("prefix", "suffix"):
        _check_string_operand(operand)
    elif kind == "equals-ignore-case":
        if not isinstance(operand, str):
            raise FilterError(INVALID_PATTERN)
    elif kind == "numeric":
        _check_numeric(operand)
    elif kind == "exists":
        if not isinstance(operand, bool):
            raise FilterError(INVALID_PATTERN)
    elif kind == "anything-but":
        _check_anything_but(operand)
    else:  # wildcard, cidr and anything else Lambda does not document
        raise FilterError(INVALID_PATTERN)


def _check_object(pattern: Any) -> None:
    if not isinstance(pattern, dict) or not pattern:
        raise FilterError(INVALID_PATTERN)
    for key, value in pattern.items():
        if key == OR_KEY:
            if not isinstance(value, list) or len(value) < 2:
                raise FilterError(INVALID_PATTERN)
            for alternative in value:
                _check_object(alternative)
        elif isinstance(value, dict):
            _check_object(value)
        elif isinstance(value, list) and value:
            for rule in value:
                _check_rule(rule)
        else:
            raise FilterError(INVALID_PATTERN)


def parse_pattern(text: Any) -> dict[str, Any]:
    """A filter's Pattern string, checked; FilterError when Lambda would refuse it."""
    if not isinstance(text, str) or len(text) > MAX_PATTERN_LENGTH:
        raise FilterError(INVALID_PATTERN)
    try:
        pattern = json.loads(text)
    except ValueError:
        raise FilterError(INVALID_PATTERN) from None
    _check_object(pattern)
    return pattern  # type: ignore[no-any-return]


def parse_criteria(criteria: Any) -> list[dict[str, Any]]:
    """The patterns of a FilterCriteria (``{"Filters": [{"Pattern": ...}]}``); [] for none (None, ``{}``,
    ``{"Filters": []}``: every record passes). FilterError for what Lambda refuses."""
    if criteria is None:
        return []
    if not isinstance(criteria, dict):
        raise FilterError(INVALID_PATTERN)
    filters = criteria.get("Filters") or []
    if not isinstance(filters, list):
        raise FilterError(INVALID_PATTERN)
    if len(filters) > MAX_FILTERS:
        raise FilterError(
            f"The number of filters ({len(filters)}) exceeds the limit of {MAX_FILTERS} filters per event source."
        )
    patterns = []
    for item in filters:
        if not isinstance(item, dict):
            raise FilterError(INVALID_PATTERN)
        patterns.append(parse_pattern(item.get("Pattern")))
    return patterns


# --------------------------------------------------------------------------------------------- matching
def _flatten(values: Iterable[Any]) -> list[Any]:
    out: list[Any] = []
    for value in values:
        if isinstance(value, list):
            out.extend(_flatten(value))
        else:
            out.append(value)
    return out


def _children(nodes: list[Any], key: str) -> list[Any]:
    """The values under ``key`` of each object among ``nodes``, arrays opened element by element."""
    return _flatten(node[key] for node in nodes if isinstance(node, dict) and key in node)


def _numeric_holds(operands: list[Any], value: Any) -> bool:
    if not _is_number(value):
        return False
    for i in range(0, len(operands), 2):
        op, bound = operands[i], operands[i + 1]
        held = {
            "=": value == bound,
            "<": value < bound,
            "<=": value <= bound,
            ">": value > bound,
            ">=": value >= bound,
        }[op]
        if not held:
            return False
    return True


def _equal(rule: Any, value: Any) -> bool:
    if rule is None or value is None:
        return rule is value
    if isinstance(rule, bool) or isinstance(value, bool):
        return isinstance(rule, bool) and isinstance(value, bool) and rule == value
    if _is_number(rule) or _is_number(value):
        # Numbers compare as their JSON text does: 300 and 300.0 are different values.
        return _is_number(rule) and _is_number(value) and type(rule) is type(value) and rule == value
    return bool(rule == value)


def _string_test(kind: str, operand: Any, value: Any) -> bool:
    if not isinstance(value, str):
        return False
    if isinstance(operand, dict):  # {"prefix": {"equals-ignore-case": s}}
        operand, value = operand["equals-ignore-case"].casefold(), value.casefold()
    if kind == "prefix":
        return value.startswith(operand)
    if kind == "suffix":
        return value.endswith(operand)
    return bool(value.casefold() == operand.casefold())


def _anything_but(operand: Any, value: Any) -> bool:
    if isinstance(operand, dict):
        (kind, inner), *_ = operand.items()
        if not isinstance(value, str):
            return False
        if kind == "equals-ignore-case":
            values = inner if isinstance(inner, list) else [inner]
            return all(value.casefold() != v.casefold() for v in values)
        return not _string_test(kind, inner, value)
    excluded = operand if isinstance(operand, list) else [operand]
    return not any(_equal(v, value) for v in excluded)


def _rule_holds(rule: Any, leaves: list[Any]) -> bool:
    if not isinstance(rule, dict):
        return any(_equal(rule, leaf) for leaf in leaves)
    (kind, operand), *_ = rule.items()
    if kind == "exists":
        return bool(leaves) is operand
    if kind == "numeric":
        return any(_numeric_holds(operand, leaf) for leaf in leaves)
    if kind == "anything-but":
        return any(_anything_but(operand, leaf) for leaf in leaves)
    return any(_string_test(kind, operand, leaf) for leaf in leaves)


def _matches(pattern: Mapping[str, Any], nodes: list[Any]) -> bool:
    for key, value in pattern.items():
        if key == OR_KEY:
            if not any(_matches(alternative, nodes) for alternative in value):
                return False
        elif isinstance(value, dict):
            if not _matches(value, _children(nodes, key)):
                return False
        else:
            leaves = [leaf for leaf in _children(nodes, key) if not isinstance(leaf, dict)]
            if not any(_rule_holds(rule, leaves) for rule in value):
                return False
    return True


def matches(pattern: Mapping[str, Any], record: Mapping[str, Any]) -> bool:
    """Does one pattern match one record (the record as the function's event carries it)?"""
    return _matches(pattern, [record])


def passes(patterns: list[dict[str, Any]], record: Mapping[str, Any]) -> bool:
    """A record passes a mapping's filters when there are none or any one of them matches."""
    return not patterns or any(matches(pattern, record) for pattern in patterns)


def view(record: Mapping[str, Any]) -> Mapping[str, Any]:
    """The record as a filter sees it. A Kinesis record: only its ``data`` key (Lambda filters Kinesis records on
    ``data`` alone), base64-decoded and parsed as JSON; the decoded string when it is not JSON."""
    kinesis = record.get("kinesis")
    if not isinstance(kinesis, Mapping) or not isinstance(kinesis.get("data"), str):
        return record
    try:
        text = base64.b64decode(kinesis["data"], validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return {"data": kinesis["data"]}
    try:
        data: Any = json.loads(text)
    except ValueError:
        data = text
    return {"data": data}
