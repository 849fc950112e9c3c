"""verify's writing rows for a global table with the built-in consumer: ``replica-delivery:<region>`` for the home
region and each replica region. Each writes a nudge (a verify test item under the run's partition key, so it never
touches application data) in its region, waits until every other region's replica returns it (a consistent
GetItem there), and until every region's consumer has logged a ``stream_records_received`` line covering the
nudge's record in that region's stream: by its sequence number, read off that region's stream, or (the stream could
not be followed) a line written after the nudge. The nudge is deleted where it was written when the row ends, and
again in the home table with verify's other test items."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from contract import names
from contract.knobs import STARTING_LATEST, STARTING_POSITION_CFN, DocTableConfig
from contract.shape import EVENT_INSERT, mapping_shape
from doctable.capabilities.protocol import replica_stack
from doctable.core.answers import call_or_none
from doctable.core.aws import Aws, failure_fields, user_error_for
from doctable.verify.expect import DELIVERY_PREFIX
from doctable.verify.proof import (
    CLOCK_SKEW_MS,
    SEQUENCE_LOOKUP_BOUND,
    find_proof,
    is_change_of,
    open_shard_iterators,
)
from doctable.verify.record import CheckFailed

if TYPE_CHECKING:
    from doctable.core.deployment import Deployment
    from doctable.core.render import Progress
    from doctable.verify.items import Scratch

LATEST = STARTING_POSITION_CFN[STARTING_LATEST]


def delivery_row_id(region: str) -> str:
    """The row id of the nudge written in ``region``."""
    return f"{DELIVERY_PREFIX}{region}"


def delivery_regions(config: DocTableConfig, home: str | None) -> list[str]:
    """The regions a nudge is written in (the home one first); none for a single-region table, a consumer not
    built in (the replica stacks hold the built-in consumer's copies) or an unknown home region."""
    if not (config.is_global and config.builtin_consumer and home):
        return []
    return [home, *config.replicas]


def delivery_rows(config: DocTableConfig, home: str | None) -> list[tuple[str, str, str]]:
    """(row id, check, expected) per region of ``delivery_regions``."""
    regions = delivery_regions(config, home)
    return [
        (
            delivery_row_id(region),
            f"a write in {region} reaches every region",
            f"a nudge written in {region}: a consistent get returns it in "
            f"{', '.join(r for r in regions if r != region)}; a {names.PROOF_LOG_MESSAGE} line covers it in "
            f"every region's consumer ({', '.join(regions)})",
        )
        for region in regions
    ]


@dataclass
class Region:
    """One region of the global table as a nudge's check sees it: its clients, its replica's stream and its
    consumer's log group, and what has been observed there."""

    name: str
    aws: Aws
    group: str
    stream_arn: str | None
    iterators: list[str] = field(default_factory=list)
    sequence: str | None = None
    seen: float | None = None  # seconds after the write: the replica returns the nudge
    proven: float | None = None  # seconds after the write: a proof line covers it

    def read_stream(self, key: dict[str, str], event_name: str) -> None:
        """Read the open shards forward once, noting the sequence number of the nudge's record."""
        streams = self.aws.client("dynamodbstreams")
        following = []
        for iterator in self.iterators:
            try:
                reply = streams.get_records(ShardIterator=iterator, Limit=1000)
            except (ClientError, BotoCoreError):
                continue
            for record in reply.get("Records", []):
                if is_change_of(record, key, event_name):
                    self.sequence = str(record["dynamodb"]["SequenceNumber"])
                    self.iterators = []
                    return
            if reply.get("NextShardIterator"):
                following.append(reply["NextShardIterator"])
        self.iterators = following


class VerifyRun(Protocol):
    """What the nudges take of the verify run (doctable/verify/checks.py ``Verifier``)."""

    aws: Aws
    deployment: Deployment
    pk: str
    scratch: Scratch
    progress: Progress
    timeout: float
    settle: float
    wall: Callable[[], float]


def delivery_checks(run: VerifyRun) -> dict[str, Callable[[], str]]:
    """Row id -> its check, one per region of ``delivery_regions``."""
    return DeliveryRun(run).checks()


@dataclass
class DeliveryRun:
    """The nudges of one verify run (its deployment, key, scratch list, waits' bound and progress), and the
    regions they have reached."""

    run: VerifyRun
    _regions: dict[str, Region] = field(default_factory=dict)

    @property
    def table(self) -> str:
        return self.run.deployment.table_name

    def checks(self) -> dict[str, Callable[[], str]]:
        """Row id -> its check, one per region of ``delivery_regions``."""
        regions = delivery_regions(self.run.deployment.config, self.run.deployment.region)
        return {delivery_row_id(r): functools.partial(self.check, r, regions) for r in regions}

    # ------------------------------------------------------------------------------------------ the regions
    def region(self, name: str) -> Region:
        """The region's stream and consumer log group (the home stack's outputs, or the replica stack's there)."""
        if name in self._regions:
            return self._regions[name]
        config = self.run.deployment.config
        there = self.run.aws.in_region(name)
        if name == self.run.deployment.region:
            group = self.run.deployment.out(names.OUT_CONSUMER_LOG_GROUP)
            where = f"the stack {config.stack_name}"
        else:
            stack = replica_stack(there, config.replica_stack_name(name))
            if stack is None:
                raise CheckFailed(f"{name}: stack {config.replica_stack_name(name)} not found")
            outputs = {o["OutputKey"]: o.get("OutputValue", "") for o in stack.get("Outputs") or []}
            group = outputs.get(names.OUT_CONSUMER_LOG_GROUP)
            where = f"the stack {config.replica_stack_name(name)}"
            self._settle(there, name, outputs.get(names.OUT_MAPPING_UUID))
        if not group:
            raise CheckFailed(f"{name}: {where} has no {names.OUT_CONSUMER_LOG_GROUP} output")
        table = (call_or_none(there.client("dynamodb").describe_table, TableName=self.table) or {}).get(
            "Table"
        )
        if table is None:
            raise CheckFailed(f"{name}: no replica of {self.table}")
        self._regions[name] = Region(name, there, group, table.get("LatestStreamArn"))
        return self._regions[name]

    def _settle(self, there: Aws, name: str, uuid: str | None) -> None:
        """A LATEST poller misses writes made right after it reports Enabled: wait until the region's has settled
        (the home one is settled by the stream-delivery row)."""
        mapping = call_or_none(there.client("lambda").get_event_source_mapping, UUID=uuid) if uuid else None
        if not mapping or mapping.get("StartingPosition") != LATEST:
            return
        last = mapping.get("LastModified")
        age = max(0.0, self.run.wall() - last.timestamp()) if isinstance(last, datetime) else 0.0
        if self.run.settle - age > 0:
            self.run.progress.countdown(f"the {LATEST} poller in {name} to settle", self.run.settle - age)

    # ------------------------------------------------------------------------------------------- the check
    def check(self, origin: str, every: list[str]) -> str:
        regions = [self.region(r) for r in every]
        key = {names.PARTITION_KEY: self.run.pk, names.SORT_KEY: f"delivery-{origin}"}
        typed_key = {k: {"S": v} for k, v in key.items()}
        shape = mapping_shape(self.run.deployment.config)
        event_name = shape.nudge_event if shape else EVENT_INSERT
        for region in regions:
            try:
                streams = region.aws.client("dynamodbstreams")
                region.iterators = (
                    open_shard_iterators(streams, region.stream_arn) if region.stream_arn else []
                )
            except (ClientError, BotoCoreError):
                region.iterators = []
            region.sequence, region.seen, region.proven = None, None, None
        writer = next(r for r in regions if r.name == origin)
        ddb = writer.aws.client("dynamodb")
        write_ms = int(self.run.wall() * 1000)
        self.run.scratch.items.append((key[names.PARTITION_KEY], key[names.SORT_KEY]))
        started = self.run.progress.clock()
        try:
            item = {
                **typed_key,
                "kind": {"S": "replica-nudge"},
                "at": {"N": str(write_ms)},
                "origin": {"S": origin},
            }
            ddb.put_item(TableName=self.table, Item=item)
            writer.seen = 0.0
            return self._observe(origin, regions, typed_key, key, event_name, write_ms, started, ddb)
        finally:
            try:
                ddb.delete_item(TableName=self.table, Key=typed_key)
            except (ClientError, BotoCoreError) as exc:
                self.run.progress.say(f"clean-up could not remove the nudge in {origin}: {exc}")

    def _observe(
        self,
        origin: str,
        regions: list[Region],
        typed_key: dict[str, Any],
        key: dict[str, str],
        event_name: str,
        write_ms: int,
        started: float,
        ddb: Any,
    ) -> str:
        def replicated() -> bool | None:
            for region in regions:
                if region.seen is None:
                    got = _in(region.name, region.aws.client("dynamodb").get_item)(
                        TableName=self.table, Key=typed_key, ConsistentRead=True
                    )
                    if "Item" in got:
                        region.seen = self.run.progress.clock() - started
            return True if all(r.seen is not None for r in regions) else None

        done, _ = self.run.progress.wait(
            f"the nudge written in {origin} to reach every region", replicated, self.run.timeout
        )
        if done is None:
            missing = [r.name for r in regions if r.seen is None]
            raise CheckFailed(f"not replicated to {', '.join(missing)} within {self.run.timeout:.0f}s")
        if event_name != EVENT_INSERT:  # the mapping's filter passes the REMOVE only
            ddb.delete_item(TableName=self.table, Key=typed_key)
        elapsed = self.run.progress.clock() - started

        def proven() -> bool | None:
            for region in regions:
                if region.proven is not None:
                    continue
                if region.iterators and self.run.progress.clock() - started > elapsed + SEQUENCE_LOOKUP_BOUND:
                    region.iterators = []  # the record was not found in the stream: fall back to time
                if region.iterators:
                    region.read_stream(key, event_name)
                    if region.sequence is None:
                        continue
                # without the record's sequence number, a line written after the nudge (none before it)
                after = write_ms if region.sequence else write_ms + CLOCK_SKEW_MS
                if _in(region.name, find_proof)(region.aws, region.group, self.table, region.sequence, after):
                    region.proven = self.run.progress.clock() - started
            return True if all(r.proven is not None for r in regions) else None

        done, _ = self.run.progress.wait(
            f"a {names.PROOF_LOG_MESSAGE} line covering the nudge written in {origin} in every region",
            proven,
            max(1.0, self.run.timeout - elapsed),
            interval=1.0,
            max_interval=5.0,
        )
        if done is None:
            missing = [r.name for r in regions if r.proven is None]
            raise CheckFailed(
                f"no {names.PROOF_LOG_MESSAGE} line covering the nudge in {', '.join(missing)} within "
                f"{self.run.timeout:.0f}s"
            )
        return "; ".join(
            f"{r.name}: {'written' if r.name == origin else f'replicated {r.seen:.1f}s'}, "
            f"proven {r.proven:.1f}s" + ("" if r.sequence else " (by time)")
            for r in regions
        )


def _in(region: str, call: Callable[..., Any]) -> Callable[..., Any]:
    """``call``, whose AWS errors name ``region`` (the row fails naming the region it could not read)."""

    def named(*args: Any, **kwargs: Any) -> Any:
        try:
            return call(*args, **kwargs)
        except (ClientError, BotoCoreError) as exc:
            raise CheckFailed(f"{region}: {user_error_for(exc) or exc}", failure_fields(exc)) from exc

    return named
