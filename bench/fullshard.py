"""Full-shard replay: ten seconds of one full DynamoDB stream shard (1,000 writes a second) through the consumer,
with the concurrency the shipped knobs give the mapping, beside ``doctable plan``'s prediction of the same workload.

The workload: 30% REMOVEs whose old image lists 3 blobs as manifest entries (each key with its upload's ETag),
the rest INSERTs and MODIFYs (one blob, kept), every item about 1 KB, every record a different item. One REMOVE in
ten finds its first blob uploaded again under the same key (another ETag) before the replay, and another one in ten
finds its item written back listing its blobs: the guarantee says both stay.

The shape: the knobs' defaults (:data:`contract.knobs.KNOB_DEFAULTS`): ``parallelization_factor`` execution
environments, each a process of its own (its own consumer import, clients and Powertools state, as Lambda gives
each environment), the shard's records routed to them by item (Lambda keeps one item's records in order on one
batcher) in batches of ``batch_size``. The replay is a backlog: every record is in the shard when the environments
start, so they run flat out and the records per second they sustain is the shard's capacity (the figure ``doctable
plan`` predicts as ``shard_capacity_records_per_second``). Lambda's own time between two invocations is not in it.

Each environment answers its requests from the :mod:`bench.latency_model` store (real sleeps of each request's
modelled service time); the prefix's PUT/DELETE lane is one for all of them. CPU: an environment of ``memory`` MB
gets ``memory / 1769`` of a vCPU (doctable/plan/cost.py's model, ``lambda_full_vcpu_mb``), so after each batch it
sleeps the batch's measured CPU time x (1 / share - 1): the batch then takes as long as its CPU work would at that
share, plus its waits.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import multiprocessing
import os
import statistics
import subprocess
import sys
import time
import warnings
from dataclasses import asdict, dataclass
from typing import Any

from bench.common import BUCKET, PROJECT_MODULE, PROJECT_ROOT, Sink, consumer_env, import_fresh
from bench.events import BLOB_ROOT, TABLE, FakeLambdaContext, etag_of, record
from bench.latency_model import ModelledAws, PrefixLane, default_model

# One REMOVE in this many finds its first blob re-uploaded (another ETag); another one its item written back.
SPECIAL_EVERY = 10
REUPLOAD_SLOT, LIVE_SLOT = 5, 7
WARMUP_RECORDS = 10
READY_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Workload:
    writes_per_second: int = 1000
    seconds: float = 10.0
    remove_share: float = 0.3
    blobs_per_remove: int = 3
    item_bytes: int = 1024

    @property
    def records(self) -> int:
        return round(self.writes_per_second * self.seconds)


@dataclass(frozen=True)
class MappingShape:
    """The mapping's and the function's knobs the replay uses, and the CPU share its memory gives."""

    batch_size: int
    parallelization_factor: int
    memory: int
    blob_key_reuse: str
    blob_prefix_cleanup: str
    full_vcpu_mb: float

    @classmethod
    def shipped(cls) -> MappingShape:
        from contract.knobs import KNOB_DEFAULTS
        from doctable.plan.figures import value

        return cls(
            batch_size=int(KNOB_DEFAULTS["batch_size"]),
            parallelization_factor=int(KNOB_DEFAULTS["parallelization_factor"]),
            memory=int(KNOB_DEFAULTS["memory"]),
            blob_key_reuse=KNOB_DEFAULTS["blob_key_reuse"],
            blob_prefix_cleanup=KNOB_DEFAULTS["blob_prefix_cleanup"],
            full_vcpu_mb=float(value("lambda_full_vcpu_mb")),
        )

    @property
    def cpu_share(self) -> float:
        return min(1.0, self.memory / self.full_vcpu_mb)


# ------------------------------------------------------------------------------------------------ the shard


def _image(pk: str, sk: str, keys: list[str], item_bytes: int) -> dict[str, Any]:
    """An item of about ``item_bytes`` (its DynamoDB JSON, padded by a ``body`` attribute) listing ``keys`` as
    manifest entries, each with its first upload's ETag."""
    image: dict[str, Any] = {
        "pk": {"S": pk},
        "sk": {"S": sk},
        "title": {"S": f"document {pk}"},
        "blobs": {
            "L": [{"M": {"key": {"S": k}, "etag": {"S": etag_of(k)}, "size": {"N": "1"}}} for k in keys]
        },
    }
    image["body"] = {"S": "x" * max(0, item_bytes - len(json.dumps(image)) - 20)}
    return image


