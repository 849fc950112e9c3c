"""Lambda without Docker: a function's deployed code runs in a warm subprocess of the venv's Python.

One ``Worker`` is one execution environment: a subprocess (``runtime/worker.py``) started with the function's
handler, environment variables, memory setting and the import path a Lambda environment would have (the code
from the deployed zip, then each layer's ``python/`` directories, then what the managed runtime provides). It is
reused across invocations and replaced after a crash, a timeout, or a change of code or configuration.

Everything the function writes goes to its CloudWatch log group (``LoggingConfig.LogGroup``, else
``/aws/lambda/<name>``), one log event per line, framed by START/END/REPORT lines as on Lambda, into a log
stream per execution environment named ``YYYY/MM/DD/[$LATEST]<id>``.

This module holds the execution environment's life (spec, worker process, pool, log sink); the worker's own
side is ``runtime/worker.py``.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import importlib.util
import io
import json
import logging
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from local import incidents
from local.auth import principals
from local.faults import spec as faults
from local.patching import Target
from local.runtime import metrics
from local.timefmt import iso_ms

log = logging.getLogger("doctable.local.runner")

WORKER_SCRIPT = Path(__file__).with_name("worker.py")
MARK = "\x1e"
# The libraries the managed Python runtime provides (the SDK and its dependencies).
RUNTIME_PROVIDED = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "urllib3", "six")
# What the public Powertools for AWS Lambda (Python) layer carries, when the venv has it.
POWERTOOLS_PROVIDED = (
    "aws_lambda_powertools",
    "typing_extensions",
    "jmespath",
    "aws_xray_sdk",
    "wrapt",
    "pydantic",
    "pydantic_core",
    "annotated_types",
    "typing_inspection",
    "fastjsonschema",
)
MAX_WORKERS_PER_FUNCTION = 4
IDLE_WORKER_SECONDS = 15 * 60  # an execution environment that has been idle this long is shut down
LOG_TAIL_BYTES = 4096

MOTO_TARGETS = (
    Target("moto.awslambda.models", "lambda_backends"),
    Target("moto.awslambda.models", "LambdaBackend.layers_versions_by_arn", ("self", "layer_version_arn")),
    Target("moto.logs.models", "logs_backends"),
    Target("moto.logs.exceptions", "ResourceNotFoundException"),
    Target("moto.logs.models", "LogsBackend.ensure_log_group", ("self", "log_group_name")),
    Target(
        "moto.logs.models", "LogsBackend.create_log_stream", ("self", "log_group_name", "log_stream_name")
    ),
    Target(
        "moto.logs.models",
        "LogsBackend.put_log_events",
        ("self", "log_group_name", "log_stream_name", "log_events"),
    ),
)


def _link_packages(target: Path, names: tuple[str, ...]) -> None:
    """Make ``target`` an import directory holding (symlinks to) the venv's copies of ``names``."""
    target.mkdir(parents=True, exist_ok=True)
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None or not spec.origin:
            continue
        origin = Path(spec.origin)
        source = origin.parent if origin.name == "__init__.py" else origin
        link = target / source.name
        if link.is_symlink() or link.exists():
            continue
        with contextlib.suppress(FileExistsError):
            link.symlink_to(source)


@dataclass
class InvokeResult:
    payload: bytes
    function_error: (
        str | None
    )  # "Unhandled" when the function failed, as the Invoke API's X-Amz-Function-Error
    log_tail: str
    request_id: str
    duration_ms: float
    error: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.function_error is None


@dataclass(frozen=True)
class FunctionSpec:
    """What defines an execution environment: a change of any field means a fresh environment."""

    account_id: str
    region: str
    function_name: str
    function_arn: str
    version: str
    handler: str
    runtime: str
    timeout: int
    memory_size: int
    code_sha256: str
    environment: tuple[tuple[str, str], ...]
    layers: tuple[str, ...]
    log_group: str
    log_format: str
    architecture: str
    tracing_mode: str
    role: str = ""  # the execution role: the environment holds a session of it
    initialization_type: str = "on-demand"  # "snap-start" for a version published with SnapStart on


