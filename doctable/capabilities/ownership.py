"""Whose table is it: the stack's resource list and the provenance tags, checked before a command writes to a
table or changes it (verify's test items, reconcile's repairs); what preflight says of a table that is not the
stack's, and the provenance tags' drift with the call that restores it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from contract import names
from contract.findings import Finding, Level
from contract.knobs import MANAGED_BY, DocTableConfig
from contract.shape import GLOBAL_TABLE_TYPE
from doctable.capabilities.protocol import Drift, Observed, stack_table_ids
from doctable.core.answers import call_or_none
from doctable.core.deployment import STABLE_STACK_STATES, Deployment, is_ours, require_deployed, table_tags
from doctable.core.errors import RefusedError

if TYPE_CHECKING:
    from doctable.core.aws import Aws

TABLE_TAGS = "TagResource (table)"  # the repair of the provenance tags
# A stack whose create failed holds nothing usable: a same-named table beside it is retained or foreign.
NEVER_CREATED_STATES = frozenset(
    {"CREATE_IN_PROGRESS", "CREATE_FAILED", "ROLLBACK_IN_PROGRESS", "ROLLBACK_COMPLETE", "ROLLBACK_FAILED"}
)
# A failed update that rolled back is settled and updatable: the stack holds the previous template's resources
# and outputs (its Knobs output included), so it is checked against those.
ROLLED_BACK = "UPDATE_ROLLBACK_COMPLETE"
SETTLED_STATES = STABLE_STACK_STATES | {ROLLED_BACK}
ROLLED_BACK_ROW = "the last update rolled back; checked against the knobs the stack holds"


def foreign_owner(tags: dict[str, str]) -> str | None:
    """The ManagedBy tag when it names someone else (absent: not foreign by tags, just untagged)."""
    owner = tags.get("ManagedBy")
    return owner if owner is not None and owner != MANAGED_BY else None


def require_settled_stack(deployment: Deployment, *, doing: str) -> None:
    """Nothing when the stack is settled (created, updated, or an update rolled back); else one RefusedError (exit 3):
    a failed create, a stack that is busy, or one whose update or rollback failed."""
    config = deployment.config
    status = deployment.stack_status or ""
    if status in SETTLED_STATES:
        return
    reason = f" ({deployment.status_reason})" if deployment.status_reason else ""
    if status in NEVER_CREATED_STATES or status.startswith("DELETE_"):
        raise RefusedError(
            f"stack {config.stack_name} is {status}{reason}: it owns no table, so refusing to {doing}; "
            "delete the stack (`doctable teardown`) and deploy again"
        )
    if status.endswith("_IN_PROGRESS"):
        raise RefusedError(
            f"stack {config.stack_name} is {status}: busy, so refusing to {doing}; wait until it settles "
            f"({' | '.join(sorted(SETTLED_STATES))}) and run it again"
        )
    if status == "UPDATE_ROLLBACK_FAILED":
        raise RefusedError(
            f"stack {config.stack_name} is {status}{reason}: its resources are neither the old nor the new "
            f"template's, so refusing to {doing}; continue the rollback "
            "(`aws cloudformation continue-update-rollback`) first"
        )
    raise RefusedError(
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
    """The table's description, once the stack is created and owns it; else one RefusedError (exit 3) naming why.

    ``doing`` completes "refusing to ...": what would otherwise have touched the table.
    """
    require_deployed(deployment)
    config = deployment.config
    require_settled_stack(deployment, doing=doing)
    name = deployment.table_name
    table = (call_or_none(aws.client("dynamodb").describe_table, TableName=name) or {}).get("Table")
    if table is None:
        raise RefusedError(
            f"table {name} not found (deleted behind stack {config.stack_name}?): refusing to {doing}"
        )
    if name not in stack_table_ids(aws, deployment):
        raise RefusedError(
            f"table {name} is not stack {config.stack_name}'s (retained by an earlier stack or made outside it): "
            f"refusing to {doing}"
        )
    owner = foreign_owner(table_tags(aws, table["TableArn"]))
    if owner is not None:
        raise RefusedError(f"table {name} is tagged ManagedBy={owner}, not {MANAGED_BY}: refusing to {doing}")
    return dict(table)


# ------------------------------------------------------------------------------------------ capability
def _table_absent(config: DocTableConfig, in_stack: bool) -> Finding:
    if in_stack:
        return Finding(
            Level.WARN, "table.missing", "table", "absent", config.table_name,
            "the stack lists the table but it is gone "
            "(deleted behind the stack): an update will not re-create it — destroy and redeploy",
            before=None, after=config.table_name,
        )  # fmt: skip
    return Finding(
        Level.INFO, "table.created", "table", "absent", config.table_name, "will be created with the knobs' shape",
        before=None, after=config.table_name,
    )  # fmt: skip


def _table_outside(deployment: Deployment, tags: dict[str, str]) -> Finding:
    """A same-named table the stack does not hold: someone else's, or ours left outside a stack."""
    config = deployment.target
    shown = ", ".join(f"{k}={v}" for k, v in tags.items()) or "no tags"
    where = f"outside stack {config.stack_name}" + ("" if deployment.exists else " (not deployed)")
    handover = deployment.out(names.OUT_TABLE_HANDOVER)
    if handover and is_ours(tags) and config.is_global and deployment.exists:
        return Finding(
            Level.WARN, "table.handover", "table", f"exists {where} (conversion step {handover})",
            f"in stack {config.stack_name} as {GLOBAL_TABLE_TYPE}",
            "a conversion to a global table stopped after the retained table was taken out of the stack: this "
            "deploy continues it, importing the table as a global table with its items, then adds the replicas",
            before=handover, after=GLOBAL_TABLE_TYPE,
        )  # fmt: skip
    if not is_ours(tags):
        return Finding(
            Level.STOP, "table.foreign", "table", f"exists {where}; {shown}", f"ManagedBy={MANAGED_BY}",
            f"table {config.table_name} exists but is NOT tagged ManagedBy={MANAGED_BY}: adopting it is a "
            "human decision — stop (pick another table_base, or import it deliberately after review)",
            before=tags, after={"ManagedBy": MANAGED_BY},
        )  # fmt: skip
    return Finding(
        Level.STOP, "table.unmanaged", "table", f"exists {where}; {shown}", f"in stack {config.stack_name}",
        "ours by its tags but not this stack's (retained by a teardown, or made by the bash plan): "
        "CloudFormation cannot create a same-named table — adopting it (`cdk import`) or deleting it is "
        "a human decision",
        before=tags, after=config.stack_name,
    )  # fmt: skip


