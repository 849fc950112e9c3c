"""A global table (``replicas``): the home stack's AWS::DynamoDB::GlobalTable with its replicas and options, its
consumer on the home replica's stream, and each replica region's consumer stack (cleanup off, its role on the
stream ARN ``doctable deploy`` passes); cfn-lint and cdk-nag clean on both."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from contract import names
from contract.knobs import ConfigError, resolve_config
from infra.stack import create_stack
from tests.infra.synth import cfn_lint, only, resources, stack_template, synth, tag_map

pytestmark = pytest.mark.infra

ROOT = Path(__file__).resolve().parents[2]
HOME = "us-east-1"
REPLICAS = ("us-west-2", "eu-west-1")
STREAM_WEST = "arn:aws:dynamodb:us-west-2:123456789012:table/items-dev/stream/2026-12-02T00:00:00.000"
KNOBS = dict(
    stream="new-and-old",
    replicas=",".join(REPLICAS),
    gsi="gsi1",
    ttl="on",
    pitr="on",
    pitr_days="7",
    deletion_protection="on",
    table_class="standard-ia",
    contributor_insights="throttled-keys",
    owner="docs",
    cost_center="cc-7",
    max_read="20000",
    max_write="8000",
    warm_read="15000",
    warm_write="5000",
)
STREAMS = {"replica_streams": {"us-west-2": STREAM_WEST}}
POLICY = "examples/table-policy.json"
# The global shapes cfn-lint and checkov (`make lint`, tests/infra/synth_matrix.py) scan: KNOBS with these.
GLOBAL_SHAPES = [
    {},
    {"resource_policy": POLICY, "encryption": "aws-managed"},
    {"pitr": "off", "pitr_days": "off"},
]


def _home(**extra: Any) -> tuple[Any, dict[str, Any], Path]:
    return synth(region=HOME, context=STREAMS, **{**KNOBS, **extra})


def global_templates(extra: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The home stack's and the us-west-2 replica stack's templates of KNOBS with ``extra``."""
    config, template, outdir = _home(**extra)
    return template, stack_template(outdir, config.replica_stack_name("us-west-2"))


