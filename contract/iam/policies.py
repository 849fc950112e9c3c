"""Least-privilege IAM policies for the doctable commands, computed from one environment's resolved knobs.

Each command's part lists the calls its code makes (read from doctable/'s command modules: the call, then the
resource AWS authorizes it on), scoped to this environment's stack, table and the names CloudFormation generates
from the stack's name; a statement whose call only exists for some knobs (a stream, a mapping, Kinesis, a KMS key, a
borrowed consumer) is there only when the knobs have it. A role is the union of its commands' parts (the
reader's verify part is the read-only verify's). ``"*"`` is used only for calls AWS authorizes on no resource, each
in a statement whose Sid says so. Standard library only: the console script prints these (``doctable policy``) and
the tests evaluate them on the local AWS.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from contract.iam.bootstrap import DEPLOYER_BOOTSTRAP_ROLES, toolkit_stack_name
from contract.iam.lock import LOCK_ACTIONS, LOCK_SID, lock_arn
from contract.iam.replicas import VERIFY_KEY_PREFIX, replica_parts
from contract.iam.subscribers import (
    read_subscribers,
    replay_subscribers,
    subscriber_functions,
    subscriber_proof_lines,
)
from contract.iam.target import (
    FAILURE_PREFIX,
    GENERATED_BUCKET_STACK_CHARS,
    Statement,
    Target,
    partition_of,
)
from contract.iam.trust import SUBJECT_TEMPLATE, PolicyError, ci_trust_policy, subject_command

# Re-exported: the CI role's trust policy beside the permission policies, and what a policy is built on.
__all__ = [
    "FAILURE_PREFIX",
    "GENERATED_BUCKET_STACK_CHARS",
    "PolicyError",
    "Statement",
    "Target",
    "ci_trust_policy",
    "subject_command",
    "SUBJECT_TEMPLATE",
    "partition_of",
]

POLICY_VERSION = "2012-10-17"
DEPLOYER, OPERATOR, READER = "deployer", "operator", "reader"
ROLE_COMMANDS: dict[str, tuple[str, ...]] = {
    # deploy: the reads of preflight and the gate, then `cdk deploy` through the bootstrap roles; the verify that
    # closes a deploy is the operator's (a pipeline's role holds both).
    DEPLOYER: ("deploy",),
    OPERATOR: ("verify", "reconcile", "replay", "teardown", "ledger", "plan", "logs", "invoke"),
    # The reader's verify is `doctable verify --read-only` (ROLE_PARTS): it writes nothing.
    READER: ("preflight", "ledger", "verify"),
}
VERIFY_READ_ONLY = "verify-read-only"
# A role's command whose part is not the command's own: the reader runs verify read-only.
ROLE_PARTS: dict[tuple[str, str], str] = {(READER, "verify"): VERIFY_READ_ONLY}
ROLES = tuple(ROLE_COMMANDS)
# Commands that have no policy part, and why (`doctable policy ... --command` says so instead of "unknown").
NO_PART: dict[str, str] = {
    "watch": "watch runs on the local AWS only (it updates the consumer's code behind the stack); on AWS the "
    "consumer's code changes with `doctable deploy`, whose part is the deployer's",
}
COMMANDS = tuple(dict.fromkeys(c for commands in ROLE_COMMANDS.values() for c in commands))


# A customer managed policy's limit, counted without whitespace.
MANAGED_POLICY_LIMIT = 6144
SID_RE = re.compile(r"^[A-Za-z0-9]+$")


# ---------------------------------------------------------------------------------------- the grants
def _read_stack(t: Target, *actions: str) -> Statement:
    return Statement("ReadStack", tuple(f"cloudformation:{a}" for a in actions), (t.stack_arn,))


def _read_table(t: Target, *actions: str) -> Statement:
    return Statement("ReadTable", tuple(f"dynamodb:{a}" for a in actions), (t.table_arn,))


# What a look at the live table reads (doctable/capabilities/protocol.py observe, the capabilities' findings and drift).
TABLE_OBSERVE = (
    "DescribeTable",
    "DescribeTimeToLive",
    "DescribeContinuousBackups",
    "DescribeContributorInsights",
    "ListTagsOfResource",
    "GetResourcePolicy",
    "DescribeKinesisStreamingDestination",
)


def _mapping_condition(t: Target) -> dict[str, dict[str, list[str]]]:
    return {"ArnLike": {"lambda:FunctionArn": list(t.functions)}}


def _read_mapping(t: Target) -> list[Statement]:
    """The mapping's settings (scoped by the function it invokes) and its tags (ListTags has no such key)."""
    if not t.config.has_mapping:
        return []
    return [
        Statement("ReadMapping", ("lambda:GetEventSourceMapping",), t.mappings, _mapping_condition(t)),
        Statement("ListMappingTagsUuidKnownOnlyAfterDeploy", ("lambda:ListTags",), t.mappings),
    ]


