"""Cold start = a fresh Python process that imports the handler module and handles a one-record batch.

Four handlers get the same environment and the same event: the project's, the baseline, the json floor (a
handler importing only ``json``) and the SDK floor (boto3 imported, the S3 client built at init, one
``DeleteObjects`` for the REMOVE's blobs: what any blob-deleting consumer pays). The environment is Lambda-like with active tracing, as deployed
(``Tracing.ACTIVE``): ``LAMBDA_TASK_ROOT`` and ``_X_AMZN_TRACE_ID`` are set, so Powertools' Tracer is enabled
and patches (the X-Ray SDK sends its segments by UDP to 127.0.0.1:2000, where nothing listens).

Two events:

* ``insert``: one INSERT record; nothing to delete, so no S3 call;
* ``remove``: one REMOVE record listing 3 blobs, deleted from the bench's in-memory bucket
  (:class:`bench.latency_model.ModelServer` on localhost, every service time zero: a warm round trip of 2-4 ms,
  client included, where moto's server took 6-16 ms, the emulator's time in the figure). The blobs
  are put back before every run and checked gone after it; the table the project reads its live items from is
  empty.

The project's consumer also runs as deployed with ``blob_key_reuse=never`` (REMOVE) and with ``snapstart=on``
(both events): its init (``AWS_LAMBDA_INITIALIZATION_TYPE=snap-start``, the clients built) runs before a fork, and
the forked copy handles the batch, as an environment restored from the snapshot does; its time runs from the
fork. Lambda's restore itself (the snapshot loaded into a microVM, reported as Restore Duration) is platform time
this cannot measure.

Runs are interleaved (a shuffled order per round) so machine noise hits all handlers alike.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import (
    BENCH_DIR,
    BUCKET,
    PROJECT_MODULE,
    PROJECT_ROOT,
    consumer_env,
)
from bench.events import TABLE, blob_keys, image, record
from bench.latency_model import ModelledAws, ModelServer, zero_model
from tooling.asset import stage_package

CHILD = BENCH_DIR / "_coldstart_child.py"
# name -> (package directory copied into the task root, handler module inside it)
HANDLERS = {
    "project": (PROJECT_ROOT / "functions" / "stream_consumer", PROJECT_MODULE),
    "baseline": (BENCH_DIR / "baseline_consumer", "baseline_consumer.handler"),
    "floor": (BENCH_DIR / "floor_consumer", "floor_consumer.handler"),
    "sdk_floor": (BENCH_DIR / "sdk_floor_consumer", "sdk_floor_consumer.handler"),
}
DELETERS = ("project", "project_never", "project_snapstart", "baseline", "sdk_floor")
# The project's consumer again, deployed with blob_key_reuse=never (REMOVE only: an INSERT is the same code path).
NEVER = "project_never"
# The project's consumer deployed with snapstart=on, resumed from its init's snapshot (a fork after the init).
SNAPSTART = "project_snapstart"
VARIANT_ENV = {
    NEVER: {"BLOB_KEY_REUSE": "never"},
    SNAPSTART: {"AWS_LAMBDA_INITIALIZATION_TYPE": "snap-start"},
}
TRACE_ID = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"


def _event(kind: str) -> tuple[dict[str, Any], list[str]]:
    pk, sk = "doc#cold", "v#1"
    keys = blob_keys(pk, sk, 3)
    if kind == "insert":
        return {"Records": [record("INSERT", 1, pk, sk, new=image(pk, sk, keys))]}, []
    return {"Records": [record("REMOVE", 1, pk, sk, old=image(pk, sk, keys))]}, keys


def summarize(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    deciles = statistics.quantiles(ordered, n=10, method="inclusive") if len(ordered) > 1 else ordered * 9
    return {
        "n": len(ordered),
        "median": statistics.median(ordered),
        "p10": deciles[0],
        "p90": deciles[8],
        "min": ordered[0],
        "max": ordered[-1],
    }


def _task_root(tmp: Path, name: str) -> Path:
    """A Lambda-like ``/var/task`` for one handler. The project's is its asset as staged for deploy (with the
    bytecode it ships under the runtime's Python); the others' package is copied without ``__pycache__``, so
    (``/var/task`` being read-only) every cold start compiles it, as on Lambda."""
    source, _ = HANDLERS[name]
    if name == "project":
        return stage_package(source, tmp / "build")
    root = tmp / f"task-{name}"
    shutil.copytree(source, root / source.name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.md"))
    return root


def _child_env(endpoint: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "POWERTOOLS_", "CDK_"))}
    env.pop("PYTHONPATH", None)
    env.update(
        consumer_env(
            AWS_LAMBDA_FUNCTION_NAME="doctable-bench-StreamConsumer",
            AWS_LAMBDA_FUNCTION_MEMORY_SIZE="256",
            _X_AMZN_TRACE_ID=TRACE_ID,
            AWS_XRAY_DAEMON_ADDRESS="127.0.0.1:2000",
            AWS_XRAY_CONTEXT_MISSING="LOG_ERROR",
            PYTHONDONTWRITEBYTECODE="1",
        )
    )
    if endpoint:
        env["AWS_ENDPOINT_URL"] = endpoint
    return env


def _run_child(
    module: str, task_root: Path, event_path: Path, env: dict[str, str], snapshot: bool = False
) -> dict[str, Any]:
    """Spawn the child; ``wall_s`` runs from spawn to the moment its result line arrives (the response is
    ready), so interpreter shutdown, which Lambda never waits for, is not counted. With ``snapshot`` it runs from
    the restore (the fork after the init) instead."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [
            sys.executable,
            str(CHILD),
            module,
            str(task_root),
            str(event_path),
            *(["--snapshot"] if snapshot else []),
        ],
        env={**env, "LAMBDA_TASK_ROOT": str(task_root)},
        cwd=str(PROJECT_ROOT),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    wall = None
    lines: list[str] = []
    for line in proc.stderr:
        if line.startswith("BENCH_RESULT "):
            wall = time.perf_counter() - started
        lines.append(line)
    code = proc.wait(timeout=60)
    results = [line for line in lines if line.startswith("BENCH_RESULT ")]
    if code != 0 or not results or wall is None:
        raise RuntimeError(f"cold-start child for {module} failed (rc={code}): {''.join(lines)[-800:]}")
    result = json.loads(results[-1].split(" ", 1)[1])
    result["wall_s"] = result.get("since_restore_s", wall)
    return result