def shard(workload: Workload, root: str = BLOB_ROOT, tag: str = "") -> dict[str, Any]:
    """The shard's records in stream order, and what the store holds before the replay (the objects every image
    lists, the re-uploads, the items written back) with what must be true after it."""
    records: list[dict[str, Any]] = []
    doomed: list[str] = []  # listed by a REMOVE's old image: deleted
    reuploaded: list[str] = []  # a dropped key uploaded again (another ETag): kept
    live_keys: list[str] = []  # a dropped key its item, written back, lists again: kept
    kept: list[str] = []  # listed by an INSERT's or a MODIFY's new image: kept
    live_items: dict[tuple[str, str], dict[str, Any]] = {}
    removes = others = 0
    for n in range(workload.records):
        pk, sk = f"doc#{tag}{n:07d}", "v#1"
        is_remove = math.floor((n + 1) * workload.remove_share) > math.floor(n * workload.remove_share)
        if is_remove:
            keys = [f"{root}{pk}/{sk}/part-{i}.bin" for i in range(workload.blobs_per_remove)]
            old = _image(pk, sk, keys, workload.item_bytes)
            raw = record("REMOVE", n, pk, sk, old=old)
            slot = removes % SPECIAL_EVERY
            if slot == REUPLOAD_SLOT:
                reuploaded.append(keys[0])
                doomed.extend(keys[1:])
            elif slot == LIVE_SLOT:
                live_keys.extend(keys)
                live_items[(pk, sk)] = old
            else:
                doomed.extend(keys)
            removes += 1
        else:
            keys = [f"{root}{pk}/{sk}/part-0.bin"]
            new = _image(pk, sk, keys, workload.item_bytes)
            if others % 2 == 0:
                raw = record("INSERT", n, pk, sk, new=new)
            else:
                raw = record("MODIFY", n, pk, sk, old=_image(pk, sk, keys, workload.item_bytes), new=new)
            kept.extend(keys)
            others += 1
        raw["dynamodb"]["SizeBytes"] = len(json.dumps(raw["dynamodb"]))
        records.append(raw)
    return {
        "records": records,
        "objects": doomed + reuploaded + live_keys + kept,
        "reuploaded": reuploaded,
        "live_items": live_items,
        "doomed": doomed,
        "kept": kept + live_keys,
    }


def environment_of(raw: dict[str, Any], environments: int) -> int:
    """The environment (of the shard's concurrent batchers) an item's records go to: one item, one environment."""
    keys = raw["dynamodb"]["Keys"]
    digest = hashlib.md5(f"{keys['pk']['S']}\x00{keys['sk']['S']}".encode(), usedforsecurity=False).digest()
    return int.from_bytes(digest[:8], "big") % environments


def _split(part: dict[str, Any], environments: int) -> list[dict[str, Any]]:
    """The shard cut by environment: each environment gets its items' records and what the store holds of them."""
    owner: dict[str, int] = {}
    by_env: list[dict[str, Any]] = [
        {"records": [], "objects": [], "reuploaded": [], "live_items": {}, "doomed": [], "kept": []}
        for _ in range(environments)
    ]
    for raw in part["records"]:
        index = environment_of(raw, environments)
        by_env[index]["records"].append(raw)
        keys = raw["dynamodb"]["Keys"]
        owner[f"{BLOB_ROOT}{keys['pk']['S']}/{keys['sk']['S']}/"] = index
    for name in ("objects", "reuploaded", "doomed", "kept"):
        for key in part[name]:
            by_env[owner[key.rsplit("/", 1)[0] + "/"]][name].append(key)
    for item, image in part["live_items"].items():
        by_env[owner[f"{BLOB_ROOT}{item[0]}/{item[1]}/"]]["live_items"][item] = image
    return by_env


# ------------------------------------------------------------------------------------------ one environment


class _Context(FakeLambdaContext):
    def __init__(self, memory: int) -> None:
        self.memory_limit_in_mb = memory


def _environment(
    index: int,
    work: dict[str, Any],
    shape: dict[str, Any],
    model: dict[str, Any],
    lane: Any,
    start: Any,
    results: Any,
) -> None:
    """One execution environment (a process): import the consumer, warm it, wait for the start, handle its
    batches one after the other, then check the store. Puts ("ready", index) then ("done", index, result), or
    ("error", index, text), on ``results``."""
    try:
        results.put(
            ("done", index, _run_environment(index, work, MappingShape(**shape), model, lane, start, results))
        )
    except BaseException as exc:  # reported to the parent, which fails the section with it
        results.put(("error", index, f"{type(exc).__name__}: {exc}"[:400]))


