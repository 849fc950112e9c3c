"""Lambda event-source mappings on DynamoDB and Kinesis streams: served by local/esm.py (local/esm_kinesis.py)
instead of moto's own delivery; a stream source needs StartingPosition, as on AWS.

moto delivers from inside ``put_item`` and then empties the shard; here that is switched off and a poller per
mapping (local/esm.py) delivers with AWS semantics. Mapping tags from a template become the dict ListTags
needs; State, StateTransitionReason and LastProcessingResult come from the poller; a mapping's function is
pre-warmed when the mapping is created. FilterCriteria and MetricsConfig are checked as Lambda checks them
(InvalidParameterValueException), stored normalized (empty ones are omitted, as AWS omits them) and applied by
the poller.
"""

from __future__ import annotations

import threading
from typing import Any

from local import filtering
from local.auth.service_roles import stream_access_refusal
from local.esm import get_manager
from local.esm_kinesis import KinesisPoller
from local.patching import Target, replace, tags_dict, truthy
from local.runner import get_runner

_MODELS = "moto.awslambda.models"
MOTO_TARGETS = (
    Target(_MODELS, "EventSourceMapping.__init__", ("self", "spec")),
    Target(_MODELS, "EventSourceMapping.get_configuration", ("self",)),
    Target(_MODELS, "EventSourceMapping.update_from_cloudformation_json"),
    Target(_MODELS, "EventSourceMapping._get_service_source_from_arn", ("self",)),
    Target(_MODELS, "LambdaBackend.create_event_source_mapping", ("self", "spec")),
    Target(_MODELS, "LambdaBackend.update_event_source_mapping", ("self", "uuid", "spec")),
    Target(_MODELS, "LambdaBackend.delete_event_source_mapping", ("self", "uuid")),
    Target("moto.dynamodb.models", "dynamodb_backends"),
    Target(_MODELS, "LambdaBackend.get_function", ("self", "function_name_or_arn")),
    Target("moto.awslambda.exceptions", "LambdaClientError"),
)
# The stream sources whose unset retry settings mean "until the records expire" (-1), as on AWS.
_STREAM_SOURCES = ("dynamodb", "kinesis")


