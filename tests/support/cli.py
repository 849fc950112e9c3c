"""Run the console script as a user would (a process of its own) and keep what it said."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.zygote import ZYGOTE

ROOT = Path(__file__).resolve().parents[2]
# `doctable` as installed runs doctable.cli:main; this is the same without depending on the script being on PATH.
ENTRY = "import sys; from doctable.cli import main; sys.exit(main(sys.argv[1:]))"


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def context_args(knobs: Mapping[str, str]) -> list[str]:
    """Knobs as ``cdk deploy`` and the commands take them: ``-c key=value`` each."""
    return [arg for key, value in knobs.items() for arg in ("-c", f"{key}={value}")]


def run_doctable(
    args: Sequence[str], *, env: Mapping[str, str], timeout: float, module: bool = False
) -> Result:
    """``doctable ARGS`` in a process of its own (stdin closed: no terminal to confirm on), forked from the
    worker's CLI zygote (tests/support/zygote.py: the same ``main``, without importing it again), or a plain
    subprocess when the zygote is busy; ``module`` runs it in a subprocess of its own.
    Whatever goes wrong, the user must never see a traceback."""
    forked = None
    if not module:
        with tempfile.TemporaryDirectory(prefix="doctable-run-") as files:
            forked = ZYGOTE.run(args, env=env, cwd=ROOT, timeout=timeout, files=Path(files))
    if forked is not None:
        code, out, err = forked
    else:
        command = [sys.executable, "-c", ENTRY]  # a process of its own: the console script's main, imported
        proc = subprocess.run(
            [*command, *args],
            cwd=ROOT, env=dict(env), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
        code, out, err = proc.returncode, proc.stdout, proc.stderr
    assert "Traceback" not in err, err
    return Result(code, out, err)


def settings_runner(
    aws_env: Mapping[str, str], settings: Path, state: Path, *, timeout: float = 900
) -> Callable[..., Result]:
    """``run(*args)``: the console script on the local AWS (``aws_env``) with this settings file and its own
    verify state and ledger under ``state``."""
    base = {
        **aws_env,
        "DOCTABLE_CONFIG": str(settings),
        "DOCTABLE_STATE_DIR": str(state / "state"),
        "DOCTABLE_LEDGER_DIR": str(state / "ledger"),
    }

    def run(*args: str) -> Result:
        return run_doctable(list(args), env=base, timeout=timeout)

    return run
