"""Lambda: functions run for real (local/runtime/runner.py), keep what CloudFormation passes, and resolve Powertools.

- ``LambdaFunction.invoke`` runs the function's code in a warm subprocess, never Docker; InvocationType=Event
  returns 202 at once and runs in the background;
- a public Powertools layer ARN (any account/version) resolves to the seeded local stand-in layer;
- LoggingConfig is kept and reported; CloudFormation passes Layers, Architectures, TracingConfig,
  LoggingConfig, EphemeralStorage, SnapStart, FileSystemConfigs and Tags (moto dropped them), and updates them;
- SnapStart.ApplyOn is kept (CreateFunction, UpdateFunctionConfiguration, templates) and refused where Lambda
  refuses it; a version published under PublishedVersions reports OptimizationStatus On and runs the function's
  init at publish (a failed init leaves the version Failed, as Lambda's snapshot step does);
- version numbers are never reused; a version an alias points to cannot be deleted (ResourceConflictException).
"""

from __future__ import annotations

import base64
import contextlib
import copy
import json
import logging
import threading
from typing import Any

from moto.awslambda.exceptions import LambdaClientError

from local import incidents
from local.patching import Patches, Target, tags_dict
from local.runtime.runner import encode_log_tail, get_runner

log = logging.getLogger("doctable.local.lambda")

_MODELS = "moto.awslambda.models"
PATCHES = Patches()

SNAP_START_ON = "PublishedVersions"
SNAP_START_OFF = "None"
# What Lambda reports for a version whose init failed while its snapshot was being taken.
SNAPSHOT_FAILED_REASON_CODE = "FunctionError"
SNAPSHOT_FAILED_REASON = "An error occurred during function initialization."


@PATCHES.replace(
    Target(_MODELS, "LambdaFunction.__init__", ("self", "account_id", "spec", "region", "version"))
)
def init_function(self: Any, account_id: str, spec: dict[str, Any], region: str, version: Any = 1) -> None:
    """A function keeps its Tags as a dict, LoggingConfig, SnapStart and FileSystemConfigs (SnapStart refused
    where Lambda refuses it)."""
    spec = dict(spec)
    spec["Tags"] = tags_dict(spec.get("Tags"))
    apply_on = _apply_on(spec.get("SnapStart"), SNAP_START_OFF)
    file_systems = list(spec.get("FileSystemConfigs") or [])
    _check_snap_start(
        apply_on, spec.get("Runtime"), (spec.get("EphemeralStorage") or {}).get("Size", 512), file_systems
    )
    PATCHES.original(init_function)(self, account_id, spec, region, version)
    self.logging_config = _logging_config(spec.get("LoggingConfig"), self.function_name)
    self.snap_start_apply_on = apply_on
    self.file_system_configs = file_systems
    self.state_reason_code = None  # set when a published version's SnapStart init failed
    self.state_reason = None


@PATCHES.replace(Target(_MODELS, "LambdaFunction.get_configuration", ("self", "on_create")))
def get_configuration(self: Any, on_create: bool = False) -> dict[str, Any]:
    """A function's configuration reports LoggingConfig, SnapStart, FileSystemConfigs and a failed init."""
    config = PATCHES.original(get_configuration)(self, on_create)
    config["LoggingConfig"] = dict(
        getattr(self, "logging_config", None) or _logging_config(None, self.function_name)
    )
    apply_on = getattr(self, "snap_start_apply_on", SNAP_START_OFF)
    published = str(self.version) != "$LATEST"
    config["SnapStart"] = {
        "ApplyOn": apply_on,
        "OptimizationStatus": "On" if published and apply_on == SNAP_START_ON else "Off",
    }
    if getattr(self, "file_system_configs", None):
        config["FileSystemConfigs"] = list(self.file_system_configs)
    if getattr(self, "state_reason_code", None):
        config["StateReasonCode"] = self.state_reason_code
        config["StateReason"] = self.state_reason
    return config


