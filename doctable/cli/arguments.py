"""What the console script's commands share: the common arguments every command takes (the settings, the
credentials, ``--json``, ``-q``), the :class:`~doctable.core.target.Target` they make, and how a command's parser
hands its work to doctable.api.

A command registers its parser with ``parser.set_defaults(call=..., render=...)``: ``call(args)`` turns the parsed
arguments into a :class:`Call` (the name of a function of doctable.api and its keyword arguments: typed values,
never the namespace), the console script calls that function with the target :func:`target_of` makes, and
``render(result, args)`` prints the typed result (text, or its ``to_json()`` with ``--json``) and returns the exit
code. The command modules below the console script never see argparse."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from doctable.core.target import Target, override_pair


@dataclass(frozen=True)
class Call:
    function: str  # a function of doctable.api
    kwargs: Mapping[str, Any] = field(default_factory=dict)


Caller = Callable[[argparse.Namespace], Call]
Renderer = Callable[[Any, argparse.Namespace], int]


def target_of(args: argparse.Namespace) -> Target:
    """The target the common arguments name (``--env``, ``--config``, ``-c``, ``--profile``, ``--region``,
    ``-q``); a ``-c`` that is not KNOB=VALUE is one line naming the form."""
    overrides: dict[str, str] = {}
    for pair in getattr(args, "context", None) or []:
        knob, value = override_pair(pair)
        overrides[knob] = value
    return Target(
        env=getattr(args, "env_name", None),
        config=getattr(args, "config", None),
        overrides=overrides,
        profile=getattr(args, "profile", None),
        region=getattr(args, "region", None),
        quiet=bool(getattr(args, "quiet", False)),
    )


def print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, default=str))
