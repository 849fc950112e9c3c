"""A global table's second half of ``doctable deploy``: once the home stack has made every replica, the consumer
stack of each replica region, and the removal of the consumer stack of each region that is no longer a replica.

CloudFormation cannot give a stack the stream ARN of a replica in another region, so the deploy reads each
replica's ``LatestStreamArn`` in its own region and hands the map to the app as the ``replica_streams`` context.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from contract.knobs import REPLICA_STREAMS_CONTEXT, DocTableConfig
from doctable.aws import Aws, is_not_found, retry_config, user_errors
from doctable.errors import UserError

STACK_GONE_TIMEOUT = 1800.0
GONE_STATUSES = frozenset({"DELETE_COMPLETE"})
FAILED_DELETE = "DELETE_FAILED"


def regional_client(aws: Aws, service: str, region: str) -> Any:
    """A client of ``service`` in ``region``, from the deploy's own session and credentials."""
    return aws.session.client(service, region_name=region, config=retry_config())


def replica_streams(aws: Aws, table_name: str, regions: Sequence[str]) -> dict[str, str]:
    """Each replica region's stream ARN, read from the replica itself; UserError for a replica that is missing or
    has no stream (the home stack's update did not make it)."""
    streams: dict[str, str] = {}
    for region in regions:
        ddb = regional_client(aws, "dynamodb", region)
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


def stale_replica_stacks(aws: Aws, config: DocTableConfig, regions: Sequence[str]) -> list[str]:
    """The regions among ``regions`` (not declared) that still hold this environment's replica consumer stack."""
    found = []
    for region in regions:
        if region in config.replicas:
            continue
        cfn = regional_client(aws, "cloudformation", region)
        with user_errors(f"looking for {config.replica_stack_name(region)} in {region}"):
            try:
                stacks = cfn.describe_stacks(StackName=config.replica_stack_name(region))["Stacks"]
            except Exception as exc:
                if "does not exist" in str(exc):
                    continue
                raise
        if stacks and stacks[0]["StackStatus"] not in GONE_STATUSES:
            found.append(region)
    return found


def delete_replica_stack(
    aws: Aws,
    config: DocTableConfig,
    region: str,
    say: Callable[[str], None],
    *,
    timeout: float = STACK_GONE_TIMEOUT,
) -> None:
    """Delete the consumer stack of a region that is no longer a replica, and wait until it is gone."""
    name = config.replica_stack_name(region)
    cfn = regional_client(aws, "cloudformation", region)
    say(f"deleting {name} in {region}: {region} is no longer a replica")
    with user_errors(f"deleting {name} in {region}"):
        cfn.delete_stack(StackName=name)
        deadline = time.monotonic() + timeout
        while True:
            try:
                status = cfn.describe_stacks(StackName=name)["Stacks"][0]["StackStatus"]
            except Exception as exc:
                if "does not exist" in str(exc):
                    return
                raise
            if status in GONE_STATUSES:
                return
            if status == FAILED_DELETE:
                raise UserError(
                    f"{name} in {region} could not be deleted (DELETE_FAILED): its events say why"
                )
            if time.monotonic() > deadline:
                raise UserError(f"{name} in {region} was not deleted within {timeout:.0f}s (now {status})")
            time.sleep(2.0)


def live_replica_regions(aws: Aws, table_name: str) -> list[str]:
    """The regions of the live table's replicas besides the home region (DescribeTable's ``Replicas``), none for
    a table that does not exist yet or is not global."""
    try:
        table = aws.client("dynamodb").describe_table(TableName=table_name)["Table"]
    except Exception as exc:
        if is_not_found(exc):
            return []
        raise
    return [
        replica["RegionName"]
        for replica in table.get("Replicas", [])
        if replica.get("RegionName") != aws.region
    ]
