"""``python -m bench.report [results.json]``: the figures of a bench run as the Markdown table bench/README.md
shows, so that the table there is the run's, copied, never retyped."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench.common import BENCH_DIR
from bench.table import cell


def _value(figure: dict[str, Any], who: str) -> str:
    return "" if figure.get(who) is None else cell(figure, who)


def markdown(results: dict[str, Any]) -> str:
    """One row per figure: its id, what it is, the project's value, the baseline's, the ratio, goal and verdict."""
    machine = results.get("machine", {})
    lines = [
        f"Run of {str(results.get('timestamp', '?'))[:16].replace('T', ' ')} UTC, "
        f"{results.get('duration_seconds', 0):.0f} s, sections {', '.join(results['config']['sections'])}; "
        f"{machine.get('cpu_count')} cores, load {machine.get('load_avg_at_start')} at start, "
        f"Python {results.get('python')}.",
        "",
        "| id | figure | project | baseline | floor | project/baseline | target | met |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for figure in results["figures"]:
        if figure["project"] is None:
            cells = [figure["note"], "", "", "", "", ""]
        else:
            ratio = "" if figure["ratio"] is None else f"{figure['ratio']:.3g}x"
            met = {True: "yes", False: "**NO**", None: ""}[figure["met"]]
            cells = [
                _value(figure, "project"),
                _value(figure, "baseline"),
                _value(figure, "floor"),
                ratio,
                figure["target"],
                met,
            ]
        row = [f"`{figure['id']}`", figure["label"], *cells]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else BENCH_DIR / "results.json"
    print(markdown(json.loads(path.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
