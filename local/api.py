"""The public interface of the local AWS; the product reaches it only through doctable/local_adapter.py.

- the server: ``start`` (background process, waits until ready; idempotent), ``stop``, ``running``, ``health``;
- pointing a client at it: ``client_env`` (what ``doctable local env`` exports), ``env_lines``, ``ACCOUNT_ID``,
  ``REGION``, the admin deployer's key, ``ca_bundle`` (the CA its HTTPS certificate is signed by),
  ``control_token`` (what its control endpoints require, in the ``X-Doctable-Control-Token`` header);
- ``run_cdk``: the CDK CLI against it; ``FaultClient``: fault injection and each stream mapping's progress;
- ``register``: the ``doctable local up|down|env|status|run`` commands; ``LocalError``: what they raise.
"""

from __future__ import annotations

from local.cdk import CdkRun, cdk_env, run_cdk
from local.cli import register
from local.control import env_lines, health, running, start, stop, wait_healthy
from local.errors import LocalError
from local.faults.client import FaultClient
from local.faults.spec import FaultSpecError
from local.state import (
    ACCESS_KEY_ID,
    ACCOUNT_ID,
    DEFAULT_PORT,
    REGION,
    SECRET_ACCESS_KEY,
    ServerInfo,
    ca_bundle,
    client_env,
    control_token,
    endpoint_url,
    state_dir,
)

__all__ = [
    "ACCESS_KEY_ID",
    "ACCOUNT_ID",
    "DEFAULT_PORT",
    "REGION",
    "SECRET_ACCESS_KEY",
    "CdkRun",
    "FaultClient",
    "FaultSpecError",
    "LocalError",
    "ServerInfo",
    "ca_bundle",
    "cdk_env",
    "client_env",
    "control_token",
    "endpoint_url",
    "env_lines",
    "health",
    "wait_healthy",
    "register",
    "run_cdk",
    "running",
    "start",
    "state_dir",
    "stop",
]
