"""A team's subscribers in the template (infra/compute/subscribers.py): each its own function running the wrapper, role
holding only its grants and its source's reads, log group, failure bucket, mapping with its filters and the
consumer's tags, and alarms; cdk-nag clean at synth and cfn-lint clean."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from contract import names
from contract.knobs import resolve_config
from infra.stack import create_stack
from tests.infra.synth import cfn_lint, resources, stack_template, tag_map

ROOT = Path(__file__).resolve().parents[2]
SEARCH = {
    "handler": "examples/subscribers/search.py:handler",
    "filters": ['{"eventName": ["INSERT", "MODIFY"]}'],
    "batch_size": 25,
    "grants": [
        "table:read",
        {
            "resource": "arn:aws:dynamodb:us-east-1:123456789012:table/search-dev",
            "actions": ["dynamodb:PutItem", "dynamodb:DeleteItem"],
        },
    ],
    "environment": {"SEARCH_TABLE": "search-dev"},
}
AUDIT = {"handler": "examples/subscribers/search.py:handler", "source": "kinesis", "per_record": True}


def synth(tmp_path: Path, subscribers: dict[str, Any], **knobs: str) -> dict[str, Any]:
    config = resolve_config(
        context={"stream": "new-and-old", **knobs}, environ={}, subscribers=subscribers, settings_dir=ROOT
    )
    app = cdk.App(outdir=str(tmp_path))
    create_stack(app, config)
    app.synth()  # raises on any unacknowledged cdk-nag finding
    return stack_template(tmp_path, config.stack_name)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return synth(tmp_path_factory.mktemp("subscribers"), {"search": SEARCH, "audit": AUDIT}, kinesis="on")


def of(template: dict[str, Any], kind: str, prefix: str) -> dict[str, Any]:
    found = [v for k, v in resources(template, kind).items() if k.startswith(prefix)]
    assert len(found) == 1, (kind, prefix, len(found))
    return found[0]


def test_each_subscriber_has_its_own_function_running_the_wrapper(template: dict[str, Any]) -> None:
    search = of(template, "AWS::Lambda::Function", "SubscriberSearch")["Properties"]
    assert search["Handler"] == names.SUBSCRIBER_HANDLER
    env = search["Environment"]["Variables"]
    assert env[names.ENV_SUBSCRIBER_NAME] == "search" and env["SEARCH_TABLE"] == "search-dev"
    assert env[names.ENV_SUBSCRIBER_HANDLER] == "subscriber_code.search:handler"
    assert env[names.ENV_SUBSCRIBER_PER_RECORD] == "false"
    audit = of(template, "AWS::Lambda::Function", "SubscriberAudit")["Properties"]
    assert audit["Environment"]["Variables"][names.ENV_SUBSCRIBER_PER_RECORD] == "true"


def test_each_mapping_reads_its_source_with_its_filters_and_the_consumers_tags(
    template: dict[str, Any],
) -> None:
    search = of(template, "AWS::Lambda::EventSourceMapping", "SubscriberSearch")["Properties"]
    assert search["BatchSize"] == 25 and search["BisectBatchOnFunctionError"] is True
    assert search["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert [json.loads(f["Pattern"]) for f in search["FilterCriteria"]["Filters"]] == [
        {"eventName": ["INSERT", "MODIFY"]}
    ]
    assert "StreamArn" in json.dumps(search["EventSourceArn"])
    assert tag_map(search["Tags"])["ManagedBy"] == "ephemera"
    audit = of(template, "AWS::Lambda::EventSourceMapping", "SubscriberAudit")["Properties"]
    assert "Kinesis" in json.dumps(audit["EventSourceArn"]) or "Stream" in json.dumps(audit["EventSourceArn"])
    # each its own failure bucket
    destinations = {
        json.dumps(m["Properties"]["DestinationConfig"])
        for m in resources(template, "AWS::Lambda::EventSourceMapping").values()
    }
    assert len(destinations) == 3  # the consumer's and each subscriber's


def test_a_subscribers_role_holds_its_grants_and_its_source_only(template: dict[str, Any]) -> None:
    policy = of(template, "AWS::IAM::Policy", "SubscriberSearch")["Properties"]["PolicyDocument"]["Statement"]
    sids = {s["Sid"]: s for s in policy}
    assert set(sids) == {
        "WriteOwnLogs",
        "KeepFailedBatches",
        "LocateFailureBucket",
        "ReadOwnStream",
        "ListStreams",
        "Grant0",
        "Grant1",
    }
    assert sorted(sids["Grant0"]["Action"]) == ["dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:Query"]
    assert sids["Grant1"]["Resource"] == "arn:aws:dynamodb:us-east-1:123456789012:table/search-dev"
    # and no statement reaches another subscriber's failure bucket
    audit_bucket = next(k for k in resources(template, "AWS::S3::Bucket") if k.startswith("SubscriberAudit"))
    assert audit_bucket not in json.dumps(policy)


def test_each_subscriber_has_its_alarms(template: dict[str, Any]) -> None:
    alarms = [k for k in resources(template, "AWS::CloudWatch::Alarm") if k.startswith("SubscriberSearch")]
    assert len(alarms) == 2


@pytest.fixture(scope="module")
def fanned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The cleanup consumer and two subscribers on the Kinesis destination: three readers of its shards."""
    audit2 = {**AUDIT, "per_record": False}
    return synth(
        tmp_path_factory.mktemp("fanned"),
        {"search": SEARCH, "audit": AUDIT, "archive": audit2},
        kinesis="on",
        consumer_source="kinesis",
    )