def _kms_reads(t: Target, *actions: str) -> list[Statement]:
    if not (t.config.customer_managed_key or t.config.aws_managed_key):
        return []
    return [Statement("ReadTableKey", tuple(f"kms:{a}" for a in actions), t.kms_keys)]


def _decrypt_reads(t: Target) -> list[Statement]:
    """A read of the table's items or stream records under a KMS key decrypts through DynamoDB as the caller."""
    if not (t.config.customer_managed_key or t.config.aws_managed_key):
        return []
    via = {"StringEquals": {"kms:ViaService": [f"dynamodb.{t.region}.amazonaws.com"]}}
    return [Statement("DecryptTableReads", ("kms:Decrypt",), t.kms_keys, via)]


def _describe_kinesis(t: Target) -> list[Statement]:
    """DescribeKinesisStreamingDestination (in TABLE_OBSERVE) also reads, as the caller, each stream the table
    streams to (DynamoDB's guide lists both reads)."""
    if not t.config.has_kinesis:
        return []
    actions = ("kinesis:DescribeStreamSummary", "kinesis:DescribeStream")
    return [Statement("DescribeKinesisDestination", actions, t.kinesis_streams)]


def _observe(t: Target) -> list[Statement]:
    """What preflight, the deploy gate and reconcile read of the stack, its table and what hangs off it."""
    return [
        _read_stack(t, "DescribeStacks", "ListStackResources"),
        _read_table(t, *TABLE_OBSERVE),
        *_describe_kinesis(t),
        *_read_mapping(t),
        *_kms_reads(t, "DescribeKey"),
    ]


def _borrowed(t: Target) -> list[Statement]:
    """Preflight's look at what the knobs borrow (doctable/capabilities/borrowed.py)."""
    found: list[Statement] = []
    arn = t.config.borrowed_consumer_arn
    if arn:
        found.append(Statement("ReadBorrowedConsumer", ("lambda:GetFunction",), (arn,)))
        # Its role is named by the function, not by the knobs: any role of the account, simulated only.
        found.append(
            Statement(
                "SimulateBorrowedConsumerRoleUnknownBeforeRead",
                ("iam:SimulatePrincipalPolicy",),
                (t.arn("iam", "role/*", region=False),),
            )
        )
    # A borrowed Kinesis stream's summary is read by DescribeKinesisDestination's grant (the same stream).
    return found


def _preflight(t: Target) -> list[Statement]:
    # The environments' stacks, to name one the settings no longer declare (env.orphaned): ListStacks has no
    # resource type, and reads names and statuses only.
    listing = Statement("ListStacksAcceptsNoResource", ("cloudformation:ListStacks",), ("*",))
    return [*_observe(t), *_borrowed(t), listing, *_stream_readers(t), _read_bootstrap(t)]


def _read_bootstrap(t: Target) -> Statement:
    """The bootstrap stack of the environment's qualifier, its execution policies read (bootstrap.* findings)."""
    stack = t.arn("cloudformation", f"stack/{toolkit_stack_name(t.qualifier)}/*")
    return Statement("ReadBootstrapStack", ("cloudformation:DescribeStacks",), (stack,))


