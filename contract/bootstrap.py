"""The CDK bootstrap's roles a deploy assumes (the default qualifier), named per account and region. Standard
library only."""

from __future__ import annotations

BOOTSTRAP_QUALIFIER = "hnb659fds"
# deploy and file-publishing. Not image-publishing: the stack has no container image assets. Not lookup: it
# serves context lookups at synth (``from_lookup``), which the app never makes (tests/unit/test_policy.py fails on
# one), and the bootstrap gives it ReadOnlyAccess: every table and object of the account would be readable.
DEPLOYER_BOOTSTRAP_ROLES = ("deploy", "file-publishing")


def bootstrap_role_arn(partition: str, account: str, region: str, kind: str) -> str:
    """The ARN of the bootstrap role ``kind`` of ``account`` in ``region`` (IAM ARNs carry no region)."""
    return f"arn:{partition}:iam::{account}:role/cdk-{BOOTSTRAP_QUALIFIER}-{kind}-role-{account}-{region}"
