"""The local AWS's readers per DynamoDB stream shard (local/services/dynamodb/stream_readers.py): a GetRecords by a
third reader active on a shard is throttled with AWS's LimitExceededException, as AWS throttles more than two
readers; an event-source mapping's poller is one reader, backs off when throttled and delivers once fewer readers
are active.

boto3 against moto in-process with the local AWS's adaptations; the readers' clock is the test's (a reader goes
quiet for a second when the test moves the clock), the function a stand-in runner that records each event."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from moto import mock_aws

from local import state
from local.pollers import streams as esm
from local.services.awslambda import mappings
from local.services.dynamodb import stream_readers
from tests.unit.test_local_kinesis_destination import isolated_services
from tests.unit.test_local_kinesis_mapping import FakeRunner, _delivered

pytestmark = pytest.mark.unit

REGION = state.REGION
# One attempt: botocore's standard retries would retry a LimitExceededException; the test sees AWS's answer.
# Streams' account-based endpoint (<account>.streams-ddb...) is not one moto routes in-process.
STREAMS_CONFIG = Config(retries={"total_max_attempts": 1}, account_id_endpoint_mode="disabled")
STREAM_READS = ["dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"]


class Clock:
    """The readers' clock: it moves when the test says."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Callable[[str], Any], FakeRunner, Clock]]:
    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x")):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    runner, clock = FakeRunner(), Clock()
    monkeypatch.setattr(esm, "get_runner", lambda: runner)
    monkeypatch.setattr(mappings, "get_runner", lambda: runner)
    monkeypatch.setattr(stream_readers, "CLOCK", clock)
    manager = esm.MappingManager()
    monkeypatch.setattr(esm, "_MANAGER", manager)  # what esm.install does, undone after the test
    stream_readers.READERS.reset()
    with isolated_services(), mock_aws():
        try:

            def client(service: str) -> Any:
                config = STREAMS_CONFIG if service == "dynamodbstreams" else None
                return boto3.client(service, region_name=REGION, config=config)

            yield client, runner, clock
        finally:
            manager.shutdown()
            stream_readers.READERS.reset()


def _table(client: Callable[[str], Any]) -> tuple[str, str]:
    """A table with a stream: (its stream's ARN, its shard's id)."""
    ddb = client("dynamodb")
    ddb.create_table(
        TableName="tbl",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    stream = ddb.describe_table(TableName="tbl")["Table"]["LatestStreamArn"]
    shards = client("dynamodbstreams").describe_stream(StreamArn=stream)["StreamDescription"]["Shards"]
    return stream, shards[0]["ShardId"]


def _reader(client: Callable[[str], Any], stream: str, shard: str) -> str:
    """A new reader: a TRIM_HORIZON iterator of its own."""
    reply = client("dynamodbstreams").get_shard_iterator(
        StreamArn=stream, ShardId=shard, ShardIteratorType="TRIM_HORIZON"
    )
    return str(reply["ShardIterator"])


def _read(client: Callable[[str], Any], iterator: str) -> tuple[int, str]:
    """(records read, the iterator that continues the reader)."""
    reply = client("dynamodbstreams").get_records(ShardIterator=iterator)
    return len(reply["Records"]), reply["NextShardIterator"]


def _refusal(client: Callable[[str], Any], iterator: str) -> tuple[str, str, int]:
    with pytest.raises(ClientError) as refused:
        client("dynamodbstreams").get_records(ShardIterator=iterator)
    error = refused.value.response
    return error["Error"]["Code"], error["Error"]["Message"], error["ResponseMetadata"]["HTTPStatusCode"]


def _put(client: Callable[[str], Any], key: str) -> None:
    client("dynamodb").put_item(TableName="tbl", Item={"pk": {"S": key}})


def test_two_readers_read_and_a_third_is_throttled_with_awss_error(aws: Any) -> None:
    # GIVEN a shard with a record and two readers reading it, each on its own iterator lineage
    client, _, _ = aws
    stream, shard = _table(client)
    _put(client, "a")
    first, second = _reader(client, stream, shard), _reader(client, stream, shard)
    read_first, first = _read(client, first)
    read_second, second = _read(client, second)
    assert (read_first, read_second) == (1, 1)
    # a look through an iterator of its own is not yet a reader: each polls on with the iterator that continues it
    _, first = _read(client, first)
    _, second = _read(client, second)
    # WHEN a third reader reads the shard within the same second
    third = _reader(client, stream, shard)
    # THEN it is throttled: HTTP 400 LimitExceededException naming the shard
    assert _refusal(client, third) == ("LimitExceededException", f"Rate exceeded for shard {shard}", 400)
    # AND the two readers read on with the iterators that continue them (each still one reader)
    for _ in range(3):
        _, first = _read(client, first)
        _, second = _read(client, second)


def test_a_reader_quiet_for_a_second_frees_its_place_for_the_third(aws: Any) -> None:
    # GIVEN two readers active on the shard, and a third throttled
    client, _, clock = aws
    stream, shard = _table(client)
    first, second, third = (_reader(client, stream, shard) for _ in range(3))
    for _ in range(2):  # the second read of each, with its NextShardIterator, makes it a reader that polls
        _, first = _read(client, first)
        _, second = _read(client, second)
    assert _refusal(client, third)[0] == "LimitExceededException"
    # WHEN the first keeps reading but the second has read nothing for a second
    clock.now += 0.6
    _, first = _read(client, first)
    clock.now += 0.4
    # THEN the third reads and polls on, and now the second is the one throttled
    count, third = _read(client, third)
    assert count == 0
    _read(client, third)
    assert _refusal(client, second)[0] == "LimitExceededException"
    _, first = _read(client, first)


def test_a_client_looking_through_several_iterators_in_turn_is_not_throttled(aws: Any) -> None:
    # GIVEN one reader polling the shard
    client, _, _ = aws
    stream, shard = _table(client)
    _put(client, "a")
    poller = _reader(client, stream, shard)
    for _ in range(2):
        _, poller = _read(client, poller)
    # WHEN a client looks at the shard through four new iterators, one after the other, within a second
    reads = [_read(client, _reader(client, stream, shard))[0] for _ in range(4)]
    # THEN every look is answered: none holds a place the next one would need
    assert reads == [1, 1, 1, 1]
    _, poller = _read(client, poller)


def _mapping(client: Callable[[str], Any], stream: str, function: str) -> str:
    """A function whose role reads the stream, and its mapping from TRIM_HORIZON: the mapping's UUID."""
    iam, lam = client("iam"), client("lambda")
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ],
    }
    role = iam.create_role(RoleName=f"{function}-role", AssumeRolePolicyDocument=json.dumps(trust))["Role"]
    statements = [
        {"Effect": "Allow", "Action": STREAM_READS, "Resource": stream},
        {"Effect": "Allow", "Action": "dynamodb:ListStreams", "Resource": "*"},
    ]
    iam.put_role_policy(
        RoleName=f"{function}-role",
        PolicyName="reads",
        PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": statements}),
    )
    lam.create_function(
        FunctionName=function,
        Runtime="python3.13",
        Role=role["Arn"],
        Handler="index.handler",
        Code={"ZipFile": _zip()},
    )
    spec = {"StartingPosition": "TRIM_HORIZON", "BatchSize": 10}
    return str(lam.create_event_source_mapping(FunctionName=function, EventSourceArn=stream, **spec)["UUID"])