def apply() -> None:
    from moto.awslambda import models as lm
    from moto.dynamodb.models import dynamodb_backends

    Esm = lm.EventSourceMapping
    Backend = lm.LambdaBackend

    def _forget_moto_delivery(backend: Any, function_arn: str) -> None:
        for table in dynamodb_backends[backend.account_id][backend.region_name].tables.values():
            table.lambda_event_source_mappings.pop(function_arn, None)

    def __init__(self: Any, spec: dict[str, Any]) -> None:
        spec = dict(spec)
        spec["Tags"] = tags_dict(spec.get("Tags"))
        original_init(self, spec)
        if self._get_service_source_from_arn() in _STREAM_SOURCES:
            if self.max_retry_attempts is None:
                self.max_retry_attempts = -1
            if self.max_record_age is None:
                self.max_record_age = -1
            if self.bisect_on_error is None:
                self.bisect_on_error = False
            if self.parallelization_factor is None:
                self.parallelization_factor = 1
        if self.max_batch_window is None:
            self.max_batch_window = 0
        self.enabled = truthy(self.enabled) if not isinstance(self.enabled, bool) else self.enabled

    original_init = replace(Esm, "__init__", __init__)

    def get_configuration(self: Any) -> dict[str, Any]:
        config = original_get_configuration(self)
        config.pop("Tags", None)  # not part of the mapping's configuration on AWS (ListTags has them)
        status = get_manager().status(self.uuid)
        if status is not None:
            config["State"] = (
                status.state if status.state != "Creating" else ("Enabled" if self.enabled else "Disabled")
            )
            config["StateTransitionReason"] = status.reason
            config["LastProcessingResult"] = status.last_result
        else:
            config["State"] = "Enabled" if self.enabled else "Disabled"
            config["StateTransitionReason"] = "USER_INITIATED"
        if self.enabled and config["State"] == "Disabled":
            config["State"] = "Enabling"
        elif not self.enabled and config["State"] == "Enabled":
            config["State"] = "Disabling"
        return config

    original_get_configuration = replace(Esm, "get_configuration", get_configuration)

    def update_from_cloudformation_json(
        cls: Any, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
        account_id: str, region_name: str,
    ) -> Any:  # fmt: skip
        properties = dict(cloudformation_json["Properties"])
        backend = lm.get_backend(account_id, region_name)
        replaced = any(
            properties.get(key) != getattr(original_resource, attr)
            for key, attr in (
                ("EventSourceArn", "event_source_arn"),
                ("StartingPosition", "starting_position"),
            )
            if key in properties
        )
        if replaced:  # immutable properties: a new mapping replaces the old one, as on AWS
            new = backend.create_event_source_mapping(properties)
            backend.delete_event_source_mapping(original_resource.uuid)
            return new
        tags = properties.pop("Tags", None)
        updates = {k: v for k, v in properties.items() if k not in ("EventSourceArn", "StartingPosition")}
        updates.setdefault("Enabled", True)
        updates.setdefault("DestinationConfig", {})
        updates.setdefault("FunctionResponseTypes", [])
        updates.setdefault("BisectBatchOnFunctionError", False)
        updates.setdefault("FilterCriteria", {})  # a property removed from the template is cleared
        updates.setdefault("MetricsConfig", {})
        esm = backend.update_event_source_mapping(original_resource.uuid, updates)
        if esm is not None:
            esm.tags = tags_dict(tags)
        return esm

    replace(Esm, "update_from_cloudformation_json", classmethod(update_from_cloudformation_json))

    def create_event_source_mapping(self: Any, spec: dict[str, Any]) -> Any:
        spec = dict(spec)
        if "Enabled" in spec:
            spec["Enabled"] = truthy(spec["Enabled"])
        _check_starting_position(spec)
        _check_stream_access(self, spec)
        _check_filter_and_metrics(spec)
        esm = original_create(self, spec)
        source = esm._get_service_source_from_arn()
        if source in _STREAM_SOURCES:
            _forget_moto_delivery(self, esm.function_arn)
            get_manager().start(esm, KinesisPoller if source == "kinesis" else None)
            _prewarm(self, esm.function_arn)
        return esm

    original_create = replace(Backend, "create_event_source_mapping", create_event_source_mapping)

    def update_event_source_mapping(self: Any, uuid: str, spec: dict[str, Any]) -> Any:
        spec = dict(spec)
        if "Enabled" in spec:
            spec["Enabled"] = truthy(spec["Enabled"])
        _check_filter_and_metrics(spec)
        esm = original_update(self, uuid, spec)
        if esm is not None:
            if "MaximumRecordAgeInSeconds" in spec and spec["MaximumRecordAgeInSeconds"] is None:
                esm.max_record_age = -1
            if "MaximumRetryAttempts" in spec and spec["MaximumRetryAttempts"] is None:
                esm.max_retry_attempts = -1
            get_manager().wake()
        return esm

    original_update = replace(Backend, "update_event_source_mapping", update_event_source_mapping)

    def delete_event_source_mapping(self: Any, uuid: str) -> Any:
        esm = original_delete(self, uuid)
        get_manager().stop(uuid)
        if esm is not None:
            _forget_moto_delivery(self, esm.function_arn)
        return esm

    original_delete = replace(Backend, "delete_event_source_mapping", delete_event_source_mapping)
    _patch_conflicts(lm)


def _patch_conflicts(lm: Any) -> None:
    """Lambda's 409 for a second mapping of one stream to one function, and FunctionArn with its qualifier.

    A mapping's function is the ARN with its qualifier (an alias is another function here, as on AWS), and a
    stream may have one mapping per such function: CloudFormation creating a replacement mapping before it
    deletes the old one meets this 409 on AWS.
    """
    Backend = lm.LambdaBackend

    def create_event_source_mapping(self: Any, spec: dict[str, Any]) -> Any:
        name = str(spec.get("FunctionName") or "")
        arn = _qualified_arn(self, name) if name and spec.get("EventSourceArn") else None
        for existing in list(self._event_source_mappings.values()):
            if (
                arn is not None
                and existing.event_source_arn == spec["EventSourceArn"]
                and (existing.function_arn == arn)
            ):
                raise _MappingConflict(spec["EventSourceArn"], name, existing.uuid)
        esm = original_create(self, spec)
        if arn is not None and esm is not None:
            esm.function_arn = arn
        return esm

    original_create = replace(Backend, "create_event_source_mapping", create_event_source_mapping)

    def update_event_source_mapping(self: Any, uuid: str, spec: dict[str, Any]) -> Any:
        esm = original_update(self, uuid, spec)
        if esm is not None and spec.get("FunctionName"):
            esm.function_arn = _qualified_arn(self, str(spec["FunctionName"]))
        return esm

    original_update = replace(Backend, "update_event_source_mapping", update_event_source_mapping)


