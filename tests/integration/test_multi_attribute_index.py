"""A GSI with a multi-attribute key (2 partition and 3 sort attributes) on the local AWS, end to end: `doctable
deploy` creates it through the real CDK CLI (its KeySchema: the HASH entries, then the RANGE entries, in order),
verify queries it, the application's DocClient writes documents and queries it by a dict of key values (an item
lacking a key attribute is not in it; a key DynamoDB refuses is refused before any call, and the local AWS refuses
the same key sent as is), and a change of the sort attributes' order is `index.replaced`, stopped by the gate. (The
deploy's own verify is the whole contract's run: every row passed, the index queried among them.)

The tests run in file order and share one stack (table_base ``mak``, env stg, no stream: the index is the subject).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from doctable.client import DocClient, RetryPolicy, ValidationError
from local import api
from tests.support import localaws as lt
from tests.support.cli import Result, run_doctable

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

ENV, TABLE_BASE, TABLE = "stg", "mak", "mak-stg"
HEAD = f'[defaults]\ntable_base = "{TABLE_BASE}"\n\n[environments.{ENV}]\n'
MATCH = '\n[environments.stg.indexes.byMatch]\npartition = ["tenant:S", "region:S"]\nsort = [{}]\n'
SORT = '"year:N", "round:S", "seq:N"'
KEY_SCHEMA = [
    {"AttributeName": "tenant", "KeyType": "HASH"},
    {"AttributeName": "region", "KeyType": "HASH"},
    {"AttributeName": "year", "KeyType": "RANGE"},
    {"AttributeName": "round", "KeyType": "RANGE"},
    {"AttributeName": "seq", "KeyType": "RANGE"},
]
EU = {"tenant": "a", "region": "eu"}


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mak-settings") / "doctable.toml"
    path.write_text(HEAD + MATCH.format(SORT))
    return path


@pytest.fixture(scope="module")
def doctable(
    bootstrapped: api.CdkRun,
    local_aws: lt.LocalAWS,
    settings: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[..., Result]:
    state = tmp_path_factory.mktemp("mak-state")
    env = {
        **local_aws.env,
        "DOCTABLE_CONFIG": str(settings),
        "DOCTABLE_STATE_DIR": str(state / "state"),
        "DOCTABLE_LEDGER_DIR": str(state / "ledger"),
    }

    def run(*args: str) -> Result:
        return run_doctable(list(args), env=env, timeout=850)

    return run


@pytest.fixture(scope="module")
def docs(local_aws: lt.LocalAWS) -> Callable[[], DocClient]:
    def connect() -> DocClient:
        session = boto3.session.Session(
            aws_access_key_id=lt.api.ACCESS_KEY_ID,
            aws_secret_access_key=lt.api.SECRET_ACCESS_KEY,
            region_name=lt.REGION,
        )
        return DocClient.from_stack(
            ENV,
            table_base=TABLE_BASE,
            session=session,
            endpoint_url=local_aws.info.url,
            verify=local_aws.ca_bundle,
            retry=RetryPolicy(sleep=lambda _: None),
        )

    return connect


def gsis(aws: lt.LocalAWS) -> dict[str, dict[str, Any]]:
    table = aws.client("dynamodb").describe_table(TableName=TABLE)["Table"]
    return {g["IndexName"]: g for g in table.get("GlobalSecondaryIndexes", [])}


def test_a_gsi_of_two_partition_and_three_sort_attributes_deploys_and_verify_queries_it(
    doctable: Callable[..., Result], local_aws: lt.LocalAWS
) -> None:
    # WHEN the environment declaring byMatch is deployed
    result = doctable("deploy", "--env", ENV, "--json", "--verify-timeout", "60")
    report = result.json()
    assert result.code == 0 and report["verified"] is True, result.out + result.err
    assert [r["id"] for r in report["verify"]["rows"] if r["result"] == "FAIL"] == []
    # THEN the live index is ACTIVE with its key schema in order, each attribute of its type
    live = gsis(local_aws)["byMatch"]
    assert live["IndexStatus"] == "ACTIVE" and live["KeySchema"] == KEY_SCHEMA
    table = local_aws.client("dynamodb").describe_table(TableName=TABLE)["Table"]
    types = {a["AttributeName"]: a["AttributeType"] for a in table["AttributeDefinitions"]}
    assert {a: types[a] for a in ("tenant", "region", "year", "round", "seq")} == {
        "tenant": "S", "region": "S", "year": "N", "round": "S", "seq": "N"
    }  # fmt: skip
    # AND verify queried it (= on each partition attribute, the sort attributes left to right)
    rows = {r["id"]: r for r in report["verify"]["rows"]}
    assert rows["gsi-query"]["result"] == "PASS" and "byMatch count 1" in rows["gsi-query"]["observed"]


def test_the_client_queries_it_by_a_dict_of_key_values(
    docs: Callable[[], DocClient], local_aws: lt.LocalAWS
) -> None:
    client = docs()
    # GIVEN six matches of tenant a (five in eu) and one document lacking seq
    for n in range(6):
        region = "eu" if n < 5 else "us"
        client.put(
            f"m{n}",
            "v",
            {"tenant": "a", "region": region, "year": 2024 + n % 2, "round": f"r{n // 3}", "seq": n},
        )
    client.put("partial", "v", {**EU, "year": 2024, "round": "r0"})

    def pks(key: dict[str, Any], **options: Any) -> list[str]:
        return [d.pk for d in client.query_index("byMatch", key, **options)]

    # THEN the whole partition, ordered by year, round, seq, without the document lacking a key attribute
    assert pks(EU) == ["m0", "m2", "m4", "m1", "m3"]
    # AND the sort attributes left to right: = on each but the last, a range on the last
    assert pks({**EU, "year": 2024}) == ["m0", "m2", "m4"]
    assert pks({**EU, "year": 2024, "round": "r0", "seq": (">=", 1)}) == ["m2"]
    assert pks({**EU, "year": 2024, "round": ("begins_with", "r1")}) == ["m4"]
    assert pks({**EU, "year": ("between", 2025, 2026)}) == ["m1", "m3"]
    # AND a limit pages through the index's LastEvaluatedKey
    assert pks(EU, limit=3) == ["m0", "m2", "m4"] and pks(EU, limit=4, ascending=False) == [
        "m3",
        "m1",
        "m4",
        "m2",
    ]
    # AND a key DynamoDB refuses is refused before any call
    with pytest.raises(ValidationError, match="sort attribute 'round' is given without 'year' before it"):
        client.query_index("byMatch", {**EU, "round": "r0"})
    # AND the local AWS refuses the same query sent as is (DynamoDB's rule, answered by the local AWS)
    ddb = local_aws.client("dynamodb")
    for expression, values in (
        ("tenant = :t", {":t": {"S": "a"}}),  # a partition attribute missing
        (
            "tenant = :t AND #r = :r AND #o = :o",
            {":t": {"S": "a"}, ":r": {"S": "eu"}, ":o": {"S": "r0"}},
        ),  # skipped
        (  # a range before the last sort attribute given
            "tenant = :t AND #r = :r AND #y > :y AND #o = :o",
            {":t": {"S": "a"}, ":r": {"S": "eu"}, ":y": {"N": "1"}, ":o": {"S": "r0"}},
        ),
    ):
        used = {n: a for n, a in (("#r", "region"), ("#o", "round"), ("#y", "year")) if n in expression}
        with pytest.raises(ClientError) as refused:
            ddb.query(
                TableName=TABLE,
                IndexName="byMatch",
                KeyConditionExpression=expression,
                ExpressionAttributeValues=values,
                **({"ExpressionAttributeNames": used} if used else {}),
            )
        assert refused.value.response["Error"]["Code"] == "ValidationException", expression


def test_reordering_its_sort_attributes_replaces_it_through_the_gate(
    doctable: Callable[..., Result], settings: Path, local_aws: lt.LocalAWS
) -> None:
    # GIVEN the sort attributes' order changed
    settings.write_text(HEAD + MATCH.format('"round:S", "year:N", "seq:N"'))
    # WHEN deployed without --allow-destructive: refused as index.replaced, nothing changed
    refused = doctable("deploy", "--env", ENV, "--json", "--no-verify")
    assert refused.code == 3, refused.out + refused.err
    assert refused.json()["refused"] == ["index.replaced"]
    assert gsis(local_aws)["byMatch"]["KeySchema"] == KEY_SCHEMA
    settings.write_text(HEAD + MATCH.format(SORT))