def _run_environment(
    index: int,
    work: dict[str, Any],
    shape: MappingShape,
    model: dict[str, Any],
    lane: Any,
    start: Any,
    results: Any,
) -> dict[str, Any]:
    os.environ.update(
        consumer_env(
            POWERTOOLS_TRACE_DISABLED="1",
            BLOB_KEY_REUSE=shape.blob_key_reuse,
            BLOB_PREFIX_CLEANUP=shape.blob_prefix_cleanup,
        )
    )
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_CONFIG_FILE"):
        os.environ.pop(name, None)
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    aws = ModelledAws(BUCKET, TABLE, default_model(**model), lane=PrefixLane(lane))
    aws.install()
    sink = Sink()
    with contextlib.redirect_stdout(sink):  # Logger binds sys.stdout at import; EMF metrics print() at flush
        handler = import_fresh(PROJECT_MODULE).lambda_handler
        context = _Context(shape.memory)
        # Warm-up: the first batch builds the clients (an environment's first invocation), outside the replay.
        warm = shard(Workload(writes_per_second=WARMUP_RECORDS, seconds=1), tag=f"warm{index}-")
        aws.put(warm["objects"])
        handler({"Records": warm["records"]}, context)
    aws.put(work["objects"])
    aws.put(work["reuploaded"], upload=1)
    aws.items.update(work["live_items"])
    aws.reset_counts()
    records = work["records"]
    batches = [records[i : i + shape.batch_size] for i in range(0, len(records), shape.batch_size)]
    stretch = 1 / shape.cpu_share - 1
    results.put(("ready", index))
    start.wait()
    timings: list[dict[str, float]] = []
    failures = 0
    with contextlib.redirect_stdout(sink):
        for batch in batches:
            began, cpu_began = time.monotonic(), time.process_time()
            response = handler({"Records": batch}, context)
            answered, cpu = time.monotonic(), time.process_time() - cpu_began
            time.sleep(cpu * stretch)  # the rest of the batch's CPU time at the function's share of a vCPU
            failures += len(response.get("batchItemFailures", []))
            timings.append(
                {
                    "records": len(batch),
                    "began": began,
                    "answered": answered,
                    "ended": time.monotonic(),
                    "cpu_seconds": cpu,
                }
            )
    present = aws.present(work["objects"])
    reuploads_kept = sum(1 for key in work["reuploaded"] if aws.etag(key) == etag_of(key, 1))
    return {
        "records": len(records),
        "batches": timings,
        "batch_item_failures": failures,
        "requests": dict(aws.requests),
        "blobs_listed_for_deletion": len(work["doomed"]),
        "blobs_left_that_should_be_gone": len(set(work["doomed"]) & present),
        "live_blobs": len(work["kept"]),
        "live_blobs_deleted": len(set(work["kept"]) - present),
        "reuploads": len(work["reuploaded"]),
        "reuploads_kept": reuploads_kept,
        "items_written_back": len(work["live_items"]),
        "log_lines": sink.lines,
    }


# ------------------------------------------------------------------------------------------------- the run


def plan_prediction(workload: Workload, shape: MappingShape) -> dict[str, Any]:
    """``doctable plan --json`` for the same workload and knobs (its CLI: the interface users run)."""
    command = [
        sys.executable, "-c", "import sys; from doctable.cli import main; sys.exit(main())", "plan",
        "--writes-per-second", f"{workload.writes_per_second:g}",
        "--item-kb", f"{workload.item_bytes / 1024:g}",
        "--delete-ratio", f"{workload.remove_share:g}",
        "--blobs-per-item", str(workload.blobs_per_remove),
        "-c", "stream=new-and-old",
        "-c", f"batch_size={shape.batch_size}",
        "-c", f"parallelization_factor={shape.parallelization_factor}",
        "-c", f"memory={shape.memory}",
        "--json",
    ]  # fmt: skip
    proc = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    shown = "python " + " ".join(command[1:])
    if proc.returncode != 0:
        return {"command": shown, "skipped": f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}"}
    plan = json.loads(proc.stdout)
    return {
        "command": shown,
        "shards": plan["shards"],
        "concurrent_consumers": plan["concurrent_consumers"],
        "records_per_invocation": plan["records_per_invocation"],
        "seconds_per_batch": plan["seconds_per_batch"],
        "shard_capacity_records_per_second": plan["shard_capacity_records_per_second"],
        "iterator_age_risk": plan["iterator_age_risk"],
        "s3_latency_s": plan["assumptions"]["s3_latency_s"]["value"],
        "knobs": plan["knobs"],
    }


def _stop(processes: list[Any]) -> None:
    for process in processes:
        if process.is_alive():
            process.terminate()
        process.join(timeout=10)


