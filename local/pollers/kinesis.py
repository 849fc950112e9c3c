"""Event-source mappings on a Kinesis data stream: local/pollers/streams.py's poller over each of the stream's shards.

Everything local/pollers/streams.py applies (batch size and window, Enabled, retries, bisect, record age,
ReportBatchItemFailures with the record's Kinesis ``sequenceNumber`` as ``itemIdentifier``, the on-failure
destination, FilterCriteria on the base64-decoded ``data``, MetricsConfig, waking on writes) applies per shard:
each shard has its own checkpoint and its records are delivered in order; a shard that appears later (a
resharding's children) is read from its start. StartingPosition TRIM_HORIZON, LATEST or AT_TIMESTAMP holds for
the shards there are when the mapping is created. The event is Lambda's Kinesis event; an on-failure record
carries ``KinesisBatchInfo``. The shards are read in turn by one thread per mapping (Lambda: one poller per
shard, in parallel).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from local.auth import service_roles
from local.patching import Target
from local.pollers.streams import POLL_SECONDS, Record, StreamPoller

MOTO_TARGETS = (
    Target("moto.kinesis.models", "kinesis_backends"),
    Target("moto.kinesis.models", "Shard.get_records", ("self", "last_sequence_id", "limit")),
    Target("moto.kinesis.models", "Shard.get_max_sequence_number", ("self",)),
    Target("moto.kinesis.models", "Stream.get_consumer_by_arn", ("self", "consumer_arn")),
)


@dataclass
class KinesisRecord(Record):
    shard: str = ""
    arrival: float = 0.0

    @property
    def created(self) -> float:
        return self.arrival


CONSUMER_SEPARATOR = (
    "/consumer/"  # a Kinesis enhanced fan-out consumer's ARN: <stream ARN>/consumer/<name>:<time>
)


def stream_arn_of(source_arn: str) -> str:
    """The stream's ARN of a mapping's source: itself, or the stream a fan-out consumer's ARN names."""
    stream, separator, _ = source_arn.partition(CONSUMER_SEPARATOR)
    return stream if separator else source_arn


def is_consumer_arn(source_arn: str) -> bool:
    return CONSUMER_SEPARATOR in source_arn and source_arn.split(":")[2:3] == ["kinesis"]


def consumer_of(account_id: str, region: str, consumer_arn: str) -> Any:
    """moto's registered consumer of this ARN, None when it is not (or no longer) registered."""
    from moto.kinesis.models import kinesis_backends

    for stream in list(kinesis_backends[account_id][region].streams.values()):
        found = stream.get_consumer_by_arn(consumer_arn)
        if found is not None:
            return found
    return None


class KinesisPoller(StreamPoller):
    BATCH_INFO = "KinesisBatchInfo"

    @property
    def idle_seconds(self) -> float:
        """Lambda polls each Kinesis shard once a second (with either cadence; a write wakes it in "write")."""
        return POLL_SECONDS

    def __init__(self, manager: Any, account_id: str, region: str, uuid_: str):
        super().__init__(manager, account_id, region, uuid_)
        self.checkpoints: dict[str, int] = {}  # per shard: the next sequence number to deliver
        self.windows: dict[str, float | None] = {}

    def stream(self, esm: Any) -> Any:
        """moto's stream of the mapping, None when it is gone (or was replaced by another of the same name)."""
        from moto.kinesis.models import kinesis_backends

        source = esm.event_source_arn
        if is_consumer_arn(source) and consumer_of(self.account_id, self.region, source) is None:
            return None  # its enhanced fan-out consumer was deregistered: nothing to read through
        backend = kinesis_backends[self.account_id][self.region]
        arn = stream_arn_of(source)
        return next((s for s in list(backend.streams.values()) if s.arn == arn), None)

    def shards(self, esm: Any) -> list[Any]:
        stream = self.stream(esm)
        return sorted(stream.shards.values(), key=lambda s: s.shard_id) if stream is not None else []

    # ---- the shard primitives of StreamPoller ----
    def shard_id(self, shard: Any) -> str:
        return str(shard.shard_id)

    def shard_start(self, shard: Any) -> int:
        return 1  # moto numbers each shard's records from 1 (records are never trimmed here)

    def shard_end(self, shard: Any) -> int:
        return int(shard.get_max_sequence_number()) + 1 if shard.records else 1

    def _start(self, esm: Any, shard: Any) -> int:
        position = esm.starting_position or "TRIM_HORIZON"
        if position == "LATEST":
            return self.shard_end(shard)
        if position == "AT_TIMESTAMP" and esm.starting_position_timestamp:
            ts = float(esm.starting_position_timestamp)
            later = [seq for seq, r in shard.records.items() if r.created_at >= ts]
            return int(later[0]) if later else self.shard_end(shard)
        return self.shard_start(shard)

    # ---- lifecycle and reading ----
    def initialise(self, esm: Any) -> None:
        for shard in self.shards(esm):
            self.checkpoints[shard.shard_id] = self._start(esm, shard)
        self.status.state = "Enabled" if esm.enabled else "Disabled"

    def poll(self, esm: Any) -> float:
        shards = self.shards(esm)
        soonest = POLL_SECONDS
        for shard in shards:
            if self.stopped.is_set():
                break
            shard_id = shard.shard_id
            self.status.checkpoint = self.checkpoints.setdefault(shard_id, self.shard_start(shard))
            self.status.window_started = self.windows.get(shard_id)
            try:
                soonest = min(soonest, self.poll_shard(esm, shard))
            finally:
                self.checkpoints[shard_id] = self.status.checkpoint or self.shard_start(shard)
                self.windows[shard_id] = self.status.window_started
        return soonest

    def _read(self, esm: Any, shard: Any, start: int, limit: int) -> list[Record]:
        records, _, _ = shard.get_records(str(start - 1), limit)
        return [
            KinesisRecord(
                seq=int(r.sequence_number),
                data={"partitionKey": r.partition_key, "data": r.data},
                shard=shard.shard_id,
                arrival=float(r.created_at),
            )
            for r in records
        ]

    def _event(self, records: list[Record], esm: Any) -> dict[str, Any]:
        role = service_roles.function_role(self.account_id, self.region, esm.function_arn)
        out = []
        for record in records:
            shard = record.shard if isinstance(record, KinesisRecord) else ""
            out.append(
                {
                    "kinesis": {
                        "kinesisSchemaVersion": "1.0",
                        "partitionKey": record.data["partitionKey"],
                        "sequenceNumber": str(record.seq),
                        "data": record.data["data"],
                        "approximateArrivalTimestamp": round(record.created, 3),
                    },
                    "eventSource": "aws:kinesis",
                    "eventVersion": "1.0",
                    "eventID": f"{shard}:{record.seq}",
                    "eventName": "aws:kinesis:record",
                    "invokeIdentityArn": role,
                    "awsRegion": self.region,
                    "eventSourceARN": esm.event_source_arn,
                }
            )
        return {"Records": out}

    def position(self) -> tuple[str | None, str | None, int | None]:
        """Summed over the shards: the records pending; checkpoint and end as ``shard:seq`` lists."""
        esm = self.mapping()
        shards = self.shards(esm) if esm is not None else []
        if not shards:
            return None, None, None
        pending = 0
        for shard in shards:
            pending += max(
                0, self.shard_end(shard) - self.checkpoints.get(shard.shard_id, self.shard_start(shard))
            )
        checkpoint = ",".join(f"{s.shard_id}:{self.checkpoints.get(s.shard_id, 1)}" for s in shards)
        end = ",".join(f"{s.shard_id}:{self.shard_end(s)}" for s in shards)
        return checkpoint, end, pending
