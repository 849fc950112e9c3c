"""DynamoDB's compressed responses: an answer larger than 4 KiB is sent gzip- or deflate-encoded when the request's
Accept-Encoding asks for one of them, read as DynamoDB reads that header.

DynamoDB reads only the first Accept-Encoding header a request carries (the signature covers them all, joined).
Its entries are split on commas and trimmed; an entry's coding is what precedes its first ``;``, compared without
case: ``gzip``, ``deflate`` and ``*`` count, anything else (``identity``, ``br``, ``x-gzip``, a quoted or spaced
name) is ignored. An entry's quality is the number after the first ``q=`` of its parameters (``nq=0`` included,
``q =0`` not), 1 when there is none or it is not a number, at most 1; a coding at 0 or below is refused. The
highest quality wins; on a tie a coding named outright wins over one ``*`` stands for, then the earlier entry, and
``*`` stands for gzip before deflate. A body of 4,096 bytes or less is never compressed. ``x-amz-crc32`` is
the checksum of the bytes sent, so botocore's check holds on the compressed body.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable, Iterable
from typing import Any

THRESHOLD = 4096  # bytes: a larger answer is compressed when the client asks
# The first Accept-Encoding header as it arrived (the listener puts it here: the WSGI environ joins repeated ones).
FIRST_ACCEPT_ENCODING = "doctable.accept_encoding"
TARGETS = ("DynamoDB_20120810.", "DynamoDBStreams_20120810.")
CODINGS = ("gzip", "deflate")


def _quality(parameters: str) -> float:
    at = parameters.find("q=")
    if at < 0:
        return 1.0
    try:
        value = float(parameters[at + 2 :].split(";", 1)[0])
    except ValueError:
        return 1.0
    return min(value, 1.0) if value == value else 1.0  # NaN: not a number


def chosen(header: str | None) -> str | None:
    """The coding DynamoDB answers a request whose first Accept-Encoding header is ``header``; None: identity."""
    if not header:
        return None
    named: dict[str, tuple[float, int]] = {}
    star: tuple[float, int] | None = None
    for position, entry in enumerate(header.split(",")):
        name, _, parameters = entry.partition(";")
        coding = name.strip().lower()
        if coding not in (*CODINGS, "*"):
            continue
        quality = _quality(parameters)
        if coding == "*":
            star = star or (quality, position)
        elif coding not in named or quality > named[coding][0]:
            named[coding] = (quality, position if coding not in named else named[coding][1])
    ranked: list[tuple[float, int, int, str]] = []
    for order, coding in enumerate(CODINGS):
        if coding in named:
            quality, position = named[coding]
            ranked.append((-quality, 0, position, coding))
        elif star is not None:
            ranked.append((-star[0], 1, order, coding))
    ranked = [entry for entry in ranked if entry[0] < 0]
    return min(ranked)[3] if ranked else None


def compress(body: bytes, coding: str) -> bytes:
    """``body`` encoded as ``coding`` (gzip's format, or a zlib stream for deflate, as HTTP means by it)."""
    if coding == "gzip":
        return gzip.compress(body, compresslevel=6, mtime=0)
    return zlib.compress(body, 6)


class CompressingMiddleware:
    """Compresses DynamoDB's and DynamoDB Streams' answers past THRESHOLD as the request's Accept-Encoding asks."""

    def __init__(self, app: Callable[..., Iterable[bytes]]):
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not str(environ.get("HTTP_X_AMZ_TARGET", "")).startswith(TARGETS):
            return self.app(environ, start_response)
        coding = chosen(environ.get(FIRST_ACCEPT_ENCODING, environ.get("HTTP_ACCEPT_ENCODING")))
        if coding is None:
            return self.app(environ, start_response)
        started: list[Any] = []
        chunks: list[bytes] = []

        def hold(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[[bytes], Any]:
            started[:] = [status, headers, exc_info]
            return chunks.append

        answer = self.app(environ, hold)
        try:
            chunks.extend(answer)
        finally:
            close = getattr(answer, "close", None)
            if close is not None:
                close()
        status, headers, exc_info = started
        body = b"".join(chunks)
        encoded = any(name.lower() == "content-encoding" for name, _ in headers)
        if len(body) > THRESHOLD and not encoded:
            body = compress(body, coding)
            kept = [(n, v) for n, v in headers if n.lower() not in ("content-length", "x-amz-crc32")]
            headers = [
                *kept,
                ("Content-Encoding", coding),
                ("Content-Length", str(len(body))),
                ("x-amz-crc32", str(zlib.crc32(body) & 0xFFFFFFFF)),
            ]
        start_response(status, headers, exc_info)
        return [body]
