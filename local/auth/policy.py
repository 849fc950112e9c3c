"""IAM policy evaluation: identity policies and a resource policy, explicit Deny wins, conditions evaluated.

Pure functions over policy documents (dicts or JSON strings) and a request context; no moto import. The
evaluation follows AWS's order for a principal and a resource in the same account: an explicit Deny in any
applicable policy denies; otherwise an Allow in an identity policy or in the resource policy (for this
principal) allows; otherwise the request is implicitly denied.
"""

from __future__ import annotations

import fnmatch
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

log = logging.getLogger("doctable.local.auth")

# The condition keys the local AWS puts into a request's context; any other key is absent from it (as a key the
# request does not carry is on AWS), so "...IfExists" and negated operators hold and the others do not.
EVALUATED_KEYS = (
    "aws:SecureTransport",
    "aws:PrincipalArn",
    "aws:PrincipalAccount",
    "aws:PrincipalType",
    "aws:username",
    "aws:RequestedRegion",
    "aws:ResourceAccount",
    "s3:ResourceAccount",
    "s3:prefix",
    "s3:delimiter",
    "iam:PassedToService",
    "iam:PermissionsBoundary",  # a role's or user's boundary on IAM calls that create or change one
    "kms:ViaService",  # set only on the kms:Decrypt check of a read under a table's customer managed key
    "lambda:FunctionArn",  # Get/Update/DeleteEventSourceMapping: the function the mapping invokes
)
_EVALUATED = {key.lower() for key in EVALUATED_KEYS}
_reported_keys: set[str] = set()


class Effect(Enum):
    ALLOW = "allow"
    DENY = "deny"
    NONE = "none"


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str  # "allowed", "explicit-identity", "explicit-resource", "implicit"


@dataclass
class Request:
    """One authorization question: may ``principal`` do ``action`` on ``resource`` with ``context``?"""

    principal: str  # the caller's ARN (an assumed-role session's sts ARN, or a user's)
    action: str
    resource: str
    context: dict[str, list[str]] = field(default_factory=dict)
    principal_aliases: tuple[str, ...] = ()  # other ARNs a resource policy may name (the role of a session)
    account: str = ""


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _statements(document: Any) -> list[Mapping[str, Any]]:
    if isinstance(document, (str, bytes)):
        document = json.loads(document)
    if not isinstance(document, Mapping):
        return []
    return [s for s in _as_list(document.get("Statement")) if isinstance(s, Mapping)]


def _wildcard(pattern: str, value: str, ignore_case: bool = False) -> bool:
    """IAM's wildcards: ``*`` any run of characters, ``?`` one character; nothing else is special."""
    if ignore_case:
        pattern, value = pattern.lower(), value.lower()
    return fnmatch.fnmatchcase(value, pattern.replace("[", "[[]"))


def _action_matches(patterns: Iterable[Any], action: str) -> bool:
    # Action names are case-insensitive.
    return any(_wildcard(str(p), action, ignore_case=True) for p in patterns)


def _resource_matches(patterns: Iterable[Any], resource: str) -> bool:
    return any(_wildcard(str(p), resource) for p in patterns)


def _principal_matches(element: Any, request: Request) -> bool:
    if element == "*":
        return True
    if not isinstance(element, Mapping):
        return False
    names = {request.principal, *request.principal_aliases}
    for kind, values in element.items():
        if kind != "AWS":
            continue  # service and federated principals never make the requests evaluated here
        for value in _as_list(values):
            value = str(value)
            if value == "*" or value in names:
                return True
            # The account (its root ARN or its id) names every principal of that account.
            if request.account and value in (request.account, f"arn:aws:iam::{request.account}:root"):
                return True
    return False


# ---- conditions ----
def _bool(value: str) -> str:
    return str(value).lower()


def _compare(base: str, expected: str, actual: str) -> bool:
    if base in ("StringEquals", "ArnEquals"):
        return actual == expected if base == "StringEquals" else _wildcard(expected, actual)
    if base == "StringEqualsIgnoreCase":
        return actual.lower() == expected.lower()
    if base in ("StringLike", "ArnLike"):
        return _wildcard(expected, actual)
    if base == "Bool":
        return _bool(actual) == _bool(expected)
    if base.startswith("Numeric"):
        try:
            a, e = float(actual), float(expected)
        except ValueError:
            return False
        return {
            "NumericEquals": a == e,
            "NumericLessThan": a < e,
            "NumericLessThanEquals": a <= e,
            "NumericGreaterThan": a > e,
            "NumericGreaterThanEquals": a >= e,
        }.get(base, False)
    raise ValueError(f"unsupported condition operator {base}")


_NEGATED = {
    "StringNotEquals": "StringEquals",
    "StringNotEqualsIgnoreCase": "StringEqualsIgnoreCase",
    "StringNotLike": "StringLike",
    "ArnNotEquals": "ArnEquals",
    "ArnNotLike": "ArnLike",
    "NumericNotEquals": "NumericEquals",
}


