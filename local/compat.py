"""Start-up check: moto is exactly the pinned version, and every moto internal that local/ patches still exists.

local/ adapts moto's internals (see local/patches.py); a different moto, even a patch release, may have moved
or renamed any of them. Failing here, naming what changed, beats a half-working server.
"""

from __future__ import annotations

import importlib
import inspect
from importlib import metadata

PINNED_MOTO = "5.2.5"

# (module, attribute path, parameter names the patch relies on or None). Every function local/patches.py
# replaces or wraps is listed, plus the attributes the pollers and the runner read.
REQUIRED: tuple[tuple[str, str, tuple[str, ...] | None], ...] = (
    # Lambda: invocation, configuration, CloudFormation, mappings
    ("moto.awslambda.models", "LambdaFunction.__init__", ("self", "account_id", "spec", "region", "version")),
    (
        "moto.awslambda.models",
        "LambdaFunction.invoke",
        ("self", "body", "request_headers", "response_headers"),
    ),
    ("moto.awslambda.models", "LambdaFunction.get_configuration", ("self", "on_create")),
    ("moto.awslambda.models", "LambdaFunction.update_configuration", ("self", "config_updates")),
    ("moto.awslambda.models", "LambdaFunction.update_function_code", ("self", "updated_spec")),
    ("moto.awslambda.models", "LambdaFunction.create_from_cloudformation_json", None),
    ("moto.awslambda.models", "LambdaFunction.update_from_cloudformation_json", None),
    ("moto.awslambda.models", "LambdaFunction._get_layers_data", ("self", "layers_versions_arns")),
    ("moto.awslambda.models", "EventSourceMapping.__init__", ("self", "spec")),
    ("moto.awslambda.models", "EventSourceMapping.get_configuration", ("self",)),
    ("moto.awslambda.models", "EventSourceMapping.update_from_cloudformation_json", None),
    ("moto.awslambda.models", "LambdaBackend.create_event_source_mapping", ("self", "spec")),
    ("moto.awslambda.models", "LambdaBackend.update_event_source_mapping", ("self", "uuid", "spec")),
    ("moto.awslambda.models", "LambdaBackend.delete_event_source_mapping", ("self", "uuid")),
    ("moto.awslambda.models", "LambdaBackend.get_event_source_mapping", ("self", "uuid")),
    ("moto.awslambda.models", "LambdaBackend.delete_function", ("self", "function_name", "qualifier")),
    ("moto.awslambda.models", "LambdaBackend.publish_layer_version", ("self", "spec")),
    ("moto.awslambda.models", "LambdaBackend.layers_versions_by_arn", ("self", "layer_version_arn")),
    ("moto.awslambda.models", "LambdaBackend.list_layer_versions", ("self", "layer_name")),
    ("moto.awslambda.models", "LambdaBackend.get_function", ("self", "function_name_or_arn", "qualifier")),
    ("moto.awslambda.models", "lambda_backends", None),
    # DynamoDB and its stream
    ("moto.dynamodb.models.table", "StreamShard.add", ("self", "old", "new")),
    ("moto.dynamodb.models.table", "StreamShard.get", ("self", "start", "quantity")),
    ("moto.dynamodb.models.table", "StreamRecord.__init__", None),
    ("moto.dynamodb.models.table", "Table.create_from_cloudformation_json", None),
    ("moto.dynamodb.models.table", "Table.set_stream_specification", ("self", "streams")),
    ("moto.dynamodb.models.table", "Table.all_items", ("self",)),
    ("moto.dynamodb.models.table", "Table.delete_item", ("self", "hash_key", "range_key")),
    # [soak finding] the DynamoDB write lock and item-level transaction rollback (patches._patch_dynamodb_writes)
    ("moto.dynamodb.models.table", "Table.get_item", ("self", "hash_key", "range_key")),
    ("moto.dynamodb.models", "DynamoDBBackend.put_item", None),
    ("moto.dynamodb.models", "DynamoDBBackend.update_item", None),
    ("moto.dynamodb.models", "DynamoDBBackend.delete_item", None),
    ("moto.dynamodb.models", "DynamoDBBackend.transact_write_items", ("self", "transact_items")),
    ("moto.dynamodb.models", "copy", None),
    ("moto.dynamodb.models.dynamo_type", "Item.__eq__", None),
    ("moto.dynamodb.models", "DynamoDBBackend.update_time_to_live", ("self", "table_name", "ttl_spec")),
    (
        "moto.dynamodb.models",
        "DynamoDBBackend.update_continuous_backups",
        ("self", "table_name", "point_in_time_spec"),
    ),
    ("moto.dynamodb.models", "DynamoDBBackend.update_table", None),
    (
        "moto.dynamodb.models",
        "DynamoDBBackend.update_table_global_indexes",
        ("self", "table", "global_index_updates"),
    ),
    (
        "moto.dynamodbstreams.models",
        "DynamoDBStreamsBackend.get_shard_iterator",
        ("self", "arn", "shard_id", "shard_iterator_type", "sequence_number"),
    ),
    ("moto.dynamodbstreams.models", "DynamoDBStreamsBackend.get_records", ("self", "iterator_arn", "limit")),
    ("moto.dynamodbstreams.models", "dynamodbstreams_backends", None),
    # CloudFormation engine
    (
        "moto.cloudformation.parsing",
        "parse_and_update_resource",
        ("logical_id", "resource_json", "resources_map", "account_id", "region_name"),
    ),
    ("moto.cloudformation.parsing", "get_model_list", None),
    ("moto.cloudformation.parsing", "ResourceMap.update", ("self", "template", "parameters")),
    (
        "moto.cloudformation.parsing",
        "ResourceMap.build_resource_diff",
        ("self", "other_template", "parameters"),
    ),
    (
        "moto.cloudformation.parsing",
        "ResourceMap._delete_resource",
        ("self", "parsed_resource", "resource_json"),
    ),
    ("moto.cloudformation.parsing", "ResourceMap.load_parameters", ("self",)),
    ("moto.cloudformation.parsing", "ResourceMap.load_conditions", ("self",)),
    ("moto.cloudformation.parsing", "MAX_UPDATE_ATTEMPTS", None),
    ("moto.cloudformation.parsing", "get_model_map", None),
    ("moto.cloudformation.parsing", "get_name_type_map", None),
    ("moto.cloudformation.models", "CloudFormationBackend.create_change_set", None),
    ("moto.cloudformation.models", "CloudFormationBackend.describe_change_set", ("self", "change_set_name")),
    ("moto.cloudformation.models", "CloudFormationBackend.delete_change_set", ("self", "change_set_name")),
    (
        "moto.cloudformation.models",
        "CloudFormationBackend.execute_change_set",
        ("self", "change_set_name", "stack_name"),
    ),
    (
        "moto.cloudformation.models",
        "CloudFormationBackend._resolve_update_parameters",
        ("self", "instance", "incoming_params"),
    ),
    ("moto.cloudformation.models", "CloudFormationBackend.delete_stack", ("self", "name_or_stack_id")),
    ("moto.cloudformation.models", "Stack._create_output_map", ("self",)),
    ("moto.cloudformation.models", "Stack._parse_template", ("self",)),
    ("moto.cloudformation.models", "Stack.update", None),
    ("moto.cloudformation.models", "Stack.create_resources", ("self",)),
    ("moto.cloudformation.models", "Stack._add_stack_event", None),
    ("moto.cloudformation.responses", "CloudFormationResponse.create_change_set", ("self",)),
    ("moto.cloudformation.responses", "CloudFormationResponse.describe_change_set", ("self",)),
    ("moto.cloudformation.responses", "CloudFormationResponse.delete_change_set", ("self",)),
    ("moto.cloudformation.responses", "CloudFormationResponse.execute_change_set", ("self",)),
    # IAM, Logs, S3, CloudWatch, SSM
    ("moto.iam.models", "Role.create_from_cloudformation_json", None),
    ("moto.iam.models", "Role.update_from_cloudformation_json", None),
    ("moto.iam.models", "Role.delete_from_cloudformation_json", None),
    ("moto.iam.models", "IAMBackend.attach_role_policy", ("self", "policy_arn", "role_name")),
    ("moto.iam.models", "IAMBackend.detach_role_policy", ("self", "policy_arn", "role_name")),
    ("moto.iam.models", "ManagedPolicy.create_from_cloudformation_json", None),
    ("moto.iam.models", "AWSManagedPolicy.from_data", None),
    ("moto.iam.aws_managed_policies", "aws_managed_policies_data", None),
    ("moto.logs.models", "LogGroup.create_from_cloudformation_json", None),
    ("moto.logs.models", "LogsBackend.put_retention_policy", ("self", "log_group_name", "retention_in_days")),
    ("moto.s3.models", "FakeBucket.create_from_cloudformation_json", None),
    ("moto.s3.models", "FakeBucket.update_from_cloudformation_json", None),
    ("moto.s3.models", "FakeBucket.get_permission", ("self", "action", "resource")),
    ("moto.iam.access_control", "IAMPolicy.is_action_permitted", None),
    ("moto.s3.models", "S3Backend.put_public_access_block", ("self", "bucket_name", "pub_block_config")),
    ("moto.s3.models", "S3Backend.put_bucket_policy", ("self", "bucket_name", "policy")),
    ("moto.s3.models", "S3Backend.put_bucket_versioning", ("self", "bucket_name", "status")),
    ("moto.s3.models", "S3Backend.put_object", None),
    ("moto.s3.models", "S3Backend.put_bucket_ownership_controls", ("self", "bucket_name", "ownership")),
    ("moto.cloudwatch.models", "CloudWatchBackend.put_metric_alarm", None),
    ("moto.cloudwatch.models", "CloudWatchBackend.put_metric_data", ("self", "namespace", "metric_data")),
    ("moto.cloudwatch.models", "CloudWatchBackend.delete_alarms", ("self", "alarm_names")),
    (
        "moto.sns.models",
        "SNSBackend.set_topic_attribute",
        ("self", "topic_arn", "attribute_name", "attribute_value"),
    ),
    ("moto.ssm.models", "Parameter.__init__", None),
    ("moto.ssm.models", "ssm_backends", None),
    ("moto.logs.models", "LogsBackend.ensure_log_group", ("self", "log_group_name")),
    (
        "moto.logs.models",
        "LogsBackend.put_log_events",
        ("self", "log_group_name", "log_stream_name", "log_events"),
    ),
    # the server
    ("moto.moto_server.werkzeug_app", "DomainDispatcherApplication", None),
    ("moto.moto_server.werkzeug_app", "MotoRequestHandler", None),
    ("moto.moto_server.werkzeug_app", "create_backend_app", None),
)


