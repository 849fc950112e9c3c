"""Throughput under a model of S3's and DynamoDB's latency, and the consumer's own CPU per record.

Project (as deployed by default, with ``blob_key_reuse=never``, and as deployed by default with the items listing
manifest entries, each key with its upload's ETag) and baseline run in the same process, one after the other,
against the same :mod:`bench.latency_model`
store (real sleeps for each request's modelled service time; botocore's real clients serialize and parse every
request). Per batch size, a fresh mixed batch (40% REMOVE listing 3 blobs, 30% INSERT, 30% MODIFY) is handled
once by the baseline and ``repeats`` times by each project variant (the median run is kept). In the manifest
variant one REMOVE in ten finds its first blob uploaded again (another ETag) before the batch: the guarantee says
it stays. Then, with every service time
zero (the in-memory store), the CPU per record of the project, the baseline and the json floor on the largest batch.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from typing import Any

from bench.common import (
    BASELINE_MODULE,
    BUCKET,
    FLOOR_MODULE,
    PROJECT_MODULE,
    Sink,
    consumer_env,
    import_fresh,
)
from bench.events import BLOB_ROOT, REGION, TABLE, FakeLambdaContext, mixed_batch
from bench.latency_model import SOURCES, ModelledAws, ServiceTime, default_model, zero_model

WARMUP_RECORDS = 10
MODULES = {
    "project": PROJECT_MODULE,
    "project_never": PROJECT_MODULE,  # the same consumer with blob_key_reuse=never
    "project_manifest": PROJECT_MODULE,  # the same consumer, guarded, the items listing manifest entries
    "baseline": BASELINE_MODULE,
    "floor": FLOOR_MODULE,
}
# The project's variants, in the order they run and are reported.
VARIANTS = ("project", "project_never", "project_manifest")
# Each variant's ratio over the baseline, as results.json names it.
RATIO_KEYS = {
    "project": "ratio_project_over_baseline",
    "project_never": "ratio_never_over_baseline",
    "project_manifest": "ratio_manifest_over_baseline",
}
# One REMOVE in ten of the manifest variant finds its first blob uploaded again (3 blobs per REMOVE).
REUPLOAD_EVERY = 30


def _all_blob_keys(event: dict[str, Any]) -> list[str]:
    keys: list[str] = []
    for raw in event["Records"]:
        for image in ("OldImage", "NewImage"):
            for value in raw["dynamodb"].get(image, {}).get("blobs", {}).get("L", []):
                keys.append(value["S"] if "S" in value else value["M"]["key"]["S"])
    return list(dict.fromkeys(keys))


class _Consumer:
    """One consumer module imported afresh with its own blob root and Powertools service name."""

    def __init__(self, label: str, aws: ModelledAws, sink: Sink) -> None:
        self.label = label
        self.aws = aws
        self.sink = sink
        self.root = f"{BLOB_ROOT}{label}/"  # a record owns <BLOB_ROOT><pk>/<sk>/ only, so the root stays
        os.environ["BLOB_ROOT"] = self.root
        # Powertools keys its logger by service name: keep the consumers' loggers apart.
        os.environ["POWERTOOLS_SERVICE_NAME"] = f"doctable-bench-{label}"
        os.environ["BLOB_KEY_REUSE"] = "never" if label == "project_never" else "guarded"
        self.manifest = label == "project_manifest"
        with contextlib.redirect_stdout(sink):  # Logger binds sys.stdout at import
            self.module = import_fresh(MODULES[label])
        self.runs = 0
        # Warm-up: builds the clients (the project builds them on first use) outside the timed calls.
        self.handle(WARMUP_RECORDS)

    def handle(self, records: int) -> dict[str, Any]:
        tag = f"r{self.runs}-"  # other items each run
        self.runs += 1
        event, doomed = mixed_batch(records, root=self.root, tag=tag, manifest=self.manifest)
        every = _all_blob_keys(event)
        self.aws.put(every)
        # Uploaded again after the records (another ETag): the consumer must keep them (manifest variant only).
        reuploaded = doomed[::REUPLOAD_EVERY] if self.manifest else []
        self.aws.put(reuploaded, upload=1)
        doomed = [key for key in doomed if key not in frozenset(reuploaded)]
        self.aws.reset_counts()
        with contextlib.redirect_stdout(self.sink):  # EMF metrics print() at flush
            started, cpu_started = time.perf_counter(), time.process_time()
            response = self.module.lambda_handler(event, FakeLambdaContext())
            elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        requests, charged = dict(self.aws.requests), self.aws.charged_s
        left = self.aws.present(every)
        wrongly_left = left & set(doomed)
        survivors_intact = (set(every) - set(doomed)) <= left
        deleted = len(doomed) - len(wrongly_left)
        failures = len(response.get("batchItemFailures", [])) if isinstance(response, dict) else 0
        total = sum(requests.values())
        return {
            "records": records,
            "seconds": elapsed,
            "cpu_seconds": cpu,
            "records_per_second": records / elapsed,
            "cpu_us_per_record": cpu / records * 1e6,
            "modelled_service_seconds": charged,
            "blobs_listed_for_deletion": len(doomed),
            "blobs_deleted": deleted,
            "blobs_left_that_should_be_gone": len(wrongly_left),
            "survivors_intact": survivors_intact,
            "reuploads_kept": len(reuploaded),
            "batch_item_failures": failures,
            "correct": not wrongly_left and survivors_intact and not failures,
            "requests": requests,
            "s3_requests": {op: n for op, n in requests.items() if op != "BatchGetItem"},
            "requests_total": total,
            "s3_requests_per_1000_blobs": (total - requests.get("BatchGetItem", 0)) / (deleted / 1000)
            if deleted
            else None,
        }


def _median_run(consumer: _Consumer, records: int, repeats: int) -> dict[str, Any]:
    runs = [consumer.handle(records) for _ in range(repeats)]
    result = dict(sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2])
    result["repeats"] = repeats
    result["all_seconds"] = [r["seconds"] for r in runs]
    result["correct"] = all(r["correct"] for r in runs)
    return result


def describe(model: dict[str, ServiceTime]) -> dict[str, Any]:
    return {
        "service_times": {
            op: {"fixed_ms": s.fixed_s * 1000, "per_key_ms": s.per_key_s * 1000, "source": s.source}
            for op, s in model.items()
        },
        "sources": SOURCES,
        "how": "real sleeps of each request's service time in the calling thread, project and baseline alike; "
        "botocore's real clients serialize and parse every request (answered in memory at before-send)",
    }


def run(
    batch_sizes: tuple[int, ...] = (10, 100, 1000),
    project_repeats: int = 3,
    s3_ms: float = 150.0,
    dynamodb_ms: float = 5.0,
    variants: tuple[str, ...] = VARIANTS,
) -> dict[str, Any]:
    """``variants``: the project's variants to run (each beside the same baseline run)."""
    import boto3

    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown or not variants:
        raise ValueError(f"unknown throughput variant(s) {unknown}; allowed: {', '.join(VARIANTS)}")
    variants = tuple(v for v in VARIANTS if v in variants)

    saved = dict(os.environ)
    os.environ.update(consumer_env(POWERTOOLS_TRACE_DISABLED="1"))
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_CONFIG_FILE"):
        os.environ.pop(name, None)
    model = default_model(s3_ms, dynamodb_ms)
    out: dict[str, Any] = {
        "model": describe(model),
        "batch_sizes": list(batch_sizes),
        "variants": list(variants),
        "by_batch_size": {},
    }
    aws = ModelledAws(BUCKET, TABLE, model)
    try:
        aws.install()
        boto3.setup_default_session(region_name=REGION)
        sink = Sink()
        consumers = {label: _Consumer(label, aws, sink) for label in (*variants, "baseline")}
        for size in batch_sizes:
            medians = {label: _median_run(consumers[label], size, project_repeats) for label in variants}
            baseline = consumers["baseline"].handle(size)
            by_size: dict[str, Any] = {**medians, "baseline": baseline}
            for label, result in medians.items():
                by_size[RATIO_KEYS[label]] = result["records_per_second"] / baseline["records_per_second"]
            out["by_batch_size"][str(size)] = by_size

        # The consumer's own work: every request answered at once.
        aws.model = zero_model()
        largest = max(batch_sizes)
        consumers["floor"] = _Consumer("floor", aws, sink)
        cpu: dict[str, Any] = {"records": largest}
        for label, repeats in (
            *((variant, project_repeats) for variant in variants),
            ("baseline", 1),
            ("floor", project_repeats),
        ):
            runs = [consumers[label].handle(largest) for _ in range(repeats)]
            cpu[label] = {
                "cpu_us_per_record": statistics.median(r["cpu_us_per_record"] for r in runs),
                "wall_us_per_record": statistics.median(r["seconds"] / r["records"] * 1e6 for r in runs),
                "correct": label == "floor" or all(r["correct"] for r in runs),
                "repeats": repeats,
            }
        out["cpu_in_memory"] = cpu
        out["log_lines"] = sink.lines
        return out
    finally:
        # The model answers every request of the sessions built while it was installed: later sections get a
        # fresh default session, without the model.
        aws.uninstall()
        boto3.DEFAULT_SESSION = None
        os.environ.clear()
        os.environ.update(saved)
