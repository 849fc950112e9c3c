"""End-to-end latency on the local AWS, from the START of the ``put_item`` call to the consumer's proof line.

Flow: start a PRIVATE local AWS (on a free port with its own state directory, so a local AWS another engineer
runs on the default port is never touched), ``cdk bootstrap`` + ``cdk deploy -c stream=new-and-old -c env=dev
-c table_base=bench`` with the real CDK CLI (through ``local.api.run_cdk``, as the tests do), then write items and poll ``logs.filter_log_events`` on the
stack's ``ConsumerLogGroupName`` for ``stream_records_received`` lines. A line covers the records between its
``first_sequence_number`` and ``last_sequence_number``; the writer is one thread, so the stream's order is the
write order and the k-th new record is the k-th write. Latency = the log event's timestamp (whole ms) - the
moment ``put_item`` was called, floored to the ms: the record exists only after the call started, so it is never
negative (measured from the call's return instead, the proof line can come first).

The figure is the local AWS's, started with ``DOCTABLE_LOCAL_POLL_CADENCE=aws``: its poller reads a DynamoDB
stream shard as Lambda does, four times a second while caught up and again at once while records are pending
(writes do not wake it), so a record waits up to 250 ms (125 ms on average) before its batch is read, and the
burst's batches are the size the plan model predicts for AWS.

Phases per consumer: warm-up writes until one is delivered (not counted: bench/coldstart.py measures cold
starts; a mapping created at LATEST can miss the first), N single writes (each waits for its
line), then a burst of M writes as fast as one client thread goes. The baseline runs the same phases, deployed
next to the project's function (same role, layers, environment) with its own mapping created at LATEST after the
project's mapping is disabled, so the two never compete for the 2 cores.

Anything failing on the way (local AWS not ready, CDK, no proof line in time) makes the section "skipped" with
the reason; the rest of the bench still runs.
"""

from __future__ import annotations

import io
import json
import math
import os
import shutil
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

from bench.common import BENCH_DIR
from local.api import LocalError
from local.pollers.streams import CADENCE_AWS, CADENCE_ENV
from tests.support import localaws as lt
from tooling import toolchain

KNOBS = {"stream": "new-and-old", "env": "dev", "table_base": "bench"}
LINE_TIMEOUT = 30.0
BURST_TIMEOUT = 180.0
POLL_SECONDS = 0.01
WARM_UP_PROBE_SECONDS = 4.0
PROOF = lt.PROOF


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


def _cdk(aws: lt.LocalAWS, args: list[str]) -> float:
    """Seconds ``cdk <args>`` took; Skip with the log's tail when it fails."""
    try:
        return lt.run_cdk(aws, args, aws.directory / "cdk.out").seconds
    except lt.CdkFailed as exc:
        raise Skip(str(exc).split("\n--- server.log ---", 1)[0][-400:]) from None


class ProofLines:
    """Polls a log group for proof lines and hands out the ones covering records not seen before."""

    def __init__(self, logs: Any, group: str, since_ms: int) -> None:
        self.logs = logs
        self.group = group
        self.since_ms = since_ms
        self.seen_max = 0  # highest last_sequence_number handed out

    def fetch_new(self) -> list[tuple[int, int, int, int]]:
        """New lines as (first_seq, last_seq, record_count, timestamp_ms), in sequence order."""
        found = sorted(
            {
                (line.first, line.last, line.count, line.timestamp)
                for line in lt.proof_lines(self.logs, self.group, self.since_ms)
                if line.first is not None and line.last is not None and line.first > self.seen_max
            }
        )
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


def _warm_up(ddb: Any, table: str, label: str, proof: ProofLines) -> None:
    """Write probes until one is covered by a proof line (not counted: bench/coldstart.py measures cold starts).

    A mapping created at LATEST misses what is written while its poller settles, so one probe may never be
    delivered; a probe is written every ``WARM_UP_PROBE_SECONDS`` until a line appears, then late lines of
    earlier probes are drained so that none is taken for a measured write's.
    """
    deadline = time.monotonic() + LINE_TIMEOUT
    probe = 0
    while True:
        ddb.put_item(TableName=table, Item=_item(f"{label}-warmup-{probe:03d}"))
        probe += 1
        next_probe = time.monotonic() + WARM_UP_PROBE_SECONDS
        while time.monotonic() < next_probe:
            time.sleep(POLL_SECONDS)
            if proof.fetch_new():
                drain_until = time.monotonic() + WARM_UP_PROBE_SECONDS / 2
                while time.monotonic() < drain_until:
                    time.sleep(POLL_SECONDS)
                    proof.fetch_new()
                return
        if time.monotonic() > deadline:
            raise Skip(f"{label}: no {PROOF} line within {LINE_TIMEOUT:.0f}s of {probe} warm-up write(s)")


