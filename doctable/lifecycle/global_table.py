"""A global table's steps of ``doctable deploy`` and ``doctable teardown``: the conversion of a live
single-region table to a global table (first), then each replica region's consumer stack (after the home stack),
and their removal.

Deploy: once the home stack has made every replica, the stack of each replica region (its consumer, and each
subscriber that runs in that region: ``regions`` in contract/subscribers.py; a region added to or taken out of a
subscriber's regions is this deploy's update of that stack, through the gate when taken out), and the removal of
the consumer stack of each region that is no longer a replica. CloudFormation cannot give a stack the stream ARN of
a replica in another region, so the deploy reads each replica's ``LatestStreamArn`` in its own region and hands the
map to the app as the ``replica_streams`` context.

Teardown: the replica stacks found in each region the knobs declare or the home table lists, deleted before the
home stack, whose deletion removes (or retains) the global table and so the streams the replica consumers read.

Conversion: ``doctable deploy`` converting a live single-region table to a global table, its items kept: the resource
import CDK's Table -> TableV2 migration describes, one CloudFormation operation per step (infra/data/handover.py
builds each step's template from the ``table_handover`` context):

1. ``retain``: a deploy giving the table DeletionPolicy/UpdateReplacePolicy Retain;
2. ``detached``: a deploy without the table resource (CloudFormation keeps the retained table), everything that
   referred to it naming it by its name, ARN and stream ARN (unchanged: the table is kept, so is its stream);
3. ``import``: ``cdk import --resource-mapping --force`` adopting the table as AWS::DynamoDB::GlobalTable with
   no replica yet (an import changes no other resource);

then ``doctable deploy`` goes on with its ordinary deploy, which adds the replicas. Where a conversion starts is
the live state preflight found: ``table.to_global`` (the stack has the single-region table: from the start; the
retain deploy changes nothing when it already is retained) or ``table.handover`` (the table is out of the stack
at the detached step: the import). A failed step stops; the next deploy continues from the live state.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError, WaiterError

from contract import names
from contract.knobs import (
    REPLICA_STREAMS_CONTEXT,
    TABLE_HANDOVER_CONTEXT,
    TABLE_STREAM_CONTEXT,
    DocTableConfig,
)
from doctable.capabilities.protocol import replica_stack
from doctable.core.answers import error_code, is_not_found
from doctable.core.aws import Aws, user_errors
from doctable.core.errors import UserError
from doctable.core.live import live_replica_regions

if TYPE_CHECKING:
    from contract.findings import Finding
    from doctable.core.render import Progress


# ---------------------------------------------------------------------------------------- conversion
RETAIN, DETACHED, IMPORT = "retain", "detached", "import"  # infra/data/handover.py's steps
STEPS = (RETAIN, DETACHED, IMPORT)
WHAT = {
    RETAIN: "the table retained (DeletionPolicy Retain)",
    DETACHED: "the table taken out of the stack (kept by CloudFormation)",
    IMPORT: "the table imported as AWS::DynamoDB::GlobalTable (cdk import)",
}
START = {"table.to_global": RETAIN, "table.handover": IMPORT}


def start_step(findings: Sequence[Finding]) -> str | None:
    """The step a conversion starts at, from preflight's findings; None when there is none to make."""
    return next((START[f.code] for f in findings if f.code in START), None)


def stream_arn(aws: Aws, table_name: str) -> str:
    """The live table's stream ARN (the detached steps refer to it); UserError when it has none."""
    table = aws.client("dynamodb").describe_table(TableName=table_name)["Table"]
    arn = table.get("LatestStreamArn")
    if not arn or not (table.get("StreamSpecification") or {}).get("StreamEnabled"):
        raise UserError(f"table {table_name} has no stream: a global table replicates through it")
    return str(arn)


def import_command(deploy_command: Sequence[str], mapping_file: str) -> list[str]:
    """``cdk import`` of the stack ``deploy_command`` deploys, with its context and output directory."""
    command: list[str] = []
    skip = False
    for part in deploy_command:
        if skip:
            skip = False
        elif part in ("--require-approval", "--outputs-file"):
            skip = True  # deploy's options, with their value
        else:
            command.append(part)
    command[command.index("deploy")] = "import"  # the CDK CLI's command word (the first "deploy")
    return command + ["--resource-mapping", mapping_file, "--force"]


def step_command(
    step: str, deploy_command: Sequence[str], config: DocTableConfig, stream: str | None, mapping_file: str
) -> list[str]:
    """The CDK CLI command of one step."""
    context = ["-c", f"{TABLE_HANDOVER_CONTEXT}={step}"]
    if step != RETAIN:
        context += ["-c", f"{TABLE_STREAM_CONTEXT}={stream}"]
    if step == IMPORT:
        return import_command([*deploy_command, *context], mapping_file)
    return [*deploy_command, *context]


