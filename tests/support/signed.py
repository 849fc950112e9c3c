"""A botocore-signed request as a WSGI server receives it: the environ the local AWS's middleware reads (its raw
path and query as sent, its headers), for tests and the bench that drive the middleware without a socket."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote, urlsplit

from botocore.awsrequest import AWSRequest


def environ(request: AWSRequest) -> dict[str, Any]:
    """The WSGI environ a server gives for ``request`` as it goes on the wire (a fresh body stream each call)."""
    body = request.body if isinstance(request.body, bytes) else (request.body or "").encode()
    return wsgi_environ(request.method, request.url, dict(request.headers.items()), body)


def wsgi_environ(method: str, url: str, headers: dict[str, str], body: bytes = b"") -> dict[str, Any]:
    """The WSGI environ a server builds from a request to ``url`` with ``headers`` and ``body``."""
    parts = urlsplit(url)
    env: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "PATH_INFO": unquote(parts.path) or "/",
        "QUERY_STRING": parts.query,
        "RAW_URI": parts.path + (f"?{parts.query}" if parts.query else ""),
        "wsgi.input": io.BytesIO(body),
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.url_scheme": parts.scheme,
        "HTTP_HOST": parts.netloc,
    }
    for name, value in headers.items():
        key = name.upper().replace("-", "_")
        env[key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}"] = value
    return env


def through(middleware: Callable[[Any], Any], env: dict[str, Any]) -> tuple[str, bytes, bool]:
    """``env`` sent through ``middleware(service)`` in front of a stub service: (the status answered, the body,
    whether the request reached the service)."""
    reached: list[bool] = []

    def service(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        reached.append(True)
        start_response("200 OK", [])
        return [b"{}"]

    answer: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]]) -> None:
        answer["status"] = status

    body = b"".join(middleware(service)(env, start_response))
    return answer["status"], body, bool(reached)
