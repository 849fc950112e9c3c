"""What ``doctable plan`` adds for a global table (``replicas``), and the per-region limits it checks for every
table: each limit with a stable code, the workload's value, the default quota and the quota's source."""

from __future__ import annotations

import math
from dataclasses import dataclass

from doctable.plan.figures import ASSUMPTIONS, value


@dataclass(frozen=True)
class Limit:
    """One per-region default quota against what the workload needs of it."""

    code: str
    what: str
    needed: float
    quota: float
    source: str

    @property
    def exceeded(self) -> bool:
        return self.needed > self.quota


def _source(name: str) -> str:
    return ASSUMPTIONS[name][2]


def limits(
    *,
    write_units_per_second: float,
    read_units_per_second: float,
    concurrent_consumers: int,
    stream_readers: int = 1,
    global_table: bool = False,
) -> list[Limit]:
    """The default quotas one region's table and consumer meet. In a global table every replica takes every
    write (its own and the replicated ones), so each region needs what the whole workload needs."""
    readers_quota = (
        "quota_global_stream_readers_per_shard" if global_table else "quota_stream_readers_per_shard"
    )
    return [
        Limit(
            "TABLE_WRITE_QUOTA",
            "on-demand write request units per second, per table per region",
            write_units_per_second,
            value("quota_table_write_units"),
            _source("quota_table_write_units"),
        ),
        Limit(
            "TABLE_READ_QUOTA",
            "on-demand read request units per second, per table per region",
            read_units_per_second,
            value("quota_table_read_units"),
            _source("quota_table_read_units"),
        ),
        Limit(
            "LAMBDA_CONCURRENCY",
            "concurrent Lambda executions the mapping needs (shards x parallelization_factor), per region",
            concurrent_consumers,
            value("quota_lambda_concurrency"),
            _source("quota_lambda_concurrency"),
        ),
        Limit(
            "STREAM_READERS_PER_SHARD",
            "processes reading one DynamoDB stream shard at a time (the cleanup consumer and each subscriber on "
            "it)" + (", on a global table" if global_table else ""),
            stream_readers,
            value(readers_quota),
            _source(readers_quota),
        ),
    ]


def replica_monthly(
    *,
    replicas: tuple[str, ...],
    writes_per_second: float,
    item_kb: float,
    invocations_per_second: float,
    records_per_invocation: float,
    memory_mb: int,
    gbs_price: float,
    storage_usd: float,
    month_s: float,
) -> dict[str, float]:
    """The monthly lines a global table adds for its replica regions: each replica's replicated writes, its
    copy of the storage, the bytes sent to it, and its region's consumer (which proves delivery and deletes
    nothing: only the home region's consumer deletes blobs)."""
    if not replicas:
        return {}
    n = len(replicas)
    units = writes_per_second * max(1, math.ceil(item_kb)) * month_s
    cpu_share = min(1.0, memory_mb / value("lambda_full_vcpu_mb"))
    proof_seconds = records_per_invocation * value("cpu_s_per_record_proof") / cpu_share
    lines = {
        f"replicated writes ({n} replica region(s))": n
        * units
        / 1e6
        * value("price_ddb_replicated_write_per_m"),
        f"cross-region replication transfer ({n} region(s))": n
        * writes_per_second
        * item_kb
        * month_s
        / 1024
        / 1024
        * value("price_transfer_inter_region_gb"),
        f"replica consumers' Lambda requests ({n} region(s))": n
        * invocations_per_second
        * month_s
        / 1e6
        * value("price_lambda_requests_per_m"),
        f"replica consumers' Lambda GB-seconds ({n} region(s))": n
        * invocations_per_second
        * proof_seconds
        * memory_mb
        / 1024
        * month_s
        * gbs_price,
    }
    if storage_usd:
        lines[f"replica storage ({n} region(s))"] = n * storage_usd
    return lines


def replica_notes(replicas: tuple[str, ...]) -> list[str]:
    if not replicas:
        return []
    return [
        f"global table: {len(replicas) + 1} regions ({', '.join(replicas)} besides the home region); every replica "
        "takes every write, so the capacity figures and the limits hold in each region",
        "replicated writes are priced at us-east-1's on-demand rWRU price in every region; cross-region transfer at "
        "us-east-1's rate to another region",
        "replica consumers read their region's stream (free for Lambda triggers), log the proof line and delete "
        "nothing; blobs live in the home region's bucket, cleaned by the home consumer alone",
    ]
