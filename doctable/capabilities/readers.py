"""The live readers of the table's DynamoDB stream against a shard's limit (preflight, and the deploy's gate): the
stack's own readers once deployed (the cleanup consumer or a borrowed one, each subscriber on the stream) and every
other mapping live on the stream. On a global table each replica has its own stream, counted in its own region:
the home replica's against the home stack's readers, each replica region's against its replica stack's (that
region's consumer and the subscribers running there, contract/readers.py cites AWS's rule) and the mappings live
on that region's stream that the replica stack does not own.

STOP ``subscriber.readers_exceeded`` past the two readers a shard takes; on a global table WARN
``subscriber.readers_recommended`` past the one AWS recommends; STOP ``subscriber.readers_unlisted`` when the mappings
(or the replica stack naming its own) cannot be read, since the limit would go unchecked."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from contract import names
from contract.findings import Finding, Level
from contract.subscribers import GLOBAL_STREAM_READERS_MAX, STREAM_READERS_MAX, direct_readers, region_readers
from doctable.capabilities.protocol import replica_stack, replica_table, stack_physical_ids
from doctable.core.answers import error_code
from doctable.core.live import live_replica_regions

if TYPE_CHECKING:
    from contract.knobs import DocTableConfig
    from doctable.capabilities.protocol import Observed
    from doctable.core.aws import Aws

READERS_EXCEEDED, READERS_UNLISTED = "subscriber.readers_exceeded", "subscriber.readers_unlisted"
READERS_RECOMMENDED = "subscriber.readers_recommended"
CODES = frozenset({READERS_EXCEEDED, READERS_UNLISTED, READERS_RECOMMENDED})
READERS_SUBJECT = "stream readers"
MAPPING_TYPE = "AWS::Lambda::EventSourceMapping"
QUIET_STATES = frozenset({"Disabled", "Disabling", "Deleting"})  # a mapping in these reads nothing
LIST_MAPPINGS = "lambda:ListEventSourceMappings"
READ_REPLICA_STACK = "cloudformation:DescribeStacks"


def own_readers(target: DocTableConfig, region: str | None = None) -> list[dict[str, str]]:
    """The stack's readers of the table's DynamoDB stream once deployed: its mapping (the cleanup consumer or a
    borrowed one) when it reads that stream, and each subscriber whose source is the stream. ``region``: a global
    table's replica region, whose replica stack reads that region's stream (its consumer, the subscribers there)."""
    if region is not None:
        consumer = [{"reader": "consumer", "function": "built-in"}] if target.builtin_consumer else []
        return consumer + [
            {"reader": "subscriber", "name": name}
            for name in region_readers(target.subscribers, target.replicas, region)
        ]
    readers = []
    if target.has_mapping and not target.reads_kinesis:
        readers.append({"reader": "consumer", "function": target.borrowed_consumer_arn or "built-in"})
    direct = (
        region_readers(target.subscribers, target.replicas)  # the home replica's stream
        if target.is_global
        else direct_readers(target.subscribers)
    )
    return readers + [{"reader": "subscriber", "name": name} for name in direct]


def foreign_readers(mappings: list[dict[str, Any]], own: set[str]) -> list[dict[str, str]]:
    """The mappings live on the stream that are not the stack's (``own``: its mappings' UUIDs) and read it."""
    return [
        {"reader": "foreign", "uuid": m["UUID"], "function": _function_name(m.get("FunctionArn", ""))}
        for m in mappings
        if m.get("UUID") not in own and m.get("State") not in QUIET_STATES
    ]


def _function_name(arn: str) -> str:
    """A function's name from its ARN (``arn:<p>:lambda:<r>:<a>:function:<name>[:<qualifier>]``)."""
    parts = arn.split(":")
    return parts[6] if len(parts) > 6 and parts[5] == "function" else arn


def _reader_text(reader: dict[str, str]) -> str:
    if reader["reader"] == "consumer":
        borrowed = reader["function"] != "built-in"
        return f"the borrowed consumer {reader['function']}" if borrowed else "the cleanup consumer"
    if reader["reader"] == "subscriber":
        return f"subscriber {reader['name']}"
    return f"mapping {reader['uuid']} of function {reader['function']} (not this stack's)"