@PATCHES.replace(Target(_MODELS, "LambdaFunction.update_configuration", ("self", "config_updates")))
def update_configuration(self: Any, config_updates: dict[str, Any]) -> dict[str, Any]:
    """UpdateFunctionConfiguration keeps LoggingConfig, TracingConfig, EphemeralStorage, SnapStart and
    FileSystemConfigs, clears an emptied Environment, and refuses a SnapStart Lambda refuses."""
    # Checked against the configuration the update leaves, before anything of it applies.
    apply_on = _apply_on(
        config_updates.get("SnapStart"), getattr(self, "snap_start_apply_on", SNAP_START_OFF)
    )
    file_systems = list(
        config_updates["FileSystemConfigs"] or []
        if "FileSystemConfigs" in config_updates
        else getattr(self, "file_system_configs", [])
    )
    _check_snap_start(
        apply_on,
        config_updates.get("Runtime") or self.run_time,
        (config_updates.get("EphemeralStorage") or {}).get("Size", self.ephemeral_storage),
        file_systems,
    )
    self.snap_start_apply_on = apply_on
    self.file_system_configs = file_systems
    for key, value in config_updates.items():
        if key == "LoggingConfig":
            self.logging_config = _logging_config(value, self.function_name)
        elif key == "TracingConfig" and value:
            self.tracing_config = value
        elif key == "EphemeralStorage" and value:
            self.ephemeral_storage = value["Size"]
        elif key == "Environment" and not (value or {}).get("Variables"):
            self.environment_vars = {}
    known = {
        k: v
        for k, v in config_updates.items()
        if k != "Environment" or (v or {}).get("Variables") is not None
    }
    return PATCHES.original(update_configuration)(self, known)  # type: ignore[no-any-return]


@PATCHES.replace(
    Target(_MODELS, "LambdaFunction.invoke", ("self", "body", "request_headers", "response_headers"))
)
def invoke(self: Any, body: Any, request_headers: Any, response_headers: Any) -> bytes:
    """Invoke runs the function's code in a warm subprocess (never Docker); an Event invocation returns at
    once and runs in the background."""
    event = json.loads(body) if body else {}
    invocation_type = (request_headers or {}).get("x-amz-invocation-type") or (request_headers or {}).get(
        "X-Amz-Invocation-Type", "RequestResponse"
    )
    if invocation_type == "DryRun":
        return b""
    if invocation_type == "Event":
        threading.Thread(target=_invoke_quietly, args=(self, event), daemon=True).start()
        return b""
    result = get_runner().invoke(self, event)
    if result.function_error:
        response_headers["x-amz-function-error"] = result.function_error
    response_headers["x-amz-executed-version"] = str(self.version)
    response_headers["x-amz-log-result"] = encode_log_tail(result.log_tail)
    return result.payload


@PATCHES.replace(Target(_MODELS, "LambdaFunction.create_from_cloudformation_json"), wrap=classmethod)
def create_from_cloudformation_json(
    cls: Any,
    resource_name: str,
    cloudformation_json: dict[str, Any],
    account_id: str,
    region_name: str,
    **kw: Any,
) -> Any:
    """A template's function is created with every property CloudFormation passes (moto dropped Layers,
    Architectures, TracingConfig, LoggingConfig, EphemeralStorage, SnapStart, FileSystemConfigs and Tags)."""
    from moto.awslambda import models as lm

    properties = cloudformation_json["Properties"]
    spec: dict[str, Any] = {
        "Code": dict(properties["Code"]),
        "FunctionName": properties.get("FunctionName", resource_name),
        "Handler": properties.get("Handler"),
        "Role": properties["Role"],
        "Runtime": properties.get("Runtime"),
    }
    for prop in (
        "Description", "MemorySize", "Publish", "Timeout", "VpcConfig", "Environment",
        "ReservedConcurrentExecutions", "Layers", "Architectures", "TracingConfig", "LoggingConfig",
        "EphemeralStorage", "PackageType", "ImageConfig", "KmsKeyArn", "Tags", "SnapStart", "FileSystemConfigs",
    ):  # fmt: skip
        if prop in properties:
            spec[prop] = properties[prop]
    if "KmsKeyArn" in spec:
        spec["KMSKeyArn"] = spec.pop("KmsKeyArn")
    if "ZipFile" in spec["Code"]:
        spec["Code"]["ZipFile"] = base64.b64encode(
            cls._create_zipfile_from_plaintext_code(spec["Code"]["ZipFile"])
        )
    backend = lm.get_backend(account_id, region_name)
    fn = backend.create_function(spec)
    if "ReservedConcurrentExecutions" in properties:
        fn.reserved_concurrency = properties["ReservedConcurrentExecutions"]
    return fn


