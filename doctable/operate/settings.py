"""``doctable settings --env ENV``: each knob's value for one run and where it came from (the file's environment
table, its [defaults], the built-in default, or an override), without calling AWS."""

from __future__ import annotations

import argparse
from typing import Any

from contract.shape import table_shape
from doctable.capabilities.indexes import index_text
from doctable.core.command import add_command, print_json
from doctable.core.context import resolve_run
from doctable.core.render import text_table


def cmd_settings(args: argparse.Namespace) -> int:
    resolved = resolve_run(args)
    if args.json:
        print_json({"kind": "doctable-settings", **resolved.as_dict()})
        return 0
    config = resolved.config
    where = f"{resolved.path}" if resolved.path else "no settings file (built-in defaults)"
    bound = ", ".join(
        f"{k} {v}" for k, v in (("account", resolved.account), ("region", resolved.region)) if v
    )
    print(
        f"env {config.env} (stack {config.stack_name}) from {where}"
        + (f"; bound to {bound}" if bound else "")
    )
    print(
        text_table(
            ["knob", "value", "source"], [[r["knob"], r["value"], r["source"]] for r in resolved.rows()]
        )
    )
    shape = table_shape(config)
    if shape.indexes:
        print(f"indexes (from {resolved.index_source}; gsi={config.gsi}):")
        print(
            text_table(
                ["index", "kind", "keys and projection"],
                [[i.name, i.kind, index_text(i)] for i in shape.indexes],
            )
        )
    for override in resolved.overrides:
        print(
            f"override: {override.knob}={override.value} from {override.source} (the file says {override.file_value})"
        )
    return 0


def register(sub: Any) -> None:
    add_command(
        sub,
        "settings",
        cmd_settings,
        help="show each knob's value for an environment and its source (file, default, override); no AWS call",
        description="Resolve an environment's settings exactly as the CDK app does (doctable.toml, then "
        "DOCTABLE_<KNOB> and -c overrides) and show each knob's value and where it came from. No AWS call.",
        json_help="print the settings as JSON on stdout",
    )
