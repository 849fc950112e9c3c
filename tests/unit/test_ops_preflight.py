"""`doctable preflight`: observe before a deploy (moto for the AWS side, pure functions for the diff)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contract import names
from doctable.aws import Aws
from doctable.cli import main
from doctable.ops import grants
from doctable.ops import preflight as p
from doctable.ops.context import describe_stack, use_deployed_knobs
from tests.support import ops as ot
from tests.support.ops import REGION

ACCOUNT = "123456789012"


def preflight(aws: Aws, **knobs: str) -> list[p.Finding]:
    return p.run_preflight(aws, describe_stack(aws, ot.config_of(**knobs)))


def by_subject(findings: list[p.Finding]) -> dict[str, p.Finding]:
    return {f.subject: f for f in findings}


def create_table(aws: Aws, name: str, tags: dict[str, str]) -> None:
    aws.client("dynamodb").create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        Tags=[{"Key": k, "Value": v} for k, v in tags.items()],
    )


# ------------------------------------------------------------------------------------------ ownership
def test_a_foreign_same_named_table_stops_the_deploy(moto_env: Aws) -> None:
    # GIVEN a table named like ours, made by someone else, not tagged ManagedBy=ephemera
    create_table(moto_env, "items-dev", {"Team": "payments"})
    # WHEN preflight observes
    findings = preflight(moto_env)
    # THEN it stops, saying adoption is a human decision
    table = by_subject(findings)["table"]
    assert table.level == p.STOP
    assert "adopting it is a human decision" in table.effect and "Team=payments" in table.live


def test_an_ephemera_table_outside_the_stack_stops_too_with_the_import_advice(moto_env: Aws) -> None:
    # GIVEN a table of ours by its tags that no stack holds (e.g. retained by a uat teardown)
    create_table(moto_env, "items-dev", {"ManagedBy": "ephemera"})
    table = by_subject(preflight(moto_env))["table"]
    assert table.level == p.STOP and "cdk import" in table.effect


def test_no_table_yet_is_a_go(moto_env: Aws) -> None:
    findings = preflight(moto_env, gsi="gsi1")
    assert [f.level for f in findings] == [p.INFO]
    assert "will be created" in findings[0].effect


def test_our_table_matching_the_knobs_is_ok(moto_env: Aws) -> None:
    ot.deploy(moto_env.client, ot.config_of(gsi="gsi1", ttl="on", pitr="on"))
    findings = preflight(moto_env, gsi="gsi1", ttl="on", pitr="on")
    assert [(f.level, f.subject) for f in findings] == [(p.OK, "table")]


def test_our_table_differing_from_the_knobs_says_what_each_change_does(moto_env: Aws) -> None:
    # GIVEN the stack's table deployed flat, and knobs that now ask for gsi1, ttl and pitr
    ot.deploy(moto_env.client, ot.config_of())
    findings = by_subject(preflight(moto_env, gsi="gsi1", ttl="on", pitr="on"))
    # THEN each difference is a CHANGE with its effect and cost, and nothing stops the deploy
    assert {f.level for f in findings.values()} == {p.CHANGE}
    assert "ONLINE BACKFILL" in findings["gsi1"].effect
    assert "rate-limited" in findings["ttl"].effect
    assert "cheap toggle" in findings["pitr"].effect


# ------------------------------------------------------------------------------------------ shape diff
def _table(**overrides: Any) -> dict[str, Any]:
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
    table.update(overrides)
    return table


GSI1 = [{"IndexName": "gsi1", "IndexStatus": "ACTIVE", "KeySchema": []}]
TTL_ON = {"TimeToLiveStatus": "ENABLED", "AttributeName": names.TTL_ATTRIBUTE}
TTL_OFF = {"TimeToLiveStatus": "DISABLED"}


@pytest.mark.parametrize(
    ("knobs", "table", "ttl", "pitr", "subject", "words"),
    [
        ({}, _table(GlobalSecondaryIndexes=GSI1), TTL_OFF, "DISABLED", "gsi1", "DELETES the index"),
        ({"gsi": "gsi1"}, _table(), TTL_OFF, "DISABLED", "gsi1", "ONLINE BACKFILL"),
        (
            {},
            _table(KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}]),
            TTL_OFF,
            "DISABLED",
            "key schema",
            "NEW table and a data copy",
        ),
        ({"stream": "new-and-old"}, _table(), TTL_OFF, "DISABLED", "stream", "NEW stream ARN"),
        (
            {"stream": "new-and-old"},
            _table(StreamSpecification={"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"}),
            TTL_OFF,
            "DISABLED",
            "stream view",
            "mapping is recreated",
        ),
        (
            {},
            _table(StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}),
            TTL_OFF,
            "DISABLED",
            "stream",
            "disables the stream",
        ),
        ({"ttl": "on"}, _table(), TTL_OFF, "DISABLED", "ttl", "rate-limited"),
        ({}, _table(), TTL_ON, "DISABLED", "ttl", "items stop expiring"),
        (
            {"ttl": "on"},
            _table(),
            {"TimeToLiveStatus": "ENABLED", "AttributeName": "ttl"},
            "DISABLED",
            "ttl attribute",
            "DISABLE then ENABLE",
        ),
        ({"pitr": "on"}, _table(), TTL_OFF, "DISABLED", "pitr", "cheap toggle"),
        ({}, _table(), TTL_OFF, "ENABLED", "pitr", "cheap toggle"),
        ({"env": "prod"}, _table(), TTL_OFF, "DISABLED", "deletion protection", "free toggle"),
        (
            {},
            _table(BillingModeSummary={"BillingMode": "PROVISIONED"}),
            TTL_OFF,
            "DISABLED",
            "billing mode",
            "24 h",
        ),
    ],
)
def test_each_shape_difference_names_its_effect(
    knobs: dict[str, str], table: dict[str, Any], ttl: dict[str, Any], pitr: str, subject: str, words: str
) -> None:
    findings = by_subject(p.shape_findings(ot.config_of(**knobs), table, ttl, pitr))
    assert subject in findings, findings
    assert words in findings[subject].effect
    if subject == "key schema":
        assert findings[subject].level == p.STOP


def test_a_ttl_change_in_progress_warns() -> None:
    findings = p.shape_findings(ot.config_of(), _table(), {"TimeToLiveStatus": "ENABLING"}, "DISABLED")
    assert [(f.level, f.subject) for f in findings] == [(p.WARN, "ttl")]


# ------------------------------------------------------------------------------------- borrowed consumer
def _role(aws: Aws, name: str, statements: list[dict[str, Any]]) -> str:
    iam = aws.client("iam")
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ],
    }
    arn = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    if statements:
        iam.put_role_policy(
            RoleName=name,
            PolicyName="inline",
            PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": statements}),
        )
    return str(arn)


def _function(aws: Aws, name: str, role_arn: str) -> str:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("index.py", "def handler(event, context):\n    return None\n")
    reply = aws.client("lambda").create_function(
        FunctionName=name, Runtime="python3.13", Role=role_arn, Handler="index.handler",
        Code={"ZipFile": buffer.getvalue()},
    )  # fmt: skip
    return str(reply["FunctionArn"])


def test_a_missing_borrowed_consumer_stops_the_deploy(moto_env: Aws) -> None:
    arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:not-deployed-yet"
    findings = by_subject(preflight(moto_env, stream="new-and-old", consumer=arn))
    assert findings["borrowed consumer"].level == p.STOP
    assert "apply its plan first" in findings["borrowed consumer"].effect


def test_a_borrowed_consumer_in_another_region_stops(moto_env: Aws) -> None:
    arn = f"arn:aws:lambda:us-west-2:{ACCOUNT}:function:elsewhere"
    finding = by_subject(preflight(moto_env, stream="new-and-old", consumer=arn))["borrowed consumer"]
    assert finding.level == p.STOP and "region" in finding.effect


def test_a_borrowed_consumer_without_stream_grants_is_reported(moto_env: Aws) -> None:
    # GIVEN a function whose role can only write logs
    role = _role(moto_env, "no-stream", [{"Effect": "Allow", "Action": "logs:*", "Resource": "*"}])
    arn = _function(moto_env, "borrowed", role)
    finding = by_subject(preflight(moto_env, stream="new-and-old", consumer=arn))["consumer role grants"]
    # THEN every stream-read action is named as missing (moto has no simulator: the policies were read)
    assert finding.level == p.WARN
    for action in ("DescribeStream", "GetRecords", "GetShardIterator", "ListStreams"):
        assert action in finding.live


def test_a_borrowed_consumer_with_stream_grants_is_ok(moto_env: Aws) -> None:
    role = _role(
        moto_env,
        "reader",
        [
            {
                "Effect": "Allow",
                "Action": ["dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"],
                "Resource": f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/items-dev/stream/*",
            },
            {"Effect": "Allow", "Action": "dynamodb:ListStreams", "Resource": "*"},
        ],
    )
    arn = _function(moto_env, "borrowed", role)
    finding = by_subject(preflight(moto_env, stream="new-and-old", consumer=arn))["borrowed consumer"]
    assert finding.level == p.OK


def test_policy_evaluation_allows_wildcards_and_honours_deny() -> None:
    stream = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/items-dev/stream/2026"
    allow = {"Statement": [{"Effect": "Allow", "Action": "dynamodb:Get*", "Resource": "*"}]}
    deny = {"Statement": {"Effect": "Deny", "Action": "dynamodb:GetRecords", "Resource": stream}}
    assert grants.evaluate_documents([allow], "dynamodb:GetRecords", stream)
    assert not grants.evaluate_documents([allow], "dynamodb:DescribeStream", stream)
    assert not grants.evaluate_documents([allow, deny], "dynamodb:GetRecords", stream)
    assert grants.evaluate_documents([allow, deny], "dynamodb:GetShardIterator", stream)


# ----------------------------------------------------------------------------------------------- drift
def preflight_deployed(aws: Aws, given: set[str], **knobs: str) -> list[p.Finding]:
    """Preflight as the console script runs it: the stack's recorded knobs are the truth, ``knobs`` the target."""
    return p.run_preflight(aws, use_deployed_knobs(describe_stack(aws, ot.config_of(**knobs)), given))


