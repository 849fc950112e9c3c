"""The integration tests' harness for the local AWS: start it, run the real CDK CLI against it, read the proof.

Used by tests/integration (fixtures in its conftest.py), the soak and bench/e2e.py; everything it does to the
local AWS goes through ``local.api``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import boto3

from contract import names
from contract.knobs import resolve_config
from contract.settings.render import default_settings, render_settings
from contract.settings.resolve import CONFIG_VARIABLE
from doctable.lifecycle.deploy import CDK_OUTPUT_VARIABLE
from doctable.verify.proof import parse_proof_line
from infra.synth import cache as synth_cache
from infra.synth import worker as synth_worker_module
from local import api
from tooling import toolchain

ROOT = Path(__file__).resolve().parents[2]
CDK_BIN = ROOT / "node_modules" / "aws-cdk" / "bin" / "cdk"
ACCOUNT = api.ACCOUNT_ID
REGION = api.REGION
PROOF = names.PROOF_LOG_MESSAGE

# The two shapes every integration run deploys; distinct env/table_base so the stacks coexist.
FLAT = {"env": "dev", "table_base": "itflat"}
FULL = {
    "env": "stg",
    "table_base": "itfull",
    "gsi": "gsi1",
    "ttl": "on",
    "pitr": "on",
    "stream": "new-and-old",
    # The seed's batch of 10 (the default is 100): the burst test sees 28 writes delivered as 10, 10, 8.
    "batch_size": "10",
}


class CdkFailed(AssertionError):
    pass


HEALTH_DEADLINE = 60.0  # seconds a busy machine may take to answer the local AWS's health check


def require_enforced(aws: LocalAWS) -> None:
    """Fail (never skip) a module that proves IAM or TLS when its local AWS does not enforce IAM: a run that
    turns enforcement off on purpose deselects those modules (``-m "not iam"``)."""
    import pytest

    answer = api.wait_healthy(aws.info.port, within=HEALTH_DEADLINE)
    if answer is None:
        pytest.fail(
            f"the local AWS on port {aws.info.port} did not answer its health check in {HEALTH_DEADLINE:.0f} s"
        )
    if answer.get("iam") != "enforced":
        pytest.fail(
            f"the local AWS on port {aws.info.port} does not enforce IAM (iam={answer.get('iam')!r}): this module "
            'proves IAM; a run without enforcement (DOCTABLE_LOCAL_IAM=off) deselects it with -m "not iam"'
        )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LocalAWS:
    info: api.ServerInfo
    directory: Path
    env: dict[str, str]  # what a subprocess (the CDK CLI, `doctable`) needs to reach it
    http_port: int | None = field(default=None)  # its plain-HTTP listener (aws:SecureTransport false)

    @property
    def ca_bundle(self) -> str:
        """The CA its HTTPS certificate is signed by: ``verify=`` of a boto3 client."""
        return str(api.ca_bundle(self.directory))

    @property
    def http_url(self) -> str:
        assert self.http_port is not None, "this local AWS was started without a plain-HTTP listener"
        return api.endpoint_url(self.http_port, scheme="http")

    @cached_property
    def faults(self) -> api.FaultClient:
        return api.FaultClient(
            self.info.url, ca_bundle=self.ca_bundle, token=api.control_token(self.directory)
        )

    def client(
        self, service: str, *, url: str | None = None, region: str = REGION, **credentials: str
    ) -> Any:
        """A boto3 client of ``service`` in ``region`` on the HTTPS endpoint (or ``url``), as the admin deployer
        unless ``credentials`` (aws_access_key_id=, aws_secret_access_key=, aws_session_token=) say otherwise."""
        return boto3.client(
            service,
            endpoint_url=url or self.info.url,
            region_name=region,
            verify=self.ca_bundle,
            **(
                credentials
                or {
                    "aws_access_key_id": api.ACCESS_KEY_ID,
                    "aws_secret_access_key": api.SECRET_ACCESS_KEY,
                }
            ),
        )


@contextmanager
def private_local_aws(directory: Path) -> Iterator[LocalAWS]:
    """A local AWS of its own (a free port, its state in ``directory``), stopped on exit; it also listens for
    plain HTTP on another free port, where a request is one that did not arrive over TLS."""
    info = api.start(free_port(), directory, http_port=0)
    http_port = int((api.health(info.port) or {})["http_port"])
    env = api.cdk_env(info.port, directory=directory)
    env["DOCTABLE_LOCAL_DIR"] = str(directory)
    # The tests' stacks are shaped by their -c knobs over the built-in defaults, whatever the project's own
    # doctable.toml says: the harness names a settings file of its own.
    settings = directory / "doctable.toml"
    settings.write_text(render_settings(default_settings(settings)))
    env[CONFIG_VARIABLE] = str(settings)
    # `doctable deploy` synthesizes into this local AWS's own cloud assembly directory: the CDK CLI locks its
    # output directory, and the test workers (pytest-xdist) deploy at the same time.
    env[CDK_OUTPUT_VARIABLE] = str(directory / "cdk.out")
    # A shape synthesized before from the same sources, settings and context is not synthesized again (about
    # 10 s of CPU each): app.py copies the stored assembly out (infra/synth/cache.py).
    env[synth_cache.CACHE_VARIABLE] = str(ROOT / "build" / "synth-cache")
    try:
        # A shape not in the cache is synthesized by a worker that has the CDK loaded (under a second of CPU
        # instead of about 4.5 s): infra/synth/worker.py.
        with synth_worker(directory) as socket_path:
            env[synth_worker_module.WORKER_VARIABLE] = socket_path
            yield LocalAWS(info=info, directory=directory, env=env, http_port=http_port)
    finally:
        api.stop(directory)


@contextmanager
def synth_worker(directory: Path) -> Iterator[str]:
    """``app.py --serve`` on a socket in ``directory``, ready (it said so) before this yields its path; stopped
    on exit. Its own output is in ``synth-worker.log`` there."""
    path = directory / "synth.sock"
    env = toolchain.find().environment(
        {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CDK_", "DOCTABLE_"))}
    )
    with open(directory / "synth-worker.log", "wb") as log:
        worker = subprocess.Popen(
            [sys.executable, str(ROOT / "app.py"), "--serve", str(path)],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
    try:
        assert worker.stdout is not None
        said = worker.stdout.readline().strip()  # the first line, once it listens (or nothing, if it died)
        if said != synth_worker_module.READY:
            log_tail = (directory / "synth-worker.log").read_text(errors="replace")[-2000:]
            raise CdkFailed(f"the synth worker did not start (it said {said!r}):\n{log_tail}")
        yield str(path)
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


def run_cdk(aws: LocalAWS, args: list[str], out_dir: Path) -> api.CdkRun:
    """``cdk <args>`` from the project root, its cloud assembly in ``out_dir``; CdkFailed with the logs' tails."""
    try:
        return api.run_cdk(
            [*args, "--output", str(out_dir), "--no-notices", "--ci"],
            project_dir=ROOT,
            port=aws.info.port,
            log=out_dir / "cdk.log",
            env=aws.env,
            directory=aws.directory,
        )
    except api.LocalError as exc:
        server_log = (aws.directory / "server.log").read_text(errors="replace").splitlines()[-40:]
        raise CdkFailed(f"{exc}\n--- server.log ---\n" + "\n".join(server_log)) from None


