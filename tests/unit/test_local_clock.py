"""The local AWS's clock control (local/clock.py): UpdateTimeToLive's change interval refuses a second change as
AWS does, until the control says the interval has passed for that table (and only that table). Through boto3
against moto in process with the local AWS's adaptations; the WSGI answers of the control endpoint directly."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from local import clock
from local.services.dynamodb.tables import TTL_RATE_LIMITED
from tests.unit.test_local_kinesis_destination import isolated_services

pytestmark = pytest.mark.unit

REGIONS = ("us-east-1", "eu-west-1")


@pytest.fixture
def ddb(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x")):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("DOCTABLE_LOCAL_TTL_CHANGE_INTERVAL_SECONDS", raising=False)  # AWS's hour
    with mock_aws(), isolated_services():
        clients = {r: boto3.client("dynamodb", region_name=r) for r in REGIONS}
        for client in clients.values():
            for name in ("docs", "other"):
                client.create_table(
                    TableName=name,
                    KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                    AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                    BillingMode="PAY_PER_REQUEST",
                )
        yield clients


def set_ttl(client: Any, table: str, enabled: bool) -> None:
    client.update_time_to_live(
        TableName=table, TimeToLiveSpecification={"Enabled": enabled, "AttributeName": "expires_at"}
    )


def refused(client: Any, table: str, enabled: bool) -> str:
    with pytest.raises(ClientError) as caught:
        set_ttl(client, table, enabled)
    return str(caught.value.response["Error"]["Message"])


def post(body: bytes, method: str = "POST") -> tuple[str, dict[str, Any]]:
    said: list[str] = []
    answer = clock.handle(
        {"REQUEST_METHOD": method, "wsgi.input": io.BytesIO(body)},
        lambda status, headers: said.append(status),
        body,
    )
    return said[0], json.loads(b"".join(answer))


def test_a_second_ttl_change_is_refused_until_the_interval_has_passed(ddb: dict[str, Any]) -> None:
    home = ddb["us-east-1"]
    set_ttl(home, "docs", True)
    set_ttl(home, "other", True)
    assert refused(home, "docs", False) == TTL_RATE_LIMITED
    # WHEN the clock control says the interval passed for docs THEN docs changes, in every region, and other not
    set_ttl(ddb["eu-west-1"], "docs", True)
    assert clock.ttl_interval_elapsed("docs") == sorted(REGIONS)
    set_ttl(home, "docs", False)
    set_ttl(ddb["eu-west-1"], "docs", False)
    assert refused(home, "other", False) == TTL_RATE_LIMITED
    # the change just made starts a new interval
    assert refused(home, "docs", True) == TTL_RATE_LIMITED


def test_a_ttl_change_naming_another_attribute_is_refused_before_the_interval(ddb: dict[str, Any]) -> None:
    # GIVEN TTL enabled on expires_at, within the interval of its change
    home = ddb["us-east-1"]
    set_ttl(home, "docs", True)
    # WHEN a change names another attribute, to disable or to enable  THEN that is the refusal, not the interval
    for enabled in (False, True):
        with pytest.raises(ClientError) as caught:
            home.update_time_to_live(
                TableName="docs", TimeToLiveSpecification={"Enabled": enabled, "AttributeName": "dog"}
            )
        message = caught.value.response["Error"]["Message"]
        assert (
            message
            == "TimeToLive is active on a different AttributeName: current AttributeName is expires_at"
        )
    # AND the same attribute again is 'already enabled', also before the interval
    with pytest.raises(ClientError) as caught:
        set_ttl(home, "docs", True)
    assert caught.value.response["Error"]["Message"] == "TimeToLive is already enabled"


def test_the_control_endpoint_answers_with_the_regions_or_says_what_is_wrong(ddb: dict[str, Any]) -> None:
    assert post(b'{"ttl_interval_elapsed": "docs"}') == ("200 OK", {"tables": sorted(REGIONS)})
    status, body = post(b'{"ttl_interval_elapsed": "missing"}')
    assert (status, body["error"]) == ("404 Not Found", "no table named 'missing'")
    for bad in (b"{", b'{"ttl_interval_elapsed": ""}', b'{"ttl_interval_elapsed": "docs", "x": 1}', b"[]"):
        status, body = post(bad)
        assert status == "400 Bad Request" and body["error"], bad
    assert post(b"", method="GET")[0] == "405 Method Not Allowed"


def test_a_held_backfill_stays_creating_until_released_and_then_ends_as_before(
    ddb: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from local.services.dynamodb import index_lifecycle as lifecycle

    index_clock = lifecycle.ManualClock()
    monkeypatch.setattr(lifecycle, "CLOCK", index_clock)
    home = ddb["us-east-1"]
    home.put_item(TableName="docs", Item={"pk": {"S": "a"}, "g": {"S": "x"}})
    # GIVEN the control holds the backfill of docs, and docs gets an index
    assert post(b'{"hold_backfill": "docs"}') == ("200 OK", {"tables": sorted(REGIONS)})
    home.update_table(
        TableName="docs",
        AttributeDefinitions=[{"AttributeName": "g", "AttributeType": "S"}],
        GlobalSecondaryIndexUpdates=[{"Create": {"IndexName": "byG", "KeySchema": [
            {"AttributeName": "g", "KeyType": "HASH"}], "Projection": {"ProjectionType": "ALL"}}}],
    )  # fmt: skip

    def status() -> str:
        return str(home.describe_table(TableName="docs")["Table"]["GlobalSecondaryIndexes"][0]["IndexStatus"])

    index_clock.advance(lifecycle.backfill_seconds() + 1)
    # THEN past its backfill time it is still CREATING, and a query on it is refused
    assert status() == "CREATING"
    with pytest.raises(ClientError, match="backfilling global secondary index: byG"):
        home.query(TableName="docs", IndexName="byG", KeyConditionExpression="g = :g",
                   ExpressionAttributeValues={":g": {"S": "x"}})  # fmt: skip
    # WHEN it is released THEN it is ACTIVE (its time has passed), and the control says so for each region
    assert post(b'{"release_backfill": "docs"}') == ("200 OK", {"tables": sorted(REGIONS)})
    assert status() == "ACTIVE"


def test_the_clock_control_moves_the_reported_time_ahead_and_back() -> None:
    # GIVEN the real time  WHEN a test moves the local AWS's clock two hours ahead
    try:
        assert post(b'{"advance_seconds": 7200}') == ("200 OK", {"offset_seconds": 7200.0})
        # THEN the time it reports (its answers' Date header) is two hours ahead, to within the call's own time
        assert 7199 <= clock.now() - time.time() <= 7201
        for bad in (b'{"advance_seconds": -1}', b'{"advance_seconds": "1h"}', b'{"advance_seconds": true}'):
            assert post(bad)[0] == "400 Bad Request", bad
    finally:
        # AND a reset makes it the real time again
        assert post(b'{"reset_clock": true}') == ("200 OK", {"offset_seconds": 0.0})
