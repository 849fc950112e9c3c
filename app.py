#!/usr/bin/env python3
"""Resolve the environment's settings (doctable.toml, then -c and DOCTABLE_ overrides), then instantiate its one
stack (and, for a global table, the consumer stack of each replica region ``replica_streams`` names). Never
calls AWS. With DOCTABLE_SYNTH_CACHE set, an assembly synthesized before from the same inputs is
copied out instead (infra/synth/cache.py); with DOCTABLE_SYNTH_WORKER set, a worker that has the CDK loaded
already synthesizes it (infra/synth/worker.py; ``app.py --serve SOCKET`` is that worker). jsii runs on the
project's pinned Node.js (tooling/toolchain.py) unless JSII_NODE names another."""

from __future__ import annotations

import contextlib
import os
import sys

from infra.synth import cache as synth_cache
from infra.synth import worker as synth_worker
from tooling import toolchain


def synthesize(context: dict[str, object] | None = None, outdir: str | None = None) -> None:
    """Synthesize into ``outdir`` with ``context`` (default: what the CLI passed in the environment)."""
    # The CDK and the constructs are imported here, after the cache was looked up: importing them is most of a
    # cache hit's cost otherwise.
    import aws_cdk as cdk

    from contract.knobs import INDEX_STEP_CONTEXT, PROJECT_ROOT, ConfigError, user_context, with_index_step
    from contract.settings.resolve import cdk_json_knobs, resolve_settings
    from infra.stack import bootstrap_of, create_stack

    # A fresh asset cache: a worker's earlier synth must not lend this one a fingerprint of changed files.
    cdk.AssetStaging.clear_asset_hash_cache()
    app = cdk.App(context=context, outdir=outdir)
    try:
        # A knob in cdk.json would reach the app as CDK context but never the CLI: refused, so both agree.
        misplaced = cdk_json_knobs(PROJECT_ROOT / "cdk.json")
        if misplaced:
            raise ConfigError(misplaced)
        resolved = resolve_settings(context=user_context(app.node.get_all_context()), environ=os.environ)
        config = resolved.config
        step = app.node.try_get_context(INDEX_STEP_CONTEXT)
        if step is not None:
            # One of `doctable deploy`'s successive index updates: the declared stack with this index set.
            config = with_index_step(config, step)
        # A global table's stack needs a region, and the replica stacks their streams (replica_streams): both
        # are checked before any construct exists.
        create_stack(
            app, config, account=resolved.account, region=resolved.region, bootstrap=bootstrap_of(resolved)
        )
    except ConfigError as exc:
        # One message listing every problem, and a non-zero exit.
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
    app.synth()


def main() -> None:
    # jsii's kernel runs on the project's Node.js, as the CLI does, whoever started this app.
    with contextlib.suppress(toolchain.ToolchainError):
        os.environ.setdefault("JSII_NODE", str(toolchain.find().node))
    if sys.argv[1:2] == ["--serve"] and len(sys.argv) == 3:
        synth_worker.serve(sys.argv[2], synthesize)
        return
    cache = synth_cache.from_environ()
    if cache is not None and cache.restore():
        return
    code = synth_worker.delegate()
    if code is None:
        synthesize()
    elif code != 0:
        sys.exit(code)
    if cache is not None:
        cache.store()


if __name__ == "__main__":
    main()
