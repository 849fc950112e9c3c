"""A global table on the local AWS with three regions, deployed by `doctable deploy` and the real CDK CLI: the
home stack's GlobalTable makes a replica in each region, and each replica region gets its consumer stack on its
replica's stream; a write in one region is seen in the others and proven by every region's consumer; a delete in
a replica region removes the record's blob from the home bucket; a key reused across regions keeps its live
blob; a replica removed on day 2 waits for the gate, then goes with its consumer stack.

The tests run in file order and share one environment (table_base ``glob``, env dev, home us-east-1).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from local import api
from tests.support import localaws as lt
from tests.support.cli import Result, run_doctable

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]

HOME = lt.REGION
WEST, EU = "us-west-2", "eu-west-1"
TABLE = "glob-dev"
STACK = "doctable-glob-dev"
PROOF = "stream_records_received"


def settings_text(replicas: list[str]) -> str:
    shown = ", ".join(f'"{r}"' for r in replicas)
    return (
        f'[defaults]\ntable_base = "glob"\nstream = "new-and-old"\npitr = "on"\n\n'
        f"[environments.dev]\nreplicas = [{shown}]\n"
    )


def client(aws: lt.LocalAWS, service: str, region: str) -> Any:
    return aws.client(service, region=region)


def outputs(aws: lt.LocalAWS, stack: str, region: str) -> dict[str, str]:
    found = client(aws, "cloudformation", region).describe_stacks(StackName=stack)["Stacks"][0]
    return {o["OutputKey"]: o["OutputValue"] for o in found.get("Outputs", [])}


def replica_regions(aws: lt.LocalAWS, region: str) -> set[str]:
    table = client(aws, "dynamodb", region).describe_table(TableName=TABLE)["Table"]
    return {r["RegionName"] for r in table.get("Replicas", [])}


def proven(aws: lt.LocalAWS, log_group: str, region: str, since: int) -> bool:
    """A proof line of at least one record in the region's consumer log group since ``since``."""
    return any(line.count >= 1 for line in lt.proof_lines(client(aws, "logs", region), log_group, since))


def cleaned(aws: lt.LocalAWS, log_group: str, region: str, since: int, pk: str) -> list[dict[str, Any]]:
    """The consumer's ``record_cleaned`` lines for ``pk`` since ``since`` (structured JSON log lines)."""
    logs = client(aws, "logs", region)
    try:
        events = logs.filter_log_events(logGroupName=log_group, startTime=since)["events"]
    except logs.exceptions.ResourceNotFoundException:
        return []
    lines = []
    for event in events:
        try:
            line = json.loads(event["message"])
        except ValueError:
            continue
        if isinstance(line, dict) and line.get("message") == "record_cleaned" and line.get("pk") == pk:
            lines.append(line)
    return lines


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("glob-settings") / "doctable.toml"
    path.write_text(settings_text([WEST, EU]))
    return path


@pytest.fixture(scope="module")
def doctable(
    local_aws: lt.LocalAWS, bootstrapped: api.CdkRun, settings: Path, tmp_path_factory: pytest.TempPathFactory
) -> Callable[..., Result]:
    # Each replica region's consumer stack is deployed by the CDK CLI into that region: bootstrapped there too.
    for region in (WEST, EU):
        lt.run_cdk(local_aws, ["bootstrap", f"aws://{lt.ACCOUNT}/{region}"], tmp_path_factory.mktemp("boot"))
    state = tmp_path_factory.mktemp("glob-state")
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
    # the deploy's verify runs the whole contract at home, the replica rows in every region and a nudge in each
    result = doctable("deploy", "--env", "dev", "--json")
    assert result.code == 0, result.err[-3000:]
    return result.json()


def test_deploy_makes_a_replica_and_a_consumer_stack_in_each_region(
    local_aws: lt.LocalAWS, deployed: dict[str, Any]
) -> None:
    # THEN verify passed, its replica rows among its checks
    rows = {check["id"]: check for check in deployed["verify"]["rows"]}
    assert deployed["verified"] is True
    replica_rows = [f"replica-{what}:{r}" for what in ("options", "consumer") for r in (WEST, EU)]
    for row in ("replicas", *replica_rows):
        assert rows[row]["result"] == "PASS", rows[row]
    # AND a nudge written in each region reached every other region and was proven by every region's consumer
    for region in (HOME, WEST, EU):
        row = rows[f"replica-delivery:{region}"]
        assert row["result"] == "PASS", row
    # AND the home table is a global table with a replica in each declared region, and each replica lists the
    # others
    assert replica_regions(local_aws, HOME) == {WEST, EU}
    assert replica_regions(local_aws, WEST) == {HOME, EU}
    # AND each replica region's consumer stack maps that region's replica stream, Enabled
    streams = deployed["replica_streams"]
    assert set(streams) == {WEST, EU}
    for region in (WEST, EU):
        table = client(local_aws, "dynamodb", region).describe_table(TableName=TABLE)["Table"]
        assert streams[region] == table["LatestStreamArn"]
        assert f":{region}:" in streams[region]
        out = outputs(local_aws, f"{STACK}-{region}", region)
        mapping = client(local_aws, "lambda", region).get_event_source_mapping(
            UUID=out["EventSourceMappingUuid"]
        )
        assert (mapping["EventSourceArn"], mapping["State"]) == (streams[region], "Enabled")


