"""DynamoDB's condition and filter expressions, parsed, checked and evaluated as DynamoDB does it.

A replacement of moto's ConditionExpressionParser and its operators, not a patch of them: moto's parser accepts
expressions DynamoDB refuses (a reserved word, a function on a constant, BETWEEN with bounds out of order, a list
compared with <), raises Python errors on others (HTTP 500), and its operators compare Python values, so a string
attribute compared with a number raises where DynamoDB answers false. Here an expression is read once into a tree
(``parse``: every refusal in DynamoDB's words, "Invalid ConditionExpression: ..."), which evaluation.py evaluates
against an item (``Condition.expr``) with DynamoDB's rules.

Sources: the developer guide's "Comparison operator and function reference" (Expressions.OperatorsAndFunctions)
and "Condition expressions" pages. Pure: it reads values as objects with ``type`` and ``value`` (moto's
DynamoType) or AttributeValue JSON, and imports nothing of moto.
"""

from __future__ import annotations

import re
from typing import Any

from local.services.dynamodb.api.evaluation import Always, Condition, Value, order, shown, value_of

__all__ = ["Always", "Condition", "ExpressionError", "Parser", "Value", "parse", "tokenize"]

TYPES = ("B", "NULL", "SS", "BOOL", "L", "BS", "N", "NS", "S", "M")
FUNCTIONS = {
    "attribute_exists": 1,
    "attribute_not_exists": 1,
    "attribute_type": 2,
    "begins_with": 2,
    "contains": 2,
    "size": 1,
}
# Functions of update expressions: known to the parser, "not allowed" in a condition.
UPDATE_FUNCTIONS = ("if_not_exists", "list_append")
# Functions whose first operand must be a document path; the others read a value as well (begins_with(:v, a),
# size(:v), attribute_type(:v, :t)).
PATH_FIRST = ("attribute_exists", "attribute_not_exists")
SIZED = ("S", "B", "SS", "NS", "BS", "L", "M")  # the types size() is defined for
COMPARATORS = ("=", "<>", "<", "<=", ">", ">=")
EXPRESSION_SIZE_MAX = 4096  # bytes of an expression string (the developer guide's limits page)
# Nested conditions read before the expression is refused: Python's stack is not DynamoDB's (four frames a level).
DEPTH_MAX = 200
OPERATORS_MAX = 300  # operators and functions in one expression (the developer guide's limits page)

# DynamoDB's words (those moto copies from AWS, and the ones users report).
EMPTY = "The expression can not be empty;"
SYNTAX = 'Syntax error; token: "{token}", near: "{near}"'
END_OF_INPUT = 'Syntax error; token: <EOF>, near: "{near}"'
NAME_UNDEFINED = (
    "An expression attribute name used in the document path is not defined; attribute name: {name}"
)
VALUE_UNDEFINED = "An expression attribute value used in expression is not defined; attribute value: {value}"
RESERVED = "Attribute name is a reserved keyword; reserved keyword: {word}"
FUNCTION_UNKNOWN = "Invalid function name; function: {name}"
FUNCTION_MISPLACED = "The function is not allowed to be used this way in an expression; function: {name}"
OPERANDS = "Incorrect number of operands for operator or function; operator or function: {name}, number of operands: {count}"
NEEDS_PATH = "Operator or function requires a document path; operator or function: {name}"
OPERAND_TYPE = (
    "Incorrect operand type for operator or function; operator or function: {name}, operand type: {type}"
)
TYPE_NAME = "Invalid attribute type name found; type: {type}, valid types: {{ B,NULL,SS,BOOL,L,BS,N,NS,S,M }}"
BETWEEN_TYPES = (
    "The BETWEEN operator requires same data type for lower and upper bounds; lower bound operand: AttributeValue: "
    "{{{low}}}, upper bound operand: AttributeValue: {{{high}}}"
)
BETWEEN_ORDER = (
    "The BETWEEN operator requires upper bound to be greater than or equal to lower bound; lower bound operand: "
    "AttributeValue: {{{low}}}, upper bound operand: AttributeValue: {{{high}}}"
)
REDUNDANT = "The expression has redundant parentheses;"
TOO_LONG = "Expression size has exceeded the maximum allowed size; expression size: {size}"
TOO_DEEP = "The expression has too many nested levels"
TOO_MANY_OPERATORS = "The expression contains too many operators; operator count: {count}"
_KEYWORD_OPERATORS = ("AND", "OR", "NOT", "IN", "BETWEEN")

