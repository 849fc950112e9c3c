"""Number arithmetic of updates as DynamoDB does it: exact, then held to what a number may be (API reference,
AttributeValue "N": 38 significant digits, a magnitude from 1E-130 to 9.99E+125).

``SET a = :x + :y``, ``SET a = a - :y``, ``ADD a :n`` and the legacy ADD compute exactly; a result DynamoDB cannot
store is refused: past 38 significant digits or a magnitude of 1E+126 is "Number overflow. Attempting to store a
number with magnitude larger than supported range" (DynamoDB says so for both: ``1E+50 + 1`` has 51 digits), below
1E-130 "Number underflow...". moto added numbers with Python's ``int`` on any text without a dot, an HTTP 500 on
``9E+125``, and stored any result. This module owns moto's ``DynamoType.__add__`` and ``__sub__`` (which every
update expression's arithmetic and ADD go through).
"""

from __future__ import annotations

import decimal
from typing import Any

from local.patching import Patches, Target

PATCHES = Patches()
_TYPES = "moto.dynamodb.models.dynamo_type"
OVERFLOW = "Number overflow. Attempting to store a number with magnitude larger than supported range"
UNDERFLOW = "Number underflow. Attempting to store a number with magnitude smaller than supported range"
OPERAND_TYPE = "An operand in the update expression has an incorrect data type"
_EXACT = decimal.Context(prec=400)


class Unstorable(Exception):
    """A result DynamoDB cannot store, with its message."""


def text_of(number: decimal.Decimal) -> str:
    """A result as DynamoDB writes it back: an integer in full, anything else without trailing zeros."""
    if number.is_zero():
        return "0"
    digits = "".join(map(str, number.normalize(_EXACT).as_tuple().digits))
    if len(digits) > 38 or number.adjusted() > 125:
        raise Unstorable(OVERFLOW)
    if number.adjusted() < -130:
        raise Unstorable(UNDERFLOW)
    if number == number.to_integral_value():
        return str(int(number))
    return format(number.normalize(_EXACT), "f")


def combine(left: str, right: str, subtract: bool = False) -> str:
    """``left + right`` (or ``-``) of two DynamoDB numbers' texts, exactly; Unstorable when DynamoDB refuses it."""
    a, b = decimal.Decimal(left), decimal.Decimal(right)
    return text_of(_EXACT.subtract(a, b) if subtract else _EXACT.add(a, b))


def _refusal(message: str) -> Exception:
    from moto.dynamodb.exceptions import MockValidationException

    return MockValidationException(message)


def _arithmetic(name: str, subtract: bool) -> Any:
    @PATCHES.replace(Target(_TYPES, f"DynamoType.{name}", ("self", "other")))
    def operation(self: Any, other: Any) -> Any:
        from moto.dynamodb.models.dynamo_type import DynamoType

        if self.type != "N" or other.type != "N":
            raise _refusal(OPERAND_TYPE)
        try:
            return DynamoType({"N": combine(self.value, other.value, subtract)})
        except Unstorable as refused:
            raise _refusal(str(refused)) from None

    operation.__qualname__ = f"DynamoType.{name}"
    return operation


ADD = _arithmetic("__add__", subtract=False)
SUB = _arithmetic("__sub__", subtract=True)
MOTO_TARGETS = (
    *PATCHES.targets,
    Target("moto.dynamodb.exceptions", "MockValidationException"),
    Target(_TYPES, "DynamoType"),
)