def _stream_readers(t: Target) -> list[Statement]:
    """The mappings live on the table's stream, counted against its reader limit (doctable/capabilities/consumer.py):
    ListEventSourceMappings is authorized on no resource (the Service Authorization Reference lists none)."""
    if not t.config.has_stream:
        return []
    return [Statement("ListMappingsAcceptsNoResource", ("lambda:ListEventSourceMappings",), ("*",))]


def _lock(t: Target) -> Statement:
    """The environment's lock (doctable/lifecycle/lock.py), held by each command that changes the environment:
    its one object in the bootstrap's file-assets bucket, read, conditionally written and deleted; nothing wider
    (no s3:ListBucket: a missing lock reads as 403, which the lock handles)."""
    arn = lock_arn(t.partition, t.account, t.region, t.stack, t.qualifier)
    return Statement(LOCK_SID, LOCK_ACTIONS, (arn,))


def _deploy(t: Target) -> list[Statement]:
    roles = tuple(t.bootstrap_role(kind) for kind in DEPLOYER_BOOTSTRAP_ROLES)
    return [*_preflight(t), Statement("AssumeCdkBootstrapRoles", ("sts:AssumeRole",), roles), _lock(t)]


def _ledger(t: Target) -> list[Statement]:
    # DescribeTable: a table retained after its stack went (doctable/core/ledger.py _retained).
    return [_read_stack(t, "DescribeStacks"), _read_table(t, "DescribeTable")]


