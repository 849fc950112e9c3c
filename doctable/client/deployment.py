"""Where a deployed environment keeps its documents: the table, the blob bucket and the blob root, read from its
stack's outputs (CloudFormation DescribeStacks) or given."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from doctable.client import rules
from doctable.client.errors import CONFIGURE, AwsError, ConfigurationError
from doctable.client.indexes import IndexKeys, index_keys_of_record
from doctable.client.retry import RetryPolicy


@dataclass(frozen=True)
class Deployment:
    table_name: str
    blob_bucket: str | None = None  # None: a stack without the consumer has no blob bucket
    blob_root: str = rules.DEFAULT_BLOB_ROOT
    bucket_owner: str | None = (
        None  # the stack's account (its StackId's): the blob bucket must be that account's
    )
    # The table's secondary indexes and their key schemas, as the stack's Knobs output records them (query_index)
    indexes: tuple[IndexKeys, ...] = ()

    def __post_init__(self) -> None:
        rules.check_blob_root(self.blob_root)
        if self.bucket_owner is not None and not rules.is_account(self.bucket_owner):
            raise ConfigurationError(
                f"bucket_owner {self.bucket_owner!r} is not an AWS account ID; allowed: 12 digits, the account "
                "that owns the blob bucket (default: the stack's, else the credentials')",
                step=CONFIGURE,
            )

    @classmethod
    def from_outputs(
        cls,
        outputs: Mapping[str, str],
        *,
        stack: str = "the stack",
        blob_root: str | None = None,
        bucket_owner: str | None = None,
    ) -> Deployment:
        """The deployment a stack's outputs describe. The blob root is the one the stack records in its Knobs
        output; ``blob_root`` given must agree with it (the consumer owns only keys under its own root), and is
        used as is for a stack that records none."""
        table = outputs.get(rules.OUT_TABLE_NAME)
        if not table:
            raise ConfigurationError(f"{stack} has no {rules.OUT_TABLE_NAME} output", step=CONFIGURE)
        knobs = _recorded_knobs(outputs, stack)
        recorded = _recorded_blob_root(knobs)
        if blob_root is not None and recorded is not None and blob_root != recorded:
            raise ConfigurationError(
                f"blob_root {blob_root!r} differs from {recorded!r}, the one {stack} was deployed with",
                step=CONFIGURE,
            )
        root = recorded if recorded is not None else blob_root
        return cls(
            table_name=table,
            blob_bucket=outputs.get(rules.OUT_BLOB_BUCKET) or None,
            blob_root=rules.DEFAULT_BLOB_ROOT if root is None else root,
            bucket_owner=bucket_owner,
            indexes=index_keys_of_record(knobs or {}),
        )

    @classmethod
    def from_stack(
        cls,
        cloudformation: Any,
        stack_name: str,
        *,
        blob_root: str | None = None,
        retry: RetryPolicy | None = None,
    ) -> Deployment:
        """The deployment of the stack ``stack_name`` (``rules.stack_name(env, table_base)``), read with
        DescribeStacks through the ``cloudformation`` client."""
        policy = retry or RetryPolicy()
        try:
            reply = policy.call(lambda: cloudformation.describe_stacks(StackName=stack_name), step=CONFIGURE)
        except AwsError as exc:
            raise ConfigurationError(f"cannot read stack {stack_name}: {exc.detail}", step=CONFIGURE) from exc
        stacks = reply.get("Stacks") or []
        if not stacks:
            raise ConfigurationError(f"stack {stack_name} does not exist", step=CONFIGURE)
        outputs = {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}
        owner = rules.account_of_arn(str(stacks[0].get("StackId", "")))
        return cls.from_outputs(outputs, stack=f"stack {stack_name}", blob_root=blob_root, bucket_owner=owner)


def _recorded_knobs(outputs: Mapping[str, str], stack: str) -> dict[str, Any] | None:
    raw = outputs.get(rules.OUT_KNOBS)
    if raw is None:
        return None  # deployed before stacks recorded their knobs
    try:
        knobs = json.loads(raw)
    except json.JSONDecodeError:
        knobs = None
    if not isinstance(knobs, dict):
        raise ConfigurationError(f"{stack}'s {rules.OUT_KNOBS} output is not a JSON object", step=CONFIGURE)
    return knobs


def _recorded_blob_root(knobs: dict[str, Any] | None) -> str | None:
    if knobs is None:
        return None
    root = knobs.get(rules.BLOB_ROOT_KNOB, rules.DEFAULT_BLOB_ROOT)
    return root if isinstance(root, str) else None
