"""A team's subscriber deployed beside the cleanup consumer by `doctable deploy` into the local AWS: the example
search projection (examples/subscribers/search.py) declared in the settings file with its filter, grants and
environment; an INSERT reaches it through doctable's wrapper (its own proof line, the projection written), a REMOVE
its filter excludes does not invoke it, and the cleanup consumer keeps cleaning.

The tests run in file order and share the stack (table_base ``subs``).
"""

from __future__ import annotations

import shutil
import time
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
grants = [{{resource = "arn:aws:dynamodb:{lt.REGION}:{lt.ACCOUNT}:table/{SEARCH_TABLE}", actions = ["dynamodb:PutItem", "dynamodb:DeleteItem"]}}]

[environments.dev.subscribers.search.environment]
SEARCH_TABLE = "{SEARCH_TABLE}"
"""
BOUND = 120.0  # seconds a delivery may take on the local AWS


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
    result = doctable("deploy", "--env", "dev", "--json", "--verify-timeout", "60")
    assert result.code == 0, result.out + result.err
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


def test_verify_checks_each_subscriber(doctable: Callable[..., Result]) -> None:
    result = doctable("verify", "--env", "dev", "--read-only", "--json")
    assert result.code == 0, result.out + result.err
    rows = {row["id"]: row for row in result.json()["rows"]}
    assert rows["subscriber:search"]["result"] == "PASS", rows["subscriber:search"]
