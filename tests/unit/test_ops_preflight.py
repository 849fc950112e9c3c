"""`doctable preflight`: observe before a deploy (moto for the AWS side, pure functions for the diff)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contract import names
from contract.findings import Finding, Level
from contract.knobs import KNOB_DEFAULTS
from doctable.capabilities.protocol import observe_table
from doctable.capabilities.table_shape import shape_findings
from doctable.cli import main
from doctable.core import grants
from doctable.core.aws import Aws
from doctable.core.context import describe_stack
from doctable.core.deployment import use_deployed_knobs
from doctable.lifecycle import preflight as p
from tests.support import ops as ot
from tests.support.ops import REGION

ACCOUNT = "123456789012"


def preflight(aws: Aws, **knobs: str) -> list[Finding]:
    return p.run_preflight(aws, describe_stack(aws, ot.config_of(**knobs)))


def by_code(findings: list[Finding]) -> dict[str, Finding]:
    return {f.code: f for f in findings}


def by_subject(findings: list[Finding]) -> dict[str, Finding]:
    """Drift findings share one code: the subject names the property."""
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
    # THEN it stops on a foreign table, its tags as the live value
    table = by_code(findings)["table.foreign"]
    assert (table.level, table.before, table.after) == (
        Level.STOP,
        {"Team": "payments"},
        {"ManagedBy": "ephemera"},
    )


def test_an_ephemera_table_outside_the_stack_stops_too(moto_env: Aws) -> None:
    # GIVEN a table of ours by its tags that no stack holds (e.g. retained by a uat teardown)
    create_table(moto_env, "items-dev", {"ManagedBy": "ephemera"})
    # WHEN preflight observes THEN it stops: ours, but outside the stack
    table = by_code(preflight(moto_env))["table.unmanaged"]
    assert (table.level, table.after) == (Level.STOP, "doctable-items-dev")


def test_no_table_yet_is_a_go(moto_env: Aws) -> None:
    findings = preflight(moto_env, gsi="gsi1")
    assert [(f.level, f.code, f.after) for f in findings] == [(Level.INFO, "table.created", "items-dev")]


def test_our_table_matching_the_knobs_is_ok(moto_env: Aws) -> None:
    ot.deploy(moto_env.client, ot.config_of(gsi="gsi1", ttl="on", pitr="on"))
    findings = preflight(moto_env, gsi="gsi1", ttl="on", pitr="on")
    assert [(f.level, f.code) for f in findings] == [(Level.OK, "table.unchanged")]


def test_our_table_differing_from_the_knobs_says_what_each_change_does(moto_env: Aws) -> None:
    # GIVEN the stack's table deployed flat, and knobs that now ask for gsi1, ttl and pitr
    ot.deploy(moto_env.client, ot.config_of())
    findings = preflight(moto_env, gsi="gsi1", ttl="on", pitr="on")
    # THEN each difference is a CHANGE with its code and values, and nothing stops the deploy
    assert {(f.level, f.code, f.before, f.after) for f in findings} == {
        (Level.CHANGE, "index.added", None, "gsi1"),
        (Level.CHANGE, "ttl.enabled", None, names.TTL_ATTRIBUTE),
        (Level.CHANGE, "pitr.enabled", False, True),
    }


# ------------------------------------------------------------------------------------------ shape diff
GSI1_KEYS = [
    {"AttributeName": names.GSI_PARTITION_KEY, "KeyType": "HASH"},
    {"AttributeName": names.GSI_SORT_KEY, "KeyType": "RANGE"},
]
GSI1 = [
    {
        "IndexName": "gsi1",
        "IndexStatus": "ACTIVE",
        "KeySchema": GSI1_KEYS,
        "Projection": {"ProjectionType": "ALL"},
    }
]
GSI1_OTHER_KEYS = [{**GSI1[0], "KeySchema": [{"AttributeName": "other", "KeyType": "HASH"}]}]
TTL_ON = {"TimeToLiveStatus": "ENABLED", "AttributeName": names.TTL_ATTRIBUTE}
TTL_OFF = {"TimeToLiveStatus": "DISABLED"}
NEW_AND_OLD, KEYS_ONLY = "NEW_AND_OLD_IMAGES", "KEYS_ONLY"


@pytest.mark.parametrize(
    ("knobs", "table", "ttl", "pitr", "expected"),
    [
        (
            {},
            ot.live_table(GlobalSecondaryIndexes=GSI1),
            TTL_OFF,
            "DISABLED",
            ("index.removed", True, "gsi1", None),
        ),
        ({"gsi": "gsi1"}, ot.live_table(), TTL_OFF, "DISABLED", ("index.added", False, None, "gsi1")),
        (
            {"gsi": "gsi1"},
            ot.live_table(GlobalSecondaryIndexes=GSI1_OTHER_KEYS),
            TTL_OFF,
            "DISABLED",
            (
                "index.replaced",
                True,
                {"kind": "global", "keys": {"other": "HASH S"}, "projection": "ALL"},
                {
                    "kind": "global",
                    "keys": {names.GSI_PARTITION_KEY: "HASH S", names.GSI_SORT_KEY: "RANGE S"},
                    "projection": "ALL",
                },
            ),
        ),
        (
            {},
            ot.live_table(KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}]),
            TTL_OFF,
            "DISABLED",
            ("table.replaced", True, ["id HASH ?"], ["pk HASH S", "sk RANGE S"]),
        ),
        (
            {"stream": "new-and-old"},
            ot.live_table(),
            TTL_OFF,
            "DISABLED",
            ("stream.enabled", False, None, NEW_AND_OLD),
        ),
        (
            {"stream": "new-and-old"},
            ot.live_table(StreamSpecification={"StreamEnabled": True, "StreamViewType": KEYS_ONLY}),
            TTL_OFF,
            "DISABLED",
            ("stream.recreated", True, KEYS_ONLY, NEW_AND_OLD),
        ),
        (
            {},
            ot.live_table(StreamSpecification={"StreamEnabled": True, "StreamViewType": NEW_AND_OLD}),
            TTL_OFF,
            "DISABLED",
            ("stream.disabled", True, NEW_AND_OLD, None),
        ),
        (
            {"ttl": "on"},
            ot.live_table(),
            TTL_OFF,
            "DISABLED",
            ("ttl.enabled", True, None, names.TTL_ATTRIBUTE),
        ),
        ({}, ot.live_table(), TTL_ON, "DISABLED", ("ttl.disabled", False, names.TTL_ATTRIBUTE, None)),
        (
            {"ttl": "on"},
            ot.live_table(),
            {"TimeToLiveStatus": "ENABLED", "AttributeName": "ttl"},
            "DISABLED",
            ("ttl.attribute_changed", True, "ttl", names.TTL_ATTRIBUTE),
        ),
        ({"pitr": "on"}, ot.live_table(), TTL_OFF, "DISABLED", ("pitr.enabled", False, False, True)),
        ({}, ot.live_table(), TTL_OFF, "ENABLED", ("pitr.disabled", True, True, False)),
        (
            {"deletion_protection": "on"},
            ot.live_table(),
            TTL_OFF,
            "DISABLED",
            ("deletion_protection.enabled", False, False, True),
        ),
        (
            {},
            ot.live_table(BillingModeSummary={"BillingMode": "PROVISIONED"}),
            TTL_OFF,
            "DISABLED",
            ("table.billing_mode_changed", False, "PROVISIONED", "PAY_PER_REQUEST"),
        ),
    ],
)
def test_each_shape_difference_has_its_code_flag_and_values(
    knobs: dict[str, str],
    table: dict[str, Any],
    ttl: dict[str, Any],
    pitr: str,
    expected: tuple[str, bool, Any, Any],
) -> None:
    # GIVEN a live table differing from the knobs in one way  WHEN preflight compares them
    found = shape_findings(ot.config_of(**knobs), table, ttl, pitr)
    # THEN that one difference is found, with its code, destructive flag and before/after values (an index
    # replacement also says that it takes two updates: an INFO line)
    findings = [f for f in found if f.level is not Level.INFO]
    assert [(f.code, f.destructive, f.before, f.after) for f in findings] == [expected]
    assert findings[0].level == (Level.STOP if expected[0] == "table.replaced" else Level.CHANGE)


def test_a_ttl_change_in_progress_warns() -> None:
    findings = shape_findings(ot.config_of(), ot.live_table(), {"TimeToLiveStatus": "ENABLING"}, "DISABLED")
    assert [(f.level, f.code, f.before) for f in findings] == [(Level.WARN, "ttl.busy", "ENABLING")]


def test_an_index_still_backfilling_warns() -> None:
    busy = [{**GSI1[0], "IndexStatus": "CREATING"}]
    findings = shape_findings(
        ot.config_of(gsi="gsi1"), ot.live_table(GlobalSecondaryIndexes=busy), TTL_OFF, "DISABLED"
    )
    assert [(f.level, f.code, f.before) for f in findings] == [(Level.WARN, "index.busy", "CREATING")]


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
    finding = by_code(preflight(moto_env, stream="new-and-old", consumer=arn))["consumer.missing"]
    assert (finding.level, finding.after) == (Level.STOP, arn)


def test_a_borrowed_consumer_in_another_region_stops(moto_env: Aws) -> None:
    arn = f"arn:aws:lambda:us-west-2:{ACCOUNT}:function:elsewhere"
    finding = by_code(preflight(moto_env, stream="new-and-old", consumer=arn))["consumer.other_region"]
    assert (finding.level, finding.before, finding.after) == (Level.STOP, "us-west-2", REGION)


def test_a_borrowed_consumer_without_stream_grants_is_reported(moto_env: Aws) -> None:
    # GIVEN a function whose role can only write logs
    role = _role(moto_env, "no-stream", [{"Effect": "Allow", "Action": "logs:*", "Resource": "*"}])
    arn = _function(moto_env, "borrowed", role)
    finding = by_code(preflight(moto_env, stream="new-and-old", consumer=arn))["consumer.cannot_read_stream"]
    # THEN every stream-read action is missing (moto has no simulator: the policies were read)
    assert finding.level == Level.WARN and finding.before == []
    assert set(finding.after) == {*grants.STREAM_READ_ACTIONS, grants.LIST_STREAMS_ACTION}


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
    finding = by_code(preflight(moto_env, stream="new-and-old", consumer=arn))["consumer.ok"]
    assert finding.level == Level.OK


def test_policy_evaluation_allows_wildcards_and_honours_deny() -> None:
    stream = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/items-dev/stream/2026"
    allow = {"Statement": [{"Effect": "Allow", "Action": "dynamodb:Get*", "Resource": "*"}]}
    deny = {"Statement": {"Effect": "Deny", "Action": "dynamodb:GetRecords", "Resource": stream}}
    assert grants.evaluate_documents([allow], "dynamodb:GetRecords", stream)
    assert not grants.evaluate_documents([allow], "dynamodb:DescribeStream", stream)
    assert not grants.evaluate_documents([allow, deny], "dynamodb:GetRecords", stream)
    assert grants.evaluate_documents([allow, deny], "dynamodb:GetShardIterator", stream)


# ----------------------------------------------------------------------------------------------- drift
def preflight_deployed(aws: Aws, **knobs: str) -> list[Finding]:
    """Preflight as the console script runs it: the stack's recorded knobs are the truth, ``knobs`` the target."""
    return p.run_preflight(aws, use_deployed_knobs(describe_stack(aws, ot.config_of(**knobs))))


