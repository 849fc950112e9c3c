"""The local AWS's listeners: werkzeug's threaded WSGI server, over TLS or plain HTTP, with kept-alive connections.

werkzeug's development server closes every connection after one response (it cannot tell the rest of an unread
body from the next request) and shakes TLS hands in its accept loop, one client at a time. Here each connection's
thread shakes hands, and a connection stays open for the next request when the request's body has a known length:
whatever the app left unread of it is read off before the next request line, and a response whose body is not
exactly its Content-Length (a HEAD, a streamed answer) still ends its connection.
"""

from __future__ import annotations

import logging
import ssl
from typing import Any

from werkzeug.serving import ThreadedWSGIServer

from local import clock
from local.patching import Target
from local.server import encoding

log = logging.getLogger("doctable.local.server")
MOTO_TARGETS = (Target("moto.moto_server.werkzeug_app", "MotoRequestHandler"),)
HANDSHAKE_SECONDS = 10.0
# A kept-alive connection idle this long is closed (clients reconnect, as they do when AWS closes one).
IDLE_SECONDS = 60.0


class _Body:
    """A request's body as the app reads it: at most its Content-Length bytes of the connection."""

    def __init__(self, stream: Any, length: int) -> None:
        self.stream = stream
        self.remaining = length

    def read(self, size: int | None = -1) -> bytes:
        size = self.remaining if size is None or size < 0 else min(size, self.remaining)
        data = self.stream.read(size) if size > 0 else b""
        self.remaining -= len(data)
        return bytes(data)

    def readline(self, size: int | None = -1) -> bytes:
        size = self.remaining if size is None or size < 0 else min(size, self.remaining)
        data = self.stream.readline(size) if size > 0 else b""
        self.remaining -= len(data)
        return bytes(data)

    def __iter__(self) -> Any:
        while line := self.readline():
            yield line

    def drain(self) -> bool:
        """Read off what the app left unread; False if the client went away before sending it all."""
        while self.remaining > 0:
            if not self.read(65536):
                return False
        return True


class _Counted:
    """The connection's writer, counting the bytes written."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.count = 0

    def write(self, data: bytes) -> Any:
        written = self.raw.write(data)
        self.count += len(data)
        return written

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def handler_class() -> type[Any]:
    """moto's request handler, with the TLS handshake in the connection's thread and kept-alive connections."""
    from moto.moto_server.werkzeug_app import MotoRequestHandler

    class RequestHandler(MotoRequestHandler):
        # A response is written as headers then body: without TCP_NODELAY, a kept-alive connection's second
        # small write can wait for the client's delayed ACK.
        disable_nagle_algorithm = True
        timeout = IDLE_SECONDS
        keep_alive = False
        declared: int | None = None  # the response's Content-Length
        body_from: int | None = None  # bytes written when its headers ended
        status: int | None = None  # the response's status code

        def handle(self) -> None:
            if isinstance(self.connection, ssl.SSLSocket):
                try:
                    self.connection.settimeout(HANDSHAKE_SECONDS)
                    self.connection.do_handshake()
                    self.connection.settimeout(self.timeout)
                except OSError as exc:  # ssl.SSLError included: a plain-HTTP client, an untrusting one
                    log.debug("TLS handshake with %s failed: %s", self.client_address, exc)
                    return
            super().handle()

        def setup(self) -> None:
            super().setup()
            self.wfile = _Counted(self.wfile)  # type: ignore[assignment]

        def run_wsgi(self) -> None:
            chunked = "chunked" in self.headers.get("Transfer-Encoding", "").lower()
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            # A HEAD answer's body, which a middleware may write anyway, would be read as the next response.
            self.keep_alive = (
                not chunked
                and length >= 0
                and self.command != "HEAD"
                and not self.close_connection
                and self.request_version == "HTTP/1.1"
            )
            if not self.keep_alive:
                super().run_wsgi()  # werkzeug's way: "Connection: close", the rest of the socket discarded
                return
            self.declared = self.body_from = self.status = None
            connection_file, body = self.rfile, _Body(self.rfile, length)
            # werkzeug reads the body from self.rfile (wsgi.input) and, after the response, reads whatever is
            # left there: bounded by the body, that never reaches into the next request.
            self.rfile = body  # type: ignore[assignment]
            try:
                super().run_wsgi()
            finally:
                self.rfile = connection_file
            written = self.wfile.count - self.body_from if self.body_from is not None else None  # type: ignore[attr-defined]
            if not body.drain() or self.declared is None or written != self.declared:
                self.close_connection = True
            self.keep_alive = (
                False  # until the next request is read: an error answer closes as werkzeug's does
            )

        def make_environ(self) -> Any:
            environ = super().make_environ()
            # The WSGI environ joins repeated headers; DynamoDB reads the first Accept-Encoding only.
            first = self.headers.get("Accept-Encoding")
            if first is not None:
                environ[encoding.FIRST_ACCEPT_ENCODING] = first
            return environ

        def send_response(self, code: int, message: str | None = None) -> None:
            self.status = code
            super().send_response(code, message)

        def date_time_string(self, timestamp: float | None = None) -> str:
            # The Date header tells the local AWS's time, which a test may move ahead (local/clock.py).
            return str(super().date_time_string(clock.now() if timestamp is None else timestamp))

        def end_headers(self) -> None:
            if self.keep_alive and self.declared is None:
                if self.status in (204, 304):
                    self.declared = 0  # HTTP forbids a body here: the connection stays usable
                else:  # a body of unknown length ends the connection: say so, or the client reuses it
                    super().send_header("Connection", "close")
            super().end_headers()
            self.body_from = self.wfile.count  # type: ignore[attr-defined]

        def send_header(self, keyword: str, value: str) -> None:
            if keyword.lower() == "content-length":
                self.declared = int(value) if value.strip().isdigit() else None
            if self.keep_alive and keyword.lower() == "connection" and value.lower() == "close":
                return  # werkzeug closes every connection; this one is kept for the next request
            super().send_header(keyword, value)

        def log_error(self, format: str, *args: Any) -> None:  # noqa: A002 - the signature of http.server
            if format.startswith("Request timed out"):
                return  # a kept-alive connection left idle for IDLE_SECONDS: closed, as intended
            super().log_error(format, *args)

    return RequestHandler


class TlsServer(ThreadedWSGIServer):
    """werkzeug's threaded server over TLS, whose accept loop leaves the handshake to the connection's thread."""

    def __init__(self, host: str, port: int, app: Any, handler: type[Any], context: ssl.SSLContext):
        super().__init__(host, port, app, handler)
        self.ssl_context = context

    def get_request(self) -> tuple[Any, Any]:
        sock, address = self.socket.accept()
        assert self.ssl_context is not None
        return self.ssl_context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), address


def make(address: str, port: int, app: Any, handler: type[Any], context: ssl.SSLContext | None) -> Any:
    """A threaded server of ``app`` on ``address:port``: over TLS with ``context``, else plain HTTP."""
    if context is not None:
        return TlsServer(address, port, app, handler, context)
    return ThreadedWSGIServer(address, port, app, handler)