def test_ttl_disabled_behind_the_stack_is_drift_not_a_deploy_change(moto_env: Aws) -> None:
    # GIVEN a ttl=on stack whose TTL was disabled out of band
    ot.deploy(moto_env.client, ot.config_of(ttl="on"))
    moto_env.client("dynamodb").update_time_to_live(
        TableName="items-dev",
        TimeToLiveSpecification={"Enabled": False, "AttributeName": names.TTL_ATTRIBUTE},
    )
    # WHEN preflight runs for the same knobs
    findings = by_subject(preflight_deployed(moto_env, {"ttl"}, ttl="on"))
    # THEN TTL is DRIFT the deploy will not repair (never "enables TTL"), and the table has no template change
    assert findings["ttl"].level == p.DRIFT
    assert "will NOT repair" in findings["ttl"].effect and "reconcile" in findings["ttl"].effect
    assert "enables TTL" not in findings["ttl"].effect
    assert findings["table"].level == p.OK


def test_a_knob_change_over_a_drifted_property_is_the_deploys_change(moto_env: Aws) -> None:
    # GIVEN a pitr=on stack whose PITR was switched off out of band, and knobs that turn TTL on
    ot.deploy(moto_env.client, ot.config_of(pitr="on"))
    moto_env.client("dynamodb").update_continuous_backups(
        TableName="items-dev", PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": False}
    )
    findings = preflight_deployed(moto_env, {"pitr", "ttl"}, pitr="on", ttl="on")
    levels = {(f.subject, f.level) for f in findings}
    # THEN TTL is what the deploy changes, PITR is drift
    assert ("ttl", p.CHANGE) in levels and ("pitr", p.DRIFT) in levels


