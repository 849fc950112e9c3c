"""The workload ``doctable plan`` models, and what it costs a month on a shape: each line of the bill (the
table, its indexes, the consumer, the options that cost on their own) and the notes on what the bill leaves out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from contract.shape import table_shape
from doctable.core.errors import UserError
from doctable.plan.figures import HOURS_PER_MONTH, value

if TYPE_CHECKING:
    from contract.knobs import DocTableConfig

KB_PER_GB = 1024 * 1024  # Kinesis bills GB of 1,024 KB records


@dataclass(frozen=True)
class Workload:
    """What the plan is asked about: the table's writes, their items and the blobs the items list."""

    writes_per_second: float
    item_kb: float = 1.0
    delete_ratio: float = 0.1
    blobs_per_item: int = 1
    # the share of dropped keys listed as manifest entries with their ETag (doctable.client writes every blob
    # so); the rest are plain keys, which the guarded consumer HEADs first
    manifest_share: float = 1.0
    index_share: float = 1.0  # the share of writes whose item carries each index's keys
    stored_items: int = 0  # items kept in the table: prices the table's and the indexes' storage

    @property
    def deletes_per_second(self) -> float:
        """The writes a second that delete an item."""
        return self.writes_per_second * self.delete_ratio


# Each figure of the workload: (its CLI flag, lowest, highest, a whole number, strictly above the lowest).
BOUNDS: dict[str, tuple[str, float, float, bool, bool]] = {
    "writes_per_second": ("--writes-per-second", 0, 10_000_000, False, True),
    "item_kb": ("--item-kb", 0, 400, False, True),
    "delete_ratio": ("--delete-ratio", 0, 1, False, False),
    "blobs_per_item": ("--blobs-per-item", 0, 10_000, True, False),
    "manifest_share": ("--manifest-share", 0, 1, False, False),
    "index_share": ("--index-share", 0, 1, False, False),
    "stored_items": ("--stored-items", 0, 10**13, True, False),
}


def workload_number(name: str, raw: object) -> float:
    """The workload's figure ``name`` (a field of :class:`Workload`) from ``raw`` (a number, or the CLI's text);
    UserError of one line naming its flag and the range allowed."""
    flag, low, high, integer, above = BOUNDS[name]
    allowed = (
        f"{'a whole number' if integer else 'a number'} {'above' if above else 'from'} {low:g} to {high:g}"
    )
    try:
        if integer and isinstance(raw, float) and not raw.is_integer():
            raise ValueError(raw)
        number = int(raw) if integer else float(raw)  # type: ignore[call-overload,arg-type]
    except (TypeError, ValueError):
        raise UserError(f"{flag} {raw!r} is not a number; allowed: {allowed}") from None
    if not (low < number <= high if above else low <= number <= high):
        raise UserError(f"{flag} {raw!r} is out of range; allowed: {allowed}")
    return number


def checked_workload(**figures: object) -> Workload:
    """A :class:`Workload` of ``figures`` (its fields, numbers or the CLI's text), each in its range."""
    numbers = {name: workload_number(name, raw) for name, raw in figures.items()}
    for name in ("blobs_per_item", "stored_items"):
        if name in numbers:
            numbers[name] = int(numbers[name])
    return Workload(**numbers)  # type: ignore[arg-type]


def dynamodb_shards(w: Workload, wcu_per_write: int) -> int:
    """The table's DynamoDB stream shards: one per partition, each taking ~1,000 write units a second."""
    return max(1, math.ceil(w.writes_per_second * wcu_per_write / value("partition_wcu")))


def kinesis_shards(w: Workload, record_kb: int) -> int:
    """The Kinesis destination's shards (on-demand): its starting shards, or what the writes' KB and records need."""
    return max(
        int(value("kinesis_on_demand_shards")),
        math.ceil(w.writes_per_second * record_kb / value("kinesis_shard_write_kb")),
        math.ceil(w.writes_per_second / 1000),
    )


