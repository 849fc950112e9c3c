"""``doctable plan``: a capacity and cost model of one workload on the deployed shape, with no AWS call.

The workload is given on the command line (writes per second, item size, delete ratio, blobs per item) and the
shape by the knobs (``-c batch_size=100 -c parallelization_factor=2 ...``, resolved as the CDK app resolves
them). Every figure is printed with the assumption it rests on and that assumption's published source.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from contract.knobs import ARCHITECTURES
from contract.shape import table_shape
from doctable.core.context import resolve_knobs
from doctable.plan import readers
from doctable.plan.figures import ASSUMPTIONS, HOURS_PER_MONTH, value
from doctable.plan.global_table import limits, replica_monthly, replica_notes
from doctable.plan.workload import KB_PER_GB as KB_PER_GB  # re-exported: Kinesis's billing unit
from doctable.plan.workload import (
    Workload,
    checked_workload,
    consumer_monthly,
    cost_notes,
    dynamodb_shards,
    index_item_kb,
    kinesis_shards,
    option_monthly,
)

if TYPE_CHECKING:
    from contract.knobs import DocTableConfig
    from doctable.core.target import Target

PRICED_REGION = "us-east-1"  # the region every price in plan_model is for


@dataclass(frozen=True)
class Plan:
    """The plan of one workload on one shape: the stream's delivery, a batch's time and the iterator-age risk, the S3
    request rates, the monthly cost by line (USD, us-east-1 list prices), the notes, the regional limits, the
    streams' readers and each subscriber's throughput."""

    workload: Workload
    knobs: dict[str, Any]
    shards: int
    concurrent_consumers: int
    records_per_second_per_shard: float
    invocations_per_second: float
    records_per_invocation: float
    seconds_per_batch: float
    shard_capacity_records_per_second: float
    iterator_age_risk: str
    s3_delete_keys_per_second: float
    s3_head_per_second: float
    s3_prefix_use: float
    monthly_usd: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    replicas: tuple[str, ...] = ()
    # per-region default quotas: {code, what, needed, quota, source, exceeded}
    limits: list[dict[str, Any]] = field(default_factory=list)
    # each stream's readers against their limits, each subscriber's throughput, and the WARNs they make
    stream_readers: dict[str, Any] = field(default_factory=dict)
    subscribers: list[dict[str, Any]] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)

    @property
    def monthly_total(self) -> float:
        return sum(self.monthly_usd.values())

    def text(self) -> str:
        """The plan as ``doctable plan`` prints it: every figure with what it rests on."""
        return render(self)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["monthly_total_usd"] = self.monthly_total
        data["assumptions"] = {
            k: {"value": v, "what": what, "source": s} for k, (v, what, s) in ASSUMPTIONS.items()
        }
        return data


def predict_delivery(
    records: int, write_seconds: float, batch_size: int, window_s: float = 0.0
) -> dict[str, float]:
    """Invocations and records per invocation for ``records`` written in ``write_seconds`` to one shard, with
    one batch per poll (four polls a second, or one per batching window when longer)."""
    interval = max(1 / value("polls_per_second"), window_s)
    polls = max(1, math.ceil(write_seconds / interval))
    per_poll = records / polls
    invocations = polls * math.ceil(per_poll / batch_size) if per_poll > batch_size else polls
    invocations = min(invocations, records)
    return {
        "invocations": invocations,
        "records_per_invocation": records / invocations if invocations else 0.0,
    }


@dataclass(frozen=True)
class _Delivery:
    """How the stream reaches the consumer: its shards, their polls, the batches they make and their pace."""

    shards: int
    per_shard: float  # records per second per shard
    interval: float  # seconds between polls of a shard
    batch: float  # records per invocation
    invocations: float  # invocations per second, every shard together


def build_plan(
    workload: Workload, config: DocTableConfig, subscriber_ms: dict[str, float] | None = None
) -> Plan:
    """The plan of ``workload`` on the shape ``config`` gives: the stream's delivery, a batch's time and the
    iterator-age risk it makes, the S3 request rates, the monthly cost with its notes, the regional limits, the
    streams' readers and each subscriber's throughput (from ``subscriber_ms``, its milliseconds per record)."""
    w = workload
    wcu_per_write = max(1, math.ceil(w.item_kb))
    record_kb = max(1, math.ceil(w.item_kb * value("kinesis_record_kb_per_item_kb")))
    flow = _delivery(w, config, wcu_per_write, record_kb)
    seconds = _batch_seconds(w, config, flow.batch)
    capacity = config.parallelization_factor * flow.batch / seconds if seconds else math.inf
    use = flow.per_shard / capacity if capacity != math.inf else 0.0
    key_rate = w.deletes_per_second * w.blobs_per_item
    head_rate = key_rate * (1 - w.manifest_share) if config.guards_key_reuse else 0.0
    month_s = HOURS_PER_MONTH * 3600
    gbs_price = value(
        "price_lambda_gbs_arm64" if config.architecture == ARCHITECTURES[0] else "price_lambda_gbs_x86_64"
    )
    gb_seconds_usd = flow.invocations * seconds * config.memory / 1024 * month_s * gbs_price
    monthly = consumer_monthly(w, config, wcu_per_write, flow.invocations, gb_seconds_usd, head_rate, month_s)
    monthly.update(option_monthly(w, config, record_kb, month_s))
    replicas = tuple(config.replicas)
    storage = sum(v for k, v in monthly.items() if k.endswith("storage"))
    monthly.update(
        replica_monthly(
            replicas=replicas,
            writes_per_second=w.writes_per_second,
            item_kb=w.item_kb,
            invocations_per_second=flow.invocations,
            records_per_invocation=flow.batch,
            memory_mb=config.memory,
            gbs_price=gbs_price,
            storage_usd=storage,
            month_s=month_s,
        )
    )
    stream_readers = readers.stream_readers(config)
    rows = readers.subscriber_rows(w, config, subscriber_ms or {}, wcu_per_write, record_kb)
    return Plan(
        workload=w,
        knobs=_plan_knobs(config),
        shards=flow.shards,
        concurrent_consumers=flow.shards * config.parallelization_factor,
        records_per_second_per_shard=flow.per_shard,
        invocations_per_second=flow.invocations,
        records_per_invocation=flow.batch,
        seconds_per_batch=seconds,
        shard_capacity_records_per_second=capacity,
        iterator_age_risk=_iterator_age_risk(config, seconds, use, flow.interval),
        s3_delete_keys_per_second=key_rate,
        s3_head_per_second=head_rate,
        s3_prefix_use=max(key_rate / value("s3_delete_per_prefix"), head_rate / value("s3_get_per_prefix")),
        monthly_usd=monthly,
        notes=cost_notes(w, config) + replica_notes(replicas) + readers.notes(stream_readers),
        replicas=replicas,
        limits=_limits(w, config, wcu_per_write, flow.shards, stream_readers["dynamodb"]),
        stream_readers=stream_readers,
        subscribers=rows,
        findings=[f.as_dict() for f in readers.findings(rows)],
    )


def _delivery(w: Workload, config: DocTableConfig, wcu_per_write: int, record_kb: int) -> _Delivery:
    """The shards (the Kinesis data stream's when the mapping reads it, polled once a second; else the DynamoDB
    stream's, one per partition's write capacity), and the batches their polls make."""
    if config.reads_kinesis:  # the mapping reads the Kinesis data stream's shards, polled once a second
        shards = kinesis_shards(w, record_kb)
        polls = value("kinesis_polls_per_second")
    else:
        shards = dynamodb_shards(w, wcu_per_write)
        polls = value("polls_per_second")
    per_shard = w.writes_per_second / shards
    interval = max(1 / polls, float(config.batching_window))
    if per_shard * interval > config.batch_size:
        batch = float(config.batch_size)
    else:
        batch = max(1.0, per_shard * interval)
    return _Delivery(shards, per_shard, interval, batch, shards * per_shard / batch)


def _batch_seconds(w: Workload, config: DocTableConfig, batch: float) -> float:
    """The time the consumer takes for one batch of ``batch`` records."""
    # One batch: its removes' keys listed without an ETag are observed (HEAD, 64 in flight), the items read
    # (BatchGetItem, 100 a request), then deleted (DeleteObjects, 1,000 keys a request, in parallel, each
    # conditional on its ETag); CPU scales down with memory. A manifest entry carries its ETag: no HEAD. With
    # blob_key_reuse=never the keys are deleted at once: no HEAD, no BatchGetItem.
    guarded = config.guards_key_reuse
    keys = batch * w.delete_ratio * w.blobs_per_item
    headed = keys * (1 - w.manifest_share) if guarded else 0.0
    s3, ddb = value("s3_latency_s"), value("dynamodb_latency_s")
    waits = 0.0
    if keys:
        if headed:
            waits += math.ceil(headed / value("observe_concurrency")) * s3
        if guarded:
            waits += math.ceil(batch * w.delete_ratio / 100) * ddb
        waits += s3 + keys / value("s3_delete_per_prefix")  # parallel requests share the prefix's rate
    if config.blob_prefix_cleanup:
        waits += batch * w.delete_ratio * s3  # one ListObjectsV2 per REMOVE
    cpu_share = min(1.0, config.memory / value("lambda_full_vcpu_mb"))
    unheaded = value("cpu_s_per_key_unguarded") if not guarded else value("cpu_s_per_key_manifest")
    return waits + (headed * value("cpu_s_per_key") + (keys - headed) * unheaded) / cpu_share


def _iterator_age_risk(config: DocTableConfig, seconds: float, use: float, interval: float) -> str:
    """The risk that the stream's iterator age grows: a batch's time against the timeout and the poll interval,
    and the share of a shard's consumers' capacity its records ``use``."""
    if seconds > config.timeout:
        return f"HIGH: a batch takes {seconds:.1f} s, more than the {config.timeout} s timeout"
    if use >= 1:
        return f"HIGH: the shard needs {use:.2f}x what its consumers handle; iterator age grows without bound"
    if seconds > interval:
        return (
            f"MEDIUM: a batch takes {seconds:.2f} s, longer than the {interval:.2f} s poll interval; "
            f"the consumers are {use:.0%} busy, so records wait for the batch before them"
        )
    return f"LOW: a batch takes {seconds:.2f} s, within the {interval:.2f} s poll interval"


def _limits(
    w: Workload, config: DocTableConfig, wcu_per_write: int, shards: int, stream: dict[str, Any]
) -> list[dict[str, Any]]:
    """The per-region default quotas the workload needs: the write and read units a second, the consumers."""
    write_units = w.writes_per_second * wcu_per_write + sum(
        w.writes_per_second * w.index_share * max(1, math.ceil(index_item_kb(index, w.item_kb)))
        for index in table_shape(config).indexes
    )
    read_units = w.deletes_per_second * max(1, math.ceil(w.item_kb / 4)) if config.guards_key_reuse else 0.0
    checked = limits(
        write_units_per_second=write_units,
        read_units_per_second=read_units,
        concurrent_consumers=shards * config.parallelization_factor,
        stream_readers=stream["count"],
        global_table=config.is_global,
    )
    return [dict(asdict(limit), exceeded=limit.exceeded) for limit in checked]


def _plan_knobs(config: DocTableConfig) -> dict[str, Any]:
    """The knobs the plan depends on, as it reports them."""
    return {
        "batch_size": config.batch_size,
        "batching_window": config.batching_window,
        "parallelization_factor": config.parallelization_factor,
        "memory": config.memory,
        "timeout": config.timeout,
        "architecture": config.architecture,
        "blob_prefix_cleanup": config.blob_prefix_cleanup,
        "blob_key_reuse": config.blob_key_reuse,
        "snapstart": config.snapstart,
        "kinesis": config.kinesis,
        "consumer_source": config.consumer_source,
    }


def render(plan: Plan) -> str:
    w = plan.workload
    lines = [
        f"workload: {w.writes_per_second:g} writes/s of {w.item_kb:g} KB items, {w.delete_ratio:.0%} deletes, "
        f"{w.blobs_per_item} blob(s) per item ({w.manifest_share:.0%} with their ETag); knobs: "
        + ", ".join(f"{k}={v}" for k, v in plan.knobs.items()),
        f"stream shards           {plan.shards}  ({plan.records_per_second_per_shard:.1f} records/s each)",
        f"concurrent consumers    {plan.concurrent_consumers}  (shards x parallelization_factor)",
        f"invocations per second  {plan.invocations_per_second:.2f}  ({plan.records_per_invocation:.1f} records each)",
        f"time per batch          {plan.seconds_per_batch:.3f} s  "
        f"(a shard's consumers handle {plan.shard_capacity_records_per_second:,.0f} records/s)",
        f"iterator-age risk       {plan.iterator_age_risk}",
        *readers.render_readers(plan.stream_readers),
        *readers.render_subscribers(plan.subscribers),
        f"S3 requests             {plan.s3_head_per_second:,.1f} HEAD/s and {plan.s3_delete_keys_per_second:,.1f} "
        f"DELETE keys/s: {plan.s3_prefix_use:.1%} of one prefix's limit"
        + ("  (OVER: spread keys over prefixes)" if plan.s3_prefix_use > 1 else ""),
    ]
    lines.append(
        "limits (per region" + (f", each of {len(plan.replicas) + 1} regions" if plan.replicas else "") + "):"
    )
    for limit in plan.limits:
        mark = "  EXCEEDED: ask AWS to raise it, or spread the load" if limit["exceeded"] else ""
        lines.append(
            f"  {limit['code']:<26} {limit['needed']:>10,.0f} of {limit['quota']:,.0f}  {limit['what']}{mark}"
        )
    for finding in plan.findings:
        lines.append(f"{finding['level']} {finding['code']} {finding['subject']}: {finding['live']} against "
                     f"{finding['declared']}: {finding['effect']}")  # fmt: skip
    lines.append("monthly cost (USD, us-east-1 list prices, 730 h):")
    width = max(len(name) for name in plan.monthly_usd)
    for name, usd in plan.monthly_usd.items():
        lines.append(f"  {name.ljust(width)}  {usd:>12,.2f}")
    lines.append(f"  {'total'.ljust(width)}  {plan.monthly_total:>12,.2f}")
    lines.append("notes:")
    lines.extend(f"  - {note}" for note in plan.notes)
    lines.append("assumptions:")
    for name, (number, what, source) in ASSUMPTIONS.items():
        lines.append(f"  {name} = {number:g}: {what} [{source}]")
    return "\n".join(lines)


def plan(
    target: Target,
    *,
    writes_per_second: float,
    item_kb: float = 1.0,
    delete_ratio: float = 0.1,
    blobs_per_item: int = 1,
    manifest_share: float = 1.0,
    index_share: float = 1.0,
    stored_items: int = 0,
    subscriber_ms: Mapping[str, float] | None = None,
) -> Plan:
    """The capacity and cost of the workload on the shape ``target``'s settings give; no AWS call. ``subscriber_ms``:
    a declared subscriber's milliseconds per record (not measured: given)."""
    workload = checked_workload(
        writes_per_second=writes_per_second,
        item_kb=item_kb,
        delete_ratio=delete_ratio,
        blobs_per_item=blobs_per_item,
        manifest_share=manifest_share,
        index_share=index_share,
        stored_items=stored_items,
    )
    config = resolve_knobs(target)
    built = build_plan(workload, config, readers.check_subscriber_ms(subscriber_ms or {}, config))
    region = target.region
    if region and region != PRICED_REGION:
        # The prices are published per region; only us-east-1's are held here (no AWS call, no network).
        note = (
            f"prices are {PRICED_REGION}'s list prices: {region}'s are not known offline and may differ; the "
            "capacity figures do not depend on the region"
        )
        built = replace(built, notes=[note, *built.notes])
    return built
