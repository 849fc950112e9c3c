"""The local AWS's global tables (local/services/dynamodb/replication.py, dynamodb_replica_api.py): replicas added and
removed with UpdateTable ReplicaUpdates, every write replicated after a delay (last writer wins), each replica's
own stream, and DynamoDB's refusals. Through boto3 against moto in process, in three regions; a small replication
delay, waited for with a condition poll. Messages are compared with the module's declared AWS wording."""

from __future__ import annotations

import io
import json
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID as ACCOUNT
from moto.dynamodb.models import dynamodb_backends

from local.auth.middleware import AuthMiddleware
from local.pollers import streams as esm
from local.runtime.runner import InvokeResult
from local.services.awslambda import mappings
from local.services.cloudformation import global_table as cfn_global_table
from local.services.dynamodb import replicas as api
from local.services.dynamodb import replication as replicas
from local.services.dynamodb import ttl
from local.services.dynamodb.writes import WRITE_LOCK
from tests.support import signed
from tests.support.localaws import wait_for
from tests.unit.test_local_kinesis_destination import isolated_services

pytestmark = pytest.mark.unit

A, B, C = "us-east-1", "us-west-2", "eu-west-1"
DELAY_MS = 50


@dataclass
class Aws:
    ddb: Callable[[str], Any]


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    """The local AWS's moto adaptations in process, replication after DELAY_MS."""
    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x")):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    replicas.reset()
    replicas.set_delay_ms(DELAY_MS)
    clients: dict[tuple[str, str], Any] = {}

    def client(service: str, region: str) -> Any:
        if (service, region) not in clients:
            clients[service, region] = boto3.client(service, region_name=region)
        return clients[service, region]

    with isolated_services(), mock_aws():
        try:
            yield Aws(lambda r: client("dynamodb", r))
        finally:
            replicas.reset()
            replicas.set_delay_ms(replicas.DEFAULT_DELAY_MS)


def _table(aws: Aws, region: str = A, name: str = "tbl", **extra: Any) -> None:
    aws.ddb(region).create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        **extra,
    )


def _add(aws: Aws, *regions: str, source: str = A, name: str = "tbl") -> None:
    for region in regions:
        aws.ddb(source).update_table(TableName=name, ReplicaUpdates=[{"Create": {"RegionName": region}}])


def _get(aws: Aws, region: str, key: str, name: str = "tbl") -> dict[str, Any] | None:
    item = aws.ddb(region).get_item(TableName=name, Key={"pk": {"S": key}}, ConsistentRead=True).get("Item")
    return item  # type: ignore[no-any-return]


def _value(aws: Aws, region: str, key: str) -> str | None:
    item = _get(aws, region, key)
    return None if item is None else item.get("v", {}).get("S")


def _settled() -> bool:
    return replicas.REGISTRY.pending() == 0


def _records(aws: Aws, region: str, name: str = "tbl") -> list[dict[str, Any]]:
    """Every record of the table's stream in ``region``, oldest first, as GetRecords answers them (read from the
    shard: moto 5.2.5 in process does not route the DynamoDB Streams API)."""
    shard = dynamodb_backends[ACCOUNT][region].tables[name].stream_shard
    assert shard is not None
    return [record.to_json() for record in shard.items]


def _events(aws: Aws, region: str) -> list[tuple[str, str | None, str | None]]:
    """(eventName, old v, new v) of each record of the table's stream in ``region``."""
    out = []
    for record in _records(aws, region):
        change = record["dynamodb"]
        old = change.get("OldImage", {}).get("v", {}).get("S")
        new = change.get("NewImage", {}).get("v", {}).get("S")
        out.append((record["eventName"], old, new))
    return out


def _error(call: Callable[..., Any], **kwargs: Any) -> tuple[str, str]:
    with pytest.raises(ClientError) as raised:
        call(**kwargs)
    return raised.value.response["Error"]["Code"], raised.value.response["Error"]["Message"]


def _put(aws: Aws, region: str, key: str, value: str) -> None:
    aws.ddb(region).put_item(TableName="tbl", Item={"pk": {"S": key}, "v": {"S": value}})