def convert(
    aws: Aws,
    config: DocTableConfig,
    start: str,
    deploy_command: Sequence[str],
    run: Callable[[list[str]], int],
    say: Callable[[str], None],
    records: list[dict[str, Any]],
) -> tuple[int, str | None]:
    """Run the steps from ``start`` (``run`` runs one CDK CLI command and gives its exit code); each step's name,
    command and exit code appended to ``records``. (0, None) when all succeeded, else (exit code, the step)."""
    steps = STEPS[STEPS.index(start) :]
    if start != RETAIN:
        say(f"the conversion of {config.table_name} to a global table continues at step {start}")
    with tempfile.TemporaryDirectory(prefix="doctable-import-") as folder:
        mapping_file = os.path.join(folder, "resource-mapping.json")
        with open(mapping_file, "w", encoding="utf-8") as out:
            json.dump({names.table_logical_id(): {"TableName": config.table_name}}, out)
        for step in steps:
            number = STEPS.index(step) + 1
            say(f"conversion step {number}/{len(STEPS)} ({step}): {WHAT[step]}")
            stream = None if step == RETAIN else stream_arn(aws, config.table_name)
            command = step_command(step, deploy_command, config, stream, mapping_file)
            say("$ " + " ".join(command))
            code = run(command)
            records.append({"step": step, "command": command, "exit": code})
            if code != 0:
                return code, step
    say(f"conversion of {config.table_name} imported: the deploy now adds the replicas")
    return 0, None


# ------------------------------------------------------------------------------------------ teardown
@dataclass(frozen=True)
class ReplicaStack:
    """One replica region's stack as DescribeStacks reports it."""

    region: str
    name: str
    stack_id: str
    status: str
    subscriber_buckets: tuple[str, ...] = ()  # emptied before the deletion (subscriber_buckets)

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
                ReplicaStack(
                    region, name, str(stack.get("StackId") or name), str(stack["StackStatus"]),
                    subscriber_buckets(config, stack),
                )
            )  # fmt: skip
    return found, notes


def delete_replica_stacks(
    aws: Aws, stacks: list[ReplicaStack], *, timeout: float, progress: Progress
) -> tuple[list[str], list[str]]:
    """Delete each stack and wait for it: (the labels of those gone, a line for each still present)."""
    removed: list[str] = []
    still: list[str] = []
    for stack in stacks:
        cfn = aws.in_region(stack.region).client("cloudformation")
        for bucket in stack.subscriber_buckets:  # a non-empty bucket would stop the deletion
            progress.say(f"emptying subscriber failure bucket {bucket} of {stack.name} in {stack.region}")
            _empty(aws.in_region(stack.region).client("s3"), bucket)
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


def subscriber_buckets(config: DocTableConfig, stack: dict[str, Any]) -> tuple[str, ...]:
    """The failure buckets of the subscribers a replica stack runs (its ``Subscriber<Name>FailureBucketName``
    outputs) that its deletion deletes: none where the tier keeps data (retained, with their failed batches)."""
    if config.retain_on_delete:
        return ()
    return tuple(
        str(o["OutputValue"])
        for o in stack.get("Outputs") or []
        if str(o.get("OutputKey", "")).startswith("Subscriber")
        and str(o.get("OutputKey", "")).endswith(names.OUT_SUBSCRIBER_FAILURE_BUCKET)
        and o.get("OutputValue")
    )


def _empty(s3: Any, bucket: str) -> None:
    """Delete every object and version of ``bucket`` (none when it is gone)."""
    try:
        for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
            batch = [
                {"Key": v["Key"], "VersionId": v["VersionId"]}
                for v in (page.get("Versions") or []) + (page.get("DeleteMarkers") or [])
            ]
            for start in range(0, len(batch), 1000):
                s3.delete_objects(
                    Bucket=bucket, Delete={"Objects": batch[start : start + 1000], "Quiet": True}
                )
    except ClientError as exc:
        if not is_not_found(exc):
            raise


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


# -------------------------------------------------------------------------------------------- deploy
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
                ReplicaStack(
                    region, name, str(stack.get("StackId") or name), str(stack["StackStatus"]),
                    subscriber_buckets(config, stack),
                )
            )  # fmt: skip
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


def deploy_replica_stacks(
    aws: Aws,
    config: DocTableConfig,
    live_before: Sequence[str],
    base_command: list[str],
    run: Callable[[list[str]], int],
    progress: Progress,
    report: dict[str, Any],
) -> int:
    """After the home stack: the consumer stack of each replica region (on the stream the replica now has, one cdk
    deploy ``run`` of ``base_command`` with the streams as context), then the removal of the consumer stack of each
    region the home stack's update took the replica out of (``live_before``: the replicas before it)."""
    if config.replicas:
        streams = replica_streams(aws, config.table_name, config.replicas)
        report["replica_streams"] = streams
        command = replica_deploy_command(base_command, config, streams)
        progress.say("$ " + " ".join(command))
        code = run(command)
        if code != 0:
            return code
    report["replica_stacks_deleted"] = remove_stale_replica_stacks(aws, config, live_before, progress)
    return 0
