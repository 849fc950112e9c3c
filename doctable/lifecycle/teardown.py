"""``doctable teardown``: remove one environment's stack — ownership-checked, confirmed, absence-verified."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError, WaiterError

from contract import names
from contract.knobs import MANAGED_BY
from doctable.capabilities.protocol import TABLE_TYPES
from doctable.core.answers import call_or_none, is_not_found
from doctable.core.aws import Aws, bucket_exists, user_errors
from doctable.core.command import connect
from doctable.core.context import describe_stack
from doctable.core.deployment import Deployment, is_ours, table_tags
from doctable.core.errors import RefusedError
from doctable.core.ledger import record_ledger
from doctable.core.render import Progress, now_iso
from doctable.core.target import Target
from doctable.lifecycle.global_table import (
    ReplicaStack,
    delete_replica_stacks,
    find_replica_stacks,
    lift_replica_protection,
)
from doctable.lifecycle.results import TeardownResult
from doctable.lifecycle.subscriber_resources import retained_key, subscriber_mappings, subscriber_owners

RETAIN_POLICIES = ("Retain", "RetainExceptOnCreate", "Snapshot")
MAPPING = "AWS::Lambda::EventSourceMapping"
PROBED_TYPES = (
    *TABLE_TYPES,
    MAPPING,
    "AWS::Lambda::Function",
    "AWS::S3::Bucket",
    "AWS::Logs::LogGroup",
    "AWS::IAM::Role",
    "AWS::Kinesis::Stream",  # kinesis=on: deleted with the stack in dev/stg, retained like the table elsewhere
)


@dataclass
class Resource:
    logical_id: str
    type: str
    physical_id: str
    retained: bool
    owner: str = ""  # the subscriber it belongs to, if any

    @property
    def label(self) -> str:
        return f"{self.type} {self.physical_id}" + (f" of subscriber {self.owner}" if self.owner else "")


@dataclass
class Plan:
    deployment: Deployment
    resources: list[Resource] = field(default_factory=list)
    table: dict[str, Any] | None = None
    table_retained: bool = False
    notes: list[str] = field(default_factory=list)
    # A global table's replica stacks: deleted before the home stack, whose table holds the streams they read.
    replica_stacks: list[ReplicaStack] = field(default_factory=list)

    def of_type(self, type_: str) -> list[Resource]:
        return [r for r in self.resources if r.type == type_]

    def tables(self) -> list[Resource]:
        """The stack's table resources, single-region or global."""
        return [r for r in self.resources if r.type in TABLE_TYPES]


@dataclass
class Outcome:
    removed: list[str] = field(default_factory=list)
    retained: list[str] = field(default_factory=list)
    still_present: list[str] = field(default_factory=list)
    emptied: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.still_present

    def as_dict(self) -> dict[str, Any]:
        return {
            "removed": self.removed,
            "retained": self.retained,
            "still_present": self.still_present,
            "emptied": self.emptied,
            "notes": self.notes,
            "clean": self.clean,
        }


def _template(aws: Aws, stack: str) -> dict[str, Any]:
    body = aws.client("cloudformation").get_template(StackName=stack, TemplateStage="Original")[
        "TemplateBody"
    ]
    if isinstance(body, str):
        try:
            return dict(json.loads(body))
        except ValueError:
            return {}  # YAML: our stacks are JSON (CDK); fall back to the knobs for policies
    return dict(body)


def plan_teardown(aws: Aws, deployment: Deployment) -> Plan:
    config = deployment.config
    plan = Plan(deployment)
    ddb = aws.client("dynamodb")
    if deployment.exists:
        template = _template(aws, config.stack_name)
        policies = {k: v.get("DeletionPolicy") for k, v in (template.get("Resources") or {}).items()}
        owners = subscriber_owners(deployment)
        paginator = aws.client("cloudformation").get_paginator("list_stack_resources")
        for page in paginator.paginate(StackName=config.stack_name):
            for summary in page.get("StackResourceSummaries", []):
                physical = summary.get("PhysicalResourceId")
                if not physical or summary.get("ResourceStatus") == "DELETE_COMPLETE":
                    continue
                logical = summary["LogicalResourceId"]
                policy = policies.get(logical)
                retained = policy in RETAIN_POLICIES if logical in policies else config.retain_on_delete
                owner = owners.get(physical, "")  # the subscriber whose output names it, if any
                plan.resources.append(Resource(logical, summary["ResourceType"], physical, retained, owner))
    tables = plan.tables()
    table_name = tables[0].physical_id if tables else config.table_name
    plan.table_retained = tables[0].retained if tables else False
    plan.table = (call_or_none(ddb.describe_table, TableName=table_name) or {}).get("Table")
    plan.replica_stacks, unread = find_replica_stacks(aws, config, plan.table if tables else None)
    plan.notes += unread
    if plan.table is not None and not tables:
        plan.notes.append(
            f"table {table_name} exists outside stack {config.stack_name} (not the stack's): left untouched"
        )
    return plan


