"""Review cdk.json's feature flags against the ones the pinned CDK CLI recommends for new apps.

    python -m tests.infra.feature_flags            # the report, as markdown, on stdout
    python -m tests.infra.feature_flags --json     # {"safe": [...], "changes": {flag: [what changed]}}

A recommended flag that cdk.json does not set (or sets to another value) is *safe* when setting it changes no
deployed byte: every template, asset manifest and stack tag of every shape of the infra tests' knob matrix
(tests/infra/synth_matrix.py) is the same with and without it. The flags are tried all together first, then the
groups that change something are split in halves until each changing flag stands alone; the safe ones are then
checked together once more. cdk.json sets the safe ones; docs/architecture.md names each other one with what it
changes (tests/infra/test_feature_flags.py keeps both true).
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aws_cdk as cdk

from contract.knobs import resolve_config
from infra.stack import create_stack
from tests.infra.synth_matrix import infra_shapes, scanned_shapes

ROOT = Path(__file__).resolve().parents[2]
RECOMMENDED_FILE = (
    ROOT / "node_modules" / "aws-cdk" / "lib" / "init-templates" / ".recommended-feature-flags.json"
)


def recommended() -> dict[str, Any]:
    return dict(json.loads(RECOMMENDED_FILE.read_text()))


# What the CLI adds to every app's context (version reporting puts the AWS::CDK::Metadata resource in the template).
CLI_CONTEXT = {
    "aws:cdk:enable-path-metadata": True,
    "aws:cdk:enable-asset-metadata": True,
    "aws:cdk:version-reporting": True,
    "aws:cdk:bundling-stacks": ["**"],
}


def project_context() -> dict[str, Any]:
    """The context a `cdk deploy` gives the app: cdk.json's, and the CLI's own."""
    return {**json.loads((ROOT / "cdk.json").read_text())["context"], **CLI_CONTEXT}


def unset_flags() -> dict[str, Any]:
    """The recommended flags cdk.json does not set to the recommended value."""
    context = project_context()
    return {flag: value for flag, value in recommended().items() if context.get(flag, object()) != value}


@dataclass(frozen=True)
class Shape:
    knobs: dict[str, str]
    region: str | None = None
    context: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return str(self.knobs) + (f" in {self.region}" if self.region else "")


def every_shape() -> list[Shape]:
    """The knob matrix's shapes, and the global table's (a home and replica stacks, in a region)."""
    from tests.infra.test_global_table import GLOBAL_SHAPES, HOME, KNOBS, STREAMS

    shapes = [Shape(knobs) for knobs in scanned_shapes(infra_shapes())]
    return shapes + [Shape({**KNOBS, **extra}, HOME, STREAMS) for extra in GLOBAL_SHAPES]


def deployed(shape: Shape, context: dict[str, Any]) -> dict[str, Any]:
    """What a deploy of this shape sends: each template, asset manifest and stack's tags (or the synth's error)."""
    config = resolve_config(context=shape.knobs, environ={})
    outdir = Path(tempfile.mkdtemp(prefix="doctable-flags-"))
    try:
        app = cdk.App(outdir=str(outdir), context={**context, **shape.context})
        create_stack(app, config, region=shape.region)
        app.synth()
    except Exception as exc:  # a flag that makes the synth fail changes what is deployed: nothing would be
        return {"synth error": str(exc).splitlines()[0][:200]}
    found: dict[str, Any] = {}
    for path in sorted(outdir.glob("*.json")):
        if path.name.endswith((".template.json", ".assets.json")):
            found[path.name] = json.loads(path.read_text())
    manifest = json.loads((outdir / "manifest.json").read_text())
    for name, artifact in manifest.get("artifacts", {}).items():
        found[f"{name} tags"] = artifact.get("properties", {}).get("tags")
    return found


def changes(flags: dict[str, Any], shapes: list[Shape], baseline: list[dict[str, Any]]) -> list[str]:
    """What setting ``flags`` changes in the shapes' deployment, one line per changed file (empty: nothing)."""
    context = {**project_context(), **flags}
    found = []
    for shape, before in zip(shapes, baseline, strict=True):
        after = deployed(shape, context)
        found += [
            f"{name} ({shape})"
            for name in sorted(set(before) | set(after))
            if before.get(name) != after.get(name)
        ]
    return found


def review() -> tuple[list[str], dict[str, list[str]]]:
    shapes = every_shape()
    baseline = [deployed(shape, project_context()) for shape in shapes]
    candidates = unset_flags()
    safe: list[str] = []
    changing: dict[str, list[str]] = {}
    groups = [sorted(candidates)]
    while groups:
        group = groups.pop()
        changed = changes({f: candidates[f] for f in group}, shapes, baseline)
        if not changed:
            safe += group
        elif len(group) == 1:
            changing[group[0]] = changed
        else:
            groups += [group[: len(group) // 2], group[len(group) // 2 :]]
    together = changes({f: candidates[f] for f in safe}, shapes, baseline)
    if together:
        raise SystemExit(f"the flags that change nothing alone change something together: {together[:5]}")
    return sorted(safe), dict(sorted(changing.items()))


def main(argv: list[str]) -> int:
    safe, changing = review()
    values = recommended()
    if argv == ["--json"]:
        print(json.dumps({"safe": {f: values[f] for f in safe}, "changes": changing}, indent=2))
        return 0
    print(f"{len(safe)} recommended flags change nothing deployed; {len(changing)} change something:")
    for flag, changed in changing.items():
        print(f"- `{flag}`: {'; '.join(changed[:3])}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
