"""What ``doctable plan`` says of the stream's readers and of each subscriber's throughput.

Readers: the table's DynamoDB stream is read by the cleanup consumer (built in or borrowed) unless it reads the
Kinesis destination, and by each subscriber with ``source = "dynamodb"``: at most 2 per shard on a single-region
table, 1 on a global table. The Kinesis destination is read by the consumer with ``consumer_source=kinesis`` and
by each subscriber with ``source = "kinesis"``: while they are at most two they share each shard's read
throughput (2 MB/s, 5 GetRecords calls a second: at least 1 MB/s each, a shard's whole write rate); beyond two,
each subscriber reads through its own enhanced fan-out consumer (2 MB/s per shard of its own, at most 20 per
stream) and the consumer keeps the shared throughput (contract/subscribers.py ``fans_out``, as the stack builds it).

Throughput: a subscriber given a time per record (``--subscriber-ms NAME=MS``) sustains, per shard,
``parallelization_factor x 1000 / MS`` records a second (a batch of N records takes N x MS; Lambda polls the shard
again as soon as a batch returns). That is compared with what each of its source's shards delivers, every record
assumed to pass its filters (plan does not know the share they drop). Plan makes no AWS call, so the time is given,
not measured: the subscriber's Duration metric over its RecordsReceived gives it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from contract import subscribers as subscriber_specs
from contract.findings import Finding, Level
from contract.knobs import KNOBS, resolve_config
from doctable.core.errors import UserError
from doctable.plan.workload import Workload, dynamodb_shards, kinesis_shards

if TYPE_CHECKING:
    from contract.knobs import DocTableConfig
    from contract.subscribers import SubscriberSpec

LAGS = "plan.subscriber_lags"
BATCH_TIMEOUT = "plan.subscriber_batch_timeout"
MS_MAX = 900_000.0  # Lambda's longest timeout, 15 minutes, for one record
SHARED, FAN_OUT = "shared", "enhanced fan-out"


def stream_readers(config: DocTableConfig) -> dict[str, Any]:
    """The readers of each stream the table has, against their limits."""
    specs = config.subscribers
    consumer = (
        f"borrowed consumer {config.borrowed_consumer_arn}"
        if config.borrowed_consumer_arn
        else "cleanup consumer"
    )
    own = [consumer] if config.has_mapping and not config.reads_kinesis else []
    dynamodb = own + [
        f"subscriber {name}"
        for name in (
            subscriber_specs.region_readers(specs, config.replicas)  # the home replica's stream
            if config.is_global
            else subscriber_specs.direct_readers(specs)
        )
    ]
    limit = (
        subscriber_specs.GLOBAL_STREAM_READERS_MAX
        if config.is_global
        else subscriber_specs.STREAM_READERS_MAX
    )
    readers: dict[str, Any] = {
        "dynamodb": {
            "stream": config.has_stream,
            "readers": dynamodb,
            "count": len(dynamodb),
            "limit_per_shard": limit,
            "table": "global" if config.is_global else "single-region",
            "exceeded": len(dynamodb) > limit,
        }
    }
    if config.is_global:
        # each replica's own stream, read by that region's consumer and the subscribers running there
        regions = {
            region: (["cleanup consumer"] if config.builtin_consumer else [])
            + [f"subscriber {n}" for n in subscriber_specs.region_readers(specs, config.replicas, region)]
            for region in config.replicas
        }
        readers["dynamodb"]["replica_regions"] = regions
        readers["dynamodb"]["count"] = max([len(dynamodb), *map(len, regions.values())])
        readers["dynamodb"]["exceeded"] = readers["dynamodb"]["count"] > limit
    if config.has_kinesis:
        fans_out = subscriber_specs.fans_out(specs, config.reads_kinesis)
        kinesis = [{"reader": consumer, "through": SHARED}] if config.reads_kinesis else []
        kinesis += [
            {"reader": f"subscriber {s.name}", "through": FAN_OUT if fans_out else SHARED}
            for s in specs
            if s.reads_kinesis
        ]
        fan_out = sum(1 for r in kinesis if r["through"] == FAN_OUT)
        readers["kinesis"] = {
            "readers": kinesis,
            "count": len(kinesis),
            "shared": len(kinesis) - fan_out,
            "shared_limit": subscriber_specs.KINESIS_SHARED_READERS_MAX,
            "fan_out_consumers": fan_out,
            "fan_out_limit": subscriber_specs.KINESIS_FAN_OUT_CONSUMERS_MAX,
            "exceeded": fan_out > subscriber_specs.KINESIS_FAN_OUT_CONSUMERS_MAX,
        }
    return readers


def tuned(config: DocTableConfig, spec: SubscriberSpec) -> DocTableConfig:
    """The consumer's options with the subscriber's own over them, as its stack resolves them."""
    values = {**config.knob_values(), **dict(spec.options)}
    declared = {name: values[name] for name in KNOBS if name in values}
    return resolve_config(context={}, environ={}, defaults=declared, indexes=config.index_declarations)


def subscriber_rows(
    w: Workload, config: DocTableConfig, ms: dict[str, float], wcu_per_write: int, record_kb: int
) -> list[dict[str, Any]]:
    """Each subscriber: its source's shards and their rate, its options and, given its time per record, the
    records a second per shard it sustains and whether it keeps up."""
    rows = []
    for spec in config.subscribers:
        own = tuned(config, spec)
        shards = kinesis_shards(w, record_kb) if spec.reads_kinesis else dynamodb_shards(w, wcu_per_write)
        arriving = w.writes_per_second / shards
        row: dict[str, Any] = {
            "name": spec.name,
            "source": spec.source,
            "filtered": bool(spec.filters),
            "shards": shards,
            "records_per_second_per_shard": arriving,
            "batch_size": own.batch_size,
            "parallelization_factor": own.parallelization_factor,
            "timeout": own.timeout,
            "ms_per_record": ms.get(spec.name),
            "seconds_per_full_batch": None,
            "sustained_records_per_second_per_shard": None,
            "busy": None,
            "lags": None,
            "times_out": None,
            "verdict": "unknown",
        }
        if spec.name in ms:
            per_record = ms[spec.name] / 1000
            sustained = own.parallelization_factor / per_record
            full = own.batch_size * per_record
            lags, times_out = arriving > sustained, full > own.timeout
            row.update(
                seconds_per_full_batch=full,
                sustained_records_per_second_per_shard=sustained,
                busy=arriving / sustained,
                lags=lags,
                times_out=times_out,
                verdict="times out" if times_out else "lags" if lags else "keeps up",
            )
        rows.append(row)
    return rows


def findings(rows: list[dict[str, Any]]) -> list[Finding]:
    """A WARN for each subscriber that falls behind its shards or whose full batch outlasts its timeout."""
    found = []
    for row in rows:
        subject = f"subscriber:{row['name']}"
        if row["times_out"]:
            found.append(
                Finding(
                    Level.WARN,
                    BATCH_TIMEOUT,
                    subject,
                    f"a full batch of {row['batch_size']} records takes {row['seconds_per_full_batch']:.1f} s",
                    f"timeout {row['timeout']} s",
                    "a full batch (what a shard that fell behind delivers) fails at its timeout, is bisected and "
                    "retried: lower its batch_size or raise its timeout",
                    after={
                        "seconds_per_full_batch": row["seconds_per_full_batch"],
                        "timeout": row["timeout"],
                    },
                )  # fmt: skip
            )
        if row["lags"]:
            sustained = row["sustained_records_per_second_per_shard"]
            found.append(
                Finding(
                    Level.WARN,
                    LAGS,
                    subject,
                    f"{row['records_per_second_per_shard']:.1f} records/s arrive per shard",
                    f"{sustained:.1f} records/s sustained per shard ({row['ms_per_record']:g} ms a record, "
                    f"parallelization_factor {row['parallelization_factor']})",
                    "its iterator age grows without bound: raise its parallelization_factor (up to 10), filter "
                    "out what it does not need, or make a record faster",
                    after={"arriving": row["records_per_second_per_shard"], "sustained": sustained},
                )  # fmt: skip
            )
    return found


def notes(readers: dict[str, Any]) -> list[str]:
    """What the plan leaves out of the readers: the enhanced fan-out consumers' price."""
    fan_out = readers.get("kinesis", {}).get("fan_out_consumers", 0)
    if not fan_out:
        return []
    return [
        f"{fan_out} enhanced fan-out consumer(s) on the Kinesis destination: each billed per consumer-shard hour and "
        "per GB it retrieves, not priced here (Kinesis Data Streams pricing)"
    ]


