"""A table's tags on the local AWS as DynamoDB checks and keeps them (local/services/dynamodb/tags.py), and an
UpdateTable that changes nothing refused (local/services/dynamodb/options.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from local import state
from tests.unit.test_local_legacy_conditions import CONFIG

pytestmark = pytest.mark.unit


@pytest.fixture
def ddb(local_moto: None) -> Iterator[tuple[Any, str]]:
    """GIVEN a table with one tag, and its ARN."""
    client = boto3.client("dynamodb", region_name=state.REGION, config=CONFIG)
    table = client.create_table(
        TableName="tbl",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        Tags=[{"Key": "team", "Value": "docs"}],
    )
    yield client, table["TableDescription"]["TableArn"]


def error(call: Any, **request: Any) -> tuple[str, str]:
    with pytest.raises(ClientError) as caught:
        call(**request)
    return caught.value.response["Error"]["Code"], caught.value.response["Error"]["Message"]


def tags(client: Any, arn: str) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in client.list_tags_of_resource(ResourceArn=arn)["Tags"]}


def test_a_tag_of_a_key_the_table_has_replaces_it_and_all_tags_are_listed_at_once(
    ddb: tuple[Any, str],
) -> None:
    client, arn = ddb
    client.tag_resource(ResourceArn=arn, Tags=[{"Key": "team", "Value": "search"}])
    client.tag_resource(ResourceArn=arn, Tags=[{"Key": f"k{i}", "Value": "v"} for i in range(30)])
    listed = tags(client, arn)
    assert listed["team"] == "search" and len(listed) == 31
    # AND a tag past the 50th is refused, nothing of the request applied
    too_many = [{"Key": f"n{i}", "Value": "v"} for i in range(20)]
    assert error(client.tag_resource, ResourceArn=arn, Tags=too_many) == (
        "ValidationException",
        "Number of Tags exceed the current limit for the provided ResourceArn",
    )
    assert len(tags(client, arn)) == 31


def test_a_tag_dynamodb_refuses_is_refused_in_its_words(ddb: tuple[Any, str]) -> None:
    client, arn = ddb
    for tag, message in (
        ({"Key": "hi!", "Value": "v"}, "The Tag Key provided is invalid, Key: hi!"),
        ({"Key": "k", "Value": "100%"}, "The Tag Value provided is invalid, Value: 100%"),
        ({"Key": "aws:x", "Value": "v"}, "Tag Key cannot be prefixed with aws:, Key: aws:x"),
    ):
        assert error(client.tag_resource, ResourceArn=arn, Tags=[{"Key": "ok", "Value": "v"}, tag]) == (
            "ValidationException",
            message,
        )
    duplicate = [{"Key": "d", "Value": "1"}, {"Key": "d", "Value": "2"}]
    assert error(client.tag_resource, ResourceArn=arn, Tags=duplicate)[1].endswith(
        "Duplicate Tag Key found d"
    )
    assert (
        error(client.tag_resource, ResourceArn=arn, Tags=[])[1]
        == "Atleast one Tag needs to be provided as Input."
    )
    # BUT letters of any script, spaces and + - = . _ : / @ are a tag's
    client.tag_resource(ResourceArn=arn, Tags=[{"Key": "ключ café", "Value": "a+b-c=d.e_f:g/h@i"}])
    # AND none of the refused requests applied anything
    assert set(tags(client, arn)) == {"team", "ключ café"}


def test_the_resource_arn_is_a_tables_that_exists(ddb: tuple[Any, str]) -> None:
    client, arn = ddb
    tag = [{"Key": "k", "Value": "v"}]
    assert error(client.tag_resource, ResourceArn="tbl", Tags=tag) == (
        "ValidationException",
        "One or more parameter values were invalid: ARNs must start with 'arn:': tbl",
    )
    index = arn + "/index/by-g"
    code, message = error(client.list_tags_of_resource, ResourceArn=index)
    assert (code, message.split(". ")[0]) == (
        "ValidationException",
        "One or more parameter values were invalid: Invalid resource arn provided, only table or stream is accepted",
    )
    assert error(client.tag_resource, ResourceArn=arn + "x", Tags=tag) == (
        "ResourceNotFoundException",
        f"Requested resource not found: ResourceArn: {arn}x not found",
    )


def test_a_table_created_with_tags_dynamodb_refuses_is_not_created(ddb: tuple[Any, str]) -> None:
    client, _ = ddb
    code, message = error(
        client.create_table,
        TableName="many",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        Tags=[{"Key": str(i), "Value": "v"} for i in range(51)],
    )
    assert (code, message) == (
        "ValidationException",
        "Number of Tags exceed the current limit for the provided ResourceArn",
    )
    assert "many" not in client.list_tables()["TableNames"]


def test_an_update_table_that_changes_nothing_is_refused(ddb: tuple[Any, str]) -> None:
    client, _ = ddb
    for request in ({}, {"GlobalSecondaryIndexUpdates": []}):
        code, message = error(client.update_table, TableName="tbl", **request)
        assert code == "ValidationException"
        assert message.startswith("At least one of ProvisionedThroughput, BillingMode, UpdateStreamEnabled")
