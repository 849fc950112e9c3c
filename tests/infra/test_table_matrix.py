"""The table's shape over the full knob matrix (16 shapes x 4 environments), asserted on properties."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from contract import names
from contract.knobs import (
    ENV_VALUES,
    MANAGED_BY,
    PLAN_SOURCE,
    PLAN_VERSION,
    knobs_from_record,
    resolve_config,
)
from tests.infra.synth import only, resources, synth, tag_map

SHAPES = list(
    itertools.product(("none", "gsi1"), ("off", "on"), ("none", "new-and-old"), ("off", "on"), ENV_VALUES)
)


def _id(shape: tuple[str, ...]) -> str:
    return "gsi={}-ttl={}-stream={}-pitr={}-env={}".format(*shape)


@pytest.fixture(params=SHAPES, ids=[_id(s) for s in SHAPES], scope="module")
def shape(request: pytest.FixtureRequest) -> tuple[Any, dict[str, Any]]:
    gsi, ttl, stream, pitr, env = request.param
    config, template, _ = synth(gsi=gsi, ttl=ttl, stream=stream, pitr=pitr, env=env, owner="team-docs")
    return config, template


def test_table_shape_follows_the_knobs(shape: tuple[Any, dict[str, Any]]) -> None:
    # GIVEN a synthesized stack for one point of the matrix
    config, template = shape
    # WHEN we read its single table
    table = only(template, "AWS::DynamoDB::Table")
    props = table["Properties"]
    # THEN the name, keys and billing are fixed (a single-table design)
    assert props["TableName"] == f"items-{config.env}"
    assert props["KeySchema"] == [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "sk", "KeyType": "RANGE"},
    ]
    attrs = {a["AttributeName"]: a["AttributeType"] for a in props["AttributeDefinitions"]}
    expected_attrs = {"pk": "S", "sk": "S"} | ({"gsi1pk": "S", "gsi1sk": "S"} if config.has_gsi else {})
    assert attrs == expected_attrs
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert "ProvisionedThroughput" not in props
    # AND the optional parts are present exactly when their knob is on
    if config.has_gsi:
        assert props["GlobalSecondaryIndexes"] == [
            {
                "IndexName": "gsi1",
                "KeySchema": [
                    {"AttributeName": "gsi1pk", "KeyType": "HASH"},
                    {"AttributeName": "gsi1sk", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ]
    else:
        assert "GlobalSecondaryIndexes" not in props
    if config.has_ttl:
        assert props["TimeToLiveSpecification"] == {"AttributeName": "expiresAt", "Enabled": True}
    else:
        assert "TimeToLiveSpecification" not in props
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": config.has_pitr}
    if config.has_stream:
        assert props["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}
    else:
        assert "StreamSpecification" not in props


def test_environment_decides_protection_and_removal(shape: tuple[Any, dict[str, Any]]) -> None:
    config, template = shape
    table = only(template, "AWS::DynamoDB::Table")
    # prod: deletion protection + RETAIN; uat: RETAIN only; dev/stg: destroyable
    assert table["Properties"].get("DeletionProtectionEnabled", False) is (config.env == "prod")
    expected_policy = "Retain" if config.env in ("uat", "prod") else "Delete"
    assert table["DeletionPolicy"] == expected_policy
    assert table["UpdateReplacePolicy"] == expected_policy
    for bucket in resources(template, "AWS::S3::Bucket").values():
        assert bucket["DeletionPolicy"] == expected_policy


def test_provenance_tags_on_every_taggable_resource(shape: tuple[Any, dict[str, Any]]) -> None:
    config, template = shape
    expected = {
        "ManagedBy": MANAGED_BY,
        "Source": PLAN_SOURCE,
        "PlanVersion": PLAN_VERSION,
        "Environment": config.env,
        "Owner": "team-docs",
    }
    taggable = [
        "AWS::DynamoDB::Table",
        "AWS::S3::Bucket",
        "AWS::IAM::Role",
        "AWS::Lambda::Function",
        "AWS::Lambda::EventSourceMapping",
        "AWS::Logs::LogGroup",
    ]
    tagged = set()
    for type_name in taggable:
        for logical_id, resource in resources(template, type_name).items():
            tags = tag_map(resource["Properties"].get("Tags"))
            assert {k: tags.get(k) for k in expected} == expected, logical_id
            assert "CostCenter" not in tags, "an empty tag value is dropped, not written empty"
            tagged.add(type_name)
    # every resource type this shape deploys carries the tags (a shape without a type must not pass vacuously)
    expected_types = {"AWS::DynamoDB::Table"}
    if config.has_mapping:
        expected_types |= {"AWS::S3::Bucket", "AWS::Lambda::EventSourceMapping"}
    if config.builtin_consumer:
        expected_types |= {"AWS::IAM::Role", "AWS::Lambda::Function", "AWS::Logs::LogGroup"}
    assert tagged == expected_types
    table_tags = tag_map(only(template, "AWS::DynamoDB::Table")["Properties"]["Tags"])
    assert table_tags["Name"] == f"items-{config.env}"


def test_outputs_have_stable_names(shape: tuple[Any, dict[str, Any]]) -> None:
    config, template = shape
    outputs = template["Outputs"]
    assert outputs[names.OUT_TABLE_NAME]["Value"] == {"Ref": _table_id(template)}
    # the stack records the knobs it was deployed with, and they resolve back to this config
    assert resolve_config(context=knobs_from_record(outputs[names.OUT_KNOBS]["Value"]), environ={}) == config
    assert outputs[names.OUT_TABLE_ARN]["Value"] == {"Fn::GetAtt": [_table_id(template), "Arn"]}
    assert names.OUT_RUNTIME_POLICY_ARN in outputs
    if config.has_stream:
        assert outputs[names.OUT_STREAM_ARN]["Value"] == {"Fn::GetAtt": [_table_id(template), "StreamArn"]}
        for key in (names.OUT_MAPPING_UUID, names.OUT_CONSUMER_LOG_GROUP, names.OUT_BLOB_BUCKET):
            assert key in outputs
    else:
        assert names.OUT_STREAM_ARN not in outputs
        assert names.OUT_MAPPING_UUID not in outputs


def test_runtime_policy_is_the_seven_actions_on_this_table(shape: tuple[Any, dict[str, Any]]) -> None:
    config, template = shape
    policy = only(template, "AWS::IAM::ManagedPolicy")
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    table_arn = {"Fn::GetAtt": [_table_id(template), "Arn"]}
    assert statements[0] == {
        "Sid": "TableItems",
        "Effect": "Allow",
        "Action": sorted(names.RUNTIME_ACTIONS),
        "Resource": table_arn,
    }
    rest = statements[1:]
    if config.has_gsi:
        assert rest[0]["Action"] == "dynamodb:Query"
        assert rest[0]["Resource"] == {"Fn::Join": ["", [table_arn, "/index/gsi1"]]}
        rest = rest[1:]
    # with the built-in consumer, the application's blobs under the blob root (and nothing else)
    assert [s["Sid"] for s in rest] == (["ApplicationBlobs"] if config.builtin_consumer else [])


@pytest.mark.parametrize("env", ENV_VALUES)
def test_one_stack_per_environment_named_from_the_table(env: str) -> None:
    config, _, outdir = synth(env=env, table_base="orders")
    assert config.stack_name == f"doctable-orders-{env}"
    assert (outdir / f"doctable-orders-{env}.template.json").exists()


def _table_id(template: dict[str, Any]) -> str:
    return next(iter(resources(template, "AWS::DynamoDB::Table")))