def subscriber_ms_pairs(pairs: Sequence[str]) -> dict[str, float]:
    """``--subscriber-ms NAME=MS`` (repeatable) as {name: milliseconds per record}: each pair's form, its number and
    its range checked, a name given once (whether the environment declares it: :func:`check_subscriber_ms`)."""
    out: dict[str, float] = {}
    for given in pairs:
        name, sep, raw = given.partition("=")
        if not sep or not name:
            raise UserError(
                f"--subscriber-ms {given!r}: expected NAME=MS, a subscriber's milliseconds per record"
            )
        try:
            number = float(raw)
        except ValueError:
            number = math.nan
        if not 0 < number <= MS_MAX:
            raise UserError(
                f"--subscriber-ms {given}: allowed: milliseconds per record above 0, at most {MS_MAX:g}"
            )
        if name in out:
            raise UserError(f"--subscriber-ms {name} is given twice; allowed: one time per subscriber")
        out[name] = number
    return out


def check_subscriber_ms(subscriber_ms: Mapping[str, float], config: DocTableConfig) -> dict[str, float]:
    """Each subscriber's milliseconds per record, for the subscribers ``config`` declares (UserError naming the
    declared ones otherwise), above 0 and at most Lambda's longest timeout."""
    declared = [s.name for s in config.subscribers]
    for name, number in subscriber_ms.items():
        if name not in declared:
            raise UserError(
                f"--subscriber-ms {name}={number:g}: environment {config.env} declares no subscriber {name!r}; "
                "declared: " + (", ".join(declared) or "none")
            )
        if not 0 < number <= MS_MAX:
            raise UserError(
                f"--subscriber-ms {name}={number:g}: allowed: milliseconds per record above 0, at most {MS_MAX:g}"
            )
    return dict(subscriber_ms)