# ------------------------------------------------------------------------------------------ replication
def test_a_put_in_one_region_appears_in_the_others(aws: Aws) -> None:
    # GIVEN a table in A with replicas in B and C
    _table(aws)
    _add(aws, B, C)
    # WHEN an item is put in A
    _put(aws, A, "k", "one")
    # THEN B and C hold it after the replication delay
    wait_for(lambda: _value(aws, B, "k") == "one" and _value(aws, C, "k") == "one", timeout=10)
    # AND each region's DescribeTable lists the other regions' replicas, ACTIVE, version 2019.11.21
    for region in (A, B, C):
        table = aws.ddb(region).describe_table(TableName="tbl")["Table"]
        assert table["GlobalTableVersion"] == "2019.11.21"
        others = sorted({A, B, C} - {region})
        assert sorted(r["RegionName"] for r in table["Replicas"]) == others
        assert {r["ReplicaStatus"] for r in table["Replicas"]} == {"ACTIVE"}
        assert table["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    # AND every replica has a stream of its own
    arns = {aws.ddb(r).describe_table(TableName="tbl")["Table"]["LatestStreamArn"] for r in (A, B, C)}
    assert len(arns) == 3


def test_updates_and_deletes_replicate_and_each_stream_records_them(aws: Aws) -> None:
    # GIVEN a table in A with a replica in B, and an item written in A and replicated
    _table(aws)
    _add(aws, B)
    _put(aws, A, "k", "one")
    wait_for(lambda: _value(aws, B, "k") == "one", timeout=10)
    # WHEN B updates the item and then A deletes it
    aws.ddb(B).update_item(
        TableName="tbl",
        Key={"pk": {"S": "k"}},
        UpdateExpression="SET v = :v",
        ExpressionAttributeValues={":v": {"S": "two"}},
    )
    wait_for(lambda: _value(aws, A, "k") == "two", timeout=10)
    aws.ddb(A).delete_item(TableName="tbl", Key={"pk": {"S": "k"}})
    wait_for(lambda: _get(aws, B, "k") is None, timeout=10)
    # THEN each region's stream holds the three changes, images as they were in that region
    expected = [("INSERT", None, "one"), ("MODIFY", "one", "two"), ("REMOVE", "two", None)]
    assert _events(aws, A) == expected
    assert _events(aws, B) == expected
    # AND a record is its own region's
    assert {r["awsRegion"] for r in _records(aws, B)} == {B}


def test_batch_and_transaction_writes_replicate(aws: Aws) -> None:
    # GIVEN a global table in A and B holding an item
    _table(aws)
    _add(aws, B)
    _put(aws, A, "gone", "x")
    wait_for(lambda: _get(aws, B, "gone") is not None, timeout=10)
    # WHEN A writes a batch and B commits a transaction
    aws.ddb(A).batch_write_item(
        RequestItems={
            "tbl": [
                {"PutRequest": {"Item": {"pk": {"S": "b1"}, "v": {"S": "batch"}}}},
                {"PutRequest": {"Item": {"pk": {"S": "b2"}, "v": {"S": "batch"}}}},
            ]
        }
    )
    aws.ddb(B).transact_write_items(
        TransactItems=[
            {"Put": {"TableName": "tbl", "Item": {"pk": {"S": "t1"}, "v": {"S": "transaction"}}}},
            {"Delete": {"TableName": "tbl", "Key": {"pk": {"S": "gone"}}}},
        ]
    )
    # THEN both regions end with the same items
    wait_for(lambda: _value(aws, B, "b1") == "batch" and _value(aws, B, "b2") == "batch", timeout=10)
    wait_for(lambda: _value(aws, A, "t1") == "transaction" and _get(aws, A, "gone") is None, timeout=10)


def test_a_failed_transaction_replicates_nothing(aws: Aws) -> None:
    # GIVEN a global table in A and B
    _table(aws)
    _add(aws, B)
    # WHEN a transaction in A fails its condition
    with pytest.raises(ClientError):
        aws.ddb(A).transact_write_items(
            TransactItems=[
                {"Put": {"TableName": "tbl", "Item": {"pk": {"S": "t1"}}}},
                {
                    "ConditionCheck": {
                        "TableName": "tbl",
                        "Key": {"pk": {"S": "missing"}},
                        "ConditionExpression": "attribute_exists(pk)",
                    }
                },
            ]
        )
    # THEN nothing is on its way to B
    assert replicas.REGISTRY.pending() == 0
    assert _get(aws, B, "t1") is None


def test_last_writer_wins_and_the_loser_leaves_no_record_where_it_lost(aws: Aws) -> None:
    # GIVEN a global table in A and B, and writes held back until the test lets them go
    _table(aws)
    _add(aws, B)
    replicas.set_delay_ms(60_000)
    # WHEN A writes the item and then B writes it, before either has replicated
    _put(aws, A, "k", "from-a")
    _put(aws, B, "k", "from-b")
    assert (_value(aws, A, "k"), _value(aws, B, "k"), replicas.REGISTRY.pending()) == ("from-a", "from-b", 2)
    replicas.REGISTRY.flush()
    # THEN both regions end with B's (the later) write
    wait_for(lambda: _value(aws, A, "k") == "from-b", timeout=10)
    wait_for(_settled, timeout=10)
    assert _value(aws, B, "k") == "from-b"
    # AND A's stream shows its own write replaced by B's, while B's shows only its own: A's write lost there
    assert _events(aws, A) == [("INSERT", None, "from-a"), ("MODIFY", "from-a", "from-b")]
    assert _events(aws, B) == [("INSERT", None, "from-b")]


def test_one_items_writes_land_in_order(aws: Aws) -> None:
    # GIVEN a global table in A and B
    _table(aws)
    _add(aws, B)
    # WHEN A writes one item ten times in a row
    for n in range(10):
        _put(aws, A, "k", str(n))
    # THEN B ends with the last value, having gone through every one in order
    wait_for(lambda: _value(aws, B, "k") == "9", timeout=10)
    assert [new for _, _, new in _events(aws, B)] == [str(n) for n in range(10)]


def test_a_replicated_write_is_not_sent_back(aws: Aws) -> None:
    # GIVEN a global table in A and B
    _table(aws)
    _add(aws, B)
    # WHEN A writes an item and it reaches B
    _put(aws, A, "k", "one")
    wait_for(lambda: _value(aws, B, "k") == "one", timeout=10)
    with WRITE_LOCK:  # the replicated write's application (and anything it queued) is over
        pass
    # THEN nothing is on its way back, and A's stream holds its own write only
    assert replicas.REGISTRY.pending() == 0
    assert _events(aws, A) == [("INSERT", None, "one")]


def test_a_ttl_deletion_replicates_as_an_ordinary_remove(aws: Aws) -> None:
    # GIVEN a global table in A and B with TTL enabled in B (a setting every replica shares)
    _table(aws)
    _add(aws, B)
    aws.ddb(B).update_time_to_live(
        TableName="tbl", TimeToLiveSpecification={"Enabled": True, "AttributeName": "exp"}
    )
    assert (
        aws.ddb(A).describe_time_to_live(TableName="tbl")["TimeToLiveDescription"]["TimeToLiveStatus"]
        == "ENABLED"
    )
    past = str(int(time.time()) - 60)
    aws.ddb(A).put_item(TableName="tbl", Item={"pk": {"S": "old"}, "exp": {"N": past}})
    wait_for(lambda: _get(aws, B, "old") is not None, timeout=10)
    # WHEN the TTL sweeper runs
    assert ttl.sweep_once() == 1
    # THEN the item expires in the first region, with the TTL service's identity in its stream
    removed = [r for r in _records(aws, A) if r["eventName"] == "REMOVE"]
    assert [r["userIdentity"] for r in removed] == [
        {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
    ]
    # AND the deletion reaches B as an ordinary REMOVE (no userIdentity)
    wait_for(lambda: _get(aws, B, "old") is None, timeout=10)
    replicated = [r for r in _records(aws, B) if r["eventName"] == "REMOVE"]
    assert len(replicated) == 1 and "userIdentity" not in replicated[0]


# ------------------------------------------------------------------------------------------ replicas
def test_a_replica_added_to_a_table_with_items_gets_them_without_stream_records(aws: Aws) -> None:
    # GIVEN a table without a stream, holding three items, with a GSI
    aws.ddb(A).create_table(
        TableName="tbl",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "v", "AttributeType": "S"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by-v",
                "KeySchema": [{"AttributeName": "v", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    for key in ("a", "b", "c"):
        _put(aws, A, key, "x")
    # WHEN a replica is added in B
    _add(aws, B)
    # THEN B holds the three items at once, and its stream has no record of them
    items = aws.ddb(B).scan(TableName="tbl")["Items"]
    assert sorted(i["pk"]["S"] for i in items) == ["a", "b", "c"]
    assert _records(aws, B) == []
    # AND B's table is made like A's: keys, index, billing mode; A got the stream a global table needs
    table = aws.ddb(B).describe_table(TableName="tbl")["Table"]
    assert table["KeySchema"] == [{"AttributeName": "pk", "KeyType": "HASH"}]
    assert [i["IndexName"] for i in table["GlobalSecondaryIndexes"]] == ["by-v"]
    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    found = aws.ddb(B).query(
        TableName="tbl",
        IndexName="by-v",
        KeyConditionExpression="v = :v",
        ExpressionAttributeValues={":v": {"S": "x"}},
    )["Items"]
    assert len(found) == 3
    assert aws.ddb(A).describe_table(TableName="tbl")["Table"]["StreamSpecification"]["StreamViewType"] == (
        "NEW_AND_OLD_IMAGES"
    )


def test_a_stream_of_another_view_type_is_kept(aws: Aws) -> None:
    # GIVEN a table whose stream is KEYS_ONLY
    _table(aws, StreamSpecification={"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"})
    arn = aws.ddb(A).describe_table(TableName="tbl")["Table"]["LatestStreamArn"]
    # WHEN a replica is added
    _add(aws, B)
    # THEN the table keeps its stream, and replication works
    table = aws.ddb(A).describe_table(TableName="tbl")["Table"]
    assert (table["StreamSpecification"]["StreamViewType"], table["LatestStreamArn"]) == ("KEYS_ONLY", arn)
    _put(aws, A, "k", "one")
    wait_for(lambda: _value(aws, B, "k") == "one", timeout=10)


def test_a_removed_replica_is_gone(aws: Aws) -> None:
    # GIVEN a global table in A and B holding an item
    _table(aws)
    _add(aws, B)
    _put(aws, A, "k", "one")
    wait_for(lambda: _value(aws, B, "k") == "one", timeout=10)
    # WHEN A removes B's replica
    aws.ddb(A).update_table(TableName="tbl", ReplicaUpdates=[{"Delete": {"RegionName": B}}])
    # THEN B's table is gone, and A is a table of its own again with its stream still on
    code, _ = _error(aws.ddb(B).describe_table, TableName="tbl")
    assert code == "ResourceNotFoundException"
    table = aws.ddb(A).describe_table(TableName="tbl")["Table"]
    assert "Replicas" not in table and "GlobalTableVersion" not in table
    assert table["StreamSpecification"]["StreamEnabled"] is True
    # AND A's writes go nowhere
    _put(aws, A, "k", "two")
    assert replicas.REGISTRY.pending() == 0


def test_deleting_a_leaf_replica_table_leaves_the_group(aws: Aws) -> None:
    # GIVEN a global table in A, B and C (all added from A)
    _table(aws)
    _add(aws, B, C)
    # WHEN B's table is deleted in B
    aws.ddb(B).delete_table(TableName="tbl")
    # THEN A and C replicate between themselves only
    assert [r["RegionName"] for r in aws.ddb(A).describe_table(TableName="tbl")["Table"]["Replicas"]] == [C]
    _put(aws, A, "k", "one")
    wait_for(lambda: _value(aws, C, "k") == "one", timeout=10)


# ------------------------------------------------------------------------------------------ refusals
def test_a_replica_in_the_tables_own_region_is_refused(aws: Aws) -> None:
    # GIVEN a table in A
    _table(aws)
    # WHEN a replica in A is asked for  THEN DynamoDB's ValidationException names the local region
    code, message = _error(
        aws.ddb(A).update_table, TableName="tbl", ReplicaUpdates=[{"Create": {"RegionName": A}}]
    )
    assert (code, message) == ("ValidationException", api.LOCAL_REGION)


@pytest.mark.parametrize("standalone", [False, True], ids=["a-replica", "a-table-of-its-own"])
def test_a_replica_in_a_region_that_has_the_table_is_refused(aws: Aws, standalone: bool) -> None:
    # GIVEN a table in A, and in B a replica of it or a table of the same name
    _table(aws)
    if standalone:
        _table(aws, B)
    else:
        _add(aws, B)
    # WHEN a replica in B is asked for  THEN it is refused: the table exists there
    code, message = _error(
        aws.ddb(A).update_table, TableName="tbl", ReplicaUpdates=[{"Create": {"RegionName": B}}]
    )
    assert (code, message) == ("ValidationException", api.ALREADY_EXISTS.format(name="tbl"))
    assert "already existed as tables" in message


def test_deleting_a_replica_that_does_not_exist_is_refused(aws: Aws) -> None:
    # GIVEN a global table in A and B
    _table(aws)
    _add(aws, B)
    # WHEN C's replica is deleted  THEN it is refused, naming C
    code, message = _error(
        aws.ddb(A).update_table, TableName="tbl", ReplicaUpdates=[{"Delete": {"RegionName": C}}]
    )
    assert code == "ValidationException"
    assert message == api.NOT_A_REPLICA.format(regions=C) and f"[{C}]" in message


@pytest.mark.parametrize(
    ("updates", "expected"),
    [
        ([{"Create": {"RegionName": B}}, {"Create": {"RegionName": C}}], api.SEVERAL_ACTIONS),
        ([{"Create": {"RegionName": B}}, {"Delete": {"RegionName": C}}], api.SEVERAL_ACTIONS),
        ([{"Create": {"RegionName": B}, "Delete": {"RegionName": C}}], api.MIXED_ACTIONS),
        ([{"Update": {"RegionName": B}}], api.NO_ACTION),
        ([{"Create": {"RegionName": "us-fake-1"}}], None),
    ],
    ids=["two-creates", "create-and-delete", "two-kinds-in-one", "empty-update", "unknown-region"],
)
def test_replica_updates_aws_refuses(aws: Aws, updates: list[dict[str, Any]], expected: str | None) -> None:
    # GIVEN a table in A
    _table(aws)
    # WHEN UpdateTable asks for more than one replica action, or none, or an unknown region
    code, message = _error(aws.ddb(A).update_table, TableName="tbl", ReplicaUpdates=updates)
    # THEN it is refused and nothing changes
    assert code == "ValidationException"
    if expected is not None:
        assert message == expected
    else:
        assert message.startswith("Region us-fake-1 is not supported.") and A in message
    assert "Replicas" not in aws.ddb(A).describe_table(TableName="tbl")["Table"]


def test_two_identical_creates_are_one(aws: Aws) -> None:
    # GIVEN a table in A  WHEN the same Create is sent twice in one call
    _table(aws)
    aws.ddb(A).update_table(
        TableName="tbl", ReplicaUpdates=[{"Create": {"RegionName": B}}, {"Create": {"RegionName": B}}]
    )
    # THEN one replica is made
    assert [r["RegionName"] for r in aws.ddb(A).describe_table(TableName="tbl")["Table"]["Replicas"]] == [B]


def test_a_global_tables_stream_cannot_be_disabled(aws: Aws) -> None:
    # GIVEN a global table in A and B
    _table(aws)
    _add(aws, B)
    # WHEN B's stream is disabled  THEN it is refused
    code, message = _error(
        aws.ddb(B).update_table, TableName="tbl", StreamSpecification={"StreamEnabled": False}
    )
    assert (code, message) == ("ValidationException", api.STREAM_REQUIRED)


def test_deleting_a_table_that_recently_added_a_replica_is_refused(aws: Aws) -> None:
    # GIVEN a table in A that added a replica in B
    _table(aws)
    _add(aws, B)
    # WHEN A's table is deleted  THEN it is refused (the 24-hour source rule) and both replicas stay
    code, message = _error(aws.ddb(A).delete_table, TableName="tbl")
    assert code == "ValidationException" and "last 24 hours" in message
    assert aws.ddb(A).describe_table(TableName="tbl")["Table"]["Replicas"] == [
        {"RegionName": B, "ReplicaStatus": "ACTIVE"}
    ]
    # AND removing A from the group through ReplicaUpdates (from B) is refused alike
    code, message = _error(
        aws.ddb(B).update_table, TableName="tbl", ReplicaUpdates=[{"Delete": {"RegionName": A}}]
    )
    assert (code, message) == ("ValidationException", api.RECENT_SOURCE)


# ------------------------------------------------------------------------------------------ the setting
def test_the_delay_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN the environment variable  THEN its milliseconds are the delay; a bad value names the setting
    assert replicas.delay_from_env({}) == replicas.DEFAULT_DELAY_MS / 1000
    assert replicas.delay_from_env({replicas.DELAY_ENV: "25"}) == 0.025
    for bad in ("-1", "soon"):
        with pytest.raises(ValueError, match=replicas.DELAY_ENV):
            replicas.delay_from_env({replicas.DELAY_ENV: bad})


# ------------------------------------------------------------------------------------------ mappings
class RegionRunner:
    """A stand-in function runner: records the region of each function it runs and the event."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def invoke(self, fn: Any, event: Any, iterator_age_ms: float | None = None) -> InvokeResult:
        self.calls.append((fn.region, event))
        return InvokeResult(b"null", None, "", "r", 1.0)

    def prewarm(self, fn: Any) -> None:
        return None


def _function(region: str) -> str:
    """A function in ``region`` whose role may read DynamoDB streams."""
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ],
    }
    iam = boto3.client("iam", region_name=region)
    role = iam.create_role(RoleName=f"fn-{region}", AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    reads = [
        "dynamodb:GetRecords",
        "dynamodb:GetShardIterator",
        "dynamodb:DescribeStream",
        "dynamodb:ListStreams",
    ]
    document = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": reads, "Resource": "*"}]}
    iam.put_role_policy(RoleName=f"fn-{region}", PolicyName="reads", PolicyDocument=json.dumps(document))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("index.py", "def handler(event, context):\n    return None\n")
    boto3.client("lambda", region_name=region).create_function(
        FunctionName="fn",
        Runtime="python3.13",
        Role=role,
        Handler="index.handler",
        Code={"ZipFile": buffer.getvalue()},
    )
    return str(role)


def test_a_mapping_on_a_replicas_stream_runs_its_regions_function(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a global table in A and B, and in B a function mapped to B's stream
    runner = RegionRunner()
    monkeypatch.setattr(esm, "get_runner", lambda: runner)
    monkeypatch.setattr(mappings, "get_runner", lambda: runner)
    manager = esm.MappingManager()
    monkeypatch.setattr(esm, "_MANAGER", manager)
    try:
        _table(aws)
        _add(aws, B)
        stream = aws.ddb(B).describe_table(TableName="tbl")["Table"]["LatestStreamArn"]
        _function(B)
        boto3.client("lambda", region_name=B).create_event_source_mapping(
            FunctionName="fn", EventSourceArn=stream, StartingPosition="TRIM_HORIZON"
        )
        # WHEN an item is put in A
        _put(aws, A, "k", "one")
        # THEN B's function runs with B's record of the replicated write
        wait_for(lambda: runner.calls, timeout=10)
        ((region, event),) = runner.calls
        (record,) = event["Records"]
        assert region == B
        assert (record["eventName"], record["awsRegion"], record["eventSourceARN"]) == ("INSERT", B, stream)
        assert record["dynamodb"]["NewImage"] == {"pk": {"S": "k"}, "v": {"S": "one"}}
    finally:
        manager.shutdown()


def test_a_request_to_another_region_is_evaluated_in_that_region(aws: Aws) -> None:
    # GIVEN a user allowed GetItem only in B (aws:RequestedRegion), and the IAM check in front of a stub AWS
    iam = boto3.client("iam", region_name=A)
    iam.create_user(UserName="u")
    key = iam.create_access_key(UserName="u")["AccessKey"]
    statement = {
        "Effect": "Allow",
        "Action": "dynamodb:GetItem",
        "Resource": "*",
        "Condition": {"StringEquals": {"aws:RequestedRegion": B}},
    }
    document = {"Version": "2012-10-17", "Statement": [statement]}
    iam.put_user_policy(UserName="u", PolicyName="b-only", PolicyDocument=json.dumps(document))
    app = AuthMiddleware(lambda environ, start_response: start_response("200 OK", []) or [b"{}"])

    def status(region: str) -> str:
        # a GetItem signed (with the user's secret) for ``region``
        body = json.dumps({"TableName": "tbl", "Key": {"pk": {"S": "k"}}}).encode()
        request = AWSRequest("POST", "https://localhost/", data=body, headers={
            "X-Amz-Target": "DynamoDB_20120810.GetItem", "Content-Type": "application/x-amz-json-1.0"})  # fmt: skip
        SigV4Auth(Credentials(key["AccessKeyId"], key["SecretAccessKey"]), "dynamodb", region).add_auth(
            request
        )
        answered: list[str] = []
        answer = b"".join(app(signed.environ(request), lambda code, headers: answered.append(code)))
        return answered[0] + ("" if b"AccessDenied" in answer or answered[0] == "200 OK" else f" {answer!r}")

    # WHEN the user reads in B and in A  THEN B's request is allowed and A's refused
    assert (status(B), status(A)) == ("200 OK", "400 Bad Request")


# ------------------------------------------------------------------------------------------ CloudFormation
def _global_template(*regions: str, retain: bool = False, outputs: bool = True, **extra: Any) -> str:
    replicas: list[dict[str, Any]] = [{"Region": r} for r in regions]
    for replica in replicas:
        if replica["Region"] == B:
            replica.update(
                DeletionProtectionEnabled=False,
                TableClass="STANDARD_INFREQUENT_ACCESS",
                Tags=[{"Key": "where", "Value": "b"}],
                PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True},
            )
    properties = {
        "TableName": "glb",
        "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "AttributeDefinitions": [
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "v", "AttributeType": "S"},
        ],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": "by-v",
                "KeySchema": [{"AttributeName": "v", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        "StreamSpecification": {"StreamViewType": "NEW_AND_OLD_IMAGES"},
        "TimeToLiveSpecification": {"Enabled": True, "AttributeName": "exp"},
        "Replicas": replicas,
        **extra,
    }
    resource: dict[str, Any] = {"Type": "AWS::DynamoDB::GlobalTable", "Properties": properties}
    if retain:
        resource["DeletionPolicy"] = "Retain"
    template: dict[str, Any] = {"Resources": {"Global": resource}}
    if outputs:
        values = {
            name: {"Value": {"Fn::GetAtt": ["Global", name]}} for name in ("Arn", "StreamArn", "TableId")
        }
        template["Outputs"] = {**values, "Ref": {"Value": {"Ref": "Global"}}}
    return json.dumps(template)


def _stack_of(cfn: Any) -> dict[str, Any]:
    return cfn.describe_stacks(StackName="s")["Stacks"][0]  # type: ignore[no-any-return]


def _regions_with(aws: Aws, name: str = "glb") -> list[str]:
    return [r for r in (A, B, C) if name in aws.ddb(r).list_tables()["TableNames"]]


def test_a_stacks_global_table_is_made_in_every_replica_region(aws: Aws) -> None:
    # GIVEN a template's global table with replicas in A (the stack's region), B and C
    cfn = boto3.client("cloudformation", region_name=A)
    # WHEN the stack is created in A
    cfn.create_stack(StackName="s", TemplateBody=_global_template(A, B, C))
    # THEN the table is in every region, A's listing B and C
    stack = _stack_of(cfn)
    assert stack["StackStatus"] == "CREATE_COMPLETE"
    assert _regions_with(aws) == [A, B, C]
    table = aws.ddb(A).describe_table(TableName="glb")["Table"]
    assert sorted(r["RegionName"] for r in table["Replicas"]) == [C, B]
    assert table["StreamSpecification"]["StreamViewType"] == "NEW_AND_OLD_IMAGES"
    # AND GetAtt answers with A's replica: its ARN, its stream, its id; Ref with the name
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}
    assert outputs["Arn"] == table["TableArn"] and outputs["StreamArn"] == table["LatestStreamArn"]
    assert outputs["Ref"] == "glb" and outputs["TableId"]
    # AND every replica has the shared settings (index, TTL) and its own (B's class, tags, PITR)
    b = aws.ddb(B).describe_table(TableName="glb")["Table"]
    assert [i["IndexName"] for i in b["GlobalSecondaryIndexes"]] == ["by-v"]
    assert b["TableClassSummary"]["TableClass"] == "STANDARD_INFREQUENT_ACCESS"
    assert aws.ddb(B).list_tags_of_resource(ResourceArn=b["TableArn"])["Tags"] == [
        {"Key": "where", "Value": "b"}
    ]
    ttl_status = aws.ddb(C).describe_time_to_live(TableName="glb")["TimeToLiveDescription"][
        "TimeToLiveStatus"
    ]
    assert ttl_status == "ENABLED"
    pitr = aws.ddb(B).describe_continuous_backups(TableName="glb")["ContinuousBackupsDescription"]
    assert pitr["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] == "ENABLED"
    # AND the replicas replicate
    aws.ddb(C).put_item(TableName="glb", Item={"pk": {"S": "k"}, "v": {"S": "from-c"}})
    wait_for(lambda: _get(aws, A, "k", name="glb") is not None, timeout=10)


def test_a_global_table_without_the_stacks_region_is_refused(aws: Aws) -> None:
    # GIVEN a template whose replicas leave out the stack's region
    cfn = boto3.client("cloudformation", region_name=A)
    # WHEN the stack is created  THEN CloudFormation's handler refuses it and nothing is made
    cfn.create_stack(StackName="s", TemplateBody=_global_template(B, C, outputs=False))
    stack = _stack_of(cfn)
    assert stack["StackStatus"] == "ROLLBACK_COMPLETE"
    expected = f'Resource handler returned message: "{cfn_global_table.CURRENT_REGION_REQUIRED}"'
    assert stack["StackStatusReason"].startswith(expected)
    assert _regions_with(aws) == []


def test_a_stack_update_adds_and_removes_replicas_and_its_deletion_removes_them_all(aws: Aws) -> None:
    # GIVEN a stack's global table in A and B
    cfn = boto3.client("cloudformation", region_name=A)
    cfn.create_stack(StackName="s", TemplateBody=_global_template(A, B))
    # WHEN an update replaces B by C
    cfn.update_stack(StackName="s", TemplateBody=_global_template(A, C))
    # THEN the table is in A and C only
    assert _stack_of(cfn)["StackStatus"] == "UPDATE_COMPLETE"
    assert _regions_with(aws) == [A, C]
    assert [r["RegionName"] for r in aws.ddb(A).describe_table(TableName="glb")["Table"]["Replicas"]] == [C]
    # WHEN the stack is deleted  THEN every replica goes
    cfn.delete_stack(StackName="s")
    assert _regions_with(aws) == []


def test_a_retained_global_table_outlives_its_stack(aws: Aws) -> None:
    # GIVEN a stack's global table with DeletionPolicy Retain
    cfn = boto3.client("cloudformation", region_name=A)
    cfn.create_stack(StackName="s", TemplateBody=_global_template(A, B, retain=True))
    # WHEN the stack is deleted  THEN the table and its replica stay, still replicating
    cfn.delete_stack(StackName="s")
    assert _regions_with(aws) == [A, B]
    aws.ddb(A).put_item(TableName="glb", Item={"pk": {"S": "k"}, "v": {"S": "x"}})
    wait_for(lambda: _get(aws, B, "k", name="glb") is not None, timeout=10)


def test_a_protected_replica_is_not_removed(aws: Aws) -> None:
    # GIVEN a global table in A and B, B's replica protected against deletion
    _table(aws)
    _add(aws, B)
    aws.ddb(B).update_table(TableName="tbl", DeletionProtectionEnabled=True)
    # WHEN A removes B's replica  THEN it is refused and B's table stays
    code, message = _error(
        aws.ddb(A).update_table, TableName="tbl", ReplicaUpdates=[{"Delete": {"RegionName": B}}]
    )
    assert (code, message) == ("ValidationException", api.PROTECTED.format(name="tbl", region=B))
    assert aws.ddb(B).describe_table(TableName="tbl")["Table"]["Replicas"] == [
        {"RegionName": A, "ReplicaStatus": "ACTIVE"}
    ]


def test_the_server_reads_the_delay_once_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN the setting in the server's environment  WHEN the server starts  THEN it is the delay
    monkeypatch.setenv(replicas.DELAY_ENV, "120")
    try:
        replicas.start_from_env()
        assert replicas.REGISTRY.delay == 0.12
    finally:
        replicas.set_delay_ms(replicas.DEFAULT_DELAY_MS)
