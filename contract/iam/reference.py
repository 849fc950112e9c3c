"""The knob reference (docs/knobs.md) and the settings file's comments, generated from the knob declarations.

``python -m contract.iam.reference --write`` rewrites both (doctable.toml keeps its values); a unit test fails when
either is stale.
"""

from __future__ import annotations

import argparse
import sys

from contract import indexes as index_specs
from contract.knobs import KNOB_DEFAULTS, KNOBS, knob_variable
from contract.settings.render import render_settings
from contract.settings.resolve import FILE_NAME, NOT_IN_FILE, PROJECT_ROOT, parse_settings

REFERENCE = PROJECT_ROOT / "docs" / "knobs.md"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def render_reference() -> str:
    """docs/knobs.md: one row per knob, in declaration order."""
    lines = [
        "# Knobs",
        "",
        "Generated from the knob declarations (`contract/knobs/__init__.py`) by `make docs`; a test fails when it is stale.",
        "",
        f"Each environment's knobs live in `{FILE_NAME}` (`[environments.<env>]` over `[defaults]` over the "
        "built-in default below). For one run, `-c knob=value` (the CLI and `cdk deploy`) or `DOCTABLE_<KNOB>` "
        "overrides a knob; `doctable settings --env ENV` shows each value and where it came from. "
        f"{', '.join(f'`{n}`' for n in NOT_IN_FILE)} are chosen per run and never written in the file.",
        "",
        "| knob | allowed | default | what it does | a change on a live stack | override |",
        "|---|---|---|---|---|---|",
    ]
    for name, declared in KNOBS.items():
        allowed = declared.parser.allowed + (f"; {declared.per_env}" if declared.per_env else "")
        default = f"`{KNOB_DEFAULTS[name]}`" if KNOB_DEFAULTS[name] else "empty"
        lines.append(
            f"| `{name}` | {_cell(allowed)} | {default} | {_cell(declared.meaning)} | {_cell(declared.live)} "
            f"| `{knob_variable(name)}` |"
        )
    lines += [
        "",
        "## Indexes",
        "",
        "An environment's own secondary indexes, `[environments.<env>.indexes.<name>]` (or `[defaults.indexes.<name>]`; "
        "an environment that declares `indexes` declares its whole set), generated from `contract/indexes.py` "
        "([indexes.md](indexes.md)). Adding a GSI is an online backfill; changing its keys (any attribute, their order "
        "or types) or projection replaces it (`index.replaced`, through the gate); an LSI change replaces the table.",
        "",
        "| field | allowed | default | what it does |",
        "|---|---|---|---|",
        *(f"| `{f}` | {_cell(a)} | {_cell(d)} | {_cell(m)} |" for f, a, d, m in index_specs.REFERENCE),
        "",
        f"Rules: {index_specs.RULES}.",
    ]
    return "\n".join(lines) + "\n"


def stale() -> list[str]:
    """The generated files whose text differs from what the declarations give."""
    found = []
    if not REFERENCE.is_file() or REFERENCE.read_text() != render_reference():
        found.append(str(REFERENCE.relative_to(PROJECT_ROOT)))
    settings_path = PROJECT_ROOT / FILE_NAME
    text = settings_path.read_text()
    if render_settings(parse_settings(text, settings_path)) != text:
        found.append(FILE_NAME)
    return found


def write() -> None:
    REFERENCE.write_text(render_reference())
    settings_path = PROJECT_ROOT / FILE_NAME
    settings_path.write_text(render_settings(parse_settings(settings_path.read_text(), settings_path)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--write", action="store_true", help="rewrite docs/knobs.md and doctable.toml's comments"
    )
    args = parser.parse_args(argv)
    if args.write:
        write()
        return 0
    found = stale()
    for path in found:
        print(f"{path} is stale: run `make docs`", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
