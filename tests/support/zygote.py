"""A process that has imported the console script's code once and forks a fresh copy of itself for each run.

The suite runs ``doctable`` a few hundred times, each in a process of its own as a user would; importing the
CLI's code (boto3, botocore, every command) is about 0.4 s of CPU of each run, more than most commands then
spend. The zygote pays it once per test worker: each run is a child forked from it, with the run's environment,
working directory, closed stdin and its own stdout and stderr, calling the same ``doctable.cli.main`` the console
script calls, and exiting with its code. The zygote itself is single-threaded (a fork copies no other thread's
held lock), reads nothing from the environment at import, and runs one child at a time: a caller that finds it
busy starts a plain subprocess instead.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
READY = "zygote ready"


# ---------------------------------------------------------------------------------------------- the zygote
def serve() -> None:
    """Import the CLI, say READY, then for each request line fork a child that runs it; answer its pid, then
    its exit code."""
    import doctable.cli  # noqa: F401 - everything the console script imports, once

    sys.stdout.write(READY + "\n")
    sys.stdout.flush()
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)
        _say({"pid": pid})
        _, status = os.waitpid(pid, 0)
        _say({"code": os.waitstatus_to_exitcode(status)})


def _say(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _child(request: dict[str, Any]) -> None:
    """The run: its directory, environment and files, then ``main(argv)``; never returns."""
    code = 1
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        sys.stdin = open(os.devnull)  # noqa: SIM115 - the child's whole life
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
        sys.argv = ["doctable", *request["argv"]]
        from doctable.cli import main

        code = main(request["argv"])
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        if isinstance(exit_.code, str):
            print(exit_.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - what an uncaught error prints, then exit 1, as the interpreter would
        traceback.print_exc()
    finally:
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)


# ---------------------------------------------------------------------------------------------- the caller
class Zygote:
    """One zygote per test worker, started on first use and stopped when the worker exits."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.lock = threading.Lock()
        self.buffer = b""

    def _start(self) -> subprocess.Popen[bytes]:
        if self.proc is not None and self.proc.poll() is None:
            return self.proc
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "DOCTABLE_", "CDK_"))}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from tests.support.zygote import serve; serve()"],
            cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.buffer = b""
        said = self._line(self.proc, 120)
        if said != READY:
            raise RuntimeError(f"the CLI zygote did not start (it said {said!r})")
        atexit.register(self.stop)
        return self.proc

    def _line(self, proc: subprocess.Popen[bytes], timeout: float | None) -> str | None:
        """The zygote's next line, or None when ``timeout`` passed first."""
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        while b"\n" not in self.buffer:
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                raise RuntimeError("the CLI zygote exited")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode()

    def run(
        self, argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, timeout: float, files: Path
    ) -> tuple[int, str, str] | None:
        """``(code, stdout, stderr)`` of ``doctable ARGV`` forked from the zygote; None when it is busy.
        subprocess.TimeoutExpired when it runs past ``timeout`` (the child is killed)."""
        if not self.lock.acquire(blocking=False):
            return None
        try:
            proc = self._start()
            assert proc.stdin is not None
            out, err = files / "stdout", files / "stderr"
            request = {
                "argv": list(argv),
                "env": dict(env),
                "cwd": str(cwd),
                "stdout": str(out),
                "stderr": str(err),
            }
            proc.stdin.write((json.dumps(request) + "\n").encode())
            proc.stdin.flush()
            pid = json.loads(self._line(proc, 60) or "{}")["pid"]
            said = self._line(proc, timeout)
            if said is None:
                os.kill(pid, signal.SIGKILL)
                self._line(proc, 60)
                raise subprocess.TimeoutExpired(["doctable", *argv], timeout)
            code = int(json.loads(said)["code"])
            return code, out.read_text(errors="replace"), err.read_text(errors="replace")
        finally:
            self.lock.release()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


ZYGOTE = Zygote()
