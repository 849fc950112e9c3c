"""The IAM statements a command needs in a global table's replica regions (the ``replicas`` knob), as
(Sid, actions, resources, condition) for contract/iam/policies.py to add to the command's part: each scoped to the table's ARN
in each replica region and to the replica stacks ``<stack>-<region>``.

- verify (full and read-only, doctable/verify/replicas.py): each replica stack's status and outputs, the
  replica's description (its stream), the replica stack's mapping (scoped by the function it invokes); the full
  verify's nudges (doctable/verify/replica_delivery.py) also write, read and delete test items in each replica
  (verify's own partition keys only, as its home test items), read each replica's stream for the nudge's record,
  and read each replica stack consumer's proof lines.
- deploy (doctable/lifecycle/replica_deploy.py): each replica's description (its drift, and its stream ARN), the bootstrap roles of
  each replica region (the CLI deploys the replica stacks there), and the removal of the replica stack of a
  region the settings no longer name (which the settings cannot list: any region, this environment's replica
  stack names only).
- preflight (and the deploy's gate, which runs it) and reconcile (doctable/capabilities/replicas.py): each replica's
  description and PITR, read for its drift; reconcile restores PITR and deletion protection there. Preflight also
  reads each replica stack (DescribeStacks: the mappings it owns) to count the readers of that region's replica
  stream (doctable/capabilities/readers.py; ListEventSourceMappings takes no resource, in the home part).
- logs, invoke and replay with ``--region`` naming a replica region (doctable/core/command.py): that region's
  stack read, its consumer's and subscribers' log groups, the function its consumer's mapping invokes, a
  subscriber's function there (replay: its failure bucket is named in the home part's statements).
- teardown (doctable/lifecycle/teardown.py, replica_teardown.py): each replica stack read, deleted and watched until it
  is gone; with deletion protection, each replica's lifted.

Standard library only, as contract/iam/policies.py."""

from __future__ import annotations

from contract.iam.bootstrap import BOOTSTRAP_QUALIFIER, DEPLOYER_BOOTSTRAP_ROLES, bootstrap_role_arn
from contract.iam.target import arn_of
from contract.knobs import DocTableConfig

Condition = dict[str, dict[str, list[str]]]
VERIFY_KEY_PREFIX = "doctable-verify-"  # verify's test items and blobs (doctable/verify/checks.py)
Part = tuple[str, tuple[str, ...], tuple[str, ...], Condition | None]  # (Sid, actions, resources, condition)
VERIFY_PARTS = ("verify", "verify-read-only")
# The commands whose --region may name a replica region (doctable/core/command.py): its stack and its readers.
REGIONAL_PARTS = ("logs", "invoke", "replay")


def replica_stack_arns(config: DocTableConfig, account: str, partition: str) -> tuple[str, ...]:
    """The ARN of each replica region's stack (any of its ids)."""
    return tuple(
        arn_of(partition, "cloudformation", r, account, f"stack/{config.replica_stack_name(r)}/*")
        for r in config.replicas
    )


def replica_table_arns(config: DocTableConfig, account: str, partition: str) -> tuple[str, ...]:
    """The table's ARN in each replica region (a global table has one name in every region)."""
    return tuple(
        arn_of(partition, "dynamodb", r, account, f"table/{config.table_name}") for r in config.replicas
    )


