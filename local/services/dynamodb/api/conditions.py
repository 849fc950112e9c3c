"""Condition and filter expressions as DynamoDB answers them where moto's parser and evaluator break.

DynamoDB refuses an expression it cannot parse with a ValidationException ("Invalid ConditionExpression: ...",
"Invalid FilterExpression: ..."), before it reads or writes anything; moto's parser raises a Python error there
(``ValueError: Bad NOT expression``, an ``IndexError`` on an unclosed ``IN (``...), which its server answers with
HTTP 500. DynamoDB compares values of different types as false ("a < :v" with a string attribute and a number
value is not true, and not an error); moto's evaluator compares the Python values and raises ``TypeError``. This
module owns moto's expression parser's entry (``ConditionExpressionParser.parse``, which every condition, filter
and the handlers' own checks go through) and the evaluation of the ordering comparisons. The legacy parameters
reach it as the expressions legacy.py rewrites them into.
"""

from __future__ import annotations

import logging
import sys
from functools import cache
from types import FrameType
from typing import Any

from local.patching import Patches, Target
from local.services.dynamodb.api import expressions

PATCHES = Patches()
_CMP = "moto.dynamodb.comparisons"
_TYPES = "moto.dynamodb.models.dynamo_type"
log = logging.getLogger("doctable.local.dynamodb")

# What moto's parser raises on an expression it cannot read; moto's own refusals (JsonRESTError) pass through.
PARSE_FAILURES = (ValueError, TypeError, AttributeError, IndexError, KeyError, NameError, RecursionError)
# The comparisons whose operands may be of different types: DynamoDB's answer is false, not an error.
ORDERING = (
    "OpLessThan",
    "OpGreaterThan",
    "OpLessThanOrEqual",
    "OpGreaterThanOrEqual",
    "FuncBetween",
    "FuncBeginsWith",
)
INVALID = "Invalid {kind}Expression: {detail}"


def _refusal(message: str) -> Exception:
    from moto.dynamodb.exceptions import MockValidationException

    return MockValidationException(message)


def _kind() -> str:
    """Which expression a parse is for, read from the request's operation that asked (Query and Scan filter)."""
    frame: FrameType | None = sys._getframe(2)
    for _ in range(6):
        if frame is None:
            break
        if frame.f_code.co_name in ("query", "scan", "_get_filter_expression"):
            return "Filter"
        frame = frame.f_back
    return "Condition"


@cache
def _reserved() -> frozenset[str]:
    """DynamoDB's reserved words (the developer guide's ReservedWords page, as moto ships the list)."""
    from moto.dynamodb.parsing.reserved_keywords import ReservedKeywords

    return frozenset(word.upper() for word in ReservedKeywords.get_reserved_keywords())


@PATCHES.replace(Target(_CMP, "ConditionExpressionParser.parse", ("self",)))
def parse(self: Any) -> Any:
    """Every condition and filter expression moto reads: parsed, checked and evaluated by expressions.py (moto's
    parser and operators are not used); a refusal is DynamoDB's ValidationException."""
    text = self.condition_expression
    if text is None:
        return expressions.Always()
    try:
        parser = expressions.parse(
            text, self.expression_attribute_names, self.expression_attribute_values, _reserved()
        )
    except expressions.ExpressionError as error:
        raise _refusal(INVALID.format(kind=_kind(), detail=str(error))) from None
    self.expr_attr_names_found = list(parser.names_used)
    self.expr_attr_values_found = list(parser.values_used)
    return expressions.Condition(parser.tree)  # type: ignore[attr-defined]


MISMATCH = "Type mismatch for attribute to update"
ONLY_DELETE_WITHOUT_VALUE = "One or more parameter values were invalid: Only DELETE action is allowed when no attribute value is specified"
DELETE_VALUE_TYPE = (
    "One or more parameter values were invalid: DELETE action with value is not supported for the type {type}"
)
ADD_VALUE_TYPE = "One or more parameter values were invalid: ADD action is not supported for the type {type}"