def run(runs: int = 15, kinds: tuple[str, ...] = ("insert", "remove"), seed: int = 7) -> dict[str, Any]:
    out: dict[str, Any] = {
        "runs": runs,
        "environment": "Lambda-like, tracing active (Tracer enabled)",
        "aws": "the bench's in-memory bucket and table over HTTP on localhost, every service time zero",
    }
    rng = random.Random(seed)
    store = ModelledAws(BUCKET, TABLE, zero_model())
    server: ModelServer | None = None
    endpoint: str | None = None
    try:
        with tempfile.TemporaryDirectory(prefix="doctable-bench-cold-") as tmp_name:
            tmp = Path(tmp_name)
            roots = {name: _task_root(tmp, name) for name in HANDLERS}
            roots[NEVER] = roots[SNAPSTART] = roots["project"]
            for kind in kinds:
                event, keys = _event(kind)
                event_path = tmp / f"{kind}.json"
                event_path.write_text(json.dumps(event))
                if keys and server is None:
                    server = ModelServer(store).start()
                    endpoint = server.endpoint
                env = _child_env(endpoint if keys else None)
                names = [*HANDLERS, *([NEVER] if keys else []), SNAPSTART]
                samples: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
                problems: list[str] = []
                for round_ in range(runs + 1):  # round 0 warms the page cache and is not recorded
                    order = list(names)
                    rng.shuffle(order)
                    for name in order:
                        if keys:
                            store.put(keys)
                        module = HANDLERS["project" if name in VARIANT_ENV else name][1]
                        child_env = {**env, **VARIANT_ENV.get(name, {})}
                        result = _run_child(
                            module, roots[name], event_path, child_env, snapshot=name == SNAPSTART
                        )
                        if result["response"] != {"batchItemFailures": []}:
                            problems.append(f"{name}: response {result['response']}")
                        if keys and name in DELETERS:
                            left = len(store.present(keys))
                            if left:
                                problems.append(f"{name}: {left} blob(s) not deleted")
                        if round_:
                            samples[name].append(result)
                section: dict[str, Any] = {"problems": sorted(set(problems))}
                for name, results in samples.items():
                    section[name] = {
                        "wall_s": summarize([r["wall_s"] for r in results]),
                        "init_and_invoke_s": summarize([r["init_and_invoke_s"] for r in results]),
                        "cpu_s": summarize([r["cpu_s"] for r in results]),
                        "modules_loaded": results[-1]["modules_loaded"],
                        "wall_ms_samples": [round(r["wall_s"] * 1000, 2) for r in results],
                    }
                for metric in ("wall_s", "init_and_invoke_s", "cpu_s"):
                    p, b, f, sdk = (
                        section[n][metric]["median"] for n in ("project", "baseline", "floor", "sdk_floor")
                    )
                    section[f"ratio_project_over_baseline_{metric}"] = p / b
                    section[f"ratio_project_over_floor_{metric}"] = p / f
                    section[f"ratio_project_over_sdk_floor_{metric}"] = p / sdk
                    section[f"ratio_snapstart_over_baseline_{metric}"] = (
                        section[SNAPSTART][metric]["median"] / b
                    )
                out[kind] = section
    finally:
        if server is not None:
            server.stop()
    return out
