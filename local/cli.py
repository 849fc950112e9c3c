"""``doctable local up|down|env|status``: the embedded local AWS (moto server mode, adapted by local/)."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from local import state

READY_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0


def _user_error(message: str) -> Exception:
    # `python -m doctable.cli` runs the console script as __main__: raise the class its main() catches.
    error_class: Any = getattr(sys.modules.get("__main__"), "UserError", None)
    if not (isinstance(error_class, type) and issubclass(error_class, Exception)):
        from doctable.cli import UserError

        error_class = UserError
    return error_class(message)


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
    try:
        with urllib.request.urlopen(f"http://localhost:{port}/_doctable/health", timeout=timeout) as response:
            return json.loads(response.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None


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
    port: int = state.DEFAULT_PORT, directory: Path | None = None, timeout: float = READY_TIMEOUT
) -> state.ServerInfo:
    """Start the server in the background (or find it running) and wait until it answers."""
    directory = (directory or state.state_dir()).resolve()
    current = running(directory)
    if current is not None:
        if port not in (0, current.port):
            raise _user_error(
                f"the local AWS already runs on port {current.port} (pid {current.pid}); "
                f"run `doctable local down` first to move it to port {port}"
            )
        return current
    if port and health(port, timeout=0.5) is not None:
        raise _user_error(
            f"port {port} is taken by another local AWS (not this state directory's): stop it first"
        )
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "server.json").unlink(missing_ok=True)
    log_path = directory / "server.log"
    env = dict(os.environ)
    env["DOCTABLE_LOCAL_DIR"] = str(directory)
    root = str(state.PROJECT_ROOT)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    with open(log_path, "ab") as log_file:
        process = subprocess.Popen(
            [sys.executable, "-m", "local.server", "--port", str(port), "--dir", str(directory)],
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
            raise _user_error(f"the local AWS exited during start-up (code {code}): " + " | ".join(tail))
        info = state.ServerInfo.load(directory)
        if info is not None and info.pid == process.pid and health(info.port, timeout=0.5):
            return info
        time.sleep(0.05)
    process.terminate()
    raise _user_error(f"the local AWS did not answer within {timeout:.0f}s; see {log_path}")


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


def env_lines(port: int) -> list[str]:
    return [f"export {key}={shlex.quote(value)}" for key, value in state.client_env(port).items()]


# ---- commands ----
def _cmd_up(args: argparse.Namespace) -> int:
    started = time.monotonic()
    was = running()
    info = start(args.port)
    verb = "already running" if was is not None else f"started in {time.monotonic() - started:.1f}s"
    print(
        f"local AWS {verb}: {info.url} (pid {info.pid}, state in {state.state_dir()})\n"
        'point a shell at it with:  eval "$(doctable local env)"'
    )
    return 0


def _cmd_down(args: argparse.Namespace) -> int:
    if stop():
        print("local AWS stopped")
    else:
        print("local AWS was not running")
    return 0


def _cmd_env(args: argparse.Namespace) -> int:
    info = running()
    if info is None and not args.port:
        raise _user_error("the local AWS is not running; start it with `doctable local up`")
    port = info.port if info is not None else args.port
    print("\n".join(env_lines(port)))
    return 0


def _cmd_status(args: argparse.Namespace) -> int:
    info = running()
    if info is None:
        print("local AWS: not running")
        return 1
    print(f"local AWS: running at {info.url} (pid {info.pid}, moto {info.moto_version}, "
          f"up {time.time() - info.started_at:.0f}s, state in {state.state_dir()})")  # fmt: skip
    return 0


def register(sub: Any) -> None:
    """Add the ``local`` command group to the console script's subparsers."""
    parser = sub.add_parser(
        "local", help="the embedded local AWS (moto server mode) for cdk deploy and tests"
    )
    group = parser.add_subparsers(dest="local_command", required=True, metavar="ACTION")

    up = group.add_parser(
        "up", help="start the local AWS in the background (idempotent) and wait until ready"
    )
    up.add_argument(
        "--port", type=int, default=int(os.environ.get("DOCTABLE_LOCAL_PORT", state.DEFAULT_PORT))
    )
    up.set_defaults(func=_cmd_up)

    down = group.add_parser("down", help="stop the local AWS")
    down.set_defaults(func=_cmd_down)

    env = group.add_parser("env", help="print the export lines that point a shell (and the CDK CLI) at it")
    env.add_argument("--port", type=int, default=0, help="print for this port even if it is not running")
    env.set_defaults(func=_cmd_env)

    status = group.add_parser("status", help="say whether the local AWS runs (exit 1 if not)")
    status.set_defaults(func=_cmd_status)