def context_args(knobs: dict[str, str]) -> list[str]:
    return [arg for key, value in knobs.items() for arg in ("-c", f"{key}={value}")]


def stack_name(knobs: dict[str, str]) -> str:
    """The stack these knobs name, as the app resolves them from the harness's settings (the built-in defaults)."""
    return resolve_config(context=knobs, environ={}).stack_name


def stack_outputs(aws: LocalAWS, name: str) -> dict[str, str]:
    stack = aws.client("cloudformation").describe_stacks(StackName=name)["Stacks"][0]
    return {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}


@dataclass
class Deployed:
    name: str
    knobs: dict[str, str]
    outputs: dict[str, str]
    deploy: api.CdkRun


def deploy(aws: LocalAWS, knobs: dict[str, str], out: Path, extra: list[str] | None = None) -> Deployed:
    outputs_file = out / "outputs.json"
    result = run_cdk(
        aws,
        [
            "deploy",
            "--require-approval",
            "never",
            "--outputs-file",
            str(outputs_file),
            *(extra or []),
            *context_args(knobs),
        ],
        out,
    )
    name = stack_name(knobs)
    return Deployed(name=name, knobs=knobs, outputs=stack_outputs(aws, name), deploy=result)


# ---- reading what the consumer did ----
@dataclass(frozen=True)
class ProofLine:
    timestamp: int  # the log event's, in ms
    count: int
    first: int | None  # sequence numbers of the records it covers
    last: int | None