def readers_limit(target: DocTableConfig) -> int:
    """Direct readers a shard of the table's stream takes: two (more are throttled), on a global table's replica
    stream too, where AWS recommends one (contract/subscribers.py cites the rule)."""
    return STREAM_READERS_MAX


def _subject(region: str | None) -> str:
    return READERS_SUBJECT if region is None else f"{READERS_SUBJECT} ({region})"


def readers_findings(
    target: DocTableConfig, readers: list[dict[str, str]], region: str | None = None
) -> list[Finding]:
    """STOP when ``readers`` (the stack's and the foreign ones) are more than a shard takes; on a global table, WARN
    when they are more than AWS recommends for its replica streams (one). ``region``: the replica region whose
    stream they read (None: the home replica's, or a single-region table's)."""
    limit = readers_limit(target)
    listed = ", ".join(map(_reader_text, readers))
    if target.is_global and GLOBAL_STREAM_READERS_MAX < len(readers) <= limit:
        where = "the home replica's stream" if region is None else f"the replica stream in {region}"
        effect = (
            f"{len(readers)} readers of {where} ({listed}): AWS recommends {GLOBAL_STREAM_READERS_MAX} per shard on "
            "a global table to avoid throttling (DynamoDB developer guide, quotas: simultaneous readers of a "
            "shard); a throttled mapping retries, its iterator age grows: watch it, or run the subscriber in fewer "
            "regions"
        )
        return [
            Finding(
                Level.WARN, READERS_RECOMMENDED, _subject(region), f"{len(readers)} readers",
                f"{GLOBAL_STREAM_READERS_MAX} recommended", effect, before=readers, after=GLOBAL_STREAM_READERS_MAX,
            )
        ]  # fmt: skip
    if len(readers) <= limit:
        return []
    if target.is_global:
        way_out = (
            "Kinesis is not available with replicas: run a subscriber in fewer regions (regions = [...]), or delete "
            "or disable the mapping that is not this stack's"
        )
    else:
        way_out = (
            'read the others from the Kinesis destination (source = "kinesis" with kinesis=on), or delete or '
            "disable a mapping that is not this stack's"
        )
    where = "the table's DynamoDB stream" if region is None else f"the table's replica stream in {region}"
    effect = (
        f"{len(readers)} readers of {where} ({listed}); allowed: at most {limit} per shard (more are throttled): "
        f"{way_out}"
    )
    return [
        Finding(
            Level.STOP, READERS_EXCEEDED, _subject(region), f"{len(readers)} readers", f"at most {limit}", effect,
            before=readers, after=limit,
        )
    ]  # fmt: skip


def kept_stream(observed: Observed) -> str | None:
    """The live stream of the stack's table that the deploy keeps (same view type), None when there is none: a
    new stream (enabled, or its view type changed) has no reader but the stack's yet."""
    if not observed.compared:
        return None
    return _kept(observed.live_table, observed.target)


def _kept(table: dict[str, Any], target: DocTableConfig) -> str | None:
    spec = table.get("StreamSpecification") or {}
    if not spec.get("StreamEnabled") or spec.get("StreamViewType") != target.stream_view_type:
        return None
    arn = table.get("LatestStreamArn")
    return str(arn) if arn else None


def stack_mappings(observed: Observed) -> set[str]:
    """The UUIDs of the stack's mappings: its resources', and those its outputs name."""
    deployment = observed.deployment
    found = set(
        observed.once("stack-ids", lambda: stack_physical_ids(observed.aws, deployment)).get(MAPPING_TYPE, ())
    )
    return found | {uuid for key in _mapping_outputs(observed) if (uuid := deployment.out(key))}


def _mapping_outputs(observed: Observed) -> list[str]:
    """The outputs naming a stack's mappings (the home stack's and a replica stack's are named alike): the
    consumer's, and each subscriber's the deployed or the target knobs declare."""
    subscribers = {s.name for s in (*observed.deployed.subscribers, *observed.target.subscribers)}
    return [names.OUT_MAPPING_UUID] + [
        names.subscriber_output(name, names.OUT_SUBSCRIBER_MAPPING) for name in sorted(subscribers)
    ]