class LogSink:
    """Writes one execution environment's lines to CloudWatch Logs through the moto backend, in process."""

    def __init__(self, account_id: str, region: str, group: str, stream: str, role: str = ""):
        from moto.logs.models import logs_backends

        self.backend = logs_backends[account_id][region]
        self.group = group
        self.stream = stream
        self.role = role
        self.stream_arn = f"arn:aws:logs:{region}:{account_id}:log-group:{group}:log-stream:{stream}"
        self.lock = threading.Lock()
        self._ensure()

    def _ensure(self) -> None:
        self.backend.ensure_log_group(self.group)
        group = self.backend.groups[self.group]
        if self.stream not in group.streams:
            self.backend.create_log_stream(self.group, self.stream)

    def put(self, lines: list[str]) -> None:
        events = [{"timestamp": int(time.time() * 1000), "message": line} for line in lines if line]
        if not events or not self._role_may_write():
            return
        with self.lock:
            try:
                self._ensure()
                self.backend.put_log_events(self.group, self.stream, events)
            except Exception as exc:
                from moto.logs.exceptions import ResourceNotFoundException

                if isinstance(exc, ResourceNotFoundException):
                    return  # the log group was deleted under us (stack destroy): the lines are lost, as on AWS
                incidents.record(f"lambda.logs.{self.group}", exc)

    def _role_may_write(self) -> bool:
        """Lambda writes a function's logs as its execution role: without the grant they are lost, as on AWS."""
        if not self.role:
            return True
        for action in ("logs:CreateLogStream", "logs:PutLogEvents"):
            if not principals.role_may(self.role, "lambda-logs", action, self.stream_arn).allowed:
                return False
        return True


