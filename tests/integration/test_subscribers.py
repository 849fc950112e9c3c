"""A team's subscriber deployed beside the cleanup consumer by `doctable deploy` into the local AWS: the example
search projection (examples/subscribers/search.py) declared in the settings file with its filter, grants and
environment; an INSERT reaches it through doctable's wrapper (its own proof line, the projection written), a REMOVE
its filter excludes does not invoke it, and the deploy's `doctable verify` nudges it both ways; a poison record (a title that is
not a string) lands on its failure bucket after its retries while the cleanup consumer keeps cleaning, and once the
team's fix is sent (`doctable watch --subscriber`), `doctable replay --subscriber` brings it back into the
projection; the ledger records it. Day 2: its mapping disabled and re-filtered behind the stack is drift preflight
names and `doctable reconcile --apply` repairs; a third reader of the stream made behind the stack (a mapping of
someone else's function) stops preflight and the deploy's gate until it is deleted.

The tests run in file order and share the stack (table_base ``subs``).
"""

from __future__ import annotations

import io
import json
import shutil
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contract import names
from doctable.verify.proof import parse_proof_line
from tests.support import localaws as lt
from tests.support.cli import Result, settings_runner

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
TABLE, SEARCH_TABLE, STACK = "subs-dev", "search-subs-dev", "doctable-subs-dev"
SETTINGS = f"""\
[defaults]
table_base = "subs"
stream = "new-and-old"

[environments.dev]
tier = "dev"

[environments.dev.subscribers.search]
handler = "subscribers/search.py:handler"
filters = ['{{"eventName": ["INSERT", "MODIFY"]}}']
batch_size = 10
max_retries = 1
grants = [{{resource = "arn:aws:dynamodb:{lt.REGION}:{lt.ACCOUNT}:table/{SEARCH_TABLE}", actions = ["dynamodb:PutItem", "dynamodb:DeleteItem"]}}]

[environments.dev.subscribers.search.environment]
SEARCH_TABLE = "{SEARCH_TABLE}"
"""
BOUND = 120.0  # seconds a delivery may take on the local AWS
POISON = {"pk": {"S": "doc#poison"}, "sk": {"S": "v1"}}  # its title is a number: the projection refuses it
NUDGES = ("subscriber:search", "subscriber-nudge:search", "subscriber-excluded:search")
DECLARED = {"eventName": ["INSERT", "MODIFY"]}
DRIFT = {"subscriber.mapping_disabled", "subscriber.filter_drifted"}
EXCEEDED = "subscriber.readers_exceeded"
FOREIGN = "subs-foreign"
NOOP = "def handler(event, context):\n    return {'batchItemFailures': []}\n"


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("subs-settings")
    (folder / "subscribers").mkdir()
    shutil.copy(ROOT / "examples" / "subscribers" / "search.py", folder / "subscribers" / "search.py")
    path = folder / "doctable.toml"
    path.write_text(SETTINGS)
    return path