def _condition_holds(operator: str, key: str, expected: Any, context: Mapping[str, list[str]]) -> bool:
    qualifier = ""
    if ":" in operator and operator.split(":", 1)[0] in ("ForAnyValue", "ForAllValues"):
        qualifier, operator = operator.split(":", 1)
    if_exists = operator.endswith("IfExists")
    operator = operator.removesuffix("IfExists")
    actual = _lookup(context, key)
    expected_values = [str(v) for v in _as_list(expected)]
    if operator == "Null":
        return (actual is None) == (_bool(expected_values[0]) == "true")
    if actual is None:
        # A key the request does not have: IfExists and negated operators hold, ForAllValues holds vacuously.
        return if_exists or operator in _NEGATED or qualifier == "ForAllValues"
    negated = operator in _NEGATED
    base = _NEGATED.get(operator, operator)

    def one(value: str) -> bool:
        hit = any(_compare(base, e, value) for e in expected_values)
        return not hit if negated else hit

    if qualifier == "ForAllValues":
        return all(one(v) for v in actual)
    return any(one(v) for v in actual) if not negated or qualifier else all(one(v) for v in actual)


def _lookup(context: Mapping[str, list[str]], key: str) -> list[str] | None:
    lowered = key.lower()
    if lowered not in _EVALUATED and lowered not in _reported_keys:
        _reported_keys.add(lowered)
        log.warning("IAM condition key %s is not evaluated by the local AWS: treated as absent", key)
    for name, values in context.items():
        if name.lower() == lowered:
            return values
    return None


def _conditions_hold(block: Any, context: Mapping[str, list[str]]) -> bool:
    if not block:
        return True
    if not isinstance(block, Mapping):
        return False
    for operator, tests in block.items():
        if not isinstance(tests, Mapping):
            return False
        for key, expected in tests.items():
            try:
                if not _condition_holds(str(operator), str(key), expected, context):
                    return False
            except ValueError:
                log.warning(
                    "IAM condition operator %s is not evaluated: the statement does not apply", operator
                )
                return False
    return True


# ---- statements and policies ----
def statement_effect(statement: Mapping[str, Any], request: Request, resource_policy: bool = False) -> Effect:
    """The effect of one statement on the request (NONE when it does not apply)."""
    if "NotAction" in statement:
        if _action_matches(_as_list(statement["NotAction"]), request.action):
            return Effect.NONE
    elif not _action_matches(_as_list(statement.get("Action")), request.action):
        return Effect.NONE
    if "NotResource" in statement:
        if _resource_matches(_as_list(statement["NotResource"]), request.resource):
            return Effect.NONE
    elif "Resource" in statement:
        if not _resource_matches(_as_list(statement["Resource"]), request.resource):
            return Effect.NONE
    elif not resource_policy:
        return Effect.NONE  # an identity statement without Resource is invalid and grants nothing
    if resource_policy or "Principal" in statement or "NotPrincipal" in statement:
        if "NotPrincipal" in statement:
            if _principal_matches(statement["NotPrincipal"], request):
                return Effect.NONE
        elif not _principal_matches(statement.get("Principal"), request):
            return Effect.NONE
    if not _conditions_hold(statement.get("Condition"), request.context):
        return Effect.NONE
    return Effect.DENY if statement.get("Effect") == "Deny" else Effect.ALLOW


def policy_effect(document: Any, request: Request, resource_policy: bool = False) -> Effect:
    """DENY if any statement denies, ALLOW if one allows, else NONE."""
    result = Effect.NONE
    for statement in _statements(document):
        effect = statement_effect(statement, request, resource_policy)
        if effect is Effect.DENY:
            return Effect.DENY
        if effect is Effect.ALLOW:
            result = Effect.ALLOW
    return result


def evaluate(
    request: Request,
    identity_policies: Sequence[Any],
    resource_policy: Any | None = None,
    boundary: Sequence[Any] | None = None,
) -> Decision:
    """AWS's same-account evaluation: explicit Deny (identity, resource or permissions boundary) wins, then an
    Allow of the resource policy, then an Allow of an identity policy that the principal's permissions
    ``boundary`` (when it has one) also allows, else deny (IAM User Guide, "Policy evaluation logic": the
    effective permissions of identity-based policies and a boundary are their intersection)."""
    identity = [policy_effect(p, request) for p in identity_policies]
    resource = (
        policy_effect(resource_policy, request, resource_policy=True) if resource_policy else Effect.NONE
    )
    bounded = None if boundary is None else [policy_effect(p, request) for p in boundary]
    if Effect.DENY in identity:
        return Decision(False, "explicit-identity")
    if resource is Effect.DENY:
        return Decision(False, "explicit-resource")
    if bounded is not None and Effect.DENY in bounded:
        return Decision(False, "explicit-boundary")
    if resource is Effect.ALLOW:
        return Decision(True, "allowed")
    if Effect.ALLOW in identity:
        if bounded is not None and Effect.ALLOW not in bounded:
            return Decision(False, "boundary")
        return Decision(True, "allowed")
    return Decision(False, "implicit")


def trust_allows(document: Any, request: Request) -> bool:
    """A role's trust policy lets the principal assume it (explicit Deny wins)."""
    return policy_effect(document, request, resource_policy=True) is Effect.ALLOW


def denial_message(principal: str, action: str, resource: str, reason: str) -> str:
    """AWS's AccessDenied message for ``reason`` (a Decision's)."""
    base = f"User: {principal} is not authorized to perform: {action} on resource: {resource}"
    if reason == "explicit-identity":
        return f"{base} with an explicit deny in an identity-based policy"
    if reason == "explicit-resource":
        return f"{base} with an explicit deny in a resource-based policy"
    if reason == "explicit-boundary":
        return f"{base} with an explicit deny in a permissions boundary"
    if reason == "boundary":
        return f"{base} because no permissions boundary allows the {action} action"
    return f"{base} because no identity-based policy allows the {action} action"
