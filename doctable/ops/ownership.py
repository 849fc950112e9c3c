"""Whose table is it: the stack's resource list and the provenance tags, checked before a command writes to a
table or changes it (verify's test items, reconcile's repairs)."""

from __future__ import annotations

from typing import Any

from contract.knobs import MANAGED_BY
from doctable.aws import Aws, call_or_none
from doctable.errors import UserError
from doctable.ops.context import Deployment, require_deployed, table_tags

TABLE_TYPE = "AWS::DynamoDB::Table"
# A stack whose create failed holds nothing usable: a same-named table beside it is retained or foreign.
NEVER_CREATED_STATES = frozenset(
    {"CREATE_IN_PROGRESS", "CREATE_FAILED", "ROLLBACK_IN_PROGRESS", "ROLLBACK_COMPLETE", "ROLLBACK_FAILED"}
)


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


def require_owned_table(aws: Aws, deployment: Deployment, *, doing: str) -> dict[str, Any]:
    """The table's description, once the stack is created and owns it; else one UserError naming why.

    ``doing`` completes "refusing to ...": what would otherwise have touched the table.
    """
    require_deployed(deployment)
    config = deployment.config
    status = deployment.stack_status or ""
    if status in NEVER_CREATED_STATES or status.startswith("DELETE_"):
        reason = f" ({deployment.status_reason})" if deployment.status_reason else ""
        raise UserError(
            f"stack {config.stack_name} is {status}{reason}: it owns no table, so refusing to {doing}; "
            "delete the stack (`doctable teardown`) and deploy again"
        )
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
