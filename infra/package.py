"""The built-in consumer's code, staged for its asset: the package's sources and, when the interpreter running
synth is the Lambda runtime's Python, their bytecode.

Lambda's ``/var/task`` is read-only, so a package without ``__pycache__`` is compiled again at every cold start
(about 20 ms of an INSERT's). The bytecode is unchecked-hash ``.pyc`` (valid whatever the files' timestamps in
the zip) with the paths Lambda runs them from, so it is byte-for-byte the same on every synth and the asset's
hash changes only with the sources. Under another Python the sources alone are staged: the runtime would ignore
bytecode of another version. Standard library only: the bench stages its cold-start task roots with it too.
"""

from __future__ import annotations

import compileall
import hashlib
import py_compile
import shutil
import sys
import tempfile
from pathlib import Path

from contract import names

TASK_ROOT = "/var/task"  # where Lambda unpacks a function's code
SKIPPED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.md", ".mypy_cache")


def runtime_version() -> tuple[int, int]:
    """(3, 13) for names.LAMBDA_RUNTIME = "python3.13"."""
    major, minor = names.LAMBDA_RUNTIME.removeprefix("python").split(".")
    return int(major), int(minor)


def compiles_bytecode() -> bool:
    return sys.version_info[:2] == runtime_version()


def compile_tree(root: Path, ddir: str = TASK_ROOT) -> None:
    """Unchecked-hash bytecode beside every source under ``root``, recorded as run from ``ddir``."""
    ok = compileall.compile_dir(
        str(root),
        ddir=ddir,
        quiet=1,
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
    if not ok:
        raise RuntimeError(f"compiling the consumer's sources under {root} failed")


def stage_package(package: Path, build: Path) -> Path:
    """A directory holding ``package`` (and its bytecode, under the runtime's Python): the asset's root.

    Staged once per content under ``build`` (the sources' and the interpreter's digest in the name), moved into
    place whole, so concurrent synths never see a half-written stage."""
    digest = hashlib.sha256(f"{sys.version_info[:2]}|{compiles_bytecode()}".encode())
    for path in sorted(p for p in package.rglob("*") if p.is_file() and not SKIPPED(str(p.parent), [p.name])):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    stage = build / f"consumer-{digest.hexdigest()[:16]}"
    if stage.is_dir():
        return stage
    build.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".consumer-", dir=build))
    shutil.copytree(package, scratch / package.name, ignore=SKIPPED)
    if compiles_bytecode():
        compile_tree(scratch)
    try:
        scratch.rename(stage)
    except OSError:  # another synth staged the same content first
        shutil.rmtree(scratch, ignore_errors=True)
    return stage
