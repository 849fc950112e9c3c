"""Preflight counts each replica region's stream readers of a global table in that region
(doctable/capabilities/readers.py): the replica stack's (its consumer, the subscribers running there, named by its
mapping outputs) and every other mapping live on that replica's stream, against the limit as at home. moto in
process with the local AWS's global tables (tests/unit/test_ops_global.py's fixtures)."""

from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError

from contract.findings import Finding, Level
from doctable.capabilities import readers
from doctable.core.aws import Aws
from doctable.lifecycle import preflight as p
from tests.unit.test_ops_global import (
    B,
    C,
    deploy_global,
    deployment_of,
    global_env,
    knobs,
    stream_reader_function,
    wire_replica_stack,
)

pytestmark = pytest.mark.unit
__all__ = ["global_env"]  # the fixture, used by name


def foreign_mapping(aws: Aws, region: str, name: str) -> str:
    """A function of someone else's in ``region`` and its mapping on that region's replica stream: its UUID."""
    there = aws.in_region(region)
    function = stream_reader_function(aws, region, name)
    stream = there.client("dynamodb").describe_table(TableName="items-dev")["Table"]["LatestStreamArn"]
    mapping = there.client("lambda").create_event_source_mapping(
        EventSourceArn=stream, FunctionName=function, StartingPosition="LATEST"
    )
    return str(mapping["UUID"])


def reader_findings(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.code in readers.CODES]


def test_a_replica_regions_stream_with_more_readers_than_a_shard_takes_is_stopped_there(
    global_env: Aws,
) -> None:
    # GIVEN a global table with replicas in B and C, each replica stack's consumer on its region's stream, and two
    # mappings of someone else's on B's
    config = knobs(B, C)
    deploy_global(global_env, config)
    own = {region: wire_replica_stack(global_env, config, region) for region in (B, C)}
    theirs = [foreign_mapping(global_env, B, name) for name in ("audit", "search")]
    # WHEN preflight observes
    found = reader_findings(p.run_preflight(global_env, deployment_of(global_env, config)))
    # THEN B's stream has three readers, one STOP naming the region; the replica stack's mapping is its consumer
    (stop,) = found
    assert (stop.level, stop.code, stop.subject, stop.after) == (
        Level.STOP, "subscriber.readers_exceeded", f"stream readers ({B})", 2,
    )  # fmt: skip
    assert stop.before == [
        {"reader": "consumer", "function": "built-in"},
        *(
            {"reader": "foreign", "uuid": uuid, "function": f"{name}-{B}"}
            for uuid, name in zip(theirs, ("audit", "search"), strict=True)
        ),
    ]
    assert own[B] not in json.dumps(stop.before) and f"replica stream in {B}" in stop.effect


def test_a_second_reader_of_a_replica_stream_is_beyond_awss_recommendation_there(global_env: Aws) -> None:
    # GIVEN the replica stack's consumer on C's stream and one mapping of someone else's beside it
    config = knobs(B, C)
    deploy_global(global_env, config)
    wire_replica_stack(global_env, config, C)
    foreign_mapping(global_env, C, "audit")
    # WHEN preflight observes THEN C's two readers are a WARN there, and B (one reader) says nothing
    (warn,) = reader_findings(p.run_preflight(global_env, deployment_of(global_env, config)))
    assert (warn.level, warn.code, warn.subject, warn.after) == (
        Level.WARN, "subscriber.readers_recommended", f"stream readers ({C})", 1,
    )  # fmt: skip


def test_a_replica_stream_whose_mappings_cannot_be_listed_is_a_stop(
    global_env: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a global table whose replica in C answers ListEventSourceMappings with AccessDenied
    config = knobs(B, C)
    deploy_global(global_env, config)
    listed = readers.live_mappings

    def refused_in_c(aws: Aws, stream_arn: str) -> list[dict[str, object]]:
        if aws.region == C:
            error = {"Code": "AccessDeniedException", "Message": "not authorized to perform: lambda:List..."}
            raise ClientError({"Error": error}, "ListEventSourceMappings")
        return listed(aws, stream_arn)

    monkeypatch.setattr(readers, "live_mappings", refused_in_c)
    # WHEN preflight observes THEN the limit would go unchecked in C: a STOP naming C and the action
    (stop,) = reader_findings(p.run_preflight(global_env, deployment_of(global_env, config)))
    assert (stop.level, stop.code, stop.subject, stop.declared, stop.after) == (
        Level.STOP, "subscriber.readers_unlisted", f"stream readers ({C})", "lambda:ListEventSourceMappings", 2,
    )  # fmt: skip
    assert stop.before["code"] == "aws.access_denied"
