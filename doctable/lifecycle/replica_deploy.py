"""A global table's second half of ``doctable deploy``: once the home stack has made every replica, the consumer
stack of each replica region, and the removal of the consumer stack of each region that is no longer a replica.

CloudFormation cannot give a stack the stream ARN of a replica in another region, so the deploy reads each
replica's ``LatestStreamArn`` in its own region and hands the map to the app as the ``replica_streams`` context.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from contract.knobs import REPLICA_STREAMS_CONTEXT, DocTableConfig
from doctable.capabilities.replicas import live_replica_regions, replica_stack
from doctable.core.aws import Aws, is_not_found, user_errors
from doctable.core.errors import UserError
from doctable.lifecycle.replica_teardown import ReplicaStack, delete_replica_stacks

if TYPE_CHECKING:
    from doctable.core.render import Progress

STACK_GONE_TIMEOUT = 1800.0


def replica_streams(aws: Aws, table_name: str, regions: Sequence[str]) -> dict[str, str]:
    """Each replica region's stream ARN, read from the replica itself; UserError for a replica that is missing or
    has no stream (the home stack's update did not make it)."""
    streams: dict[str, str] = {}
    for region in regions:
        ddb = aws.in_region(region).client("dynamodb")
        with user_errors(f"reading the replica of {table_name} in {region}"):
            try:
                table = ddb.describe_table(TableName=table_name)["Table"]
            except Exception as exc:
                if is_not_found(exc):
                    raise UserError(
                        f"the table {table_name} has no replica in {region}: the home stack's update did not make "
                        "it (its events say why)"
                    ) from exc
                raise
        arn = table.get("LatestStreamArn")
        if not arn:
            raise UserError(
                f"the replica of {table_name} in {region} has no stream; a global table needs one"
            )
        streams[region] = arn
    return streams


def replica_deploy_command(base: Sequence[str], config: DocTableConfig, streams: dict[str, str]) -> list[str]:
    """``base`` (the home stack's ``cdk deploy`` command) for the replica stacks instead, with their streams."""
    command = list(base)
    at = command.index(config.stack_name)
    command[at : at + 1] = [config.replica_stack_name(region) for region in config.replicas]
    return [*command, "-c", f"{REPLICA_STREAMS_CONTEXT}={json.dumps(streams, sort_keys=True)}"]


def remove_stale_replica_stacks(
    aws: Aws, config: DocTableConfig, regions: Sequence[str], progress: Progress
) -> list[str]:
    """Delete this environment's consumer stack in each of ``regions`` the settings no longer declare (the home
    stack's update took the replica out), waiting until each is gone; the regions whose stack was deleted."""
    stale: list[ReplicaStack] = []
    for region in regions:
        if region in config.replicas:
            continue
        name = config.replica_stack_name(region)
        with user_errors(f"looking for {name} in {region}"):
            stack = replica_stack(aws.in_region(region), name)
        if stack is not None:
            stale.append(
                ReplicaStack(region, name, str(stack.get("StackId") or name), str(stack["StackStatus"]))
            )
    with user_errors("deleting the consumer stacks of the regions no longer replicas"):
        _, still = delete_replica_stacks(aws, stale, timeout=STACK_GONE_TIMEOUT, progress=progress)
    if still:
        raise UserError("; ".join(still))
    return [stack.region for stack in stale]


def live_replica_regions_of(aws: Aws, table_name: str) -> tuple[str, ...]:
    """The regions of the live table's replicas besides the home region, none for a table that does not exist
    yet or is not global."""
    try:
        table = aws.client("dynamodb").describe_table(TableName=table_name)["Table"]
    except Exception as exc:
        if is_not_found(exc):
            return ()
        raise
    return live_replica_regions(table, aws.region)
