"""An update expression's functions as DynamoDB evaluates them (developer guide, "Update expressions", SET):
``list_append(a, b)`` of two lists, ``if_not_exists(path, value)``.

``list_append`` with an operand that is not there is "The provided expression refers to an attribute that does
not exist in the item", whichever side it is on; with an operand that is not a list, "Incorrect operand type for
operator or function". moto refused a missing first operand and met a missing second one with an assertion (HTTP
500). This module owns moto's evaluation of the functions (``UpdateExpressionFunctionEvaluator.process_function``).

Two actions whose paths overlap (one is the other or inside it: ``a`` and ``a.b``, ``a[1]`` and ``a[1][1]``) are
"Invalid UpdateExpression: Two document paths overlap with each other; ...", two that step into the same place
once as a map and once as a list (``a.b`` and ``a[1]``) "... conflict with each other; ...", before the item is
read, as for a projection (projection.py's rule). moto compared the paths' text, missing list indexes, names given
by ``#placeholder`` and conflicts (``OverlappingPathsValidator.check_for_overlapping_paths``, owned here). A SET
value with a second ``+`` or ``-`` is the grammar's syntax error (moto evaluated the chain); a key attribute may
be read by an action (``SET n = p``), only writing one is refused (moto refused any path naming it;
``UpdateHashRangeKeyValidator._processing_map``, owned here).
"""

from __future__ import annotations

import functools
from typing import Any

from local.patching import Patches, Target
from local.services.dynamodb.api import projection

PATCHES = Patches()
_VALIDATORS = "moto.dynamodb.parsing.validators"
MISSING = "The provided expression refers to an attribute that does not exist in the item"


@PATCHES.replace(Target(_VALIDATORS, "UpdateExpressionFunctionEvaluator.process_function", ("self", "node")))
def process_function(self: Any, node: Any) -> Any:
    """list_append refuses an operand that is not there, on either side; the rest is moto's."""
    from moto.dynamodb.exceptions import MockValidationException
    from moto.dynamodb.parsing.ast_nodes import NoneExistingPath  # type: ignore[attr-defined]

    if node.get_function_name() == "list_append" and any(
        isinstance(node.get_nth_argument(n), NoneExistingPath) for n in (1, 2)
    ):
        raise MockValidationException(MISSING)
    return PATCHES.original(process_function)(self, node)


@PATCHES.replace(
    Target(_VALIDATORS, "OverlappingPathsValidator.check_for_overlapping_paths", ("self", "node"))
)
def check_for_overlapping_paths(self: Any, node: Any) -> Any:
    """Every two actions' paths, names resolved and indexes kept: an overlap or a conflict is refused; before it,
    a SET value adding or subtracting more than two operands is the syntax error it is on DynamoDB."""
    for action in node.find_clauses([_action_classes()[0]]):
        _one_operator_at_most(action.children[1])
    actions = node.find_clauses(_action_classes())
    names = self.expression_attribute_names or {}
    found = [(_path(action.children[0], names), _lone_placeholder(action.children[0])) for action in actions]
    for i, (one, lone) in enumerate(found):
        for two, other_lone in found[i + 1 :]:
            # a path that is one #placeholder alone clashes only with the same path (moto's note from AWS)
            if (lone or other_lone) and one != two:
                continue
            clash = projection.clash(one, two)
            if clash is not None:
                raise _invalid(f"Invalid UpdateExpression: {clash}")
    return node


@PATCHES.replace(Target(_VALIDATORS, "UpdateHashRangeKeyValidator._processing_map", ("self",)))
def key_targets_map(self: Any) -> dict[Any, Any]:
    """The key check on what each action writes: a key attribute may be read (SET n = p), never written (moto
    refused every path naming a key, operands included)."""
    ast = _ast()

    return {ast.UpdateExpression: functools.partial(_no_key_written, self)}


def _no_key_written(validator: Any, node: Any) -> Any:
    for action in node.find_clauses(_action_classes()):
        validator.check_for_hash_or_range_key(action.children[0])
    return node


def _action_classes() -> list[Any]:
    ast = _ast()

    return [ast.UpdateExpressionSetAction, ast.UpdateExpressionAddAction, ast.UpdateExpressionRemoveAction,
            ast.UpdateExpressionDeleteAction]  # fmt: skip