def render_readers(readers: dict[str, Any]) -> list[str]:
    ddb = readers["dynamodb"]
    if not ddb["stream"]:
        lines = ["stream readers          no DynamoDB stream (stream=none)"]
    else:
        lines = [
            f"stream readers          DynamoDB stream: {len(ddb['readers'])} of {ddb['limit_per_shard']} per shard "
            f"({ddb['table']} table{', home region' if ddb['table'] == 'global' else ''}): "
            f"{', '.join(ddb['readers']) or 'none'}"
            + (
                "  (OVER AWS's recommended 1 on a global table: a throttled mapping's iterator age grows; run "
                "subscribers in fewer regions)"
                if ddb["exceeded"] and ddb["table"] == "global"
                else "  (OVER: read the others from the Kinesis destination)"
                if ddb["exceeded"]
                else ""
            )
        ]
        lines += [
            f"                        in {region}: {len(names)} of {ddb['limit_per_shard']} per shard: {', '.join(names)}"
            for region, names in (ddb.get("replica_regions") or {}).items()
        ]
    kinesis = readers.get("kinesis")
    if kinesis:
        each = ", ".join(f"{r['reader']} ({r['through']})" for r in kinesis["readers"]) or "none"
        lines.append(
            f"                        Kinesis destination: {kinesis['count']} reader(s): {each}; "
            f"{kinesis['shared']} of {kinesis['shared_limit']} sharing each shard's 2 MB/s, "
            f"{kinesis['fan_out_consumers']} of {kinesis['fan_out_limit']} fan-out consumers"
        )
    return lines


def render_subscribers(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    lines = [
        "subscribers (records/s per shard each sustains: parallelization_factor x 1000 / ms per record; every "
        "record assumed to pass its filters):"
    ]
    width = max(len(row["name"]) for row in rows)
    for row in rows:
        head = (
            f"  {row['name'].ljust(width)}  {row['source']:<8}  {row['shards']} shard(s) at "
            f"{row['records_per_second_per_shard']:,.1f} records/s"
        )
        if row["ms_per_record"] is None:
            lines.append(f"{head}  time per record not given (--subscriber-ms {row['name']}=MS)")
            continue
        lines.append(
            f"{head}  {row['ms_per_record']:g} ms x {row['parallelization_factor']} batch(es): "
            f"{row['sustained_records_per_second_per_shard']:,.1f} records/s, {row['verdict'].upper()} "
            f"({row['busy']:.0%} busy; a full batch {row['seconds_per_full_batch']:.2f} s of {row['timeout']} s)"
        )
    return lines