def attribute_updates_refusal(updates: Any) -> str | None:
    """Why DynamoDB refuses UpdateItem's legacy AttributeUpdates before applying them (a value but for DELETE, and a
    DELETE's value a set, an ADD's a number, a set or a list), or None."""
    for update in (updates or {}).values() if isinstance(updates, dict) else ():
        action, value = (update or {}).get("Action", "PUT"), (update or {}).get("Value")
        kind = next(iter(value)) if isinstance(value, dict) and value else None
        if kind is None and action != "DELETE":
            return ONLY_DELETE_WITHOUT_VALUE
        if kind is not None and action == "DELETE" and kind not in ("SS", "NS", "BS"):
            return DELETE_VALUE_TYPE.format(type=kind)
        if kind is not None and action == "ADD" and kind not in ("N", "L", "SS", "NS", "BS"):
            return ADD_VALUE_TYPE.format(type=kind)
    return None


_SETS = ("SS", "NS", "BS")


def _member(kind: str, value: Any) -> Any:
    """A set member as it compares: a number by its value, anything else as written."""
    import decimal

    return decimal.Decimal(value) if kind == "NS" else value


@PATCHES.replace(Target(_TYPES, "Item.update_with_attribute_updates", ("self", "attribute_updates")))
def update_with_attribute_updates(self: Any, attribute_updates: dict[str, Any]) -> None:
    """The legacy AttributeUpdates applied as DynamoDB applies them (legacy.py checked the request): PUT stores the
    value with its own type (moto turned B, BS and BOOL into S or L and deleted the attribute on a NULL); ADD adds a
    number exactly, or unites a set or appends to a list; DELETE without a value removes the attribute, with a set
    takes its members out (the attribute goes when none is left); an ADD or DELETE on an attribute of another type
    is "Type mismatch for attribute to update" (moto raised NotImplementedError or TypeError: HTTP 500)."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    from local.services.dynamodb.api import numbers

    for name, update in (attribute_updates or {}).items():
        action, value = update.get("Action", "PUT"), update.get("Value")
        current = self.attrs.get(name)
        if not isinstance(value, dict) or not value:
            if action == "DELETE":
                self.attrs.pop(name, None)
            continue
        kind, content = next(iter(value.items()))
        if action == "PUT":
            self.attrs[name] = DynamoType(value)
            continue
        if current is not None and current.type != kind:
            raise _refusal(MISMATCH)
        if action == "ADD" and kind == "N":
            try:
                total = numbers.combine(current.value if current is not None else "0", content)
            except numbers.Unstorable as refused:
                raise _refusal(str(refused)) from None
            self.attrs[name] = DynamoType({"N": total})
        elif action == "ADD":
            have = list(current.value) if current is not None else []
            if kind == "L":
                self.attrs[name] = DynamoType({"L": [*have, *content]})
            else:
                seen = {_member(kind, m) for m in have}
                self.attrs[name] = DynamoType(
                    {kind: have + [m for m in content if _member(kind, m) not in seen]}
                )
        elif current is not None:  # DELETE of set members
            gone = {_member(kind, m) for m in content}
            left = [m for m in current.value if _member(kind, m) not in gone]
            if left:
                self.attrs[name] = DynamoType({kind: left})
            else:
                del self.attrs[name]


def _ordering(name: str) -> Any:
    """The replacement of ``<name>.expr``: false when its operands cannot be compared (different types)."""

    @PATCHES.replace(Target(_CMP, f"{name}.expr", ("self", "item")))
    def expr(self: Any, item: Any) -> bool:
        try:
            return bool(PATCHES.original(expr)(self, item))
        except (TypeError, AttributeError):
            return False

    expr.__qualname__ = f"{name}.expr"
    return expr


ORDERING_EXPRS = tuple(_ordering(name) for name in ORDERING)

MOTO_TARGETS = (
    *PATCHES.targets,
    Target("moto.dynamodb.exceptions", "MockValidationException"),
    Target("moto.dynamodb.parsing.reserved_keywords", "ReservedKeywords.get_reserved_keywords"),
    Target(_TYPES, "DynamoType"),
)