def replay(workload: Workload, shape: MappingShape, s3_ms: float, dynamodb_ms: float) -> dict[str, Any]:
    """The shard through ``shape.parallelization_factor`` environment processes, all started at once."""
    ctx = multiprocessing.get_context("spawn")  # fresh interpreters: no state of this process's sections
    environments = shape.parallelization_factor
    lane = ctx.Value("d", 0.0)
    start = ctx.Event()
    results = ctx.Queue()
    work = _split(shard(workload), environments)
    model = {"s3_ms": s3_ms, "dynamodb_ms": dynamodb_ms}
    processes = [
        ctx.Process(
            target=_environment,
            args=(i, work[i], asdict(shape), model, lane, start, results),
            name=f"fullshard-env-{i}",
            daemon=True,
        )
        for i in range(environments)
    ]
    done: dict[int, dict[str, Any]] = {}
    try:
        for process in processes:
            process.start()
        ready: set[int] = set()
        deadline = time.monotonic() + READY_TIMEOUT_S
        while len(done) < environments:
            kind, index, *rest = results.get(timeout=max(1.0, deadline - time.monotonic()))
            if kind == "error":
                raise RuntimeError(f"environment {index}: {rest[0]}")
            if kind == "ready":
                ready.add(index)
                if len(ready) == environments:
                    start.set()  # every environment warm: the replay starts in all of them at once
                    deadline = time.monotonic() + READY_TIMEOUT_S
            else:
                done[index] = rest[0]
    finally:
        _stop(processes)
    return summarize(workload, shape, [done[i] for i in range(environments)])


def summarize(workload: Workload, shape: MappingShape, envs: list[dict[str, Any]]) -> dict[str, Any]:
    batches = [b for env in envs for b in env["batches"]]
    began = min(b["began"] for b in batches)
    seconds = max(b["ended"] for b in batches) - began
    records = sum(env["records"] for env in envs)
    rps = records / seconds
    requests: dict[str, int] = {}
    for env in envs:
        for op, n in env["requests"].items():
            requests[op] = requests.get(op, 0) + n
    totals = {
        name: sum(env[name] for env in envs)
        for name in (
            "batch_item_failures",
            "blobs_listed_for_deletion",
            "blobs_left_that_should_be_gone",
            "live_blobs",
            "live_blobs_deleted",
            "reuploads",
            "reuploads_kept",
            "items_written_back",
        )
    }
    guarantee = (
        totals["live_blobs_deleted"] == 0
        and totals["reuploads_kept"] == totals["reuploads"]
        and totals["blobs_left_that_should_be_gone"] == 0
        and totals["batch_item_failures"] == 0
    )
    return {
        "records": records,
        "seconds": seconds,
        "records_per_second": rps,
        "ratio_to_written": rps / workload.writes_per_second,
        "guarantee_held": guarantee,
        **totals,
        "batches": len(batches),
        "batch_seconds_median": statistics.median(b["ended"] - b["began"] for b in batches),
        "batch_answer_seconds_median": statistics.median(b["answered"] - b["began"] for b in batches),
        "batch_cpu_seconds_median": statistics.median(b["cpu_seconds"] for b in batches),
        "cpu_us_per_record": sum(b["cpu_seconds"] for b in batches) / records * 1e6,
        "environments": [
            {
                "records": env["records"],
                "batches": len(env["batches"]),
                "busy_seconds": sum(b["ended"] - b["began"] for b in env["batches"]),
                "finished_after_seconds": max(b["ended"] for b in env["batches"]) - began,
            }
            for env in envs
        ],
        # records handled (cumulative) against seconds since the start, for the picture
        "progress": _progress(batches, began),
        "requests": requests,
        "log_lines": sum(env["log_lines"] for env in envs),
    }


def _progress(batches: list[dict[str, Any]], began: float) -> list[list[float]]:
    total, out = 0, []
    for batch in sorted(batches, key=lambda b: b["ended"]):
        total += int(batch["records"])
        out.append([round(batch["ended"] - began, 3), total])
    return out


def run(
    writes_per_second: int = 1000,
    seconds: float = 10.0,
    s3_ms: float = 150.0,
    dynamodb_ms: float = 5.0,
) -> dict[str, Any]:
    workload = Workload(writes_per_second=writes_per_second, seconds=seconds)
    shape = MappingShape.shipped()
    out: dict[str, Any] = {
        "workload": asdict(workload) | {"records": workload.records},
        "shape": asdict(shape) | {"cpu_share": shape.cpu_share},
        "model": {"s3_ms": s3_ms, "dynamodb_ms": dynamodb_ms},
        "plan": plan_prediction(workload, shape),
    }
    out["measured"] = replay(workload, shape, s3_ms, dynamodb_ms)
    return out
