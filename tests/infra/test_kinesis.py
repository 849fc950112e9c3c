"""Kinesis Data Streams for DynamoDB in the template: the stream the stack creates (or borrows), the table's
KinesisStreamSpecification, the mapping reading it with consumer_source=kinesis, and the consumer's grants."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contract import names
from contract.knobs import KINESIS_RETENTION_HOURS
from contract.shape import cleanup_filter_patterns
from infra.data.kinesis import READ_ACTIONS
from tests.infra.synth import cfn_lint, only, resources, synth, tag_map

ROOT = Path(__file__).resolve().parents[2]
THEIR_STREAM = "arn:aws:kinesis:us-east-1:123456789012:stream/their-changes"
THEIR_KEY = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
THEIR_FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:theirs"
READS = dict(kinesis="on", consumer_source="kinesis")
# Every Kinesis shape (cfn-lint here; checkov through tests/infra/synth_matrix.py, which collects MATRIX).
MATRIX = [
    dict(kinesis="on"),
    dict(kinesis="on", stream="new-and-old"),
    dict(kinesis="on", stream="new-and-old", encryption="aws-managed"),
    READS,
    dict(READS, events="cleanup", mapping_metrics="off"),
    dict(READS, stream="new-and-old"),
    dict(READS, encryption="customer-managed"),
    dict(READS, encryption="customer-managed", kms_key=THEIR_KEY, env="prod"),
    dict(READS, env="uat", blob_prefix_cleanup="on", blob_root="blobs/"),
    dict(READS, consumer=THEIR_FUNCTION),
    dict(kinesis=THEIR_STREAM, consumer_source="kinesis"),
    dict(kinesis=THEIR_STREAM, stream="new-and-old", encryption="customer-managed"),
]


def _stream(template: dict[str, Any]) -> dict[str, Any]:
    return only(template, "AWS::Kinesis::Stream")


def _stream_ref(template: dict[str, Any]) -> dict[str, Any]:
    (logical,) = resources(template, "AWS::Kinesis::Stream")
    assert logical.startswith(names.ID_TABLE + names.ID_KINESIS_STREAM)
    return {"Fn::GetAtt": [logical, "Arn"]}


def _consumer_statements(template: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        statement
        for logical, policy in resources(template, "AWS::IAM::Policy").items()
        if logical.startswith(names.ID_CONSUMER)
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def _actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return [action] if isinstance(action, str) else list(action)


def _mapping(template: dict[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = only(template, "AWS::Lambda::EventSourceMapping")["Properties"]
    return properties


@pytest.mark.parametrize(
    ("encryption", "key"),
    [
        ({}, "alias/aws/kinesis"),
        ({"encryption": "aws-managed"}, "alias/aws/kinesis"),
        ({"encryption": "customer-managed"}, "created"),
        ({"encryption": "customer-managed", "kms_key": THEIR_KEY}, THEIR_KEY),
    ],
    ids=["aws-owned", "aws-managed", "customer-managed", "borrowed-key"],
)
def test_the_created_stream_is_on_demand_retained_a_day_and_encrypted_per_the_knob(
    encryption: dict[str, str], key: str
) -> None:
    # GIVEN kinesis=on under each encryption choice
    config, template, _ = synth(kinesis="on", **encryption)

    # WHEN the stream is read from the template
    properties = _stream(template)["Properties"]

    # THEN it is on demand, keeps records KINESIS_RETENTION_HOURS and is KMS-encrypted under the stack's key when
    # there is one, else the AWS managed alias/aws/kinesis (never unencrypted)
    assert properties["StreamModeDetails"] == {"StreamMode": "ON_DEMAND"}
    assert "ShardCount" not in properties
    assert properties["RetentionPeriodHours"] == KINESIS_RETENTION_HOURS
    assert properties["StreamEncryption"]["EncryptionType"] == "KMS"
    if key == "created":
        (logical,) = resources(template, "AWS::KMS::Key")
        assert properties["StreamEncryption"]["KeyId"] == {"Fn::GetAtt": [logical, "Arn"]}
    else:
        assert properties["StreamEncryption"]["KeyId"] == key
    assert tag_map(properties["Tags"]) == config.tags()


@pytest.mark.parametrize(
    ("env", "policy"), [("dev", "Delete"), ("stg", "Delete"), ("uat", "Retain"), ("prod", "Retain")]
)
def test_the_stream_is_kept_or_deleted_with_the_table(env: str, policy: str) -> None:
    _, template, _ = synth(kinesis="on", env=env)
    stream, table = _stream(template), only(template, "AWS::DynamoDB::Table")
    assert stream["DeletionPolicy"] == stream["UpdateReplacePolicy"] == table["DeletionPolicy"] == policy


@pytest.mark.parametrize(
    "knobs",
    [dict(kinesis="on"), READS, dict(kinesis="on", stream="new-and-old")],
    ids=["on", "reads", "both"],
)
def test_the_table_streams_its_changes_to_the_created_stream(knobs: dict[str, str]) -> None:
    # GIVEN kinesis=on  WHEN the table is synthesized  THEN it names the created stream, in milliseconds
    _, template, _ = synth(**knobs)
    specification = only(template, "AWS::DynamoDB::Table")["Properties"]["KinesisStreamSpecification"]
    assert specification == {
        "StreamArn": _stream_ref(template),
        "ApproximateCreationDateTimePrecision": "MILLISECOND",
    }
    assert template["Outputs"][names.OUT_KINESIS_STREAM_ARN]["Value"] == _stream_ref(template)


def test_a_borrowed_stream_is_referenced_and_nothing_is_created() -> None:
    # GIVEN kinesis=<ARN> read by the consumer
    _, template, _ = synth(kinesis=THEIR_STREAM, consumer_source="kinesis")

    # THEN no stream is created; the table, the output, the mapping and the grant all name the ARN
    assert resources(template, "AWS::Kinesis::Stream") == {}
    table = only(template, "AWS::DynamoDB::Table")["Properties"]
    assert table["KinesisStreamSpecification"]["StreamArn"] == THEIR_STREAM
    assert template["Outputs"][names.OUT_KINESIS_STREAM_ARN]["Value"] == THEIR_STREAM
    assert _mapping(template)["EventSourceArn"] == THEIR_STREAM
    (read,) = [
        s for s in _consumer_statements(template) if any(a.startswith("kinesis:") for a in _actions(s))
    ]
    assert read["Resource"] == THEIR_STREAM


def test_no_kinesis_without_the_knob() -> None:
    _, template, _ = synth(stream="new-and-old")
    assert resources(template, "AWS::Kinesis::Stream") == {}
    assert "KinesisStreamSpecification" not in only(template, "AWS::DynamoDB::Table")["Properties"]
    assert names.OUT_KINESIS_STREAM_ARN not in template["Outputs"]
    assert not any(a.startswith("kinesis:") for s in _consumer_statements(template) for a in _actions(s))


@pytest.mark.parametrize("events", ["all", "cleanup"])
def test_the_mapping_reads_kinesis_with_the_same_options(events: str) -> None:
    # GIVEN the same knobs reading the DynamoDB stream and reading the Kinesis data stream
    _, dynamodb_template, _ = synth(stream="new-and-old", events=events)
    _, kinesis_template, _ = synth(kinesis="on", consumer_source="kinesis", events=events)
    on_dynamodb, on_kinesis = _mapping(dynamodb_template), _mapping(kinesis_template)

    # THEN the Kinesis mapping reads the created stream, and every other setting is the same
    assert on_dynamodb["EventSourceArn"] == {"Fn::GetAtt": [_table_logical(dynamodb_template), "StreamArn"]}
    assert on_kinesis["EventSourceArn"] == _stream_ref(kinesis_template)
    ignored = ("EventSourceArn", "FilterCriteria")
    assert {k: v for k, v in on_kinesis.items() if k not in ignored} == {
        k: v for k, v in on_dynamodb.items() if k not in ignored
    }
    assert on_kinesis["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert "DestinationConfig" in on_kinesis and "MetricsConfig" in on_kinesis and "Tags" in on_kinesis

    # AND with events=cleanup each DynamoDB filter pattern sits under `data`, where Lambda decodes a Kinesis record
    if events == "all":
        assert "FilterCriteria" not in on_kinesis
        return
    dynamodb_patterns = [json.loads(f["Pattern"]) for f in on_dynamodb["FilterCriteria"]["Filters"]]
    kinesis_patterns = [json.loads(f["Pattern"]) for f in on_kinesis["FilterCriteria"]["Filters"]]
    assert dynamodb_patterns == [json.loads(p) for p in cleanup_filter_patterns()]
    assert kinesis_patterns == [{"data": p} for p in dynamodb_patterns]


def _table_logical(template: dict[str, Any]) -> str:
    (logical,) = resources(template, "AWS::DynamoDB::Table")
    return logical


@pytest.mark.parametrize(
    "knobs", [READS, dict(READS, stream="new-and-old"), dict(READS, encryption="customer-managed")], ids=str
)
def test_the_consumer_reads_that_one_stream_and_no_dynamodb_stream(knobs: dict[str, str]) -> None:
    # GIVEN the consumer reading the created Kinesis stream (with or without a DynamoDB stream on the table)
    _, template, _ = synth(**knobs)
    statements = _consumer_statements(template)

    # THEN one statement grants the reads on that stream alone; none grants a DynamoDB stream action or any
    # Kinesis action elsewhere
    kinesis_statements = [s for s in statements if any(a.startswith("kinesis:") for a in _actions(s))]
    assert len(kinesis_statements) == 1
    (read,) = kinesis_statements
    assert sorted(_actions(read)) == sorted(READ_ACTIONS)
    assert read["Resource"] == _stream_ref(template)
    stream_actions = {"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"}
    assert not any(
        a in stream_actions or a == "dynamodb:ListStreams" for s in statements for a in _actions(s)
    )
    assert all(s["Resource"] != "*" or _actions(s)[0].startswith("xray:") for s in statements)


def test_the_stream_key_is_used_through_kinesis_only() -> None:
    # GIVEN a customer managed key under the stream
    _, template, _ = synth(**READS, encryption="customer-managed")
    (key,) = resources(template, "AWS::KMS::Key")

    # THEN the consumer may decrypt with that key through Kinesis, and nothing else through Kinesis
    decrypt = [
        s
        for s in _consumer_statements(template)
        if "kinesis" in json.dumps(s.get("Condition", {})) and s["Resource"] == {"Fn::GetAtt": [key, "Arn"]}
    ]
    assert len(decrypt) == 1
    assert _actions(decrypt[0]) == ["kms:Decrypt"]
    assert decrypt[0]["Condition"] == {
        "StringEquals": {
            "kms:ViaService": {"Fn::Join": ["", ["kinesis.", {"Ref": "AWS::Region"}, ".amazonaws.com"]]}
        }
    }


def test_without_a_customer_key_there_is_no_kinesis_kms_grant() -> None:
    _, template, _ = synth(**READS)
    assert not any(a.startswith("kms:") for s in _consumer_statements(template) for a in _actions(s))


def test_a_borrowed_consumer_gets_the_kinesis_mapping_only() -> None:
    _, template, _ = synth(**READS, consumer=THEIR_FUNCTION)
    assert _mapping(template)["EventSourceArn"] == _stream_ref(template)
    assert _mapping(template)["FunctionName"] == THEIR_FUNCTION
    assert resources(template, "AWS::Lambda::Function") == {}


def test_the_iterator_age_alarm_watches_the_kinesis_consumer() -> None:
    # Lambda's IteratorAge is published for Kinesis and DynamoDB stream mappings alike.
    _, template, _ = synth(**READS)
    (alarm,) = [
        a
        for a in resources(template, "AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("MetricName") == "IteratorAge"
    ]
    assert alarm["Properties"]["Namespace"] == "AWS/Lambda"


def test_every_kinesis_shape_synthesizes_nag_clean_and_is_scanned_by_checkov() -> None:
    # Synth raises on any unacknowledged cdk-nag finding; each acknowledgement carries a reason.
    from tests.infra.synth_matrix import infra_shapes, scanned_shapes

    scanned = scanned_shapes(infra_shapes())
    for knobs in MATRIX:
        synth(**knobs)
        assert {k: str(v) for k, v in knobs.items()} in scanned


def test_cfn_lint_is_clean_on_every_kinesis_template(tmp_path: Path) -> None:
    for i, knobs in enumerate(MATRIX):
        _, template, _ = synth(**knobs)
        (tmp_path / f"k{i:03d}.template.json").write_text(json.dumps(template))
    result = cfn_lint(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