def _one_operator_at_most(value: Any) -> None:
    """``a + b + c``: DynamoDB's grammar has one ``+`` or ``-`` per SET value; the second is a syntax error, near
    the tokens around it (moto evaluated the chain)."""
    ast = _ast()

    children = getattr(value, "children", None) or []
    if len(children) == 3 and isinstance(children[0], ast.UpdateExpressionValue):
        inner = children[0].children or []
        if len(inner) == 3:
            operator = children[1].children[0]
            near = f"{_leaves(inner[2])[-1]} {operator} {_leaves(children[2])[0]}"
            raise _invalid(f'Invalid UpdateExpression: Syntax error; token: "{operator}", near: "{near}"')


def _leaves(node: Any) -> list[str]:
    """The source tokens under ``node``, in order (a name, a value placeholder, a path's names)."""
    if isinstance(node, str):
        return [node]
    found: list[str] = []
    for child in getattr(node, "children", None) or []:
        found += _leaves(child)
    return found or [""]


# An action stepping into a value of another kind (SET a.c where a is a string, REMOVE b.c where b is a list, a[1]
# of a map) is "The document path provided in the update expression is invalid for update": moto set nothing and
# answered success, or failed popping a string (HTTP 500).
_EXECUTORS = "moto.dynamodb.parsing.executors"


@PATCHES.replace(Target(_EXECUTORS, "NodeExecutor.get_item_before_end_of_path", ("self", "item")))
def get_item_before_end_of_path(self: Any, item: Any) -> Any:
    """The container an action changes, refused when it is not the kind its last step needs."""
    return _container_checked(self, PATCHES.original(get_item_before_end_of_path)(self, item))


@PATCHES.replace(
    Target(_EXECUTORS, "NodeExecutor.get_item_part_in_which_to_perform_action", ("self", "item"))
)
def get_item_part_in_which_to_perform_action(self: Any, item: Any) -> Any:
    """moto's alias of the above, which SET and REMOVE call."""
    return _container_checked(self, PATCHES.original(get_item_part_in_which_to_perform_action)(self, item))


def _container_checked(executor: Any, part: Any) -> Any:
    from moto.dynamodb.exceptions import InvalidUpdateExpressionInvalidDocumentPath
    from moto.dynamodb.models.dynamo_type import DynamoType

    ast = _ast()

    if isinstance(part, DynamoType):
        by_index = isinstance(executor.get_element_to_action(), ast.ExpressionSelector)
        if not (part.is_list() if by_index else part.is_map()):
            raise InvalidUpdateExpressionInvalidDocumentPath()
    return part


# The actions' order where it shows (the developer guide, "Update expressions"): SETs past a list's end append in
# the order of their element numbers ("sorted in order by element number"), and REMOVEs of list elements name the
# elements of the list as it was (applied after the SETs, from the highest index down: none shifts another, nor a
# SET's element). moto ran the actions as written: SET a[84], a[17] appended 84's value first; REMOVE a[1], a[2]
# removed the original a[1] and a[3]; REMOVE a[1] SET a[3] replaced the original a[4].
@PATCHES.replace(Target(_EXECUTORS, "UpdateExpressionExecutor.execute", ("self", "node")))
def execute(self: Any, node: Any = None) -> None:
    """The whole update's actions, list elements ordered as DynamoDB applies them; a sub-tree as moto does."""
    if node is not None:
        return PATCHES.original(execute)(self, node)
    ast = _ast()
    actions = list(self.update_ast.find_clauses(_action_classes()))
    places = [
        i for i, a in enumerate(actions) if isinstance(a, ast.UpdateExpressionSetAction) and _indexed(a)
    ]
    for place, action in zip(places, sorted((actions[i] for i in places), key=_last_index), strict=True):
        actions[place] = action
    removals = [a for a in actions if isinstance(a, ast.UpdateExpressionRemoveAction) and _indexed(a)]
    actions = [a for a in actions if not any(a is r for r in removals)]
    actions += sorted(removals, key=_last_index, reverse=True)
    for action in actions:
        self.get_specific_execution(action)(action, self.expression_attribute_names).execute(self.item)
    return None


def _indexed(action: Any) -> bool:
    return isinstance(action.children[0].children[-1], _ast().ExpressionSelector)


def _last_index(action: Any) -> int:
    """The element number an indexed action's path ends with."""
    return int(action.children[0].children[-1].get_index())


