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


@PATCHES.replace(Target(_TYPES, "Item.update_with_attribute_updates", ("self", "attribute_updates")))
def update_with_attribute_updates(self: Any, attribute_updates: dict[str, Any]) -> None:
    """The legacy AttributeUpdates: a PUT stores the value with its own type (moto turned B, BS and BOOL into S or
    L and deleted the attribute on a NULL); ADD and DELETE are moto's; none at all upserts the key."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    if not attribute_updates:
        return  # an UpdateItem with no update: the item is made from its key alone (moto: HTTP 500)
    rest: dict[str, Any] = {}
    for name, update in attribute_updates.items():
        if update.get("Action", "PUT") == "PUT" and isinstance(update.get("Value"), dict) and update["Value"]:
            self.attrs[name] = DynamoType(update["Value"])
        else:
            rest[name] = update
    if rest:
        PATCHES.original(update_with_attribute_updates)(self, rest)


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
