"""Shared bench plumbing: paths, the consumer environment, an S3 request counter, a stdout sink."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.events import BLOB_ROOT, REGION, TABLE

PROJECT_ROOT = Path(__file__).resolve().parent.parent
FUNCTIONS_DIR = PROJECT_ROOT / "functions"
BENCH_DIR = PROJECT_ROOT / "bench"
BUCKET = "doctable-bench-blobs"

PROJECT_MODULE = "stream_consumer.handler"
BASELINE_MODULE = "bench.baseline_consumer.handler"
FLOOR_MODULE = "bench.floor_consumer.handler"


def consumer_env(**extra: str) -> dict[str, str]:
    """The Lambda-like environment both consumers get (the project's contract; fake credentials)."""
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "BLOB_BUCKET": BUCKET,
        "BLOB_ROOT": BLOB_ROOT,
        "BLOB_PREFIX_CLEANUP": "off",
        "TABLE_NAME": TABLE,
        "POWERTOOLS_SERVICE_NAME": "doctable-consumer",
        "POWERTOOLS_METRICS_NAMESPACE": "Doctable",
        "POWERTOOLS_LOG_LEVEL": "INFO",
    }
    env.update(extra)
    return env


class S3RequestCounter:
    """Counts HTTP requests per S3 operation (``before-send``: each attempt, retries included).

    Registered on the boto3 default session *before* the consumers create their clients: a client copies the
    session's event handlers when it is created. ``register_first`` puts it ahead of moto's stubber (which
    answers the request and stops the ``before-send`` chain).
    """

    def __init__(self) -> None:
        self.by_operation: Counter[str] = Counter()
        self.call_seconds = 0.0  # time inside S3 API calls (the emulator's work included), sequential callers
        self._started: dict[int, float] = {}
        self._lock = threading.Lock()

    def __call__(self, event_name: str = "", **_: Any) -> None:
        operation = event_name.rsplit(".", 1)[-1]
        with self._lock:
            self.by_operation[operation] += 1

    def _before_call(self, **_: Any) -> None:
        self._started[threading.get_ident()] = time.perf_counter()

    def _after_call(self, **_: Any) -> None:
        started = self._started.pop(threading.get_ident(), None)
        if started is not None:
            with self._lock:
                self.call_seconds += time.perf_counter() - started

    def install(self, session: Any) -> None:
        session.events.register_first("before-send.s3", self, unique_id="doctable-bench-s3-counter")
        session.events.register_first("before-call.s3", self._before_call, unique_id="doctable-bench-s3-t0")
        session.events.register_last("after-call.s3", self._after_call, unique_id="doctable-bench-s3-t1")

    def reset(self) -> None:
        with self._lock:
            self.by_operation.clear()
            self.call_seconds = 0.0

    @property
    def total(self) -> int:
        return sum(self.by_operation.values())


class Sink:
    """A write-only stream that keeps only counts (log lines/bytes the handler produced)."""

    def __init__(self) -> None:
        self.bytes = 0
        self.lines = 0

    def write(self, text: str) -> int:
        self.bytes += len(text)
        self.lines += text.count("\n")
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def import_fresh(module_name: str) -> ModuleType:
    """Import a consumer module afresh (its package's modules purged first), the project's from ``functions/``."""
    top = module_name.split(".")[0]
    if top == "stream_consumer" and str(FUNCTIONS_DIR) not in sys.path:
        sys.path.insert(0, str(FUNCTIONS_DIR))
    prefix = module_name.rsplit(".", 1)[0]
    for name in [m for m in sys.modules if m == prefix or m.startswith(prefix + ".")]:
        del sys.modules[name]
    return importlib.import_module(module_name)


def machine_info() -> dict[str, Any]:
    import platform

    info: dict[str, Any] = {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    with contextlib.suppress(OSError):
        info["load_avg_at_start"] = [round(x, 2) for x in os.getloadavg()]
    try:
        from importlib import metadata

        info["packages"] = {
            name: metadata.version(name) for name in ("aws-lambda-powertools", "boto3", "botocore", "moto")
        }
    except Exception:  # informational only
        pass
    return info
