"""Lambda's condition key on event-source mappings: ``lambda:FunctionArn``, the function a mapping invokes.

AWS puts it in the request context of GetEventSourceMapping, UpdateEventSourceMapping and
DeleteEventSourceMapping (the mapping's own ARN ends in a UUID known only once it exists, so a policy scopes these
calls by the function the mapping invokes); CreateEventSourceMapping carries the function named in the request.
"""

from __future__ import annotations

from local import state
from local.patching import Target

MOTO_TARGETS = (
    Target("moto.awslambda.models", "lambda_backends"),
    Target("moto.awslambda.models", "LambdaBackend.get_event_source_mapping", ("self", "uuid")),
)
FUNCTION_ARN = "lambda:FunctionArn"
# The operations on one mapping whose context carries the function it invokes.
MAPPING_OPERATIONS = frozenset(
    {"GetEventSourceMapping", "UpdateEventSourceMapping", "DeleteEventSourceMapping"}
)


def mapping_function_arn(uuid: str, region: str) -> str | None:
    """The function ARN (with its qualifier, as the mapping stores it) of mapping ``uuid``; None if it is unknown."""
    from moto.awslambda.models import lambda_backends

    try:
        mapping = lambda_backends[state.ACCOUNT_ID][region].get_event_source_mapping(uuid)
    except (KeyError, ValueError):
        return None
    arn = getattr(mapping, "function_arn", None)
    return str(arn) if arn else None


def mapping_context(operation: str, uuid: str, region: str) -> dict[str, list[str]]:
    """The condition keys AWS sets for ``operation`` on mapping ``uuid`` (none for a mapping that does not exist:
    the call then answers ResourceNotFoundException only if the policy allows it without the key)."""
    if operation not in MAPPING_OPERATIONS:
        return {}
    arn = mapping_function_arn(uuid, region)
    return {FUNCTION_ARN: [arn]} if arn else {}
