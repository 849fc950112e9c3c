"""Run the console script as a user would (a subprocess) and keep what it said."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    """``doctable ARGS`` in a subprocess (stdin closed: no terminal to confirm on); ``module`` runs it as
    ``python -m doctable.cli`` instead. Whatever goes wrong, the user must never see a traceback."""
    command = [sys.executable, "-m", "doctable.cli"] if module else [sys.executable, "-c", ENTRY]
    proc = subprocess.run(
        [*command, *args],
        cwd=ROOT, env=dict(env), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr
    return Result(proc.returncode, proc.stdout, proc.stderr)


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
