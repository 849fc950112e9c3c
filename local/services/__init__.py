"""The adaptations of moto 5.2.5, one module per service patched: each keeps its replacements in PATCHES (local/patching.py)
and declares every moto internal it relies on in MOTO_TARGETS."""

from __future__ import annotations

from local.patching import Target, install
from local.services import (
    awslambda,
    cfn_global_table,
    cfn_models,
    cloudformation,
    dynamodb,
    dynamodb_indexes,
    dynamodb_kinesis,
    dynamodb_options,
    dynamodb_replica_api,
    dynamodb_replicas,
    dynamodb_security,
    iam,
    kinesis,
    kms,
    logs,
    mappings,
    s3,
)

_MODULES = (
    awslambda,
    mappings,
    dynamodb,
    dynamodb_options,
    dynamodb_indexes,
    dynamodb_security,
    dynamodb_kinesis,
    dynamodb_replicas,
    dynamodb_replica_api,
    kinesis,
    cloudformation,
    iam,
    kms,
    logs,
    s3,
    cfn_models,
    cfn_global_table,
)
MOTO_TARGETS: tuple[Target, ...] = tuple(t for module in _MODULES for t in module.MOTO_TARGETS)


def apply() -> None:
    """Install every module's replacements of moto, in the order above (a second call changes nothing)."""
    install(*(module.PATCHES for module in _MODULES))