def test_ttl_disabled_behind_the_stack_is_drift_not_a_deploy_change(moto_env: Aws) -> None:
    # GIVEN a ttl=on stack whose TTL was disabled out of band
    ot.deploy(moto_env.client, ot.config_of(ttl="on"))
    moto_env.client("dynamodb").update_time_to_live(
        TableName="items-dev",
        TimeToLiveSpecification={"Enabled": False, "AttributeName": names.TTL_ATTRIBUTE},
    )
    # WHEN preflight runs for the same knobs
    findings = preflight_deployed(moto_env, ttl="on")
    # THEN TTL is drift the deploy will not repair (never ttl.enabled), and the table has no template change
    assert [(f.level, f.code) for f in findings] == [
        (Level.OK, "table.no_template_change"),
        (Level.DRIFT, "drift.detected"),
    ]
    assert findings[1].subject == "ttl" and not findings[1].destructive


def test_a_knob_change_over_a_drifted_property_is_the_deploys_change(moto_env: Aws) -> None:
    # GIVEN a pitr=on stack whose PITR was switched off out of band, and knobs that turn TTL on
    ot.deploy(moto_env.client, ot.config_of(pitr="on"))
    moto_env.client("dynamodb").update_continuous_backups(
        TableName="items-dev", PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": False}
    )
    findings = preflight_deployed(moto_env, pitr="on", ttl="on")
    # THEN TTL is what the deploy changes, PITR is drift
    assert [f.code for f in findings if f.level == Level.CHANGE] == ["ttl.enabled"]
    assert [f.subject for f in findings if f.level == Level.DRIFT] == ["pitr"]


