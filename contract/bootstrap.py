"""The CDK bootstrap's roles a deploy assumes (the default qualifier), named per account and region. Standard
library only."""

from __future__ import annotations

BOOTSTRAP_QUALIFIER = "hnb659fds"
# deploy, file-publishing and lookup; not image-publishing: the stack has no container image assets.
DEPLOYER_BOOTSTRAP_ROLES = ("deploy", "file-publishing", "lookup")


def bootstrap_role_arn(partition: str, account: str, region: str, kind: str) -> str:
    """The ARN of the bootstrap role ``kind`` of ``account`` in ``region`` (IAM ARNs carry no region)."""
    return f"arn:{partition}:iam::{account}:role/cdk-{BOOTSTRAP_QUALIFIER}-{kind}-role-{account}-{region}"