class Worker:
    """One warm execution environment (a subprocess), serving one invocation at a time."""

    def __init__(self, runner: LambdaRunner, spec: FunctionSpec, code_dir: Path, path: list[str]):
        self.runner = runner
        self.spec = spec
        self.env_id = uuid.uuid4().hex
        today = datetime.now(UTC)
        self.log_stream = f"{today:%Y/%m/%d}/[{spec.version}]{self.env_id}"
        self.sink = LogSink(spec.account_id, spec.region, spec.log_group, self.log_stream, spec.role)
        self.busy = threading.Lock()
        self.last_used = time.monotonic()
        self.results: queue.Queue[tuple[str, dict[str, Any]]] = queue.Queue()
        self.tail: list[str] = []
        self.init_ms: float | None = None
        self.init_reported = False
        self.dead = False
        env = self._environment(code_dir, path)
        started = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-u", "-I", "-S", str(WORKER_SCRIPT)]
            if runner.isolated
            else [sys.executable, "-u", str(WORKER_SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=str(code_dir),
            env=env,
            start_new_session=True,
        )
        self.reader = threading.Thread(
            target=self._read, name=f"lambda-log-{spec.function_name}", daemon=True
        )
        self.reader.start()
        self.sink.put([f"INIT_START Runtime Version: {spec.runtime}.local\tRuntime Version ARN: local"])
        kind, ready = self._next_control(timeout=max(spec.timeout, 10))
        self.init_ms = (time.monotonic() - started) * 1000
        if kind != "READY":
            self.kill()
            raise RuntimeError(f"the runtime for {spec.function_name} did not start: {kind}")
        self.init_error = ready.get("error")

    def _environment(self, code_dir: Path, path: list[str]) -> dict[str, str]:
        spec = self.spec
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "en_US.UTF-8",
            "TZ": ":UTC",
            "LAMBDA_TASK_ROOT": str(code_dir),
            "LAMBDA_RUNTIME_DIR": str(self.runner.runtime_dir),
            "_HANDLER": spec.handler,
            "AWS_EXECUTION_ENV": f"AWS_Lambda_{spec.runtime}",
            "AWS_LAMBDA_FUNCTION_NAME": spec.function_name,
            "AWS_LAMBDA_FUNCTION_VERSION": spec.version,
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(spec.memory_size),
            "AWS_LAMBDA_FUNCTION_TIMEOUT": str(spec.timeout),
            "AWS_LAMBDA_LOG_GROUP_NAME": spec.log_group,
            "AWS_LAMBDA_LOG_STREAM_NAME": self.log_stream,
            "AWS_LAMBDA_INITIALIZATION_TYPE": spec.initialization_type,
            "AWS_REGION": spec.region,
            "AWS_DEFAULT_REGION": spec.region,
            "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
            "AWS_XRAY_DAEMON_ADDRESS": "127.0.0.1:2000",
            "_AWS_XRAY_DAEMON_ADDRESS": "127.0.0.1",
            "_AWS_XRAY_DAEMON_PORT": "2000",
        }
        if spec.log_format == "JSON":
            env["AWS_LAMBDA_LOG_FORMAT"] = "JSON"
        # The execution role's temporary credentials, as Lambda hands them to a function.
        env.update(principals.role_session(spec.role, spec.function_name))
        env.update(dict(spec.environment))
        # AWS calls from the function come back to this server (the function cannot override it: it would
        # reach real AWS from a local test, which is never what anyone wants).
        env["AWS_ENDPOINT_URL"] = self.runner.endpoint_url
        if self.runner.ca_bundle:
            env["AWS_CA_BUNDLE"] = self.runner.ca_bundle
        env["DOCTABLE_WORKER_PATH"] = os.pathsep.join(path)
        return env

    # ---- the subprocess's output ----
    def _read(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        pending: list[str] = []
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if MARK in line:
                before, _, control = line.partition(MARK)
                if before:
                    pending.append(before)
                self._flush(pending)
                kind, _, body = control.partition(" ")
                try:
                    payload = json.loads(body) if body else {}
                except ValueError:
                    payload = {"raw": body}
                self.results.put((kind, payload))
                continue
            if line:
                pending.append(line)
                self._flush(pending)  # ship lines as they come: log readers see them with low latency
                metrics.emf_line(self.spec.account_id, self.spec.region, line)
        self._flush(pending)
        self.results.put(("EXIT", {"code": self.proc.wait()}))

    def _flush(self, pending: list[str]) -> None:
        if not pending:
            return
        self.sink.put(pending)
        self.tail.extend(pending)
        del self.tail[:-200]
        pending.clear()

    def _next_control(self, timeout: float) -> tuple[str, dict[str, Any]]:
        try:
            return self.results.get(timeout=timeout)
        except queue.Empty:
            return "TIMEOUT", {}

    # ---- one invocation ----
    def invoke(self, event: Any, trace_id: str, iterator_age_ms: float | None = None) -> InvokeResult:
        spec = self.spec
        request_id = str(uuid.uuid4())
        self.tail = []
        started = time.monotonic()
        deadline_ms = time.time() * 1000 + spec.timeout * 1000
        self.sink.put([f"START RequestId: {request_id} Version: {spec.version}"])
        request = {
            "id": request_id,
            "event": event,
            "deadline_ms": deadline_ms,
            "trace_id": trace_id,
            "invoked_arn": spec.function_arn,
            "log_stream": self.log_stream,
        }
        error: dict[str, Any] | None = None
        body = "null"
        status = ""
        armed = faults.arm_invocation(spec.function_name, self.kill)  # a crash/timeout fault, when asked
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write((json.dumps(request) + "\n").encode("utf-8"))
            self.proc.stdin.flush()
            kind, payload = self._wait_result(request_id, spec.timeout)
        except (BrokenPipeError, OSError):
            kind, payload = "EXIT", {"code": self.proc.poll()}
        kind = faults.disarm_invocation(armed, kind)
        duration_ms = (time.monotonic() - started) * 1000
        if kind == "RESULT" and "error" not in payload:
            body = payload.get("body", "null")
        elif kind == "RESULT":
            error = payload["error"]
            error["requestId"] = request_id if error.get("errorType") else error.get("requestId", "")
        elif kind == "TIMEOUT":
            self.kill()
            message = f"{iso_ms()} {request_id} Task timed out after {spec.timeout:.2f} seconds"
            self.sink.put([message])
            error = {"errorMessage": message}
            status = "\tStatus: timeout"
        else:  # the runtime process exited during the invocation
            self.dead = True
            code = payload.get("code")
            reason = f"exit status {code}" if code is not None and code >= 0 else f"signal: {_signame(code)}"
            message = f"RequestId: {request_id} Error: Runtime exited with error: {reason}"
            self.sink.put([message])
            error = {"errorType": "Runtime.ExitError", "errorMessage": message}
            status = "\tStatus: error\tError Type: Runtime.ExitError"
        if error is not None:
            body = json.dumps(error)
        max_mem = self._max_memory_mb()
        init = ""
        if not self.init_reported and self.init_ms is not None:
            init = f"\tInit Duration: {self.init_ms:.2f} ms"
            self.init_reported = True
        self.sink.put(
            [
                f"END RequestId: {request_id}",
                f"REPORT RequestId: {request_id}\tDuration: {duration_ms:.2f} ms\t"
                f"Billed Duration: {int(duration_ms) + 1} ms\tMemory Size: {spec.memory_size} MB\t"
                f"Max Memory Used: {max_mem} MB{init}{status}",
            ]
        )
        self.last_used = time.monotonic()
        metrics.lambda_invocation(
            spec.account_id, spec.region, spec.function_name, duration_ms, error is not None, iterator_age_ms
        )
        tail = "\n".join(self.tail)[-LOG_TAIL_BYTES:]
        return InvokeResult(
            payload=body.encode("utf-8"),
            function_error="Unhandled" if error is not None else None,
            log_tail=tail,
            request_id=request_id,
            duration_ms=duration_ms,
            error=error,
        )

    def _wait_result(self, request_id: str, timeout: int) -> tuple[str, dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            kind, payload = self._next_control(max(deadline - time.monotonic(), 0))
            if kind == "RESULT" and payload.get("id") != request_id:
                continue  # a stale result of an earlier, timed-out request cannot happen (we kill), but be safe
            return kind, payload

    def _max_memory_mb(self) -> int:
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return max(int(line.split()[1]) // 1024, 1)
        except (OSError, ValueError, IndexError):
            pass
        return 0

    @property
    def alive(self) -> bool:
        return not self.dead and self.proc.poll() is None

    def kill(self) -> None:
        self.dead = True
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)

    def shutdown(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(timeout=2)
            except (OSError, ValueError, subprocess.TimeoutExpired):  # it did not stop in time: killed below
                pass
        self.kill()


def _signame(code: int | None) -> str:
    if code is None:
        return "unknown"
    try:
        return signal.Signals(-code).name.lower().removeprefix("sig")
    except ValueError:
        return str(code)


class LambdaRunner:
    """The process-wide pool of execution environments, keyed by function ARN."""

    def __init__(
        self,
        base_dir: Path,
        endpoint_url: str,
        provided_layers: dict[str, str] | None = None,
        ca_bundle: str | None = None,
    ):
        self.base_dir = base_dir
        self.endpoint_url = endpoint_url
        self.ca_bundle = ca_bundle  # the CA of the endpoint's certificate, for the functions' SDKs
        self.isolated = os.environ.get("DOCTABLE_LOCAL_LAMBDA_ISOLATION", "1") not in ("0", "off", "false")
        self.code_root = base_dir / "code"
        self.layer_root = base_dir / "layers"
        self.runtime_dir = base_dir / "runtime" / "python"
        self.provided_root = base_dir / "provided"
        # layer name -> which provided bundle stands in for its content ("powertools")
        self.provided_layers = dict(provided_layers or {})
        self.lock = threading.Lock()
        self.pools: dict[str, list[Worker]] = {}
        self.janitor = threading.Thread(target=self._reap_idle, name="lambda-janitor", daemon=True)
        self.stopping = threading.Event()
        _link_packages(self.runtime_dir, RUNTIME_PROVIDED)
        _link_packages(self.provided_root / "powertools" / "python", POWERTOOLS_PROVIDED)
        self.janitor.start()

    # ---- code and layers on disk ----
    def _extract(self, root: Path, digest: str, blob: bytes) -> Path:
        target = root / digest
        if target.is_dir():
            return target
        tmp = root / f".{digest}.{uuid.uuid4().hex}"
        tmp.mkdir(parents=True)
        if blob:
            with zipfile.ZipFile(io.BytesIO(blob)) as archive:
                archive.extractall(tmp)
        try:
            tmp.rename(target)
        except OSError:  # another thread won the race
            shutil.rmtree(tmp, ignore_errors=True)
        return target

    def _layer_paths(self, fn: Any) -> list[str]:
        from moto.awslambda.models import lambda_backends

        backend = lambda_backends[fn.account_id][fn.region]
        paths: list[str] = []
        for layer in fn.layers:
            arn = layer["Arn"]
            name = arn.split(":")[6]
            provided = self.provided_layers.get(name)
            if provided:
                root = self.provided_root / provided
            else:
                version = backend.layers_versions_by_arn(arn)
                if version is None:
                    continue
                blob = version.code_bytes or b""
                root = self._extract(self.layer_root, hashlib.sha256(blob).hexdigest(), blob)
            for sub in ("python/lib/python3.13/site-packages", "python"):
                if (root / sub).is_dir():
                    paths.append(str(root / sub))
        return paths

    def spec_for(self, fn: Any) -> FunctionSpec:
        logging_config = getattr(fn, "logging_config", None) or {}
        return FunctionSpec(
            account_id=fn.account_id,
            region=fn.region,
            function_name=fn.function_name,
            function_arn=fn.function_arn,
            version=str(fn.version),
            handler=fn.handler or "",
            runtime=fn.run_time or "python3.13",
            timeout=int(fn.timeout or 3),
            memory_size=int(fn.memory_size or 128),
            code_sha256=fn.code_sha_256 or "",
            environment=tuple(sorted((str(k), str(v)) for k, v in (fn.environment_vars or {}).items())),
            layers=tuple(layer["Arn"] for layer in fn.layers),
            log_group=logging_config.get("LogGroup") or f"/aws/lambda/{fn.function_name}",
            log_format=logging_config.get("LogFormat", "Text"),
            architecture=(fn.architectures or ["x86_64"])[0],
            tracing_mode=(fn.tracing_config or {}).get("Mode", "PassThrough"),
            role=str(fn.role or ""),
            initialization_type=(
                "snap-start"
                if str(fn.version) != "$LATEST"
                and getattr(fn, "snap_start_apply_on", "") == "PublishedVersions"
                else "on-demand"
            ),
        )

    # ---- invocation ----
    def invoke(self, fn: Any, event: Any, iterator_age_ms: float | None = None) -> InvokeResult:
        spec = self.spec_for(fn)
        if not spec.runtime.startswith("python"):
            error = {
                "errorType": "Runtime.Unsupported",
                "errorMessage": f"the local AWS runs Python functions only, not {spec.runtime}",
            }
            return InvokeResult(json.dumps(error).encode(), "Unhandled", "", "", 0.0, error)
        worker = self._acquire(fn, spec)
        try:
            trace_id = _trace_header(spec.tracing_mode)
            result = worker.invoke(event, trace_id, iterator_age_ms)
        finally:
            worker.busy.release()
            if not worker.alive:
                self._discard(spec.function_arn, worker)
        return result

    def prewarm(self, fn: Any) -> None:
        """Start an execution environment ahead of the first event (a mapping was just created)."""
        try:
            spec = self.spec_for(fn)
            if not spec.runtime.startswith("python"):
                return
            with self.lock:
                if any(w.spec == spec and w.alive for w in self.pools.get(spec.function_arn, [])):
                    return
            worker = self._acquire(fn, spec)
            worker.busy.release()
        except Exception as exc:  # the first invocation starts the worker instead; the failure is an incident
            incidents.record(f"lambda.prewarm.{getattr(fn, 'function_name', '?')}", exc)

    def _acquire(self, fn: Any, spec: FunctionSpec) -> Worker:
        key = spec.function_arn
        while True:
            with self.lock:
                pool = self.pools.setdefault(key, [])
                for worker in list(pool):
                    if worker.spec != spec or not worker.alive:
                        if worker.busy.acquire(blocking=False):
                            pool.remove(worker)
                            threading.Thread(target=worker.shutdown, daemon=True).start()
                        continue
                    if worker.busy.acquire(blocking=False):
                        return worker
                spawn = len([w for w in pool if w.spec == spec]) < MAX_WORKERS_PER_FUNCTION
            if spawn:
                worker = self._spawn(fn, spec)
                worker.busy.acquire()
                with self.lock:
                    self.pools.setdefault(key, []).append(worker)
                return worker
            time.sleep(0.02)

    def _spawn(self, fn: Any, spec: FunctionSpec) -> Worker:
        """A new execution environment of ``fn``'s code and layers (its init has run when this returns)."""
        blob = fn.code_bytes or b""
        digest = getattr(fn, "code_digest", None) or hashlib.sha256(blob).hexdigest()
        code_dir = self._extract(self.code_root, digest, blob)
        path = [str(code_dir), *self._layer_paths(fn), str(self.runtime_dir)]
        if not self.isolated:
            path += [p for p in sys.path if p]
        return Worker(self, spec, code_dir, path)

    def initialize(self, fn: Any) -> str | None:
        """Run ``fn``'s init once in a fresh environment, as Lambda does before it takes a SnapStart snapshot;
        the error when the init failed, else None. The environment is shut down: no memory snapshot is kept."""
        spec = self.spec_for(fn)
        if not spec.runtime.startswith("python"):
            return None  # only Python runs here; other runtimes' init is not modelled
        try:
            worker = self._spawn(fn, spec)
        except RuntimeError as exc:  # the runtime exited or timed out during its init
            return str(exc)
        error = worker.init_error
        worker.shutdown()
        if error:
            return f"{error.get('errorType', 'Runtime.Unknown')}: {error.get('errorMessage', '')}"
        return None

    def _discard(self, key: str, worker: Worker) -> None:
        with self.lock:
            pool = self.pools.get(key, [])
            if worker in pool:
                pool.remove(worker)
        worker.kill()

    def forget(self, function_arn: str) -> None:
        """The function was deleted: its execution environments go."""
        with self.lock:
            pool = self.pools.pop(function_arn, [])
        for worker in pool:
            threading.Thread(target=worker.shutdown, daemon=True).start()

    def _reap_idle(self) -> None:
        while not self.stopping.wait(30):
            now = time.monotonic()
            with self.lock:
                for _key, pool in self.pools.items():
                    for worker in list(pool):
                        idle = now - worker.last_used > IDLE_WORKER_SECONDS
                        if (idle or not worker.alive) and worker.busy.acquire(blocking=False):
                            pool.remove(worker)
                            threading.Thread(target=worker.shutdown, daemon=True).start()

    def shutdown(self) -> None:
        self.stopping.set()
        with self.lock:
            workers = [w for pool in self.pools.values() for w in pool]
            self.pools.clear()
        for worker in workers:
            worker.kill()


def _trace_header(mode: str) -> str:
    now = int(time.time())
    root = f"1-{now:08x}-{uuid.uuid4().hex[:24]}"
    parent = uuid.uuid4().hex[:16]
    sampled = "1" if mode == "Active" else "0"
    return f"Root={root};Parent={parent};Sampled={sampled};Lineage=1:{uuid.uuid4().hex[:8]}:0"


def encode_log_tail(tail: str) -> str:
    return base64.b64encode(tail.encode("utf-8")[-LOG_TAIL_BYTES:]).decode("ascii")


_RUNNER: LambdaRunner | None = None


def install(runner: LambdaRunner) -> None:
    global _RUNNER
    _RUNNER = runner


def get_runner() -> LambdaRunner:
    if _RUNNER is None:
        raise RuntimeError("the local Lambda runner is not installed (start the server with local.server)")
    return _RUNNER


__all__ = ["FunctionSpec", "InvokeResult", "LambdaRunner", "get_runner", "install"]