def _nudge_parts(config: DocTableConfig, account: str, partition: str) -> list[Part]:
    """The full verify's nudge in each region (``replica-delivery:<region>``): its test item in each replica, the
    item's stream record there and the replica consumer's proof lines."""
    tables = replica_table_arns(config, account, partition)
    items = tuple(f"dynamodb:{a}" for a in ("PutItem", "GetItem", "DeleteItem"))
    only_verify_keys = {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{VERIFY_KEY_PREFIX}*"]}}
    reads = tuple(f"dynamodb:{a}" for a in ("DescribeStream", "GetShardIterator", "GetRecords"))
    groups = tuple(
        arn_of(partition, "logs", r, account, f"log-group:{config.replica_stack_name(r)}-*")
        for r in config.replicas
    )
    return [
        ("VerifyReplicaTestItemsOnly", items, tables, only_verify_keys),
        ("ReadReplicaStreamRecord", reads, tuple(f"{t}/stream/*" for t in tables), None),
        ("ReadReplicaProofLines", ("logs:FilterLogEvents",), groups, None),
    ]


def _regional_parts(command: str, config: DocTableConfig, account: str, partition: str) -> list[Part]:
    """``logs``, ``invoke`` and ``replay`` with ``--region`` naming a replica region: its stack read, then its
    consumer's or subscribers' log groups, the function its mapping invokes, or a subscriber's function invoked
    with its failed batches (those buckets are the home part's: S3 names them without a region)."""
    found: list[Part] = [
        (
            "ReadReplicaStacks",
            ("cloudformation:DescribeStacks",),
            replica_stack_arns(config, account, partition),
            None,
        )
    ]
    functions = tuple(
        arn_of(partition, "lambda", r, account, f"function:{config.replica_stack_name(r)}-*")
        for r in config.replicas
    )
    if command == "logs":
        groups = tuple(
            arn_of(partition, "logs", r, account, f"log-group:{config.replica_stack_name(r)}-*")
            for r in config.replicas
        )
        found.append(("ReadReplicaProofLines", ("logs:FilterLogEvents",), groups, None))
    elif command == "invoke":
        mappings = tuple(
            arn_of(partition, "lambda", r, account, "event-source-mapping:*") for r in config.replicas
        )
        condition = {"ArnLike": {"lambda:FunctionArn": list(functions)}}
        found.append(("ReadReplicaMappings", ("lambda:GetEventSourceMapping",), mappings, condition))
        found.append(("InvokeReplicaFunctions", ("lambda:InvokeFunction",), functions, None))
    else:
        ran = [r for r in config.replicas if any(s.runs_in(config.replicas, r) for s in config.subscribers)]
        if not ran:  # a replica region's consumer keeps no failed batches: only a subscriber's are replayed
            return []
        invoked = tuple(f for f, r in zip(functions, config.replicas, strict=True) if r in ran)
        found.append(("InvokeReplicaSubscribers", ("lambda:InvokeFunction",), invoked, None))
    return found


def replica_parts(
    command: str, config: DocTableConfig, account: str, partition: str, qualifier: str = BOOTSTRAP_QUALIFIER
) -> list[Part]:
    """The statements ``command``'s part adds for the replica regions; [] for a single-region table."""
    if not config.replicas:
        return []
    stacks = replica_stack_arns(config, account, partition)
    tables = replica_table_arns(config, account, partition)
    drift_reads = ("dynamodb:DescribeTable", "dynamodb:DescribeContinuousBackups")
    if command == "preflight":
        # With the built-in consumer, each replica stack too: the mappings it owns on its region's replica stream,
        # apart from the others counted against the shard's limit.
        read_stacks: list[Part] = [("ReadReplicaStacks", ("cloudformation:DescribeStacks",), stacks, None)]
        return [
            ("ReadReplicaTables", drift_reads, tables, None),
            *(read_stacks if config.builtin_consumer else []),
        ]
    if command == "reconcile":
        repairs = ("dynamodb:UpdateContinuousBackups", "dynamodb:UpdateTable")
        return [("RepairReplicaTables", drift_reads + repairs, tables, None)]
    if command in VERIFY_PARTS:
        found: list[Part] = [
            ("ReadReplicaStacks", ("cloudformation:DescribeStacks",), stacks, None),
            (
                "ReadReplicaTables",
                ("dynamodb:DescribeTable", "dynamodb:DescribeContinuousBackups"),
                replica_table_arns(config, account, partition),
                None,
            ),
        ]
        if config.builtin_consumer:
            mappings = tuple(
                arn_of(partition, "lambda", r, account, "event-source-mapping:*") for r in config.replicas
            )
            functions = [
                arn_of(partition, "lambda", r, account, f"function:{config.replica_stack_name(r)}-*")
                for r in config.replicas
            ]
            condition = {"ArnLike": {"lambda:FunctionArn": functions}}
            found.append(("ReadReplicaMappings", ("lambda:GetEventSourceMapping",), mappings, condition))
            if command == "verify":  # the nudges write: the read-only verify skips them
                found += _nudge_parts(config, account, partition)
        return found
    if command in REGIONAL_PARTS and config.builtin_consumer:
        return _regional_parts(command, config, account, partition)
    if command == "deploy":
        roles = tuple(
            bootstrap_role_arn(partition, account, region, kind, qualifier)
            for region in config.replicas
            for kind in DEPLOYER_BOOTSTRAP_ROLES
        )
        removed = (arn_of(partition, "cloudformation", "*", account, f"stack/{config.stack_name}-*/*"),)
        return [
            # The gate's preflight reads each replica's drift; the same DescribeTable gives the deploy each
            # replica's stream ARN for the replica stacks.
            ("ReadReplicaTables", drift_reads, tables, None),
            ("AssumeReplicaBootstrapRoles", ("sts:AssumeRole",), roles, None),
            (
                "DeleteRemovedReplicaStacks",
                ("cloudformation:DescribeStacks", "cloudformation:DeleteStack"),
                removed,
                None,
            ),
        ]
    if command == "teardown":
        actions = (
            "cloudformation:DescribeStacks",
            "cloudformation:DescribeStackEvents",
            "cloudformation:DeleteStack",
        )
        found = [("DeleteReplicaStacks", actions, stacks, None)]
        if config.deletion_protection:
            # --lift-deletion-protection: each replica's protection is its own.
            lift = ("dynamodb:DescribeTable", "dynamodb:UpdateTable")
            found.append(
                ("LiftReplicaDeletionProtection", lift, replica_table_arns(config, account, partition), None)
            )
        return found
    return []