def test_more_than_two_kinesis_readers_each_subscriber_reads_through_its_own_fan_out_consumer(
    template: dict[str, Any], fanned: dict[str, Any]
) -> None:
    # GIVEN one subscriber on Kinesis beside a consumer on the stream: it reads shared, no consumer registered
    assert resources(template, "AWS::Kinesis::StreamConsumer") == {}
    # GIVEN the consumer and two subscribers on Kinesis  THEN each subscriber registers its own consumer
    consumers = resources(fanned, "AWS::Kinesis::StreamConsumer")
    assert sorted(c["Properties"]["ConsumerName"] for c in consumers.values()) == [
        "doctable-items-dev-archive",
        "doctable-items-dev-audit",
    ]
    for name, logical in (("Audit", "audit"), ("Archive", "archive")):
        (consumer_id,) = [k for k in consumers if k.startswith(f"Subscriber{name}")]
        assert "ChangeStream" in json.dumps(consumers[consumer_id]["Properties"]["StreamARN"])
        # AND its mapping reads the consumer, its role may subscribe to that consumer alone
        mapping = of(fanned, "AWS::Lambda::EventSourceMapping", f"Subscriber{name}")["Properties"]
        assert mapping["EventSourceArn"] == {"Fn::GetAtt": [consumer_id, "ConsumerARN"]}, logical
        statements = of(fanned, "AWS::IAM::Policy", f"Subscriber{name}")["Properties"]["PolicyDocument"]
        (fan_out,) = [s for s in statements["Statement"] if s["Sid"] == "ReadThroughFanOut"]
        assert sorted(fan_out["Action"]) == ["kinesis:DescribeStreamConsumer", "kinesis:SubscribeToShard"]
        assert fan_out["Resource"] == {"Fn::GetAtt": [consumer_id, "ConsumerARN"]}
    # AND the cleanup consumer and the subscriber on the DynamoDB stream read as before
    consumer_mapping = [
        m["Properties"]
        for k, m in resources(fanned, "AWS::Lambda::EventSourceMapping").items()
        if not k.startswith("Subscriber")
    ]
    assert [json.dumps(m["EventSourceArn"]).count("ConsumerARN") for m in consumer_mapping] == [0]


def test_cfn_lint_is_clean(template: dict[str, Any], fanned: dict[str, Any], tmp_path: Path) -> None:
    for name, body in (("subscribers", template), ("fanned", fanned)):
        (tmp_path / f"{name}.template.json").write_text(json.dumps(body))
    result = cfn_lint(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_each_subscribers_failure_bucket_has_its_exact_name(template: dict[str, Any]) -> None:
    # bucket_names=exact (the default): <table>-<account>-<region>-<name>-failures, which the operator's policy names
    for name, logical in (("search", "SubscriberSearch"), ("audit", "SubscriberAudit")):
        bucket = of(template, "AWS::S3::Bucket", logical)["Properties"]["BucketName"]
        assert bucket == {
            "Fn::Join": [
                "",
                ["items-dev-", {"Ref": "AWS::AccountId"}, "-", {"Ref": "AWS::Region"}, f"-{name}-failures"],
            ]
        }, bucket


def test_a_stack_without_the_cleanup_consumer_still_maps_its_subscribers(tmp_path: Path) -> None:
    # GIVEN consumer=none (no cleanup consumer) and one subscriber  WHEN synthesized
    template = synth(tmp_path, {"search": SEARCH}, consumer="none")
    # THEN the subscriber's mapping is the only one, with its own options and filters
    (mapping,) = resources(template, "AWS::Lambda::EventSourceMapping").values()
    assert mapping["Properties"]["BatchSize"] == 25
    assert [json.loads(f["Pattern"]) for f in mapping["Properties"]["FilterCriteria"]["Filters"]] == [
        {"eventName": ["INSERT", "MODIFY"]}
    ]
