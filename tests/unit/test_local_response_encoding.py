"""DynamoDB compresses an answer past 4 KiB when the request's Accept-Encoding asks (local/server/encoding.py): the
coding chosen as DynamoDB reads the header (its first occurrence only, qualities, ``*``, entries it ignores), the
body compressed with its checksum recomputed, small answers and other services left alone."""

from __future__ import annotations

import gzip
import http.client
import json
import threading
import zlib
from collections.abc import Iterable
from typing import Any

import pytest

from local.server import encoding, listener

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, None),
        ("", None),
        ("identity", None),
        ("br, zstd, compress, x-gzip", None),
        ("gzip", "gzip"),
        ("deflate", "deflate"),
        ("gzip, deflate", "gzip"),  # a tie: the earlier entry
        ("br, identity, deflate, gzip", "deflate"),
        ("GZIP, identity", "gzip"),  # names compared without case
        ("dog, gzip ,, cat", "gzip"),  # empty and unknown entries skipped, spaces trimmed
        ("gzip;q=0.8, deflate;q=0.5", "gzip"),
        ("deflate;q=0.5, gzip;q=0.2", "deflate"),
        ("*", "gzip"),  # the wildcard stands for gzip before deflate
        ("*, deflate", "deflate"),  # on a tie a coding named outright beats the wildcard
        ("*, gzip;q=0.5", "deflate"),  # the wildcard stands only for codings not named
        ("*;q=0", None),
        ("gzip ;q=0", None),
        ("br;q=0.8,identity;q=0.5,*;q=0", None),
        ('"gzip"', None),  # a quoted name, a name with a space or a colon: not a coding
        ("gzip br", None),
        ("gzip:q=1", None),
        ("deflate;q=0.5, gzip;q=31", "gzip"),  # a quality above 1 counts as 1
        ("gzip;q=31,deflate;q=51", "gzip"),
        ("deflate;q=0.5, gzip;q=1;q=0.2", "gzip"),  # the first q= counts
        ("deflate;q=0.5,gzip;q=0.x", "gzip"),  # a quality that is no number: 1
        ("deflate;q=0.5,gzip;q=0.", "deflate"),
        ("deflate;q=-0.5,gzip;q=0.2", "gzip"),  # at or below 0: refused
        ("gzip;q= 0;q=1", None),
        ("gzip;q =0;q=1", "gzip"),  # 'q =' is no q=; the next one is
        ("gzip;nq=0;q=1", None),  # DynamoDB finds q= inside nq=
        ("gzip;q=0, gzip;q=1, gzip;q=0", "gzip"),  # the best of a coding's entries
        ("br,identity;q=0.5,gzip;q=0.0001", "gzip"),
    ],
)
def test_the_coding_is_chosen_as_dynamodb_reads_accept_encoding(
    header: str | None, expected: str | None
) -> None:
    assert encoding.chosen(header) == expected


def _app(body: bytes) -> Any:
    def app(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        crc = str(zlib.crc32(body) & 0xFFFFFFFF)
        start_response("200 OK", [("Content-Length", str(len(body))), ("x-amz-crc32", crc)])
        return [body]

    return app


def _call(body: bytes, target: str, accept: str | None) -> tuple[dict[str, str], bytes]:
    environ: dict[str, Any] = {"HTTP_X_AMZ_TARGET": target}
    if accept is not None:
        environ[encoding.FIRST_ACCEPT_ENCODING] = accept
    seen: dict[str, str] = {}

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
        seen.update(headers)

    answer = b"".join(encoding.CompressingMiddleware(_app(body))(environ, start_response))
    return seen, answer


def test_an_answer_past_4_kib_is_compressed_with_its_checksum_of_the_bytes_sent() -> None:
    # GIVEN a GetItem answer of about 6 KiB and a client accepting gzip, then deflate
    body = json.dumps({"Item": {"p": {"S": "x" * 6000}}}).encode()
    for coding, inflate in (("gzip", gzip.decompress), ("deflate", zlib.decompress)):
        headers, sent = _call(body, "DynamoDB_20120810.GetItem", coding)
        # THEN the body is sent compressed, inflates to the answer, and its length and checksum are the sent bytes'
        assert headers["Content-Encoding"] == coding
        assert inflate(sent) == body and len(sent) < len(body) // 10
        assert headers["Content-Length"] == str(len(sent))
        assert headers["x-amz-crc32"] == str(zlib.crc32(sent) & 0xFFFFFFFF)


def test_small_answers_unasked_answers_and_other_services_are_sent_as_they_are() -> None:
    big = b"{" + b" " * 5000 + b"}"
    # an answer of exactly 4,096 bytes, one nobody asked to compress, and S3's
    for body, target, accept in (
        (b"{" + b" " * 4094 + b"}", "DynamoDB_20120810.GetItem", "gzip"),
        (big, "DynamoDB_20120810.GetItem", None),
        (big, "DynamoDB_20120810.GetItem", "identity"),
        (big, "", "gzip"),
    ):
        headers, sent = _call(body, target, accept)
        assert "Content-Encoding" not in headers and sent == body
    # DynamoDB Streams' answers are compressed too
    headers, _ = _call(big, "DynamoDBStreams_20120810.GetRecords", "deflate")
    assert headers["Content-Encoding"] == "deflate"


def test_the_listener_hands_on_the_first_accept_encoding_header_as_it_arrived() -> None:
    # GIVEN the local AWS's listener serving an app that reports what the request said
    def app(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        said = {
            "first": environ.get(encoding.FIRST_ACCEPT_ENCODING),
            "joined": environ.get("HTTP_ACCEPT_ENCODING"),
        }
        body = json.dumps(said).encode()
        start_response("200 OK", [("Content-Length", str(len(body)))])
        return [body]

    server = listener.make("127.0.0.1", 0, app, listener.handler_class(), None)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        connection = http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=10)
        # WHEN a request carries Accept-Encoding twice
        connection.putrequest("POST", "/", skip_accept_encoding=True)
        connection.putheader("Accept-Encoding", "identity")
        connection.putheader("Accept-Encoding", "gzip")
        connection.putheader("Content-Length", "0")
        connection.endheaders()
        said = json.loads(connection.getresponse().read())
    finally:
        server.shutdown()
        server.server_close()
    # THEN the signature's view joins them, and DynamoDB's choice reads the first one only
    assert said == {"first": "identity", "joined": "identity,gzip"}
    assert encoding.chosen(said["first"]) is None