def proof_lines(logs: Any, log_group: str, since_ms: int) -> list[ProofLine]:
    """Every ``stream_records_received`` line in the log group since ``since_ms``, oldest first."""
    lines: list[ProofLine] = []
    kwargs: dict[str, Any] = {"logGroupName": log_group, "filterPattern": f'"{PROOF}"', "startTime": since_ms}
    while True:
        try:
            page = logs.filter_log_events(**kwargs)
        except logs.exceptions.ResourceNotFoundException:
            return []  # the function has not written its first line yet
        for event in page.get("events", []):
            line = parse_proof_line(event.get("message", ""))
            if line is None:
                continue
            first, last = line.get("first_sequence_number"), line.get("last_sequence_number")
            lines.append(
                ProofLine(
                    int(event["timestamp"]),
                    int(line.get("record_count", 0)),
                    int(first) if first else None,
                    int(last) if last else None,
                )
            )
        token = page.get("nextToken")
        if not token or token == kwargs.get("nextToken"):
            break
        kwargs["nextToken"] = token
    return sorted(lines, key=lambda p: (p.timestamp, p.first or 0))


def proof_counts(aws: LocalAWS, log_group: str, since_ms: int) -> list[int]:
    """record_count of every proof line in the log group since ``since_ms``, in order."""
    return [line.count for line in proof_lines(aws.client("logs"), log_group, since_ms)]


# wait_for's looks without an interval of the caller's: the first soon, then further apart up to the longest, so a
# condition met at once is seen at once and a long wait (a stack update, a proof line under load) asks the local
# AWS a few times a second, not twenty: each look is a request its server and the waiting test both pay for.
FIRST_LOOK, NEXT_LOOK, LONGEST_LOOK = 0.05, 1.5, 0.5


def wait_for(
    predicate: Callable[[], Any], timeout: float = 30.0, interval: float | None = None, what: str = ""
) -> Any:
    """The first truthy value of ``predicate()``, asked every ``interval`` seconds (default: from FIRST_LOOK,
    NEXT_LOOK times longer each time, up to LONGEST_LOOK); AssertionError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    pause = FIRST_LOOK if interval is None else interval
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what or predicate}")
        time.sleep(pause)
        if interval is None:
            pause = min(pause * NEXT_LOOK, LONGEST_LOOK)


def polled_past(aws: LocalAWS, mapping_uuid: str, passes: int = 2, timeout: float = 30.0) -> dict[str, Any]:
    """Wait until the mapping's poller has made ``passes`` more passes; return its progress then."""
    start = aws.faults.mappings()[mapping_uuid]["polls"]
    return wait_for(
        lambda: (p := aws.faults.mappings()[mapping_uuid])["polls"] >= start + passes and p,
        timeout=timeout,
        what=f"{passes} more passes of mapping {mapping_uuid}'s poller",
    )


def now_ms() -> int:
    return int(time.time() * 1000) - 5  # CloudWatch timestamps are milliseconds; allow clock rounding


def empty_bucket(aws: LocalAWS, bucket: str) -> None:
    s3 = aws.client("s3")
    while True:
        listing = s3.list_objects_v2(Bucket=bucket)
        keys = [{"Key": o["Key"]} for o in listing.get("Contents", [])]
        if not keys:
            return
        s3.delete_objects(Bucket=bucket, Delete={"Objects": keys})