_TOKEN = re.compile(
    r"\s*(?:(?P<name>#[A-Za-z0-9_]+)|(?P<value>:[A-Za-z0-9_]+)|(?P<word>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<index>\[\s*\d+\s*\])|(?P<op><>|<=|>=|=|<|>)|(?P<punct>[(),.]))"
)


class ExpressionError(Exception):
    """An expression DynamoDB refuses: the message after "Invalid <kind>Expression: "."""


# ---------------------------------------------------------------------------------------------------- reading
def tokenize(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    position = 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            bad = text[position:].lstrip()[:1]
            raise ExpressionError(
                SYNTAX.format(token=bad, near=text[max(0, position - 5) : position + 5].strip())
            )
        kind = match.lastgroup or ""
        tokens.append((kind, match.group(kind)))
        position = match.end()
    return tokens


class Parser:
    """A recursive-descent reader of one expression into a tree of tuples:
    ("or"|"and", a, b), ("not", a), ("paren", a), ("cmp", op, x, y), ("between", x, low, high),
    ("in", x, [y...]), ("func", name, [args]); operands ("path", [parts]), ("value", Value, its placeholder), ("size", path)."""

    def __init__(
        self, text: str, names: dict[str, str] | None, values: dict[str, Any] | None, reserved: frozenset[str]
    ):
        self.text = text
        self.tokens = tokenize(text)
        self.at = 0
        self.names = names or {}
        self.values = values or {}
        self.reserved = reserved
        self.names_used: list[str] = []
        self.values_used: list[str] = []
        self.depth = 0

    def _peek(self, offset: int = 0) -> tuple[str, str] | None:
        index = self.at + offset
        return self.tokens[index] if index < len(self.tokens) else None

    def _near(self) -> str:
        return " ".join(t for _, t in self.tokens[max(0, self.at - 1) : self.at + 2])

    def _fail(self) -> ExpressionError:
        token = self._peek()
        if token is None:
            return ExpressionError(END_OF_INPUT.format(near=" ".join(t for _, t in self.tokens[-2:])))
        return ExpressionError(SYNTAX.format(token=token[1], near=self._near()))

    def _take(self, text: str) -> None:
        token = self._peek()
        if token is None or token[1].upper() != text.upper():
            raise self._fail()
        self.at += 1

    def _keyword(self, word: str) -> bool:
        token = self._peek()
        if token is not None and token[0] == "word" and token[1].upper() == word:
            self.at += 1
            return True
        return False

    def parse(self) -> Any:
        if not self.tokens:
            raise ExpressionError(EMPTY)
        tree = self._or()
        if self._peek() is not None:
            raise self._fail()
        return tree

    def _or(self) -> Any:
        self.depth += 1
        if self.depth > DEPTH_MAX:
            raise ExpressionError(TOO_DEEP)
        tree = self._and()
        while self._keyword("OR"):
            tree = ("or", tree, self._and())
        self.depth -= 1
        return tree

    def _and(self) -> Any:
        tree = self._not()
        while self._keyword("AND"):
            tree = ("and", tree, self._not())
        return tree

    def _not(self) -> Any:
        negations = 0
        while self._keyword("NOT"):
            negations += 1
            if negations > DEPTH_MAX:
                raise ExpressionError(TOO_DEEP)
        tree = self._primary()
        for _ in range(negations):
            tree = ("not", tree)
        return tree

    def _primary(self) -> Any:
        token = self._peek()
        if token is None:
            raise self._fail()
        if token[1] == "(":
            self.at += 1
            inner = self._or()
            self._take(")")
            if inner[0] == "paren":
                raise ExpressionError(REDUNDANT)
            return ("paren", inner)
        following = self._peek(1)
        if token[0] == "word" and following is not None and following[1] == "(" and token[1] != "size":
            return self._function(condition=True)
        left = self._operand()
        if self._keyword("BETWEEN"):
            low = self._operand()
            if not self._keyword("AND"):
                raise self._fail()
            return _between(left, low, self._operand())
        if self._keyword("IN"):
            return ("in", left, self._parenthesized_operands())
        comparator = self._peek()
        if comparator is None or comparator[0] != "op":
            if left[0] == "size":
                raise ExpressionError(FUNCTION_MISPLACED.format(name="size"))
            raise self._fail()
        self.at += 1
        right = self._operand()
        for side in (left, right):
            if (
                comparator[1] not in ("=", "<>")
                and side[0] == "value"
                and side[1].type not in ("N", "S", "B")
            ):
                raise ExpressionError(OPERAND_TYPE.format(name=comparator[1], type=side[1].type))
        return ("cmp", comparator[1], left, right)

    def _parenthesized_operands(self) -> list[Any]:
        """``( operand, operand ... )``: IN's options, a function's arguments."""
        self._take("(")
        operands = [self._operand()]
        while self._peek() is not None and self._peek()[1] == ",":  # type: ignore[index]
            self.at += 1
            operands.append(self._operand())
        self._take(")")
        return operands

    def _function(self, condition: bool) -> Any:
        _, name = self._peek()  # type: ignore[misc]
        if name in UPDATE_FUNCTIONS:
            raise ExpressionError(FUNCTION_MISPLACED.format(name=name))
        if name not in FUNCTIONS:
            raise ExpressionError(FUNCTION_UNKNOWN.format(name=name))
        if condition == (name == "size"):
            raise ExpressionError(FUNCTION_MISPLACED.format(name=name))
        self.at += 1
        arguments = self._parenthesized_operands()
        if len(arguments) != FUNCTIONS[name]:
            raise ExpressionError(OPERANDS.format(name=name, count=len(arguments)))
        first = arguments[0]
        if name in PATH_FIRST and first[0] != "path":
            raise ExpressionError(NEEDS_PATH.format(name=name))
        if name == "size" and first[0] == "size":
            raise ExpressionError(OPERAND_TYPE.format(name=name, type="N"))
        if name == "size" and first[0] == "value" and first[1].type not in SIZED:
            raise ExpressionError(OPERAND_TYPE.format(name=name, type=first[1].type))
        if name == "begins_with" and first[0] == "value" and first[1].type not in ("S", "B"):
            raise ExpressionError(OPERAND_TYPE.format(name=name, type=first[1].type))
        if name == "attribute_type":
            kind = arguments[1]
            if kind[0] != "value":
                raise ExpressionError(OPERAND_TYPE.format(name=name, type="a document path"))
            if kind[0] == "value" and (kind[1].type != "S" or kind[1].content not in TYPES):
                raise ExpressionError(TYPE_NAME.format(type=kind[1].content))
        if name == "begins_with" and arguments[1][0] == "value" and arguments[1][1].type not in ("S", "B"):
            raise ExpressionError(OPERAND_TYPE.format(name=name, type=arguments[1][1].type))
        if name == "size":
            return ("size", arguments[0])
        return ("func", name, arguments)

    def _operand(self) -> Any:
        token = self._peek()
        if token is None:
            raise self._fail()
        kind, text = token
        if kind == "value":
            self.at += 1
            if text not in self.values:
                raise ExpressionError(VALUE_UNDEFINED.format(value=text))
            self.values_used.append(text)
            return ("value", value_of(self.values[text]), text)
        if kind == "word" and text == "size" and (self._peek(1) or ("", ""))[1] == "(":
            self.depth += 1
            if self.depth > DEPTH_MAX:
                raise ExpressionError(TOO_DEEP)
            found = self._function(condition=False)
            self.depth -= 1
            return found
        if kind == "word" and (self._peek(1) or ("", ""))[1] == "(":
            if text in FUNCTIONS or text in UPDATE_FUNCTIONS:
                raise ExpressionError(FUNCTION_MISPLACED.format(name=text))
            raise ExpressionError(FUNCTION_UNKNOWN.format(name=text))
        if kind in ("word", "name"):
            return self._path()
        raise self._fail()

    def _path(self) -> Any:
        parts: list[str | int] = [self._name()]
        while True:
            token = self._peek()
            if token is not None and token[0] == "index":
                parts.append(int(token[1].strip("[] ")))
                self.at += 1
            elif token is not None and token[1] == ".":
                self.at += 1
                parts.append(self._name())
            else:
                return ("path", parts)

    def _name(self) -> str:
        token = self._peek()
        if token is None or token[0] not in ("word", "name"):
            raise self._fail()
        self.at += 1
        kind, text = token
        if kind == "name":
            if text not in self.names:
                raise ExpressionError(NAME_UNDEFINED.format(name=text))
            self.names_used.append(text)
            return self.names[text]
        if text.upper() in self.reserved:
            raise ExpressionError(RESERVED.format(word=text))
        return text


def _between(subject: Any, low: Any, high: Any) -> Any:
    for operand in (subject, low, high):
        if operand[0] == "value" and operand[1].type not in ("N", "S", "B"):
            raise ExpressionError(OPERAND_TYPE.format(name="BETWEEN", type=operand[1].type))
    if low[0] == "value" and high[0] == "value":
        a, b = low[1], high[1]
        if a.type != b.type:
            raise ExpressionError(BETWEEN_TYPES.format(low=shown(a), high=shown(b)))
        if a.type in ("N", "S", "B") and order(a, b) > 0:
            raise ExpressionError(BETWEEN_ORDER.format(low=shown(a), high=shown(b)))
    return ("between", subject, low, high)


def parse(text: str, names: dict[str, str] | None, values: dict[str, Any] | None,
          reserved: frozenset[str] = frozenset()) -> Parser:  # fmt: skip
    """The expression read and checked (its tree in ``.tree``), or ExpressionError in DynamoDB's words."""
    if len(text.encode("utf-8")) > EXPRESSION_SIZE_MAX:
        raise ExpressionError(TOO_LONG.format(size=len(text.encode("utf-8"))))
    parser = Parser(text, names, values, reserved)
    operators = count_operators(parser.tokens)
    if operators > OPERATORS_MAX:
        raise ExpressionError(
            TOO_MANY_OPERATORS.format(count=OPERATORS_MAX + 1)
        )  # DynamoDB stops counting there
    parser.tree = parser.parse()  # type: ignore[attr-defined]
    return parser


def count_operators(tokens: list[tuple[str, str]]) -> int:
    """The operators and functions of an expression's tokens as DynamoDB counts them: each comparator, AND, OR,
    NOT, IN, BETWEEN (its AND not again) and function call; parentheses and operands are not operators."""
    count = 0
    for at, (kind, text) in enumerate(tokens):
        following = tokens[at + 1][1] if at + 1 < len(tokens) else ""
        if kind == "op" or (kind == "word" and following == "(" and text not in _KEYWORD_OPERATORS):
            count += 1
        elif kind == "word" and text.upper() in _KEYWORD_OPERATORS:
            count += 1 if text.upper() != "BETWEEN" else 0  # the AND that closes a BETWEEN counts for it
    return count