def test_an_index_added_behind_the_stack_is_drift_reconcile_cannot_restore(moto_env: Aws) -> None:
    # GIVEN a gsi=none stack whose table got gsi1 out of band (a flat table from a gsi1 stack's shape)
    ot.deploy(moto_env.client, ot.config_of())
    deployment = use_deployed_knobs(describe_stack(moto_env, ot.config_of()))
    table = moto_env.client("dynamodb").describe_table(TableName="items-dev")["Table"]
    removed = shape_findings(ot.config_of(), {**table, "GlobalSecondaryIndexes": GSI1}, TTL_OFF, "DISABLED")
    # WHEN the deploy's findings are split from the drift
    kept = p.split_drift(observe_table(moto_env, deployment, table), removed)
    # THEN the index is drift (the deploy keeps it), no longer a destructive change
    assert [(f.level, f.code, f.destructive, f.before) for f in kept] == [
        (Level.DRIFT, "drift.detected", False, "gsi1")
    ]


def test_mapping_and_tag_drift_are_reported_as_drift(moto_env: Aws) -> None:
    config = ot.config_of(stream="new-and-old")
    outputs = ot.deploy_with_mapping(moto_env.client, config)
    moto_env.client("lambda").update_event_source_mapping(UUID=outputs[names.OUT_MAPPING_UUID], BatchSize=1)
    moto_env.client("dynamodb").untag_resource(ResourceArn=outputs[names.OUT_TABLE_ARN], TagKeys=["Source"])
    findings = by_subject(preflight_deployed(moto_env, stream="new-and-old"))
    batch = findings["mapping BatchSize"]
    default = KNOB_DEFAULTS["batch_size"]
    assert (batch.level, batch.code, batch.before, batch.after) == (
        Level.DRIFT,
        "drift.detected",
        "1",
        default,
    )
    assert findings["table tag Source"].level == Level.DRIFT


