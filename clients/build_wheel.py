"""Builds doctable-client, the distribution applications install: a wheel holding only doctable/__init__.py and
doctable/client/ (the `doctable` import namespace alone) and requiring boto3 alone. Its version, Python floor and
boto3 bound are the main project's (pyproject.toml). The standard library writes it (a wheel is a zip with
METADATA, WHEEL and RECORD): no build backend, no network, the same bytes from the same sources.

    python clients/build_wheel.py [OUT_DIR]    # OUT_DIR defaults to dist/; prints the wheel's path

tests/unit/test_client_wheel.py checks what it holds and installs it.
"""

from __future__ import annotations

import base64
import hashlib
import re
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NAME = "doctable-client"
SUMMARY = "The doctable application client (doctable.client): documents and their blobs, with boto3 alone"
DEPENDENCY = "boto3"  # the only one: doctable.client imports the standard library, boto3 and botocore only
TIMESTAMP = (1980, 1, 1, 0, 0, 0)  # the earliest a zip holds: the wheel's bytes depend on its sources alone


def sources() -> list[str]:
    """The wheel's modules, relative to the repository root: doctable/__init__.py and doctable/client/**.py."""
    client = sorted(p for p in (ROOT / "doctable" / "client").rglob("*.py") if "__pycache__" not in p.parts)
    return [p.relative_to(ROOT).as_posix() for p in [ROOT / "doctable" / "__init__.py", *client]]


def metadata(project: dict[str, Any]) -> str:
    """METADATA: the name, the main project's version and Python floor, and its boto3 requirement."""
    requirement = [
        d
        for d in project.get("dependencies", [])
        if re.split(r"[\s;<>=!~\[(]", d, maxsplit=1)[0] == DEPENDENCY
    ]
    if len(requirement) != 1:
        raise SystemExit(f"pyproject.toml: [project] dependencies must name {DEPENDENCY} once")
    return (
        f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {project['version']}\nSummary: {SUMMARY}\n"
        f"Requires-Python: {project['requires-python']}\nRequires-Dist: {requirement[0]}\n"
    )


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build(out_dir: Path) -> Path:
    """Writes doctable_client-<version>-py3-none-any.whl into out_dir (replacing one of that name) and returns its path."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    version = str(project["version"])
    if not re.fullmatch(r"[0-9][0-9A-Za-z.+!]*", version):
        raise SystemExit(f"pyproject.toml: version {version!r} is not a normalized version")
    stem = f"{NAME.replace('-', '_')}-{version}"
    dist_info = f"{stem}.dist-info"
    files = {path: (ROOT / path).read_bytes() for path in sources()}
    files[f"{dist_info}/METADATA"] = metadata(project).encode()
    files[f"{dist_info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: clients/build_wheel.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    files[f"{dist_info}/top_level.txt"] = b"doctable\n"
    record = "".join(f"{path},sha256={_digest(data)},{len(data)}\n" for path, data in files.items())
    files[f"{dist_info}/RECORD"] = f"{record}{dist_info}/RECORD,,\n".encode()

    out_dir.mkdir(parents=True, exist_ok=True)
    wheel = out_dir / f"{stem}-py3-none-any.whl"
    partial = out_dir / f".{wheel.name}.partial"
    with zipfile.ZipFile(partial, "w") as archive:
        for path, data in files.items():
            info = zipfile.ZipInfo(path, TIMESTAMP)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    partial.replace(wheel)
    return wheel


if __name__ == "__main__":
    if len(sys.argv) > 2:
        raise SystemExit(f"usage: {sys.argv[0]} [OUT_DIR]")
    print(build(Path(sys.argv[1]) if len(sys.argv) == 2 else ROOT / "dist"))
