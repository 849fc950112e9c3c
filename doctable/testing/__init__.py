"""``doctable.testing``: a pytest plugin for a team's own integration tests on the embedded local AWS.

Opt in with ``pytest -p doctable.testing`` or ``pytest_plugins = ["doctable.testing"]`` in a conftest. Installed, it
is registered (entry point ``pytest11``) in every pytest run of the environment, where it only adds its options and
fixtures: nothing starts until a test asks for one, and importing it imports pytest and the standard library alone.

- ``doctable_local`` (session): the local AWS (a running ``doctable local up`` reused, else one of the session's
  own, stopped at its end), ``.environment(name)`` deploying an environment of the team's ``doctable.toml`` once
  per session, again only when what it is built from changed;
- ``doctable_env``: the environment ``@pytest.mark.doctable_env("name")`` names (default: the settings' default
  environment, as the ``doctable`` commands without ``--env``), deployed: its
  ``client`` (doctable.client.DocClient), ``nudge(operation, pk, sk, attributes, blobs)``, ``proof_lines``,
  ``log_lines``, ``failures`` (each with ``subscriber=``), ``blobs(pk, sk)`` and ``aws(service)``.

Options: ``--doctable-config PATH`` (default: DOCTABLE_CONFIG, else the rootdir's doctable.toml),
``--doctable-local reuse|private``, ``--doctable-nudge-timeout SECONDS``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from doctable.testing.environment import Environment
    from doctable.testing.session import LocalSession

__all__ = ["Environment", "LocalSession", "NudgeFailed", "NudgeTimeout", "Nudged"]

MARKER = "doctable_env"


def __getattr__(name: str) -> object:
    """The plugin's types, imported when first named (the plugin itself stays cheap to import)."""
    if name in ("Environment", "NudgeFailed", "NudgeTimeout", "Nudged", "Reader"):
        from doctable.testing import environment

        return getattr(environment, name)
    if name in ("LocalSession", "DeployFailed"):
        from doctable.testing import session

        return getattr(session, name)
    raise AttributeError(name)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("doctable", "doctable: a team's integration tests on the local AWS")
    group.addoption(
        "--doctable-config",
        default=None,
        metavar="PATH",
        help="the settings file to deploy from (default: DOCTABLE_CONFIG, else doctable.toml in the rootdir)",
    )
    group.addoption(
        "--doctable-local",
        choices=("reuse", "private"),
        default="reuse",
        help="reuse: reuse the running local AWS (doctable local up), else start one for the session; private: "
        "always one of the session's own",
    )
    group.addoption(
        "--doctable-nudge-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how long nudge waits for the stream's readers before it fails (default 60)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(name): the environment of doctable.toml the doctable_env fixture deploys"
    )


@pytest.fixture(scope="session")
def doctable_local(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalSession]:
    """The session's local AWS and the environments deployed on it (``.environment(name)``)."""
    from doctable.testing.session import LocalSession, settings_path

    settings = settings_path(request.config.getoption("doctable_config"), request.config.rootpath, os.environ)
    if not settings.is_file():
        pytest.fail(f"doctable.testing: no settings file at {settings}; allowed: --doctable-config PATH")
    session = LocalSession.open(
        settings,
        mode=request.config.getoption("doctable_local"),
        work=Path(tmp_path_factory.mktemp("doctable")),
        nudge_timeout=request.config.getoption("doctable_nudge_timeout"),
    )
    try:
        yield session
    finally:
        session.close()


@pytest.fixture
def doctable_env(request: pytest.FixtureRequest, doctable_local: LocalSession) -> Environment:
    """The environment the test's ``doctable_env`` marker names (default: the settings' default environment),
    deployed on the local AWS."""
    from doctable.testing.session import DeployFailed

    marker = request.node.get_closest_marker(MARKER)
    try:
        name = str(marker.args[0]) if marker and marker.args else doctable_local.default_env()
        return doctable_local.environment(name)
    except DeployFailed as exc:
        pytest.fail(str(exc), pytrace=False)