def test_a_write_in_one_region_is_seen_in_the_others_and_proven_by_every_consumer(
    local_aws: lt.LocalAWS, deployed: dict[str, Any]
) -> None:
    # GIVEN each region's consumer log group
    groups = {HOME: outputs(local_aws, STACK, HOME)["ConsumerLogGroupName"]}
    for region in (WEST, EU):
        groups[region] = outputs(local_aws, f"{STACK}-{region}", region)["ConsumerLogGroupName"]
    since = lt.now_ms()
    # WHEN an item is written in us-west-2
    item = {"pk": {"S": "nudge-west"}, "sk": {"S": "1"}, "note": {"S": "hello"}}
    client(local_aws, "dynamodb", WEST).put_item(TableName=TABLE, Item=item)
    # THEN every other region has it
    for region in (HOME, EU):
        ddb = client(local_aws, "dynamodb", region)
        lt.wait_for(
            lambda ddb=ddb: ddb.get_item(TableName=TABLE, Key={"pk": item["pk"], "sk": item["sk"]}).get(
                "Item"
            ),
            timeout=30,
            what=f"the item replicated to {region}",
        )
    # AND every region's consumer logs the proof line for it
    for region, group in groups.items():
        lt.wait_for(
            lambda region=region, group=group: proven(local_aws, group, region, since),
            timeout=120,
            what=f"the proof line in {region}",
        )


def test_a_delete_in_a_replica_region_removes_the_blob_from_the_home_bucket(
    local_aws: lt.LocalAWS, deployed: dict[str, Any]
) -> None:
    # GIVEN a blob in the home bucket and an item listing it, written in eu-west-1
    bucket = outputs(local_aws, STACK, HOME)["BlobBucketName"]
    s3 = client(local_aws, "s3", HOME)
    key = "gone-eu/1/a.bin"
    s3.put_object(Bucket=bucket, Key=key, Body=b"blob")
    eu, home = client(local_aws, "dynamodb", EU), client(local_aws, "dynamodb", HOME)
    item = {"pk": {"S": "gone-eu"}, "sk": {"S": "1"}, "blobs": {"L": [{"S": key}]}}
    eu.put_item(TableName=TABLE, Item=item)
    lt.wait_for(
        lambda: home.get_item(TableName=TABLE, Key={"pk": item["pk"], "sk": item["sk"]}).get("Item"),
        timeout=30,
        what="the item replicated home",
    )
    # WHEN it is deleted in eu-west-1
    eu.delete_item(TableName=TABLE, Key={"pk": item["pk"], "sk": item["sk"]})
    # THEN the home consumer deletes the blob (the replicated REMOVE is treated as a local one)
    lt.wait_for(
        lambda: s3.list_objects_v2(Bucket=bucket, Prefix=key).get("KeyCount") == 0,
        timeout=120,
        what="the blob deleted from the home bucket",
    )


def test_a_key_reused_in_another_region_keeps_its_live_blob(
    local_aws: lt.LocalAWS, deployed: dict[str, Any]
) -> None:
    # GIVEN an item in us-west-2 listing a blob
    out = outputs(local_aws, STACK, HOME)
    bucket, group = out["BlobBucketName"], out["ConsumerLogGroupName"]
    s3 = client(local_aws, "s3", HOME)
    west, eu = client(local_aws, "dynamodb", WEST), client(local_aws, "dynamodb", EU)
    key = "reused/1/a.bin"
    s3.put_object(Bucket=bucket, Key=key, Body=b"first")
    item = {"pk": {"S": "reused"}, "sk": {"S": "1"}, "blobs": {"L": [{"S": key}]}}
    west.put_item(TableName=TABLE, Item=item)
    lt.wait_for(
        lambda: eu.get_item(TableName=TABLE, Key={"pk": item["pk"], "sk": item["sk"]}).get("Item"),
        timeout=30,
        what="the item replicated to eu-west-1",
    )
    since = lt.now_ms()
    # WHEN it is deleted in us-west-2 and, as soon as eu-west-1 has the delete, put again there with the same key,
    # its blob uploaded again
    west.delete_item(TableName=TABLE, Key={"pk": item["pk"], "sk": item["sk"]})
    lt.wait_for(
        lambda: "Item" not in eu.get_item(TableName=TABLE, Key={"pk": item["pk"], "sk": item["sk"]}),
        timeout=30,
        what="the delete replicated to eu-west-1",
    )
    s3.put_object(Bucket=bucket, Key=key, Body=b"second")
    eu.put_item(TableName=TABLE, Item=item)
    # THEN once the home consumer has handled the REMOVE, the blob is there with the new content
    lt.wait_for(
        lambda: any(
            line.get("event_name") == "REMOVE" for line in cleaned(local_aws, group, HOME, since, "reused")
        ),
        timeout=120,
        what="the home consumer's record_cleaned line for the REMOVE",
    )
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == b"second"
    assert eu.get_item(TableName=TABLE, Key={"pk": item["pk"], "sk": item["sk"]}).get("Item") == item


