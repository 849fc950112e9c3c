"""The IAM statements the commands need for a table's subscribers (contract/subscribers.py), for contract/iam/policies.py to
add to each command's part:

- verify (full and read-only, doctable/verify/subscribers.py): each subscriber's function and its mapping (scoped
  by the function it invokes) and the mapping's tags; the full verify's nudges read its proof lines.
- logs and invoke ``--subscriber NAME`` (doctable/operate/logs.py, invoke.py): its log group, its function.
- replay ``--subscriber NAME`` (doctable/operate/replay.py): its own failure bucket's failed batches (listed under
  Lambda's prefix, read, rewritten, deleted) and its function invoked; the stream re-read is the consumer's part.
- teardown empties each subscriber's failure bucket with the stack's (``Target.stack_buckets``).

A subscriber's function and log group are named by CloudFormation (``<stack>-<logical id>-<suffix>``); its failure
bucket by the stack, ``<table>-<account>-<region>-<name>-failures`` with bucket_names=exact (else the pattern of the
stack's generated bucket names). Standard library only, as contract/iam/policies.py.
"""

from __future__ import annotations

from contract.iam.target import FAILURE_PREFIX, Statement, Target, arn_of


def subscriber_functions(t: Target) -> tuple[str, ...]:
    """Each subscriber's function: CloudFormation names it ``<stack>-<logical id>-<suffix>``."""
    return (t.arn("lambda", f"function:{t.stack}-*"),)


def _subscriber_regions(t: Target) -> tuple[str, ...]:
    """The replica regions some subscriber of a global table runs in (their stacks hold it)."""
    replicas = t.config.replicas
    return tuple(r for r in replicas if any(s.runs_in(replicas, r) for s in t.config.subscribers))


def read_subscribers(t: Target) -> list[Statement]:
    """verify's ``subscriber:<name>`` rows: each subscriber's function and its mapping (narrowed by the function it
    invokes) and the mapping's tags, at home and in each replica region it runs in (``subscriber:<name>@<region>``:
    the replica stack ``<stack>-<region>`` names its functions ``<stack>-<region>-...``)."""
    if not t.config.subscribers:
        return []
    regions = _subscriber_regions(t)
    functions = subscriber_functions(t) + tuple(
        arn_of(t.partition, "lambda", r, t.account, f"function:{t.stack}-*") for r in regions
    )
    elsewhere = tuple(arn_of(t.partition, "lambda", r, t.account, "event-source-mapping:*") for r in regions)
    mappings = t.mappings + elsewhere
    tags = [Statement("ListReplicaSubscriberMappingTags", ("lambda:ListTags",), elsewhere)] if regions else []
    return [
        Statement("ReadSubscriberFunctions", ("lambda:GetFunctionConfiguration",), functions),
        Statement(
            "ReadSubscriberMappings",
            ("lambda:GetEventSourceMapping",),
            mappings,
            {"ArnLike": {"lambda:FunctionArn": list(functions)}},
        ),
        Statement("ListMappingTagsUuidKnownOnlyAfterDeploy", ("lambda:ListTags",), t.mappings),
        *tags,
    ]


def subscriber_proof_lines(t: Target) -> list[Statement]:
    """A subscriber's proof lines in its log group: verify's nudges and ``doctable logs --subscriber``."""
    if not t.config.subscribers:
        return []
    found = [Statement("ReadProofLines", ("logs:FilterLogEvents",), t.log_groups)]
    regions = _subscriber_regions(t)
    # a replica region's subscriber: its log group there (verify's subscriber-nudge:<name>@<region>)
    if regions:
        groups = tuple(arn_of(t.partition, "logs", r, t.account, f"log-group:{t.stack}-*") for r in regions)
        found.append(Statement("ReadReplicaSubscriberProofLines", ("logs:FilterLogEvents",), groups))
    return found


def replay_subscribers(t: Target) -> list[Statement]:
    """``replay --subscriber NAME``: its failure bucket's batches under Lambda's prefix, and its function."""
    buckets = t.subscriber_failure_buckets
    if not buckets:
        return []
    return [
        Statement(
            "ListSubscriberFailedBatches",
            ("s3:ListBucket",),
            tuple(t.bucket_arn(b) for b in buckets),
            {"StringLike": {"s3:prefix": [f"{FAILURE_PREFIX}*"]}},
        ),
        Statement(
            "ReplaySubscriberFailedBatches",
            ("s3:GetObject", "s3:PutObject", "s3:DeleteObject"),
            tuple(t.bucket_arn(b, f"{FAILURE_PREFIX}*") for b in buckets),
        ),
        Statement("InvokeSubscribers", ("lambda:InvokeFunction",), subscriber_functions(t)),
    ]
