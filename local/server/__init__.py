"""The local AWS server process: moto's server app with local/'s adaptations, over HTTPS on localhost only.

Run by ``doctable local up`` as ``python -m local.server --port PORT --dir DIR`` in the background; it writes
``DIR/server.json`` (pid, port, url) once it answers, logs to ``DIR/server.log`` and stops on SIGTERM/SIGINT.
Also usable in process (tests): ``LocalAWS(port=0).start()`` ... ``.stop()``.

The endpoint speaks TLS with the state directory's certificate (local/server/tls.py). ``--http-port`` adds a plain-HTTP
listener serving the same app, so that a test can show what AWS does with a request that did not arrive over TLS
(``aws:SecureTransport`` is false there, and a TLS-only bucket policy refuses it).
"""

from __future__ import annotations

import argparse
import hmac
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from local import auth, compat, incidents, state
from local.auth import lambda_access, policy, principals, table_access
from local.auth.middleware import AuthMiddleware
from local.faults.middleware import FaultMiddleware
from local.patching import Target
from local.pollers import streams as esm
from local.runtime import runner
from local.server import encoding, listener, tls

if TYPE_CHECKING:
    from local.services.dynamodb import ttl

log = logging.getLogger("doctable.local.server")
MOTO_TARGETS = (
    Target("moto.moto_server.werkzeug_app", "DomainDispatcherApplication"),
    Target("moto.moto_server.werkzeug_app", "MotoRequestHandler"),
    Target("moto.moto_server.werkzeug_app", "create_backend_app"),
)


def declared() -> tuple[Target, ...]:
    """Every moto internal the local AWS relies on: the services', pollers' and runtime's, and the server's."""
    from local import services  # the registry, at the top of local/'s floors (local/services/__init__.py)

    return (
        *services.declared(),
        *MOTO_TARGETS,
        *lambda_access.MOTO_TARGETS,
        *listener.MOTO_TARGETS,
        *principals.MOTO_TARGETS,
        *table_access.MOTO_TARGETS,
    )


# Backends the CDK CLI and the stack touch: their Flask apps are built before the server reports ready.
WARM_SERVICES = (
    "cloudformation",
    "s3",
    "sts",
    "ssm",
    "iam",
    "dynamodb",
    "dynamodbstreams",
    "awslambda",
    "logs",
)


class _HealthMiddleware:
    """The health answer (to anyone), and the control endpoints' guard: a request to ``/_doctable/*`` or
    ``/moto-api`` without the server's control token is refused (403 ``control.token_required``)."""

    def __init__(self, app: Any, info: dict[str, Any], token: str | None = None):
        self.app = app
        self.info = info
        self.token = token

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "")
        if path == state.HEALTH_PATH:
            return _json(start_response, "200 OK", {**self.info, "incidents": incidents.summary()})
        if self.token is not None and path.startswith(state.CONTROL_PREFIXES):
            header = "HTTP_" + state.CONTROL_TOKEN_HEADER.upper().replace("-", "_")
            given = str(environ.get(header, ""))
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                problem = "missing" if not given else "wrong"
                return _json(start_response, "403 Forbidden", {
                    "code": "control.token_required",
                    "error": f"the control endpoint {path} needs the {state.CONTROL_TOKEN_HEADER} header ({problem}): "
                    f"its value is in {state.CONTROL_TOKEN_FILE} of the local AWS's state directory",
                })  # fmt: skip
        return self.app(environ, start_response)


def _json(start_response: Any, status: str, answer: dict[str, Any]) -> list[bytes]:
    body = json.dumps(answer).encode("utf-8")
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


def _loopback_addresses() -> list[tuple[int, str]]:
    """Every address "localhost" resolves to (127.0.0.1, and ::1 where it is listed): localhost only."""
    found: list[tuple[int, str]] = []
    try:
        for family, _, _, _, sockaddr in socket.getaddrinfo("localhost", None, proto=socket.IPPROTO_TCP):
            entry = (int(family), str(sockaddr[0]))
            if entry not in found and entry[1] in ("127.0.0.1", "::1"):
                found.append(entry)
    except OSError:
        pass
    return found or [(int(socket.AF_INET), "127.0.0.1")]


