"""The registry of the adaptations of moto 5.2.5, one package or module per AWS service: each module keeps its
replacements of moto's internals in PATCHES (local/patching.py) and declares every moto internal it relies on in
MOTO_TARGETS.

The modules are imported here with plain import statements, so import-linter and the architecture test's floors
see every link from the registry to them. The registry stands at the top of local/'s floors: no module imports it
at module level; the server loads it when it starts (``LocalAWS.start`` calls ``apply``), and a test or a bench
imports it to install moto's adaptations in process.

Each moto internal is replaced by exactly one module, its owner (tests/unit/test_architecture.py fails on a
second); where another module's behaviour belongs to the same operation, the owner calls that module's function
as a named step, in the order its body reads (local/README.md, "One owner per moto internal"). So the order of
``INSTALLED`` decides no wrapping: it is only the order in which the modules' ``on_install`` hooks run (each adds
attributes moto lacks, none another module's).
"""

from __future__ import annotations

from types import ModuleType

from local.patching import Target, install
from local.pollers import kinesis as pollers_kinesis
from local.pollers import streams as pollers_streams
from local.runtime import metrics as runtime_metrics
from local.runtime import runner as runtime_runner
from local.services import cloudwatch, iam, kinesis, kinesis_fan_out, kms, logs, s3, seed
from local.services.awslambda import functions, mappings
from local.services.cloudformation import (
    acting_role,
    dynamodb_table,
    global_table,
    imports,
    models,
    stacks,
    updates,
)
from local.services.dynamodb import (
    indexes,
    items,
    kinesis_destination,
    options,
    replicas,
    replication,
    security,
    stream_readers,
    tables,
    tags,
    transactions,
    ttl,
)
from local.services.dynamodb.api import conditions, keys, numbers, operations, projection, wire
from local.services.dynamodb.api import streams as dynamodb_streams_api
from local.services.dynamodb.api import updates as update_expressions

# The service modules whose PATCHES the server installs.
INSTALLED: tuple[ModuleType, ...] = (
    functions,
    mappings,
    wire,
    conditions,
    operations,
    projection,
    numbers,
    update_expressions,
    keys,
    tables,
    transactions,
    items,
    tags,
    stream_readers,
    dynamodb_streams_api,
    options,
    indexes,
    security,
    kinesis_destination,
    kinesis,
    kinesis_fan_out,
    stacks,
    acting_role,
    iam,
    kms,
    logs,
    cloudwatch,
    s3,
    models,
    dynamodb_table,
    global_table,
)
# Every other module of local/ that reads or patches moto's internals (MOTO_TARGETS).
READ: tuple[ModuleType, ...] = (
    updates,  # its PATCHES installed by stacks
    imports,  # likewise
    seed,
    ttl,
    replication,
    replicas,
    pollers_streams,
    pollers_kinesis,
    runtime_runner,
    runtime_metrics,
)
PATCHING = tuple(module.__name__ for module in INSTALLED)
READING = tuple(module.__name__ for module in READ)
_BY_NAME = {module.__name__: module for module in (*INSTALLED, *READ)}


def modules(names: tuple[str, ...] = PATCHING) -> tuple[ModuleType, ...]:
    """The registry's modules of these names (all those the server installs by default)."""
    return tuple(_BY_NAME[name] for name in names)


def apply() -> None:
    """Install every service module's replacements of moto (a second call changes nothing)."""
    install(*(module.PATCHES for module in INSTALLED))


def declared() -> tuple[Target, ...]:
    """Every moto internal the modules of local/ declare they patch or read."""
    return tuple(target for module in (*INSTALLED, *READ) for target in module.MOTO_TARGETS)
