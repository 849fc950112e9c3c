"""Preflight counts the live readers of the table's DynamoDB stream (doctable/capabilities/readers.py): the stack's
own (the cleanup or borrowed consumer when it reads the stream, each subscriber whose source is the stream) and
every other event-source mapping live on it; more than a shard takes (2) is a STOP naming
them, the limit and the way out; mappings that cannot be listed are a STOP too, never a silent pass.

moto in-process for the stack, its table, its mapping and the foreign ones; a fake Lambda client for AccessDenied."""

from __future__ import annotations

import dataclasses
import io
import json
import zipfile
from typing import Any

import pytest
from botocore.exceptions import ClientError

from contract import names
from contract.findings import Finding, Level
from doctable.capabilities import readers
from doctable.capabilities.protocol import observe
from doctable.core.aws import Aws
from doctable.core.context import describe_stack
from doctable.lifecycle import preflight as p
from tests.support import ops as ot

pytestmark = pytest.mark.unit

STREAM = {"stream": "new-and-old"}


def _function(aws: Aws, name: str) -> str:
    role = aws.client("iam").create_role(RoleName=f"{name}-role", AssumeRolePolicyDocument="{}")["Role"][
        "Arn"
    ]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", "def handler(event, context):\n    return {}\n")
    return str(
        aws.client("lambda").create_function(
            FunctionName=name, Runtime=names.LAMBDA_RUNTIME, Role=role, Handler="handler.handler",
            Code={"ZipFile": buffer.getvalue()},
        )["FunctionArn"]
    )  # fmt: skip


def _foreign(aws: Aws, stream_arn: str, name: str, *, enabled: bool = True) -> str:
    """A mapping on the stream that the stack did not make: its UUID."""
    function = _function(aws, name)
    mapping = aws.client("lambda").create_event_source_mapping(
        EventSourceArn=stream_arn, FunctionName=function, StartingPosition="LATEST", Enabled=enabled
    )
    return str(mapping["UUID"])


def _deployed(aws: Aws, **knobs: str) -> str:
    """The stack with its table and its mapping (the built-in consumer's): the stream's ARN."""
    config = ot.config_of(**{**STREAM, **knobs})
    ot.deploy_with_mapping(aws.client, config)
    return str(aws.client("dynamodb").describe_table(TableName=config.table_name)["Table"]["LatestStreamArn"])


def _readers(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.code.startswith("subscriber.readers_")]


def preflight(aws: Aws, **knobs: str) -> list[Finding]:
    return p.run_preflight(aws, describe_stack(aws, ot.config_of(**{**STREAM, **knobs})))


def test_a_third_reader_live_on_the_stream_stops_the_deploy_naming_each(moto_env: Aws) -> None:
    # GIVEN the stack's consumer reading the stream, and two mappings on it the stack did not make
    stream = _deployed(moto_env)
    first, second = _foreign(moto_env, stream, "audit"), _foreign(moto_env, stream, "search")
    # WHEN preflight observes
    (found,) = _readers(preflight(moto_env))
    # THEN it stops: three readers, each named (the foreign ones by function and mapping UUID), the limit two
    assert (found.level, found.code, found.after) == (Level.STOP, "subscriber.readers_exceeded", 2)
    assert found.before == [
        {"reader": "consumer", "function": "built-in"},
        {"reader": "foreign", "uuid": first, "function": "audit"},
        {"reader": "foreign", "uuid": second, "function": "search"},
    ]
    assert first in found.effect and 'source = "kinesis"' in found.effect


def test_two_readers_or_a_disabled_foreign_mapping_are_within_the_limit(moto_env: Aws) -> None:
    # GIVEN the stack's consumer, one foreign mapping reading, and another disabled
    stream = _deployed(moto_env)
    _foreign(moto_env, stream, "audit")
    _foreign(moto_env, stream, "paused", enabled=False)
    # THEN two readers: nothing to say
    assert _readers(preflight(moto_env)) == []


def test_a_consumer_reading_kinesis_is_no_reader_of_the_stream(moto_env: Aws) -> None:
    # GIVEN two foreign mappings on the stream, and knobs whose consumer reads the Kinesis destination instead
    stream = _deployed(moto_env)
    _foreign(moto_env, stream, "audit")
    _foreign(moto_env, stream, "search")
    # THEN the stream keeps two readers after the deploy: no STOP
    assert readers.own_readers(ot.config_of(**STREAM, kinesis="on", consumer_source="kinesis")) == []
    assert _readers(preflight(moto_env, kinesis="on", consumer_source="kinesis")) == []


def test_a_stream_the_deploy_turns_off_has_no_reader_to_count(moto_env: Aws) -> None:
    # GIVEN two foreign mappings on the stream, and knobs that turn the stream off
    stream = _deployed(moto_env)
    _foreign(moto_env, stream, "audit")
    _foreign(moto_env, stream, "search")
    # THEN the readers are not counted (the stream goes): no STOP
    assert _readers(preflight(moto_env, stream="none")) == []


