"""The two servers the conformance tier compares: the local AWS (moto with local/'s behaviours, IAM enforced,
over TLS) and plain moto (``python -m moto.server`` of the same pinned moto, in a process without local/).

Both are driven through boto3 clients whose every answer is recorded (``Recorder``): the operation, the raw
body, botocore's parsed answer and its model, so the tier can hold each answer against botocore's service model
as well as against the other server's answer.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore import UNSIGNED
from botocore.config import Config

from local import api
from tests.support import signed

REGION = api.REGION
READY_DEADLINE = 60.0  # seconds a busy machine may take to start either server


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Answer:
    """One API call's answer as the wire carried it and as botocore read it."""

    service: str
    operation: str
    status: int
    body: bytes
    parsed: dict[str, Any]
    model: Any  # botocore.model.OperationModel

    @property
    def error_code(self) -> str | None:
        error = self.parsed.get("Error") or {}
        return str(error["Code"]) if self.status >= 300 and error.get("Code") else None


@dataclass(frozen=True)
class Sent:
    """One request as it left the client: what the local AWS's IAM check reads (local/auth/requests.py)."""

    method: str
    url: str
    headers: dict[str, str]
    body: bytes

    def environ(self) -> dict[str, Any]:
        """The WSGI environ a server builds from this request."""
        return signed.wsgi_environ(self.method, self.url, self.headers, self.body)


@dataclass
class Recorder:
    answers: list[Answer] = field(default_factory=list)
    sent: list[Sent] = field(default_factory=list)

    def attach(self, client: Any) -> Any:
        service = client.meta.service_model.service_name

        def before_send(request: Any, **_: Any) -> None:
            body = request.body or b""
            body = body.encode() if isinstance(body, str) else body if isinstance(body, bytes) else b""
            headers = {k: v.decode() if isinstance(v, bytes) else str(v) for k, v in request.headers.items()}
            self.sent.append(Sent(request.method, request.url, headers, body))

        client.meta.events.register(f"before-send.{client.meta.service_model.endpoint_prefix}", before_send)

        def record(http_response: Any, parsed: dict[str, Any], model: Any, **_: Any) -> None:
            if http_response is None:
                return
            # A streaming body (S3's GetObject) is left for the caller to read: reading it here would consume it.
            body = b"" if model.has_streaming_output else http_response.content
            self.answers.append(
                Answer(service, model.name, int(http_response.status_code), body, parsed, model)
            )

        client.meta.events.register(f"after-call.{client.meta.service_model.endpoint_prefix}", record)
        return client


ONE_TRY = Config(retries={"total_max_attempts": 1}, s3={"addressing_style": "path"})


@dataclass
class Server:
    name: str  # "local" or "moto"
    url: str
    verify: str | bool
    port: int
    recorder: Recorder = field(default_factory=Recorder)

    def client(self, service: str, *, signed: bool = True, secret: str = api.SECRET_ACCESS_KEY) -> Any:
        """A client of ``service`` as the deployer; ``signed`` False: one that signs nothing (an anonymous caller);
        ``secret``: the deployer's key signed with that secret (another than its own: a forged request)."""
        config = ONE_TRY if signed else ONE_TRY.merge(Config(signature_version=UNSIGNED))
        return self.recorder.attach(
            boto3.client(
                service,
                endpoint_url=self.url,
                region_name=REGION,
                verify=self.verify,
                config=config,
                aws_access_key_id=api.ACCESS_KEY_ID,
                aws_secret_access_key=secret,
            )
        )


@contextmanager
def local_aws(directory: Path) -> Iterator[Server]:
    """The local AWS as users run it (IAM enforced, HTTPS), its state in ``directory``."""
    info = api.start(free_port(), directory, iam=True)
    try:
        yield Server("local", info.url, str(api.ca_bundle(directory)), info.port)
    finally:
        api.stop(directory)


@contextmanager
def plain_moto(directory: Path) -> Iterator[Server]:
    """moto's own server, in a process that never imports local/ (its state in memory)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "DOCTABLE_", "MOTO_"))}
    with open(directory / "moto.log", "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            cwd=directory,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_DEADLINE
        while True:
            try:
                with urllib.request.urlopen(f"{url}/moto-api/", timeout=2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    tail = (directory / "moto.log").read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"plain moto did not start on port {port}:\n{tail}") from None
                time.sleep(0.1)
        yield Server("moto", url, False, port)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
