"""Where the local AWS keeps its pid, port, state and logs, and the environment a shell needs to reach it."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
# Not LocalStack's 4566 (nor its 4510-4559), moto server's 5000 or DynamoDB Local's 8000: both can run beside it.
DEFAULT_PORT = 4599
HEALTH_PATH = "/_doctable/health"
ACCOUNT_ID = "123456789012"
REGION = "us-east-1"
# The regions where the server publishes the stand-in Powertools layer and its SSM parameters at start (a stack
# resolving the layer in a region not listed finds no parameter): the default region and common replica regions.
SEEDED_REGIONS = (
    REGION,
    "us-east-2",
    "us-west-2",
    "eu-west-1",
    "eu-central-1",
    "ap-southeast-2",
    "ap-northeast-1",
)
# The attribute of moto's table model where the local AWS keeps the table's Kinesis streaming destinations
# (services/dynamodb/kinesis_destination.py writes them, auth/table_access.py reads them).
KINESIS_DESTINATIONS_ATTR = "doctable_kinesis"
# The admin deployer's key (an IAM user the server creates at start, with AdministratorAccess).
ACCESS_KEY_ID = "AKIALOCALDEPLOYER000"
SECRET_ACCESS_KEY = "doctable-local-deployer-secret-key-000000"  # noqa: S105 - a local-only, published key


# The control endpoints (the clock, the faults, moto's own /moto-api) answer only a request carrying the token the
# server writes beside its state at start, readable by its owner only (health answers anyone).
CONTROL_TOKEN_FILE = "control.token"
CONTROL_TOKEN_HEADER = "X-Doctable-Control-Token"
CONTROL_PREFIXES = ("/_doctable/", "/moto-api")


def write_control_token(directory: Path) -> str:
    """A new random token in ``directory``/control.token, mode 0600 (replacing the last server's)."""
    import secrets

    token = secrets.token_urlsafe(32)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / CONTROL_TOKEN_FILE
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(token)
    return token


def control_token(directory: Path | None = None) -> str | None:
    """The running server's control token (None when none was written or it is not readable here)."""
    try:
        return ((directory or state_dir()) / CONTROL_TOKEN_FILE).read_text().strip() or None
    except OSError:
        return None


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
    """The CA certificate a client of the server of ``directory`` trusts (local/server/tls.py writes it at start)."""
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


# What selects other credentials or another endpoint than the local AWS's: a command run against it
# (`doctable local run`) must not inherit them from the shell (a session token, a profile, a per-service URL).
_FOREIGN_PREFIXES = ("AWS_ENDPOINT_URL_", "AWS_CONTAINER_")
_FOREIGN_VARIABLES = frozenset(
    {
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
        "AWS_CREDENTIAL_EXPIRATION",
        "AWS_ROLE_ARN",
        "AWS_ROLE_SESSION_NAME",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_USE_FIPS_ENDPOINT",
        "AWS_USE_DUALSTACK_ENDPOINT",
        "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
    }
)


def run_env(port: int, base: Mapping[str, str], directory: Path | None = None) -> dict[str, str]:
    """``base`` (a shell's environment) with ``client_env``'s variables set and the variables that would pick
    other credentials or another endpoint removed: what ``doctable local run`` gives its command."""
    env = {
        key: value
        for key, value in base.items()
        if key not in _FOREIGN_VARIABLES and not key.startswith(_FOREIGN_PREFIXES)
    }
    env.update(client_env(port, directory))
    return env
