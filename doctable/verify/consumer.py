"""verify's row for the built-in consumer function itself (GetFunctionConfiguration): runtime, architecture,
memory, timeout, tracing, SnapStart and the environment the knobs write, as ``contract.shape.consumer_shape`` declares them.
A change made behind the stack (a console edit of an environment variable, say) fails this row. The configuration
read is the one the mapping invokes (its alias's version): with SnapStart, a published version, snapshotted."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from contract import names
from contract.shape import ConsumerShape, consumer_shape
from doctable.verify.record import CheckFailed

if TYPE_CHECKING:
    from contract.knobs import DocTableConfig
    from doctable.core.aws import Aws
    from doctable.core.deployment import Deployment

ROW = ("consumer-config", "consumer function as declared")


SNAPSTART_ON, SNAPSTART_OFF = "PublishedVersions", "None"  # SnapStart.ApplyOn
# SnapStart (ApplyOn, OptimizationStatus) of the version the mapping invokes: snapshotted, or not at all.
SNAPSTART_INVOKED = {True: (SNAPSTART_ON, "On"), False: (SNAPSTART_OFF, "Off")}


def _settings(shape: ConsumerShape) -> str:
    return (
        f"{shape.runtime} {shape.architecture}, {shape.memory} MB, {shape.timeout} s, tracing {shape.tracing}"
        + (f", SnapStart {SNAPSTART_ON}" if shape.snapstart else "")
    )


def consumer_rows(config: DocTableConfig) -> list[tuple[str, str, str]]:
    """(row id, check, expected): one row with the built-in consumer, none otherwise."""
    shape = consumer_shape(config)
    if shape is None:
        return []
    knobs = ", ".join(
        f"{name}={shape.environment[name]!r}"
        for name in (names.ENV_BLOB_ROOT, names.ENV_BLOB_PREFIX_CLEANUP, names.ENV_BLOB_KEY_REUSE)
    )
    return [(*ROW, f"{_settings(shape)}; {knobs}, the stack's bucket and table")]


def consumer_checks(aws: Aws, deployment: Deployment) -> dict[str, Callable[[], str]]:
    """Row id -> its check: returns the observed settings, raises ``CheckFailed(differences)`` when one differs."""
    shape = consumer_shape(deployment.config)
    if shape is None:
        return {}

    def check() -> str:
        function = deployment.out(names.OUT_CONSUMER_FUNCTION_NAME)
        if not function:
            raise CheckFailed(f"the stack has no {names.OUT_CONSUMER_FUNCTION_NAME} output")
        lam = aws.client("lambda")
        # What the mapping invokes (an alias of $LATEST, or of the published version with SnapStart).
        uuid = deployment.out(names.OUT_MAPPING_UUID)
        target = lam.get_event_source_mapping(UUID=uuid)["FunctionArn"] if uuid else function
        live = lam.get_function_configuration(FunctionName=target)
        problems = differences(shape, live, deployment)
        observed = _observed(live)
        if problems:
            raise CheckFailed("; ".join(problems) + f" — {observed}")
        return observed

    return {ROW[0]: check}


def differences(shape: ConsumerShape, live: dict[str, Any], deployment: Deployment) -> list[str]:
    """Each live setting that is not what the shape declares, as ``what live (declared ...)``."""
    declared_env = shape.with_names(
        deployment.out(names.OUT_BLOB_BUCKET) or deployment.config.blob_bucket, deployment.table_name
    )
    pairs: list[tuple[str, Any, Any]] = [
        ("Runtime", live.get("Runtime"), shape.runtime),
        ("Architecture", (live.get("Architectures") or ["x86_64"])[0], shape.architecture),
        ("MemorySize", live.get("MemorySize"), shape.memory),
        ("Timeout", live.get("Timeout"), shape.timeout),
        ("Tracing", (live.get("TracingConfig") or {}).get("Mode"), shape.tracing),
        ("SnapStart", "/".join(_snapstart(live)), "/".join(SNAPSTART_INVOKED[shape.snapstart])),
    ]
    variables = (live.get("Environment") or {}).get("Variables") or {}
    pairs += [(name, variables.get(name), value) for name, value in declared_env.items()]
    return [
        f"{what} {'unset' if now is None else repr(now) if isinstance(now, str) else now} (declared {want!r})"
        for what, now, want in pairs
        if now != want
    ]


def _observed(live: dict[str, Any]) -> str:
    variables = (live.get("Environment") or {}).get("Variables") or {}
    arch = (live.get("Architectures") or ["x86_64"])[0]
    mode = (live.get("TracingConfig") or {}).get("Mode")
    env = ", ".join(
        f"{name}={variables.get(name)!r}"
        for name in (names.ENV_BLOB_ROOT, names.ENV_BLOB_PREFIX_CLEANUP, names.ENV_BLOB_KEY_REUSE)
    )
    apply_on, status = _snapstart(live)
    snapstart = "" if apply_on == SNAPSTART_OFF else f", SnapStart {apply_on} ({status})"
    return (
        f"{live.get('Runtime')} {arch}, {live.get('MemorySize')} MB, {live.get('Timeout')} s, tracing {mode}"
        f"{snapstart}; {env}"
    )


def _snapstart(live: dict[str, Any]) -> tuple[str, str]:
    """(ApplyOn, OptimizationStatus) of a function configuration."""
    snapstart = live.get("SnapStart") or {}
    return str(snapstart.get("ApplyOn") or SNAPSTART_OFF), str(snapstart.get("OptimizationStatus") or "Off")