def check_ownership(aws: Aws, plan: Plan, lift: bool) -> None:
    """Refuse a table that is not ours, and a protected one unless the user lifts the protection explicitly."""
    table = plan.table
    if table is None or not plan.tables():
        return
    tags = table_tags(aws, table["TableArn"])
    if not is_ours(tags):
        raise RefusedError(
            f"table {table['TableName']} is not ours (no ManagedBy={MANAGED_BY} tag): refusing to tear it down — "
            "that is a human decision"
        )
    if table.get("DeletionProtectionEnabled") and not lift:
        fate = (
            "the stack RETAINs the table: it and its data stay, the rest goes"
            if plan.table_retained
            else "the protection is lifted, then the table is deleted with the stack"
        )
        raise RefusedError(
            f"table {table['TableName']} has deletion protection on: refusing to tear down; re-run with "
            f"--lift-deletion-protection if you mean it ({fate})"
        )


def lift_protection(aws: Aws, plan: Plan, progress: Progress) -> str | None:
    """Lift the protection of the table the stack deletes and of each of its replicas that has it. Each replica is
    looked at even when the home table is no longer protected: a teardown refused after lifting the home table's
    left its replicas protected, and CloudFormation cannot delete a protected replica."""
    table = plan.table
    if table is None or plan.table_retained:
        if table is not None and table.get("DeletionProtectionEnabled"):
            name = table["TableName"]
            return f"deletion protection left ON: table {name} is retained (RETAIN), the stack will not delete it"
        return None
    name = table["TableName"]
    lifted = []
    if table.get("DeletionProtectionEnabled"):
        ddb = aws.client("dynamodb")
        ddb.update_table(TableName=name, DeletionProtectionEnabled=False)
        progress.wait(
            f"table {name} to be ACTIVE after lifting deletion protection",
            lambda: (
                True if ddb.describe_table(TableName=name)["Table"].get("TableStatus") == "ACTIVE" else None
            ),
            300,
        )
        lifted.append(name)
    # The replicas' protection is the settings' too: looked at when the settings or the home table protect.
    protects = bool(lifted) or plan.deployment.config.deletion_protection
    regions = lift_replica_protection(aws, table, progress) if protects else []
    if regions:
        lifted.append(
            f"its replicas in {', '.join(regions)}"
            if lifted
            else f"the replicas of {name} in {', '.join(regions)}"
        )
    return (
        f"deletion protection lifted on {' and '.join(lifted)} (--lift-deletion-protection)"
        if lifted
        else None
    )


def describe_plan(plan: Plan) -> list[str]:
    config = plan.deployment.config
    lines = [
        f"teardown of {config.stack_name} in {plan.deployment.region} (account {plan.deployment.account}):"
    ]
    lines += [f"  {'delete first':<14} {stack.label}" for stack in plan.replica_stacks]
    for resource in plan.resources:
        verb = "keep (RETAIN)" if resource.retained else "delete"
        lines.append(f"  {verb:<14} {resource.label}")
    if config.borrowed_consumer_arn:
        lines.append(f"  {'untouched':<14} borrowed consumer {config.borrowed_consumer_arn}")
    if plan.table is not None:
        count = plan.table.get("ItemCount")
        if not plan.table_retained and plan.tables():
            lines.append(
                f"  blast radius: every item in {plan.table['TableName']} (~{count} items) is destroyed"
            )
    return lines + [f"  note: {n}" for n in plan.notes]


def confirm(plan: Plan, assume_yes: bool, read: Callable[[str], str] | None = None) -> None:
    """``assume_yes``, or the stack's name typed at ``read`` (the terminal's question; None: no terminal)."""
    if assume_yes:
        return
    if read is None:
        raise RefusedError("teardown needs a confirmation: run it in a terminal, or pass --yes")
    stack = plan.deployment.config.stack_name
    answer = read(f"type the stack name ({stack}) to delete it: ").strip()
    if answer != stack:
        raise RefusedError("not confirmed: nothing was removed")


def _bucket_objects(s3: Any, bucket: str) -> int:
    count = 0
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        count += len(page.get("Versions", []) or []) + len(page.get("DeleteMarkers", []) or [])
    return count


def empty_bucket(s3: Any, bucket: str) -> int:
    """Delete every object (and version) of a stack-created bucket: a non-empty bucket blocks deletion."""
    removed = 0
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        batch = [
            {"Key": v["Key"], "VersionId": v["VersionId"]}
            for v in (page.get("Versions", []) or []) + (page.get("DeleteMarkers", []) or [])
        ]
        for start in range(0, len(batch), 1000):
            chunk = batch[start : start + 1000]
            s3.delete_objects(Bucket=bucket, Delete={"Objects": chunk, "Quiet": True})
            removed += len(chunk)
    return removed