def consumer_monthly(
    w: Workload,
    config: DocTableConfig,
    wcu_per_write: int,
    invocations: float,
    gb_seconds_usd: float,
    head_rate: float,
    month_s: float,
) -> dict[str, float]:
    """The monthly lines of the table's writes, its indexes and the consumer's work, without the reads and HEADs
    blob_key_reuse=never does not make."""
    deletes = w.deletes_per_second
    monthly = {
        "DynamoDB on-demand writes": w.writes_per_second
        * wcu_per_write
        * month_s
        / 1e6
        * value("price_ddb_write_per_m"),
        "DynamoDB stream reads by Lambda": 0.0,
        "DynamoDB consistent reads (BatchGetItem)": deletes
        * max(1, math.ceil(w.item_kb / 4))
        * month_s
        / 1e6
        * value("price_ddb_read_per_m"),
        "Lambda requests": invocations * month_s / 1e6 * value("price_lambda_requests_per_m"),
        "Lambda GB-seconds": gb_seconds_usd,
        "S3 HEAD (GET class)": head_rate * month_s / 1000 * value("price_s3_get_per_k"),
        "S3 DeleteObjects": 0.0,
    }
    monthly.update(index_monthly(w, config, month_s))
    if not config.guards_key_reuse:
        del monthly["DynamoDB consistent reads (BatchGetItem)"], monthly["S3 HEAD (GET class)"]
    if config.reads_kinesis:  # the mapping reads the Kinesis stream (billed below), not the DynamoDB stream
        del monthly["DynamoDB stream reads by Lambda"]
    if config.blob_prefix_cleanup:
        monthly["S3 ListObjectsV2 (prefix cleanup)"] = deletes * month_s / 1000 * value("price_s3_list_per_k")
    return monthly


def option_monthly(w: Workload, config: DocTableConfig, record_kb: int, month_s: float) -> dict[str, float]:
    """The monthly lines of the options that cost on their own: Kinesis, SnapStart, a customer managed key."""
    monthly: dict[str, float] = {}
    if config.has_kinesis:
        monthly.update(kinesis_monthly(w, config, record_kb))
    if config.snapstart:
        # The stack deletes a replaced version, so one snapshot is cached at a time.
        monthly["Lambda SnapStart snapshot cache (one version)"] = (
            config.memory / 1024 * month_s * value("price_snapstart_cache_gbs")
        )
    if getattr(config, "customer_managed_key", False):
        monthly["KMS customer managed key"] = value("price_kms_key_month")
    return monthly


def cost_notes(w: Workload, config: DocTableConfig) -> list[str]:
    """What the monthly cost leaves out or assumes, the options' notes included (the replicas' excepted)."""
    notes = [
        "stream reads by Lambda triggers are free (DynamoDB pricing: GetRecords by Lambda triggers is not charged)",
        "S3 DELETE requests are free (S3 pricing); DeleteObjects is counted as DELETEs",
        "free tiers, CloudWatch logs and data transfer are left out"
        + ("" if w.stored_items else "; storage too (give --stored-items to price the table's and indexes')"),
    ]
    if table_shape(config).indexes:
        notes.append(
            f"each index is written when a write's item carries its keys ({w.index_share:.0%} of writes, "
            "--index-share); an update that changes an index key writes that index twice (a delete and a put)"
        )
    # DynamoDB indexes an item only when it has every one of the index's key attributes
    for index in table_shape(config).indexes:
        if index.multi_attribute:
            partition = ", ".join(k.name for k in index.partition_keys)
            sort = ", ".join(k.name for k in index.sort_keys) or "none"
            notes.append(
                f"index {index.name} has a multi-attribute key (partition {partition}; sort {sort}): a write is "
                "written to it only when its item carries every one of them (count that share in --index-share)"
            )
    if config.has_kinesis:
        notes += kinesis_notes(config)
    if config.snapstart:
        notes.append(
            f"SnapStart restores: {config.memory / 1024 * 1000 * value('price_snapstart_restore_gb'):.3f} USD per "
            "1,000 new execution environments (Lambda does not publish how often it replaces one)"
        )
    if getattr(config, "customer_managed_key", False):
        notes.append(
            "KMS requests left out: DynamoDB caches the table key, and S3 HEAD/DeleteObjects decrypt nothing"
        )
    return notes