@pytest.fixture(scope="module")
def doctable(
    local_aws: lt.LocalAWS,
    bootstrapped: lt.api.CdkRun,
    settings: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[..., Result]:
    local_aws.client("dynamodb").create_table(
        TableName=SEARCH_TABLE,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    return settings_runner(local_aws.env, settings, tmp_path_factory.mktemp("subs-state"))


def outputs(aws: lt.LocalAWS) -> dict[str, str]:
    stack = aws.client("cloudformation").describe_stacks(StackName=STACK)["Stacks"][0]
    return {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}


def proof_lines(aws: lt.LocalAWS, group: str) -> list[dict[str, Any]]:
    logs = aws.client("logs")
    try:
        events = logs.filter_log_events(logGroupName=group, filterPattern=f'"{names.PROOF_LOG_MESSAGE}"')[
            "events"
        ]
    except logs.exceptions.ResourceNotFoundException:
        return []
    return [line for e in events if (line := parse_proof_line(e["message"])) is not None]


def events(line: dict[str, Any], name: str) -> int:
    """How many records of one event name a proof line covers (``event_names`` counts them by name)."""
    return int((line.get("event_names") or {}).get(name, 0))


def until(condition: Callable[[], Any], what: str) -> Any:
    """``condition()``'s first truthy answer within BOUND seconds (a condition, polled; never a fixed sleep)."""
    deadline = time.monotonic() + BOUND
    while time.monotonic() < deadline:
        answer = condition()
        if answer:
            return answer
        time.sleep(0.5)
    raise AssertionError(f"{what}: not within {BOUND:.0f} s")


def test_the_subscriber_deploys_beside_the_consumer(
    doctable: Callable[..., Result], local_aws: lt.LocalAWS
) -> None:
    # GIVEN the settings file declaring the search subscriber  WHEN deployed (and verified)
    result = doctable("deploy", "--env", "dev", "--json", "--verify-timeout", "120")
    assert result.code == 0, result.out + result.err
    # THEN the deploy's verify checked the subscriber, and nudged it both ways: an INSERT reached its proof line,
    # and the REMOVE written before that INSERT, which its filter excludes, is counted by none of its proof lines
    rows = {row["id"]: row for row in result.json()["verify"]["rows"]}
    assert {row_id: rows[row_id]["result"] for row_id in NUDGES} == dict.fromkeys(NUDGES, "PASS")
    assert rows["subscriber-excluded:search"]["observed"].startswith("REMOVE seq ")
    # THEN the stack names the subscriber's function, log group, mapping and failure bucket
    found = outputs(local_aws)
    for what in ("FunctionName", "LogGroup", "MappingUuid", "FailureBucketName"):
        assert found.get(f"SubscriberSearch{what}"), what
    mapping = local_aws.client("lambda").get_event_source_mapping(UUID=found["SubscriberSearchMappingUuid"])
    assert mapping["State"] == "Enabled"
    assert mapping["FilterCriteria"]["Filters"] == [{"Pattern": '{"eventName":["INSERT","MODIFY"]}'}]


def test_an_insert_reaches_the_subscriber_and_a_filtered_remove_does_not(local_aws: lt.LocalAWS) -> None:
    ddb = local_aws.client("dynamodb")
    group = outputs(local_aws)["SubscriberSearchLogGroup"]
    consumer_group = outputs(local_aws)[names.OUT_CONSUMER_LOG_GROUP]
    key = {"pk": {"S": "doc#1"}, "sk": {"S": "v1"}}
    # GIVEN an INSERT  THEN the subscriber's proof line names it and the projection holds the item's terms
    ddb.put_item(TableName=TABLE, Item={**key, "title": {"S": "Hello Search World"}})
    line = until(
        lambda: next((p for p in proof_lines(local_aws, group) if "INSERT" in p["event_names"]), None),
        "proof",
    )
    assert (line["subscriber"], line["table_name"], line["record_count"]) == ("search", TABLE, 1)
    projected = until(lambda: ddb.get_item(TableName=SEARCH_TABLE, Key=key).get("Item"), "projection")
    assert set(projected["terms"]["SS"]) >= {"hello", "search", "world"}
    # GIVEN a REMOVE, which the subscriber's filter (INSERT, MODIFY) excludes
    ddb.delete_item(TableName=TABLE, Key=key)
    # THEN the cleanup consumer receives it (the stream moved past it) ...
    until(
        lambda: any(events(p, "REMOVE") for p in proof_lines(local_aws, consumer_group)),
        "the consumer's proof of the REMOVE",
    )
    # AND an INSERT written after it reaches the subscriber (its poller is past the REMOVE) ...
    ddb.put_item(TableName=TABLE, Item={"pk": {"S": "doc#2"}, "sk": {"S": "v1"}, "title": {"S": "After"}})
    until(
        lambda: sum(p["record_count"] for p in proof_lines(local_aws, group)) >= 2,
        "the second INSERT's proof",
    )
    # ... while the subscriber was never invoked for the REMOVE: no proof line of one, the projection kept
    lines = proof_lines(local_aws, group)
    assert not any(events(p, "REMOVE") for p in lines), [p["event_names"] for p in lines]
    assert ddb.get_item(TableName=SEARCH_TABLE, Key=key).get("Item") is not None


def test_logs_and_invoke_reach_a_subscriber_by_name(
    doctable: Callable[..., Result], local_aws: lt.LocalAWS
) -> None:
    # WHEN its logs are read  THEN they are its log group's, its proof lines counted
    logs = doctable("logs", "--env", "dev", "--subscriber", "search", "--since", "1h", "--json")
    assert logs.code == 0, logs.err
    report = logs.json()
    assert (
        report["log_group"] == outputs(local_aws)["SubscriberSearchLogGroup"] and report["proof_lines"] >= 2
    )
    # WHEN a change record is sent to it  THEN its wrapper runs the team's handler: the projection written
    invoked = doctable(
        "invoke", "--env", "dev", "--subscriber", "search", "--event", "insert", "--pk", "doc#9", "--sk", "v1"
    )
    assert invoked.code == 0, invoked.out + invoked.err
    item = (
        local_aws.client("dynamodb")
        .get_item(TableName=SEARCH_TABLE, Key={"pk": {"S": "doc#9"}, "sk": {"S": "v1"}})
        .get("Item")
    )
    assert item is not None
    # AND a subscriber the stack does not have is one line naming the declared ones
    unknown = doctable("logs", "--env", "dev", "--subscriber", "serch")
    assert unknown.code == 2
    assert "has no subscriber 'serch' (did you mean 'search'?); declared: search" in unknown.err


def test_a_read_only_verify_checks_each_subscriber(doctable: Callable[..., Result]) -> None:
    # (the full verify, with its nudges, closed the deploy above)
    read_only = doctable("verify", "--env", "dev", "--read-only", "--json")
    assert read_only.code == 0, read_only.out + read_only.err
    rows = {row["id"]: row for row in read_only.json()["rows"]}
    assert rows["subscriber:search"]["result"] == "PASS", rows["subscriber:search"]
    skipped = {row["id"] for row in read_only.json()["skipped"]}
    assert {"subscriber-nudge:search", "subscriber-excluded:search"} <= skipped, skipped


def kept_batches(aws: lt.LocalAWS, bucket: str) -> list[dict[str, Any]]:
    """The invocation records a failure bucket holds (Lambda's on-failure records, with their payload)."""
    s3 = aws.client("s3")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="aws/lambda/").get("Contents", [])]
    return [json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read()) for key in keys]


