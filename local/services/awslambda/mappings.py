"""Lambda event-source mappings on DynamoDB and Kinesis streams: served by local/pollers/streams.py (local/pollers/kinesis.py)
instead of moto's own delivery; a stream source needs StartingPosition, as on AWS.

moto delivers from inside ``put_item`` and then empties the shard; here that is switched off and a poller per
mapping (local/pollers/streams.py) delivers with AWS semantics. Mapping tags from a template become the dict ListTags
needs; State, StateTransitionReason and LastProcessingResult come from the poller; a mapping's function is
pre-warmed when the mapping is created. FilterCriteria and MetricsConfig are checked as Lambda checks them
(InvalidParameterValueException), stored normalized (empty ones are omitted, as AWS omits them) and applied by
the poller.
"""

from __future__ import annotations

import threading
from typing import Any

from moto.awslambda.exceptions import LambdaClientError
from moto.core.exceptions import JsonRESTError

from local.auth.service_roles import stream_access_refusal
from local.patching import Patches, Target, tags_dict, truthy
from local.pollers import filtering
from local.pollers.kinesis import KinesisPoller, consumer_of, is_consumer_arn, stream_arn_of
from local.pollers.streams import get_manager
from local.runtime.runner import get_runner

_MODELS = "moto.awslambda.models"
PATCHES = Patches()
# The stream sources whose unset retry settings mean "until the records expire" (-1), as on AWS.
_STREAM_SOURCES = ("dynamodb", "kinesis")


def _forget_moto_delivery(backend: Any, function_arn: str) -> None:
    """Switch off moto's own delivery to ``function_arn`` from inside the tables' writes."""
    from moto.dynamodb.models import dynamodb_backends

    for table in dynamodb_backends[backend.account_id][backend.region_name].tables.values():
        table.lambda_event_source_mappings.pop(function_arn, None)


@PATCHES.replace(Target(_MODELS, "EventSourceMapping.__init__", ("self", "spec")))
def init_mapping(self: Any, spec: dict[str, Any]) -> None:
    """A mapping keeps its Tags as a dict, and a stream source's unset retry settings are AWS's defaults."""
    spec = dict(spec)
    spec["Tags"] = tags_dict(spec.get("Tags"))
    PATCHES.original(init_mapping)(self, spec)
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


@PATCHES.replace(Target(_MODELS, "EventSourceMapping.get_configuration", ("self",)))
def get_configuration(self: Any) -> dict[str, Any]:
    """A mapping's State, StateTransitionReason and LastProcessingResult come from its poller; no Tags."""
    config = PATCHES.original(get_configuration)(self)
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
    return config  # type: ignore[no-any-return]


@PATCHES.replace(Target(_MODELS, "EventSourceMapping.update_from_cloudformation_json"), wrap=classmethod)
def update_from_cloudformation_json(
    cls: Any, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
    account_id: str, region_name: str,
) -> Any:  # fmt: skip
    """An updated template's mapping changes in place (a property removed from the template is cleared); a new
    EventSourceArn or StartingPosition replaces it."""
    from moto.awslambda import models as lm

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


# Lambda's 409 for a second mapping of one stream to one function, and FunctionArn with its qualifier: a
# mapping's function is the ARN with its qualifier (an alias is another function here, as on AWS), and a
# stream may have one mapping per such function: CloudFormation creating a replacement mapping before it
# deletes the old one meets this 409 on AWS.


@PATCHES.replace(Target(_MODELS, "LambdaBackend.create_event_source_mapping", ("self", "spec")))
def create_event_source_mapping(self: Any, spec: dict[str, Any]) -> Any:
    """CreateEventSourceMapping refuses a second mapping of one stream to one function (409) and what Lambda
    refuses, records the function ARN with its qualifier, and has a stream source served by a poller."""
    name = str(spec.get("FunctionName") or "")
    arn = _qualified_arn(self, name) if name and spec.get("EventSourceArn") else None
    for existing in list(self._event_source_mappings.values()):
        if (
            arn is not None
            and existing.event_source_arn == spec["EventSourceArn"]
            and (existing.function_arn == arn)
        ):
            raise MappingConflict(spec["EventSourceArn"], name, existing.uuid)
    esm = _create_served(self, spec)
    if arn is not None and esm is not None:
        esm.function_arn = arn
    return esm