class LocalAWS:
    """moto's server app, adapted, listening on localhost over HTTPS (and plain HTTP on ``http_port``)."""

    def __init__(
        self, port: int = state.DEFAULT_PORT, directory: Path | None = None, http_port: int | None = None
    ):
        self.requested_port = port
        self.directory = (directory or state.state_dir()).resolve()
        self.port = port
        self.http_port = http_port
        self.servers: list[Any] = []
        self.threads: list[threading.Thread] = []
        self.runner: runner.LambdaRunner | None = None
        self.manager: esm.MappingManager | None = None
        self.sweeper: ttl.TtlSweeper | None = None

    @property
    def url(self) -> str:
        return state.endpoint_url(self.port)

    def start(self) -> LocalAWS:
        # The services (moto's adaptations) are loaded when the server starts: their registry stands at the top of
        # local/'s floors, above this module (local/services/__init__.py says why).
        from local import services
        from local.services.dynamodb import index_lifecycle

        compat.check(declared())
        started = time.monotonic()
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

        index_lifecycle.backfill_seconds()  # a bad setting stops the start, naming it
        services.replication.start_from_env()  # DOCTABLE_LOCAL_REPLICATION_DELAY_MS, read once
        services.apply()
        self.manager = esm.MappingManager()
        esm.install(self.manager)
        dispatcher = DomainDispatcherApplication(create_backend_app)
        enforced = auth.enforced()
        info: dict[str, Any] = {
            "status": "ready",
            "pid": os.getpid(),
            "moto": metadata.version("moto"),
            "iam": "enforced" if enforced else "off",
        }
        # Fault injection (/_doctable/faults, S3 DeleteObjects) is inert until a test posts rules; it acts as S3
        # does, after the request was authenticated (the signature is checked on the request as it was sent).
        faults = FaultMiddleware(dispatcher, progress=self.manager.progress)
        inner: Any = AuthMiddleware(faults) if enforced else faults
        self.directory.mkdir(parents=True, exist_ok=True)
        token = state.write_control_token(self.directory)
        app = _HealthMiddleware(encoding.CompressingMiddleware(inner), info, token)
        context = tls.ensure(self.directory).server_context()
        handler = listener.handler_class()
        self.port = self._listen(self.port, lambda a, p: listener.make(a, p, app, handler, context))
        info["port"] = self.port
        if self.http_port is not None:
            self.http_port = self._listen(
                self.http_port, lambda a, p: listener.make(a, p, app, handler, None)
            )
            info["http_port"] = self.http_port
        os.environ["MOTO_PORT"] = str(self.port)

        self.runner = runner.LambdaRunner(
            self.directory / "lambda", self.url, ca_bundle=str(state.ca_bundle(self.directory))
        )
        runner.install(self.runner)
        for region in state.SEEDED_REGIONS:
            self.runner.provided_layers.update(services.seed.seed(state.ACCOUNT_ID, region))
        principals.ensure_admin_deployer(services.iam.ensure_aws_managed_policy)
        _report_iam(enforced)
        for service in WARM_SERVICES:
            if service not in dispatcher.app_instances:
                dispatcher.app_instances[service] = create_backend_app(service)  # type: ignore[arg-type]

        self.sweeper = services.ttl.TtlSweeper()
        self.sweeper.start()
        for server in self.servers:
            name = "local-aws-https" if isinstance(server, listener.TlsServer) else "local-aws-http"
            thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)
            thread.start()
            self.threads.append(thread)
        log.info("local AWS ready on %s in %.2fs", self.url, time.monotonic() - started)
        return self

    def _listen(self, port: int, make: Any) -> int:
        """Servers made by ``make(address, port)`` on every loopback address; the port they share."""
        for index, (_family, address) in enumerate(_loopback_addresses()):
            try:
                server = make(address, port)
            except OSError:
                if index == 0:
                    raise
                continue  # ::1 unusable here: 127.0.0.1 is enough
            if index == 0:
                port = server.server_port
            self.servers.append(server)
        return port

    def stop(self) -> None:
        from local.services.dynamodb import replication

        for server in self.servers:
            server.shutdown()
            server.server_close()
        if self.sweeper is not None:
            self.sweeper.stop()
        replication.reset()
        if self.manager is not None:
            self.manager.shutdown()
        if self.runner is not None:
            self.runner.shutdown()


def _report_iam(enforced: bool) -> None:
    if not enforced:
        log.info("IAM is not enforced (%s=off): every signed request is allowed", auth.ENV)
        return
    log.info(
        "IAM enforced: identity policies of users and assumed-role sessions, S3 bucket policies, role trust "
        "policies; condition keys evaluated: %s; every other condition key is not evaluated (treated as "
        "absent from the request, so only its ...IfExists and negated operators hold), among them "
        "aws:SourceIp, aws:SourceVpce, aws:SourceArn, aws:SourceAccount, aws:ResourceTag/*, aws:RequestTag/*, "
        "aws:TagKeys, aws:PrincipalTag/*, aws:CurrentTime, aws:MultiFactorAuthPresent, sts:ExternalId; "
        "not enforced: SCPs, permission boundaries, session policies, signatures",
        ", ".join(policy.EVALUATED_KEYS),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m local.server")
    parser.add_argument("--port", type=int, default=state.DEFAULT_PORT)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument(
        "--http-port", type=int, default=None, help="also serve plain HTTP on this port (0: a free one)"
    )
    args = parser.parse_args(argv)
    directory = (args.dir or state.state_dir()).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(
        level=os.environ.get("DOCTABLE_LOCAL_LOG_LEVEL", "INFO"),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not os.environ.get("DOCTABLE_LOCAL_LOG_REQUESTS"):
        logging.getLogger("werkzeug").setLevel(logging.WARNING)

    stop = threading.Event()

    def _on_signal(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    try:
        server = LocalAWS(args.port, directory, http_port=args.http_port).start()
    except Exception as exc:
        print(f"local AWS failed to start: {exc}", file=sys.stderr)
        return 1
    state.ServerInfo(
        pid=os.getpid(),
        port=server.port,
        url=server.url,
        started_at=time.time(),
        moto_version=metadata.version("moto"),
    ).save(directory)
    try:
        while not stop.wait(3600):
            pass
    finally:
        server.stop()
        try:
            info = state.ServerInfo.load(directory)
            if info and info.pid == os.getpid():
                (directory / "server.json").unlink()
        except FileNotFoundError:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
