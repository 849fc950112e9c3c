"""The application client's cost per put: a document with two blobs written by ``doctable.client.DocClient.put``
beside the same document written by hand (two boto3 ``put_object`` calls, then ``put_item``), under the
:mod:`bench.latency_model` (every request answered in memory at botocore's ``before-send``, then charged its
modelled service time with a real sleep in the calling thread).

Both write the data contract's item (docs/data-contract.md): each blob under a fresh key in the item's prefix,
listed as a manifest entry ``{key, etag, size}`` with the ETag S3 returned. What the client adds: validation, the
upload's ``If-None-Match: *``, the item's version and its create condition, uploads in parallel (its
``upload_concurrency``), retries and the undo of a failed write. The hand-written writer uploads one blob after the
other, as the boto3 documentation's examples do. The puts alternate between the two writers, each warmed first
(its clients built), and every put's item and objects are checked against the store.
"""

from __future__ import annotations

import os
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

from bench.common import BUCKET, consumer_env
from bench.events import ACCOUNT, BLOB_ROOT, REGION, TABLE
from bench.latency_model import ModelledAws, default_model

BLOB_NAMES = ("scan", "note")
BLOB_BYTES = 16 * 1024
WRITERS = ("client", "handwritten")


def blobs_of(n: int, size: int = BLOB_BYTES) -> dict[str, bytes]:
    """The put's two blobs (content differs per put and per blob: each upload has its own ETag)."""
    return {name: (f"{name}#{n}:".encode() * size)[:size] for name in BLOB_NAMES}


def handwritten_put(s3: Any, dynamodb: Any, pk: str, sk: str, total: int, blobs: dict[str, bytes]) -> None:
    """The put an application writes with boto3 alone: upload each blob, then write the item listing them."""
    entries = []
    for name, data in blobs.items():
        key = f"{BLOB_ROOT}{pk}/{sk}/{name}-{uuid.uuid4().hex}"
        reply = s3.put_object(Bucket=BUCKET, Key=key, Body=data)
        entries.append(
            {"M": {"key": {"S": key}, "etag": {"S": reply["ETag"]}, "size": {"N": str(len(data))}}}
        )
    dynamodb.put_item(
        TableName=TABLE,
        Item={"pk": {"S": pk}, "sk": {"S": sk}, "total": {"N": str(total)}, "blobs": {"L": entries}},
    )


def _listed_correctly(aws: ModelledAws, pk: str, sk: str, blobs: dict[str, bytes]) -> bool:
    """The item is stored and lists one manifest entry per blob, each naming the stored object by its ETag."""
    item = aws.items.get((pk, sk))
    if item is None:
        return False
    entries = [entry["M"] for entry in item["blobs"]["L"]]
    sizes = sorted(int(entry["size"]["N"]) for entry in entries)
    return (
        len(entries) == len(blobs)
        and sizes == sorted(len(data) for data in blobs.values())
        and all(entry["key"]["S"].startswith(f"{BLOB_ROOT}{pk}/{sk}/") for entry in entries)
        and all(aws.etag(entry["key"]["S"]) == entry["etag"]["S"] for entry in entries)
    )


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    seconds = sorted(r["seconds"] for r in runs)
    deciles = statistics.quantiles(seconds, n=10) if len(seconds) > 1 else [seconds[0]] * 9
    requests = [r["requests_total"] for r in runs]
    return {
        "puts": len(runs),
        "seconds_median": statistics.median(seconds),
        "seconds_p10": deciles[0],
        "seconds_p90": deciles[-1],
        "cpu_seconds_median": statistics.median(r["cpu_seconds"] for r in runs),
        "requests_per_put": statistics.mean(requests),
        "requests": runs[0]["requests"],
        "same_requests_every_put": len(set(requests)) == 1,
        "modelled_service_seconds_median": statistics.median(r["modelled_service_seconds"] for r in runs),
        "correct": all(r["correct"] for r in runs),
        "all_seconds": [r["seconds"] for r in runs],
    }


def run(
    puts: int = 20, s3_ms: float = 150.0, dynamodb_ms: float = 5.0, blob_bytes: int = BLOB_BYTES
) -> dict[str, Any]:
    """``puts`` documents with two blobs of ``blob_bytes`` by each writer, alternating."""
    import boto3

    from doctable.client import DocClient

    saved = dict(os.environ)
    os.environ.update(consumer_env())
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_CONFIG_FILE"):
        os.environ.pop(name, None)
    model = default_model(s3_ms, dynamodb_ms)
    aws = ModelledAws(BUCKET, TABLE, model)
    try:
        aws.install()  # before the sessions: a botocore session takes the built-in handlers when it is created
        client = DocClient(
            TABLE,
            BUCKET,
            blob_root=BLOB_ROOT,
            session=boto3.session.Session(region_name=REGION),
            bucket_owner=ACCOUNT,  # as from_stack gives it: no STS call in the measured path
        )
        session = boto3.session.Session(region_name=REGION)
        s3, dynamodb = session.client("s3"), session.client("dynamodb")
        writers: dict[str, Callable[[str, str, int, dict[str, bytes]], Any]] = {
            "client": lambda pk, sk, n, blobs: client.put(pk, sk, {"total": n}, blobs=blobs),
            "handwritten": lambda pk, sk, n, blobs: handwritten_put(s3, dynamodb, pk, sk, n, blobs),
        }
        for who, write in writers.items():  # warm-up: clients built, models loaded
            write(f"warm#{who}", "v", 0, blobs_of(-1, blob_bytes))
        runs: dict[str, list[dict[str, Any]]] = {who: [] for who in WRITERS}
        for n in range(puts):
            order = WRITERS if n % 2 == 0 else WRITERS[::-1]
            for who in order:
                pk, sk, blobs = f"doc#{who}-{n:04d}", "v", blobs_of(n, blob_bytes)
                aws.reset_counts()
                started, cpu_started = time.perf_counter(), time.process_time()
                writers[who](pk, sk, n, blobs)
                elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
                requests = dict(aws.requests)
                runs[who].append(
                    {
                        "seconds": elapsed,
                        "cpu_seconds": cpu,
                        "requests": requests,
                        "requests_total": sum(requests.values()),
                        "modelled_service_seconds": aws.charged_s,
                        "correct": _listed_correctly(aws, pk, sk, blobs),
                    }
                )
        out: dict[str, Any] = {
            "puts": puts,
            "blobs_per_put": len(BLOB_NAMES),
            "blob_bytes": blob_bytes,
            "upload_concurrency": client.upload_concurrency,
            "service_times": {
                op: {"fixed_ms": s.fixed_s * 1000, "per_key_ms": s.per_key_s * 1000, "source": s.source}
                for op, s in model.items()
                if op in ("PutObject", "PutItem")
            },
        }
        for who in WRITERS:
            out[who] = _summary(runs[who])
        out["ratio_client_over_handwritten_seconds"] = (
            out["client"]["seconds_median"] / out["handwritten"]["seconds_median"]
        )
        return out
    finally:
        aws.uninstall()
        boto3.DEFAULT_SESSION = None
        os.environ.clear()
        os.environ.update(saved)
