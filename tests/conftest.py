"""Shared test set-up: jsii quiet on Node 20, tiers marked by directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# jsii warns loudly that Node 20 is past its end of life; the CLI pinned in package.json still supports it.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")

TIERS = {"unit": "unit", "infra": "infra", "integration": "integration", "live": "live"}


# The order the tiers run in, and how pytest-xdist (`make test`, --dist loadgroup) shares them out. xdist sends
# the groups with the most tests first and the rest in collection order, so: an integration or infra module is one
# group (one worker, its module-scoped deployments made once), the integration tier is collected first, and the
# many short unit tests go one by one at the end, filling the workers' tails.
TIER_ORDER = {"integration": 0, "infra": 1, "unit": 2}
GROUPED_TIERS = ("integration", "infra")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test's tier is its directory; `-m unit` etc. then select tiers without per-test decoration."""
    items.sort(key=lambda item: TIER_ORDER.get(Path(str(item.fspath)).parent.name, len(TIER_ORDER)))
    for item in items:
        path = Path(str(item.fspath))
        tier = path.parent.name
        if tier in TIERS and not any(m.name in ("soak",) for m in item.iter_markers()):
            item.add_marker(getattr(pytest.mark, TIERS[tier]))
        if tier in GROUPED_TIERS:
            item.add_marker(pytest.mark.xdist_group(path.stem))
