"""Lambda: functions run for real (local/runner.py), keep what CloudFormation passes, and resolve Powertools.

- ``LambdaFunction.invoke`` runs the function's code in a warm subprocess, never Docker; InvocationType=Event
  returns 202 at once and runs in the background;
- a public Powertools layer ARN (any account/version) resolves to the seeded local stand-in layer;
- LoggingConfig is kept and reported; CloudFormation passes Layers, Architectures, TracingConfig,
  LoggingConfig, EphemeralStorage and Tags (moto dropped them), and updates them too.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import threading
from typing import Any

from local.patching import Target, replace, tags_dict
from local.runner import encode_log_tail, get_runner

log = logging.getLogger("doctable.local.lambda")

_MODELS = "moto.awslambda.models"
MOTO_TARGETS = (
    Target(_MODELS, "LambdaFunction.__init__", ("self", "account_id", "spec", "region", "version")),
    Target(_MODELS, "LambdaFunction.invoke", ("self", "body", "request_headers", "response_headers")),
    Target(_MODELS, "LambdaFunction.get_configuration", ("self", "on_create")),
    Target(_MODELS, "LambdaFunction.update_configuration", ("self", "config_updates")),
    Target(_MODELS, "LambdaFunction.update_function_code", ("self", "updated_spec")),
    Target(_MODELS, "LambdaFunction.create_from_cloudformation_json"),
    Target(_MODELS, "LambdaFunction.update_from_cloudformation_json"),
    Target(_MODELS, "LambdaFunction._create_zipfile_from_plaintext_code"),
    Target(_MODELS, "LambdaBackend.create_function", ("self", "spec")),
    Target(_MODELS, "LambdaBackend.layers_versions_by_arn", ("self", "layer_version_arn")),
    Target(_MODELS, "LambdaBackend.list_layer_versions", ("self", "layer_name")),
    Target(_MODELS, "LambdaBackend.delete_function", ("self", "function_name", "qualifier")),
    Target(_MODELS, "LambdaBackend.get_function", ("self", "function_name_or_arn", "qualifier")),
    Target(_MODELS, "get_backend"),
)


def apply() -> None:
    from moto.awslambda import models as lm

    Fn = lm.LambdaFunction

    def __init__(self: Any, account_id: str, spec: dict[str, Any], region: str, version: Any = 1) -> None:
        spec = dict(spec)
        spec["Tags"] = tags_dict(spec.get("Tags"))
        original_init(self, account_id, spec, region, version)
        self.logging_config = _logging_config(spec.get("LoggingConfig"), self.function_name)

    original_init = replace(Fn, "__init__", __init__)

    def get_configuration(self: Any, on_create: bool = False) -> dict[str, Any]:
        config = original_get_configuration(self, on_create)
        config["LoggingConfig"] = dict(
            getattr(self, "logging_config", None) or _logging_config(None, self.function_name)
        )
        return config

    original_get_configuration = replace(Fn, "get_configuration", get_configuration)

    def update_configuration(self: Any, config_updates: dict[str, Any]) -> dict[str, Any]:
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
        return original_update_configuration(self, known)

    original_update_configuration = replace(Fn, "update_configuration", update_configuration)

    def invoke(self: Any, body: Any, request_headers: Any, response_headers: Any) -> bytes:
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

    replace(Fn, "invoke", invoke)

    def create_from_cloudformation_json(
        cls: Any,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kw: Any,
    ) -> Any:
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
            "EphemeralStorage", "PackageType", "ImageConfig", "KmsKeyArn", "Tags",
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

    replace(Fn, "create_from_cloudformation_json", classmethod(create_from_cloudformation_json))

    def update_from_cloudformation_json(
        cls: Any, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
        account_id: str, region_name: str,
    ) -> Any:  # fmt: skip
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

    replace(Fn, "update_from_cloudformation_json", classmethod(update_from_cloudformation_json))

    Backend = lm.LambdaBackend

    # A public Powertools layer ARN (any publisher account, any version) resolves to the local stand-in.
    def layers_versions_by_arn(self: Any, layer_version_arn: str) -> Any:
        found = original_layers_versions_by_arn(self, layer_version_arn)
        if found is None and ":layer:AWSLambdaPowertoolsPython" in layer_version_arn:
            name = layer_version_arn.split(":")[6]
            versions = self.list_layer_versions(name)
            return versions[-1] if versions else None
        return found

    original_layers_versions_by_arn = replace(Backend, "layers_versions_by_arn", layers_versions_by_arn)

    def delete_function(self: Any, function_name: str, qualifier: str | None = None) -> None:
        arn = None
        with contextlib.suppress(Exception):
            arn = self.get_function(function_name).function_arn
        original_delete_function(self, function_name, qualifier)
        if arn and qualifier is None:
            get_runner().forget(arn)

    original_delete_function = replace(Backend, "delete_function", delete_function)


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


def _invoke_quietly(fn: Any, event: Any) -> None:
    try:
        get_runner().invoke(fn, event)
    except Exception:
        log.exception("asynchronous invocation of %s failed", fn.function_name)