def _qualified_arn(backend: Any, name_or_arn: str) -> str:
    """The function ARN a mapping records: with the alias or version when one was given (raises if unknown)."""
    function = backend.get_function(name_or_arn)
    qualifier = None
    if name_or_arn.startswith("arn:"):
        parts = name_or_arn.split(":")
        qualifier = parts[7] if len(parts) > 7 else None
    elif ":" in name_or_arn:
        qualifier = name_or_arn.split(":", 1)[1]
    base = function.function_arn.split(":function:", 1)
    unqualified = f"{base[0]}:function:{base[1].split(':', 1)[0]}"
    return f"{unqualified}:{qualifier}" if qualifier else unqualified


def _mapping_conflict_error() -> type:
    from moto.awslambda.exceptions import LambdaClientError

    class MappingConflict(LambdaClientError):
        code = 409

        def __init__(self, source_arn: str, function: str, uuid: str):
            super().__init__(
                "ResourceConflictException",
                f"The event source arn ({source_arn}) and function ({function}) provided mapping already "
                f"exists. Please update or delete the existing mapping with UUID {uuid}",
            )

    return MappingConflict


def _MappingConflict(source_arn: str, function: str, uuid: str) -> Exception:
    error: Exception = _mapping_conflict_error()(source_arn, function, uuid)
    return error


def _check_stream_access(backend: Any, spec: dict[str, Any]) -> None:
    """CreateEventSourceMapping checks up front that the function's role can read the stream, as on AWS."""
    from moto.awslambda.exceptions import InvalidParameterValueException

    source = str(spec.get("EventSourceArn") or "")
    dynamodb_stream = ":dynamodb:" in source and "/stream/" in source
    if not dynamodb_stream and ":kinesis:" not in source:
        return
    from moto.awslambda.exceptions import LambdaClientError

    try:
        role = str(backend.get_function(spec.get("FunctionName")).role or "")
    except LambdaClientError:
        return  # moto reports the missing function itself
    refusal = stream_access_refusal(role, source)
    if refusal is not None:
        raise InvalidParameterValueException(refusal)


def _check_starting_position(spec: dict[str, Any]) -> None:
    """A stream source needs StartingPosition (moto would read from TRIM_HORIZON without one)."""
    from moto.awslambda.exceptions import InvalidParameterValueException

    service = str(spec.get("EventSourceArn") or "").split(":")[2:3]
    if service and service[0] in _STREAM_SOURCES and not spec.get("StartingPosition"):
        raise InvalidParameterValueException(
            "1 validation error detected: Value null at 'startingPosition' failed to satisfy constraint: Member "
            "must not be null."
        )


METRICS_ALLOWED = ("EventCount",)  # for stream sources; ErrorCount and KafkaMetrics are Kafka's


def _check_filter_and_metrics(spec: dict[str, Any]) -> None:
    """Refuse a FilterCriteria or MetricsConfig Lambda refuses; store empty ones as absent (None)."""
    from moto.awslambda.exceptions import InvalidParameterValueException

    if "FilterCriteria" in spec:
        try:
            patterns = filtering.parse_criteria(spec["FilterCriteria"])
        except filtering.FilterError as exc:
            raise InvalidParameterValueException(str(exc)) from None
        spec["FilterCriteria"] = spec["FilterCriteria"] if patterns else None
    if "MetricsConfig" in spec:
        config = spec["MetricsConfig"] or {}
        wanted = config.get("Metrics") or [] if isinstance(config, dict) else None
        if wanted is None or any(m not in METRICS_ALLOWED for m in wanted) or len(set(wanted)) != len(wanted):
            raise InvalidParameterValueException(
                "Only EventCount metrics are supported for DynamoDB and Kinesis event source mappings."
            )
        spec["MetricsConfig"] = {"Metrics": list(wanted)} if wanted else None


def _prewarm(backend: Any, function_arn: str) -> None:
    from moto.awslambda.exceptions import LambdaClientError

    try:
        fn = backend.get_function(function_arn)
    except LambdaClientError:  # no such function: nothing to warm
        return
    threading.Thread(target=get_runner().prewarm, args=(fn,), name="lambda-prewarm", daemon=True).start()
