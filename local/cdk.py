"""The one runner of the CDK CLI against the local AWS: the project's CLI (node_modules/aws-cdk) run by the
project's pinned Node.js (node_modules/.bin/node; on a platform without one, the machine's), never npx, with
``<args>`` in a project directory. The project's own account of its toolchain is tooling/toolchain.py; the
local AWS imports nothing of the product, so it finds the same two files by their place.

The CLI gets the caller's environment without its own AWS_/CDK_ settings (a real account is never reached),
plus what ``doctable local env`` exports, with the pinned Node.js first on PATH and as jsii's (``JSII_NODE``),
so the app the CLI runs synthesizes on it too. Its output is appended to a log file; a failure raises LocalError
with the command and the log's last lines.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from local import state
from local.control import health
from local.errors import LocalError

CDK_TIMEOUT = 900.0
TAIL_LINES = 30


@dataclass(frozen=True)
class CdkRun:
    args: tuple[str, ...]
    seconds: float
    output: str  # what this run wrote to the log


def cdk_env(
    port: int, base: Mapping[str, str] | None = None, directory: Path | None = None
) -> dict[str, str]:
    """``base`` (default: this process's environment) minus its AWS_/CDK_ settings, pointed at the local AWS
    on ``port`` whose state is in ``directory`` (default: the state directory); its CA is the one trusted."""
    source = os.environ if base is None else base
    env = {k: v for k, v in source.items() if not k.startswith(("AWS_", "CDK_"))}
    env.update(state.client_env(port, directory))
    env["CDK_DISABLE_CLI_TELEMETRY"] = "true"
    return env


def cli_command(project_dir: Path, args: Sequence[str], env: dict[str, str]) -> list[str]:
    """``cdk <args>`` as the project installed it; puts its Node.js on ``env``'s PATH and as ``JSII_NODE``."""
    cli = project_dir / "node_modules" / "aws-cdk" / "bin" / "cdk"
    if not cli.is_file():
        raise LocalError(f"the CDK CLI is not installed in {project_dir / 'node_modules'}: run `make setup`")
    node = project_dir / "node_modules" / ".bin" / "node"
    if not node.exists():
        return [str(cli), *args]  # no pinned binary for this platform: the machine's node, by the shebang
    env["PATH"] = os.pathsep.join([str(node.parent), *filter(None, [env.get("PATH")])])
    env["JSII_NODE"] = str(node)
    return [str(node), str(cli), *args]


def run_cdk(
    args: Sequence[str],
    *,
    project_dir: Path,
    port: int,
    log: Path,
    env: Mapping[str, str] | None = None,
    timeout: float = CDK_TIMEOUT,
    directory: Path | None = None,
) -> CdkRun:
    """Run ``cdk <args>`` against the local AWS on ``port`` (its state in ``directory``, default: the state
    directory); LocalError with the log's tail if it fails."""
    run_env = cdk_env(port, env, directory)
    command = cli_command(project_dir, args, run_env)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        out.write(f"\n$ {' '.join(command)}\n".encode())
        out.flush()
        start = out.tell()
        started = time.monotonic()
        try:
            result = subprocess.run(
                command,
                cwd=project_dir,
                env=run_env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=timeout,
            )
            failure = f"exit {result.returncode}" if result.returncode else None
        except subprocess.TimeoutExpired:
            failure = f"no answer within {timeout:.0f}s"
        seconds = time.monotonic() - started
    with open(log, "rb") as written:
        written.seek(start)
        output = written.read().decode(errors="replace")
    if failure is not None:
        tail = "\n".join(output.strip().splitlines()[-TAIL_LINES:])
        if "ECONNREFUSED" in output and health(port) is None:
            tail += (
                f"\nthe local AWS on port {port} stopped answering during the run (its server.log says why); "
                "start it again with `doctable local up` (its state is gone with it) and deploy again"
            )
        raise LocalError(f"`cdk {' '.join(args)}` failed ({failure}); last lines of {log}:\n{tail}")
    return CdkRun(tuple(args), seconds, output)
