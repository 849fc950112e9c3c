"""Builders for the operations commands' unit tests: a stack shaped like ours, inside moto (``mock_aws``).

Not the real template (the infra tests cover that): just the table, optional buckets, and the stack outputs the
commands read, with TTL/PITR/deletion protection applied through the API as the real stack's custom handling
would. Imported only by tests.
"""

from __future__ import annotations

import json
from typing import Any

from contract import names
from contract.knobs import DocTableConfig, resolve_config

TABLE_ID = "DocumentTableE88AFB8E"
BLOB_ID = "StreamConsumerBlobBucket585B4E8C"


def config_of(**knobs: str) -> DocTableConfig:
    return resolve_config(context=knobs, environ={}, defaults={})


def table_properties(config: DocTableConfig) -> dict[str, Any]:
    attributes = [
        {"AttributeName": names.PARTITION_KEY, "AttributeType": "S"},
        {"AttributeName": names.SORT_KEY, "AttributeType": "S"},
    ]
    properties: dict[str, Any] = {
        "TableName": config.table_name,
        "KeySchema": [
            {"AttributeName": names.PARTITION_KEY, "KeyType": "HASH"},
            {"AttributeName": names.SORT_KEY, "KeyType": "RANGE"},
        ],
        "BillingMode": "PAY_PER_REQUEST",
        "Tags": [{"Key": k, "Value": v} for k, v in {**config.tags(), "Name": config.table_name}.items()],
    }
    if config.has_gsi:
        attributes += [
            {"AttributeName": names.GSI_PARTITION_KEY, "AttributeType": "S"},
            {"AttributeName": names.GSI_SORT_KEY, "AttributeType": "S"},
        ]
        properties["GlobalSecondaryIndexes"] = [
            {
                "IndexName": names.GSI_NAME,
                "KeySchema": [
                    {"AttributeName": names.GSI_PARTITION_KEY, "KeyType": "HASH"},
                    {"AttributeName": names.GSI_SORT_KEY, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ]
    if config.has_stream:
        properties["StreamSpecification"] = {"StreamViewType": "NEW_AND_OLD_IMAGES"}
    properties["AttributeDefinitions"] = attributes
    return properties


def template(config: DocTableConfig, *, with_bucket: bool = False) -> dict[str, Any]:
    policy = "Retain" if config.retain_on_delete else "Delete"
    resources: dict[str, Any] = {
        TABLE_ID: {
            "Type": "AWS::DynamoDB::Table",
            "DeletionPolicy": policy,
            "UpdateReplacePolicy": policy,
            "Properties": table_properties(config),
        }
    }
    outputs: dict[str, Any] = {
        names.OUT_TABLE_NAME: {"Value": {"Ref": TABLE_ID}},
        names.OUT_TABLE_ARN: {"Value": {"Fn::GetAtt": [TABLE_ID, "Arn"]}},
    }
    if config.has_stream:
        outputs[names.OUT_STREAM_ARN] = {"Value": {"Fn::GetAtt": [TABLE_ID, "StreamArn"]}}
    if with_bucket:
        resources[BLOB_ID] = {"Type": "AWS::S3::Bucket", "DeletionPolicy": policy}
        outputs[names.OUT_BLOB_BUCKET] = {"Value": {"Ref": BLOB_ID}}
    return {"Resources": resources, "Outputs": outputs}


def deploy(clients: Any, config: DocTableConfig, *, with_bucket: bool = False) -> dict[str, str]:
    """Create the stack in moto, then apply what moto's CloudFormation leaves out; return the outputs.

    ``clients`` is a callable ``service -> boto3 client``.
    """
    cfn = clients("cloudformation")
    cfn.create_stack(
        StackName=config.stack_name, TemplateBody=json.dumps(template(config, with_bucket=with_bucket))
    )
    ddb = clients("dynamodb")
    if config.has_ttl:
        ddb.update_time_to_live(
            TableName=config.table_name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": names.TTL_ATTRIBUTE},
        )
    ddb.update_continuous_backups(
        TableName=config.table_name,
        PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": config.has_pitr},
    )
    if config.deletion_protection:
        ddb.update_table(TableName=config.table_name, DeletionProtectionEnabled=True)
    stack = cfn.describe_stacks(StackName=config.stack_name)["Stacks"][0]
    return {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
