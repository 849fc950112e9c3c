"""A botocore-signed request as a WSGI server receives it: the environ the local AWS's middleware reads (its raw
path and query as sent, its headers), for tests and the bench that drive the middleware without a socket."""

from __future__ import annotations

import io
from typing import Any
from urllib.parse import unquote, urlsplit

from botocore.awsrequest import AWSRequest


def environ(request: AWSRequest) -> dict[str, Any]:
    """The WSGI environ a server gives for ``request`` as it goes on the wire (a fresh body stream each call)."""
    url = urlsplit(request.url)
    body = request.body if isinstance(request.body, bytes) else (request.body or "").encode()
    env: dict[str, Any] = {
        "REQUEST_METHOD": request.method,
        "PATH_INFO": unquote(url.path),
        "QUERY_STRING": url.query,
        "RAW_URI": url.path + (f"?{url.query}" if url.query else ""),
        "wsgi.input": io.BytesIO(body),
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.url_scheme": url.scheme,
        "HTTP_HOST": url.netloc,
    }
    for name, value in request.headers.items():
        key = name.upper().replace("-", "_")
        env[key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}"] = value
    return env
