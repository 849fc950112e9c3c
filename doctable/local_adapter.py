"""The operations' only door to the embedded local AWS (local/): its commands, its error, what the demo uses, and
what the pytest plugin (doctable/testing/) needs to start it, reach it and read its mappings' progress."""

from __future__ import annotations

from local.api import (
    ACCESS_KEY_ID,
    ACCOUNT_ID,
    DEFAULT_PORT,
    REGION,
    SECRET_ACCESS_KEY,
    FaultClient,
    LocalError,
    ca_bundle,
    cdk_env,
    client_env,
    control_token,
    endpoint_url,
    register,
    run_cdk,
    running,
    start,
    state_dir,
    stop,
)

__all__ = [
    "ACCESS_KEY_ID",
    "ACCOUNT_ID",
    "DEFAULT_PORT",
    "REGION",
    "SECRET_ACCESS_KEY",
    "FaultClient",
    "LocalError",
    "ca_bundle",
    "cdk_env",
    "client_env",
    "control_token",
    "endpoint_url",
    "register",
    "run_cdk",
    "running",
    "start",
    "state_dir",
    "stop",
]
