"""The CDK bootstrap's roles a deploy assumes (the environment's qualifier, else the CDK's default), named per
account and region, and its stack's name. Standard library only."""

from __future__ import annotations

BOOTSTRAP_QUALIFIER = "hnb659fds"
# deploy and file-publishing. Not image-publishing: the stack has no container image assets. Not lookup: it
# serves context lookups at synth (``from_lookup``), which the app never makes (tests/unit/test_policy.py fails on
# one), and the bootstrap gives it ReadOnlyAccess: every table and object of the account would be readable.
DEPLOYER_BOOTSTRAP_ROLES = ("deploy", "file-publishing")


def bootstrap_role_arn(
    partition: str, account: str, region: str, kind: str, qualifier: str = BOOTSTRAP_QUALIFIER
) -> str:
    """The ARN of the bootstrap role ``kind`` of ``account`` in ``region`` for ``qualifier`` (the environment's
    ``qualifier`` binding, else the CDK's default; IAM ARNs carry no region)."""
    return f"arn:{partition}:iam::{account}:role/cdk-{qualifier}-{kind}-role-{account}-{region}"


def toolkit_stack_name(qualifier: str) -> str:
    """The bootstrap stack of ``qualifier``: the CDK's CDKToolkit for its default, CDKToolkit-<qualifier> for
    another (one account and region may hold several bootstraps, one per qualifier)."""
    return "CDKToolkit" if qualifier == BOOTSTRAP_QUALIFIER else f"CDKToolkit-{qualifier}"