class OwnershipCapability:
    """Whose table: preflight's finding when the table is not the stack's; the provenance tags' drift."""

    name = "ownership"
    compares_live = True
    codes = frozenset(
        {"table.created", "table.missing", "table.foreign", "table.unmanaged", "table.handover"}
    )
    calls = (TABLE_TAGS,)

    def _tags(self, observed: Observed) -> dict[str, str]:
        arn = str(observed.live_table["TableArn"])
        return observed.once("table tags", lambda: table_tags(observed.aws, arn))

    def findings(self, observed: Observed) -> list[Finding]:
        if observed.table is None:
            return [_table_absent(observed.target, observed.in_stack)]
        if not observed.in_stack:
            return [_table_outside(observed.deployment, self._tags(observed))]
        return []

    def drift(self, observed: Observed) -> list[Drift]:
        tags = self._tags(observed)
        return [
            Drift(
                f"table-tag:{key}",
                f"table tag {key}",
                tags.get(key, "absent"),
                value,
                TABLE_TAGS,
                {key: value},
            )
            for key, value in observed.deployed.tags().items()
            if tags.get(key) != value
        ]

    def apply(
        self, aws: Aws, deployment: Deployment, table: dict[str, Any], call: str, params: dict[str, Any]
    ) -> None:
        if call != TABLE_TAGS:  # pragma: no cover - calls only
            raise ValueError(call)
        tags = [{"Key": k, "Value": v} for k, v in params.items()]
        aws.client("dynamodb").tag_resource(ResourceArn=table["TableArn"], Tags=tags)


OWNERSHIP = OwnershipCapability()
