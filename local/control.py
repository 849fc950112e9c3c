"""Start, find and stop the local AWS server process; its health check; the shell exports that point at it."""

from __future__ import annotations

import json
import os
import shlex
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from local import auth, state
from local.errors import LocalError

READY_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0
# The health check asks whichever server holds a loopback port for its pid, also one of another state directory
# (whose CA this process does not know): the answer is compared with server.json, never trusted for more.
_PROBE_TLS = ssl.create_default_context()
_PROBE_TLS.check_hostname = False
_PROBE_TLS.verify_mode = ssl.CERT_NONE


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped) is not running.
    try:
        status = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].split()[0]
        return status != "Z"
    except (OSError, IndexError):
        return True


def health(port: int, timeout: float = 1.0) -> dict[str, Any] | None:
    """The server's health answer on ``port`` (its pid, moto version), None when nothing answers."""
    try:
        with urllib.request.urlopen(
            state.endpoint_url(port) + state.HEALTH_PATH, timeout=timeout, context=_PROBE_TLS
        ) as response:
            return json.loads(response.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None


def wait_healthy(port: int, within: float = 60.0) -> dict[str, Any] | None:
    """The health answer on ``port``, asked again until one comes or ``within`` seconds have passed (a busy
    machine can take longer than one probe's timeout to answer); None when none came."""
    deadline = time.monotonic() + within
    while True:
        remaining = deadline - time.monotonic()
        reply = health(port, timeout=max(0.5, min(5.0, remaining)))
        if reply is not None or remaining <= 0:
            return reply
        time.sleep(0.2)  # between probes of a server that did not answer; the deadline bounds the wait


def running(directory: Path | None = None) -> state.ServerInfo | None:
    """The server recorded in the state directory, if its process lives and it answers."""
    info = state.ServerInfo.load(directory)
    if info is None or not _alive(info.pid):
        return None
    reply = health(info.port)
    if reply is None or reply.get("pid") != info.pid:
        return None
    return info


def start(
    port: int = state.DEFAULT_PORT,
    directory: Path | None = None,
    timeout: float = READY_TIMEOUT,
    iam: bool | None = None,
    http_port: int | None = None,
) -> state.ServerInfo:
    """Start the server in the background (or find it running) and wait until it answers.

    ``iam`` False starts it without IAM enforcement (the lenient mode); None keeps ``$DOCTABLE_LOCAL_IAM``.
    ``http_port`` adds a plain-HTTP listener (requests there carry ``aws:SecureTransport`` false), for tests.
    """
    directory = (directory or state.state_dir()).resolve()
    current = running(directory)
    if current is not None:
        if port not in (0, current.port):
            raise LocalError(
                f"the local AWS already runs on port {current.port} (pid {current.pid}); "
                f"run `doctable local down` first to move it to port {port}"
            )
        return current
    if port and health(port, timeout=0.5) is not None:
        raise LocalError(
            f"port {port} is taken by another local AWS (not this state directory's): stop it first"
        )
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "server.json").unlink(missing_ok=True)
    log_path = directory / "server.log"
    env = dict(os.environ)
    env["DOCTABLE_LOCAL_DIR"] = str(directory)
    if iam is not None:
        env[auth.ENV] = "on" if iam else "off"
    root = str(state.PROJECT_ROOT)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    command = [sys.executable, "-m", "local.server", "--port", str(port), "--dir", str(directory)]
    if http_port is not None:
        command += ["--http-port", str(http_port)]
    with open(log_path, "ab") as log_file:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            cwd=root,
            env=env,
            start_new_session=True,
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        code = process.poll()
        if code is not None:
            tail = log_path.read_text(errors="replace").strip().splitlines()[-5:]
            raise LocalError(f"the local AWS exited during start-up (code {code}): " + " | ".join(tail))
        info = state.ServerInfo.load(directory)
        if info is not None and info.pid == process.pid and health(info.port, timeout=0.5):
            return info
        time.sleep(0.05)
    process.terminate()
    raise LocalError(f"the local AWS did not answer within {timeout:.0f}s; see {log_path}")


def stop(directory: Path | None = None, timeout: float = STOP_TIMEOUT) -> bool:
    """Stop the recorded server; True if one was running."""
    directory = (directory or state.state_dir()).resolve()
    info = state.ServerInfo.load(directory)
    if info is None or not _alive(info.pid):
        (directory / "server.json").unlink(missing_ok=True)
        return False
    reply = health(info.port)
    if reply is not None and reply.get("pid") != info.pid:
        (directory / "server.json").unlink(missing_ok=True)
        return False  # the pid was reused by something else: never signal it
    os.kill(info.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _alive(info.pid):
        time.sleep(0.05)
    if _alive(info.pid):
        os.kill(info.pid, signal.SIGKILL)
    (directory / "server.json").unlink(missing_ok=True)
    return True


def env_lines(port: int, directory: Path | None = None) -> list[str]:
    """The ``export`` lines ``doctable local env`` prints."""
    return [f"export {key}={shlex.quote(value)}" for key, value in state.client_env(port, directory).items()]


def unset_line() -> str:
    """The one line ``doctable local env --unset`` prints: it takes back every variable ``env_lines`` exports."""
    return "unset " + " ".join(state.client_env(0))