def test_a_batch_size_knob_change_is_a_deploy_change_not_drift(moto_env: Aws) -> None:
    config = ot.config_of(stream="new-and-old")
    outputs = ot.deploy_with_mapping(moto_env.client, config)
    moto_env.client("lambda").update_event_source_mapping(UUID=outputs[names.OUT_MAPPING_UUID], BatchSize=1)
    findings = preflight_deployed(moto_env, stream="new-and-old", batch_size="50")
    assert not [f for f in findings if f.level == Level.DRIFT]
    updated = by_code(findings)["mapping.updated"]
    assert (updated.before, updated.after, updated.destructive) == (
        {"BatchSize": int(KNOB_DEFAULTS["batch_size"])},
        {"BatchSize": 50},
        False,
    )


def test_preflight_text_separates_the_deploy_from_the_drift(
    moto_env: Aws, capsys: pytest.CaptureFixture[str]
) -> None:
    ot.deploy(moto_env.client, ot.config_of(pitr="on"))
    moto_env.client("dynamodb").update_continuous_backups(
        TableName="items-dev", PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": False}
    )
    # WHEN preflight runs with the same knobs THEN the drift is listed apart from the deploy's changes
    assert main(["preflight", "-c", "pitr=on"]) == 0
    out = capsys.readouterr().out
    assert out.index("what this deploy changes:") < out.index("drift CloudFormation will not repair")