def _stack_delete_failures(aws: Aws, stack_id: str) -> list[str]:
    events = aws.client("cloudformation").describe_stack_events(StackName=stack_id).get("StackEvents", [])
    return [
        f"{e.get('LogicalResourceId')}: {e.get('ResourceStatusReason')}"
        for e in events
        if e.get("ResourceStatus") == "DELETE_FAILED"
    ][:5]


def _exists(aws: Aws, resource: Resource) -> bool | None:
    """True/False for the probed types; None when this type is not probed (CloudFormation's word holds)."""
    pid = resource.physical_id
    try:
        if resource.type in TABLE_TYPES:
            table = call_or_none(aws.client("dynamodb").describe_table, TableName=pid)
            return table is not None and table["Table"].get("TableStatus") != "DELETING"
        if resource.type == "AWS::Lambda::EventSourceMapping":
            mapping = call_or_none(aws.client("lambda").get_event_source_mapping, UUID=pid)
            return mapping is not None and mapping.get("State") != "Deleting"
        if resource.type == "AWS::Lambda::Function":
            return call_or_none(aws.client("lambda").get_function, FunctionName=pid) is not None
        if resource.type == "AWS::S3::Bucket":
            return bucket_exists(aws.client("s3"), pid)
        if resource.type == "AWS::Logs::LogGroup":
            groups = aws.client("logs").describe_log_groups(logGroupNamePrefix=pid).get("logGroups", [])
            return any(g.get("logGroupName") == pid for g in groups)
        if resource.type == "AWS::IAM::Role":
            return call_or_none(aws.client("iam").get_role, RoleName=pid) is not None
        if resource.type == "AWS::Kinesis::Stream":
            stream = call_or_none(aws.client("kinesis").describe_stream_summary, StreamName=pid)
            return stream is not None and stream["StreamDescriptionSummary"].get("StreamStatus") != "DELETING"
    except ClientError as exc:
        if is_not_found(exc):
            return False
        raise
    return None


def _mapping_resource(plan: Plan) -> list[Resource]:
    """The mappings (the consumer's, each subscriber's) by their output UUIDs, even if listed under other names."""
    wanted = {plan.deployment.out(names.OUT_MAPPING_UUID) or "": "", **subscriber_mappings(plan.deployment)}
    listed = {r.physical_id for r in plan.of_type(MAPPING)}
    return [Resource("Mapping", MAPPING, u, False, o) for u, o in wanted.items() if u and u not in listed]


