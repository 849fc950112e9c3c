"""A stack shaped like ours inside moto (``mock_aws``), for the operations commands' unit tests.

Not the real template (the infra tests cover that): the table built from ``contract.shape.table_shape``, an
optional bucket, and the stack outputs the commands read; TTL, PITR and deletion protection are applied through
the API, since moto's CloudFormation leaves them out.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from contract import names
from contract.knobs import DocTableConfig, resolve_config
from contract.shape import TableShape, table_shape

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


def template(config: DocTableConfig, *, with_bucket: bool = False) -> dict[str, Any]:
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
    if with_bucket:
        resources[names.ID_BLOB_BUCKET] = {"Type": BUCKET_TYPE, "DeletionPolicy": policy}
        outputs[names.OUT_BLOB_BUCKET] = {"Value": {"Ref": names.ID_BLOB_BUCKET}}
    return {"Resources": resources, "Outputs": outputs}


def deploy(
    clients: Callable[[str], Any], config: DocTableConfig, *, with_bucket: bool = False
) -> dict[str, str]:
    """Create the stack in moto, then apply what moto's CloudFormation leaves out; return the outputs.

    ``clients`` is a callable ``service -> boto3 client``.
    """
    shape = table_shape(config)
    cfn = clients("cloudformation")
    cfn.create_stack(
        StackName=config.stack_name, TemplateBody=json.dumps(template(config, with_bucket=with_bucket))
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
