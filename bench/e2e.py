"""Item 4: end-to-end latency on the local AWS, from ``put_item`` returning to the consumer's proof line.

Flow: start a PRIVATE local AWS (``local.cli.start`` on a free port with its own state directory, so a local
AWS another engineer runs on the default port is never touched), take the environment from
``doctable local env``, ``cdk bootstrap`` + ``cdk deploy -c stream=new-and-old -c env=dev -c table_base=bench``
with the real CDK CLI (``DEPLOY_TARGET=local``), then write items and poll ``logs.filter_log_events`` on the
stack's ``ConsumerLogGroupName`` for ``stream_records_received`` lines. A line covers the records between its
``first_sequence_number`` and ``last_sequence_number``; the writer is one thread, so the stream's order is the
write order and the k-th new record is the k-th write. Latency = the log event's timestamp - the moment
``put_item`` returned.

Phases per consumer: 1 warm-up write (not counted: cold start is item 3), N single writes (each waits for its
line), then a burst of M writes as fast as one client thread goes. The baseline runs the same phases, deployed
next to the project's function (same role, layers, environment) with its own mapping created at LATEST after the
project's mapping is disabled, so the two never compete for the 2 cores.

Anything failing on the way (local AWS not ready, CDK, no proof line in time) makes the section "skipped" with
the reason; the rest of the bench still runs.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

from bench.common import BENCH_DIR, PROJECT_ROOT

KNOBS = {"stream": "new-and-old", "env": "dev", "table_base": "bench"}
LINE_TIMEOUT = 30.0
BURST_TIMEOUT = 180.0
POLL_SECONDS = 0.01
PROOF = "stream_records_received"


class Skip(Exception):
    """The end-to-end section cannot run here; the message says why."""


def _percentiles(values: list[float]) -> dict[str, float | int]:
    ordered = sorted(values)
    if not ordered:
        return {"n": 0}

    def pct(p: float) -> float:
        rank = max(1, round(p / 100 * len(ordered) + 0.4999))  # nearest rank
        return ordered[min(rank, len(ordered)) - 1]

    return {"n": len(ordered), "p50": pct(50), "p95": pct(95), "max": ordered[-1], "min": ordered[0]}


def _doctable_env(directory: Path, port: int) -> dict[str, str]:
    """The exports ``doctable local env`` prints for the private local AWS (parsed), plus DEPLOY_TARGET."""
    env = {**os.environ, "DOCTABLE_LOCAL_DIR": str(directory)}
    script = Path(sys.executable).with_name("doctable")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "doctable.cli"]
    proc = subprocess.run(
        [*command, "local", "env"], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    exports: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        if line.startswith("export "):
            key, _, value = line[len("export ") :].partition("=")
            exports[key] = shlex.split(value)[0] if value else ""
    if proc.returncode != 0 or "AWS_ENDPOINT_URL" not in exports:
        raise Skip(
            f"`doctable local env` failed (exit {proc.returncode}): {(proc.stderr or proc.stdout).strip()[-300:]}"
        )
    if not exports["AWS_ENDPOINT_URL"].endswith(f":{port}"):
        raise Skip(
            f"`doctable local env` points at {exports['AWS_ENDPOINT_URL']}, not the bench's port {port}"
        )
    env.update(exports)
    env["DEPLOY_TARGET"] = "local"
    env.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    env.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
    env["CDK_DISABLE_CLI_TELEMETRY"] = "true"
    return env


def _cdk(args: list[str], env: dict[str, str], log: Path, timeout: float = 300) -> float:
    started = time.perf_counter()
    with open(log, "ab") as out:
        out.write(f"\n$ cdk {' '.join(args)}\n".encode())
        out.flush()
        try:
            proc = subprocess.run(
                ["npx", "--no-install", "cdk", *args],
                cwd=PROJECT_ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                timeout=timeout,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise Skip(f"`cdk {args[0]}` could not run: {exc}") from None
    if proc.returncode != 0:
        tail = " | ".join(log.read_text(errors="replace").strip().splitlines()[-4:])
        raise Skip(f"`cdk {args[0]}` failed (exit {proc.returncode}): {tail[-400:]}")
    return time.perf_counter() - started


class ProofLines:
    """Polls a log group for proof lines and hands out the ones covering records not seen before."""

    def __init__(self, logs: Any, group: str, since_ms: int) -> None:
        self.logs = logs
        self.group = group
        self.since_ms = since_ms
        self.seen_max = 0  # highest last_sequence_number handed out

    def fetch_new(self) -> list[tuple[int, int, int, int]]:
        """New lines as (first_seq, last_seq, record_count, timestamp_ms), in sequence order."""
        kwargs: dict[str, Any] = {
            "logGroupName": self.group,
            "startTime": self.since_ms,
            "filterPattern": f'"{PROOF}"',
        }
        found: list[tuple[int, int, int, int]] = []
        while True:
            try:
                page = self.logs.filter_log_events(**kwargs)
            except self.logs.exceptions.ResourceNotFoundException:
                return []  # the function has not written its first line yet
            for event in page.get("events", []):
                message = event.get("message", "")
                if not message.lstrip().startswith("{"):
                    continue
                try:
                    line = json.loads(message)
                    first, last = int(line["first_sequence_number"]), int(line["last_sequence_number"])
                    count = int(line["record_count"])
                except (ValueError, KeyError, TypeError):
                    continue
                if line.get("message") == PROOF and first > self.seen_max:
                    found.append((first, last, count, int(event["timestamp"])))
            token = page.get("nextToken")
            if not token or token == kwargs.get("nextToken"):
                break
            kwargs["nextToken"] = token
        found = sorted(set(found))
        if found:
            self.seen_max = max(last for _, last, _, _ in found)
        return found


def _item(pk: str) -> dict[str, Any]:
    return {
        "pk": {"S": pk},
        "sk": {"S": "v#1"},
        "title": {"S": "bench"},
        "blobs": {"L": [{"S": f"{pk}/v#1/a.bin"}]},
    }


def _measure(
    ddb: Any, logs: Any, table: str, group: str, label: str, singles: int, burst: int
) -> dict[str, Any]:
    proof = ProofLines(logs, group, int(time.time() * 1000) - 2000)
    proof.fetch_new()  # skip whatever is already there (an earlier phase's lines)
    single_latencies: list[float] = []
    from_call: list[float] = []
    for i in range(singles + 1):  # write 0 warms the execution environment up and is not counted
        called = time.time()
        ddb.put_item(TableName=table, Item=_item(f"{label}-single-{i:04d}"))
        returned = time.time()
        deadline = time.monotonic() + LINE_TIMEOUT
        lines: list[tuple[int, int, int, int]] = []
        while not lines:
            if time.monotonic() > deadline:
                raise Skip(f"{label}: no {PROOF} line within {LINE_TIMEOUT:.0f}s of single write {i}")
            time.sleep(POLL_SECONDS)
            lines = proof.fetch_new()
        if i:
            single_latencies.append(lines[0][3] / 1000 - returned)
            from_call.append(lines[0][3] / 1000 - called)

    returned_at: list[float] = []
    started = time.perf_counter()
    for i in range(burst):
        ddb.put_item(TableName=table, Item=_item(f"{label}-burst-{i:05d}"))
        returned_at.append(time.time())
    write_seconds = time.perf_counter() - started
    covered: list[tuple[int, int, int, int]] = []
    deadline = time.monotonic() + BURST_TIMEOUT
    while sum(count for _, _, count, _ in covered) < burst:
        if time.monotonic() > deadline:
            got = sum(count for _, _, count, _ in covered)
            raise Skip(
                f"{label}: burst: only {got}/{burst} records covered by {PROOF} lines in {BURST_TIMEOUT:.0f}s"
            )
        time.sleep(0.05)
        covered.extend(proof.fetch_new())
    burst_latencies: list[float] = []
    position = 0
    for _, _, count, timestamp_ms in sorted(covered):
        for j in range(position, min(position + count, burst)):
            burst_latencies.append(timestamp_ms / 1000 - returned_at[j])
        position += count
    drained = max(ts for *_, ts in covered) / 1000 - returned_at[0]
    return {
        "single": _percentiles(single_latencies),
        "single_from_put_item_call": _percentiles(from_call),
        "burst": _percentiles(burst_latencies),
        "burst_write_seconds": write_seconds,
        "burst_invocations": len(covered),
        "burst_drain_seconds": drained,
    }


def _baseline_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted((BENCH_DIR / "baseline_consumer").glob("*.py")):
            archive.write(path, f"baseline_consumer/{path.name}")
    return buffer.getvalue()


def _deploy_baseline(lam: Any, project_function: str, stream_arn: str, mapping_uuid: str) -> tuple[str, str]:
    """Create the baseline function beside the project's (same role/layers/env) and move the stream to it."""
    config = lam.get_function_configuration(FunctionName=project_function)
    name = "doctable-bench-baseline-consumer"
    variables = dict(config.get("Environment", {}).get("Variables", {}))
    variables["POWERTOOLS_SERVICE_NAME"] = "doctable-baseline"
    lam.create_function(
        FunctionName=name,
        Runtime=config["Runtime"],
        Role=config["Role"],
        Handler="baseline_consumer.handler.lambda_handler",
        Code={"ZipFile": _baseline_zip()},
        Timeout=config.get("Timeout", 30),
        MemorySize=config.get("MemorySize", 256),
        Layers=[layer["Arn"] for layer in config.get("Layers", [])],
        Environment={"Variables": variables},
        TracingConfig={"Mode": config.get("TracingConfig", {}).get("Mode", "PassThrough")},
        Architectures=config.get("Architectures", ["x86_64"]),
    )
    lam.update_event_source_mapping(UUID=mapping_uuid, Enabled=False)
    lam.create_event_source_mapping(
        EventSourceArn=stream_arn,
        FunctionName=name,
        StartingPosition="LATEST",
        BatchSize=lam.get_event_source_mapping(UUID=mapping_uuid).get("BatchSize", 10),
        FunctionResponseTypes=["ReportBatchItemFailures"],
        Enabled=True,
    )
    return name, f"/aws/lambda/{name}"