def test_mapping_and_tag_drift_are_reported_as_drift(moto_env: Aws) -> None:
    config = ot.config_of(stream="new-and-old")
    outputs = ot.deploy_with_mapping(moto_env.client, config)
    moto_env.client("lambda").update_event_source_mapping(UUID=outputs[names.OUT_MAPPING_UUID], BatchSize=1)
    moto_env.client("dynamodb").untag_resource(ResourceArn=outputs[names.OUT_TABLE_ARN], TagKeys=["Source"])
    findings = by_subject(preflight_deployed(moto_env, set(), stream="new-and-old"))
    assert findings["mapping BatchSize"].level == p.DRIFT and findings["mapping BatchSize"].live == "1"
    assert findings["table tag Source"].level == p.DRIFT


def test_a_batch_size_knob_change_is_a_deploy_change_not_drift(moto_env: Aws) -> None:
    config = ot.config_of(stream="new-and-old")
    outputs = ot.deploy_with_mapping(moto_env.client, config)
    moto_env.client("lambda").update_event_source_mapping(UUID=outputs[names.OUT_MAPPING_UUID], BatchSize=1)
    findings = preflight_deployed(moto_env, {"batch_size"}, stream="new-and-old", batch_size="50")
    assert not [f for f in findings if f.level == p.DRIFT]