def _zip() -> bytes:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("index.py", "def handler(event, context):\n    return None\n")
    return buffer.getvalue()


def _until(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not reached: {what}"
        time.sleep(0.02)


def test_each_mapping_is_one_reader_of_the_shard(aws: Any) -> None:
    # GIVEN two mappings that have each delivered records, read after read (the readers' clock stands still)
    client, runner, clock = aws
    stream, shard = _table(client)
    uuids = [_mapping(client, stream, name) for name in ("one", "two")]
    for key in ("a", "b", "c"):
        _put(client, key)
        runner.wait_for(
            lambda key=key: [r["dynamodb"]["Keys"]["pk"]["S"] for r in _delivered(runner)].count(key) == 2
        )
    # THEN the shard's readers are the two mappings, whatever iterators their pollers took
    active = stream_readers.READERS.active(f"{stream}#{shard}", clock.now)
    assert sorted(active) == sorted(f"mapping:{uuid}" for uuid in uuids)
    # AND a reader of another kind is the third: throttled
    assert _refusal(client, _reader(client, stream, shard))[0] == "LimitExceededException"


def test_a_throttled_mapping_backs_off_stays_enabled_and_delivers_once_a_reader_is_gone(aws: Any) -> None:
    # GIVEN two readers active on the shard, and a mapping reading it from the start
    client, runner, clock = aws
    stream, shard = _table(client)
    first, second = _reader(client, stream, shard), _reader(client, stream, shard)
    for _ in range(2):  # each polls: its second read continues it
        _, first = _read(client, first)
        _, second = _read(client, second)
    uuid = _mapping(client, stream, "late")
    # WHEN a record arrives
    _put(client, "a")
    # THEN the mapping's poller is throttled, again and again: nothing invoked, the mapping still Enabled
    manager = esm.get_manager()
    _until(lambda: manager.progress()[uuid]["throttled"] >= 2, "the poller throttled twice")
    assert runner.events == []
    mapping = client("lambda").get_event_source_mapping(UUID=uuid)
    assert mapping["State"] == "Enabled"
    assert manager.progress()[uuid]["pending"] == 1
    # WHEN the second reader has read nothing for a second (the first reads on)
    clock.now += 0.5
    _, first = _read(client, first)
    clock.now += 0.5
    # THEN the poller reads in its place and the record is delivered, once
    runner.wait_for(lambda: len(_delivered(runner)) == 1)
    assert [r["dynamodb"]["Keys"] for r in _delivered(runner)] == [{"pk": {"S": "a"}}]
    # AND the second reader, back, is now the third: throttled
    assert _refusal(client, second)[0] == "LimitExceededException"
