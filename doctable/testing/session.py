"""The plugin's session: the local AWS started (or a running one reused), bootstrapped once, and each environment a
test asks for deployed once from the team's doctable.toml, again only when what it is built from changed."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from contract.knobs import ConfigError
from contract.settings.resolve import resolve_settings
from doctable import local_adapter as local
from doctable.testing.environment import Environment

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # where app.py and the CDK CLI are
# What a stack is built from besides the settings file and the files it names (infra/synth/cache.py keys a synth
# on the same trees; that module is the constructs' side, out of the operations' reach).
SOURCE_TREES = ("contract", "infra", "functions")
SOURCE_FILES = ("app.py", "cdk.json", "package-lock.json")
# infra/synth/cache.py: a shape synthesized before from the same inputs is not synthesized again.
SYNTH_CACHE_VARIABLE = "DOCTABLE_SYNTH_CACHE"
CDK_OUTPUT_VARIABLE = "DOCTABLE_CDK_OUTPUT"  # doctable/lifecycle/deploy.py: where the deploy's assembly goes
# Variables that name where things are kept, not what is deployed: left out of the digest.
UNREAD = frozenset({"DOCTABLE_LOCAL_DIR", "DOCTABLE_CONFIG", SYNTH_CACHE_VARIABLE, CDK_OUTPUT_VARIABLE})
RECORD_DIR = "doctable-testing"  # beside the local AWS's state: each stack's digest as deployed there
DEPLOY_TIMEOUT = 900.0
COMPLETE = ("CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE", "IMPORT_COMPLETE")
BOOTSTRAP_STACK = "CDKToolkit"


class DeployFailed(AssertionError):
    """The environment could not be deployed on the local AWS; the message ends with the deploy's last lines."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LocalSession:
    """The local AWS of one pytest session and the environments deployed on it (``environment(name)``)."""

    settings: Path
    directory: Path
    port: int
    owned: bool  # started by this session (stopped at its end), else a running one reused
    work: Path
    nudge_timeout: float = 60.0
    _environments: dict[str, Environment] = field(default_factory=dict)
    _failed: dict[str, str] = field(default_factory=dict)
    _clients: dict[str, Any] = field(default_factory=dict)
    _bootstrapped: bool = False

    @classmethod
    def open(cls, settings: Path, *, mode: str, work: Path, nudge_timeout: float = 60.0) -> LocalSession:
        """``mode`` reuse: the running local AWS of the state directory (``doctable local up``), else a private one;
        private: always one of this session's own, on a free port, its state under ``work``."""
        if mode == "reuse":
            running = local.running(local.state_dir())
            if running is not None:
                return cls(settings, local.state_dir(), running.port, False, work, nudge_timeout)
        directory = work / "local-aws"
        info = local.start(_free_port(), directory)
        return cls(settings, directory, info.port, True, work, nudge_timeout)

    def close(self) -> None:
        if self.owned:
            local.stop(self.directory)

    @property
    def env(self) -> dict[str, str]:
        """What a process (boto3, the CDK CLI, ``doctable``) needs to reach this local AWS."""
        return local.cdk_env(self.port, directory=self.directory)

    def connection(self) -> dict[str, Any]:
        """A boto3 session of the admin deployer and where to reach this local AWS: DocClient's arguments."""
        import boto3

        session = boto3.session.Session(
            aws_access_key_id=local.ACCESS_KEY_ID,
            aws_secret_access_key=local.SECRET_ACCESS_KEY,
            region_name=local.REGION,
        )
        return {
            "session": session,
            "endpoint_url": local.endpoint_url(self.port),
            "region_name": local.REGION,
            "verify": str(local.ca_bundle(self.directory)),
        }

    def client(self, service: str) -> Any:
        """A boto3 client of the local AWS, as its admin deployer (one per service: a client costs ~0.1 s)."""
        if service not in self._clients:
            connection = self.connection()
            self._clients[service] = connection.pop("session").client(service, **connection)
        return self._clients[service]

    @cached_property
    def faults(self) -> Any:
        """The local AWS's control endpoint: each stream mapping's checkpoint."""
        return local.FaultClient(
            local.endpoint_url(self.port),
            ca_bundle=local.ca_bundle(self.directory),
            token=local.control_token(self.directory),
        )

    def default_env(self) -> str:
        """The environment the settings resolve to without one named (what ``doctable`` commands use)."""
        try:
            return resolve_settings({}, os.environ, config_path=self.settings).config.env
        except ConfigError as exc:
            raise DeployFailed(str(exc)) from None

    def environment(self, name: str) -> Environment:
        """The environment ``name`` of the settings file, deployed (once per session; again only when its digest
        differs from the one this local AWS last deployed)."""
        if name in self._failed:
            raise DeployFailed(self._failed[name])
        if name not in self._environments:
            try:
                self._environments[name] = self._deployed(name)
            except (DeployFailed, ConfigError) as exc:  # one attempt a session: the next tests fail at once
                self._failed[name] = str(exc)
                raise DeployFailed(str(exc)) from None
        return self._environments[name]

    # ---- deploying ----
    def _deployed(self, name: str) -> Environment:
        config = resolve_settings({"env": name}, os.environ, config_path=self.settings).config
        digest = self.digest(name)
        record = self.directory / RECORD_DIR / f"{config.stack_name}.json"
        if not (self._recorded(record) == digest and self._stack_complete(config.stack_name)):
            self._bootstrap()
            self._deploy(name, config.stack_name)
            record.parent.mkdir(parents=True, exist_ok=True)
            record.write_text(json.dumps({"digest": digest, "server": self._server_identity()}))
        return Environment.of(self, config)

    def digest(self, name: str) -> str:
        """What the environment's stack is built from: the settings file and the files its knobs name, doctable's
        app, constructs and functions, and the DOCTABLE_ overrides of this process."""
        config = resolve_settings({"env": name}, os.environ, config_path=self.settings).config
        digest = hashlib.sha256(f"{name}\0".encode())
        named = [str(self.settings), config.resource_policy_path or ""]
        for spec in config.subscribers:
            named += [spec.path, spec.requirements_path]
        for named_file in filter(None, named):
            digest.update(named_file.encode() + b"\0" + _read(Path(named_file)) + b"\0")
        for tree in SOURCE_TREES:
            for path in sorted((PROJECT_ROOT / tree).rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts:
                    digest.update(str(path.relative_to(PROJECT_ROOT)).encode() + b"\0" + path.read_bytes())
        for file in SOURCE_FILES:
            digest.update(file.encode() + b"\0" + _read(PROJECT_ROOT / file))
        for key, value in sorted(os.environ.items()):
            if key.startswith("DOCTABLE_") and key not in UNREAD:
                digest.update(f"{key}={value}\0".encode())
        return digest.hexdigest()

    def _server_identity(self) -> str:
        info = local.running(self.directory)
        return f"{info.pid}:{info.started_at}" if info else ""

    def _recorded(self, record: Path) -> str | None:
        """The digest this very server (its pid and start: a restarted one forgot its stacks) last deployed."""
        try:
            data = json.loads(record.read_text())
        except (OSError, ValueError):
            return None
        return str(data["digest"]) if data.get("server") == self._server_identity() else None

    def _stack_complete(self, stack: str) -> bool:
        cloudformation = self.client("cloudformation")
        try:
            stacks = cloudformation.describe_stacks(StackName=stack)["Stacks"]
        except cloudformation.exceptions.ClientError:
            return False
        return bool(stacks) and stacks[0]["StackStatus"] in COMPLETE

    def _bootstrap(self) -> None:
        if self._bootstrapped or self._stack_complete(BOOTSTRAP_STACK):
            self._bootstrapped = True
            return
        out = Path(tempfile.mkdtemp(prefix="bootstrap-", dir=self.work))
        try:
            local.run_cdk(
                [
                    "bootstrap",
                    f"aws://{local.ACCOUNT_ID}/{local.REGION}",
                    "--no-notices",
                    "--ci",
                    "--output",
                    str(out),
                ],
                project_dir=PROJECT_ROOT,
                port=self.port,
                log=out / "cdk.log",
                env=self._deploy_env(out),
                directory=self.directory,
            )
        except local.LocalError as exc:
            raise DeployFailed(f"cdk bootstrap of the local AWS failed: {exc}") from None
        self._bootstrapped = True

    def _deploy_env(self, out: Path) -> dict[str, str]:
        env = self.env
        env["DOCTABLE_CONFIG"] = str(self.settings)
        env[CDK_OUTPUT_VARIABLE] = str(out / "cdk.out")
        env.setdefault(SYNTH_CACHE_VARIABLE, str(PROJECT_ROOT / "build" / "synth-cache"))
        return env

    def _deploy(self, name: str, stack: str) -> None:
        """``doctable deploy`` of the environment as the team's pipeline would run it (preflight, index steps,
        replicas), without its verify: the tests are the check. Destructive changes are allowed: a test stack."""
        out = Path(tempfile.mkdtemp(prefix=f"deploy-{name}-", dir=self.work))
        command = [
            sys.executable,
            "-c",
            "import sys; from doctable.cli import main; sys.exit(main())",
            "deploy",
            "--env",
            name,
            "--config",
            str(self.settings),
        ]
        command += ["--allow-destructive", "--no-verify", "--quiet"]  # fmt: skip
        log = out / "deploy.log"
        with open(log, "wb") as written:
            try:
                result = subprocess.run(
                    command,
                    cwd=self.settings.parent,
                    env=self._deploy_env(out),
                    stdin=subprocess.DEVNULL,
                    stdout=written,
                    stderr=subprocess.STDOUT,
                    timeout=DEPLOY_TIMEOUT,
                )
                failure = f"exit {result.returncode}" if result.returncode else None
            except subprocess.TimeoutExpired:
                failure = f"no answer within {DEPLOY_TIMEOUT:.0f} s"
        if failure:
            tail = "\n".join(log.read_text(errors="replace").strip().splitlines()[-30:])
            raise DeployFailed(f"doctable deploy --env {name} ({stack}) failed ({failure}); {log}:\n{tail}")


def _read(path: Path) -> bytes:
    return path.read_bytes() if path.is_file() else b"(absent)"


def settings_path(explicit: str | None, rootdir: Path, environ: Mapping[str, str]) -> Path:
    """The team's settings file: the option's path (relative to the working directory, as the CLI's --config),
    else DOCTABLE_CONFIG, else doctable.toml in the rootdir."""
    chosen = explicit or environ.get("DOCTABLE_CONFIG")
    return Path(chosen).resolve() if chosen else (rootdir / "doctable.toml").resolve()