def with_a_blob(aws: lt.LocalAWS, pk: str) -> Callable[[], None]:
    """An item listing a blob, written; the returned call deletes the item and waits until the cleanup consumer
    has deleted the blob (polled)."""
    ddb, s3 = aws.client("dynamodb"), aws.client("s3")
    bucket, key = outputs(aws)[names.OUT_BLOB_BUCKET], f"{pk}/v1/attachment.bin"
    s3.put_object(Bucket=bucket, Key=key, Body=b"x")
    item_key = {"pk": {"S": pk}, "sk": {"S": "v1"}}
    blobs = {names.BLOBS_ATTRIBUTE: {"L": [{"S": key}]}}
    ddb.put_item(TableName=TABLE, Item={**item_key, "title": {"S": "With a blob"}, **blobs})

    def removed() -> None:
        ddb.delete_item(TableName=TABLE, Key=item_key)
        until(lambda: s3.list_objects_v2(Bucket=bucket, Prefix=key)["KeyCount"] == 0, f"the cleanup of {key}")

    return removed


def test_a_poison_record_lands_on_the_failure_bucket_while_the_consumer_keeps_cleaning(
    local_aws: lt.LocalAWS,
) -> None:
    ddb = local_aws.client("dynamodb")
    bucket = outputs(local_aws)["SubscriberSearchFailureBucketName"]
    # GIVEN an item listing a blob, then an item whose title is a number, which the search projection refuses
    remove = with_a_blob(local_aws, "doc#cleaned-1")
    ddb.put_item(TableName=TABLE, Item={**POISON, "title": {"N": "42"}})
    # WHEN the first is removed (a REMOVE behind the poison record, which the subscriber's filter excludes)
    # THEN the cleanup consumer goes on past the poison record: the removed item's blob is deleted
    remove()
    # AND after its retry (max_retries = 1) the subscriber's mapping keeps the record on its failure bucket
    (kept,) = until(lambda: kept_batches(local_aws, bucket), "the poison record on the failure bucket")
    assert kept["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert [r["dynamodb"]["Keys"] for r in json.loads(kept["payload"])["Records"]] == [POISON]
    assert ddb.get_item(TableName=SEARCH_TABLE, Key=POISON).get("Item") is None


def test_replay_after_the_fix_brings_the_poison_record_back(
    doctable: Callable[..., Result], local_aws: lt.LocalAWS, settings: Path
) -> None:
    bucket = outputs(local_aws)["SubscriberSearchFailureBucketName"]
    # GIVEN a replay before the fix: the record still fails, so it stays kept
    before = doctable("replay", "--env", "dev", "--subscriber", "search", "--json")
    assert before.code == 1, before.out + before.err
    (still,) = before.json()["objects"]
    assert (before.json()["bucket"], still["succeeded"], len(still["still_failing"])) == (bucket, 0, 1)
    # WHEN the team's fix (a title need not be text: only the summary's words are searched) is sent to the function
    handler = settings.parent / "subscribers" / "search.py"
    handler.write_text(
        handler.read_text() + '\nTEXT_FIELDS = ("summary",)  # the fix: titles are not searched\n'
    )
    sent = doctable("watch", "--env", "dev", "--subscriber", "search", "--once", "--json", "-q")
    assert sent.code == 0, sent.out + sent.err
    assert (sent.json()["subscriber"], sent.json()["function"]) == (
        "search",
        outputs(local_aws)["SubscriberSearchFunctionName"],
    )
    # AND the failure bucket is replayed through the subscriber
    replayed = doctable("replay", "--env", "dev", "--subscriber", "search", "--json")
    assert replayed.code == 0, replayed.out + replayed.err
    assert [(o["records"], o["succeeded"], o["result"]) for o in replayed.json()["objects"]] == [
        (1, 1, "REPLAYED, removed")
    ]
    # THEN the projection holds the record, the failure bucket is empty, and the consumer still cleans
    item = local_aws.client("dynamodb").get_item(TableName=SEARCH_TABLE, Key=POISON).get("Item")
    assert item is not None and item["title"] == {"N": "42"}
    assert kept_batches(local_aws, bucket) == []
    with_a_blob(local_aws, "doc#cleaned-2")()


def test_the_ledger_records_the_subscriber_as_deployed(
    doctable: Callable[..., Result], local_aws: lt.LocalAWS
) -> None:
    result = doctable("ledger", "--env", "dev", "--json")
    assert result.code == 0, result.out + result.err
    (search,) = result.json()["subscribers"]
    found = outputs(local_aws)
    assert (search["name"], search["handler"], search["source"]) == (
        "search",
        "subscribers/search.py:handler",
        "dynamodb",
    )
    assert (search["function"], search["failure_bucket"], search["mapping_uuid"]) == (
        found["SubscriberSearchFunctionName"],
        found["SubscriberSearchFailureBucketName"],
        found["SubscriberSearchMappingUuid"],
    )


# ---- day 2: drift of the subscriber's mapping, and a reader the stack does not own ----
def search_mapping(aws: lt.LocalAWS) -> dict[str, Any]:
    found: dict[str, Any] = aws.client("lambda").get_event_source_mapping(
        UUID=outputs(aws)["SubscriberSearchMappingUuid"]
    )
    return found


def preflight(doctable: Callable[..., Result]) -> tuple[int, dict[str, Any]]:
    result = doctable("preflight", "--env", "dev", "--json")
    return result.code, json.loads(result.out)


def test_drift_of_its_mapping_is_found_then_reconciled(
    doctable: Callable[..., Result], local_aws: lt.LocalAWS
) -> None:
    # GIVEN its mapping disabled and its filter changed behind the stack, through the Lambda API
    uuid = search_mapping(local_aws)["UUID"]
    local_aws.client("lambda").update_event_source_mapping(
        UUID=uuid, Enabled=False, FilterCriteria={"Filters": [{"Pattern": '{"eventName": ["REMOVE"]}'}]}
    )
    # THEN preflight names both, by code
    code, record = preflight(doctable)
    assert (code, {f["code"] for f in record["drift"]}) == (0, DRIFT)
    # WHEN reconcile applies  THEN it restored both in place: enabled again, the declared filter back
    result = doctable("reconcile", "--env", "dev", "--apply", "--json")
    report = result.json()
    assert result.code == 0, report
    assert {d.get("code") for d in report["drift"]} == DRIFT and report["remaining"] == []
    live = search_mapping(local_aws)
    assert (live["UUID"], live["State"] in ("Enabled", "Enabling")) == (uuid, True)
    assert [json.loads(f["Pattern"]) for f in live["FilterCriteria"]["Filters"]] == [DECLARED]
    # AND preflight finds no drift any more
    assert {f["code"] for f in preflight(doctable)[1]["drift"]} == set()


def foreign_mapping(aws: lt.LocalAWS, stream_arn: str) -> str:
    """A function of someone else's, made with the Lambda API, and its mapping on the stack's stream: its UUID."""
    iam, lam = aws.client("iam"), aws.client("lambda")
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ],
    }
    role = iam.create_role(RoleName=f"{FOREIGN}-role", AssumeRolePolicyDocument=json.dumps(trust))["Role"]
    reads = ["dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"]
    statements = [
        {"Effect": "Allow", "Action": reads, "Resource": stream_arn},
        {"Effect": "Allow", "Action": "dynamodb:ListStreams", "Resource": "*"},
    ]
    iam.put_role_policy(
        RoleName=f"{FOREIGN}-role",
        PolicyName="stream-reads",
        PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": statements}),
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("noop.py", NOOP)
    lam.create_function(
        FunctionName=FOREIGN, Runtime="python3.13", Role=role["Arn"], Handler="noop.handler",
        Code={"ZipFile": buffer.getvalue()},
    )  # fmt: skip
    mapping = lam.create_event_source_mapping(
        FunctionName=FOREIGN, EventSourceArn=stream_arn, StartingPosition="LATEST"
    )
    return str(mapping["UUID"])


def test_a_third_reader_made_behind_the_stack_stops_preflight_and_the_deploy(
    doctable: Callable[..., Result], local_aws: lt.LocalAWS
) -> None:
    def readers(record: dict[str, Any]) -> list[dict[str, Any]]:
        return [f for f in record["findings"] if f["code"].startswith("subscriber.readers_")]

    # GIVEN the cleanup consumer and the search subscriber on the stream: two readers, nothing stops
    code, record = preflight(doctable)
    assert (code, record["go"], readers(record)) == (0, True, [])
    # WHEN a mapping the stack did not make reads the stream too
    uuid = foreign_mapping(local_aws, outputs(local_aws)["StreamArn"])
    code, record = preflight(doctable)
    # THEN preflight stops (exit 1, go false) on three readers, the foreign one named by function and mapping UUID
    (found,) = readers(record)
    assert (code, record["go"], found["level"], found["code"], found["after"]) == (
        1,
        False,
        "STOP",
        EXCEEDED,
        2,
    )
    assert found["before"] == [
        {"reader": "consumer", "function": "built-in"},
        {"reader": "subscriber", "name": "search"},
        {"reader": "foreign", "uuid": uuid, "function": FOREIGN},
    ]
    # AND the deploy is refused by its gate: the STOP's exit code, nothing deployed
    stacks = local_aws.client("cloudformation")
    before = stacks.describe_stacks(StackName=STACK)["Stacks"][0].get("LastUpdatedTime")
    result = doctable("deploy", "--env", "dev", "--json", "--no-verify")
    report = json.loads(result.out)
    assert (result.code, report["exit"]) == (1, 1), result.out + result.err
    assert any(m.startswith(f"STOP {EXCEEDED}:") for m in report["messages"]), report["messages"]
    assert stacks.describe_stacks(StackName=STACK)["Stacks"][0].get("LastUpdatedTime") == before
    # WHEN the mapping that is not the stack's is deleted  THEN preflight is clean again
    local_aws.client("lambda").delete_event_source_mapping(UUID=uuid)
    code, record = preflight(doctable)
    assert (code, record["go"], readers(record)) == (0, True, [])
