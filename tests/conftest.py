"""Shared test set-up: jsii quiet on Node 20, tiers marked by directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# jsii warns loudly that Node 20 is past its end of life; the CLI pinned in package.json still supports it.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")

TIERS = {"unit": "unit", "infra": "infra", "integration": "integration", "live": "live"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test's tier is its directory; `-m unit` etc. then select tiers without per-test decoration."""
    for item in items:
        tier = Path(str(item.fspath)).parent.name
        if tier in TIERS and not any(m.name in ("soak",) for m in item.iter_markers()):
            item.add_marker(getattr(pytest.mark, TIERS[tier]))