def test_preflight_text_separates_the_deploy_from_the_drift(
    moto_env: Aws, capsys: pytest.CaptureFixture[str]
) -> None:
    ot.deploy(moto_env.client, ot.config_of(pitr="on"))
    moto_env.client("dynamodb").update_continuous_backups(
        TableName="items-dev", PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": False}
    )
    assert main(["preflight"]) == 0
    out = capsys.readouterr().out
    assert out.index("what this deploy changes:") < out.index("drift CloudFormation will not repair")


def test_consumer_knob_changes_on_a_live_stack_say_what_the_deploy_does(moto_env: Aws) -> None:
    # GIVEN a deployed stack with the built-in consumer, and knobs that turn SnapStart on, give it more memory and
    # promise keys are never reused
    ot.deploy_with_mapping(moto_env.client, ot.config_of(stream="new-and-old"))
    knobs = {"stream": "new-and-old", "snapstart": "on", "memory": "512", "blob_key_reuse": "never"}
    findings = by_subject(preflight_deployed(moto_env, set(knobs) - {"stream"}, **knobs))
    # THEN each is a deploy change naming what it does
    snap = findings["consumer function snapstart"]
    assert (snap.level, snap.live, snap.declared) == (p.CHANGE, "off", "on")
    assert "publishes a version" in snap.effect and "alias" in snap.effect and "charged" in snap.effect
    assert findings["consumer function memory"].declared == "512 MB"
    reuse = findings[f"consumer function {names.ENV_BLOB_KEY_REUSE}"]
    assert "unchecked" in reuse.effect and "s3:GetObject" in reuse.effect
    # AND the same knobs again change nothing of the consumer
    again = preflight_deployed(moto_env, set(), stream="new-and-old")
    assert not [f for f in again if f.subject.startswith("consumer function")]


def test_with_snapstart_on_any_function_change_publishes_the_next_version() -> None:
    from doctable.ops import consumer_plan

    before = ot.config_of(stream="new-and-old", snapstart="on")
    after = ot.config_of(stream="new-and-old", snapstart="on", timeout="60")
    subjects = {f[1]: f for f in consumer_plan.findings(before, after)}
    assert set(subjects) == {"consumer function timeout", "consumer function version"}
    assert "publishes the next version" in subjects["consumer function version"][4]
    assert consumer_plan.findings(before, before) == []
