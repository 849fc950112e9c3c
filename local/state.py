"""Where the local AWS keeps its pid, port, state and logs, and the environment a shell needs to reach it."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PORT = 4566
HEALTH_PATH = "/_doctable/health"
ACCOUNT_ID = "123456789012"
REGION = "us-east-1"
# The admin deployer's key (an IAM user the server creates at start, with AdministratorAccess).
ACCESS_KEY_ID = "AKIALOCALDEPLOYER000"
SECRET_ACCESS_KEY = "doctable-local-deployer-secret-key-000000"  # noqa: S105 - a local-only, published key


def state_dir() -> Path:
    """``$DOCTABLE_LOCAL_DIR`` or ``<project>/.local``."""
    override = os.environ.get("DOCTABLE_LOCAL_DIR")
    return Path(override).resolve() if override else PROJECT_ROOT / ".local"


@dataclass(frozen=True)
class ServerInfo:
    pid: int
    port: int
    url: str
    started_at: float
    moto_version: str

    @classmethod
    def load(cls, directory: Path | None = None) -> ServerInfo | None:
        path = (directory or state_dir()) / "server.json"
        try:
            data = json.loads(path.read_text())
            return cls(**{k: data[k] for k in cls.__dataclass_fields__})
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            return None

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        tmp = directory / "server.json.tmp"
        tmp.write_text(json.dumps(self.__dict__, indent=2) + "\n")
        tmp.replace(directory / "server.json")


def endpoint_url(port: int, scheme: str = "https") -> str:
    # "localhost", never 127.0.0.1: moto path-parses a CloudFormation TemplateURL only for a localhost host.
    return f"{scheme}://localhost:{port}"


def ca_bundle(directory: Path | None = None) -> Path:
    """The CA certificate a client of the server of ``directory`` trusts (local/tls.py writes it at start)."""
    return (directory or state_dir()).resolve() / "tls" / "ca.pem"


def client_env(port: int, directory: Path | None = None) -> dict[str, str]:
    """What a shell, the CDK CLI or boto3 needs to talk to the local AWS of ``directory`` (default: the state
    directory) on ``port``; the order is the order printed."""
    return {
        "AWS_ENDPOINT_URL": endpoint_url(port),
        "AWS_CA_BUNDLE": str(ca_bundle(directory)),
        "AWS_ACCESS_KEY_ID": ACCESS_KEY_ID,
        "AWS_SECRET_ACCESS_KEY": SECRET_ACCESS_KEY,
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "CDK_DEFAULT_ACCOUNT": ACCOUNT_ID,
        "CDK_DEFAULT_REGION": REGION,
        "DOCTABLE_DEPLOY_TARGET": "local",  # the knob deploy_target, as the project reads it
    }
