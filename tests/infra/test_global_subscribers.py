"""Subscribers on a global table (contract/subscribers.py ``regions``): the home stack holds the home region's, each
replica region's stack (infra/replica_stack.py) those of its region, each on its own region's replica stream with its
own failure bucket, role and alarms there; cdk-nag and cfn-lint clean on both stacks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from contract import names
from contract.knobs import ConfigError, resolve_config
from infra.stack import create_stack
from tests.infra.synth import cfn_lint, resources, stack_template

pytestmark = pytest.mark.infra

ROOT = Path(__file__).resolve().parents[2]
HOME, WEST, EU = "us-east-1", "us-west-2", "eu-west-1"
HANDLER = "examples/subscribers/search.py:handler"
TABLE = "items-dev"
STREAMS = {
    region: f"arn:aws:dynamodb:{region}:123456789012:table/{TABLE}/stream/2026-12-02T00:00:00.000"
    for region in (WEST, EU)
}
GRANTS = [
    "table:read",
    {"resource": "arn:aws:sqs:us-west-2:123456789012:audit", "actions": ["sqs:SendMessage"]},
]


def synth(tmp_path: Path, regions: Any, **extra: Any) -> tuple[Any, Path]:
    """(config, cloud-assembly dir) of a global table (us-west-2, eu-west-1) with subscriber ``audit``."""
    declaration = {"handler": HANDLER, "grants": GRANTS, **extra}
    if regions is not None:
        declaration["regions"] = regions
    config = resolve_config(
        context={"stream": "new-and-old", "replicas": f"{WEST},{EU}"},
        environ={},
        subscribers={"audit": declaration},
        settings_dir=ROOT,
    )
    app = cdk.App(outdir=str(tmp_path), context={"replica_streams": json.dumps(STREAMS)})
    create_stack(app, config, account="123456789012", region=HOME)
    app.synth()
    return config, tmp_path


def subscriber_resources(template: dict[str, Any], kind: str) -> dict[str, Any]:
    return {k: v for k, v in resources(template, kind).items() if k.startswith("SubscriberAudit")}


@pytest.fixture(scope="module")
def everywhere(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    return synth(tmp_path_factory.mktemp("all"), "all")


def test_regions_all_puts_the_subscriber_in_every_regions_stack_on_that_regions_stream(
    everywhere: tuple[Any, Path],
) -> None:
    config, outdir = everywhere
    home = stack_template(outdir, config.stack_name)
    assert len(subscriber_resources(home, "AWS::Lambda::EventSourceMapping")) == 1
    for region in (WEST, EU):
        template = stack_template(outdir, config.replica_stack_name(region))
        (mapping,) = subscriber_resources(template, "AWS::Lambda::EventSourceMapping").values()
        # its mapping reads that region's replica stream, its failures go to its own bucket in that region
        assert mapping["Properties"]["EventSourceArn"] == STREAMS[region]
        (bucket,) = subscriber_resources(template, "AWS::S3::Bucket").values()
        assert f"-{region}-audit-failures" in json.dumps(bucket["Properties"]["BucketName"])
        assert len(subscriber_resources(template, "AWS::CloudWatch::Alarm")) == 2
        # its outputs are named as the home stack's (verify, logs and replay read them per region)
        assert names.subscriber_output("audit", names.OUT_SUBSCRIBER_MAPPING) in template["Outputs"]


def test_each_replica_region_has_its_dashboard_of_its_readers_linked_from_the_home_one(
    everywhere: tuple[Any, Path],
) -> None:
    config, outdir = everywhere
    home = stack_template(outdir, config.stack_name)
    (home_board,) = resources(home, "AWS::CloudWatch::Dashboard").values()
    home_body = json.dumps(home_board["Properties"]["DashboardBody"])
    for region in (WEST, EU):
        template = stack_template(outdir, config.replica_stack_name(region))
        (board,) = resources(template, "AWS::CloudWatch::Dashboard").values()
        name = f"{config.stack_name}-{region}"  # the execution policy's Dashboard statement names it so
        # GIVEN its name, the stack's DashboardName output (what `logs --region` links)
        assert board["Properties"]["DashboardName"] == name
        assert names.OUT_DASHBOARD_NAME in template["Outputs"]
        body = json.dumps(board["Properties"]["DashboardBody"])
        # THEN its widgets read that region, with a row for the region's consumer and one for the subscriber
        assert f'\\"region\\":\\"{region}\\"' in body and HOME not in body.replace(config.table_name, "")
        assert "Consumer (proof of delivery" in body and "Subscriber audit" in body
        # AND no replication-latency row (the home region's), and the home dashboard links it
        assert "ReplicationLatency" not in body and name in home_body
    assert "ReplicationLatency" in home_body


def test_each_regions_role_reads_that_regions_stream_and_its_grants_reach_that_regions_replica(
    everywhere: tuple[Any, Path],
) -> None:
    config, outdir = everywhere
    template = stack_template(outdir, config.replica_stack_name(WEST))
    (policy,) = subscriber_resources(template, "AWS::IAM::Policy").values()
    statements = {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    assert statements["ReadOwnStream"]["Resource"] == STREAMS[WEST]
    table = json.dumps(statements["Grant0"]["Resource"])
    assert f":dynamodb:{WEST}:123456789012:table/{TABLE}" in table and HOME not in table
    assert statements["Grant1"]["Resource"] == "arn:aws:sqs:us-west-2:123456789012:audit"
    # nothing of another region's: no stream, table or bucket of the home region or eu-west-1
    text = json.dumps(policy)
    assert EU not in text and HOME not in text


def test_every_alarm_of_a_replica_region_notifies_that_regions_own_topic(
    everywhere: tuple[Any, Path],
) -> None:
    config, outdir = everywhere
    for region in (WEST, EU):
        template = stack_template(outdir, config.replica_stack_name(region))
        # GIVEN the replica stack's one topic, its ARN an output (operators subscribe in that region)
        (topic,) = resources(template, "AWS::SNS::Topic")
        assert template["Outputs"][names.OUT_ALARM_TOPIC_ARN]["Value"] == {"Ref": topic}
        # THEN the consumer's alarms (iterator age, errors, dropped events: it keeps no failed batches and deletes
        # nothing) and the subscriber's two notify it, and the dashboard lists them all
        alarms = resources(template, "AWS::CloudWatch::Alarm")
        consumer = sorted(
            k.removeprefix(names.ID_ALARMS)[:-8] for k in alarms if k.startswith(names.ID_ALARMS)
        )
        assert consumer == ["ConsumerErrors", "DroppedEvents", "IteratorAge"]
        assert len(alarms) == 5 and len(subscriber_resources(template, "AWS::CloudWatch::Alarm")) == 2
        assert all(a["Properties"]["AlarmActions"] == [{"Ref": topic}] for a in alarms.values())
        (board,) = resources(template, "AWS::CloudWatch::Dashboard").values()
        assert all(logical in json.dumps(board["Properties"]["DashboardBody"]) for logical in alarms)


def test_a_home_subscriber_without_the_builtin_consumer_notifies_the_stacks_topic(tmp_path: Path) -> None:
    config = resolve_config(
        context={"stream": "new-and-old", "consumer": "none"},
        environ={},
        subscribers={"audit": {"handler": HANDLER}},
        settings_dir=ROOT,
    )
    app = cdk.App(outdir=str(tmp_path))
    create_stack(app, config, account="123456789012", region=HOME)
    app.synth()
    template = stack_template(tmp_path, config.stack_name)
    (topic,) = resources(template, "AWS::SNS::Topic")
    assert topic.startswith(names.ID_ALARMS)  # Alarms/Topic: the logical id it keeps when the consumer comes
    alarms = resources(template, "AWS::CloudWatch::Alarm")
    assert len(alarms) == 2 and all(
        a["Properties"]["AlarmActions"] == [{"Ref": topic}] for a in alarms.values()
    )
    assert template["Outputs"][names.OUT_ALARM_TOPIC_ARN]["Value"] == {"Ref": topic}


@pytest.mark.parametrize(
    ("regions", "home", "replicas"),
    [(None, True, ()), ("home", True, ()), ([WEST], False, (WEST,)), ([HOME, EU], True, (EU,))],
    ids=["default", "home", "one-replica", "home-and-one"],
)
def test_a_subscriber_runs_only_in_the_regions_it_names(
    tmp_path: Path, regions: Any, home: bool, replicas: tuple[str, ...]
) -> None:
    config, outdir = synth(tmp_path, regions)
    assert (
        bool(subscriber_resources(stack_template(outdir, config.stack_name), "AWS::Lambda::Function")) == home
    )
    for region in (WEST, EU):
        template = stack_template(outdir, config.replica_stack_name(region))
        assert bool(subscriber_resources(template, "AWS::Lambda::Function")) == (region in replicas)


def test_a_list_naming_a_region_that_is_not_the_tables_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        synth(tmp_path, ["ap-south-1", WEST])
    assert caught.value.problems == [
        "subscriber 'audit': regions = ['ap-south-1', 'us-west-2'] names ap-south-1, not one of the table's "
        'regions; allowed: "home", "all" or a list of us-east-1, us-west-2, eu-west-1'
    ]


def test_cdk_nag_and_cfn_lint_are_clean_on_every_stack(everywhere: tuple[Any, Path], tmp_path: Path) -> None:
    config, outdir = everywhere
    # synth raised on no unacknowledged cdk-nag finding; each acknowledgement has its reason
    report = json.loads((outdir / "validation-report.json").read_text())
    for plugin in report["pluginReports"]:
        assert (plugin["conclusion"], plugin["violations"]) == ("success", [])
        assert all(len(s["reason"]) >= 40 for s in plugin["suppressedViolations"])
    for stack in (config.stack_name, *(config.replica_stack_name(r) for r in (WEST, EU))):
        (tmp_path / f"{stack}.template.json").write_text(json.dumps(stack_template(outdir, stack)))
    result = cfn_lint(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_replica_regions_subscriber_without_the_builtin_consumer_is_one_line(tmp_path: Path) -> None:
    config = resolve_config(
        context={"stream": "new-and-old", "replicas": WEST, "consumer": "none"},
        environ={},
        subscribers={"audit": {"handler": HANDLER, "regions": "all"}},
        settings_dir=ROOT,
    )
    with pytest.raises(ConfigError) as caught:
        create_stack(cdk.App(outdir=str(tmp_path)), config, account="123456789012", region=HOME)
    assert caught.value.problems == [
        "subscriber 'audit': regions = 'all' runs it in a replica region, whose stack is the built-in consumer's; "
        'allowed: the built-in consumer (consumer = "builtin"), or regions = "home"'
    ]
