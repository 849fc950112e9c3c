"""Artifact sizes. The function zip is the asset ``tooling.asset`` stages (the sources and, under the runtime's
Python, their bytecode), zipped as CDK does; the Powertools layer as a zip of the installed package."""

from __future__ import annotations

import fnmatch
import io
import zipfile
from pathlib import Path
from typing import Any

from bench.common import BENCH_DIR, FUNCTIONS_DIR, PROJECT_ROOT
from tooling.asset import stage_package

# What the baseline's zip and the layer leave out (the project's asset is staged by tooling.asset).
EXCLUDES = ["**/__pycache__", "**/*.pyc", "**/*.md", "**/.mypy_cache"]


def _excluded(relative: str, patterns: list[str]) -> bool:
    parts = relative.split("/")
    for pattern in patterns:
        bare = pattern[3:] if pattern.startswith("**/") else pattern
        # a pattern excludes a file when it matches the path, or any of its directories (and all below)
        for depth in range(1, len(parts) + 1):
            if fnmatch.fnmatch(parts[depth - 1], bare) or fnmatch.fnmatch("/".join(parts[:depth]), pattern):
                return True
    return False


def zip_dir(root: Path, patterns: list[str], prefix: str = "") -> dict[str, Any]:
    """Deflate-zip every file under ``root`` (sorted, fixed timestamps: reproducible); bytes and file count."""
    buffer = io.BytesIO()
    files = 0
    raw = 0
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            relative = path.relative_to(root).as_posix()
            if _excluded(relative, patterns):
                continue
            info = zipfile.ZipInfo(prefix + relative, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            data = path.read_bytes()
            archive.writestr(info, data, compresslevel=9)
            files += 1
            raw += len(data)
    return {"zip_bytes": len(buffer.getvalue()), "files": files, "uncompressed_bytes": raw}


def run() -> dict[str, Any]:
    import aws_lambda_powertools

    powertools_dir = Path(aws_lambda_powertools.__file__).parent
    stage = stage_package(FUNCTIONS_DIR / "stream_consumer", PROJECT_ROOT / "build")
    return {
        "asset_excludes": ["**/*.md"],
        "project_function_zip": zip_dir(stage, ["**/*.md"]),
        "baseline_function_zip": zip_dir(
            BENCH_DIR / "baseline_consumer", EXCLUDES, prefix="baseline_consumer/"
        ),
        "powertools_layer_zip": zip_dir(
            powertools_dir, ["**/__pycache__", "**/*.pyc"], prefix="python/aws_lambda_powertools/"
        ),
    }
