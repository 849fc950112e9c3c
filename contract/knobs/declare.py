"""How a knob is declared: its ``Knob`` (default, parser, meaning, what a change does on a live stack), the field
of the config that carries it, the parsers that turn its text into the config's value, and ``ConfigError``.

Every area module of this package declares its knobs with these; contract/knobs/config.py makes each a field.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# The words several knobs share. Order is the order shown in error messages.
OFF, ON = "off", "on"
ONOFF = (OFF, ON)
NONE = "none"
AUTO = "auto"  # pitr, deletion_protection: the environment decides
IN_PLACE = "in place"

# A parser turns a knob's text (as `-c`, a DOCTABLE_ variable or the settings file give it) into the config's
# value, appending one line per problem; ``allowed`` is what errors and the generated docs say is allowed, and
# ``toml`` the TOML type the settings file writes it as.
STRING, INTEGER, INTEGER_OR_OFF = "string", "integer", "integer or off"
STRING_ARRAY = "array of strings"  # -c and DOCTABLE_ give it as comma-separated text
Problems = list[str]


class ConfigError(ValueError):
    """Every knob problem found at once, one line each, naming the knob, the value given and what is allowed."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("invalid doctable configuration:\n  - " + "\n  - ".join(problems))


def _enum(problems: list[str], name: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        problems.append(f"{name}={value!r} is not allowed; allowed values: {'|'.join(allowed)}")
    return value


def _int(problems: list[str], name: str, value: str, bounds: tuple[int, int], unit: str = "") -> int:
    lo, hi = bounds
    try:
        number = int(value)
    except ValueError:
        problems.append(f"{name}={value!r} is not an integer; allowed: an integer from {lo} to {hi}{unit}")
        return lo
    if not lo <= number <= hi:
        problems.append(f"{name}={value!r} is out of range; allowed: an integer from {lo} to {hi}{unit}")
    return number


def _optional_int(
    problems: list[str], name: str, value: str, bounds: tuple[int, int], unit: str = ""
) -> int | None:
    """``off`` (or empty) is None; else an integer within ``bounds``."""
    if value in ("", OFF):
        return None
    lo, hi = bounds
    try:
        number = int(value)
    except ValueError:
        problems.append(
            f"{name}={value!r} is not allowed; allowed: off or an integer from {lo} to {hi}{unit}"
        )
        return None
    if not lo <= number <= hi:
        problems.append(
            f"{name}={value!r} is out of range; allowed: off or an integer from {lo} to {hi}{unit}"
        )
    return number


@dataclass(frozen=True)
class Parser:
    allowed: str
    toml: str
    parse: Callable[[Problems, str, str], Any]


def enum(values: tuple[str, ...]) -> Parser:
    return Parser(
        "|".join(values), STRING, lambda problems, name, value: _enum(problems, name, value, values)
    )


def switch() -> Parser:
    """off|on, the config's value a bool."""
    return Parser("off|on", STRING, lambda problems, name, value: _enum(problems, name, value, ONOFF) == ON)


def integer(bounds: tuple[int, int], unit: str = "") -> Parser:
    return Parser(
        f"{bounds[0]}..{bounds[1]}{unit}",
        INTEGER,
        lambda problems, name, value: _int(problems, name, value, bounds, unit),
    )


def optional_integer(bounds: tuple[int, int], unit: str = "") -> Parser:
    return Parser(
        f"off|{bounds[0]}..{bounds[1]}{unit}",
        INTEGER_OR_OFF,
        lambda problems, name, value: _optional_int(problems, name, value, bounds, unit),
    )


def text(allowed: str, check: Callable[[Problems, str, str], Any] | None = None) -> Parser:
    """Free text checked by ``check`` (or taken as it is); cross-knob rules come after."""
    return Parser(allowed, STRING, check or (lambda problems, name, value: value))


def optional_match(valid: Callable[[str], bool], complaint: str) -> Callable[[Problems, str, str], str]:
    """A check of text that may be empty and is otherwise ``valid``; ``complaint`` follows ``name='value'``."""

    def check(problems: Problems, name: str, value: str) -> str:
        if value and not valid(value):
            problems.append(f"{name}={value!r} {complaint}")
        return value

    return check


@dataclass(frozen=True)
class Knob:
    """One knob: its default (as text), its parser, what it means, and what changing it does on a live stack."""

    default: str
    parser: Parser
    meaning: str
    live: str
    per_env: str = ""  # the rule by which ``auto`` depends on the environment, when it does
    # Chosen for each run, never written in the settings file: which environment, and where it is deployed.
    per_run: bool = False
    # Written in an environment's table of the settings file only: never [defaults], -c or DOCTABLE_ (the tier).
    file_only: bool = False


KNOB_METADATA = "doctable.knob"


def knob(declared: Knob) -> Any:
    """A DocTableConfig field declared as a knob: everything about the knob sits in its ``Knob``."""
    return field(metadata={KNOB_METADATA: declared})
