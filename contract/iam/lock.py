"""Where an environment's lock lives (doctable/lifecycle/lock.py says why there), and the one statement that
grants the lock's actions on it: standard library only, shared by the lock and the command policies."""

from __future__ import annotations

from contract.iam.bootstrap import BOOTSTRAP_QUALIFIER

LOCK_PREFIX = "doctable/locks/"
# What taking, renewing, reading and releasing the lock calls: GetObject (and HeadObject, which it authorizes),
# PutObject (the conditional create and renewals) and DeleteObject (the conditional release, `doctable unlock`).
LOCK_ACTIONS = ("s3:GetObject", "s3:PutObject", "s3:DeleteObject")
LOCK_SID = "EnvironmentLock"


def lock_bucket(account: str, region: str, qualifier: str | None = None) -> str:
    """The CDK bootstrap's file-assets bucket of ``qualifier`` (else the CDK's default) in the account and region:
    the bucket the environment's lock lives in."""
    return f"cdk-{qualifier or BOOTSTRAP_QUALIFIER}-assets-{account}-{region}"


def lock_key(stack_name: str) -> str:
    """The lock object of the environment whose stack is ``stack_name``."""
    return f"{LOCK_PREFIX}{stack_name}.json"


def lock_arn(partition: str, account: str, region: str, stack_name: str, qualifier: str | None = None) -> str:
    """The lock object's ARN: the one resource the policies grant the lock's actions on."""
    return f"arn:{partition}:s3:::{lock_bucket(account, region, qualifier)}/{lock_key(stack_name)}"