def _create_served(backend: Any, spec: dict[str, Any]) -> Any:
    """moto's create, checked as Lambda checks it; a stream source's mapping is served by a poller (moto's own
    delivery switched off) and its function pre-warmed."""
    spec = dict(spec)
    if "Enabled" in spec:
        spec["Enabled"] = truthy(spec["Enabled"])
    _check_starting_position(spec)
    _check_stream_access(backend, spec)
    _check_filter_and_metrics(spec)
    consumer = _fan_out_consumer(backend, spec)
    if consumer is not None:  # moto knows streams only: created on the consumer's stream, then given its ARN
        spec["EventSourceArn"] = stream_arn_of(consumer)
    esm = PATCHES.original(create_event_source_mapping)(backend, spec)
    if consumer is not None:
        esm.event_source_arn = consumer
    source = esm._get_service_source_from_arn()
    if source in _STREAM_SOURCES:
        _forget_moto_delivery(backend, esm.function_arn)
        get_manager().start(esm, KinesisPoller if source == "kinesis" else None)
        _prewarm(backend, esm.function_arn)
    return esm


@PATCHES.replace(Target(_MODELS, "LambdaBackend.update_event_source_mapping", ("self", "uuid", "spec")))
def update_event_source_mapping(self: Any, uuid: str, spec: dict[str, Any]) -> Any:
    """UpdateEventSourceMapping checks FilterCriteria and MetricsConfig, takes a cleared retry setting back to
    "until the records expire", wakes the pollers and records the function ARN with its qualifier."""
    checked = dict(spec)
    if "Enabled" in checked:
        checked["Enabled"] = truthy(checked["Enabled"])
    _check_filter_and_metrics(checked)
    esm = PATCHES.original(update_event_source_mapping)(self, uuid, checked)
    if esm is not None:
        if "MaximumRecordAgeInSeconds" in checked and checked["MaximumRecordAgeInSeconds"] is None:
            esm.max_record_age = -1
        if "MaximumRetryAttempts" in checked and checked["MaximumRetryAttempts"] is None:
            esm.max_retry_attempts = -1
        get_manager().wake()
    if esm is not None and spec.get("FunctionName"):
        esm.function_arn = _qualified_arn(self, str(spec["FunctionName"]))
    return esm


@PATCHES.replace(Target(_MODELS, "LambdaBackend.delete_event_source_mapping", ("self", "uuid")))
def delete_event_source_mapping(self: Any, uuid: str) -> Any:
    """DeleteEventSourceMapping stops the mapping's poller."""
    esm = PATCHES.original(delete_event_source_mapping)(self, uuid)
    get_manager().stop(uuid)
    if esm is not None:
        _forget_moto_delivery(self, esm.function_arn)
    return esm


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


class MappingConflict(LambdaClientError):
    """Lambda's 409 for a second mapping of one stream to one function."""

    code = 409

    def __init__(self, source_arn: str, function: str, uuid: str):
        super().__init__(
            "ResourceConflictException",
            f"The event source arn ({source_arn}) and function ({function}) provided mapping already "
            f"exists. Please update or delete the existing mapping with UUID {uuid}",
        )


def _fan_out_consumer(backend: Any, spec: dict[str, Any]) -> str | None:
    """The source's ARN when it is a Kinesis enhanced fan-out consumer (registered: else Lambda's "Invalid
    EventSourceArn"), None for any other source."""
    source = str(spec.get("EventSourceArn") or "")
    if not is_consumer_arn(source):
        return None
    if consumer_of(backend.account_id, backend.region_name, source) is None:
        raise JsonRESTError("ResourceNotFoundException", "Invalid EventSourceArn")
    return source


def _check_stream_access(backend: Any, spec: dict[str, Any]) -> None:
    """CreateEventSourceMapping checks up front that the function's role can read the stream, as on AWS."""
    from moto.awslambda.exceptions import InvalidParameterValueException

    source = str(spec.get("EventSourceArn") or "")
    dynamodb_stream = ":dynamodb:" in source and "/stream/" in source
    if not dynamodb_stream and ":kinesis:" not in source:
        return
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
    try:
        fn = backend.get_function(function_arn)
    except LambdaClientError:  # no such function: nothing to warm
        return
    threading.Thread(target=get_runner().prewarm, args=(fn,), name="lambda-prewarm", daemon=True).start()


# Every moto internal this module relies on: what it replaces, and what it reads or calls.
MOTO_TARGETS = (
    *PATCHES.targets,
    Target(_MODELS, "EventSourceMapping._get_service_source_from_arn", ("self",)),
    Target("moto.dynamodb.models", "dynamodb_backends"),
    Target(_MODELS, "LambdaBackend.get_function", ("self", "function_name_or_arn")),
    Target("moto.awslambda.exceptions", "LambdaClientError"),
)
