"""A long-lived synth worker: app.py's synth in a process that has the CDK loaded already.

Most of a synth's CPU is starting it: Python, the jsii kernel on Node.js, aws-cdk-lib's modules loaded on first
use (about 4 s of the 4.5 s of CPU a doctable shape costs on Node 24). A process that has done one synth does
the next in well under a second. With ``DOCTABLE_SYNTH_WORKER=<socket>`` set, app.py (still run by the CDK CLI
as cdk.json says) hands its synth to the worker listening there (``python app.py --serve <socket>``) and
prints what the worker's synth printed, with its exit code; the worker runs app.py's own ``synthesize`` with
the CLI's context and output directory, in the caller's environment and working directory. The cloud assembly
is the same either way (tests/infra/test_synth_worker.py compares them file by file).

The worker refuses, and the caller then synthesizes itself, when it serves another project or the app's
sources changed since it started (its modules would be stale); a worker that is gone or fails mid-request is
the same as none. One synth at a time: connections wait in the listen queue. The test harness starts one per
test worker (tests/support/localaws.py); nothing else does.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import socket
import sys
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from infra.synth.cache import CONTEXT_OVERFLOW_VARIABLE, PROJECT, digest_sources

WORKER_VARIABLE = "DOCTABLE_SYNTH_WORKER"
READY = "synth worker ready"
# What a synth reads, handed over with the request: context and output directory as the CLI set them.
CONTEXT_VARIABLE = "CDK_CONTEXT_JSON"
OUTDIR_VARIABLE = "CDK_OUTDIR"

Synthesize = Callable[[dict[str, Any] | None, str | None], None]


def cli_context(environ: Mapping[str, str]) -> dict[str, Any]:
    """The context the CLI passed: the overflow file's (when it did not fit the environment), then the JSON
    variable's, as aws-cdk-lib's App reads them."""
    context: dict[str, Any] = {}
    overflow = environ.get(CONTEXT_OVERFLOW_VARIABLE)
    if overflow:
        context.update(json.loads(Path(overflow).read_text()))
    context.update(json.loads(environ.get(CONTEXT_VARIABLE) or "{}"))
    return context


# ---------------------------------------------------------------------------------------------- the caller
def delegate(environ: Mapping[str, str] | None = None) -> int | None:
    """Hand this process's synth to the worker ``DOCTABLE_SYNTH_WORKER`` names: its exit code once it has
    printed the worker's output, or None when there is no worker to do it (then synthesize here)."""
    environ = os.environ if environ is None else environ
    path = environ.get(WORKER_VARIABLE)
    if not path:
        return None
    request = {"project": str(PROJECT), "cwd": os.getcwd(), "environ": dict(environ)}
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(path)
            conn.sendall(json.dumps(request).encode() + b"\n")
            conn.shutdown(socket.SHUT_WR)
            answer = json.loads(_read_all(conn) or b"{}")
    except (OSError, ValueError):
        return None  # no worker there, or it went away: the synth runs here
    if "exit" not in answer:
        return None  # refused (another project, changed sources)
    sys.stdout.write(answer.get("stdout", ""))
    sys.stderr.write(answer.get("stderr", ""))
    return int(answer["exit"])


def _read_all(conn: socket.socket) -> bytes:
    chunks = []
    while chunk := conn.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


# ---------------------------------------------------------------------------------------------- the worker
def serve(path: str, synthesize: Synthesize) -> None:
    """Answer synth requests on the Unix socket ``path`` until the process is stopped."""
    sources = digest_sources(PROJECT).hexdigest()
    # The jsii kernel is one Node.js process for the worker's life, and aws-cdk-lib's App reads the context and
    # the output directory from its environment before its props: it starts now, from an environment without
    # the CLI's variables, so each request's context and output directory are the ones it passes.
    for name in [n for n in os.environ if n.startswith("CDK_") or n == CONTEXT_OVERFLOW_VARIABLE]:
        del os.environ[name]
    importlib.import_module("aws_cdk")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(path)
        listener.listen(16)
        print(READY, flush=True)
        while True:
            conn, _ = listener.accept()
            with conn:
                try:
                    request = json.loads(_read_all(conn))
                    answer = _answer(request, sources, synthesize)
                    conn.sendall(json.dumps(answer).encode())
                except (OSError, ValueError):
                    continue  # the caller went away or sent nothing whole: it synthesizes itself


def _answer(request: dict[str, Any], sources: str, synthesize: Synthesize) -> dict[str, Any]:
    if request.get("project") != str(PROJECT):
        return {"refused": f"this worker serves {PROJECT}"}
    if digest_sources(PROJECT).hexdigest() != sources:
        return {"refused": "the app's sources changed since the worker started"}
    environ: dict[str, str] = request["environ"]
    saved_environ, saved_cwd = dict(os.environ), os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    code = 0
    try:
        os.environ.clear()
        os.environ.update(environ)
        os.chdir(request["cwd"])
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                synthesize(cli_context(environ), environ.get(OUTDIR_VARIABLE))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
                if exc.code is not None and not isinstance(exc.code, int):
                    print(exc.code, file=sys.stderr)
            except Exception:  # the synth's own failure, reported as a synth in its own process reports it
                traceback.print_exc()
                code = 1
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_environ)
    return {"exit": code, "stdout": out.getvalue(), "stderr": err.getvalue()}
