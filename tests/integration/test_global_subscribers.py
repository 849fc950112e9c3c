"""A subscriber on a global table on the local AWS (home us-east-1, one replica us-west-2), deployed by `doctable
deploy` and the real CDK CLI: with ``regions = "all"`` the home stack holds the home region's subscriber on the
home replica's stream and the replica stack holds us-west-2's on that replica's stream, each with its own function,
failure bucket and alarms in its region; one write at home reaches the subscriber in both regions (its
``stream_records_received`` line in each region's log group); taking a region out of ``regions`` waits for the
gate (``subscriber.region_removed``, destructive), then deletes that region's subscriber and nothing else.

The tests run in file order and share one environment (table_base ``gsub``, env dev).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contract import names
from local import api
from tests.support import localaws as lt
from tests.support.cli import Result, run_doctable

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]

HOME, WEST = lt.REGION, "us-west-2"
TABLE, STACK = "gsub-dev", "doctable-gsub-dev"
AUDIT = "audit"
HANDLER = """def handler(event, context):
    return {"batchItemFailures": []}
"""


def settings_text(regions: str) -> str:
    return (
        '[defaults]\ntable_base = "gsub"\nstream = "new-and-old"\n\n'
        f'[environments.dev]\nreplicas = ["{WEST}"]\n\n'
        f'[environments.dev.subscribers.{AUDIT}]\nhandler = "audit.py:handler"\nregions = {regions}\n'
    )


def client(aws: lt.LocalAWS, service: str, region: str) -> Any:
    return aws.client(service, region=region)


def outputs(aws: lt.LocalAWS, stack: str, region: str) -> dict[str, str]:
    found = client(aws, "cloudformation", region).describe_stacks(StackName=stack)["Stacks"][0]
    return {o["OutputKey"]: o["OutputValue"] for o in found.get("Outputs", [])}


def stack_of(region: str) -> str:
    return STACK if region == HOME else f"{STACK}-{region}"


def out(what: str) -> str:
    return names.subscriber_output(AUDIT, what)


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("gsub-settings")
    (folder / "audit.py").write_text(HANDLER)
    path = folder / "doctable.toml"
    path.write_text(settings_text('"all"'))
    return path


@pytest.fixture(scope="module")
def doctable(
    local_aws: lt.LocalAWS, bootstrapped: api.CdkRun, settings: Path, tmp_path_factory: pytest.TempPathFactory
) -> Callable[..., Result]:
    lt.run_cdk(local_aws, ["bootstrap", f"aws://{lt.ACCOUNT}/{WEST}"], tmp_path_factory.mktemp("boot"))
    state = tmp_path_factory.mktemp("gsub-state")
    env = {
        **local_aws.env,
        "DOCTABLE_CONFIG": str(settings),
        "DOCTABLE_STATE_DIR": str(state / "state"),
        "DOCTABLE_LEDGER_DIR": str(state / "ledger"),
    }

    def run(*args: str) -> Result:
        return run_doctable(list(args), env=env, timeout=1100)

    return run


@pytest.fixture(scope="module")
def deployed(doctable: Callable[..., Result]) -> dict[str, Any]:
    result = doctable("deploy", "--env", "dev", "--json")
    assert result.code == 0, result.err[-3000:]
    return result.json()


def test_each_region_runs_the_subscriber_on_its_own_replica_stream(
    local_aws: lt.LocalAWS, deployed: dict[str, Any]
) -> None:
    # THEN the deploy verified: the subscriber at home (its nudges) and in us-west-2 (its mapping on that region's
    # replica stream, and a change written at home reaching it there)
    assert deployed["verified"] is True, [r for r in deployed["verify"]["rows"] if r["result"] != "PASS"]
    rows = {row["id"]: row for row in deployed["verify"]["rows"]}
    for row in (f"subscriber:{AUDIT}", f"subscriber-nudge:{AUDIT}", f"subscriber:{AUDIT}@{WEST}",
                f"subscriber-nudge:{AUDIT}@{WEST}"):  # fmt: skip
        assert rows[row]["result"] == "PASS", rows[row]
    streams = {
        HOME: client(local_aws, "dynamodb", HOME).describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
    }
    streams.update(deployed["replica_streams"])
    functions = set()
    for region in (HOME, WEST):
        found = outputs(local_aws, stack_of(region), region)
        # AND each region's stack holds the subscriber: its mapping Enabled on that region's replica stream
        mapping = client(local_aws, "lambda", region).get_event_source_mapping(
            UUID=found[out(names.OUT_SUBSCRIBER_MAPPING)]
        )
        assert (mapping["EventSourceArn"], mapping["State"]) == (streams[region], "Enabled")
        assert f":{region}:" in mapping["EventSourceArn"]
        # AND its own failure bucket in that region, as the mapping's on-failure destination
        bucket = found[out(names.OUT_SUBSCRIBER_FAILURE_BUCKET)]
        assert f"-{region}-{AUDIT}-" in bucket
        destination = mapping["DestinationConfig"]["OnFailure"]["Destination"]
        assert destination.endswith(f":::{bucket}")
        functions.add(found[out(names.OUT_SUBSCRIBER_FUNCTION)])
        # AND its region's dashboard
        assert found[names.OUT_DASHBOARD_NAME].endswith(f"-{region}")
        # AND its alarms in that region
        alarms = client(local_aws, "cloudwatch", region).describe_alarms()["MetricAlarms"]
        assert any(
            d["Value"] == found[out(names.OUT_SUBSCRIBER_FUNCTION)]
            for a in alarms
            for d in a.get("Dimensions", [])
        )
    assert len(functions) == 2


def test_one_write_at_home_reaches_the_subscriber_in_both_regions(
    local_aws: lt.LocalAWS, deployed: dict[str, Any]
) -> None:
    groups = {
        region: outputs(local_aws, stack_of(region), region)[out(names.OUT_SUBSCRIBER_LOG_GROUP)]
        for region in (HOME, WEST)
    }
    since = lt.now_ms()
    # WHEN one item is written in the home region
    item = {"pk": {"S": "both-regions"}, "sk": {"S": "1"}, "note": {"S": "hello"}}
    client(local_aws, "dynamodb", HOME).put_item(TableName=TABLE, Item=item)
    # THEN the subscriber logs its proof line for it in each region's log group
    for region, group in groups.items():
        logs = client(local_aws, "logs", region)
        lt.wait_for(
            lambda logs=logs, group=group: any(
                line.count >= 1 for line in lt.proof_lines(logs, group, since)
            ),
            timeout=120,
            what=f"the subscriber's stream_records_received line in {region}",
        )


def test_the_operating_commands_reach_a_replica_region_with_its_name(
    local_aws: lt.LocalAWS, deployed: dict[str, Any], doctable: Callable[..., Result]
) -> None:
    west = outputs(local_aws, stack_of(WEST), WEST)
    # logs --region: the subscriber's log group there (the write above proven in it), then the region's consumer
    found = doctable("logs", "--env", "dev", "--region", WEST, "--subscriber", AUDIT, "--json", "-q")
    assert found.code == 0, found.err
    assert (found.json()["stack"], found.json()["log_group"]) == (
        stack_of(WEST),
        west[out(names.OUT_SUBSCRIBER_LOG_GROUP)],
    )
    assert found.json()["proof_lines"] >= 1
    consumer = doctable("logs", "--env", "dev", "--region", WEST, "--json", "-q").json()
    assert consumer["log_group"] == west[names.OUT_CONSUMER_LOG_GROUP]
    # AND that region's own dashboard (the replica, its consumer and its subscribers), linked from the home one's
    assert west[names.OUT_DASHBOARD_NAME] in consumer["dashboard_url"]
    home = client(local_aws, "cloudwatch", HOME).get_dashboard(
        DashboardName=outputs(local_aws, STACK, HOME)[names.OUT_DASHBOARD_NAME]
    )
    assert west[names.OUT_DASHBOARD_NAME] in home["DashboardBody"]
    # verify --region: that region's rows alone, each passing; the others not run, not kept for the ledger
    verified = doctable("verify", "--env", "dev", "--region", WEST, "--json", "-q", "--timeout", "60")
    record = verified.json()
    assert verified.code == 0 and record["only_region"] == WEST, verified.out + verified.err
    assert {r["id"] for r in record["rows"]} == {
        "stack", f"replica-options:{WEST}", f"replica-consumer:{WEST}", f"replica-delivery:{WEST}",
        f"subscriber:{AUDIT}@{WEST}", f"subscriber-nudge:{AUDIT}@{WEST}",
    }  # fmt: skip
    assert {s["reason"] for s in record["skipped"]} == {"other-region"}
    # invoke --region: the subscriber's function there, with an event of that region's replica stream
    invoked = doctable(
        "invoke", "--env", "dev", "--region", WEST, "--subscriber", AUDIT,
        "--event", "insert", "--pk", "p1", "--sk", "s1", "--json", "-q",
    )  # fmt: skip
    assert invoked.code == 0, invoked.err
    assert invoked.json()["function"] == west[out(names.OUT_SUBSCRIBER_FUNCTION)]
    assert f":{WEST}:" in invoked.json()["event"]["Records"][0]["eventSourceARN"]
    # replay --region: the subscriber's failure bucket there; the region's consumer keeps none, in one line
    replayed = doctable(
        "replay", "--env", "dev", "--region", WEST, "--subscriber", AUDIT, "--dry-run", "--json", "-q"
    )
    assert replayed.code == 0 and replayed.json()["bucket"] == west[out(names.OUT_SUBSCRIBER_FAILURE_BUCKET)]
    refused = doctable("replay", "--env", "dev", "--region", WEST, "--json", "-q")
    assert (refused.code, refused.json()["code"]) == (2, "replay.replica_consumer"), refused.out


def test_a_region_taken_out_waits_for_the_gate_then_goes_alone(
    local_aws: lt.LocalAWS, deployed: dict[str, Any], settings: Path, doctable: Callable[..., Result]
) -> None:
    # GIVEN the subscriber declared at home only
    settings.write_text(settings_text('"home"'))
    # WHEN it is deployed without a yes  THEN the gate refuses, naming the region, and nothing changes
    refused = doctable("deploy", "--env", "dev", "--no-verify", "--json")
    assert refused.code == 3, refused.err[-2000:]
    assert "subscriber.region_removed" in refused.json()["refused"]
    assert out(names.OUT_SUBSCRIBER_FUNCTION) in outputs(local_aws, stack_of(WEST), WEST)
    # WHEN it is deployed with --allow-destructive
    done = doctable("deploy", "--env", "dev", "--no-verify", "--allow-destructive", "--json")
    assert done.code == 0, done.err[-3000:]
    # THEN us-west-2's subscriber is gone, its consumer stays, and the home subscriber is untouched
    west = outputs(local_aws, stack_of(WEST), WEST)
    assert out(names.OUT_SUBSCRIBER_FUNCTION) not in west
    assert names.OUT_MAPPING_UUID in west
    assert out(names.OUT_SUBSCRIBER_FUNCTION) in outputs(local_aws, STACK, HOME)


def test_a_region_added_back_deploys_there_and_teardown_empties_its_bucket(
    local_aws: lt.LocalAWS, settings: Path, doctable: Callable[..., Result]
) -> None:
    # GIVEN us-west-2 added back (no yes needed: adding a region destroys nothing)
    settings.write_text(settings_text('"all"'))
    done = doctable("deploy", "--env", "dev", "--no-verify", "--json")
    assert done.code == 0, done.err[-3000:]
    assert done.json()["refused"] == []
    west = outputs(local_aws, stack_of(WEST), WEST)
    bucket = west[out(names.OUT_SUBSCRIBER_FAILURE_BUCKET)]
    # AND a failed batch kept in its failure bucket there
    client(local_aws, "s3", WEST).put_object(Bucket=bucket, Key="aws/lambda/uuid/batch", Body=b"{}")
    # WHEN the environment is torn down
    result = doctable("teardown", "--env", "dev", "--yes", "--json")
    assert result.code == 0, result.err[-3000:]
    # THEN the replica stack went with its subscriber's bucket, and the home stack after it
    for region in (HOME, WEST):
        stacks = client(local_aws, "cloudformation", region).list_stacks()["StackSummaries"]
        assert all(
            s["StackStatus"] == "DELETE_COMPLETE" for s in stacks if s["StackName"] == stack_of(region)
        )
    names_left = [b["Name"] for b in client(local_aws, "s3", WEST).list_buckets()["Buckets"]]
    assert bucket not in names_left