class _DeniedLambda:
    """ListEventSourceMappings refused as IAM refuses it."""

    def get_paginator(self, name: str) -> Any:
        assert name == "list_event_source_mappings"
        return self

    def paginate(self, **kwargs: Any) -> Any:
        message = (
            "User: arn:aws:iam::123456789012:user/deployer is not authorized to perform: "
            "lambda:ListEventSourceMappings on resource: * because no identity-based policy allows the "
            "lambda:ListEventSourceMappings action"
        )
        raise ClientError(
            {"Error": {"Code": "AccessDeniedException", "Message": message}}, "ListEventSourceMappings"
        )


@dataclasses.dataclass
class _Aws:
    real: Aws
    lambda_client: Any

    def client(self, service: str) -> Any:
        return self.lambda_client if service == "lambda" else self.real.client(service)


def test_mappings_that_cannot_be_listed_stop_the_deploy_saying_so(moto_env: Aws) -> None:
    # GIVEN the stack with its stream, and credentials that may not list the mappings
    _deployed(moto_env)
    observed = observe(moto_env, describe_stack(moto_env, ot.config_of(**STREAM)))
    denied = dataclasses.replace(observed, aws=_Aws(moto_env, _DeniedLambda()))  # type: ignore[arg-type]
    # WHEN the readers capability looks at the stream's readers
    (found,) = _readers(readers.READERS.findings(denied))
    # THEN a STOP that says so, with the refusal as data (the action and the resource AWS named)
    assert (found.level, found.code, found.after) == (Level.STOP, "subscriber.readers_unlisted", 2)
    assert found.before["code"] == "aws.access_denied"
    assert (found.before["action"], found.before["resource"]) == ("lambda:ListEventSourceMappings", "*")


@pytest.mark.parametrize(
    ("knobs", "subscribers", "foreign", "expected"),
    [
        # the cleanup consumer and one direct subscriber: two, within the limit
        (STREAM, ("search",), 0, None),
        # ... and one mapping that is not the stack's: a third
        (STREAM, ("search",), 1, 2),
        # a borrowed consumer reads the stream as the built-in one does
        ({**STREAM, "consumer": "arn:aws:lambda:us-east-1:123456789012:function:theirs"}, (), 2, 2),
        # a global table's replica stream: AWS recommends one reader (a second is a WARN naming the 1), takes two
        ({**STREAM, "replicas": "us-west-2"}, (), 1, 1),
        ({**STREAM, "replicas": "us-west-2"}, (), 2, 2),
        ({**STREAM, "replicas": "us-west-2"}, (), 0, None),
    ],
)
def test_the_limit_is_two_per_shard_and_one_on_a_global_table(
    knobs: dict[str, str], subscribers: tuple[str, ...], foreign: int, expected: int | None
) -> None:
    target = ot.config_of(**knobs)
    own = readers.own_readers(target) + [{"reader": "subscriber", "name": n} for n in subscribers]
    mappings = [
        {"UUID": f"u{i}", "FunctionArn": f"arn:aws:lambda:us-east-1:1:function:f{i}:live", "State": "Enabled"}
        for i in range(foreign)
    ]
    found = readers.readers_findings(target, own + readers.foreign_readers(mappings, set()))
    assert [f.after for f in found] == ([] if expected is None else [expected])
    if found:
        assert [r["function"] for r in found[0].before if r["reader"] == "foreign"] == [
            f"f{i}" for i in range(foreign)
        ]


def test_the_stacks_own_mappings_are_never_foreign() -> None:
    mappings = [
        {
            "UUID": "ours",
            "FunctionArn": "arn:aws:lambda:r:1:function:doctable-items-dev-x",
            "State": "Enabled",
        },
        {"UUID": "off", "FunctionArn": "arn:aws:lambda:r:1:function:paused", "State": "Disabled"},
        {"UUID": "theirs", "FunctionArn": "arn:aws:lambda:r:1:function:audit", "State": "Enabling"},
    ]
    assert readers.foreign_readers(mappings, {"ours"}) == [
        {"reader": "foreign", "uuid": "theirs", "function": "audit"}
    ]


def test_json_of_the_stop_names_the_readers(moto_env: Aws, capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN a third reader on the stream
    stream = _deployed(moto_env)
    _foreign(moto_env, stream, "audit")
    _foreign(moto_env, stream, "search")
    # WHEN `doctable preflight --json` runs
    from doctable.cli import main

    code = main(["preflight", "-c", "stream=new-and-old", "--json"])
    record = json.loads(capsys.readouterr().out)
    # THEN it stops (exit 1, go false) with the finding as data
    (found,) = [f for f in record["findings"] if f["code"] == "subscriber.readers_exceeded"]
    assert (code, record["go"], found["level"], found["after"]) == (1, False, "STOP", 2)
    assert [r["reader"] for r in found["before"]] == ["consumer", "foreign", "foreign"]