def _global_table(template: dict[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = only(template, "AWS::DynamoDB::GlobalTable")["Properties"]
    return properties


def _replicas(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {replica["Region"]: replica for replica in _global_table(template)["Replicas"]}


def _replica_template(config: Any, outdir: Path, region: str = "us-west-2") -> dict[str, Any]:
    return stack_template(outdir, config.replica_stack_name(region))


def _logical(template: dict[str, Any], type_name: str) -> str:
    (logical,) = resources(template, type_name)
    return logical


# --------------------------------------------------------------------------------------------- the home stack
def test_the_table_is_a_global_table_with_a_replica_in_each_region_and_the_home_one() -> None:
    # GIVEN two replica regions and a home region  WHEN synthesized
    config, template, _ = _home()
    # THEN the table is an AWS::DynamoDB::GlobalTable, not an AWS::DynamoDB::Table
    assert resources(template, "AWS::DynamoDB::Table") == {}
    table = _global_table(template)
    assert table["TableName"] == config.table_name == "items-dev"
    # AND its replicas are the home region and each replica region
    assert set(_replicas(template)) == {HOME, *REPLICAS}


def test_the_global_table_keeps_the_tables_shape() -> None:
    # GIVEN gsi1, TTL, caps and warm throughput  WHEN synthesized as a global table
    _, template, _ = _home()
    table = _global_table(template)
    # THEN the key schema, the stream, TTL, the index and on-demand billing are the single-region table's
    assert table["KeySchema"] == [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "sk", "KeyType": "RANGE"},
    ]
    assert table["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert table["TimeToLiveSpecification"] == {"AttributeName": names.TTL_ATTRIBUTE, "Enabled": True}
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    (index,) = table["GlobalSecondaryIndexes"]
    assert index["IndexName"] == names.GSI_NAME
    assert index["KeySchema"] == [
        {"AttributeName": names.GSI_PARTITION_KEY, "KeyType": "HASH"},
        {"AttributeName": names.GSI_SORT_KEY, "KeyType": "RANGE"},
    ]
    assert index["Projection"] == {"ProjectionType": "ALL"}
    # AND the caps and warm throughput land where a global table takes them (the read cap per replica)
    assert table["WriteOnDemandThroughputSettings"] == {"MaxWriteRequestUnits": 8000}
    assert table["WarmThroughput"] == {"ReadUnitsPerSecond": 15000, "WriteUnitsPerSecond": 5000}
    for replica in _replicas(template).values():
        assert replica["ReadOnDemandThroughputSettings"] == {"MaxReadRequestUnits": 20000}


@pytest.mark.parametrize("region", [HOME, *REPLICAS])
def test_every_replica_carries_the_per_replica_options(region: str) -> None:
    # GIVEN PITR with a window, deletion protection, standard-ia, contributor insights and tags
    config, template, _ = _home()
    # WHEN the replica in ``region`` is read
    replica = _replicas(template)[region]
    # THEN it carries each option AWS sets per replica
    assert replica["PointInTimeRecoverySpecification"] == {
        "PointInTimeRecoveryEnabled": True,
        "RecoveryPeriodInDays": 7,
    }
    assert replica["DeletionProtectionEnabled"] is True
    assert replica["TableClass"] == "STANDARD_INFREQUENT_ACCESS"
    assert replica["ContributorInsightsSpecification"] == {"Enabled": True, "Mode": "THROTTLED_KEYS"}
    assert tag_map(replica["Tags"]) == {**config.tags(), "Name": config.table_name}


def test_options_off_are_explicit_on_every_replica() -> None:
    # GIVEN dev's defaults with replicas  WHEN synthesized
    _, template, _ = synth(region=HOME, stream="new-and-old", replicas="us-west-2")
    # THEN PITR, deletion protection and contributor insights are off explicitly on each replica
    for replica in _replicas(template).values():
        assert replica["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": False}
        assert replica["DeletionProtectionEnabled"] is False
        assert replica["ContributorInsightsSpecification"] == {"Enabled": False}
        assert replica["TableClass"] == "STANDARD"


def test_the_resource_policy_is_on_the_home_replica_alone() -> None:
    # GIVEN a resource policy, whose placeholders name the home table's ARN
    _, template, _ = _home(resource_policy=POLICY)
    replicas = _replicas(template)
    # THEN the home replica carries it, naming the home region's table
    document = json.dumps(replicas[HOME]["ResourcePolicy"]["PolicyDocument"])
    assert f":dynamodb:{HOME}:" in document and ":table/items-dev" in document
    # AND no other replica does
    assert ["ResourcePolicy" in replicas[region] for region in REPLICAS] == [False, False]


def test_the_aws_managed_key_is_the_global_tables_encryption() -> None:
    _, template, _ = _home(encryption="aws-managed")
    assert _global_table(template)["SSESpecification"] == {"SSEEnabled": True, "SSEType": "KMS"}


def test_the_home_consumer_maps_the_global_tables_stream() -> None:
    # GIVEN the built-in consumer  WHEN synthesized with replicas
    _, template, _ = _home()
    table = _logical(template, "AWS::DynamoDB::GlobalTable")
    mapping = only(template, "AWS::Lambda::EventSourceMapping")["Properties"]
    # THEN the mapping reads the home replica's stream (the GlobalTable's StreamArn)
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [table, "StreamArn"]}
    # AND the role reads that stream only, and the live items of that table
    statements = _role_statements(template)
    assert statements["ReadOwnStream"]["Resource"] == {"Fn::GetAtt": [table, "StreamArn"]}
    assert statements["ReadLiveItems"]["Resource"] == {"Fn::GetAtt": [table, "Arn"]}
    # AND the function keeps cleanup on (the default: no BLOB_CLEANUP)
    function = only(template, "AWS::Lambda::Function")["Properties"]
    assert names.ENV_BLOB_CLEANUP not in function["Environment"]["Variables"]


def _role_statements(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    statements: dict[str, dict[str, Any]] = {}
    for policy in resources(template, "AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if "Sid" in statement:
                statements[statement["Sid"]] = statement
    return statements


def test_the_runtime_policy_and_the_outputs_name_the_global_table() -> None:
    # GIVEN the global table  WHEN synthesized
    _, template, _ = _home()
    table = _logical(template, "AWS::DynamoDB::GlobalTable")
    runtime = only(template, "AWS::IAM::ManagedPolicy")["Properties"]["PolicyDocument"]["Statement"]
    # THEN the runtime policy's table statement is on the global table's ARN
    assert {"Fn::GetAtt": [table, "Arn"]} in [s["Resource"] for s in runtime]
    # AND the outputs name its stream and the replica regions, comma-separated
    outputs = template["Outputs"]
    assert outputs[names.OUT_TABLE_NAME]["Value"] == {"Ref": table}
    assert outputs[names.OUT_TABLE_ARN]["Value"] == {"Fn::GetAtt": [table, "Arn"]}
    assert outputs[names.OUT_STREAM_ARN]["Value"] == {"Fn::GetAtt": [table, "StreamArn"]}
    assert outputs[names.OUT_REPLICA_REGIONS]["Value"] == ",".join(REPLICAS)
    assert json.loads(outputs[names.OUT_KNOBS]["Value"])["replicas"] == ",".join(REPLICAS)


def test_the_home_consumers_alarms_watch_its_function_and_mapping() -> None:
    # GIVEN the global table's home stack  WHEN its alarms are read
    _, template, _ = _home()
    function = _logical(template, "AWS::Lambda::Function")
    mapping = _logical(template, "AWS::Lambda::EventSourceMapping")
    alarms = {
        alarm["Properties"]["MetricName"]: alarm["Properties"]
        for alarm in resources(template, "AWS::CloudWatch::Alarm").values()
    }
    # THEN the iterator age is the home function's, and dropped events the home mapping's
    assert {"Name": "FunctionName", "Value": {"Ref": function}} in alarms["IteratorAge"]["Dimensions"]
    assert alarms["DroppedEventCount"]["Dimensions"] == [
        {"Name": "EventSourceMappingUUID", "Value": {"Ref": mapping}}
    ]


def test_without_replicas_the_table_is_the_single_region_table() -> None:
    # GIVEN no replicas  WHEN synthesized  THEN an AWS::DynamoDB::Table, and no ReplicaRegions output
    _, template, _ = synth(stream="new-and-old")
    assert only(template, "AWS::DynamoDB::Table")["Properties"]["TableName"] == "items-dev"
    assert resources(template, "AWS::DynamoDB::GlobalTable") == {}
    assert names.OUT_REPLICA_REGIONS not in template["Outputs"]


def test_replicas_without_a_region_are_one_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN replicas, no region binding and no CDK_DEFAULT_REGION
    monkeypatch.delenv("CDK_DEFAULT_REGION", raising=False)
    config = resolve_config(context={"stream": "new-and-old", "replicas": "us-west-2"}, environ={})
    # WHEN the stack is created  THEN one problem names the knob and its value
    with pytest.raises(ConfigError) as caught:
        create_stack(cdk.App(), config)
    (problem,) = caught.value.problems
    assert problem.startswith("replicas='us-west-2' set but the stack has no region")


def test_the_stacks_own_region_is_not_a_replica(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a replica in the region CDK_DEFAULT_REGION gives the stack (no region binding)
    monkeypatch.setenv("CDK_DEFAULT_REGION", "us-west-2")
    config = resolve_config(context={"stream": "new-and-old", "replicas": "us-west-2"}, environ={})
    # WHEN the stack is created  THEN one problem names the knob and the region
    with pytest.raises(ConfigError) as caught:
        create_stack(cdk.App(), config)
    assert [p.split(" ")[0] for p in caught.value.problems] == ["replicas='us-west-2'"]


def test_without_replica_streams_the_home_stack_warns_who_deploys_the_replica_consumers() -> None:
    # GIVEN replicas and no replica_streams context  WHEN synthesized
    config, _, outdir = synth(region=HOME, stream="new-and-old", replicas="us-west-2")
    # THEN no replica stack is in the assembly, and the home stack carries the warning
    assert not (outdir / f"{config.replica_stack_name('us-west-2')}.template.json").exists()
    metadata = (outdir / f"{config.stack_name}.metadata.json").read_text()
    assert "are deployed by `doctable deploy`" in metadata and "replica_streams" in metadata


@pytest.mark.parametrize(
    ("streams", "subject"),
    [
        ({"ap-south-1": STREAM_WEST}, "replica_streams='ap-south-1'"),
        ({"us-west-2": STREAM_WEST.replace("items-dev", "items-prod")}, "replica_streams='us-west-2'"),
        ({"us-west-2": STREAM_WEST.replace(":us-west-2:", ":eu-west-1:")}, "replica_streams='us-west-2'"),
    ],
    ids=["not-a-replica", "another-table", "another-region"],
)
def test_replica_streams_must_name_each_replicas_own_stream(streams: dict[str, str], subject: str) -> None:
    # GIVEN replica_streams naming a region that is no replica, or a stream of another table or region
    config = resolve_config(context={"stream": "new-and-old", "replicas": "us-west-2"}, environ={})
    app = cdk.App(context={"replica_streams": json.dumps(streams)})
    # WHEN the stacks are created  THEN one problem names the context key and the region
    with pytest.raises(ConfigError) as caught:
        create_stack(app, config, region=HOME)
    assert [p.split(" ")[0] for p in caught.value.problems] == [subject]


# -------------------------------------------------------------------------------------- a replica region's stack
def test_a_replica_stack_is_made_only_for_the_regions_replica_streams_names() -> None:
    # GIVEN two replicas and the stream ARN of one  WHEN synthesized
    config, _, outdir = _home()
    # THEN that region has its stack, bound to it; the other has none
    manifest = json.loads((outdir / "manifest.json").read_text())["artifacts"]
    west = manifest[config.replica_stack_name("us-west-2")]
    assert west["environment"].endswith("/us-west-2")
    assert config.replica_stack_name("eu-west-1") not in manifest
    assert config.replica_stack_name("us-west-2") == "doctable-items-dev-us-west-2"


def test_the_replica_consumer_runs_with_cleanup_off_and_the_home_consumers_options() -> None:
    # GIVEN the replica region's stack
    config, home, outdir = _home()
    template = _replica_template(config, outdir)
    function = only(template, "AWS::Lambda::Function")["Properties"]
    home_function = only(home, "AWS::Lambda::Function")["Properties"]
    # THEN its consumer deletes nothing and names the table, with no bucket
    variables = function["Environment"]["Variables"]
    assert variables[names.ENV_BLOB_CLEANUP] == names.ENV_FLAG_OFF
    assert variables[names.ENV_TABLE_NAME] == config.table_name
    assert names.ENV_BLOB_BUCKET not in variables
    # AND the same code and options as the home stack's consumer
    assert function["Code"]["S3Key"] == home_function["Code"]["S3Key"]
    for option in ("Runtime", "Architectures", "MemorySize", "Timeout", "TracingConfig", "Handler"):
        assert function[option] == home_function[option], option
    assert {
        k: v for k, v in variables.items() if k not in (names.ENV_BLOB_CLEANUP, names.ENV_TABLE_NAME)
    } == {
        k: v
        for k, v in home_function["Environment"]["Variables"].items()
        if k not in (names.ENV_BLOB_BUCKET, names.ENV_TABLE_NAME)
    }


def test_the_replica_mapping_reads_the_stream_passed_with_the_home_mappings_options() -> None:
    config, home, outdir = _home()
    template = _replica_template(config, outdir)
    mapping = only(template, "AWS::Lambda::EventSourceMapping")
    props = mapping["Properties"]
    home_props = only(home, "AWS::Lambda::EventSourceMapping")["Properties"]
    # THEN it reads the ARN replica_streams gave, through the function's alias
    assert props["EventSourceArn"] == STREAM_WEST
    assert props["FunctionName"] == {"Ref": _logical(template, "AWS::Lambda::Alias")}
    # AND with the home mapping's options, but no failure destination (it has nothing to replay)
    for option in ("StartingPosition", "BatchSize", "MaximumRetryAttempts", "MaximumRecordAgeInSeconds"):
        assert props[option] == home_props[option], option
    assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert "DestinationConfig" not in props
    # AND it is tagged like the home stack's mapping, and waits for the role's policy
    assert tag_map(props["Tags"]) == tag_map(home_props["Tags"]) == config.tags()
    (role_policy,) = [
        k for k in resources(template, "AWS::IAM::Policy") if k.startswith("StreamConsumerRolePolicy")
    ]
    assert role_policy in mapping["DependsOn"]


def test_the_replica_role_reads_that_stream_only_and_writes_its_own_logs() -> None:
    config, _, outdir = _home()
    template = _replica_template(config, outdir)
    statements = _role_statements(template)
    log_group = _logical(template, "AWS::Logs::LogGroup")
    # THEN the stream actions are on the passed stream ARN alone, the logs on its own log group
    assert statements["ReadReplicaStream"]["Resource"] == STREAM_WEST
    assert sorted(statements["ReadReplicaStream"]["Action"]) == [
        "dynamodb:DescribeStream",
        "dynamodb:GetRecords",
        "dynamodb:GetShardIterator",
    ]
    assert statements["WriteOwnLogs"]["Resource"] == {"Fn::GetAtt": [log_group, "Arn"]}
    # AND no statement grants S3, nor any DynamoDB table action
    actions = [
        action
        for policy in resources(template, "AWS::IAM::Policy").values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        for action in ([statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"])
    ]
    assert not [a for a in actions if a.startswith("s3:")]
    assert set(a for a in actions if a.startswith("dynamodb:")) == {
        "dynamodb:DescribeStream",
        "dynamodb:GetRecords",
        "dynamodb:GetShardIterator",
        "dynamodb:ListStreams",
    }
    # AND no bucket exists in the replica region
    assert resources(template, "AWS::S3::Bucket") == {}


def test_checkov_skips_follow_the_global_table_and_the_replica_consumer() -> None:
    # GIVEN PITR off (cdk-nag's DDB3 acknowledged) with replicas
    home, replica = global_templates({"pitr": "off", "pitr_days": "off"})
    table = only(home, "AWS::DynamoDB::GlobalTable")
    # THEN checkov's global-table PITR check is skipped with the acknowledgement's reason
    skips = {s["id"]: s["comment"] for s in table["Metadata"]["checkov"]["skip"]}
    assert set(skips) == {"CKV_AWS_165"} and "PITR is the `pitr` knob" in skips["CKV_AWS_165"]
    # AND the replica consumer's DLQ skip says why it has no failure destination, not the home consumer's reason
    function = only(replica, "AWS::Lambda::Function")
    reasons = {s["id"]: s["comment"] for s in function["Metadata"]["checkov"]["skip"]}
    assert "holds no cleanup to replay" in reasons["CKV_AWS_116"]


# ------------------------------------------------------------------------------------------ cfn-lint, cdk-nag
def test_cfn_lint_is_clean_on_the_home_and_replica_templates(tmp_path: Path) -> None:
    # GIVEN the home and replica templates, with and without a resource policy and in prod
    for i, extra in enumerate(GLOBAL_SHAPES):
        home, replica = global_templates(extra)
        (tmp_path / f"home{i}.template.json").write_text(json.dumps(home))
        (tmp_path / f"replica{i}.template.json").write_text(json.dumps(replica))
    # WHEN cfn-lint checks them with the project's configuration
    result = cfn_lint(tmp_path)
    # THEN it reports nothing
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("extra", [{}, {"pitr": "off", "pitr_days": "off"}], ids=["pitr-on", "pitr-off"])
def test_cdk_nag_is_clean_on_both_stacks_with_a_reason_on_every_acknowledgement(
    extra: dict[str, str],
) -> None:
    # GIVEN the home and the replica stack  WHEN synthesized (synth raises on an unacknowledged finding)
    config, _, outdir = _home(**extra)
    report = json.loads((outdir / "validation-report.json").read_text())
    # THEN every plugin report is a success with no violation, and each acknowledgement has a reason
    assert report["pluginReports"]
    for plugin in report["pluginReports"]:
        assert plugin["conclusion"] == "success"
        assert plugin["violations"] == []
        for suppressed in plugin["suppressedViolations"]:
            assert len(suppressed["reason"]) >= 40, suppressed["ruleName"]
    # AND the replica stack's acknowledgements are among them: its ListStreams statement, its tracing grant, the
    # runtime
    replica = config.replica_stack_name("us-west-2")
    acknowledged = {
        (violation["ruleName"], construct["constructPath"])
        for plugin in report["pluginReports"]
        for violation in plugin["suppressedViolations"]
        for construct in violation["violatingConstructs"]
    }
    assert {
        ("AwsSolutions-IAM5[Resource::*]", f"{replica}/StreamConsumer/RolePolicy/Resource"),
        ("AwsSolutions-IAM5[Resource::*]", f"{replica}/StreamConsumer/Role/DefaultPolicy/Resource"),
        ("AwsSolutions-L1", f"{replica}/StreamConsumer/Function/Resource"),
    } <= acknowledged


# ---------------------------------------------------------------------------------------------- app.py itself
def _run_app(tmp_path: Path, settings: str, context: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """app.py in a process of its own, as the CDK CLI runs it (context in CDK_CONTEXT_JSON), with no region
    but what ``settings`` binds."""
    (tmp_path / "doctable.toml").write_text(settings)
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("DOCTABLE_", "CDK_", "AWS_"))}
    environ = {
        **inherited,
        "PYTHONPATH": str(ROOT),
        "DOCTABLE_CONFIG": str(tmp_path / "doctable.toml"),
        "CDK_CONTEXT_JSON": json.dumps(context),
        "CDK_OUTDIR": str(tmp_path / "cdk.out"),
    }
    return subprocess.run(
        [sys.executable, str(ROOT / "app.py")], cwd=tmp_path, env=environ, capture_output=True, text=True
    )


def test_app_py_refuses_replicas_without_a_region_in_one_message(tmp_path: Path) -> None:
    # GIVEN replicas in the settings file, no region binding and no CDK_DEFAULT_REGION
    result = _run_app(tmp_path, '[defaults]\nstream = "new-and-old"\nreplicas = ["us-west-2"]\n', {})
    # THEN app.py exits 1 with the one problem, and no traceback
    assert result.returncode == 1
    assert "  - replicas='us-west-2' set but the stack has no region" in result.stderr
    assert "Traceback" not in result.stderr


def test_app_py_takes_replica_streams_as_context_not_as_a_knob(tmp_path: Path) -> None:
    # GIVEN the environment bound to its home region and replica_streams passed as CDK context
    settings = f'[environments.dev]\nregion = "{HOME}"\nstream = "new-and-old"\nreplicas = ["us-west-2"]\n'
    result = _run_app(tmp_path, settings, {"replica_streams": json.dumps({"us-west-2": STREAM_WEST})})
    # THEN the synth succeeds with the home stack and the replica region's stack
    assert result.returncode == 0, result.stderr
    manifest = json.loads((tmp_path / "cdk.out" / "manifest.json").read_text())["artifacts"]
    assert {"doctable-items-dev", "doctable-items-dev-us-west-2"} <= set(manifest)
