"""An update expression's functions as DynamoDB evaluates them (developer guide, "Update expressions", SET):
``list_append(a, b)`` of two lists, ``if_not_exists(path, value)``.

``list_append`` with an operand that is not there is "The provided expression refers to an attribute that does
not exist in the item", whichever side it is on; with an operand that is not a list, "Incorrect operand type for
operator or function". moto refused a missing first operand and met a missing second one with an assertion (HTTP
500). This module owns moto's evaluation of the functions (``UpdateExpressionFunctionEvaluator.process_function``).
"""

from __future__ import annotations

from typing import Any

from local.patching import Patches, Target

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


MOTO_TARGETS = (
    *PATCHES.targets,
    Target("moto.dynamodb.exceptions", "MockValidationException"),
    Target("moto.dynamodb.parsing.ast_nodes", "NoneExistingPath"),
)
