"""The README stays true and short: every `doctable` command and `make` target it names exists, every file it
links to exists, and it reads in one sitting (at most 250 lines)."""

from __future__ import annotations

import re
from pathlib import Path

from doctable.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAX_LINES = 250


def _subcommands() -> dict[str, set[str]]:
    """Each top-level command -> its sub-actions (empty when it has none)."""
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices  # type: ignore[attr-defined]
    found: dict[str, set[str]] = {}
    for name, sub in commands.items():
        nested = [a for a in sub._actions if getattr(a, "choices", None) and isinstance(a.choices, dict)]
        found[name] = set(nested[0].choices) if nested else set()
    return found


def test_the_readme_is_at_most_250_lines() -> None:
    assert len(README.read_text().splitlines()) <= MAX_LINES


def test_every_doctable_command_the_readme_names_exists() -> None:
    text = README.read_text()
    commands = _subcommands()
    named = re.findall(r"doctable ([a-z][a-z-]+)(?: ([a-z][a-z-]+))?", text)
    assert named, "the README names no doctable command"
    for command, action in named:
        assert command in commands, f"doctable {command} is not a command"
        if commands[command] and action:  # a command with actions (`doctable local up`): one of them
            assert action in commands[command], f"doctable {command} {action} is not a command"


def test_every_make_target_the_readme_names_exists() -> None:
    targets = set(re.findall(r"^([a-z][a-z-]+):", (ROOT / "Makefile").read_text(), re.MULTILINE))
    named = set(re.findall(r"`make ([a-z][a-z-]+)", README.read_text()))
    assert named and named <= targets, named - targets


def test_every_file_the_readme_links_exists() -> None:
    links = re.findall(r"\]\(([^)#]+)\)", README.read_text())
    missing = [link for link in links if not link.startswith("http") and not (ROOT / link).exists()]
    assert links and missing == []
