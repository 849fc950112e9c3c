"""checkov skips: each names a check and carries a reason specific to this project, written into the resource's
CloudFormation metadata (``Metadata.checkov.skip``), where checkov reads it.

Two sources. A cdk-nag acknowledgement whose rule has a checkov equivalent gives that check the same reason
(``skip_nag_equivalents``, called by ``infra.synth.nag.acknowledge``), so both tools skip a finding under the same
conditions. Findings cdk-nag has no rule for are skipped by the ``CheckovSkips`` aspect, keyed by resource type
and check id, each only where its condition holds (a table under a key of its own is not skipped for CKV_AWS_119).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jsii
from aws_cdk import CfnResource, IAspect
from constructs import IConstruct

METADATA_KEY = "checkov"
# cdk-nag rule -> the checkov checks that report the same finding.
NAG_EQUIVALENTS = {
    "AwsSolutions::AwsSolutions-S1": ("CKV_AWS_18",),  # S3 server access logging
    "AwsSolutions::AwsSolutions-DDB3": ("CKV_AWS_28",),  # DynamoDB point-in-time recovery
    "AwsSolutions::AwsSolutions-SNS2": ("CKV_AWS_26",),  # SNS encryption at rest
}
# The same finding on another resource type, where checkov reports it under another check.
NAG_EQUIVALENTS_BY_TYPE = {
    ("AwsSolutions::AwsSolutions-DDB3", "AWS::DynamoDB::GlobalTable"): (
        "CKV_AWS_165",
    ),  # a global table's PITR
}


def add_skip(resource: CfnResource, check_id: str, reason: str) -> None:
    """Skip ``check_id`` on ``resource`` with ``reason`` (a second skip of the same check replaces the first)."""
    if not reason.strip():
        raise ValueError(f"a checkov skip of {check_id} needs a reason")
    metadata = resource.get_metadata(METADATA_KEY) or {}
    skips = [s for s in metadata.get("skip", []) if s["id"] != check_id]
    resource.add_metadata(METADATA_KEY, {**metadata, "skip": [*skips, {"id": check_id, "comment": reason}]})


def skip_nag_equivalents(construct: IConstruct, rule_id: str, reason: str) -> None:
    """The checkov checks equivalent to the acknowledged cdk-nag rule are skipped with the same reason."""
    resource = construct if isinstance(construct, CfnResource) else construct.node.default_child
    if isinstance(resource, CfnResource):
        checks = NAG_EQUIVALENTS_BY_TYPE.get(
            (rule_id, resource.cfn_resource_type), NAG_EQUIVALENTS.get(rule_id, ())
        )
        for check_id in checks:
            add_skip(resource, check_id, reason)


def _field(value: Any, name: str, cfn_name: str) -> Any:
    """A property of an L1 struct, whether CDK holds it as a struct or as a plain mapping."""
    if value is None:
        return None
    if isinstance(value, dict):
        return value.get(cfn_name, value.get(name))
    return getattr(value, name, None)


def _no_table_key(resource: CfnResource) -> bool:
    spec = getattr(resource, "sse_specification", None)
    return _field(spec, "kms_master_key_id", "KMSMasterKeyId") is None


def _no_log_group_key(resource: CfnResource) -> bool:
    return getattr(resource, "kms_key_id", None) is None


def _always(resource: CfnResource) -> bool:
    return True


@dataclass(frozen=True)
class Skip:
    resource_type: str
    check_id: str
    reason: str
    applies: Callable[[CfnResource], bool] = _always


SKIPS = (
    Skip(
        "AWS::DynamoDB::Table",
        "CKV_AWS_119",
        "Encryption at rest is the `encryption` knob: the AWS owned or AWS managed key this environment chose "
        "needs no key of the stack's own to rotate, guard and retain with the table; `encryption="
        "customer-managed` puts the table, its stream and the buckets under one.",
        _no_table_key,
    ),
    Skip(
        "AWS::S3::Bucket",
        "CKV_AWS_21",
        "Blobs are deleted on purpose when their record is deleted, and versioning would keep each as a "
        "noncurrent version the consumer never removes; failure records are written once under unique keys "
        "and read back by replay, never overwritten.",
    ),
    Skip(
        "AWS::Logs::LogGroup",
        "CKV_AWS_158",
        "The consumer's log lines carry event names, counts, record keys and blob keys, never item "
        "attributes; CloudWatch Logs encrypts them at rest with its own key, and a KMS key for a month of "
        "retention would cost more than the data warrants.",
        _no_log_group_key,
    ),
    Skip(
        "AWS::Lambda::Function",
        "CKV_AWS_116",
        "The consumer is invoked synchronously by the stream's event-source mapping, where a function DLQ "
        "never applies; a batch that exhausts its retries goes to the mapping's on-failure destination (the "
        "failure bucket, whole invocation record) for replay.",
    ),
    Skip(
        "AWS::Lambda::Function",
        "CKV_AWS_117",
        "The consumer reaches only S3, DynamoDB, CloudWatch Logs and X-Ray through their public endpoints, over "
        "TLS and with grants scoped to this stack's resources; it talks to nothing private that a VPC would "
        "protect, and a VPC would add NAT or endpoint cost and cold-start time.",
    ),
    Skip(
        "AWS::Lambda::Function",
        "CKV_AWS_115",
        "The stream mapping bounds the consumer's concurrency (shards x parallelization_factor), so it cannot "
        "run away; reserving concurrency would take it from the account's unreserved pool, and fails on "
        "accounts at the minimum of 10.",
    ),
    Skip(
        "AWS::Lambda::Function",
        "CKV_AWS_173",
        "The consumer's environment holds bucket and table names, the blob root, the environment, the "
        "Powertools service and log level: no secret that a KMS key of its own would protect.",
    ),
)


@jsii.implements(IAspect)
class CheckovSkips:
    """Adds every skip of ``SKIPS`` whose resource type matches and whose condition holds; a skip a construct
    already carries (with a reason of its own) is kept."""

    def visit(self, node: IConstruct) -> None:
        if not isinstance(node, CfnResource):
            return
        present = {s["id"] for s in (node.get_metadata(METADATA_KEY) or {}).get("skip", [])}
        for skip in SKIPS:
            if (
                node.cfn_resource_type == skip.resource_type
                and skip.applies(node)
                and skip.check_id not in present
            ):
                add_skip(node, skip.check_id, skip.reason)