def pitr_of(aws: lt.LocalAWS, region: str) -> str:
    backups = client(aws, "dynamodb", region).describe_continuous_backups(TableName=TABLE)
    return str(
        backups["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"]
    )


def test_reconcile_restores_a_replicas_pitr_turned_off_behind_the_stack(
    local_aws: lt.LocalAWS, deployed: dict[str, Any], doctable: Callable[..., Result]
) -> None:
    # GIVEN PITR (declared on) turned off on the eu-west-1 replica, behind the stack
    client(local_aws, "dynamodb", EU).update_continuous_backups(
        TableName=TABLE, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": False}
    )
    # WHEN reconcile runs dry THEN it lists that drift alone, named by its region, with the call in eu-west-1
    dry = doctable("reconcile", "--json", "--env", "dev")
    assert dry.code == 1, dry.err[-2000:]
    assert [(d["subject"], d["region"], d["op"]) for d in dry.json()["drift"]] == [
        (f"pitr ({EU})", EU, "UpdateContinuousBackups")
    ]
    assert pitr_of(local_aws, EU) == "DISABLED"
    # WHEN it applies THEN it restored it, the re-read finds nothing left, and the replica's PITR is on again
    done = doctable("reconcile", "--apply", "--json", "--env", "dev")
    assert done.code == 0, done.err[-2000:]
    assert (done.json()["restored"], done.json()["remaining"]) == ([f"pitr ({EU})"], [])
    assert pitr_of(local_aws, EU) == "ENABLED"


def test_a_removed_replica_waits_for_the_gate_then_goes_with_its_consumer_stack(
    local_aws: lt.LocalAWS, deployed: dict[str, Any], settings: Path, doctable: Callable[..., Result]
) -> None:
    # GIVEN eu-west-1 taken out of the environment's replicas
    settings.write_text(settings_text([WEST]))
    # WHEN it is deployed without a yes  THEN the gate refuses and nothing changes
    refused = doctable("deploy", "--env", "dev", "--no-verify", "--json")
    assert refused.code == 3, refused.err[-2000:]
    assert "replica.removed" in refused.json()["refused"]
    assert replica_regions(local_aws, HOME) == {WEST, EU}
    # WHEN it is deployed with --allow-destructive
    done = doctable("deploy", "--env", "dev", "--no-verify", "--allow-destructive", "--json")
    assert done.code == 0, done.err[-3000:]
    # THEN the replica is gone, and so is its region's consumer stack
    assert replica_regions(local_aws, HOME) == {WEST}
    assert done.json()["replica_stacks_deleted"] == [EU]
    stacks = client(local_aws, "cloudformation", EU).list_stacks()["StackSummaries"]
    assert all(s["StackStatus"] == "DELETE_COMPLETE" for s in stacks if s["StackName"] == f"{STACK}-{EU}")


def test_a_replica_added_on_day_2_gets_the_items_and_its_consumer_stack(
    local_aws: lt.LocalAWS, settings: Path, doctable: Callable[..., Result]
) -> None:
    # GIVEN an item written at home while eu-west-1 is not a replica
    home = client(local_aws, "dynamodb", HOME)
    item = {"pk": {"S": "before-eu"}, "sk": {"S": "1"}}
    home.put_item(TableName=TABLE, Item=item)
    # WHEN eu-west-1 is declared again and deployed (no yes needed: adding a replica destroys nothing)
    settings.write_text(settings_text([WEST, EU]))
    done = doctable("deploy", "--env", "dev", "--no-verify", "--json")
    assert done.code == 0, done.err[-3000:]
    assert done.json()["refused"] == []
    # THEN eu-west-1 is a replica again, with the item copied
    assert replica_regions(local_aws, HOME) == {WEST, EU}
    eu = client(local_aws, "dynamodb", EU)
    assert eu.get_item(TableName=TABLE, Key=item)["Item"] == item
    # AND its consumer stack maps the new replica's stream
    stream = eu.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
    out = outputs(local_aws, f"{STACK}-{EU}", EU)
    mapping = client(local_aws, "lambda", EU).get_event_source_mapping(UUID=out["EventSourceMappingUuid"])
    assert (mapping["EventSourceArn"], mapping["State"]) == (stream, "Enabled")
