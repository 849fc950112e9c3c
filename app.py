#!/usr/bin/env python3
"""Resolve the knobs, then instantiate the one stack of the chosen environment. Never calls AWS."""

from __future__ import annotations

import os
import sys

import aws_cdk as cdk

from contract.knobs import ConfigError, resolve_config, user_context
from infra.stack import create_stack


def main() -> None:
    app = cdk.App()
    try:
        config = resolve_config(context=user_context(app.node.get_all_context()), environ=os.environ)
    except ConfigError as exc:
        # Before any construct exists: one message listing every problem, and a non-zero exit.
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
    create_stack(app, config)
    app.synth()


if __name__ == "__main__":
    main()
