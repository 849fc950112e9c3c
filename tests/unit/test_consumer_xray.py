"""The consumer's X-Ray subsegments (stream_consumer.xray): one datagram per AWS call to the daemon's UDP address,
in the daemon's protocol, joined to the invocation's trace; nothing when the invocation is not sampled."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from botocore.session import get_session
from moto import mock_aws
from stream_consumer.xray import PROTOCOL_HEADER, AwsCallTracer, daemon_address, sampled_trace

ROOT = "1-5759e988-bd862e3fe1be46a994272793"
PARENT = "53995c3f42cd8ad8"
SAMPLED = f"Root={ROOT};Parent={PARENT};Sampled=1"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


@pytest.fixture
def daemon() -> Iterator[socket.socket]:
    """A UDP socket standing where Lambda's X-Ray daemon listens."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(2)
    yield sock
    sock.close()


def received(sock: socket.socket) -> list[dict[str, Any]]:
    """Every datagram waiting on the socket, each checked for the protocol header and parsed."""
    documents = []
    sock.settimeout(0.2)
    while True:
        try:
            data = sock.recv(65536)
        except TimeoutError:
            return documents
        assert data.startswith(PROTOCOL_HEADER)
        documents.append(json.loads(data[len(PROTOCOL_HEADER) :]))


def traced_session(
    monkeypatch: pytest.MonkeyPatch, daemon: socket.socket, header: str | None, **env: str
) -> Any:
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    environ = {"AWS_XRAY_DAEMON_ADDRESS": f"127.0.0.1:{daemon.getsockname()[1]}", **env}
    if header is not None:
        environ["_X_AMZN_TRACE_ID"] = header
    session = get_session()
    AwsCallTracer(environ).install(session)
    return session


@mock_aws
def test_each_call_is_one_subsegment_of_the_invocation(
    monkeypatch: pytest.MonkeyPatch, daemon: socket.socket
) -> None:
    # GIVEN a sampled invocation and clients built from a traced session
    session = traced_session(monkeypatch, daemon, SAMPLED)
    s3 = session.create_client("s3", region_name="eu-west-1")
    dynamodb = session.create_client("dynamodb", region_name="eu-west-1")
    s3.create_bucket(Bucket="blobs", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    dynamodb.create_table(
        TableName="items",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    received(daemon)
    headers: list[str] = []
    s3.meta.events.register(
        "before-send", lambda request, **_: headers.append(request.headers["X-Amzn-Trace-Id"].decode())
    )
    # WHEN the consumer's calls run: a HEAD of a missing key, a DeleteObjects, a BatchGetItem
    with pytest.raises(ClientError):
        s3.head_object(Bucket="blobs", Key="gone")
    s3.delete_objects(Bucket="blobs", Delete={"Objects": [{"Key": "a"}], "Quiet": True})
    dynamodb.batch_get_item(RequestItems={"items": {"Keys": [{"pk": {"S": "x"}}]}})
    # THEN one subsegment each, in the invocation's trace, under its segment
    head, delete, read = received(daemon)
    for doc in (head, delete, read):
        assert doc["type"] == "subsegment" and doc["namespace"] == "aws"
        assert doc["trace_id"] == ROOT and doc["parent_id"] == PARENT
        assert len(doc["id"]) == 16 and doc["start_time"] <= doc["end_time"]
        assert doc["aws"]["region"] == "eu-west-1"
    assert (head["name"], head["aws"]["operation"], head["aws"]["bucket_name"], head["aws"]["key"]) == (
        "s3", "HeadObject", "blobs", "gone",
    )  # fmt: skip
    # AND a 404 is an error with its cause, a success is neither error nor fault
    assert head["http"]["response"]["status"] == 404 and head.get("error") is True and "fault" not in head
    assert head["cause"]["exceptions"][0]["remote"] is True
    assert delete["aws"]["operation"] == "DeleteObjects" and delete["http"]["response"]["status"] == 200
    assert not any(delete.get(flag) for flag in ("error", "fault", "throttle"))
    assert (read["name"], read["aws"]["operation"], read["aws"]["table_names"]) == (
        "dynamodb",
        "BatchGetItem",
        ["items"],
    )
    # AND each request named its own subsegment as the parent of the service's segment
    assert headers == [
        f"Root={ROOT};Parent={head['id']};Sampled=1",
        f"Root={ROOT};Parent={delete['id']};Sampled=1",
    ]


@pytest.mark.parametrize(
    ("header", "env"),
    [
        (f"Root={ROOT};Parent={PARENT};Sampled=0", {}),
        (None, {}),
        (f"Root={ROOT};Sampled=1", {}),
        (SAMPLED, {"POWERTOOLS_TRACE_DISABLED": "true"}),
    ],
    ids=["not-sampled", "outside-lambda", "no-parent", "disabled"],
)
@mock_aws
def test_nothing_is_sent_unless_the_invocation_is_sampled(
    monkeypatch: pytest.MonkeyPatch, daemon: socket.socket, header: str | None, env: dict[str, str]
) -> None:
    session = traced_session(monkeypatch, daemon, header, **env)
    s3 = session.create_client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="blobs")
    s3.delete_objects(Bucket="blobs", Delete={"Objects": [{"Key": "a"}], "Quiet": True})
    assert received(daemon) == []


def test_a_call_without_response_is_a_fault(monkeypatch: pytest.MonkeyPatch, daemon: socket.socket) -> None:
    # GIVEN an endpoint where nothing listens
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    session = traced_session(monkeypatch, daemon, SAMPLED)
    from botocore.config import Config

    s3 = session.create_client(
        "s3", region_name="us-east-1", endpoint_url=f"http://127.0.0.1:{port}",
        config=Config(retries={"max_attempts": 1}, connect_timeout=1),
    )  # fmt: skip
    # WHEN a call fails without a response
    with pytest.raises(EndpointConnectionError):
        s3.head_object(Bucket="blobs", Key="k")
    # THEN its subsegment is a fault, with the exception as its cause
    (doc,) = received(daemon)
    assert doc.get("fault") is True and "http" not in doc
    assert doc["cause"]["exceptions"][0]["type"] == "EndpointConnectionError"


@mock_aws
def test_a_failing_daemon_never_fails_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(_: bytes) -> None:
        raise OSError("no route")

    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    session = get_session()
    AwsCallTracer({"_X_AMZN_TRACE_ID": SAMPLED}, send=broken).install(session)
    s3 = session.create_client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="blobs")
    assert s3.list_objects_v2(Bucket="blobs")["KeyCount"] == 0


def test_trace_header_and_daemon_address_parsing() -> None:
    assert sampled_trace(SAMPLED) == (ROOT, PARENT)
    assert sampled_trace(f"Root={ROOT};Parent={PARENT};Sampled=1;Lineage=a:1") == (ROOT, PARENT)
    assert sampled_trace(f"Root={ROOT};Parent={PARENT}") is None
    assert sampled_trace("") is None
    assert daemon_address("169.254.79.129:2000") == ("169.254.79.129", 2000)
    assert daemon_address("tcp:127.0.0.1:2000 udp:127.0.0.2:2001") == ("127.0.0.2", 2001)
    assert daemon_address(None) == ("127.0.0.1", 2000)
