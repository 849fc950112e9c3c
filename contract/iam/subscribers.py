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

from contract.iam.target import FAILURE_PREFIX, Statement, Target


def subscriber_functions(t: Target) -> tuple[str, ...]:
    """Each subscriber's function: CloudFormation names it ``<stack>-<logical id>-<suffix>``."""
    return (t.arn("lambda", f"function:{t.stack}-*"),)


def read_subscribers(t: Target) -> list[Statement]:
    """verify's ``subscriber:<name>`` row: each subscriber's function and its mapping (narrowed by the function it
    invokes) and the mapping's tags."""
    if not t.config.subscribers:
        return []
    functions = subscriber_functions(t)
    return [
        Statement("ReadSubscriberFunctions", ("lambda:GetFunctionConfiguration",), functions),
        Statement(
            "ReadSubscriberMappings",
            ("lambda:GetEventSourceMapping",),
            t.mappings,
            {"ArnLike": {"lambda:FunctionArn": list(functions)}},
        ),
        Statement("ListMappingTagsUuidKnownOnlyAfterDeploy", ("lambda:ListTags",), t.mappings),
    ]


def subscriber_proof_lines(t: Target) -> list[Statement]:
    """A subscriber's proof lines in its log group: verify's nudges and ``doctable logs --subscriber``."""
    if not t.config.subscribers:
        return []
    return [Statement("ReadProofLines", ("logs:FilterLogEvents",), t.log_groups)]


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
