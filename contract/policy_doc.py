"""The table's resource-based policy: the `resource_policy` knob's file, validated and with its placeholders.

Pure Python (no CDK import): the app attaches the document, verify compares the live one with it, and the unit
tests check every rule without a synth. A document may name the stack's own account and table with the
placeholders below; they are replaced at synth (by CloudFormation references) and by verify (by the live values),
since a policy cannot reference the table it is attached to while CloudFormation creates it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ACCOUNT_PLACEHOLDER = "{{account}}"
TABLE_ARN_PLACEHOLDER = "{{table_arn}}"
POLICY_VERSIONS = ("2012-10-17", "2008-10-17")
EFFECTS = ("Allow", "Deny")
# DynamoDB's limit for a resource-based policy, whitespace excluded.
MAX_POLICY_BYTES = 20_480


class PolicyDocumentError(ValueError):
    """One line: what is wrong with the document and what is allowed."""


def load_policy_document(path: str) -> dict[str, Any]:
    """The document at ``path`` (relative to the current directory), checked as an IAM resource policy."""
    file = Path(path)
    where = f"resource_policy={path!r}"
    if not file.is_file():
        raise PolicyDocumentError(
            f"{where}: no such file; allowed: off or the path of a JSON policy document"
        )
    try:
        document = json.loads(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PolicyDocumentError(f"{where} is not JSON ({exc}); allowed: a JSON policy document") from None
    problem = _policy_problem(document)
    if problem:
        raise PolicyDocumentError(f"{where} is not a resource policy document: {problem}")
    size = len(json.dumps(document, separators=(",", ":")).encode())
    if size > MAX_POLICY_BYTES:
        raise PolicyDocumentError(
            f"{where} is {size} bytes; allowed: at most {MAX_POLICY_BYTES} (DynamoDB's resource policy limit)"
        )
    return document  # type: ignore[no-any-return]


def _policy_problem(document: Any) -> str | None:
    if not isinstance(document, dict):
        return "the top level must be an object with Version and Statement"
    if document.get("Version") not in POLICY_VERSIONS:
        return f"Version must be one of {', '.join(POLICY_VERSIONS)}, got {document.get('Version')!r}"
    statements = document.get("Statement")
    if isinstance(statements, dict):
        statements = [statements]
    if not isinstance(statements, list) or not statements:
        return "Statement must be a non-empty list of statements"
    for number, statement in enumerate(statements, 1):
        if not isinstance(statement, dict):
            return f"statement {number} is not an object"
        label = f"statement {statement.get('Sid', number)!s}"
        if statement.get("Effect") not in EFFECTS:
            return f"{label}: Effect must be Allow or Deny, got {statement.get('Effect')!r}"
        if not _has_one(statement, "Action", "NotAction"):
            return f"{label}: needs Action (or NotAction): dynamodb:* actions"
        actions = statement.get("Action", statement.get("NotAction"))
        for action in actions if isinstance(actions, list) else [actions]:
            if not isinstance(action, str) or not (action == "*" or action.startswith("dynamodb:")):
                return f"{label}: action {action!r} is not a dynamodb: action"
        if not _has_one(statement, "Principal", "NotPrincipal"):
            return f"{label}: a resource policy needs Principal or NotPrincipal"
    return None


def _has_one(statement: dict[str, Any], name: str, negated: str) -> bool:
    values = [statement[k] for k in (name, negated) if k in statement]
    return len(values) == 1 and values[0] not in ("", [], {}, None)


def resolve_placeholders(document: dict[str, Any], *, account: str, table_arn: str) -> dict[str, Any]:
    """The document with ``{{account}}`` and ``{{table_arn}}`` replaced in every string."""

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace(ACCOUNT_PLACEHOLDER, account).replace(TABLE_ARN_PLACEHOLDER, table_arn)
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        return value

    return walk(document)  # type: ignore[no-any-return]


def canonical(document: Any) -> list[dict[str, Any]]:
    """A policy's statements in a form two equal policies share (JSON text, list order and ``"*"`` principals
    spelled differently by CloudFormation, the CDK or a user compare equal)."""
    if isinstance(document, str):
        document = json.loads(document)
    statements = document.get("Statement") if isinstance(document, dict) else None
    if isinstance(statements, dict):
        statements = [statements]

    def values(value: Any) -> list[str]:
        return sorted(str(v) for v in (value if isinstance(value, list) else [value]))

    def principal(value: Any) -> Any:
        if value == "*" or value == {"AWS": "*"}:
            return "*"
        if isinstance(value, dict):
            return {k: values(v) for k, v in sorted(value.items())}
        return value

    result = []
    for statement in statements or []:
        entry: dict[str, Any] = {"Sid": statement.get("Sid", ""), "Effect": statement.get("Effect")}
        for key in ("Action", "NotAction", "Resource", "NotResource"):
            if key in statement:
                entry[key] = values(statement[key])
        for key in ("Principal", "NotPrincipal"):
            if key in statement:
                entry[key] = principal(statement[key])
        if "Condition" in statement:
            entry["Condition"] = {
                op: {k: values(v) for k, v in sorted(block.items())}
                for op, block in sorted(statement["Condition"].items())
            }
        result.append(entry)
    return sorted(result, key=lambda s: json.dumps(s, sort_keys=True))
