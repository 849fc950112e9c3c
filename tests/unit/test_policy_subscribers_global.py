"""`doctable policy` with a subscriber on a global table (``regions = "all"``): each resource a replica region's stack
declares for it is allowed to the bootstrap's CloudFormation execution policy in that region, and what its role does
there (read that region's replica stream, keep failed batches in its own bucket there) is under the permissions
boundary; the local AWS's IAM evaluator deciding, on the names CloudFormation and the stack give them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from contract.iam.execution import boundary_document, execution_documents
from contract.iam.target import Target
from contract.knobs import resolve_config
from infra.stack import create_stack
from local.auth.policy import Request, evaluate

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
ACCOUNT, HOME, WEST = "111122223333", "us-east-1", "us-west-2"
CALLER = f"arn:aws:iam::{ACCOUNT}:role/cdk-hnb659fds-cfn-exec-role-{ACCOUNT}-{WEST}"
STREAM = f"arn:aws:dynamodb:{WEST}:{ACCOUNT}:table/items-dev/stream/2026-12-02T00:00:00.000"


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> tuple[Target, dict[str, Any]]:
    config = resolve_config(
        context={"env": "dev", "table_base": "items", "stream": "new-and-old", "replicas": WEST},
        environ={},
        subscribers={"audit": {"handler": "examples/subscribers/search.py:handler", "regions": "all"}},
        settings_dir=ROOT,
    )
    outdir = tmp_path_factory.mktemp("policy-global-subscribers")
    app = cdk.App(outdir=str(outdir), context={"replica_streams": json.dumps({WEST: STREAM})})
    create_stack(app, config, account=ACCOUNT, region=HOME)
    app.synth()
    template = json.loads((outdir / f"{config.replica_stack_name(WEST)}.template.json").read_text())
    return Target(config, ACCOUNT, HOME, partition="aws"), template


def _allowed(documents: list[dict[str, Any]], action: str, resource: str, **context: str) -> bool:
    request = Request(CALLER, action, resource, {k.replace("_", ":", 1): [v] for k, v in context.items()})
    return evaluate(request, documents).allowed


def test_the_execution_policy_creates_the_replica_regions_subscriber(
    synthesized: tuple[Target, dict[str, Any]],
) -> None:
    target, template = synthesized
    stack = target.config.replica_stack_name(WEST)
    documents = execution_documents(target)
    (bucket,) = (
        r["Properties"]["BucketName"]
        for k, r in template["Resources"].items()
        if k.startswith("SubscriberAudit") and r["Type"] == "AWS::S3::Bucket"
    )
    assert bucket == f"items-dev-{ACCOUNT}-{WEST}-audit-failures"
    function = f"arn:aws:lambda:{WEST}:{ACCOUNT}:function:{stack}-SubscriberAuditFunction-A1B2C3"
    assert _allowed(documents, "s3:CreateBucket", f"arn:aws:s3:::{bucket}")
    assert _allowed(documents, "lambda:CreateFunction", function)
    assert _allowed(
        documents, "logs:CreateLogGroup", f"arn:aws:logs:{WEST}:{ACCOUNT}:log-group:{stack}-Sub-x"
    )
    assert _allowed(
        documents, "cloudwatch:PutMetricAlarm", f"arn:aws:cloudwatch:{WEST}:{ACCOUNT}:alarm:{stack}-x"
    )
    assert _allowed(documents, "lambda:CreateEventSourceMapping", "*", lambda_FunctionArn=function)
    # the home region's bucket of the subscriber is named too (it runs there as well)
    assert _allowed(documents, "s3:CreateBucket", f"arn:aws:s3:::items-dev-{ACCOUNT}-{HOME}-audit-failures")


def test_its_role_reads_that_regions_stream_and_keeps_failures_in_its_own_bucket_under_the_boundary(
    synthesized: tuple[Target, dict[str, Any]],
) -> None:
    target, _ = synthesized
    boundary = [boundary_document(target)]
    assert _allowed(boundary, "dynamodb:GetRecords", STREAM)
    bucket = f"items-dev-{ACCOUNT}-{WEST}-audit-failures"
    assert _allowed(boundary, "s3:PutObject", f"arn:aws:s3:::{bucket}/aws/lambda/uuid/batch")
    # and nothing of a region the table has not
    assert not _allowed(boundary, "dynamodb:GetRecords", STREAM.replace(WEST, "ap-south-1"))


def test_a_subscriber_only_in_a_replica_region_has_no_home_bucket() -> None:
    config = resolve_config(
        context={"stream": "new-and-old", "replicas": WEST},
        environ={},
        subscribers={"audit": {"handler": "examples/subscribers/search.py:handler", "regions": [WEST]}},
        settings_dir=ROOT,
    )
    target = Target(config, ACCOUNT, HOME, partition="aws")
    assert target.subscriber_failure_buckets == (f"items-dev-{ACCOUNT}-{WEST}-audit-failures",)


def test_the_operators_verify_reads_the_subscriber_in_each_region_it_runs_in(
    synthesized: tuple[Target, dict[str, Any]],
) -> None:
    from contract.iam import policies as iam

    target, _ = synthesized
    document = iam.policy_document(iam.role_statements("operator", target, "verify"))
    stack = target.config.replica_stack_name(WEST)
    function = f"arn:aws:lambda:{WEST}:{ACCOUNT}:function:{stack}-SubscriberAuditFunction-A1B2C3"
    mapping = f"arn:aws:lambda:{WEST}:{ACCOUNT}:event-source-mapping:0000-1111"
    assert _allowed([document], "lambda:GetFunctionConfiguration", function)
    assert _allowed([document], "lambda:GetEventSourceMapping", mapping, lambda_FunctionArn=function)
    assert _allowed([document], "lambda:ListTags", mapping)
    assert _allowed(
        [document], "logs:FilterLogEvents", f"arn:aws:logs:{WEST}:{ACCOUNT}:log-group:{stack}-Sub-x"
    )
    assert not _allowed([document], "lambda:GetFunctionConfiguration", function.replace(WEST, "ap-south-1"))
