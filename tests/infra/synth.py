"""Synthesize the real app for a knob set, in-process and offline; cached per knob set."""

from __future__ import annotations

import atexit
import functools
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import aws_cdk as cdk

from contract.knobs import DocTableConfig, resolve_config
from infra.stack import create_stack

# Every cloud assembly of this process goes under one directory, removed when the process ends.
_ROOT = tempfile.mkdtemp(prefix="doctable-synth-")
atexit.register(shutil.rmtree, _ROOT, ignore_errors=True)


@functools.cache
def _synth(
    knobs: tuple[tuple[str, str], ...], indexes: str = "{}", region: str | None = None, context: str = "{}"
) -> tuple[dict[str, Any], str]:
    config = resolve_config(context=dict(knobs), environ={}, indexes=json.loads(indexes))
    outdir = tempfile.mkdtemp(dir=_ROOT)
    app = cdk.App(outdir=outdir, context=json.loads(context))
    create_stack(app, config, region=region)
    app.synth()  # raises on any unacknowledged cdk-nag finding
    return stack_template(Path(outdir), config.stack_name), outdir


def synth(
    indexes: dict[str, Any] | None = None,
    *,
    region: str | None = None,
    context: dict[str, Any] | None = None,
    **knobs: str,
) -> tuple[DocTableConfig, dict[str, Any], Path]:
    """(config, template, cloud-assembly dir) for these knobs and index declarations (as the settings file
    writes them); knobs not given take their defaults. ``region``: the environment's region binding;
    ``context``: CDK context that is not a knob (``replica_streams``)."""
    key = tuple(sorted((k, str(v)) for k, v in knobs.items()))
    declared = json.dumps(indexes or {}, sort_keys=True)
    template, outdir = _synth(key, declared, region, json.dumps(context or {}, sort_keys=True))
    return resolve_config(context=dict(key), environ={}, indexes=indexes), template, Path(outdir)


def stack_template(outdir: Path, stack_name: str) -> dict[str, Any]:
    """The template of ``stack_name`` in a cloud assembly (the home stack's, or a replica region's)."""
    template: dict[str, Any] = json.loads((outdir / f"{stack_name}.template.json").read_text())
    return template


def resources(template: dict[str, Any], type_name: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == type_name}


def only(template: dict[str, Any], type_name: str) -> dict[str, Any]:
    found = resources(template, type_name)
    assert len(found) == 1, f"expected one {type_name}, found {sorted(found)}"
    return next(iter(found.values()))


def tag_map(tags: list[dict[str, str]] | dict[str, str] | None) -> dict[str, str]:
    if tags is None:
        return {}
    if isinstance(tags, dict):
        return dict(tags)
    return {t["Key"]: t["Value"] for t in tags}


def cfn_lint(folder: Path) -> subprocess.CompletedProcess[str]:
    """cfn-lint, with the project's configuration, over every template written in ``folder`` (one process)."""
    root = Path(__file__).resolve().parents[2]
    return subprocess.run(
        [
            str(Path(sys.executable).parent / "cfn-lint"),
            "--config-file",
            str(root / ".cfnlintrc.yaml"),
            "--",
            *sorted(str(p) for p in folder.glob("*.json")),
        ],
        capture_output=True,
        text=True,
        cwd=folder,
    )
