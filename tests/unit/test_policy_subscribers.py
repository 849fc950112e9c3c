"""`doctable policy` with subscribers declared: for each resource the synthesized template declares for them, the
role that acts on it may (the local AWS's IAM evaluator deciding, on the name CloudFormation gives it): the deployer
creates each through the CDK bootstrap's deploy role; the operator's verify reads each subscriber's function,
mapping and proof lines, `logs --subscriber` reads its log group, `invoke --subscriber` invokes its function; the
reader's read-only verify reads the function and the mapping; preflight lists the mappings on the stream."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from contract.iam import policies as iam
from contract.iam.bootstrap import bootstrap_role_arn
from contract.knobs import DocTableConfig, resolve_config
from infra.stack import create_stack
from local.auth.policy import Request, evaluate

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
ACCOUNT, REGION = "111122223333", "eu-west-1"
HANDLER = "examples/subscribers/search.py:handler"
SUBSCRIBERS = {
    "search": {
        "handler": HANDLER,
        "filters": ['{"eventName": ["INSERT"]}'],
        "environment": {"SEARCH_TABLE": "s"},
    },
    "audit": {"handler": HANDLER, "source": "kinesis"},
}
CALLER = f"arn:aws:iam::{ACCOUNT}:user/someone"
# The resource types a subscriber adds: CloudFormation creates each (as the bootstrap's deploy role); the commands
# that read or call one after the deploy are checked below.
CREATED_BY_DEPLOY = {
    "AWS::Lambda::Function",
    "AWS::Logs::LogGroup",
    "AWS::IAM::Role",
    "AWS::IAM::Policy",
    "AWS::S3::Bucket",
    "AWS::S3::BucketPolicy",
    "AWS::Lambda::EventSourceMapping",
    "AWS::CloudWatch::Alarm",
    "AWS::Kinesis::StreamConsumer",
}


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> tuple[DocTableConfig, dict[str, Any]]:
    config = resolve_config(
        context={"env": "dev", "table_base": "items", "stream": "new-and-old", "kinesis": "on"},
        environ={},
        subscribers=SUBSCRIBERS,
        settings_dir=ROOT,
    )
    outdir = tmp_path_factory.mktemp("policy-subscribers")
    app = cdk.App(outdir=str(outdir))
    create_stack(app, config)
    app.synth()
    template = json.loads((outdir / f"{config.stack_name}.template.json").read_text())
    return config, template


def _subscriber_resources(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if k.startswith("Subscriber")}


def _generated(stack: str, logical_id: str) -> str:
    """The name CloudFormation gives a resource the template leaves unnamed: ``<stack>-<logical id>-<suffix>``,
    within Lambda's 64 characters."""
    return f"{stack}-{logical_id}"[:51] + "-A1B2C3D4E5F6"


def _allowed(role: str, config: DocTableConfig, action: str, resource: str, **context: str) -> bool:
    command = None if role != "reader-verify" else "verify"
    document = iam.policy_document(
        iam.role_statements(role.split("-")[0], iam.Target(config, ACCOUNT, REGION), command)
    )
    request = Request(CALLER, action, resource, {k.replace("_", ":", 1): [v] for k, v in context.items()})
    return evaluate(request, [document]).allowed


def test_every_resource_a_subscriber_adds_is_created_through_the_deployers_bootstrap_role(
    synthesized: tuple[DocTableConfig, dict[str, Any]],
) -> None:
    config, template = synthesized
    found = _subscriber_resources(template)
    # GIVEN the subscribers' resources: each a type CloudFormation creates as the bootstrap's deploy role
    assert {r["Type"] for r in found.values()} <= CREATED_BY_DEPLOY, sorted(
        {r["Type"] for r in found.values()}
    )
    assert {k for k in found if k.startswith(("SubscriberSearch", "SubscriberAudit"))} == set(found)
    # THEN the deployer may assume that role, and its own calls are preflight's
    deploy_role = bootstrap_role_arn("aws", ACCOUNT, REGION, "deploy")
    assert _allowed("deployer", config, "sts:AssumeRole", deploy_role)
    assert _allowed("deployer", config, "lambda:ListEventSourceMappings", "*")
    assert _allowed("reader", config, "lambda:ListEventSourceMappings", "*")


def test_the_operator_reads_invokes_and_follows_each_subscriber_the_template_declares(
    synthesized: tuple[DocTableConfig, dict[str, Any]],
) -> None:
    config, template = synthesized
    stack = config.stack_name
    functions = {
        k: f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{_generated(stack, k)}"
        for k, v in _subscriber_resources(template).items()
        if v["Type"] == "AWS::Lambda::Function"
    }
    groups = [
        f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{_generated(stack, k)}"
        for k, v in _subscriber_resources(template).items()
        if v["Type"] == "AWS::Logs::LogGroup"
    ]
    mappings = {
        k: functions[v["Properties"]["FunctionName"]["Ref"]]
        for k, v in _subscriber_resources(template).items()
        if v["Type"] == "AWS::Lambda::EventSourceMapping"
    }
    assert len(functions) == len(groups) == len(mappings) == len(SUBSCRIBERS)
    mapping_arn = (
        f"arn:aws:lambda:{REGION}:{ACCOUNT}:event-source-mapping:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"
    )
    for function in functions.values():
        # verify's subscriber:<name> row (the reader's read-only verify too), invoke --subscriber
        assert _allowed("operator", config, "lambda:GetFunctionConfiguration", function)
        assert _allowed("reader-verify", config, "lambda:GetFunctionConfiguration", function)
        assert _allowed("operator", config, "lambda:InvokeFunction", function)
    for function in mappings.values():
        # its mapping, narrowed by the function it invokes, and the mapping's tags
        for role in ("operator", "reader-verify"):
            assert _allowed(
                role, config, "lambda:GetEventSourceMapping", mapping_arn, lambda_FunctionArn=function
            )
            assert _allowed(role, config, "lambda:ListTags", mapping_arn)
        # (the reader's reads are narrowed by it; the operator's teardown probes any mapping, deleted ones too)
        other = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:someone-elses"
        assert not _allowed(
            "reader-verify", config, "lambda:GetEventSourceMapping", mapping_arn, lambda_FunctionArn=other
        )
    for group in groups:
        # verify's nudges and logs --subscriber read its proof lines
        assert _allowed("operator", config, "logs:FilterLogEvents", group)
    # AND nothing of another stack: another environment's subscriber function is not invoked
    prod = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:doctable-items-prod-SubscriberSearchFunction-X"
    assert not _allowed("operator", config, "lambda:InvokeFunction", prod)


def test_the_sources_the_nudges_are_read_off_are_read(
    synthesized: tuple[DocTableConfig, dict[str, Any]],
) -> None:
    # GIVEN a subscriber on the DynamoDB stream and one on the Kinesis destination (the consumer reads the stream)
    config, _ = synthesized
    stream = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/items-dev/stream/2026-01-01T00:00:00.000"
    kinesis = f"arn:aws:kinesis:{REGION}:{ACCOUNT}:stream/{config.stack_name}-Changes"
    # THEN verify reads each nudge's record off its subscriber's source
    assert _allowed("operator", config, "dynamodb:GetRecords", stream)
    assert _allowed("operator", config, "kinesis:GetRecords", kinesis)