def test_preflight_json_lists_codes_values_and_the_destructive_ones(
    moto_env: Aws, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a gsi1 stack with PITR, and knobs that drop the index and turn TTL on
    ot.deploy(moto_env.client, ot.config_of(gsi="gsi1", pitr="on"))
    # WHEN preflight --json runs
    assert main(["preflight", "--json", "-c", "gsi=none", "-c", "ttl=on", "-c", "pitr=on"]) == 0
    report = json.loads(capsys.readouterr().out)
    # THEN each finding carries its code, flag and values, and the destructive codes are listed on top
    found = {f["code"]: f for f in report["findings"] if f["level"] == "CHANGE"}
    assert set(found) == {"index.removed", "ttl.enabled"}
    assert (found["index.removed"]["destructive"], found["index.removed"]["before"]) == (True, "gsi1")
    assert (found["ttl.enabled"]["level"], found["ttl.enabled"]["after"]) == ("CHANGE", names.TTL_ATTRIBUTE)
    assert report["destructive"] == ["index.removed", "ttl.enabled"]
    # AND each knob the run overrides against the settings file is an INFO finding with both values
    overrides = {
        (f["level"], f["before"], f["after"]) for f in report["findings"] if f["code"] == "settings.override"
    }
    assert overrides == {("INFO", "off", "on"), ("INFO", "auto", "on")}


def test_preflight_text_has_a_code_column_and_marks_destructive_rows(
    moto_env: Aws, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a gsi1 stack, and knobs that drop the index and turn PITR on
    ot.deploy(moto_env.client, ot.config_of(gsi="gsi1"))
    assert main(["preflight", "-c", "gsi=none", "-c", "pitr=on"]) == 0
    rows = [line.split()[:2] for line in capsys.readouterr().out.splitlines()]
    # THEN the removal is a CHANGE! row, the harmless change a plain CHANGE row, each with its code
    assert ["level", "code"] in rows
    assert ["CHANGE!", "index.removed"] in rows and ["CHANGE", "pitr.enabled"] in rows


def test_consumer_knob_changes_on_a_live_stack_say_what_the_deploy_does(moto_env: Aws) -> None:
    # GIVEN a deployed stack with the built-in consumer, and knobs that turn SnapStart on, give it more memory and
    # promise keys are never reused
    ot.deploy_with_mapping(moto_env.client, ot.config_of(stream="new-and-old"))
    knobs = {"stream": "new-and-old", "snapstart": "on", "memory": "1024", "blob_key_reuse": "never"}
    findings = preflight_deployed(moto_env, **knobs)
    # THEN each is a deploy change with its values; key reuse turned to never is destructive
    consumer = {
        (f.subject, f.code, f.destructive, f.before, f.after)
        for f in findings
        if f.code.startswith("consumer.")
    }
    assert consumer == {
        ("consumer function snapstart", "consumer.changed", False, False, True),
        ("consumer function memory", "consumer.changed", False, 512, 1024),
        (
            f"consumer function {names.ENV_BLOB_KEY_REUSE}",
            "consumer.key_reuse_never",
            True,
            "guarded",
            "never",
        ),
    }
    # AND the same knobs again change nothing of the consumer
    again = preflight_deployed(moto_env, stream="new-and-old")
    assert not [f for f in again if f.code.startswith("consumer.")]


def test_with_snapstart_on_any_function_change_publishes_the_next_version() -> None:
    from doctable.capabilities import consumer as consumer_plan

    before = ot.config_of(stream="new-and-old", snapstart="on")
    after = ot.config_of(stream="new-and-old", snapstart="on", timeout="60")
    found = [(f.code, f.before, f.after) for f in consumer_plan.findings(before, after)]
    assert found == [("consumer.changed", 30, 60), ("consumer.republished", None, None)]
    assert consumer_plan.findings(before, before) == []