def run(singles: int = 50, burst: int = 1000, work_dir: Path | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"singles": singles, "burst": burst, "knobs": KNOBS}
    directory = Path(tempfile.mkdtemp(prefix="doctable-bench-local-", dir=work_dir))
    local_cli = None
    started = time.perf_counter()
    try:
        try:
            from local import cli as local_cli  # optional: being built concurrently
            from local import state as local_state
        except Exception as exc:
            raise Skip(f"local AWS package not importable: {type(exc).__name__}: {exc}") from None
        if shutil.which("npx") is None:
            raise Skip("npx not found (the CDK CLI comes from node_modules)")
        try:
            info = local_cli.start(port=0, directory=directory)
        except Exception as exc:  # UserError or anything from a half-built local/
            raise Skip(f"local AWS did not start: {type(exc).__name__}: {exc}") from None
        out["local_aws_start_seconds"] = time.perf_counter() - started
        env = _doctable_env(directory, info.port)
        log = directory / "cdk.log"
        account, region = (
            env.get("CDK_DEFAULT_ACCOUNT", local_state.ACCOUNT_ID),
            env.get("AWS_REGION", "us-east-1"),
        )
        out["bootstrap_seconds"] = _cdk(["bootstrap", f"aws://{account}/{region}"], env, log)
        outputs_file = directory / "outputs.json"
        context = [arg for key, value in KNOBS.items() for arg in ("-c", f"{key}={value}")]
        out["deploy_seconds"] = _cdk(
            ["deploy", *context, "--require-approval", "never", "--outputs-file", str(outputs_file)], env, log
        )
        try:
            outputs = next(iter(json.loads(outputs_file.read_text()).values()))
            table, group = outputs["TableName"], outputs["ConsumerLogGroupName"]
            function, stream_arn = outputs["ConsumerFunctionName"], outputs["StreamArn"]
            mapping_uuid = outputs["EventSourceMappingUuid"]
        except (OSError, ValueError, KeyError, StopIteration) as exc:
            raise Skip(f"deploy outputs incomplete: {type(exc).__name__}: {exc}") from None

        import boto3

        session = boto3.session.Session(
            aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
            region_name=region,
        )
        endpoint = env["AWS_ENDPOINT_URL"]
        ddb, logs, lam = (
            session.client(name, endpoint_url=endpoint) for name in ("dynamodb", "logs", "lambda")
        )
        out["project"] = _measure(ddb, logs, table, group, "project", singles, burst)
        try:
            _, baseline_group = _deploy_baseline(lam, function, stream_arn, mapping_uuid)
            out["baseline"] = _measure(ddb, logs, table, baseline_group, "baseline", singles, burst)
        except Exception as exc:  # the project's figures stand without the baseline's
            out["baseline"] = {"skipped": f"{type(exc).__name__}: {exc}"[:300]}
    except Skip as exc:
        out["skipped"] = str(exc)
    except Exception as exc:  # never fail the whole bench for this section
        out["skipped"] = f"{type(exc).__name__}: {exc}"[:400]
    finally:
        if local_cli is not None:
            with contextlib.suppress(Exception):
                local_cli.stop(directory)
        out["section_seconds"] = time.perf_counter() - started
        shutil.rmtree(directory, ignore_errors=True)
    return out
