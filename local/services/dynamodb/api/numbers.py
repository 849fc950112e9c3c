"""Number arithmetic of updates as DynamoDB does it: exact, then held to what a number may be (API reference,
AttributeValue "N": 38 significant digits, a magnitude from 1E-130 to 9.99E+125).

``SET a = :x + :y``, ``SET a = a - :y``, ``ADD a :n`` and the legacy ADD compute exactly; a result DynamoDB cannot
store is refused: past 38 significant digits or a magnitude of 1E+126 is "Number overflow. Attempting to store a
number with magnitude larger than supported range" (DynamoDB says so for both: ``1E+50 + 1`` has 51 digits), below
1E-130 "Number underflow...". moto added numbers with Python's ``int`` on any text without a dot, an HTTP 500 on
``9E+125``, and stored any result. This module owns moto's ``DynamoType.__add__`` and ``__sub__`` (which every
update expression's arithmetic and ADD go through), and the canonical form DynamoDB gives every number it stores
(plain decimal: '1e3' is read back as '1000', '007' as '7'), which wire.py writes into each request before moto
reads it (moto stored the text as sent).
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


def canonical(number: decimal.Decimal) -> str:
    """A number as DynamoDB writes it back: plain decimal, never an exponent, no sign on zero, no leading or
    trailing zero that carries nothing ('1.0e3' is '1000', '.5' '0.5', '-0.0' '0')."""
    if number.is_zero():
        return "0"
    return format(number.normalize(_EXACT), "f")


def text_of(number: decimal.Decimal) -> str:
    """A result of arithmetic as DynamoDB stores it (canonical); Unstorable past its range or precision."""
    if number.is_zero():
        return "0"
    digits = "".join(map(str, number.normalize(_EXACT).as_tuple().digits))
    if len(digits) > 38 or number.adjusted() > 125:
        raise Unstorable(OVERFLOW)
    if number.adjusted() < -130:
        raise Unstorable(UNDERFLOW)
    return canonical(number)


def normalized(value: Any) -> tuple[Any, bool]:
    """A request's JSON with every number value ({"N": ...}, and each member of {"NS": [...]}) in canonical form,
    and whether anything changed (numbers already checked: each is one)."""
    if isinstance(value, list):
        items = [normalized(v) for v in value]
        return [v for v, _ in items], any(c for _, c in items)
    if not isinstance(value, dict):
        return value, False
    if len(value) == 1 and isinstance(value.get("N"), str):
        text = canonical(decimal.Decimal(value["N"]))
        return {"N": text}, text != value["N"]
    if len(value) == 1 and isinstance(value.get("NS"), list) and all(isinstance(n, str) for n in value["NS"]):
        texts = [canonical(decimal.Decimal(n)) for n in value["NS"]]
        return {"NS": texts}, texts != value["NS"]
    members = {k: normalized(v) for k, v in value.items()}
    return {k: v for k, (v, _) in members.items()}, any(c for _, c in members.values())


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
