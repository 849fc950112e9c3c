"""The adaptations of moto 5.2.5, one package or module per AWS service: each module keeps its replacements of
moto's internals in PATCHES (local/patching.py) and declares every moto internal it relies on in MOTO_TARGETS.

They are listed here by name and loaded when the server installs them (``apply``), in this order: a later module's
replacement of an attribute wraps an earlier one's. Every module of local/ that declares MOTO_TARGETS is in
``DECLARING`` (the services, the pollers, the Lambda runtime), for the start-up check (local/compat.py).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from local.patching import Target, install

# The service modules whose PATCHES the server installs, in order.
PATCHING = (
    "local.services.awslambda.functions",
    "local.services.awslambda.mappings",
    "local.services.dynamodb.api.wire",
    "local.services.dynamodb.api.conditions",
    "local.services.dynamodb.api.operations",
    "local.services.dynamodb.api.projection",
    "local.services.dynamodb.api.numbers",
    "local.services.dynamodb.api.updates",
    "local.services.dynamodb.api.keys",
    "local.services.dynamodb.tables",
    "local.services.dynamodb.transactions",
    "local.services.dynamodb.items",
    "local.services.dynamodb.tags",
    "local.services.dynamodb.stream_readers",
    "local.services.dynamodb.api.streams",
    "local.services.dynamodb.options",
    "local.services.dynamodb.indexes",
    "local.services.dynamodb.security",
    "local.services.dynamodb.kinesis_destination",
    "local.services.dynamodb.replication",
    "local.services.dynamodb.replicas",
    "local.services.kinesis",
    "local.services.kinesis_fan_out",
    "local.services.cloudformation.stacks",
    "local.services.cloudformation.acting_role",
    "local.services.iam",
    "local.services.kms",
    "local.services.logs",
    "local.services.cloudwatch",
    "local.services.s3",
    "local.services.cloudformation.models",
    "local.services.cloudformation.global_table",
)
# Every module of local/ that reads or patches moto's internals (MOTO_TARGETS), beyond those above.
READING = (
    "local.services.cloudformation.updates",  # installed by stacks
    "local.services.cloudformation.imports",
    "local.services.seed",
    "local.services.dynamodb.ttl",
    "local.pollers.streams",
    "local.pollers.kinesis",
    "local.runtime.runner",
    "local.runtime.metrics",
)


def modules(names: tuple[str, ...] = PATCHING) -> tuple[ModuleType, ...]:
    return tuple(importlib.import_module(name) for name in names)


def apply() -> None:
    """Install every service module's replacements of moto, in order (a second call changes nothing)."""
    install(*(module.PATCHES for module in modules()))


def declared() -> tuple[Target, ...]:
    """Every moto internal the modules of local/ declare they patch or read."""
    return tuple(target for module in modules(PATCHING + READING) for target in module.MOTO_TARGETS)