def index_item_kb(index: Any, item_kb: float) -> float:
    """The size of one index entry: the whole item with projection ALL, else its keys (0.1 KB assumed, and the
    included attributes as much again: the plan does not know their size)."""
    if index.projection == "ALL":
        return item_kb
    return min(item_kb, 0.1 * (1 + bool(index.non_key_attributes)))


def index_monthly(w: Workload, config: DocTableConfig, month_s: float) -> dict[str, float]:
    """Each index's write amplification (a write to an item carrying its keys also writes the index, in whole
    1 KB units of the index entry) and, with --stored-items, the table's and each index's storage."""
    out: dict[str, float] = {}
    shape = table_shape(config)
    for index in shape.indexes:
        units = max(1, math.ceil(index_item_kb(index, w.item_kb)))
        rate = w.writes_per_second * w.index_share * units
        out[f"index {index.name} writes ({units} WRU each)"] = (
            rate * month_s / 1e6 * value("price_ddb_write_per_m")
        )
    if w.stored_items:
        gb_price = value("price_ddb_storage_gb_month")
        overhead = value("index_item_overhead_bytes") / 1024
        out["table storage"] = w.stored_items * (w.item_kb + overhead) / 1024 / 1024 * gb_price
        for index in shape.indexes:
            kb = index_item_kb(index, w.item_kb) + overhead
            out[f"index {index.name} storage"] = w.stored_items * w.index_share * kb / 1024 / 1024 * gb_price
    return out


def kinesis_monthly(w: Workload, config: DocTableConfig, record_kb: int) -> dict[str, float]:
    """The monthly lines of Kinesis Data Streams for DynamoDB: change data capture units, and the stack's own
    on-demand stream (its hours, the GB ingested and the GB the mapping retrieves)."""
    month_s = HOURS_PER_MONTH * 3600
    cdc_units = w.writes_per_second * max(1, math.ceil(w.item_kb)) * month_s
    lines = {"DynamoDB change data capture units (Kinesis)": cdc_units / 1e6 * value("price_cdc_per_m")}
    if config.creates_kinesis_stream:
        gb = w.writes_per_second * record_kb * month_s / KB_PER_GB
        lines["Kinesis on-demand stream-hours"] = HOURS_PER_MONTH * value("price_kinesis_stream_hour")
        lines["Kinesis data ingested"] = gb * value("price_kinesis_ingest_gb")
        if config.reads_kinesis:
            lines["Kinesis data retrieved by the mapping"] = gb * value("price_kinesis_retrieval_gb")
    return lines


def kinesis_notes(config: DocTableConfig) -> list[str]:
    notes = [
        "kinesis: one change record per write, ~2x the item (old and new image) rounded up to 1 KB; only changes "
        "after the destination is ACTIVE are captured, possibly duplicated or out of order"
    ]
    if not config.creates_kinesis_stream:
        notes.append(
            "kinesis=<ARN>: the stream's own hours and GB are billed to its owner at its capacity mode's prices"
        )
    if config.reads_kinesis:
        notes.append(
            "consumer_source=kinesis: Lambda polls each Kinesis shard once a second and runs one batch per shard "
            "per parallelization factor at a time (shards x factor concurrent batches); GetRecords is limited to "
            "5 calls/s and 2 MB/s per shard, shared by every shared-throughput reader of the stream (a second "
            "reader halves the mapping's share; enhanced fan-out avoids that at its own price); shards assume "
            "on-demand capacity (4 to start)"
        )
    return notes
