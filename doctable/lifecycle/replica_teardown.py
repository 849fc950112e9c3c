"""Teardown of a global table's replica stacks (``doctable-<table_base>-<env>-<region>``, one consumer per replica
region): found in each region the knobs declare or the home table lists, and deleted before the home stack, whose
deletion removes (or retains) the global table and so the streams the replica consumers read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError, WaiterError

from doctable.capabilities.replicas import live_replica_regions, replica_stack
from doctable.core.aws import Aws, error_code

if TYPE_CHECKING:
    from contract.knobs import DocTableConfig
    from doctable.core.render import Progress


@dataclass(frozen=True)
class ReplicaStack:
    """One replica region's stack as DescribeStacks reports it."""

    region: str
    name: str
    stack_id: str
    status: str

    @property
    def label(self) -> str:
        return f"AWS::CloudFormation::Stack {self.name} ({self.region})"


def replica_regions(config: DocTableConfig, table: dict[str, Any] | None, home: str) -> tuple[str, ...]:
    """The regions that may hold a replica stack: those the knobs declare, then any other the home table lists."""
    live = live_replica_regions(table, home) if table is not None else ()
    return tuple(dict.fromkeys((*config.replicas, *live)))


def find_replica_stacks(
    aws: Aws, config: DocTableConfig, table: dict[str, Any] | None
) -> tuple[list[ReplicaStack], list[str]]:
    """Each replica stack that exists, in ``replica_regions`` order, and a note for each region whose stack could
    not be read (a region only the table lists, outside the policy's declared regions)."""
    found: list[ReplicaStack] = []
    notes: list[str] = []
    for region in replica_regions(config, table, aws.region):
        name = config.replica_stack_name(region)
        try:
            stack = replica_stack(aws.in_region(region), name)
        except ClientError as exc:
            if region in config.replicas:
                raise
            notes.append(
                f"replica region {region} (the table lists it, the knobs do not): stack {name} could not be read "
                f"({error_code(exc)}): check it by hand, its consumer reads a stream this teardown deletes"
            )
            continue
        if stack is not None:
            found.append(
                ReplicaStack(region, name, str(stack.get("StackId") or name), str(stack["StackStatus"]))
            )
    return found, notes


def delete_replica_stacks(
    aws: Aws, stacks: list[ReplicaStack], *, timeout: float, progress: Progress
) -> tuple[list[str], list[str]]:
    """Delete each stack and wait for it: (the labels of those gone, a line for each still present)."""
    removed: list[str] = []
    still: list[str] = []
    for stack in stacks:
        cfn = aws.in_region(stack.region).client("cloudformation")
        progress.say(f"deleting replica stack {stack.name} in {stack.region}")
        cfn.delete_stack(StackName=stack.stack_id)
        try:
            cfn.get_waiter("stack_delete_complete").wait(
                StackName=stack.stack_id, WaiterConfig={"Delay": 5, "MaxAttempts": max(1, int(timeout // 5))}
            )
        except WaiterError as exc:
            still.append(f"stack {stack.name} ({stack.region}): delete did not complete ({exc})")
        else:
            removed.append(stack.label)
    return removed, still


def lift_replica_protection(aws: Aws, table: dict[str, Any], progress: Progress) -> list[str]:
    """Lift the deletion protection of each replica of the described (home) table that has it (a per-replica
    setting: the home stack's deletion deletes every replica); the regions lifted."""
    lifted = []
    name = table["TableName"]
    for region in live_replica_regions(table, aws.region):
        ddb = aws.in_region(region).client("dynamodb")
        if not ddb.describe_table(TableName=name)["Table"].get("DeletionProtectionEnabled"):
            continue
        ddb.update_table(TableName=name, DeletionProtectionEnabled=False)
        progress.wait(
            f"the replica of {name} in {region} to be ACTIVE after lifting deletion protection",
            _active(ddb, name),
            300,
        )
        lifted.append(region)
    return lifted


def _active(ddb: Any, name: str) -> Callable[[], bool | None]:
    """A probe: True once the table ``name`` is ACTIVE, else None."""
    return lambda: (
        True if ddb.describe_table(TableName=name)["Table"].get("TableStatus") == "ACTIVE" else None
    )
