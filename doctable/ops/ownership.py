"""Whose table is it: the stack's resource list and the provenance tags, checked before a command writes to a
table or changes it (verify's test items, reconcile's repairs)."""

from __future__ import annotations

from typing import Any

from contract.knobs import MANAGED_BY
from doctable.aws import Aws, call_or_none
from doctable.errors import UserError
from doctable.ops.context import STABLE_STACK_STATES, Deployment, require_deployed, table_tags

TABLE_TYPE = "AWS::DynamoDB::Table"
# A stack whose create failed holds nothing usable: a same-named table beside it is retained or foreign.
NEVER_CREATED_STATES = frozenset(
    {"CREATE_IN_PROGRESS", "CREATE_FAILED", "ROLLBACK_IN_PROGRESS", "ROLLBACK_COMPLETE", "ROLLBACK_FAILED"}
)
# A failed update that rolled back is settled and updatable: the stack holds the previous template's resources
# and outputs (its Knobs output included), so it is checked against those.
ROLLED_BACK = "UPDATE_ROLLBACK_COMPLETE"
SETTLED_STATES = STABLE_STACK_STATES | {ROLLED_BACK}
ROLLED_BACK_ROW = "the last update rolled back; checked against the knobs the stack holds"


def stack_physical_ids(aws: Aws, deployment: Deployment) -> dict[str, set[str]]:
    """resource type -> physical ids of the stack's resources (empty when the stack does not exist)."""
    found: dict[str, set[str]] = {}
    if not deployment.exists:
        return found
    paginator = aws.client("cloudformation").get_paginator("list_stack_resources")
    for page in paginator.paginate(StackName=deployment.config.stack_name):
        for resource in page.get("StackResourceSummaries", []):
            if resource.get("PhysicalResourceId"):
                found.setdefault(resource["ResourceType"], set()).add(resource["PhysicalResourceId"])
    return found


def foreign_owner(tags: dict[str, str]) -> str | None:
    """The ManagedBy tag when it names someone else (absent: not foreign by tags, just untagged)."""
    owner = tags.get("ManagedBy")
    return owner if owner is not None and owner != MANAGED_BY else None


def require_settled_stack(deployment: Deployment, *, doing: str) -> None:
    """Nothing when the stack is settled (created, updated, or an update rolled back); else one UserError:
    a failed create, a stack that is busy, or one whose update or rollback failed."""
    config = deployment.config
    status = deployment.stack_status or ""
    if status in SETTLED_STATES:
        return
    reason = f" ({deployment.status_reason})" if deployment.status_reason else ""
    if status in NEVER_CREATED_STATES or status.startswith("DELETE_"):
        raise UserError(
            f"stack {config.stack_name} is {status}{reason}: it owns no table, so refusing to {doing}; "
            "delete the stack (`doctable teardown`) and deploy again"
        )
    if status.endswith("_IN_PROGRESS"):
        raise UserError(
            f"stack {config.stack_name} is {status}: busy, so refusing to {doing}; wait until it settles "
            f"({' | '.join(sorted(SETTLED_STATES))}) and run it again"
        )
    if status == "UPDATE_ROLLBACK_FAILED":
        raise UserError(
            f"stack {config.stack_name} is {status}{reason}: its resources are neither the old nor the new "
            f"template's, so refusing to {doing}; continue the rollback "
            "(`aws cloudformation continue-update-rollback`) first"
        )
    raise UserError(
        f"stack {config.stack_name} is {status}{reason}: not settled, so refusing to {doing}; "
        f"allowed: {' | '.join(sorted(SETTLED_STATES))}"
    )


def rolled_back_note(deployment: Deployment) -> str | None:
    """The note a command prints when the stack's last update rolled back (None otherwise)."""
    if deployment.stack_status != ROLLED_BACK:
        return None
    reason = f" ({deployment.status_reason})" if deployment.status_reason else ""
    knobs = (
        "the knobs the stack holds (its Knobs output), not the ones that failed to deploy"
        if deployment.recorded
        else "the knobs given (the stack records none)"
    )
    return f"the last update of stack {deployment.config.stack_name} rolled back{reason}: checking {knobs}"


def require_owned_table(aws: Aws, deployment: Deployment, *, doing: str) -> dict[str, Any]:
    """The table's description, once the stack is created and owns it; else one UserError naming why.

    ``doing`` completes "refusing to ...": what would otherwise have touched the table.
    """
    require_deployed(deployment)
    config = deployment.config
    require_settled_stack(deployment, doing=doing)
    name = deployment.table_name
    table = (call_or_none(aws.client("dynamodb").describe_table, TableName=name) or {}).get("Table")
    if table is None:
        raise UserError(
            f"table {name} not found (deleted behind stack {config.stack_name}?): refusing to {doing}"
        )
    if name not in stack_physical_ids(aws, deployment).get(TABLE_TYPE, set()):
        raise UserError(
            f"table {name} is not stack {config.stack_name}'s (retained by an earlier stack or made outside it): "
            f"refusing to {doing}"
        )
    owner = foreign_owner(table_tags(aws, table["TableArn"]))
    if owner is not None:
        raise UserError(f"table {name} is tagged ManagedBy={owner}, not {MANAGED_BY}: refusing to {doing}")
    return dict(table)