@PATCHES.replace(Target(_MODELS, "LambdaFunction.update_from_cloudformation_json"), wrap=classmethod)
def update_from_cloudformation_json(
    cls: Any, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
    account_id: str, region_name: str,
) -> Any:  # fmt: skip
    """An updated template's function changes its configuration, code and tags in place (a property removed
    from the template goes back to its default); a new FunctionName replaces it."""
    properties = dict(cloudformation_json["Properties"])
    if properties.get("FunctionName") and properties["FunctionName"] != original_resource.function_name:
        # A new name is a replacement on AWS: create the new function, delete the old one.
        new = cls.create_from_cloudformation_json(
            new_resource_name, cloudformation_json, account_id, region_name
        )
        original_resource.delete(account_id, region_name)
        return new
    updates = {k: v for k, v in properties.items() if k not in ("Code", "Tags", "FunctionName")}
    for optional, default in (
        ("Environment", {"Variables": {}}), ("Layers", []), ("LoggingConfig", None),
        ("TracingConfig", {"Mode": "PassThrough"}), ("Description", ""), ("MemorySize", 128), ("Timeout", 3),
        ("SnapStart", {"ApplyOn": SNAP_START_OFF}), ("EphemeralStorage", {"Size": 512}), ("FileSystemConfigs", []),
    ):  # fmt: skip
        updates.setdefault(optional, default)
    if updates.get("Architectures"):
        original_resource.architectures = updates.pop("Architectures")
    original_resource.update_configuration(updates)
    code = dict(properties["Code"])
    if "ZipFile" in code:
        code["ZipFile"] = base64.b64encode(cls._create_zipfile_from_plaintext_code(code["ZipFile"]))
    original_resource.update_function_code(code)
    original_resource.tags = tags_dict(properties.get("Tags"))
    return original_resource


# A public Powertools layer ARN (any publisher account, any version) resolves to the local stand-in.
@PATCHES.replace(Target(_MODELS, "LambdaBackend.layers_versions_by_arn", ("self", "layer_version_arn")))
def layers_versions_by_arn(self: Any, layer_version_arn: str) -> Any:
    """A public Powertools layer ARN resolves to the seeded local stand-in layer."""
    found = PATCHES.original(layers_versions_by_arn)(self, layer_version_arn)
    if found is None and ":layer:AWSLambdaPowertoolsPython" in layer_version_arn:
        name = layer_version_arn.split(":")[6]
        versions = self.list_layer_versions(name)
        return versions[-1] if versions else None
    return found


@PATCHES.replace(Target(_MODELS, "LambdaBackend.delete_function", ("self", "function_name", "qualifier")))
def delete_function(self: Any, function_name: str, qualifier: str | None = None) -> None:
    """A version an alias points to cannot be deleted (ResourceConflictException); a deleted function's warm
    runners are forgotten."""
    qualifier = qualifier or _qualifier_of(function_name)
    arns: list[str] = []
    referencing: list[str] = []
    with contextlib.suppress(Exception):  # a missing function: moto's own answer below
        base = self.get_function(function_name, qualifier)
        arns = [base.function_arn]
        if qualifier is None:
            arns += [str(v.function_arn) for v in self.list_versions_by_function(base.function_name)]
        elif qualifier != "$LATEST":
            aliases = self.list_aliases(base.function_name)
            referencing = [a.name for a in aliases if str(a.function_version) == qualifier]
    if referencing:
        raise ResourceConflict(
            f"Unable to delete version because the following aliases reference it: [{', '.join(referencing)}]"
        )
    PATCHES.original(delete_function)(self, function_name, qualifier)
    for arn in arns:
        get_runner().forget(arn)


# Lambda never reuses a version number (moto counted the versions left), and publishing under SnapStart
# runs the init the snapshot would be taken after.
@PATCHES.replace(Target(_MODELS, "LambdaStorage.publish_version", ("self", "name_or_arn", "description")))
def publish_version(self: Any, name_or_arn: str, description: str = "") -> Any:
    """PublishVersion never reuses a version number (moto counted the versions left), and runs the init of a
    SnapStart function (a failed init leaves the version Failed)."""
    function = self.get_function_by_name_or_arn_forbid_qualifier(name_or_arn)
    group = self._functions.get(function.function_name)
    if not group or not group["latest"]:
        return None
    versions = group["versions"]
    if versions and not function.code_or_config_updated:
        return versions[-1]  # nothing changed since the last version: Lambda answers that one
    function.code_or_config_updated = False
    number = max([int(group.get("last_version", 0)), *(int(v.version) for v in versions)]) + 1
    group["last_version"] = number
    fn = copy.copy(group["latest"])
    fn.set_version(number)
    if description:
        fn.description = description
    versions.append(fn)
    self._arns[fn.function_arn] = fn
    if getattr(fn, "snap_start_apply_on", SNAP_START_OFF) == SNAP_START_ON:
        error = get_runner().initialize(fn)
        if error is not None:
            log.warning("the init of %s failed at publish: %s", fn.function_arn, error)
            fn.state = "Failed"
            fn.state_reason_code = SNAPSHOT_FAILED_REASON_CODE
            fn.state_reason = SNAPSHOT_FAILED_REASON
    return fn


