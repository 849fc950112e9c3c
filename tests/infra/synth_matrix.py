"""Write the synthesized template of each shape of the knob matrix into a directory, for checkov (`make lint`).

    python -m tests.infra.synth_matrix OUTDIR

The shapes are every ``MATRIX`` and ``VARIANTS`` list and ``ALL_OPTIONS`` knob set of the infra tests
(tests/infra/test_*.py), so a shape added there is scanned too, reduced to the ones checkov can tell apart: ``gsi`` and ``ttl`` change only the
table's index and TTL specification, which no checkov check reads, so shapes differing only in them are
synthesized once. A global table's shapes (tests/infra/test_global_table.py's GLOBAL_SHAPES) add the home and a replica
region's templates. Synth raises on an unacknowledged cdk-nag finding, as in the infra tests.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

from tests.infra.synth import synth

HERE = Path(__file__).resolve().parent
MATRIX_NAMES = ("MATRIX", "VARIANTS", "ALL_OPTIONS")  # lists of knob sets, or one knob set
# Knobs that shape nothing checkov checks (the table's GlobalSecondaryIndexes and TimeToLiveSpecification).
UNSCANNED_KNOBS = ("gsi", "ttl")


def infra_shapes() -> list[dict[str, str]]:
    """Every knob set the infra tests' matrices name, in order, without repeats."""
    shapes: list[dict[str, str]] = []
    for path in sorted(HERE.glob("test_*.py")):
        module = importlib.import_module(f"tests.infra.{path.stem}")
        for name in MATRIX_NAMES:
            found = getattr(module, name, None) or []
            for knobs in [found] if isinstance(found, dict) else found:
                if isinstance(knobs, dict) and knobs not in shapes:
                    shapes.append({k: str(v) for k, v in knobs.items()})
    return shapes


def scanned_shapes(shapes: list[dict[str, str]]) -> list[dict[str, str]]:
    """One shape per set of knobs checkov can tell apart (the first one met)."""
    seen: set[tuple[tuple[str, str], ...]] = set()
    kept = []
    for knobs in shapes:
        key = tuple(sorted((k, v) for k, v in knobs.items() if k not in UNSCANNED_KNOBS))
        if key not in seen:
            seen.add(key)
            kept.append(knobs)
    return kept


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.infra.synth_matrix OUTDIR", file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    shapes = scanned_shapes(infra_shapes())
    for i, knobs in enumerate(shapes):
        _, template, _ = synth(**knobs)
        (out / f"shape{i:03d}.template.json").write_text(json.dumps(template))
        (out / f"shape{i:03d}.knobs").write_text(json.dumps(knobs) + "\n")
    # A global table's shapes: the home stack's and a replica region's templates (they need a region).
    from tests.infra.test_global_table import GLOBAL_SHAPES, global_templates

    for i, extra in enumerate(GLOBAL_SHAPES):
        for which, template in zip(("home", "replica"), global_templates(extra), strict=True):
            (out / f"global{i:03d}-{which}.template.json").write_text(json.dumps(template))
    print(f"{len(shapes)} shapes and {len(GLOBAL_SHAPES)} global ones synthesized into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
