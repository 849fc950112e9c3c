"""Shared test set-up: the project's pinned Node.js for the CLI and jsii, tiers marked by directory."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from contract import toolchain

# Every CLI run and every in-process synth (the infra tier's) runs on the project's Node.js (contract/toolchain.py):
# first on PATH and as jsii's, set before any test imports the CDK.
with contextlib.suppress(toolchain.ToolchainError):  # not installed: the tiers that need it say so
    os.environ.update(toolchain.find().environment())
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")

TIERS = {"unit": "unit", "infra": "infra", "integration": "integration", "live": "live"}


# The order the tests run in. Under pytest-xdist (`make test`: --dist loadfile --no-loadscope-reorder) a module
# goes whole to one worker (its module-scoped deployments made once) in this order: the longest integration
# modules first (the slowest ten of `make test --durations`), then the rest of the integration tier, infra, and
# the many short unit modules last, filling the workers' tails.
TIER_ORDER = {"integration": 0, "infra": 1, "unit": 2}
LONGEST_FIRST = (
    "test_day2_table",
    "test_day2_mapping",
    "test_table_options",
    "test_global_tables",
    "test_global_conversion",
    "test_packaging",
    "test_indexes",
    "test_kinesis",
    "test_encryption_policy",
    "test_ops_commands",
)


def run_order(item: pytest.Item) -> tuple[int, int]:
    path = Path(str(item.fspath))
    first = LONGEST_FIRST.index(path.stem) if path.stem in LONGEST_FIRST else len(LONGEST_FIRST)
    return TIER_ORDER.get(path.parent.name, len(TIER_ORDER)), first


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test's tier is its directory; `-m unit` etc. then select tiers without per-test decoration."""
    items.sort(key=run_order)  # stable: a module's tests keep their order
    for item in items:
        tier = Path(str(item.fspath)).parent.name
        if tier in TIERS and not any(m.name in ("soak",) for m in item.iter_markers()):
            item.add_marker(getattr(pytest.mark, TIERS[tier]))