def live_mappings(aws: Aws, stream_arn: str) -> list[dict[str, Any]]:
    """Every event-source mapping on ``stream_arn`` (ListEventSourceMappings, page by page)."""
    pages = (
        aws.client("lambda").get_paginator("list_event_source_mappings").paginate(EventSourceArn=stream_arn)
    )
    return [m for page in pages for m in page.get("EventSourceMappings", [])]


def _unlisted(observed: Observed, exc: ClientError, action: str, region: str | None) -> list[Finding]:
    """STOP readers_unlisted for a refused read (any other error propagates)."""
    from doctable.core.aws import ACCESS_DENIED_CODES, failure_fields

    if error_code(exc) not in ACCESS_DENIED_CODES:
        raise exc
    limit = readers_limit(observed.target)
    where = "the table's stream" if region is None else f"the table's replica stream in {region}"
    effect = (
        f"the mappings on {where} could not be listed ({error_code(exc)}): the reader limit (at most {limit} per "
        f"shard) would go unchecked; allowed: a role with {action} (`doctable policy` prints it in the deployer's "
        "and the reader's preflight)"
    )
    return [
        Finding(
            Level.STOP, READERS_UNLISTED, _subject(region), "not listed", action, effect,
            before=failure_fields(exc), after=limit,
        )
    ]  # fmt: skip


def stream_reader_findings(observed: Observed) -> list[Finding]:
    """STOP when the stack's readers of the kept stream and the other mappings live on it are more than a shard
    takes; STOP too when the mappings cannot be listed (the limit would go unchecked). Then each replica region's
    stream of a global table, counted alike in its region."""
    stream = kept_stream(observed)
    if stream is None:
        return []  # the stack's own readers alone were counted with the settings (check_subscribers)
    try:
        mappings = live_mappings(observed.aws, stream)
    except ClientError as exc:
        return _unlisted(observed, exc, LIST_MAPPINGS, None)
    readers = own_readers(observed.target) + foreign_readers(mappings, stack_mappings(observed))
    found = readers_findings(observed.target, readers)
    for region in _kept_replica_regions(observed):
        found += _replica_findings(observed, region)
    return found


def _kept_replica_regions(observed: Observed) -> list[str]:
    """The replica regions the deploy keeps that hold a replica now (a new replica's stream has no reader yet)."""
    target = observed.target
    if not target.is_global:
        return []
    live = set(live_replica_regions(observed.live_table, observed.aws.region))
    return [region for region in target.replicas if region in live]


def _replica_findings(observed: Observed, region: str) -> list[Finding]:
    """One replica region's stream: its replica stack's readers and the other mappings live on it."""
    there = observed.aws.in_region(region)
    table = replica_table(observed, region)
    stream = _kept(table, observed.target) if table is not None else None
    if stream is None:
        return []
    try:
        mappings = live_mappings(there, stream)
    except ClientError as exc:
        return _unlisted(observed, exc, LIST_MAPPINGS, region)
    try:  # a replica stack holds the built-in consumer of its region: without it there is none
        builtin = observed.target.builtin_consumer
        stack = replica_stack(there, observed.target.replica_stack_name(region)) if builtin else None
    except ClientError as exc:
        return _unlisted(observed, exc, READ_REPLICA_STACK, region)
    outputs = {o["OutputKey"]: o.get("OutputValue") for o in (stack or {}).get("Outputs") or []}
    own = {str(outputs[key]) for key in _mapping_outputs(observed) if outputs.get(key)}
    readers = own_readers(observed.target, region) + foreign_readers(mappings, own)
    return readers_findings(observed.target, readers, region)


class ReadersCapability:
    """The readers of the table's DynamoDB streams (the home replica's, each replica region's) against a shard's
    limit: findings of the live mappings beside the stack's readers the target declares."""

    name = "stream readers"
    compares_live = False
    codes = CODES

    def findings(self, observed: Observed) -> list[Finding]:
        return stream_reader_findings(observed)


READERS = ReadersCapability()