def _verify(t: Target) -> list[Statement]:
    """doctable/verify: ownership, the declared configuration, test items under their own partition key,
    the stream record, the mapping, the consumer and its proof line, the blob clean-up."""
    c = t.config
    found = [
        _read_stack(t, "DescribeStacks", "ListStackResources"),
        _read_table(t, *TABLE_OBSERVE),
        *_describe_kinesis(t),
        Statement(
            "VerifyTestItemsOnly",
            tuple(f"dynamodb:{a}" for a in ("PutItem", "GetItem", "DeleteItem", "Query")),
            (t.table_arn,),
            {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{VERIFY_KEY_PREFIX}*"]}},
        ),
    ]
    if c.has_gsi or c.indexes:
        found.append(Statement("QueryIndexes", ("dynamodb:Query",), (f"{t.table_arn}/index/*",)))
    direct = any(not s.reads_kinesis for s in c.subscribers)
    if c.has_stream and (not c.reads_kinesis or direct):
        reads = ("DescribeStream", "GetShardIterator", "GetRecords")
        stream = (f"{t.table_arn}/stream/*",)
        found.append(Statement("ReadStreamRecord", tuple(f"dynamodb:{a}" for a in reads), stream))
    if c.reads_kinesis or any(s.reads_kinesis for s in c.subscribers):
        # the nudge's record read off the Kinesis stream, when the mapping (or a subscriber's) reads that stream
        kinesis_reads = ("DescribeStreamSummary", "ListShards", "GetShardIterator", "GetRecords")
        found.append(
            Statement("ReadKinesisRecord", tuple(f"kinesis:{a}" for a in kinesis_reads), t.kinesis_streams)
        )
    found += _read_mapping(t) + read_subscribers(t) + subscriber_proof_lines(t)
    if c.builtin_consumer:
        found.append(Statement("ReadConsumer", ("lambda:GetFunctionConfiguration",), t.functions))
        found.append(Statement("ReadProofLines", ("logs:FilterLogEvents",), t.log_groups))
        bucket = t.blob_bucket
        found.append(
            Statement(
                "ListVerifyBlobs",
                ("s3:ListBucket",),
                (t.bucket_arn(bucket),),
                {"StringLike": {"s3:prefix": [f"{c.blob_root}{VERIFY_KEY_PREFIX}*"]}},
            )
        )
        blobs = (t.bucket_arn(bucket, f"{c.blob_root}{VERIFY_KEY_PREFIX}*"),)
        found.append(Statement("WriteVerifyBlobs", ("s3:PutObject", "s3:DeleteObject"), blobs))
    if c.customer_managed_key or c.aws_managed_key:
        found += _kms_reads(t, "DescribeKey", "GetKeyRotationStatus")
    return found + _decrypt_reads(t)


def _verify_read_only(t: Target) -> list[Statement]:
    """``doctable verify --read-only`` (doctable/verify, the checks that write nothing): ownership, the declared
    configuration, the Kinesis stream, the mapping and its tags, the consumer's configuration, the table's key. No
    item, stream record, proof line or blob: those are the checks that write."""
    c = t.config
    # The Kinesis row reads the stream's summary: one of DescribeKinesisDestination's reads.
    found = [
        _read_stack(t, "DescribeStacks", "ListStackResources"),
        _read_table(t, *TABLE_OBSERVE),
        *_describe_kinesis(t),
    ]
    found += _read_mapping(t) + read_subscribers(t)
    if c.builtin_consumer:
        found.append(Statement("ReadConsumer", ("lambda:GetFunctionConfiguration",), t.functions))
    # The rotation is read only of a key the stack creates (doctable/verify/security.py).
    rotation = ("GetKeyRotationStatus",) if c.customer_managed_key and not c.borrowed_kms_key_arn else ()
    return found + _kms_reads(t, "DescribeKey", *rotation)


# The calls reconcile restores drift with (doctable/capabilities/*.py ``apply``; drift.REPAIR_ORDER).
TABLE_REPAIRS = (
    "TagResource",
    "UpdateTable",
    "UpdateContinuousBackups",
    "UpdateContributorInsights",
    "DeleteResourcePolicy",
    "UpdateTimeToLive",
)


def _reconcile(t: Target) -> list[Statement]:
    c = t.config
    repairs = list(TABLE_REPAIRS)
    if c.has_resource_policy:
        repairs.append("PutResourcePolicy")
    if c.has_kinesis:
        repairs += ["EnableKinesisStreamingDestination", "UpdateKinesisStreamingDestination"]
    found = [*_observe(t), Statement("RepairTable", tuple(f"dynamodb:{a}" for a in repairs), (t.table_arn,))]
    found.append(_lock(t))  # --apply holds the environment's lock
    if c.has_kinesis:
        # Enabling a destination checks that the caller may describe and write the stream, and list streams
        # (DynamoDB's guide); ListStreams is authorized on no resource.
        actions = ("kinesis:DescribeStream", "kinesis:PutRecords")
        found.append(Statement("StreamTableToKinesis", actions, t.kinesis_streams))
        found.append(Statement("ListKinesisStreamsAcceptsNoResource", ("kinesis:ListStreams",), ("*",)))
    if c.has_mapping:
        found.append(
            Statement(
                "RepairMapping", ("lambda:UpdateEventSourceMapping",), t.mappings, _mapping_condition(t)
            )
        )
        found.append(Statement("TagMappingUuidKnownOnlyAfterDeploy", ("lambda:TagResource",), t.mappings))
    return found


def _replay(t: Target) -> list[Statement]:
    """doctable/operate/replay.py: the failure bucket's objects, the consumer invoked, the live items (rebase), and
    the stream re-read for a record kept without its payload."""
    c = t.config
    if not c.has_mapping:
        return [_read_stack(t, "DescribeStacks"), *replay_subscribers(t)]
    bucket = t.failure_bucket
    return [
        _read_stack(t, "DescribeStacks"),
        *replay_subscribers(t),
        Statement(
            "ListFailedBatches",
            ("s3:ListBucket",),
            (t.bucket_arn(bucket),),
            {"StringLike": {"s3:prefix": [f"{FAILURE_PREFIX}*"]}},
        ),
        Statement(
            "ReplayFailedBatches",
            ("s3:GetObject", "s3:PutObject", "s3:DeleteObject"),
            (t.bucket_arn(bucket, f"{FAILURE_PREFIX}*"),),
        ),
        Statement("InvokeConsumer", ("lambda:InvokeFunction",), t.functions),
        Statement("ReadLiveItems", ("dynamodb:GetItem",), (t.table_arn,)),
        Statement(
            "RereadStreamRecords",
            ("dynamodb:GetShardIterator", "dynamodb:GetRecords"),
            (f"{t.table_arn}/stream/*",),
        ),
        *_decrypt_reads(t),
    ]


def _teardown(t: Target) -> list[Statement]:
    """doctable/lifecycle/teardown.py: the plan (template, resources, ownership), the buckets emptied, the stack
    deleted (CloudFormation acts as the stack's execution role), each resource probed for its absence."""
    c = t.config
    found = [
        _read_stack(t, "DescribeStacks", "GetTemplate", "ListStackResources", "DescribeStackEvents"),
        Statement("DeleteStack", ("cloudformation:DeleteStack",), (t.stack_arn,)),
        _read_table(t, "DescribeTable", "ListTagsOfResource"),
        _lock(t),
    ]
    if c.deletion_protection:
        # --lift-deletion-protection: only a table the settings protect needs the unlock step.
        found.append(Statement("LiftDeletionProtection", ("dynamodb:UpdateTable",), (t.table_arn,)))
    if c.has_mapping or c.subscribers:
        # The failure buckets (the consumer's, each subscriber's) and the built-in consumer's blob bucket are the
        # stack's only buckets.
        bucket_arns = tuple(t.bucket_arn(b) for b in t.stack_buckets)
        actions = ("s3:ListBucket", "s3:ListBucketVersions", "s3:DeleteObject", "s3:DeleteObjectVersion")
        found.append(
            Statement("EmptyStackBuckets", actions, bucket_arns + tuple(f"{arn}/*" for arn in bucket_arns))
        )
        found.append(
            # No lambda:FunctionArn condition: a mapping already deleted has no function for it to match.
            Statement("ProbeMapping", ("lambda:GetEventSourceMapping",), t.mappings)
        )
    if c.builtin_consumer:
        # The consumer's role and log group are the stack's only role and log group.
        found.append(Statement("ProbeStackRoles", ("iam:GetRole",), t.stack_roles))
        # DescribeLogGroups is authorized on no log group (it lists them by prefix).
        found.append(Statement("ListLogGroupsAcceptsNoResource", ("logs:DescribeLogGroups",), ("*",)))
        found.append(Statement("ProbeConsumer", ("lambda:GetFunction",), t.functions))
    if c.creates_kinesis_stream:
        found.append(Statement("ProbeKinesisStream", ("kinesis:DescribeStreamSummary",), t.kinesis_streams))
    return found


def _logs(t: Target) -> list[Statement]:
    """doctable/operate/logs.py: the consumer's log group named by the stack's output, read (and followed)."""
    found = [_read_stack(t, "DescribeStacks")]
    if t.config.builtin_consumer:
        found.append(Statement("ReadProofLines", ("logs:FilterLogEvents",), t.log_groups))
    return found + subscriber_proof_lines(t)  # --subscriber NAME: its own log group


def _invoke(t: Target) -> list[Statement]:
    """doctable/operate/invoke.py: what the mapping invokes (its FunctionArn: the alias with snapstart), invoked with
    one event; without a mapping, the consumer replay invokes."""
    c = t.config
    found = [_read_stack(t, "DescribeStacks")]
    if c.subscribers:  # --subscriber NAME: its function, named by the stack's output
        found.append(Statement("InvokeSubscribers", ("lambda:InvokeFunction",), subscriber_functions(t)))
    if not c.has_mapping:  # nothing to invoke: the command says so after reading the stack
        return found
    return [
        *found,
        Statement("ReadMapping", ("lambda:GetEventSourceMapping",), t.mappings, _mapping_condition(t)),
        Statement("InvokeConsumer", ("lambda:InvokeFunction",), t.functions),
    ]


_PARTS = {
    "preflight": _preflight,
    "deploy": _deploy,
    "ledger": _ledger,
    "verify": _verify,
    VERIFY_READ_ONLY: _verify_read_only,
    "reconcile": _reconcile,
    "replay": _replay,
    "teardown": _teardown,
    "plan": lambda t: [],
    "logs": _logs,
    "invoke": _invoke,
}


# ---------------------------------------------------------------------------------------- policies
def command_statements(command: str, target: Target) -> list[Statement]:
    """The statements one command needs for ``target``; [] for a command that calls no AWS API."""
    if command in NO_PART:
        raise PolicyError(f"{command} has no policy: {NO_PART[command]}")
    if command not in _PARTS:
        raise PolicyError(f"unknown command {command!r}; allowed: {'|'.join(COMMANDS)}")
    extra = [
        Statement(*s)
        for s in replica_parts(command, target.config, target.account, target.partition, target.qualifier)
    ]
    return merge(_PARTS[command](target) + extra)


def role_commands(role: str, command: str | None = None) -> tuple[str, ...]:
    """The commands of ``role`` (only ``command`` when given: it must be one of them)."""
    if role not in ROLE_COMMANDS:
        raise PolicyError(f"unknown role {role!r}; allowed: {'|'.join(ROLES)}")
    commands = ROLE_COMMANDS[role]
    if command is None:
        return commands
    if command in NO_PART:
        raise PolicyError(f"{command} has no policy: {NO_PART[command]}")
    if command not in commands:
        raise PolicyError(f"the {role} does not run {command!r}; allowed: {'|'.join(commands)}")
    return (command,)


def part_of(role: str, command: str) -> str:
    """The part ``role`` holds for ``command``: the command's own, or its mode's (ROLE_PARTS)."""
    return ROLE_PARTS.get((role, command), command)


def role_statements(role: str, target: Target, command: str | None = None) -> list[Statement]:
    return merge(
        s for c in role_commands(role, command) for s in command_statements(part_of(role, c), target)
    )


def preview_statements(target: Target) -> list[Statement]:
    """The preview role's policy (``doctable preview deploy|destroy|gc``): the deployer's and the operator's verify
    and teardown, for ``target``, whose names are every preview's (contract.settings.preview.pattern_config: the stack
    ``doctable-<table_base>-<prefix>*`` and what it names), plus finding previews by their tags and counting a
    table's items before a destroy."""
    own = [
        # DescribeStacks without a stack name (every stack of the region, read for its tags) takes no resource.
        Statement("DescribeStacksOfRegionAcceptsNoResource", ("cloudformation:DescribeStacks",), ("*",)),
        Statement("CountItemsBeforeDestroy", ("dynamodb:Scan",), (target.table_arn,)),
    ]
    return merge(
        [*role_statements(DEPLOYER, target), *role_statements(OPERATOR, target, "verify"),
         *role_statements(OPERATOR, target, "teardown"), *own]
    )  # fmt: skip


def merge(statements: Iterable[Statement]) -> list[Statement]:
    """One statement per Sid: the actions of same-Sid statements (same resources and condition) united."""
    merged: dict[str, Statement] = {}
    for statement in statements:
        if not SID_RE.match(statement.sid):
            raise ValueError(f"Sid {statement.sid!r} is not alphanumeric")
        have = merged.get(statement.sid)
        if have is None:
            merged[statement.sid] = statement
            continue
        if (have.resources, have.condition) != (statement.resources, statement.condition):
            raise ValueError(f"statement {statement.sid} is declared twice with different resources")
        actions = tuple(dict.fromkeys(have.actions + statement.actions))
        merged[statement.sid] = replace(have, actions=actions)
    return list(merged.values())


def policy_document(statements: Iterable[Statement]) -> dict[str, Any]:
    return {"Version": POLICY_VERSION, "Statement": [s.document() for s in statements]}


def unscoped(statements: Iterable[Statement]) -> list[Statement]:
    """The statements naming ``"*"`` (each Sid says why AWS accepts no resource for them)."""
    return [s for s in statements if "*" in s.resources]


def document_size(document: dict[str, Any]) -> int:
    """The size IAM counts against its limits: the JSON without whitespace."""
    return len(json.dumps(document, separators=(",", ":")))
