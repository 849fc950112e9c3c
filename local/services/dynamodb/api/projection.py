"""ProjectionExpression as DynamoDB reads and applies it (developer guide, "Projection expressions" and "Document
paths").

A projection is document paths separated by commas, read with the tokens and path rules of every expression
(expressions.py): a name or a ``#name``, ``.member`` and ``[index]`` steps. DynamoDB refuses, as "Invalid
ProjectionExpression: ...", a path of more than 32 levels, an index past a 32-bit integer, two paths one of which
contains the other ("overlap") and two that step into the same place once as a map and once as a list
("conflict"); applied to an item, each path keeps only what it names, a list element staying in a list of the
elements named, and a path into what is not there (or into a list as a map) keeps nothing. moto split the text
on commas and dots (``a[0]`` was a name), checked none of this, and answered a path through a list with HTTP 500.

This module owns moto's reading of a projection (``ProjectionExpressionParser.parse``, which every read with a
projection goes through) and its application (``Item.project``); parse hands ``Item.project`` the paths as lists
of names and indexes.
"""

from __future__ import annotations

from typing import Any

from local.patching import Patches, Target
from local.services.dynamodb.api import expressions

PATCHES = Patches()
_RESPONSES = "moto.dynamodb.responses"
_TYPES = "moto.dynamodb.models.dynamo_type"

LEVELS_MAX = 32
INDEX_MAX = 2**31 - 1
INVALID = "Invalid ProjectionExpression: {detail}"
TOO_DEEP = "The document path has too many nesting levels; nesting levels: {levels}"
INDEX_RANGE = "List index is not within the allowable range; index: [{index}]"
OVERLAP = (
    "Two document paths overlap with each other; must remove or rewrite one of these paths; path one: {one}, "
    "path two: {two}"
)
CONFLICT = (
    "Two document paths conflict with each other; must remove or rewrite one of these paths; path one: {one}, "
    "path two: {two}"
)

Path = list[str | int]


class Refused(Exception):
    """A projection DynamoDB refuses, with its message."""


def _shown(path: Path) -> str:
    return "[" + ", ".join(f"[{p}]" if isinstance(p, int) else p for p in path) + "]"


def clash(one: Path, two: Path) -> str | None:
    """Why two paths cannot be asked for together (overlap or conflict), or None."""
    for a, b in zip(one, two, strict=False):
        if a == b:
            continue
        if isinstance(a, int) != isinstance(b, int):
            return CONFLICT.format(one=_shown(one), two=_shown(two))
        return None
    return OVERLAP.format(one=_shown(one), two=_shown(two))


def paths(text: str, names: dict[str, str] | None, reserved: frozenset[str]) -> tuple[list[Path], list[str]]:
    """The document paths ``text`` names and the ``#names`` it used; Refused in DynamoDB's words."""
    size = len(text.encode("utf-8"))
    if size > expressions.EXPRESSION_SIZE_MAX:
        raise Refused(INVALID.format(detail=expressions.TOO_LONG.format(size=size)))
    try:
        parser = expressions.Parser(text, names, {}, reserved)
        if not parser.tokens:
            raise expressions.ExpressionError(expressions.EMPTY)
        found: list[Path] = []
        while True:
            path = list(parser._path()[1])
            found.append(path)
            token = parser._peek()
            if token is None:
                break
            if token[1] != ",":
                raise parser._fail()
            parser.at += 1
    except expressions.ExpressionError as error:
        raise Refused(INVALID.format(detail=str(error))) from None
    for path in found:
        if len(path) > LEVELS_MAX:
            raise Refused(INVALID.format(detail=TOO_DEEP.format(levels=len(path))))
        for part in path:
            if isinstance(part, int) and part > INDEX_MAX:
                raise Refused(INVALID.format(detail=INDEX_RANGE.format(index=part)))
    for i, one in enumerate(found):
        for two in found[i + 1 :]:
            problem = clash(one, two)
            if problem is not None:
                raise Refused(INVALID.format(detail=problem))
    return found, parser.names_used


@PATCHES.replace(Target(_RESPONSES, "ProjectionExpressionParser.parse", ("self",)))
def parse(self: Any) -> list[Path]:
    """A request's ProjectionExpression read as DynamoDB reads it (no projection: an empty list)."""
    from moto.dynamodb.exceptions import MockValidationException

    from local.services.dynamodb.api.conditions import _reserved

    text = self.projection_expression
    if text is None:
        return []
    try:
        found, used = paths(text, self.expression_attribute_names, _reserved())
    except Refused as refused:
        raise MockValidationException(str(refused)) from None
    self.expr_attr_names_found = list(used)
    return found


def _select(value: Any, rest: Path) -> Any:
    """What ``rest`` keeps of one value: the value, a ("M"|"L", {member|index: kept}) node, or None."""
    if not rest:
        return value
    part, below = rest[0], rest[1:]
    if isinstance(part, int):
        if value.type != "L" or part >= len(value.value):
            return None
        kept = _select(value.value[part], below)
        return None if kept is None else ("L", {part: kept})
    if value.type != "M" or part not in value.value:
        return None
    kept = _select(value.value[part], below)
    return None if kept is None else ("M", {part: kept})


def _merge(one: Any, two: Any) -> Any:
    if isinstance(one, tuple) and isinstance(two, tuple) and one[0] == two[0]:
        merged = dict(one[1])
        for key, value in two[1].items():
            merged[key] = _merge(merged[key], value) if key in merged else value
        return (one[0], merged)
    return two


def _built(node: Any) -> Any:
    """A kept node as a DynamoType: a list keeps its elements in index order."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    if not isinstance(node, tuple):
        return node
    kind, kept = node
    if kind == "L":
        return DynamoType({"L": [_built(kept[i]) for i in sorted(kept)]})
    return DynamoType({"M": {k: _built(v) for k, v in kept.items()}})


@PATCHES.replace(Target(_TYPES, "Item.project", ("self", "projection_expressions")))
def project(self: Any, projection_expressions: list[Path]) -> Any:
    """The item with only what the paths name (a path into what is not there keeps nothing)."""
    from moto.dynamodb.models.dynamo_type import Item

    kept: dict[str, Any] = {}
    for path in projection_expressions:
        name = path[0]
        if not isinstance(name, str) or name not in self.attrs:
            continue
        node = _select(self.attrs[name], list(path[1:]))
        if node is not None:
            kept[name] = _merge(kept[name], node) if name in kept else node
    return Item(self.hash_key, self.range_key, {k: _built(v) for k, v in kept.items()})


MOTO_TARGETS = (
    *PATCHES.targets,
    Target("moto.dynamodb.exceptions", "MockValidationException"),
    Target(_TYPES, "DynamoType"),
    Target(_TYPES, "Item"),
)
