"""Kinesis enhanced fan-out consumers on the local AWS (local/services/kinesis_fan_out.py): their ARN as AWS gives
it (held against botocore's ConsumerARN pattern), deregistration by name, AWS::Kinesis::StreamConsumer in a
template, and a Lambda mapping reading through one, with SubscribeToShard on it required of the role."""

from __future__ import annotations

import json
import re
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.exceptions import ClientError

from local import state
from tests.unit.test_local_kinesis_mapping import FakeRunner, _delivered, _put, _setup, _zip, aws

pytestmark = pytest.mark.unit
__all__ = ["aws"]  # the fixture, shared with the mapping tests

REGION = state.REGION


def _consumer_arn_pattern() -> re.Pattern[str]:
    """botocore's Kinesis model's pattern of a ConsumerARN (an independent reference of the ARN's form)."""
    model = botocore.session.get_session().get_service_model("kinesis")
    return re.compile(model.shape_for("ConsumerARN").metadata["pattern"])


def test_a_consumers_arn_is_as_aws_gives_it_and_deregistering_by_name_removes_that_one(
    aws: tuple[Any, FakeRunner],
) -> None:
    client, _ = aws
    kinesis = client("kinesis")
    kinesis.create_stream(StreamName="s", ShardCount=1)
    stream = kinesis.describe_stream_summary(StreamName="s")["StreamDescriptionSummary"]["StreamARN"]
    # GIVEN two registered consumers
    first = kinesis.register_stream_consumer(StreamARN=stream, ConsumerName="first")["Consumer"]
    kinesis.register_stream_consumer(StreamARN=stream, ConsumerName="second")
    # THEN each ARN ends with its creation time in epoch seconds, the form botocore's model gives
    created = int(first["ConsumerCreationTimestamp"].timestamp())
    assert first["ConsumerARN"] == f"{stream}/consumer/first:{created}"
    assert _consumer_arn_pattern().fullmatch(first["ConsumerARN"])
    described = kinesis.describe_stream_consumer(ConsumerARN=first["ConsumerARN"])["ConsumerDescription"]
    assert described["ConsumerName"] == "first"
    # WHEN one is deregistered by stream and name  THEN that one is gone, the other kept
    kinesis.deregister_stream_consumer(StreamARN=stream, ConsumerName="first")
    listed = kinesis.list_stream_consumers(StreamARN=stream)["Consumers"]
    assert [c["ConsumerName"] for c in listed] == ["second"]
    with pytest.raises(ClientError) as missing:
        kinesis.deregister_stream_consumer(StreamARN=stream, ConsumerName="first")
    assert missing.value.response["Error"]["Code"] == "ResourceNotFoundException"


TEMPLATE = {
    "Resources": {
        "Stream": {"Type": "AWS::Kinesis::Stream", "Properties": {"ShardCount": 1}},
        "FanOut": {
            "Type": "AWS::Kinesis::StreamConsumer",
            "Properties": {"ConsumerName": "reader", "StreamARN": {"Fn::GetAtt": ["Stream", "Arn"]}},
        },
    },
    "Outputs": {
        "Ref": {"Value": {"Ref": "FanOut"}},
        "Arn": {"Value": {"Fn::GetAtt": ["FanOut", "ConsumerARN"]}},
        "Name": {"Value": {"Fn::GetAtt": ["FanOut", "ConsumerName"]}},
        "StreamArn": {"Value": {"Fn::GetAtt": ["Stream", "Arn"]}},
    },
}


def test_a_templates_stream_consumer_is_registered_replaced_on_a_new_name_and_deregistered(
    aws: tuple[Any, FakeRunner],
) -> None:
    client, _ = aws
    cfn, kinesis = boto3.client("cloudformation", region_name=REGION), client("kinesis")

    def outputs() -> dict[str, str]:
        stack = cfn.describe_stacks(StackName="fan")["Stacks"][0]
        return {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}

    def consumers(stream: str) -> list[str]:
        return [c["ConsumerName"] for c in kinesis.list_stream_consumers(StreamARN=stream)["Consumers"]]

    # GIVEN a stack registering a consumer of its stream
    cfn.create_stack(StackName="fan", TemplateBody=json.dumps(TEMPLATE))
    found = outputs()
    # THEN Ref and GetAtt ConsumerARN are its ARN, as the API describes it
    assert found["Ref"] == found["Arn"] and _consumer_arn_pattern().fullmatch(found["Arn"])
    assert found["Name"] == "reader" and consumers(found["StreamArn"]) == ["reader"]
    # WHEN its name changes (create-only)  THEN it is replaced: the new one registered, the old one gone
    renamed = json.loads(json.dumps(TEMPLATE))
    renamed["Resources"]["FanOut"]["Properties"]["ConsumerName"] = "reader2"
    cfn.update_stack(StackName="fan", TemplateBody=json.dumps(renamed))
    assert consumers(found["StreamArn"]) == ["reader2"]
    # WHEN the stack is deleted  THEN its consumer is deregistered with it
    cfn.delete_stack(StackName="fan")
    assert kinesis.list_streams()["StreamNames"] == []


def test_a_mapping_reads_through_its_fan_out_consumer_and_needs_subscribe_to_shard_on_it(
    aws: tuple[Any, FakeRunner],
) -> None:
    client, runner = aws
    # GIVEN the table's stream with a shared-throughput mapping, and a consumer registered on it
    stream, _ = _setup(client)
    kinesis, lam, iam = client("kinesis"), client("lambda"), client("iam")
    consumer = kinesis.register_stream_consumer(StreamARN=stream, ConsumerName="own")["Consumer"][
        "ConsumerARN"
    ]
    role = lam.get_function(FunctionName="fn")["Configuration"]["Role"]
    lam.create_function(
        FunctionName="fan", Runtime="python3.13", Role=role, Handler="index.handler", Code={"ZipFile": _zip()}
    )
    # WHEN a mapping reads through the consumer with a role lacking SubscribeToShard on it  THEN refused
    with pytest.raises(ClientError) as refused:
        lam.create_event_source_mapping(
            FunctionName="fan", EventSourceArn=consumer, StartingPosition="TRIM_HORIZON"
        )
    assert refused.value.response["Error"]["Code"] == "InvalidParameterValueException"
    assert refused.value.response["Error"]["Message"].startswith(f"Cannot access stream {consumer}.")
    # WHEN the role may subscribe through that consumer (its stream's reads it already has)
    statement = {"Effect": "Allow", "Action": "kinesis:SubscribeToShard", "Resource": consumer}
    iam.put_role_policy(
        RoleName="fn-role",
        PolicyName="fan-out",
        PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [statement]}),
    )
    mapping = lam.create_event_source_mapping(
        FunctionName="fan", EventSourceArn=consumer, StartingPosition="TRIM_HORIZON", BatchSize=10
    )
    assert mapping["EventSourceArn"] == consumer
    # THEN a change reaches both readers: each reads the stream at its own position
    _put(client, "a")
    runner.wait_for(lambda: len(_delivered(runner)) == 2)
    records = _delivered(runner)
    assert sorted(r["eventSourceARN"] for r in records) == sorted([stream, consumer])
    assert len({r["eventID"] for r in records}) == 1  # the same record, delivered to each
