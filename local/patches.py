"""The adaptations of moto 5.2.5's internals that make it a faithful stand-in for what this project deploys.

Every target is listed in local/compat.py, which the server checks before applying anything here.

Lambda
  - ``LambdaFunction.invoke`` runs the function's code in a warm subprocess (local/runner.py), never Docker;
    InvocationType=Event returns 202 at once and runs in the background.
  - a public Powertools layer ARN (any account/version) resolves to the seeded local stand-in layer;
  - LoggingConfig is kept and reported; CloudFormation passes Layers, Architectures, TracingConfig,
    LoggingConfig, EphemeralStorage and Tags (moto dropped them), and updates them too.
  - Event-source mappings on DynamoDB streams are served by local/esm.py (moto's own delivery, which empties
    the shard, is switched off); mapping tags from a template become the dict ListTags needs; State,
    StateTransitionReason and LastProcessingResult come from the poller.
DynamoDB
  - ``StreamShard.add`` only appends the record (and wakes the pollers); a write that changes nothing adds no
    record; a deletion by the TTL sweeper (local/ttl.py) carries the TTL service's userIdentity.
  - writes are serialized by one lock and stream records numbered under it (unique, increasing); a
    TransactWriteItems snapshots only its items (not a deep copy of the table), publishes its stream records
    when it commits and rolls back item by item [soak finding: ``_patch_dynamodb_writes``].
  - CloudFormation applies TimeToLiveSpecification and PointInTimeRecoverySpecification, and updates a table
    in place (GSIs, stream, TTL, PITR, deletion protection, tags) instead of losing track of it.
CloudFormation
  - change sets are looked up per stack; deleting a missing one is a clean error, not a 500;
  - executing a change set refreshes the stack's template, parameters and Outputs (moto returned none);
  - UsePreviousValue for a parameter that was never passed keeps its default (SSM-typed parameters are
    resolved again, as on AWS) instead of ``KeyError: 'BootstrapVersion'``;
  - a modified resource whose type has no update support keeps its resource instead of becoming ``None``;
  - a failing deployment ends in ``*_ROLLBACK_COMPLETE`` / ``DELETE_FAILED`` with the reason, as on AWS,
    instead of a 500 the CDK CLI cannot explain.
IAM / Logs / S3 / CloudWatch
  - roles attach ManagedPolicyArns (AWS managed policies are loaded on demand) and update their policies;
    managed policies update in place; log groups keep RetentionInDays; buckets keep their public access
    block and versioning; AWS::S3::BucketPolicy, AWS::SNS::TopicPolicy, AWS::CloudWatch::Alarm are supported.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import re
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger("doctable.local.patches")

_APPLIED = False
MAX_SHARD_ITERATORS = 20_000
_ORIGINALS: dict[tuple[object, str], Any] = {}


def _replace(owner: object, name: str, new: Any) -> Any:
    """Install ``new`` as ``owner.name``; return the original (kept for wrapping)."""
    original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
    _ORIGINALS[(owner, name)] = original
    setattr(owner, name, new)
    if isinstance(original, (classmethod, staticmethod)):
        return original.__func__
    return original


def _tags_dict(tags: Any) -> dict[str, str]:
    if isinstance(tags, dict):
        return {str(k): str(v) for k, v in tags.items()}
    if isinstance(tags, list):
        return {str(t["Key"]): str(t.get("Value", "")) for t in tags if isinstance(t, dict) and "Key" in t}
    return {}


def _truthy(value: Any) -> bool:
    return value is True or str(value).lower() == "true"


# ---------------------------------------------------------------------------------------------------- Lambda
def _patch_lambda() -> None:
    from moto.awslambda import models as lm

    Fn = lm.LambdaFunction

    original_init = _replace(Fn, "__init__", None)

    def __init__(self: Any, account_id: str, spec: dict[str, Any], region: str, version: Any = 1) -> None:
        spec = dict(spec)
        spec["Tags"] = _tags_dict(spec.get("Tags"))
        original_init(self, account_id, spec, region, version)
        self.logging_config = _logging_config(spec.get("LoggingConfig"), self.function_name)

    Fn.__init__ = __init__

    original_get_configuration = _replace(Fn, "get_configuration", None)

    def get_configuration(self: Any, on_create: bool = False) -> dict[str, Any]:
        config = original_get_configuration(self, on_create)
        config["LoggingConfig"] = dict(
            getattr(self, "logging_config", None) or _logging_config(None, self.function_name)
        )
        return config

    Fn.get_configuration = get_configuration

    original_update_configuration = _replace(Fn, "update_configuration", None)

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

    Fn.update_configuration = update_configuration

    # The Invoke API runs the function for real.
    def invoke(self: Any, body: Any, request_headers: Any, response_headers: Any) -> bytes:
        from local.runner import encode_log_tail, get_runner

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

    Fn.invoke = invoke

    # CloudFormation: pass what moto dropped.
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

    _replace(Fn, "create_from_cloudformation_json", classmethod(create_from_cloudformation_json))

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
        original_resource.tags = _tags_dict(properties.get("Tags"))
        return original_resource

    _replace(Fn, "update_from_cloudformation_json", classmethod(update_from_cloudformation_json))

    Backend = lm.LambdaBackend

    # A public Powertools layer ARN (any publisher account, any version) resolves to the local stand-in.
    original_layers_versions_by_arn = _replace(Backend, "layers_versions_by_arn", None)

    def layers_versions_by_arn(self: Any, layer_version_arn: str) -> Any:
        found = original_layers_versions_by_arn(self, layer_version_arn)
        if found is None and ":layer:AWSLambdaPowertoolsPython" in layer_version_arn:
            name = layer_version_arn.split(":")[6]
            versions = self.list_layer_versions(name)
            return versions[-1] if versions else None
        return found

    Backend.layers_versions_by_arn = layers_versions_by_arn

    original_delete_function = _replace(Backend, "delete_function", None)

    def delete_function(self: Any, function_name: str, qualifier: str | None = None) -> None:
        from local.runner import get_runner

        arn = None
        with contextlib.suppress(Exception):
            arn = self.get_function(function_name).function_arn
        original_delete_function(self, function_name, qualifier)
        if arn and qualifier is None:
            get_runner().forget(arn)

    Backend.delete_function = delete_function

    _patch_mappings(lm)


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


def _prewarm(backend: Any, function_arn: str) -> None:
    from local.runner import get_runner

    try:
        fn = backend.get_function(function_arn)
    except Exception:
        return
    threading.Thread(target=get_runner().prewarm, args=(fn,), name="lambda-prewarm", daemon=True).start()


def _invoke_quietly(fn: Any, event: Any) -> None:
    from local.runner import get_runner

    try:
        get_runner().invoke(fn, event)
    except Exception:
        log.exception("asynchronous invocation of %s failed", fn.function_name)


def _patch_mappings(lm: Any) -> None:
    Esm = lm.EventSourceMapping
    Backend = lm.LambdaBackend

    original_init = _replace(Esm, "__init__", None)

    def __init__(self: Any, spec: dict[str, Any]) -> None:
        spec = dict(spec)
        spec["Tags"] = _tags_dict(spec.get("Tags"))
        original_init(self, spec)
        if self.max_retry_attempts is None and self._get_service_source_from_arn() in ("dynamodb", "kinesis"):
            self.max_retry_attempts = -1
        if self.max_record_age is None and self._get_service_source_from_arn() in ("dynamodb", "kinesis"):
            self.max_record_age = -1
        if self.bisect_on_error is None and self._get_service_source_from_arn() in ("dynamodb", "kinesis"):
            self.bisect_on_error = False
        if self.parallelization_factor is None and self._get_service_source_from_arn() in (
            "dynamodb",
            "kinesis",
        ):
            self.parallelization_factor = 1
        if self.max_batch_window is None:
            self.max_batch_window = 0
        self.enabled = _truthy(self.enabled) if not isinstance(self.enabled, bool) else self.enabled

    Esm.__init__ = __init__

    original_get_configuration = _replace(Esm, "get_configuration", None)

    def get_configuration(self: Any) -> dict[str, Any]:
        from local.esm import get_manager

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

    Esm.get_configuration = get_configuration

    def update_from_cloudformation_json(
        cls: Any, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
        account_id: str, region_name: str,
    ) -> Any:  # fmt: skip
        properties = dict(cloudformation_json["Properties"])
        backend = lm.get_backend(account_id, region_name)
        replace = any(
            properties.get(key) != getattr(original_resource, attr)
            for key, attr in (
                ("EventSourceArn", "event_source_arn"),
                ("StartingPosition", "starting_position"),
            )
            if key in properties
        )
        if replace:  # immutable properties: a new mapping replaces the old one, as on AWS
            new = backend.create_event_source_mapping(properties)
            backend.delete_event_source_mapping(original_resource.uuid)
            return new
        tags = properties.pop("Tags", None)
        updates = {k: v for k, v in properties.items() if k not in ("EventSourceArn", "StartingPosition")}
        updates.setdefault("Enabled", True)
        updates.setdefault("DestinationConfig", {})
        updates.setdefault("FunctionResponseTypes", [])
        updates.setdefault("BisectBatchOnFunctionError", False)
        esm = backend.update_event_source_mapping(original_resource.uuid, updates)
        esm.tags = _tags_dict(tags)
        return esm

    _replace(Esm, "update_from_cloudformation_json", classmethod(update_from_cloudformation_json))

    original_create = _replace(Backend, "create_event_source_mapping", None)

    def create_event_source_mapping(self: Any, spec: dict[str, Any]) -> Any:
        from local.esm import get_manager

        spec = dict(spec)
        if "Enabled" in spec:
            spec["Enabled"] = _truthy(spec["Enabled"])
        esm = original_create(self, spec)
        if esm._get_service_source_from_arn() == "dynamodb":
            # moto delivers from inside put_item and then empties the shard; our poller does it instead.
            from moto.dynamodb.models import dynamodb_backends

            for table in dynamodb_backends[self.account_id][self.region_name].tables.values():
                table.lambda_event_source_mappings.pop(esm.function_arn, None)
            get_manager().start(esm)
            _prewarm(self, esm.function_arn)
        return esm

    Backend.create_event_source_mapping = create_event_source_mapping

    original_update = _replace(Backend, "update_event_source_mapping", None)

    def update_event_source_mapping(self: Any, uuid: str, spec: dict[str, Any]) -> Any:
        from local.esm import get_manager

        spec = dict(spec)
        if "Enabled" in spec:
            spec["Enabled"] = _truthy(spec["Enabled"])
        esm = original_update(self, uuid, spec)
        if esm is not None:
            if "MaximumRecordAgeInSeconds" in spec and spec["MaximumRecordAgeInSeconds"] is None:
                esm.max_record_age = -1
            if "MaximumRetryAttempts" in spec and spec["MaximumRetryAttempts"] is None:
                esm.max_retry_attempts = -1
            get_manager().wake()
        return esm

    Backend.update_event_source_mapping = update_event_source_mapping

    original_delete = _replace(Backend, "delete_event_source_mapping", None)

    def delete_event_source_mapping(self: Any, uuid: str) -> Any:
        from local.esm import get_manager

        esm = original_delete(self, uuid)
        get_manager().stop(uuid)
        if esm is not None:
            from moto.dynamodb.models import dynamodb_backends

            for table in dynamodb_backends[self.account_id][self.region_name].tables.values():
                table.lambda_event_source_mappings.pop(esm.function_arn, None)
        return esm

    Backend.delete_event_source_mapping = delete_event_source_mapping


# -------------------------------------------------------------------------------------------------- DynamoDB
def _patch_dynamodb() -> None:
    from moto.dynamodb.models import table as tm

    def add(self: Any, old: Any, new: Any) -> None:
        from local.ttl import TTL_IDENTITY, deleting_for_ttl

        view = (
            self.table.stream_specification.get("StreamViewType") if self.table.stream_specification else None
        )
        if not view:
            return  # the stream is disabled: nothing is recorded
        if old is not None and new is not None and old == new:
            return  # DynamoDB writes no stream record for a write that changes nothing
        event_name = "INSERT" if old is None else "REMOVE" if new is None else "MODIFY"
        record = tm.StreamRecord(self.table, view, event_name, old, new, 0)  # numbered when appended
        if new is None and deleting_for_ttl():
            record.record["userIdentity"] = dict(TTL_IDENTITY)
        pending = getattr(_TRANSACTION, "records", None)
        if pending is not None:  # inside TransactWriteItems: appended when (and if) it commits
            pending.append((self, record))
            return
        _append_records([(self, record)])

    _replace(tm.StreamShard, "add", add)
    _patch_dynamodb_writes()

    # Shard iterators live forever in moto; a reader polling every 100 ms would grow the map without bound.
    from moto.dynamodbstreams import models as dsm

    original_get_shard_iterator = _replace(dsm.DynamoDBStreamsBackend, "get_shard_iterator", None)

    def _trim(backend: Any) -> None:
        if len(backend.shard_iterators) > MAX_SHARD_ITERATORS:
            for stale in list(backend.shard_iterators)[: MAX_SHARD_ITERATORS // 10]:
                backend.shard_iterators.pop(stale, None)

    def get_shard_iterator(
        self: Any, arn: str, shard_id: str, shard_iterator_type: str, sequence_number: Any = None
    ) -> Any:
        _trim(self)
        return original_get_shard_iterator(self, arn, shard_id, shard_iterator_type, sequence_number)

    dsm.DynamoDBStreamsBackend.get_shard_iterator = get_shard_iterator

    original_get_records = _replace(dsm.DynamoDBStreamsBackend, "get_records", None)

    def get_records(self: Any, iterator_arn: str, limit: int) -> Any:
        result = original_get_records(self, iterator_arn, limit)
        _trim(self)
        return result

    dsm.DynamoDBStreamsBackend.get_records = get_records

    Table = tm.Table
    original_create = _replace(Table, "create_from_cloudformation_json", None)

    def create_from_cloudformation_json(
        cls: Any,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kw: Any,
    ) -> Any:
        properties = cloudformation_json["Properties"]
        name = properties.get("TableName", resource_name)
        table = original_create(cls, name, cloudformation_json, account_id, region_name, **kw)
        _apply_table_extras(table, properties, account_id, region_name, creating=True)
        return table

    _replace(Table, "create_from_cloudformation_json", classmethod(create_from_cloudformation_json))

    def update_from_cloudformation_json(
        cls: Any, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
        account_id: str, region_name: str,
    ) -> Any:  # fmt: skip
        from moto.dynamodb.models import dynamodb_backends

        properties = cloudformation_json["Properties"]
        backend = dynamodb_backends[account_id][region_name]
        table = original_resource
        new_name = properties.get("TableName")
        if (new_name and new_name != table.name) or properties.get("KeySchema", table.schema) != table.schema:
            # Replacement, as on AWS (the old table's data does not move).
            new = cls.create_from_cloudformation_json(
                new_resource_name, cloudformation_json, account_id, region_name
            )
            backend.delete_table(table.name)
            return new
        if "AttributeDefinitions" in properties:
            table.attr = properties["AttributeDefinitions"]
        wanted = {g["IndexName"]: g for g in properties.get("GlobalSecondaryIndexes", [])}
        have = {g.name: g for g in table.global_indexes}
        updates: list[dict[str, Any]] = []
        for name in have.keys() - wanted.keys():
            updates.append({"Delete": {"IndexName": name}})
        for name in wanted.keys() - have.keys():
            updates.append({"Create": wanted[name]})
        if updates:
            backend.update_table_global_indexes(table, updates)
        stream = properties.get("StreamSpecification")
        current = table.stream_specification or {}
        if stream and stream.get("StreamViewType") != current.get("StreamViewType"):
            table.set_stream_specification(
                {"StreamEnabled": True, "StreamViewType": stream["StreamViewType"]}
            )
        elif not stream and current.get("StreamEnabled"):
            table.stream_specification = {"StreamEnabled": False}
            table.latest_stream_label = None
            table.stream_shard = None
        table.billing_mode = (
            "PAY_PER_REQUEST" if properties.get("BillingMode") == "PAY_PER_REQUEST" else "PROVISIONED"
        )
        if properties.get("ProvisionedThroughput"):
            table.throughput = dict(properties["ProvisionedThroughput"], NumberOfDecreasesToday=0)
        table.deletion_protection_enabled = _truthy(properties.get("DeletionProtectionEnabled", False))
        table.tags = list(properties.get("Tags") or [])
        if "SSESpecification" in properties:
            table.sse_specification = properties["SSESpecification"]
        _apply_table_extras(table, properties, account_id, region_name, creating=False)
        return table

    Table.update_from_cloudformation_json = classmethod(update_from_cloudformation_json)


# Concurrency (found by the fault-injection soak, tests/integration/test_soak.py). The server is threaded and
# moto's DynamoDB is not thread-safe: two concurrent writes got the same stream SequenceNumber (moto numbered a
# record by the shard's length, then appended it), a write raced the TTL sweeper's read-then-delete, and
# TransactWriteItems deep-copied every table it touched (items AND stream: ~0.6 s per transaction at 5,000
# records, holding the GIL; gigabytes of garbage over a soak) and rolled back by putting the copy back,
# which dropped the writes other threads made meanwhile and appended stream records nobody should see.
# Now: DynamoDB writes are serialized by one lock (as a single partition serializes writes to an item); stream
# records are numbered under it; a transaction snapshots only the items it touches, holds its stream records
# until it commits, and rolls back those items alone.
WRITE_LOCK = threading.RLock()
_TRANSACTION = threading.local()


def _append_records(records: list[tuple[Any, Any]]) -> None:
    from local.esm import get_manager

    with WRITE_LOCK:
        for shard, record in records:
            seq = len(shard.items) + shard.starting_sequence_number
            record.record["dynamodb"]["SequenceNumber"] = str(seq)
            shard.items.append(record)
    if records:
        with contextlib.suppress(RuntimeError):
            get_manager().wake()


class _NoTableDeepCopy:
    """``copy`` as moto.dynamodb.models sees it: inside our transaction a Table is not deep-copied."""

    def __init__(self, module: Any, table_class: type):
        self._module = module
        self._table_class = table_class

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)

    def deepcopy(self, value: Any, memo: Any = None) -> Any:
        if isinstance(value, self._table_class) and getattr(_TRANSACTION, "records", None) is not None:
            return value  # moto's rollback then puts the same table back: a no-op; ours restores the items
        return self._module.deepcopy(value, memo)


def _patch_dynamodb_writes() -> None:
    import copy

    from moto.dynamodb import models as dm
    from moto.dynamodb.models import table as tm
    from moto.dynamodb.models.dynamo_type import DynamoType

    Backend = dm.DynamoDBBackend
    for name in ("put_item", "update_item", "delete_item"):
        original = _replace(Backend, name, None)

        def locked(self: Any, *args: Any, __original: Any = original, **kwargs: Any) -> Any:
            with WRITE_LOCK:
                return __original(self, *args, **kwargs)

        setattr(Backend, name, locked)

    dm.copy = _NoTableDeepCopy(copy, tm.Table)  # type: ignore[attr-defined]
    original_transact = _replace(Backend, "transact_write_items", None)

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        with WRITE_LOCK:
            before: list[tuple[Any, Any, Any, Any]] = []  # (table, hash, range, item copy or None)
            for entry in transact_items:
                op = next(iter(entry.values()), None) if isinstance(entry, dict) else None
                table = self.tables.get(op.get("TableName")) if isinstance(op, dict) else None
                if table is None:
                    continue
                key = op.get("Key") or {
                    a: op.get("Item", {}).get(a) for a in (table.hash_key_attr, table.range_key_attr) if a
                }
                try:
                    hash_key = DynamoType(key[table.hash_key_attr])
                    range_key = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
                    current = table.get_item(hash_key, range_key)
                except Exception:
                    continue  # a malformed key: moto rejects the transaction before writing anything
                before.append((table, hash_key, range_key, copy.deepcopy(current)))
            _TRANSACTION.records = []
            try:
                original_transact(self, transact_items)
            except BaseException:
                for table, hash_key, range_key, item in reversed(before):
                    if range_key is None:
                        table.items.pop(hash_key, None)
                        if item is not None:
                            table.items[hash_key] = item
                    else:
                        table.items[hash_key].pop(range_key, None)
                        if item is not None:
                            table.items[hash_key][range_key] = item
                raise
            else:
                _append_records(_TRANSACTION.records)
            finally:
                _TRANSACTION.records = None

    Backend.transact_write_items = transact_write_items


def _apply_table_extras(
    table: Any, properties: dict[str, Any], account_id: str, region: str, creating: bool
) -> None:
    from moto.dynamodb.models import dynamodb_backends

    backend = dynamodb_backends[account_id][region]
    ttl = properties.get("TimeToLiveSpecification")
    if ttl:
        backend.update_time_to_live(
            table.name,
            {"Enabled": _truthy(ttl.get("Enabled")), "AttributeName": ttl.get("AttributeName", "")},
        )
    elif not creating and table.ttl.get("TimeToLiveStatus") == "ENABLED":
        table.ttl = {"TimeToLiveStatus": "DISABLED"}
    pitr = properties.get("PointInTimeRecoverySpecification")
    enabled = bool(pitr) and _truthy(pitr.get("PointInTimeRecoveryEnabled"))
    spec: dict[str, Any] = {"PointInTimeRecoveryEnabled": enabled}
    if enabled and pitr and "RecoveryPeriodInDays" in pitr:
        spec["RecoveryPeriodInDays"] = int(pitr["RecoveryPeriodInDays"])
    if enabled or not creating:
        backend.update_continuous_backups(table.name, spec)


# ---------------------------------------------------------------------------------------------- CloudFormation
def _patch_cloudformation() -> None:
    from moto.cloudformation import models as cm
    from moto.cloudformation import parsing as cp
    from moto.cloudformation import responses as cr
    from moto.cloudformation.exceptions import ValidationError

    # A modified resource whose type cannot be updated keeps its resource (moto put None in its place).
    original_parse_update = _replace(cp, "parse_and_update_resource", None)

    def parse_and_update_resource(
        logical_id: str, resource_json: dict[str, Any], resources_map: Any, account_id: str, region_name: str
    ) -> Any:
        original = resources_map._parsed_resources.get(logical_id)
        new = original_parse_update(logical_id, resource_json, resources_map, account_id, region_name)
        if new is None and original is not None:
            log.info("no update support for %s (%s): kept as it was", logical_id, resource_json.get("Type"))
            return original
        return new

    cp.parse_and_update_resource = parse_and_update_resource

    # Stack updates in dependency order: moto created every added resource before updating any modified one,
    # so a new mapping could not read the StreamArn of a table whose stream the same update turns on.
    def resource_map_update(
        self: Any, template: dict[str, Any], parameters: dict[str, Any] | None = None
    ) -> None:
        actions = self.build_resource_diff(template, parameters)
        removes = list(actions["Remove"])
        last_exception: Exception | None = None
        for _ in range(cp.MAX_UPDATE_ATTEMPTS):
            if not removes:
                break
            for logical_name in list(removes):
                resource_json = self._resource_json_map[logical_name]
                try:
                    resource = self._parsed_resources.get(logical_name)
                    if resource is not None and resource_json.get("DeletionPolicy") != "Retain":
                        self._delete_resource(resource, resource_json)
                    self._parsed_resources.pop(logical_name, None)
                except Exception as exc:  # a dependency not gone yet: try again in the next pass
                    last_exception = exc
                else:
                    removes.remove(logical_name)
        if removes and last_exception is not None:
            raise last_exception

        self._template = template
        if parameters:
            self.input_parameters = parameters
        self.load_mapping()
        self.load_parameters()
        self.load_conditions()
        self._resource_json_map = template["Resources"]

        pending = list(actions["Add"]) + list(actions["Modify"])
        for logical_name in _dependency_order(pending, template["Resources"]):
            resource_json = self._resource_json_map[logical_name]
            if logical_name in actions["Add"]:
                _ = self[logical_name]  # creates it (or skips it when its Condition is false)
                continue
            changed = cp.parse_and_update_resource(
                logical_name, resource_json, self, account_id=self._account_id, region_name=self._region_name
            )
            if changed is not None:
                self._parsed_resources[logical_name] = changed

    _replace(cp.ResourceMap, "update", resource_map_update)

    Backend = cm.CloudFormationBackend

    # UsePreviousValue for a parameter that was never passed: keep its default (and re-resolve SSM types).
    def _resolve_update_parameters(
        self: Any, instance: Any, incoming_params: list[dict[str, Any]]
    ) -> dict[str, Any]:
        parameters = {
            p["ParameterKey"]: p["ParameterValue"] for p in incoming_params if "ParameterValue" in p
        }
        for p in incoming_params:
            if _truthy(p.get("UsePreviousValue", False)) and p["ParameterKey"] in instance.parameters:
                parameters[p["ParameterKey"]] = instance.parameters[p["ParameterKey"]]
        return parameters

    _replace(Backend, "_resolve_update_parameters", _resolve_update_parameters)

    def _find_change_set(self: Any, change_set_name: str, stack_name: str | None) -> Any:
        if change_set_name in self.change_sets:
            return self.change_sets[change_set_name]
        for change_set in reversed(list(self.change_sets.values())):
            if change_set.change_set_name != change_set_name:
                continue
            if stack_name and stack_name not in (change_set.stack_name, change_set.stack_id):
                continue
            return change_set
        return None

    def describe_change_set(self: Any, change_set_name: str, stack_name: str | None = None) -> Any:
        change_set = _find_change_set(self, change_set_name, stack_name)
        if change_set is None:
            raise _change_set_not_found(change_set_name)
        return change_set

    _replace(Backend, "describe_change_set", describe_change_set)

    def delete_change_set(self: Any, change_set_name: str, stack_name: str | None = None) -> None:
        change_set = _find_change_set(self, change_set_name, stack_name)
        if change_set is None:
            raise _change_set_not_found(change_set_name)
        self.change_sets.pop(change_set.change_set_id, None)
        stack = self.stacks.get(change_set.stack_id)
        if (
            stack is not None
            and stack.status == "REVIEW_IN_PROGRESS"
            and change_set.change_set_type == "CREATE"
        ):
            # AWS deletes a stack that only ever had this (unexecuted) change set.
            others = [c for c in self.change_sets.values() if c.stack_id == stack.stack_id]
            if not others:
                self.stacks.pop(stack.stack_id, None)

    _replace(Backend, "delete_change_set", delete_change_set)

    def execute_change_set(self: Any, change_set_name: str, stack_name: str | None = None) -> None:
        change_set = _find_change_set(self, change_set_name, stack_name)
        if change_set is None:
            raise _change_set_not_found(change_set_name)
        stack = self.stacks[change_set.stack_id]
        creating = change_set.change_set_type == "CREATE"
        verb = "CREATE" if creating else "UPDATE"
        stack._add_stack_event(f"{verb}_IN_PROGRESS", resource_status_reason="User Initiated")
        stack.status = f"{verb}_IN_PROGRESS"
        previous = (stack.template, dict(stack.parameters))
        try:
            change_set.apply()
        except Exception as exc:  # roll back the bookkeeping, report the reason as AWS does
            log.exception("executing change set %s on %s failed", change_set.change_set_name, stack.name)
            reason = f"{type(exc).__name__}: {exc}"
            change_set.execution_status = "EXECUTE_FAILED"
            if creating:
                stack._add_stack_event("CREATE_FAILED", resource_status_reason=reason)
                stack._add_stack_event("ROLLBACK_COMPLETE", resource_status_reason=reason)
                stack.status = "ROLLBACK_COMPLETE"
            else:
                stack._add_stack_event("UPDATE_FAILED", resource_status_reason=reason)
                stack._add_stack_event("UPDATE_ROLLBACK_COMPLETE", resource_status_reason=reason)
                stack.status = "UPDATE_ROLLBACK_COMPLETE"
                stack.template, stack.parameters = previous
            stack.status_reason = reason
            return
        stack.template = change_set.template
        stack._parse_template()
        stack.description = stack.template_dict.get("Description")
        if change_set.parameters or creating:
            stack.parameters = dict(change_set.parameters)
        if change_set.tags:
            stack.tags = dict(change_set.tags)
        for export in stack.exports:
            self.exports.pop(export.name, None)
        stack.output_map = stack._create_output_map()
        for export in stack.exports:
            self.exports[export.name] = export
        change_set.execution_status = "EXECUTE_COMPLETE"
        stack._add_stack_event(f"{verb}_COMPLETE")
        stack.status = f"{verb}_COMPLETE"
        if creating:
            stack.creation_time = cm.utcnow()

    _replace(Backend, "execute_change_set", execute_change_set)

    original_delete_stack = _replace(Backend, "delete_stack", None)

    def delete_stack(self: Any, name_or_stack_id: str) -> None:
        stack = None
        for candidate in self.stacks.values():
            if name_or_stack_id in (candidate.name, candidate.stack_id):
                stack = candidate
                break
        if stack is None:
            return original_delete_stack(self, name_or_stack_id)
        try:
            return original_delete_stack(self, name_or_stack_id)
        except Exception as exc:
            log.exception("deleting stack %s failed", stack.name)
            reason = f"{type(exc).__name__}: {exc}"
            self.stacks[stack.stack_id] = stack
            self.deleted_stacks.pop(stack.stack_id, None)
            stack._add_stack_event("DELETE_FAILED", resource_status_reason=reason)
            stack.status = "DELETE_FAILED"
            stack.status_reason = reason
            return None

    Backend.delete_stack = delete_stack

    original_stack_update = _replace(cm.Stack, "update", None)

    def stack_update(
        self: Any, template: str, role_arn: str | None = None, parameters: Any = None, tags: Any = None
    ) -> None:
        previous = (self.template, dict(self.parameters))
        try:
            original_stack_update(self, template, role_arn, parameters=parameters, tags=tags)
        except Exception as exc:
            log.exception("updating stack %s failed", self.name)
            reason = f"{type(exc).__name__}: {exc}"
            self.template, self.parameters = previous
            self._parse_template()
            self._add_stack_event("UPDATE_FAILED", resource_status_reason=reason)
            self._add_stack_event("UPDATE_ROLLBACK_COMPLETE", resource_status_reason=reason)
            self.status = "UPDATE_ROLLBACK_COMPLETE"
            self.status_reason = reason
            return
        self.description = self.template_dict.get("Description")

    cm.Stack.update = stack_update

    original_create_resources = _replace(cm.Stack, "create_resources", None)

    def create_resources(self: Any) -> None:
        try:
            original_create_resources(self)
        except Exception as exc:  # a failed CreateStack: ROLLBACK_COMPLETE with the reason, not a 500
            log.exception("creating stack %s failed", self.name)
            reason = f"{type(exc).__name__}: {exc}"
            self._add_stack_event("CREATE_FAILED", resource_status_reason=reason)
            self._add_stack_event("ROLLBACK_COMPLETE", resource_status_reason=reason)
            self.status = "ROLLBACK_COMPLETE"
            self.status_reason = reason

    cm.Stack.create_resources = create_resources

    # Responses: pass StackName through; UsePreviousValue resolves to the previous *input* value.
    Response = cr.CloudFormationResponse

    def describe_change_set_response(self: Any) -> Any:
        change_set = self.cloudformation_backend.describe_change_set(
            self._get_param("ChangeSetName"), stack_name=self._get_param("StackName")
        )
        return cr.ActionResult(change_set)

    _replace(Response, "describe_change_set", describe_change_set_response)

    def delete_change_set_response(self: Any) -> Any:
        self.cloudformation_backend.delete_change_set(
            self._get_param("ChangeSetName"), stack_name=self._get_param("StackName")
        )
        return cr.EmptyResult()

    _replace(Response, "delete_change_set", delete_change_set_response)

    def execute_change_set_response(self: Any) -> Any:
        self.cloudformation_backend.execute_change_set(
            change_set_name=self._get_param("ChangeSetName"), stack_name=self._get_param("StackName")
        )
        return cr.EmptyResult()

    _replace(Response, "execute_change_set", execute_change_set_response)

    def create_change_set_response(self: Any) -> Any:
        stack_name = self._get_param("StackName")
        change_set_name = self._get_param("ChangeSetName")
        stack_body = self._get_param("TemplateBody")
        template_url = self._get_param("TemplateURL")
        change_set_type = self._get_param("ChangeSetType", "CREATE")
        stack = None
        if change_set_type == "UPDATE":
            stack = self.cloudformation_backend.get_stack(stack_name)
            self.validate_template_and_stack_body()
            if self._get_bool_param("UsePreviousTemplate", False):
                stack_body = stack.template
        elif change_set_type == "CREATE":
            # A stack left in REVIEW_IN_PROGRESS by an earlier, never-executed change set is reused (AWS does).
            for existing in list(self.cloudformation_backend.stacks.values()):
                if existing.name == stack_name and existing.status != "REVIEW_IN_PROGRESS":
                    raise ValidationError(stack_name, message=f"Stack [{stack_name}] already exists")
                if existing.name == stack_name:
                    self.cloudformation_backend.stacks.pop(existing.stack_id)
        parameters: dict[str, Any] = {}
        for param in self._get_param("Parameters", []):
            key = param["ParameterKey"]
            if _truthy(param.get("UsePreviousValue", False)):
                if stack is not None and key in stack.parameters:
                    parameters[key] = stack.parameters[key]
            elif "ParameterValue" in param:
                parameters[key] = param["ParameterValue"]
        if template_url:
            stack_body = self._get_stack_from_s3_url(template_url)
        tags = {item["Key"]: item["Value"] for item in self._get_param("Tags", [])}
        change_set_id, stack_id = self.cloudformation_backend.create_change_set(
            stack_name=stack_name,
            change_set_name=change_set_name,
            template=stack_body,
            parameters=parameters,
            description=self._get_param("Description"),
            notification_arns=self._get_param("NotificationARNs", []),
            tags=tags,
            role_arn=self._get_param("RoleARN"),
            change_set_type=change_set_type,
        )
        return cr.ActionResult({"Id": change_set_id, "StackId": stack_id})

    _replace(Response, "create_change_set", create_change_set_response)

    # Reasons are reported like AWS does, in DescribeStacks.
    if not hasattr(cm.Stack, "status_reason"):
        cm.Stack.status_reason = None


def _references(node: Any, found: set[str]) -> set[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "Ref" and isinstance(value, str):
                found.add(value)
            elif key == "Fn::GetAtt":
                target = value[0] if isinstance(value, list) else str(value).split(".", 1)[0]
                found.add(target)
            elif key == "Fn::Sub":
                text = value[0] if isinstance(value, list) else value
                if isinstance(text, str):
                    for name in re.findall(r"\$\{([^}!][^}]*)\}", text):
                        found.add(name.split(".", 1)[0])
                _references(value, found)
            else:
                _references(value, found)
    elif isinstance(node, list):
        for item in node:
            _references(item, found)
    return found


def _dependency_order(names: list[str], resources: dict[str, Any]) -> list[str]:
    """``names`` ordered so that every resource comes after the ones (among ``names``) it refers to."""
    wanted = set(names)
    deps: dict[str, set[str]] = {}
    for name in names:
        body = resources[name]
        refs = _references(body.get("Properties", {}), set())
        depends = body.get("DependsOn", [])
        refs.update([depends] if isinstance(depends, str) else depends)
        deps[name] = (refs & wanted) - {name}
    ordered: list[str] = []
    done: set[str] = set()

    def visit(name: str, path: set[str]) -> None:
        if name in done or name in path:
            return
        path.add(name)
        for dep in sorted(deps[name]):
            visit(dep, path)
        path.discard(name)
        done.add(name)
        ordered.append(name)

    for name in names:
        visit(name, set())
    return ordered


def _change_set_not_found(name: str) -> Exception:
    from moto.cloudformation.exceptions import CloudFormationError

    class ChangeSetNotFound(CloudFormationError):
        code = "ChangeSetNotFoundException"

    return ChangeSetNotFound(f"ChangeSet [{name}] does not exist")


# ------------------------------------------------------------------------------------------ IAM / Logs / S3 / CW
def _patch_iam() -> None:
    from moto.iam import models as im
    from moto.utilities.utils import get_partition

    Backend = im.IAMBackend
    original_attach = _replace(Backend, "attach_role_policy", None)

    def attach_role_policy(self: Any, policy_arn: str, role_name: str) -> None:
        _ensure_aws_managed_policy(self, policy_arn)
        original_attach(self, policy_arn, role_name)

    Backend.attach_role_policy = attach_role_policy

    Role = im.Role
    original_create = _replace(Role, "create_from_cloudformation_json", None)

    def create_role(
        cls: Any,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kw: Any,
    ) -> Any:
        role = original_create(cls, resource_name, cloudformation_json, account_id, region_name, **kw)
        backend = im.iam_backends[account_id][get_partition(region_name)]
        for arn in cloudformation_json["Properties"].get("ManagedPolicyArns", []) or []:
            backend.attach_role_policy(arn, role.name)
        return role

    _replace(Role, "create_from_cloudformation_json", classmethod(create_role))

    def update_role(
        cls: Any, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
        account_id: str, region_name: str,
    ) -> Any:  # fmt: skip
        properties = cloudformation_json["Properties"]
        backend = im.iam_backends[account_id][get_partition(region_name)]
        role = original_resource
        if properties.get("RoleName") and properties["RoleName"] != role.name:
            new = cls.create_from_cloudformation_json(
                new_resource_name, cloudformation_json, account_id, region_name
            )
            cls.delete_from_cloudformation_json(role.name, cloudformation_json, account_id, region_name)
            return new
        role.description = properties.get("Description", "")
        role.max_session_duration = properties.get("MaxSessionDuration", 3600)
        document = properties.get("AssumeRolePolicyDocument")
        if document is not None:
            role.assume_role_policy_document = document if isinstance(document, str) else json.dumps(document)
        wanted = {p["PolicyName"]: p["PolicyDocument"] for p in properties.get("Policies", []) or []}
        for name in list(role.policies):
            if name not in wanted:
                role.delete_policy(name)
        for name, doc in wanted.items():
            role.put_policy(name, doc if isinstance(doc, str) else json.dumps(doc))
        attached = set(role.managed_policies)
        wanted_arns = set(properties.get("ManagedPolicyArns", []) or [])
        for arn in attached - wanted_arns:
            backend.detach_role_policy(arn, role.name)
        for arn in wanted_arns - attached:
            backend.attach_role_policy(arn, role.name)
        return role

    _replace(Role, "update_from_cloudformation_json", classmethod(update_role))

    original_delete_role = _replace(Role, "delete_from_cloudformation_json", None)

    def delete_role(
        cls: Any, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str
    ) -> None:
        # CloudFormation detaches the role's ManagedPolicyArns before deleting it (moto refused: DeleteConflict).
        backend = im.iam_backends[account_id][get_partition(region_name)]
        for role in list(backend.roles.values()):
            if role.name == resource_name:
                for arn in list(role.managed_policies):
                    backend.detach_role_policy(arn, role.name)
        original_delete_role(cls, resource_name, cloudformation_json, account_id, region_name)

    _replace(Role, "delete_from_cloudformation_json", classmethod(delete_role))

    def update_managed_policy(
        cls: Any, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
        account_id: str, region_name: str,
    ) -> Any:  # fmt: skip
        properties = cloudformation_json.get("Properties", {})
        backend = im.iam_backends[account_id][get_partition(region_name)]
        policy = original_resource
        name = properties.get("ManagedPolicyName")
        if name and name != policy.name:
            new = cls.create_from_cloudformation_json(
                new_resource_name, cloudformation_json, account_id, region_name
            )
            return new
        document = json.dumps(properties.get("PolicyDocument"))
        if document != policy.document:
            if len(policy.versions) >= 5:
                for version in list(policy.versions):
                    if not version.is_default:
                        backend.delete_policy_version(policy.arn, version.version_id)
                        break
            backend.create_policy_version(policy.arn, document, "true")
        attached_roles = {r.name for r in backend.roles.values() if policy.arn in r.managed_policies}
        wanted_roles = set(properties.get("Roles", []) or [])
        for role_name in attached_roles - wanted_roles:
            backend.detach_role_policy(policy.arn, role_name)
        for role_name in wanted_roles - attached_roles:
            backend.attach_role_policy(policy.arn, role_name)
        return policy

    im.ManagedPolicy.update_from_cloudformation_json = classmethod(update_managed_policy)

    def delete_managed_policy(self: Any, account_id: str, region_name: str) -> None:
        backend = im.iam_backends[account_id][get_partition(region_name)]
        for role in list(backend.roles.values()):
            if self.arn in role.managed_policies:
                backend.detach_role_policy(self.arn, role.name)
        for version in list(self.versions):
            if not version.is_default:
                backend.delete_policy_version(self.arn, version.version_id)
        backend.delete_policy(self.arn)

    if "delete" not in im.ManagedPolicy.__dict__:
        im.ManagedPolicy.delete = delete_managed_policy


def _ensure_aws_managed_policy(backend: Any, policy_arn: str) -> None:
    """Load one AWS managed policy on demand (moto loads none unless MOTO_IAM_LOAD_MANAGED_POLICIES)."""
    if policy_arn in backend.managed_policies or ":iam::aws:policy/" not in policy_arn:
        return
    from moto.iam import models as im
    from moto.iam.aws_managed_policies import aws_managed_policies_data

    data = _aws_policies(aws_managed_policies_data)
    name = policy_arn.rsplit("/", 1)[1]
    if name in data:
        policy = im.AWSManagedPolicy.from_data(name, backend.account_id, backend.region_name, data[name])
        backend.managed_policies[policy.arn] = policy


_AWS_POLICIES: dict[str, Any] | None = None


def _aws_policies(raw: str) -> dict[str, Any]:
    global _AWS_POLICIES
    if _AWS_POLICIES is None:
        _AWS_POLICIES = json.loads(raw)
    return _AWS_POLICIES


def _patch_logs() -> None:
    from moto.logs import models as lgm

    LogGroup = lgm.LogGroup
    original_create = _replace(LogGroup, "create_from_cloudformation_json", None)

    def create(
        cls: Any,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kw: Any,
    ) -> Any:
        properties = cloudformation_json["Properties"]
        name = properties.get("LogGroupName", resource_name)
        backend = lgm.logs_backends[account_id][region_name]
        if name in backend.groups:
            # The local Lambda runner may have created it before the template did: adopt it.
            group = backend.groups[name]
            backend.tag_resource(group.arn, _tags_dict(properties.get("Tags")))
        else:
            group = original_create(cls, name, cloudformation_json, account_id, region_name, **kw)
        if properties.get("RetentionInDays"):
            backend.put_retention_policy(name, int(properties["RetentionInDays"]))
        return group

    _replace(LogGroup, "create_from_cloudformation_json", classmethod(create))

    def update(
        cls: Any, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
        account_id: str, region_name: str,
    ) -> Any:  # fmt: skip
        properties = cloudformation_json["Properties"]
        backend = lgm.logs_backends[account_id][region_name]
        if properties.get("LogGroupName") and properties["LogGroupName"] != original_resource.name:
            new = cls.create_from_cloudformation_json(
                new_resource_name, cloudformation_json, account_id, region_name
            )
            original_resource.delete(account_id, region_name)
            return new
        if properties.get("RetentionInDays"):
            backend.put_retention_policy(original_resource.name, int(properties["RetentionInDays"]))
        else:
            original_resource.retention_in_days = None
        tags = _tags_dict(properties.get("Tags"))
        backend.tag_resource(original_resource.arn, tags)
        return original_resource

    LogGroup.update_from_cloudformation_json = classmethod(update)


def _patch_s3() -> None:
    from moto.s3 import models as sm
    from moto.utilities.utils import get_partition

    Bucket = sm.FakeBucket
    original_create = _replace(Bucket, "create_from_cloudformation_json", None)

    def create(
        cls: Any,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kw: Any,
    ) -> Any:
        properties = cloudformation_json.get("Properties", {})
        name = properties.get("BucketName", resource_name)
        bucket = original_create(cls, name, cloudformation_json, account_id, region_name, **kw)
        _apply_bucket_extras(sm.s3_backends[account_id][get_partition(region_name)], bucket.name, properties)
        return bucket

    _replace(Bucket, "create_from_cloudformation_json", classmethod(create))

    original_update = _replace(Bucket, "update_from_cloudformation_json", None)

    def update(
        cls: Any, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
        account_id: str, region_name: str,
    ) -> Any:  # fmt: skip
        properties = cloudformation_json.get("Properties", {})
        properties.setdefault("BucketName", original_resource.name) if "Tags" in properties else None
        bucket = original_update(
            cls, original_resource, new_resource_name, cloudformation_json, account_id, region_name
        )
        _apply_bucket_extras(sm.s3_backends[account_id][get_partition(region_name)], bucket.name, properties)
        return bucket

    _replace(Bucket, "update_from_cloudformation_json", classmethod(update))

    # Bucket policies: moto applies every statement ignoring its Condition, so CDK's enforceSSL statement
    # ("Deny s3:* when aws:SecureTransport is false") denied everything. The local endpoint stands in for
    # AWS's HTTPS one: aws:SecureTransport is true; statements with other conditions are not applied.
    def get_permission(self: Any, action: str, resource: str) -> Any:
        from moto.iam.access_control import IAMPolicy, PermissionResult

        if self.policy is None:
            return PermissionResult.NEUTRAL
        try:
            document = json.loads(self.policy.decode() if isinstance(self.policy, bytes) else self.policy)
        except ValueError:
            return PermissionResult.NEUTRAL
        statements = document.get("Statement", [])
        if isinstance(statements, dict):
            statements = [statements]
        kept = []
        for statement in statements:
            condition = statement.get("Condition")
            if condition:
                if not _secure_transport_condition_holds(condition):
                    continue
                statement = {k: v for k, v in statement.items() if k != "Condition"}
            kept.append(statement)
        if not kept:
            return PermissionResult.NEUTRAL
        return IAMPolicy(json.dumps(dict(document, Statement=kept))).is_action_permitted(action, resource)

    _replace(Bucket, "get_permission", get_permission)


def _secure_transport_condition_holds(condition: dict[str, Any]) -> bool:
    """True if every condition is a Bool on aws:SecureTransport that holds for a secure request."""
    for operator, tests in condition.items():
        if operator not in ("Bool", "BoolIfExists") or not isinstance(tests, dict):
            return False
        for key, value in tests.items():
            if key.lower() != "aws:securetransport":
                return False
            values = value if isinstance(value, list) else [value]
            if "true" not in [str(v).lower() for v in values]:
                return False
    return True


def _apply_bucket_extras(backend: Any, name: str, properties: dict[str, Any]) -> None:
    block = properties.get("PublicAccessBlockConfiguration")
    if block:
        backend.put_public_access_block(name, {k: str(_truthy(v)).lower() for k, v in block.items()})
    versioning = properties.get("VersioningConfiguration")
    if versioning and versioning.get("Status"):
        backend.put_bucket_versioning(name, versioning["Status"])
    rules = (properties.get("OwnershipControls") or {}).get("Rules") or []
    if rules and rules[0].get("ObjectOwnership"):
        backend.put_bucket_ownership_controls(name, rules[0]["ObjectOwnership"])


def _define_models() -> None:
    """CloudFormation models moto lacks: AWS::S3::BucketPolicy, AWS::SNS::TopicPolicy, AWS::CloudWatch::Alarm."""
    from moto.cloudformation import parsing as cp
    from moto.cloudwatch.models import cloudwatch_backends
    from moto.core.common_models import CloudFormationModel
    from moto.s3.models import s3_backends
    from moto.utilities.utils import get_partition

    class BucketPolicy(CloudFormationModel):
        def __init__(self, bucket: str, account_id: str, region: str):
            self.bucket = bucket
            self.account_id = account_id
            self.region = region

        @staticmethod
        def cloudformation_type() -> str:
            return "AWS::S3::BucketPolicy"

        @staticmethod
        def cloudformation_name_type() -> str:
            return ""

        @property
        def physical_resource_id(self) -> str:
            return self.bucket

        @classmethod
        def create_from_cloudformation_json(  # type: ignore[override]
            cls,
            resource_name: str,
            cloudformation_json: dict[str, Any],
            account_id: str,
            region_name: str,
            **kw: Any,
        ) -> BucketPolicy:
            properties = cloudformation_json["Properties"]
            backend = s3_backends[account_id][get_partition(region_name)]
            document = properties["PolicyDocument"]
            backend.put_bucket_policy(properties["Bucket"], json.dumps(document).encode("utf-8"))
            return cls(properties["Bucket"], account_id, region_name)

        @classmethod
        def update_from_cloudformation_json(  # type: ignore[override]
            cls, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
            account_id: str, region_name: str,
        ) -> BucketPolicy:  # fmt: skip
            original_resource.delete(account_id, region_name)
            return cls.create_from_cloudformation_json(
                new_resource_name, cloudformation_json, account_id, region_name
            )

        def delete(self, account_id: str, region_name: str) -> None:
            backend = s3_backends[account_id][get_partition(region_name)]
            with contextlib.suppress(Exception):  # the bucket is gone already
                backend.delete_bucket_policy(self.bucket)

    class Alarm(CloudFormationModel):
        def __init__(self, name: str, account_id: str, region: str):
            self.name = name
            self.account_id = account_id
            self.region = region

        @staticmethod
        def cloudformation_type() -> str:
            return "AWS::CloudWatch::Alarm"

        @staticmethod
        def cloudformation_name_type() -> str:
            return "AlarmName"

        @property
        def physical_resource_id(self) -> str:
            return self.name

        @classmethod
        def has_cfn_attr(cls, attr: str) -> bool:
            return attr == "Arn"

        def get_cfn_attribute(self, attribute_name: str) -> str:
            return f"arn:aws:cloudwatch:{self.region}:{self.account_id}:alarm:{self.name}"

        @classmethod
        def create_from_cloudformation_json(  # type: ignore[override]
            cls,
            resource_name: str,
            cloudformation_json: dict[str, Any],
            account_id: str,
            region_name: str,
            **kw: Any,
        ) -> Alarm:
            p = cloudformation_json["Properties"]
            name = p.get("AlarmName", resource_name)
            cloudwatch_backends[account_id][region_name].put_metric_alarm(
                name=name,
                namespace=p.get("Namespace"),
                metric_name=p.get("MetricName"),
                comparison_operator=p.get("ComparisonOperator"),
                evaluation_periods=p.get("EvaluationPeriods"),
                period=p.get("Period"),
                threshold=p.get("Threshold"),
                statistic=p.get("Statistic"),
                description=p.get("AlarmDescription"),
                dimensions=list(p.get("Dimensions", [])),
                alarm_actions=p.get("AlarmActions", []),
                ok_actions=p.get("OKActions", []),
                insufficient_data_actions=p.get("InsufficientDataActions", []),
                datapoints_to_alarm=p.get("DatapointsToAlarm"),
                extended_statistic=p.get("ExtendedStatistic"),
                unit=p.get("Unit"),
                actions_enabled=_truthy(p.get("ActionsEnabled", True)),
                treat_missing_data=p.get("TreatMissingData"),
            )
            return cls(name, account_id, region_name)

        @classmethod
        def update_from_cloudformation_json(  # type: ignore[override]
            cls, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
            account_id: str, region_name: str,
        ) -> Alarm:  # fmt: skip
            original_resource.delete(account_id, region_name)
            return cls.create_from_cloudformation_json(
                cloudformation_json["Properties"].get("AlarmName", original_resource.name),
                cloudformation_json, account_id, region_name,
            )  # fmt: skip

        def delete(self, account_id: str, region_name: str) -> None:
            cloudwatch_backends[account_id][region_name].delete_alarms([self.name])

    class TopicPolicy(CloudFormationModel):
        def __init__(self, topics: list[str], logical: str):
            self.topics = topics
            self.logical = logical

        @staticmethod
        def cloudformation_type() -> str:
            return "AWS::SNS::TopicPolicy"

        @staticmethod
        def cloudformation_name_type() -> str:
            return ""

        @property
        def physical_resource_id(self) -> str:
            return self.logical

        @classmethod
        def create_from_cloudformation_json(  # type: ignore[override]
            cls,
            resource_name: str,
            cloudformation_json: dict[str, Any],
            account_id: str,
            region_name: str,
            **kw: Any,
        ) -> TopicPolicy:
            from moto.sns.models import sns_backends

            properties = cloudformation_json["Properties"]
            topics = list(properties.get("Topics", []))
            for arn in topics:
                sns_backends[account_id][arn.split(":")[3]].set_topic_attribute(
                    arn, "policy", json.dumps(properties.get("PolicyDocument", {}))
                )
            return cls(topics, resource_name)

        @classmethod
        def update_from_cloudformation_json(  # type: ignore[override]
            cls, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
            account_id: str, region_name: str,
        ) -> TopicPolicy:  # fmt: skip
            return cls.create_from_cloudformation_json(
                new_resource_name, cloudformation_json, account_id, region_name
            )

        def delete(self, account_id: str, region_name: str) -> None:
            pass  # the topic keeps its last policy; deleting the topic removes it

    for cached in (cp.get_model_list, cp.get_model_map, cp.get_name_type_map):
        cached.cache_clear()
    _MODELS.extend([BucketPolicy, Alarm, TopicPolicy])


_MODELS: list[type] = []


def apply() -> None:
    """Apply every adaptation once (idempotent)."""
    global _APPLIED
    if _APPLIED:
        return
    steps: list[Callable[[], None]] = [
        _patch_lambda,
        _patch_dynamodb,
        _patch_cloudformation,
        _patch_iam,
        _patch_logs,
        _patch_s3,
        _define_models,
    ]
    for step in steps:
        step()
    _APPLIED = True
