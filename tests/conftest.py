"""Shared test set-up: the project's pinned Node.js for the CLI and jsii, tiers marked by directory."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from tooling import (
    toolchain,  # Every CLI run and every in-process synth (the infra tier's) runs on the project's Node.js (tooling/toolchain.py):
)

# first on PATH and as jsii's, set before any test imports the CDK.
with contextlib.suppress(toolchain.ToolchainError):  # not installed: the tiers that need it say so
    os.environ.update(toolchain.find().environment())
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")

TIERS = {
    "unit": "unit",
    "infra": "infra",
    "integration": "integration",
    "conformance": "conformance",
    "live": "live",
}


# The order the tests run in. Under pytest-xdist (`make test`: --dist loadfile --no-loadscope-reorder) a module
# goes whole to one worker (its module-scoped deployments made once) in this order: the longest integration
# modules first (the slowest ten of `make test --durations`), then the rest of the integration tier, conformance and infra, and
# the many short unit modules last, filling the workers' tails.
TIER_ORDER = {"integration": 0, "conformance": 1, "infra": 1, "unit": 2}
# The listed modules lead whatever their tier (cfn-lint over every template is one minute of one worker: started
# last, it was the run's tail).
LONGEST_FIRST = (
    "test_day2_table",
    "test_global_conversion",
    "test_day2_mapping",
    "test_table_options",
    "test_global_tables",
    "test_global_subscribers",
    "test_lint_and_nag",
    "test_lock",
    "test_day2_consumer",
    "test_day2_index",
    "test_packaging",
    "test_indexes",
    "test_multi_attribute_index",
    "test_testing_plugin",
    "test_hostile_preview",
    "test_kinesis",
    "test_encryption_policy",
    "test_ops_commands",
)


def run_order(item: pytest.Item) -> tuple[int, int, int]:
    path = Path(str(item.fspath))
    if path.stem in LONGEST_FIRST:
        return 0, LONGEST_FIRST.index(path.stem), 0
    return 1, TIER_ORDER.get(path.parent.name, len(TIER_ORDER)), 0


# A per-test time limit (pytest-timeout) in every tier, for a test that sets none itself: a hung call fails its
# test instead of holding the run until CI's limit.
TIER_TIMEOUT = {"unit": 300, "infra": 600, "conformance": 600, "integration": 900, "live": 3600}
# The only markers whose tests may skip: the opt-in tiers. Any other skip fails the run (pytest_sessionfinish),
# so no proof passes by not running.
OPT_IN_MARKERS = frozenset({"live", "soak"})
UNEXPECTED_SKIPS: list[str] = []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test's tier is its directory; `-m unit` etc. then select tiers without per-test decoration."""
    items.sort(key=run_order)  # stable: a module's tests keep their order
    for item in items:
        tier = Path(str(item.fspath)).parent.name
        if tier in TIERS and not any(m.name in ("soak",) for m in item.iter_markers()):
            item.add_marker(getattr(pytest.mark, TIERS[tier]))
        if tier in TIER_TIMEOUT and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(TIER_TIMEOUT[tier]))


# Where a run's time goes, for the test budget (`make test` under 480 s): each module's setup, call and teardown
# summed, and each xdist worker's total (a module goes whole to one worker: the largest total is the run's tail).
MODULE_SECONDS: dict[str, float] = {}
WORKER_SECONDS: dict[str, float] = {}
SLOWEST_MODULES = 12


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    module = report.nodeid.split("::", 1)[0]
    MODULE_SECONDS[module] = MODULE_SECONDS.get(module, 0.0) + report.duration
    worker = str(getattr(getattr(getattr(report, "node", None), "gateway", None), "id", "main"))
    WORKER_SECONDS[worker] = WORKER_SECONDS.get(worker, 0.0) + report.duration
    if report.skipped and not OPT_IN_MARKERS & set(report.keywords):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        UNEXPECTED_SKIPS.append(f"{report.nodeid}: {reason}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A skip outside the opt-in tiers (live, soak) fails the run, naming each skipped test and why."""
    if UNEXPECTED_SKIPS and not hasattr(
        session.config, "workerinput"
    ):  # the controller, or a run without xdist
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        lines = ["skipped outside the opt-in tiers (live, soak), which fails the run:", *UNEXPECTED_SKIPS]
        if reporter is not None:
            reporter.write_line("\n".join(lines), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """The slowest modules and each worker's total (on the controller, or a run without xdist)."""
    if hasattr(config, "workerinput") or len(MODULE_SECONDS) < 2:
        return
    terminalreporter.write_sep("=", f"slowest {SLOWEST_MODULES} modules (setup, call and teardown summed)")
    for module, seconds in sorted(MODULE_SECONDS.items(), key=lambda kv: -kv[1])[:SLOWEST_MODULES]:
        terminalreporter.write_line(f"{seconds:8.2f}s {module}")
    workers = ", ".join(f"{w} {s:.0f} s" for w, s in sorted(WORKER_SECONDS.items()))
    terminalreporter.write_line(f"busy time per worker: {workers}")
