"""Throughput: one big mixed batch through the project's handler and the baseline, same process, same moto S3."""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any

from bench.common import (
    BASELINE_MODULE,
    BUCKET,
    PROJECT_MODULE,
    S3RequestCounter,
    Sink,
    consumer_env,
    import_fresh,
)
from bench.events import ACCOUNT, BLOB_ROOT, REGION, FakeLambdaContext, mixed_batch

WARMUP_RECORDS = 10


def _seed(client: Any, keys: list[str]) -> None:
    """Put ``keys`` into the bucket: straight into moto's backend (fast), else through the client."""
    try:
        from moto.s3.models import s3_backends

        backend = s3_backends[ACCOUNT]["global"]
        for key in keys:
            backend.put_object(BUCKET, key, b"x")
    except Exception:  # moto internals moved: the slow, public way
        for key in keys:
            client.put_object(Bucket=BUCKET, Key=key, Body=b"x")


def _create_table() -> None:
    """The table the project's consumer reads live items from; empty: no record's item exists any more."""
    import boto3

    from bench.events import TABLE

    boto3.client("dynamodb", region_name=REGION).create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )


def _listed(client: Any, prefix: str) -> set[str]:
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return {item["Key"] for page in pages for item in page.get("Contents", [])}


def _all_blob_keys(event: dict[str, Any]) -> list[str]:
    keys: list[str] = []
    for raw in event["Records"]:
        for image in ("OldImage", "NewImage"):
            for value in raw["dynamodb"].get(image, {}).get("blobs", {}).get("L", []):
                keys.append(value["S"])
    return list(dict.fromkeys(keys))


def _run_one(
    label: str, module_name: str, records: int, client: Any, counter: S3RequestCounter, repeats: int
) -> dict[str, Any]:
    """``repeats`` timed runs of a fresh ``records``-record batch (fresh keys each); the median run is kept."""
    root = f"{BLOB_ROOT}{label}/"  # each consumer works on its own keys
    os.environ["BLOB_ROOT"] = root
    # Powertools keys its logger by service name: keep the two consumers' loggers apart.
    os.environ["POWERTOOLS_SERVICE_NAME"] = "doctable-consumer" if label == "project" else "doctable-baseline"
    sink = Sink()
    runs: list[dict[str, Any]] = []
    with contextlib.redirect_stdout(sink):  # Logger binds sys.stdout at import; EMF metrics print() at flush
        module = import_fresh(module_name)
        # Warm-up: creates the S3 client (the project defers it to first use) outside the timed call.
        warm_event, warm_doomed = mixed_batch(WARMUP_RECORDS, root=root, tag="warmup-")
        _seed(client, warm_doomed)
        module.lambda_handler(warm_event, FakeLambdaContext())

        for attempt in range(repeats):
            # other items each repeat (a record owns <BLOB_ROOT><pk>/<sk>/ only, so the root stays)
            tag = f"run{attempt}-"
            event, doomed = mixed_batch(records, root=root, tag=tag)
            every = _all_blob_keys(event)
            _seed(client, every)
            sink.bytes = sink.lines = 0
            counter.reset()
            started, cpu_started = time.perf_counter(), time.process_time()
            response = module.lambda_handler(event, FakeLambdaContext())
            elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
            requests, in_s3 = dict(counter.by_operation), counter.call_seconds  # before the checks' own calls
            left = _listed(client, f"{root}doc#{tag}")
            gone_wrong = left & set(doomed)
            survivors_intact = (set(every) - set(doomed)) <= left
            total_requests = sum(requests.values())
            deleted = len(doomed) - len(gone_wrong)
            runs.append(
                {
                    "records": records,
                    "seconds": elapsed,
                    "cpu_seconds": cpu,
                    "records_per_second": records / elapsed,
                    "records_per_cpu_second": records / cpu if cpu else None,
                    "seconds_in_s3_calls": in_s3,
                    "blobs_listed_for_deletion": len(doomed),
                    "blobs_deleted": deleted,
                    "blobs_left_that_should_be_gone": len(gone_wrong),
                    "survivors_intact": survivors_intact,
                    "batch_item_failures": len(response.get("batchItemFailures", [])),
                    "correct": not gone_wrong and survivors_intact and not response.get("batchItemFailures"),
                    "s3_requests": requests,
                    "s3_requests_total": total_requests,
                    "s3_requests_per_1000_blobs": total_requests / (deleted / 1000) if deleted else None,
                    "log_lines": sink.lines,
                    "log_bytes": sink.bytes,
                }
            )
    ordered = sorted(runs, key=lambda r: r["seconds"])
    result = dict(ordered[len(ordered) // 2])
    result["repeats"] = repeats
    result["all_seconds"] = [r["seconds"] for r in runs]
    result["correct"] = all(r["correct"] for r in runs)
    return result


def run(records: int = 10_000, project_repeats: int = 3) -> dict[str, Any]:
    """The baseline runs once (it takes ~15x longer, which averages the machine's noise out by itself); the
    project's batch runs ``project_repeats`` times, its median run is reported."""
    import boto3
    from moto import mock_aws

    saved = dict(os.environ)
    os.environ.update(consumer_env(POWERTOOLS_TRACE_DISABLED="1"))
    os.environ.pop("AWS_ENDPOINT_URL", None)
    os.environ.pop("AWS_PROFILE", None)
    try:
        with mock_aws():
            boto3.setup_default_session()
            counter = S3RequestCounter()
            counter.install(boto3.DEFAULT_SESSION)
            client = boto3.client("s3", region_name=REGION)
            client.create_bucket(Bucket=BUCKET)
            _create_table()
            out: dict[str, Any] = {}
            for label, module_name, repeats in (
                ("project", PROJECT_MODULE, project_repeats),
                ("baseline", BASELINE_MODULE, 1),
            ):
                out[label] = _run_one(label, module_name, records, client, counter, repeats)
            out["ratio_project_over_baseline"] = (
                out["project"]["records_per_second"] / out["baseline"]["records_per_second"]
            )
            return out
    finally:
        os.environ.clear()
        os.environ.update(saved)