def _logging_config(config: dict[str, Any] | None, function_name: str) -> dict[str, Any]:
    config = dict(config or {})
    out = {
        "LogFormat": config.get("LogFormat", "Text"),
        "LogGroup": config.get("LogGroup") or f"/aws/lambda/{function_name}",
    }
    if out["LogFormat"] == "JSON":
        out["ApplicationLogLevel"] = config.get("ApplicationLogLevel", "INFO")
        out["SystemLogLevel"] = config.get("SystemLogLevel", "INFO")
    return out


def _apply_on(snap_start: Any, current: str) -> str:
    """SnapStart.ApplyOn of a request (its current value when the request has none), refused unless known."""
    from moto.awslambda.exceptions import ValidationException

    if snap_start is None:
        return current
    value = snap_start.get("ApplyOn", SNAP_START_OFF) if isinstance(snap_start, dict) else snap_start
    if value not in (SNAP_START_ON, SNAP_START_OFF):
        raise ValidationException(
            str(value), "snapStart.applyOn", "Member must satisfy enum value set: [PublishedVersions, None]"
        )
    return str(value)


def snap_start_supported(runtime: str | None) -> bool:
    """The managed runtimes SnapStart works with: Java 11 and later, Python 3.12 and later, .NET 8."""
    runtime = runtime or ""
    if runtime.startswith("java"):
        major = runtime.removeprefix("java").split(".", 1)[0]
        return major.isdigit() and int(major) >= 11
    if runtime.startswith("python3."):
        minor = runtime.removeprefix("python3.")
        return minor.isdigit() and int(minor) >= 12
    return runtime == "dotnet8"


def _check_snap_start(apply_on: str, runtime: str | None, storage_mb: Any, file_systems: list[Any]) -> None:
    """Lambda's refusals of a SnapStart function: its runtime, ephemeral storage over 512 MB, EFS."""
    from moto.awslambda.exceptions import InvalidParameterValueException

    if apply_on != SNAP_START_ON:
        return
    if not snap_start_supported(runtime):
        raise InvalidParameterValueException(f"{runtime} is not supported for SnapStart enabled functions.")
    if int(storage_mb or 512) > 512:
        raise InvalidParameterValueException(
            "EphemeralStorage greater than 512 MB is not supported for SnapStart enabled functions."
        )
    if file_systems:
        raise InvalidParameterValueException("EFS is not supported for SnapStart enabled functions.")


def _qualifier_of(name_or_arn: str) -> str | None:
    """The qualifier a function name or ARN carries (``fn:3``, ``arn:...:function:fn:live``), else None."""
    tail = name_or_arn.split(":function:", 1)[1] if ":function:" in name_or_arn else name_or_arn
    return tail.split(":", 1)[1] if ":" in tail else None


class ResourceConflict(LambdaClientError):
    """Lambda's 409 ResourceConflictException."""

    code = 409

    def __init__(self, text: str):
        super().__init__("ResourceConflictException", text)


def _invoke_quietly(fn: Any, event: Any) -> None:
    try:
        get_runner().invoke(fn, event)
    except Exception as exc:  # nobody waits for an Event invocation: the failure is an incident a test sees
        incidents.record(f"lambda.invoke_async.{fn.function_name}", exc)


# Every moto internal this module relies on: what it replaces, and what it reads or calls.
MOTO_TARGETS = (
    *PATCHES.targets,
    Target(_MODELS, "LambdaFunction.update_function_code", ("self", "updated_spec")),
    Target(_MODELS, "LambdaFunction._create_zipfile_from_plaintext_code"),
    Target(_MODELS, "LambdaBackend.create_function", ("self", "spec")),
    Target(_MODELS, "LambdaBackend.list_layer_versions", ("self", "layer_name")),
    Target(_MODELS, "LambdaBackend.get_function", ("self", "function_name_or_arn", "qualifier")),
    Target(_MODELS, "LambdaBackend.list_aliases", ("self", "function_name")),
    Target(_MODELS, "LambdaBackend.list_versions_by_function", ("self", "function_name")),
    Target(_MODELS, "LambdaStorage.get_function_by_name_or_arn_forbid_qualifier", ("self", "name_or_arn")),
    Target(_MODELS, "LambdaFunction.set_version", ("self", "version")),
    Target(_MODELS, "get_backend"),
    Target("moto.awslambda.exceptions", "LambdaClientError"),
    Target(
        "moto.awslambda.exceptions", "ValidationException", ("value", "property_name", "specific_message")
    ),
    Target("moto.awslambda.exceptions", "InvalidParameterValueException", ("message",)),
)
