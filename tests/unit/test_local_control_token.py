"""The local AWS's control endpoints (the clock, the faults, moto's /moto-api) answer only a request carrying the
token the server wrote beside its state (mode 0600); health answers anyone (local/server, local/state.py)."""

from __future__ import annotations

import io
import json
import stat
from pathlib import Path
from typing import Any

import pytest

from local import state
from local.server import _HealthMiddleware
from tests.support import signed

pytestmark = pytest.mark.unit


def call(app: Any, path: str, token: str | None = None) -> tuple[str, dict[str, Any], bool]:
    environ: dict[str, Any] = {"PATH_INFO": path, "REQUEST_METHOD": "POST", "wsgi.input": io.BytesIO(b"{}")}
    if token is not None:
        environ["HTTP_X_DOCTABLE_CONTROL_TOKEN"] = token
    status, body, reached = signed.through(app, environ)
    return status, json.loads(body or b"{}"), reached


def test_the_control_endpoints_need_the_servers_token(tmp_path: Path) -> None:
    # GIVEN a server's token, written beside its state
    token = state.write_control_token(tmp_path)
    assert state.control_token(tmp_path) == token
    assert stat.S_IMODE((tmp_path / state.CONTROL_TOKEN_FILE).stat().st_mode) == 0o600

    def app(inner: Any) -> Any:
        return _HealthMiddleware(inner, {"status": "ready"}, token)

    # WHEN the clock, the faults and moto's reset are asked without it, with a wrong one, and with it
    for path in ("/_doctable/clock", "/_doctable/faults", "/moto-api/reset"):
        for given in (None, "guess"):
            status, body, reached = call(app, path, given)
            # THEN only the right token reaches them
            assert (status, body["code"], reached) == ("403 Forbidden", "control.token_required", False)
        assert call(app, path, token)[2] is True
    # AND health answers anyone, and an API path is not the guard's business
    assert call(app, state.HEALTH_PATH)[1]["status"] == "ready"
    assert call(app, "/")[2] is True


def test_a_new_server_replaces_the_token(tmp_path: Path) -> None:
    first = state.write_control_token(tmp_path)
    second = state.write_control_token(tmp_path)
    assert first != second and state.control_token(tmp_path) == second
