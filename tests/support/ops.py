"""A stack shaped like ours inside moto (``mock_aws``), for the operations commands' unit tests.

Not the real template (the infra tests cover that): the table built from ``contract.shape.table_shape``, an
optional bucket, and the stack outputs the commands read; TTL, PITR and deletion protection are applied through
the API, since moto's CloudFormation leaves them out.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contract import names
from contract.knobs import INTEGER, INTEGER_OR_OFF, KNOBS, DocTableConfig, resolve_config
from contract.shape import TableShape, consumer_shape, mapping_shape, table_shape

REGION = "eu-west-1"  # where the unit tests' moto runs
TABLE_TYPE = "AWS::DynamoDB::Table"
BUCKET_TYPE = "AWS::S3::Bucket"


def config_of(**knobs: str) -> DocTableConfig:
    """The config these knobs resolve to, ignoring the environment and cdk.json."""
    return resolve_config(context=knobs, environ={}, defaults={})


def table_properties(config: DocTableConfig, shape: TableShape) -> dict[str, Any]:
    """CloudFormation properties of the table ``shape`` describes (without TTL, PITR, deletion protection)."""
    properties: dict[str, Any] = {
        "TableName": shape.name,
        "KeySchema": shape.key_schema(),
        "AttributeDefinitions": [
            {"AttributeName": name, "AttributeType": type_}
            for name, type_ in shape.attribute_definitions().items()
        ],
        "BillingMode": shape.billing_mode,
        "Tags": [{"Key": k, "Value": v} for k, v in {**config.tags(), "Name": shape.name}.items()],
    }
    if shape.indexes:
        properties["GlobalSecondaryIndexes"] = [
            {"IndexName": i.name, "KeySchema": i.key_schema(), "Projection": {"ProjectionType": i.projection}}
            for i in shape.indexes
        ]
    if shape.stream_view_type:
        properties["StreamSpecification"] = {"StreamViewType": shape.stream_view_type}
    return properties


def template(
    config: DocTableConfig,
    *,
    with_bucket: bool = False,
    record_knobs: bool = True,
    extra_outputs: dict[str, str] | None = None,
) -> dict[str, Any]:
    policy = "Retain" if config.retain_on_delete else "Delete"
    resources: dict[str, Any] = {
        names.ID_TABLE: {
            "Type": TABLE_TYPE,
            "DeletionPolicy": policy,
            "UpdateReplacePolicy": policy,
            "Properties": table_properties(config, table_shape(config)),
        }
    }
    outputs: dict[str, Any] = {
        names.OUT_TABLE_NAME: {"Value": {"Ref": names.ID_TABLE}},
        names.OUT_TABLE_ARN: {"Value": {"Fn::GetAtt": [names.ID_TABLE, "Arn"]}},
    }
    if config.has_stream:
        outputs[names.OUT_STREAM_ARN] = {"Value": {"Fn::GetAtt": [names.ID_TABLE, "StreamArn"]}}
    if record_knobs:  # as the real stack does: the knobs it was deployed with
        outputs[names.OUT_KNOBS] = {"Value": config.deployed_record()}
    for key, value in (extra_outputs or {}).items():
        outputs[key] = {"Value": value}
    if with_bucket:
        resources[names.ID_BLOB_BUCKET] = {"Type": BUCKET_TYPE, "DeletionPolicy": policy}
        outputs[names.OUT_BLOB_BUCKET] = {"Value": {"Ref": names.ID_BLOB_BUCKET}}
    return {"Resources": resources, "Outputs": outputs}


def deploy(
    clients: Callable[[str], Any],
    config: DocTableConfig,
    *,
    with_bucket: bool = False,
    record_knobs: bool = True,
    extra_outputs: dict[str, str] | None = None,
) -> dict[str, str]:
    """Create the stack in moto, then apply what moto's CloudFormation leaves out; return the outputs.

    ``clients`` is a callable ``service -> boto3 client``; ``record_knobs`` False: a stack deployed before it
    recorded its knobs; ``extra_outputs``: literal outputs (a mapping made by :func:`wire_mapping`).
    """
    shape = table_shape(config)
    cfn = clients("cloudformation")
    cfn.create_stack(
        StackName=config.stack_name,
        TemplateBody=json.dumps(
            template(config, with_bucket=with_bucket, record_knobs=record_knobs, extra_outputs=extra_outputs)
        ),
    )
    ddb = clients("dynamodb")
    if shape.ttl_attribute:
        ddb.update_time_to_live(
            TableName=shape.name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": shape.ttl_attribute},
        )
    ddb.update_continuous_backups(
        TableName=shape.name, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": shape.pitr}
    )
    if shape.deletion_protection:
        ddb.update_table(TableName=shape.name, DeletionProtectionEnabled=True)
    stack = cfn.describe_stacks(StackName=config.stack_name)["Stacks"][0]
    return {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}


FAILURE_BUCKET = "doctable-failures-test"


def wire_mapping(clients: Callable[[str], Any], config: DocTableConfig) -> dict[str, str]:
    """A consumer function, a failure bucket and the event-source mapping the knobs declare, on the table's
    stream (moto's CloudFormation cannot build them); return them as the stack's outputs name them."""
    import io
    import zipfile

    shape = mapping_shape(config)
    assert shape is not None, "the knobs wire no mapping"
    role = clients("iam").create_role(RoleName="consumer-role", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", "def handler(event, context):\n    return {}\n")
    consumer = consumer_shape(config)
    settings: dict[str, Any] = {}
    if consumer is not None:  # the built-in consumer: its settings and environment as the stack writes them
        settings = {
            "Architectures": [consumer.architecture],
            "MemorySize": consumer.memory,
            "Timeout": consumer.timeout,
            "TracingConfig": {"Mode": consumer.tracing},
            "Environment": {"Variables": consumer.with_names(config.blob_bucket, config.table_name)},
        }
    function = clients("lambda").create_function(
        FunctionName="consumer", Runtime=names.LAMBDA_RUNTIME, Role=role, Handler="handler.handler",
        Code={"ZipFile": buffer.getvalue()}, **settings,
    )  # fmt: skip
    s3 = clients("s3")
    s3.create_bucket(Bucket=FAILURE_BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    stream = clients("dynamodb").describe_table(TableName=config.table_name)["Table"]["LatestStreamArn"]
    mapping = clients("lambda").create_event_source_mapping(
        EventSourceArn=stream,
        FunctionName=function["FunctionArn"],
        StartingPosition=shape.starting_position,
        BatchSize=shape.batch_size,
        MaximumBatchingWindowInSeconds=shape.batching_window,
        MaximumRetryAttempts=shape.max_retries,
        MaximumRecordAgeInSeconds=shape.max_record_age,
        ParallelizationFactor=shape.parallelization_factor,
        BisectBatchOnFunctionError=shape.bisect_on_error,
        FunctionResponseTypes=list(shape.function_response_types),
        DestinationConfig={"OnFailure": {"Destination": f"arn:aws:s3:::{FAILURE_BUCKET}"}},
        **({"FilterCriteria": shape.filter_criteria} if shape.filter_criteria else {}),
        **({"MetricsConfig": shape.metrics_config} if shape.metrics_config else {}),
        Tags=config.tags(),
    )
    return {
        names.OUT_MAPPING_UUID: mapping["UUID"],
        names.OUT_FAILURE_BUCKET: FAILURE_BUCKET,
        names.OUT_CONSUMER_FUNCTION_ARN: function["FunctionArn"],
        names.OUT_CONSUMER_FUNCTION_NAME: "consumer",
    }


def deploy_with_mapping(clients: Callable[[str], Any], config: DocTableConfig) -> dict[str, str]:
    """:func:`deploy`, then :func:`wire_mapping`, then the stack updated to output them; return the outputs."""
    deploy(clients, config)
    wired = wire_mapping(clients, config)
    clients("cloudformation").update_stack(
        StackName=config.stack_name, TemplateBody=json.dumps(template(config, extra_outputs=wired))
    )
    stack = clients("cloudformation").describe_stacks(StackName=config.stack_name)["Stacks"][0]
    return {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}


TTL_RATE_LIMITED = "Time to live has been modified multiple times within a fixed interval"


def change_ttl_now(aws: Any, table: str, *, enabled: bool) -> None:
    """UpdateTimeToLive on the local AWS ``aws``; when DynamoDB refuses it as a second change within its interval
    (AWS's message: an hour on AWS, DOCTABLE_LOCAL_TTL_CHANGE_INTERVAL_SECONDS locally), the local AWS's clock
    control says the interval has passed (local/clock.py) and the change is made again, which must then succeed."""
    from botocore.exceptions import ClientError

    ddb = aws.client("dynamodb")
    spec = {"Enabled": enabled, "AttributeName": names.TTL_ATTRIBUTE}
    try:
        ddb.update_time_to_live(TableName=table, TimeToLiveSpecification=spec)
        return
    except ClientError as exc:
        assert TTL_RATE_LIMITED in str(exc), exc
    assert aws.faults.ttl_interval_elapsed(table)
    ddb.update_time_to_live(TableName=table, TimeToLiveSpecification=spec)


def write_settings(path: Path, env: str = "dev", **knobs: str) -> Path:
    """A settings file whose [environments.<env>] holds ``knobs`` (strings, as -c gives them)."""

    def value(name: str, text: str) -> str:
        numeric = KNOBS[name].parser.toml in (INTEGER, INTEGER_OR_OFF) and text.isdigit()
        return text if numeric else f'"{text}"'

    body = "".join(f"{name} = {value(name, text)}\n" for name, text in knobs.items())
    path.write_text(f"[defaults]\n\n[environments.{env}]\n{body}")
    return path


def use_settings(monkeypatch: Any, folder: Path, text: str) -> Path:
    """``text`` as ``folder``'s settings file, named by DOCTABLE_CONFIG, with the state and ledger directories
    under ``folder`` (``monkeypatch``: the test's pytest.MonkeyPatch)."""
    path = folder / "doctable.toml"
    path.write_text(text)
    monkeypatch.setenv("DOCTABLE_CONFIG", str(path))
    monkeypatch.setenv("DOCTABLE_STATE_DIR", str(folder / "state"))
    monkeypatch.setenv("DOCTABLE_LEDGER_DIR", str(folder / "ledger"))
    return path


def live_table(**overrides: Any) -> dict[str, Any]:
    """DescribeTable's answer for the knobs' table (pk/sk, on-demand, unprotected), with ``overrides``."""
    table: dict[str, Any] = {
        "KeySchema": [
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        "AttributeDefinitions": [
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        "BillingModeSummary": {"BillingMode": "PAY_PER_REQUEST"},
        "DeletionProtectionEnabled": False,
    }
    table = {**table, **overrides}
    if "AttributeDefinitions" not in overrides:
        # As DynamoDB reports it: every key attribute of the table and its indexes (strings, unless told).
        defined = {a["AttributeName"] for a in table["AttributeDefinitions"]}
        for index in [
            *(table.get("GlobalSecondaryIndexes") or []),
            *(table.get("LocalSecondaryIndexes") or []),
        ]:
            for key in index.get("KeySchema", []):
                if key["AttributeName"] not in defined:
                    defined.add(key["AttributeName"])
                    table["AttributeDefinitions"].append(
                        {"AttributeName": key["AttributeName"], "AttributeType": "S"}
                    )
    return table