# ReturnValues computed here rather than by moto (which compared whole top-level attributes): UPDATED_OLD and
# UPDATED_NEW are the item before or after projected on the paths the actions name (a.b, not all of a; an
# attribute set to the value it had counts), no Attributes when that is empty (a REMOVE's UPDATED_NEW); ALL_NEW
# of an update that made no item (a REMOVE on none) has no Attributes either.
RETURNED = ("UPDATED_OLD", "UPDATED_NEW", "ALL_NEW")


def stored(handler: Any, body: dict[str, Any]) -> Any:
    """A copy of the item an UpdateItem's key names, or None (missing, or a key the update will refuse)."""
    import copy

    from moto.core.exceptions import JsonRESTError

    try:
        return copy.deepcopy(handler.dynamodb_backend.get_item(body.get("TableName"), body.get("Key")))
    except (JsonRESTError, KeyError, TypeError, ValueError):
        return None


def return_values(handler: Any, body: dict[str, Any], before: Any, answer: dict[str, Any]) -> None:
    """The answer's Attributes as DynamoDB returns them for ``body``'s ReturnValues (see RETURNED)."""
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]

    mode, after = body.get("ReturnValues"), stored(handler, body)
    if mode == "ALL_NEW":
        if after is None:
            answer.pop("Attributes", None)
        return
    source = before if mode == "UPDATED_OLD" else after
    paths: list[projection.Path]
    if body.get("UpdateExpression"):
        tree = UpdateExpressionParser.make(body["UpdateExpression"])
        names = body.get("ExpressionAttributeNames") or {}
        paths = [_path(action.children[0], names) for action in tree.find_clauses(_action_classes())]
    else:  # the legacy AttributeUpdates: each names a top-level attribute
        paths = [[name] for name in body.get("AttributeUpdates") or {}]
    projected = source.project(paths).to_json()["Attributes"] if source is not None and paths else {}
    if projected:
        answer["Attributes"] = projected
    else:
        answer.pop("Attributes", None)


def _ast() -> Any:
    """moto's update-expression syntax tree module (untyped for mypy: its node classes are made at import)."""
    import importlib

    return importlib.import_module("moto.dynamodb.parsing.ast_nodes")


def _lone_placeholder(path: Any) -> bool:
    ast = _ast()

    return len(path.children) == 1 and isinstance(path.children[0], ast.ExpressionAttributeName)


def _path(path: Any, names: dict[str, str]) -> projection.Path:
    """An update action's document path: attribute names (placeholders resolved) and list indexes."""
    ast = _ast()

    segments: projection.Path = []
    for part in path.children:
        if isinstance(part, ast.ExpressionSelector):
            segments.append(int(part.get_index()))
        elif isinstance(part, ast.ExpressionAttributeName):
            placeholder = part.get_attribute_name_placeholder()
            segments.append(names.get(placeholder, placeholder))
        elif isinstance(part, ast.ExpressionAttribute):
            segments.append(part.get_attribute_name())
    return segments


def _invalid(message: str) -> Exception:
    from moto.dynamodb.exceptions import MockValidationException

    return MockValidationException(message)


MOTO_TARGETS = (
    *PATCHES.targets,
    Target("moto.dynamodb.exceptions", "MockValidationException"),
    Target("moto.dynamodb.parsing.ast_nodes", "NoneExistingPath"),
    Target("moto.dynamodb.parsing.ast_nodes", "ExpressionSelector.get_index", ("self",)),
    Target(
        "moto.dynamodb.parsing.ast_nodes", "ExpressionAttributeName.get_attribute_name_placeholder", ("self",)
    ),
    Target("moto.dynamodb.parsing.ast_nodes", "ExpressionAttribute.get_attribute_name", ("self",)),
    Target("moto.dynamodb.parsing.ast_nodes", "UpdateExpressionSetAction"),
    Target("moto.dynamodb.parsing.ast_nodes", "UpdateExpression"),
    Target("moto.dynamodb.parsing.ast_nodes", "UpdateExpressionValue"),
    Target("moto.dynamodb.parsing.expressions", "UpdateExpressionParser.make"),
    Target("moto.dynamodb.models", "DynamoDBBackend.get_item"),
    Target("moto.dynamodb.models.dynamo_type", "Item.project", ("self", "projection_expressions")),
    Target("moto.core.exceptions", "JsonRESTError"),
    Target(_VALIDATORS, "UpdateHashRangeKeyValidator.check_for_hash_or_range_key", ("self", "node")),
)
