"""The operations' only door to the embedded local AWS (local/): its commands, its error, and what the demo uses."""

from __future__ import annotations

from local.api import (
    DEFAULT_PORT,
    LocalError,
    client_env,
    register,
    run_cdk,
    start,
    state_dir,
    stop,
)

__all__ = ["DEFAULT_PORT", "LocalError", "client_env", "register", "run_cdk", "start", "state_dir", "stop"]
