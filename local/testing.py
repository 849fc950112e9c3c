"""Test harness for the local AWS: run the real CDK CLI against it and read what the consumer did.

Used by tests/integration (fixtures in its conftest.py) and handy from a REPL. Nothing here is imported by the
server itself.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3

from local import state

ROOT = Path(__file__).resolve().parent.parent
CDK_BIN = ROOT / "node_modules" / ".bin" / "cdk"
ACCOUNT = state.ACCOUNT_ID
REGION = state.REGION
CDK_TIMEOUT = 300

# The two shapes every integration run deploys; distinct env/table_base so the stacks coexist.
FLAT = {"env": "dev", "table_base": "itflat"}
FULL = {
    "env": "stg",
    "table_base": "itfull",
    "gsi": "gsi1",
    "ttl": "on",
    "pitr": "on",
    "stream": "new-and-old",
}


class CdkFailed(AssertionError):
    pass


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LocalAWS:
    info: state.ServerInfo
    directory: Path
    env: dict[str, str]
    ready_seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)

    def client(self, service: str) -> Any:
        return boto3.client(
            service,
            endpoint_url=self.info.url,
            region_name=REGION,
            aws_access_key_id=state.ACCESS_KEY_ID,
            aws_secret_access_key=state.SECRET_ACCESS_KEY,
        )


@dataclass
class CdkResult:
    args: list[str]
    returncode: int
    output: str
    seconds: float


def run_cdk(aws: LocalAWS, args: list[str], out_dir: Path, check: bool = True) -> CdkResult:
    """``npx cdk <args>`` from the project root against the local AWS, its cloud assembly in ``out_dir``."""
    command = ["npx", "--no-install", "cdk", *args, "--output", str(out_dir), "--no-notices", "--ci"]
    started = time.monotonic()
    proc = subprocess.run(
        command,
        cwd=ROOT,
        env=aws.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=CDK_TIMEOUT,
    )
    result = CdkResult(command, proc.returncode, proc.stdout, time.monotonic() - started)
    if check and proc.returncode != 0:
        tail = "\n".join(proc.stdout.splitlines()[-40:])
        server_log = (aws.directory / "server.log").read_text(errors="replace").splitlines()[-40:]
        raise CdkFailed(
            f"{' '.join(command)} failed ({proc.returncode}):\n{tail}\n--- server.log ---\n"
            + "\n".join(server_log)
        )
    return result


def context_args(knobs: dict[str, str]) -> list[str]:
    args: list[str] = []
    for key, value in knobs.items():
        args += ["-c", f"{key}={value}"]
    return args


def stack_name(knobs: dict[str, str]) -> str:
    return f"doctable-{knobs['table_base']}-{knobs['env']}"


def stack_outputs(aws: LocalAWS, name: str) -> dict[str, str]:
    stack = aws.client("cloudformation").describe_stacks(StackName=name)["Stacks"][0]
    return {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}


@dataclass
class Deployed:
    name: str
    knobs: dict[str, str]
    outputs: dict[str, str]
    deploy: CdkResult


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
    from_cli = json.loads(outputs_file.read_text()).get(name, {}) if outputs_file.exists() else {}
    return Deployed(name=name, knobs=knobs, outputs={**from_cli, **stack_outputs(aws, name)}, deploy=result)


# ---- helpers the tests share ----
PROOF = "stream_records_received"


def proof_counts(aws: LocalAWS, log_group: str, since_ms: int) -> list[int]:
    """record_count of every stream_records_received line in the log group since ``since_ms``, in order."""
    logs = aws.client("logs")
    counts: list[tuple[int, int]] = []
    kwargs: dict[str, Any] = {"logGroupName": log_group, "filterPattern": PROOF, "startTime": since_ms}
    while True:
        page = logs.filter_log_events(**kwargs)
        for event in page["events"]:
            counts.append((event["timestamp"], _record_count(event["message"])))
        if not page.get("nextToken"):
            break
        kwargs["nextToken"] = page["nextToken"]
    return [count for _, count in sorted(counts, key=lambda c: c[0])]


def _record_count(message: str) -> int:
    try:
        return int(json.loads(message)["record_count"])
    except (ValueError, KeyError, TypeError):
        match = re.search(r'"?record_count"?\s*[:=]\s*(\d+)', message)
        return int(match.group(1)) if match else -1


def wait_for(
    predicate: Callable[[], Any], timeout: float = 30.0, interval: float = 0.05, what: str = ""
) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what or predicate}")
        time.sleep(interval)


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