class CompatError(RuntimeError):
    """moto is not what local/ was written against."""


def _resolve(module_name: str, path: str) -> object:
    obj: object = importlib.import_module(module_name)
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def check() -> None:
    """Raise CompatError naming every difference found (version first, then each missing or changed internal)."""
    problems: list[str] = []
    try:
        installed = metadata.version("moto")
    except metadata.PackageNotFoundError:
        raise CompatError(f"moto is not installed; the local AWS needs moto[server]=={PINNED_MOTO}") from None
    if installed != PINNED_MOTO:
        problems.append(
            f"moto {installed} is installed but local/ is written against moto {PINNED_MOTO} exactly "
            f"(pip install 'moto[server]=={PINNED_MOTO}', or re-check local/patches.py and bump PINNED_MOTO)"
        )
    for module_name, path, params in REQUIRED:
        target = f"{module_name}.{path}"
        try:
            obj = _resolve(module_name, path)
        except (ImportError, AttributeError) as exc:
            problems.append(f"{target} is gone ({exc.__class__.__name__}: {exc})")
            continue
        if params is None:
            continue
        try:
            actual = tuple(inspect.signature(obj).parameters)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            continue
        if actual[: len(params)] != params:
            problems.append(
                f"{target} changed signature: expected ({', '.join(params)}), found ({', '.join(actual)})"
            )
    if problems:
        raise CompatError(
            "moto is not what the local AWS was written against:\n  - " + "\n  - ".join(problems)
        )
