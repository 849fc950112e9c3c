"""DynamoDB values and how an expression's tree holds for an item, as DynamoDB evaluates it.

A comparison of values of different types, or with a missing attribute, is false (``<>`` is the negation of
``=``); numbers compare as numbers, strings and binaries by their bytes; sets compare as sets; ``contains`` reads a
string, a binary, a set or a list; ``size`` counts a string's characters, a binary's bytes, a set's, list's or map's
members. Source: the developer guide's "Comparison operator and function reference"
(Expressions.OperatorsAndFunctions.html). Pure: it reads moto's DynamoType (``type``, ``value``) or AttributeValue
JSON, and imports nothing of moto. The tree is expressions.py's.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any


@dataclass(frozen=True)
class Value:
    """A DynamoDB value: its type (S, N, B, SS, NS, BS, BOOL, NULL, L, M) and its content."""

    type: str
    content: Any


def value_of(raw: Any) -> Value:
    """A Value from moto's DynamoType (``type``, ``value``) or AttributeValue JSON (``{"S": "x"}``)."""
    if isinstance(raw, Value):
        return raw
    if isinstance(raw, dict):
        (kind, content), *_ = raw.items()
    else:
        kind, content = raw.type, raw.value
    if kind == "L":
        content = [value_of(v) for v in content]
    elif kind == "M":
        content = {k: value_of(v) for k, v in content.items()}
    elif kind == "B":
        content = _bytes(content)
    elif kind == "BS":
        content = [_bytes(v) for v in content]
    return Value(kind, content)


def _bytes(content: Any) -> bytes:
    if isinstance(content, bytes):
        return content
    try:
        return base64.b64decode(content, validate=True)
    except (ValueError, TypeError):
        return str(content).encode("utf-8")


def shown(value: Value) -> str:
    return f"{value.type}:{value.content if not isinstance(value.content, bytes) else base64.b64encode(value.content).decode()}"


def _number(value: Value) -> Decimal:
    try:
        return Decimal(value.content)
    except (InvalidOperation, TypeError):
        return Decimal(0)


def order(a: Value, b: Value) -> int:
    """-1, 0 or 1 for two values of the same scalar type (N, S or B)."""
    if a.type == "N":
        x, y = _number(a), _number(b)
    elif a.type == "S":
        x, y = a.content.encode("utf-8"), b.content.encode("utf-8")
    else:
        x, y = a.content, b.content
    return (x > y) - (x < y)


def equal(a: Value | None, b: Value | None) -> bool:
    if a is None or b is None or a.type != b.type:
        return False
    if a.type == "N":
        return _number(a) == _number(b)
    if a.type == "NS":
        return {_number(Value("N", v)) for v in a.content} == {_number(Value("N", v)) for v in b.content}
    if a.type in ("SS", "BS"):
        return set(a.content) == set(b.content)
    if a.type == "L":
        return len(a.content) == len(b.content) and all(
            equal(x, y) for x, y in zip(a.content, b.content, strict=True)
        )
    if a.type == "M":
        return a.content.keys() == b.content.keys() and all(
            equal(v, b.content[k]) for k, v in a.content.items()
        )
    return bool(a.content == b.content)


def _ordered(op: str, a: Value | None, b: Value | None) -> bool:
    if a is None or b is None or a.type != b.type or a.type not in ("N", "S", "B"):
        return False
    sign = order(a, b)
    return {"<": sign < 0, "<=": sign <= 0, ">": sign > 0, ">=": sign >= 0}[op]


def _size(value: Value | None) -> Value | None:
    if value is None or value.type in ("N", "BOOL", "NULL"):
        return None
    if value.type == "S":
        return Value("N", str(len(value.content)))
    return Value("N", str(len(value.content)))


def _contains(container: Value | None, part: Value | None) -> bool:
    if container is None or part is None:
        return False
    if container.type == "S" and part.type == "S":
        return part.content in container.content
    if container.type == "B" and part.type == "B":
        return part.content in container.content
    if container.type in ("SS", "NS", "BS") and part.type == container.type[0]:
        return any(equal(Value(part.type, member), part) for member in container.content)
    if container.type == "L":
        return any(equal(member, part) for member in container.content)
    return False


def _begins(subject: Value | None, prefix: Value | None) -> bool:
    if subject is None or prefix is None or subject.type != prefix.type or subject.type not in ("S", "B"):
        return False
    return bool(subject.content.startswith(prefix.content))


class Condition:
    """An expression's tree, evaluated against an item (moto's Item, or None) as DynamoDB evaluates it."""

    def __init__(self, tree: Any):
        self.tree = tree

    def expr(self, item: Any) -> bool:
        attributes = getattr(item, "attrs", None) or {}
        return self._holds(self.tree, attributes)

    def _operand(self, node: Any, attributes: Any) -> Value | None:
        kind = node[0]
        if kind == "value":
            return node[1]  # type: ignore[no-any-return]
        if kind == "size":
            return _size(self._operand(node[1], attributes))
        parts = node[1]
        raw = attributes.get(parts[0])
        current = value_of(raw) if raw is not None else None
        for part in parts[1:]:
            if current is None:
                return None
            if isinstance(part, int):
                current = (
                    current.content[part] if current.type == "L" and part < len(current.content) else None
                )
            else:
                current = current.content.get(part) if current.type == "M" else None
        return current

    def _holds(self, node: Any, attributes: Any) -> bool:
        kind = node[0]
        if kind == "or":
            return self._holds(node[1], attributes) or self._holds(node[2], attributes)
        if kind == "and":
            return self._holds(node[1], attributes) and self._holds(node[2], attributes)
        if kind == "not":
            return not self._holds(node[1], attributes)
        if kind == "paren":
            return self._holds(node[1], attributes)
        if kind == "cmp":
            left, right = self._operand(node[2], attributes), self._operand(node[3], attributes)
            if node[1] == "=":
                return equal(left, right)
            if node[1] == "<>":
                return not equal(left, right)
            return _ordered(node[1], left, right)
        if kind == "between":
            subject = self._operand(node[1], attributes)
            low, high = self._operand(node[2], attributes), self._operand(node[3], attributes)
            return _ordered(">=", subject, low) and _ordered("<=", subject, high)
        if kind == "in":
            subject = self._operand(node[1], attributes)
            return any(equal(subject, self._operand(option, attributes)) for option in node[2])
        return self._function(node[1], [self._operand(a, attributes) for a in node[2]])

    @staticmethod
    def _function(name: str, arguments: list[Value | None]) -> bool:
        subject = arguments[0]
        checks: dict[str, Callable[[], bool]] = {
            "attribute_exists": lambda: subject is not None,
            "attribute_not_exists": lambda: subject is None,
            "attribute_type": lambda: subject is not None and arguments[1] is not None
            and subject.type == arguments[1].content,
            "begins_with": lambda: _begins(subject, arguments[1]),
            "contains": lambda: _contains(subject, arguments[1]),
        }  # fmt: skip
        return checks[name]()


class Always:
    """No expression: every item passes (moto's OpDefault)."""

    def expr(self, item: Any) -> bool:
        return True
