"""The readers of a table's streams against their limits (contract/subscribers.py declares the subscribers): the
DynamoDB stream's per shard, per region on a global table (each replica has its own stream), and the Kinesis
destination's shared and enhanced fan-out reads. Standard library only."""

from __future__ import annotations

from typing import Protocol


class Reader(Protocol):
    """What the counts read of a subscriber (contract.subscribers.SubscriberSpec; named so to import nothing of it)."""

    @property
    def name(self) -> str: ...

    @property
    def reads_kinesis(self) -> bool: ...

    def runs_in(self, replicas: tuple[str, ...], region: str | None = None) -> bool: ...


def direct_readers(specs: tuple[Reader, ...]) -> list[str]:
    """The subscribers that read the table's DynamoDB stream themselves (each one of its shard's readers)."""
    return [s.name for s in specs if not s.reads_kinesis]


# A DynamoDB stream shard has at most two simultaneous readers (more are throttled: "More than 2 processes are
# reading from the same streams shard"). On a global table AWS recommends one: the DynamoDB developer guide, "Service,
# account, and table quotas in Amazon DynamoDB", section "Simultaneous readers of a shard in DynamoDB Streams"
# (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html#limits-dynamodb-streams-simultaneous-shard-readers):
# "For single-Region tables that are not global tables, you can design for up to two processes to read from the
# same DynamoDB Streams shard at the same time. Exceeding this limit can result in request throttling. For global
# tables, we recommend you limit the number of simultaneous readers to one to avoid request throttling."
# Each replica has its own stream (its own shards): the readers are counted per region. The settings refuse more
# than two in a region (throttled); a second reader of a global table's replica stream (a subscriber beside the
# cleanup consumer) is beyond AWS's recommendation, and preflight says so (WARN subscriber.readers_recommended).
# Beyond that, a single-region table's Kinesis destination fans out (not built with replicas).
STREAM_READERS_MAX = 2
GLOBAL_STREAM_READERS_MAX = 1


def region_readers(
    specs: tuple[Reader, ...], replicas: tuple[str, ...], region: str | None = None
) -> list[str]:
    """The subscribers that read the DynamoDB stream of ``region`` (None: the home region) themselves."""
    return [s.name for s in specs if not s.reads_kinesis and s.runs_in(replicas, region)]


def reader_problems(
    problems: list[str],
    specs: tuple[Reader, ...],
    *,
    is_global: bool,
    consumer_reads_stream: bool,
    replicas: tuple[str, ...] = (),
) -> None:
    """Each region's DynamoDB stream readers (the cleanup consumer and the direct subscribers running there) against
    the limit, one line per region with too many; then the Kinesis destination's fan-out consumers against theirs."""
    consumer = "the cleanup consumer, " if consumer_reads_stream else ""
    for region in (None, *replicas) if is_global else (None,):
        direct = region_readers(specs, replicas, region) if is_global else direct_readers(specs)
        readers = len(direct) + (1 if consumer_reads_stream else 0)
        if readers <= STREAM_READERS_MAX:
            continue
        if is_global:
            where = f"the replica stream in {region}" if region else "the home replica's stream"
            problems.append(
                f"{readers} readers of {where} ({consumer}{', '.join(direct)}); allowed: at most "
                f"{STREAM_READERS_MAX} per shard in each region (more are throttled; AWS recommends "
                f"{GLOBAL_STREAM_READERS_MAX} on a global table): run the others in fewer regions (regions = [...])"
            )
        else:
            problems.append(
                f"{readers} readers of the table's DynamoDB stream ({consumer}{', '.join(direct)}); allowed: at most "
                f"{STREAM_READERS_MAX} per shard (more are throttled): read the others from the Kinesis destination "
                '(source = "kinesis" with kinesis=on)'
            )
    on_kinesis = [s.name for s in specs if s.reads_kinesis]
    if len(on_kinesis) > KINESIS_FAN_OUT_CONSUMERS_MAX:
        problems.append(
            f"{len(on_kinesis)} subscribers read the Kinesis destination, each through its own enhanced fan-out "
            f"consumer; allowed: at most {KINESIS_FAN_OUT_CONSUMERS_MAX} (Kinesis registers at most "
            f"{KINESIS_FAN_OUT_CONSUMERS_MAX} consumers per stream)"
        )


# Kinesis: a shard's shared read throughput (2 MB/s and 5 GetRecords calls per second) is divided among every
# reader polling it; Lambda's guide has a function read through its own enhanced fan-out consumer (2 MB/s per
# shard of its own, pushed by SubscribeToShard) when more share the stream, and a stream registers at most 20
# (the Kinesis quotas page). The cleanup consumer on Kinesis reads shared; so do the subscribers while they and
# it are at most two.
KINESIS_SHARED_READERS_MAX = 2
KINESIS_FAN_OUT_CONSUMERS_MAX = 20


def kinesis_readers(specs: tuple[Reader, ...], consumer_reads_kinesis: bool) -> int:
    """The readers of the table's Kinesis destination: the subscribers on it and the cleanup consumer."""
    return sum(1 for s in specs if s.reads_kinesis) + (1 if consumer_reads_kinesis else 0)


def fans_out(specs: tuple[Reader, ...], consumer_reads_kinesis: bool) -> bool:
    """Do the subscribers on Kinesis each read through their own enhanced fan-out consumer?"""
    return kinesis_readers(specs, consumer_reads_kinesis) > KINESIS_SHARED_READERS_MAX