def _measure(
    ddb: Any, logs: Any, table: str, group: str, label: str, singles: int, burst: int
) -> dict[str, Any]:
    proof = ProofLines(logs, group, int(time.time() * 1000) - 2000)
    proof.fetch_new()  # skip whatever is already there (an earlier phase's lines)
    _warm_up(ddb, table, label, proof)
    single_latencies: list[float] = []
    after_return: list[float] = []
    for i in range(1, singles + 1):
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
        single_latencies.append(_since(called, lines[0][3]))
        after_return.append(lines[0][3] / 1000 - returned)

    called_at: list[float] = []
    started = time.perf_counter()
    for i in range(burst):
        called_at.append(time.time())
        ddb.put_item(TableName=table, Item=_item(f"{label}-burst-{i:05d}"))
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
            burst_latencies.append(_since(called_at[j], timestamp_ms))
        position += count
    drained = max(ts for *_, ts in covered) / 1000 - called_at[0]
    return {
        "single": _percentiles(single_latencies),
        "single_after_put_item_returned": _percentiles(after_return),
        "burst": _percentiles(burst_latencies),
        "burst_write_seconds": write_seconds,
        "burst_invocations": len(covered),
        "burst_drain_seconds": drained,
    }


def _since(called: float, timestamp_ms: int) -> float:
    """Seconds from a call made at ``called`` (epoch s) to a log event stamped ``timestamp_ms`` (whole ms)."""
    return (timestamp_ms - math.floor(called * 1000)) / 1000


def _baseline_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted((BENCH_DIR / "baseline_consumer").glob("*.py")):
            archive.write(path, f"baseline_consumer/{path.name}")
    return buffer.getvalue()


def _deploy_baseline(
    lam: Any, iam: Any, logs: Any, project_function: str, stream_arn: str, mapping_uuid: str
) -> tuple[str, str]:
    """Create the baseline function beside the project's (same role/layers/env) and move the stream to it.

    The role may write only the project's log group (IAM is enforced, and Lambda writes a function's logs as
    its role): the baseline's log group is created and the role granted it, or its proof lines would be lost.
    """
    config = lam.get_function_configuration(FunctionName=project_function)
    name = "doctable-bench-baseline-consumer"
    group = f"/aws/lambda/{name}"
    logs.create_log_group(logGroupName=group)
    iam.put_role_policy(
        RoleName=config["Role"].rsplit("/", 1)[-1],
        PolicyName="doctable-bench-baseline-logs",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                        "Resource": f"arn:aws:logs:{lt.REGION}:{lt.ACCOUNT}:log-group:{group}:*",
                    }
                ],
            }
        ),
    )
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
    return name, group


def run(singles: int = 50, burst: int = 1000, work_dir: Path | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"singles": singles, "burst": burst, "knobs": KNOBS}
    directory = Path(tempfile.mkdtemp(prefix="doctable-bench-local-", dir=work_dir))
    started = time.perf_counter()
    try:
        try:
            toolchain.find()
        except toolchain.ToolchainError as exc:
            raise Skip(str(exc)) from None
        saved = os.environ.get(CADENCE_ENV)
        os.environ[CADENCE_ENV] = CADENCE_AWS  # the local AWS's server process inherits it
        out["poll_cadence"] = CADENCE_AWS
        try:
            with lt.private_local_aws(directory) as aws:
                out["local_aws_start_seconds"] = time.perf_counter() - started
                out.update(_run_on(aws, singles, burst))
        except LocalError as exc:  # the local AWS did not start
            raise Skip(f"local AWS: {exc}") from None
        finally:
            if saved is None:
                os.environ.pop(CADENCE_ENV, None)
            else:
                os.environ[CADENCE_ENV] = saved
    except Skip as exc:
        out["skipped"] = str(exc)
    except Exception as exc:  # never fail the whole bench for this section
        out["skipped"] = f"{type(exc).__name__}: {exc}"[:400]
    finally:
        out["section_seconds"] = time.perf_counter() - started
        shutil.rmtree(directory, ignore_errors=True)
    return out


def _run_on(aws: lt.LocalAWS, singles: int, burst: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    out["bootstrap_seconds"] = _cdk(aws, ["bootstrap", f"aws://{lt.ACCOUNT}/{lt.REGION}"])
    outputs_file = aws.directory / "outputs.json"
    out["deploy_seconds"] = _cdk(
        aws,
        [
            "deploy",
            *lt.context_args(KNOBS),
            "--require-approval",
            "never",
            "--outputs-file",
            str(outputs_file),
        ],
    )
    try:
        outputs = next(iter(json.loads(outputs_file.read_text()).values()))
        table, group = outputs["TableName"], outputs["ConsumerLogGroupName"]
        function, stream_arn = outputs["ConsumerFunctionName"], outputs["StreamArn"]
        mapping_uuid = outputs["EventSourceMappingUuid"]
    except (OSError, ValueError, KeyError, StopIteration) as exc:
        raise Skip(f"deploy outputs incomplete: {type(exc).__name__}: {exc}") from None
    ddb, logs, lam = (aws.client(name) for name in ("dynamodb", "logs", "lambda"))
    out["batch_size"] = lam.get_event_source_mapping(UUID=mapping_uuid).get("BatchSize", 10)
    out["project"] = _measure(ddb, logs, table, group, "project", singles, burst)
    try:
        _, baseline_group = _deploy_baseline(lam, aws.client("iam"), logs, function, stream_arn, mapping_uuid)
        out["baseline"] = _measure(ddb, logs, table, baseline_group, "baseline", singles, burst)
    except Exception as exc:  # the project's figures stand without the baseline's
        out["baseline"] = {"skipped": f"{type(exc).__name__}: {exc}"[:300]}
    return out