def execute(aws: Aws, plan: Plan, *, timeout: float, progress: Progress) -> Outcome:
    outcome = Outcome()
    config = plan.deployment.config
    s3 = aws.client("s3")
    # a failed stack deletion removes nothing more: what is left is probed once, not awaited
    stack_failed = False
    replicas_gone, outcome.still_present = delete_replica_stacks(
        aws, plan.replica_stacks, timeout=timeout, progress=progress
    )
    outcome.removed += replicas_gone
    if outcome.still_present:
        outcome.notes.append(
            f"stack {config.stack_name} left as it is: its replica stacks are not all gone, and their consumers "
            "read the streams of its table; run the teardown again"
        )
        return outcome
    if not plan.deployment.exists:
        outcome.notes.append(f"stack {config.stack_name} is not deployed: nothing to remove")
    else:
        for bucket in plan.of_type("AWS::S3::Bucket"):
            if bucket.retained or config.retain_on_delete:  # an env that keeps its data keeps its blobs
                continue
            if not bucket_exists(s3, bucket.physical_id):
                continue
            count = empty_bucket(s3, bucket.physical_id)
            outcome.emptied.append(f"{bucket.label.split(' ', 1)[1]} ({count} objects)")
        cfn = aws.client("cloudformation")
        stack_id = plan.deployment.stack_id or config.stack_name
        progress.say(f"deleting stack {config.stack_name}")
        cfn.delete_stack(StackName=stack_id)
        try:
            cfn.get_waiter("stack_delete_complete").wait(
                StackName=stack_id, WaiterConfig={"Delay": 5, "MaxAttempts": max(1, int(timeout // 5))}
            )
        except WaiterError as exc:
            stack_failed = True
            failures = _stack_delete_failures(aws, stack_id)
            outcome.still_present.append(
                f"stack {config.stack_name}: {exc.last_response.get('Stacks', [{}])[0].get('StackStatus', exc)}"
                if isinstance(exc.last_response, dict) and exc.last_response.get("Stacks")
                else f"stack {config.stack_name}: delete did not complete ({exc})"
            )
            outcome.notes += failures
        else:
            outcome.removed.append(f"AWS::CloudFormation::Stack {config.stack_name}")
    # ✔ absence: everything not retained must be gone; retained things are listed as such
    for resource in plan.resources + _mapping_resource(plan):
        if resource.type not in PROBED_TYPES:
            if (
                plan.deployment.exists
                and not resource.retained
                and not any(s.startswith(f"stack {config.stack_name}") for s in outcome.still_present)
            ):
                outcome.removed.append(resource.label)
            continue
        wait = 0 if resource.retained or stack_failed else timeout
        present = _wait_absent(aws, resource, wait, progress)
        if resource.retained:
            if present:
                outcome.retained.append(_retained_label(aws, resource))
            else:
                outcome.notes.append(f"{resource.label} was RETAIN but is gone")
        elif present:
            outcome.still_present.append(resource.label)
        else:
            outcome.removed.append(resource.label)
    if plan.table is not None and not plan.tables():
        outcome.retained.append(
            f"AWS::DynamoDB::Table {plan.table['TableName']} (outside the stack, untouched)"
        )
    if config.borrowed_consumer_arn:
        outcome.retained.append(f"borrowed consumer {config.borrowed_consumer_arn} (not ours: untouched)")
    if config.blob_bucket:
        outcome.retained.append(f"borrowed blob bucket {config.blob_bucket} (not ours: untouched)")
    outcome.notes += plan.notes
    return outcome


def _wait_absent(aws: Aws, resource: Resource, timeout: float, progress: Progress) -> bool:
    if timeout <= 0:
        return bool(_exists(aws, resource))
    gone, _ = progress.wait(
        f"{resource.label} to be gone",
        lambda: True if not _exists(aws, resource) else None,
        timeout,
        interval=1.0,
    )
    return gone is None


def _retained_label(aws: Aws, resource: Resource) -> str:
    label = f"{resource.label} (RETAIN)"
    if resource.type == "AWS::S3::Bucket":
        try:
            count = _bucket_objects(aws.client("s3"), resource.physical_id)
        except ClientError:
            return label
        return f"{resource.label} (RETAIN, {count} objects kept)"
    if resource.type in TABLE_TYPES:
        return f"{resource.label} (RETAIN with its data: env keeps it on delete)"
    return label


def run_teardown(
    aws: Aws,
    deployment: Deployment,
    *,
    assume_yes: bool,
    lift: bool,
    timeout: float,
    progress: Progress,
    read: Callable[[str], str] | None = None,
) -> tuple[Plan, Outcome]:
    with user_errors(f"planning the teardown of {deployment.config.stack_name}"):
        plan = plan_teardown(aws, deployment)
        check_ownership(aws, plan, lift)
    for line in describe_plan(plan):
        progress.say(line)
    if deployment.exists or plan.replica_stacks:
        confirm(plan, assume_yes, read)
    started = time.monotonic()
    with user_errors(f"tearing down {deployment.config.stack_name}"):
        note = lift_protection(aws, plan, progress) if lift else None
        outcome = execute(
            aws, plan, timeout=max(1.0, timeout - (time.monotonic() - started)), progress=progress
        )
    if note:
        outcome.notes.insert(0, note)
    return plan, outcome


# ---------------------------------------------------------------------------------------------- command
def teardown(
    target: Target,
    *,
    yes: bool = False,
    lift_deletion_protection: bool = False,
    timeout: float = 1800.0,
    ledger: bool = False,
    ledger_dir: str | None = None,
    state_dir: str | None = None,
    ask: Callable[[str], str] | None = None,
) -> TeardownResult:
    """Remove ``target``'s stack once it is shown to be ours and confirmed (``yes``, or the stack's name typed at
    ``ask``, the terminal's question: None refuses without ``yes``); then what is gone and what is retained."""
    config, aws, deployment = connect(target, command="teardown")
    progress = Progress("doctable teardown", quiet=target.quiet)
    plan, outcome = run_teardown(
        aws,
        deployment,
        assume_yes=yes,
        lift=lift_deletion_protection,
        timeout=timeout,
        progress=progress,
        read=ask,
    )
    if ledger:
        kept = {retained_key(b.owner): b.physical_id for b in plan.of_type("AWS::S3::Bucket")
                if b.owner and any(r.startswith(b.label) for r in outcome.retained)}  # fmt: skip
        record_ledger(
            ledger_dir, aws, describe_stack(aws, config), torn_down=True, kept=kept, state_directory=state_dir
        )
    return result_of(config.stack_name, outcome, ledger_written=ledger)


def result_of(stack: str, outcome: Outcome, *, ledger_written: bool = False) -> TeardownResult:
    return TeardownResult(
        stack=stack,
        at=now_iso(),
        removed=tuple(outcome.removed),
        retained=tuple(outcome.retained),
        still_present=tuple(outcome.still_present),
        emptied=tuple(outcome.emptied),
        notes=tuple(outcome.notes),
        ledger_written=ledger_written,
    )
