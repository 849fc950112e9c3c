"""The local AWS's TLS material: generated once per state directory, reused while valid, trusted by a client."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import stat
import threading
from pathlib import Path

import pytest
from cryptography import x509

from local import state
from local.server import tls

pytestmark = pytest.mark.unit


def _cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_first_use_generates_a_ca_and_a_server_certificate_for_every_loopback_name(tmp_path: Path) -> None:
    # WHEN the state directory has no TLS material yet
    paths = tls.ensure(tmp_path)
    # THEN the CA is where clients are told to look, and it signed a server certificate for localhost
    assert paths.ca == state.ca_bundle(tmp_path) == tmp_path.resolve() / "tls" / "ca.pem"
    ca, cert = _cert(paths.ca), _cert(paths.cert)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    assert set(names.get_values_for_type(x509.IPAddress)) == {
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("::1"),
    }
    assert stat.S_IMODE(paths.key.stat().st_mode) == 0o600
    kept = sorted(p.name for p in paths.ca.parent.iterdir() if not p.name.startswith("."))
    assert kept == ["ca.pem", "server.key", "server.pem"], "the CA's private key is not kept"


def test_valid_material_is_reused_byte_for_byte(tmp_path: Path) -> None:
    # GIVEN material made by a first start
    first = tls.ensure(tmp_path)
    before = {p: p.read_bytes() for p in (first.ca, first.cert, first.key)}
    # WHEN the server starts again THEN nothing is regenerated (clients holding the bundle keep trusting it)
    again = tls.ensure(tmp_path)
    assert {p: p.read_bytes() for p in (again.ca, again.cert, again.key)} == before


@pytest.mark.parametrize("broken", ["missing-key", "foreign-ca", "garbage-cert"])
def test_unusable_material_is_replaced_by_a_new_pair(tmp_path: Path, broken: str) -> None:
    # GIVEN material that cannot serve: a key gone, a CA that did not sign the certificate, a corrupt file
    paths = tls.ensure(tmp_path)
    old_ca = paths.ca.read_bytes()
    if broken == "missing-key":
        paths.key.unlink()
    elif broken == "foreign-ca":
        paths.ca.write_bytes(tls.ensure(tmp_path / "other").ca.read_bytes())
    else:
        paths.cert.write_text("not a certificate")
    assert not tls.valid(paths)
    # WHEN ensured THEN a new CA and certificate are made, consistent with each other
    tls.ensure(tmp_path)
    assert tls.valid(paths)
    assert paths.ca.read_bytes() != old_ca


def test_material_near_its_end_is_renewed(tmp_path: Path) -> None:
    # GIVEN valid material, looked at from a day before the server certificate's renewal window
    paths = tls.ensure(tmp_path)
    end = _cert(paths.cert).not_valid_after_utc
    assert tls.valid(paths, now=end - tls.RENEW_BEFORE - datetime.timedelta(days=1))
    # THEN inside the window it is no longer valid (ensure replaces it at the next start)
    assert not tls.valid(paths, now=end - tls.RENEW_BEFORE + datetime.timedelta(days=1))


def test_a_client_trusting_the_bundle_completes_a_handshake_for_localhost(tmp_path: Path) -> None:
    # GIVEN a TLS server presenting the certificate, on a loopback socket
    import socket

    paths = tls.ensure(tmp_path)
    server_context = paths.server_context()
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        with server_context.wrap_socket(conn, server_side=True) as tls_conn:
            tls_conn.sendall(b"ok")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    # WHEN a client trusting only the bundle connects by name THEN the certificate verifies for "localhost"
    client_context = ssl.create_default_context(cafile=str(paths.ca))
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        client_context.wrap_socket(raw, server_hostname="localhost") as conn,
    ):
        assert conn.recv(2) == b"ok"
    thread.join(timeout=5)
    listener.close()


def test_client_env_points_at_https_and_the_bundle(tmp_path: Path) -> None:
    env = state.client_env(4566, tmp_path)
    assert env["AWS_ENDPOINT_URL"] == "https://localhost:4566"
    assert env["AWS_CA_BUNDLE"] == str(tmp_path.resolve() / "tls" / "ca.pem")


def test_the_server_shakes_hands_per_connection_and_keeps_it_alive(tmp_path: Path) -> None:
    import json
    import socket

    from local.faults.client import FaultClient
    from local.server import listener

    # GIVEN the server's TLS listener in front of an app that says which connection a request came on
    def app(environ: dict[str, str], start_response: object) -> list[bytes]:
        body = json.dumps({"peer": environ["REMOTE_PORT"], "scheme": environ["wsgi.url_scheme"]}).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])  # type: ignore[operator]
        return [body]

    paths = tls.ensure(tmp_path)
    server = listener.make("127.0.0.1", 0, app, listener.handler_class(), paths.server_context())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        # WHEN a client has connected and sent nothing (its handshake pending) and another speaks plain HTTP
        silent = socket.create_connection(("127.0.0.1", server.server_port), timeout=5)
        with socket.create_connection(("127.0.0.1", server.server_port), timeout=5) as plain:
            plain.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
            assert not plain.recv(64).startswith(b"HTTP/")
        # THEN a client trusting the bundle is served over TLS, twice on one kept-alive connection
        client = FaultClient(f"https://localhost:{server.server_port}", ca_bundle=paths.ca)
        first, second = client.status(), client.status()
        assert first["scheme"] == "https"
        assert first["peer"] == second["peer"]
        client.close()
        silent.close()
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("reads", [0, 5, -1])
def test_a_kept_alive_connection_starts_each_request_after_the_previous_body(
    tmp_path: Path, reads: int
) -> None:
    import http.client
    import json

    from local.server import listener

    # GIVEN an app that reads none, part or all of a request's body (a refusal before the body, a parser)
    def app(environ: dict[str, object], start_response: object) -> list[bytes]:
        stream = environ["wsgi.input"]
        seen = stream.read(reads) if reads else b""  # type: ignore[attr-defined]
        body = json.dumps({"path": environ["PATH_INFO"], "seen": seen.decode()}).encode()
        start_response("200 OK", [("Content-Length", str(len(body)))])  # type: ignore[operator]
        return [body]

    server = listener.make("127.0.0.1", 0, app, listener.handler_class(), None)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        connection = http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=5)
        answers = []
        # WHEN two requests with bodies and one without follow each other on one connection
        for path, body in (
            ("/one", b"first-body"),
            ("/two", b"GET /smuggled HTTP/1.1\r\n\r\n"),
            ("/three", None),
        ):
            connection.request("POST" if body else "GET", path, body=body)
            response = connection.getresponse()
            assert not response.will_close
            answers.append(json.loads(response.read()))
        connection.close()
    finally:
        server.shutdown()
        server.server_close()
    # THEN each request is answered as itself: no body leaks into the next request line
    assert [a["path"] for a in answers] == ["/one", "/two", "/three"]
    if reads == -1:
        assert answers[0]["seen"] == "first-body"


def test_a_head_answer_or_a_wrong_length_ends_the_connection(tmp_path: Path) -> None:
    import http.client

    from local.server import listener

    # GIVEN an app that writes a body whatever the method, and says a wrong length on /short
    def app(environ: dict[str, object], start_response: object) -> list[bytes]:
        length = "99" if environ["PATH_INFO"] == "/short" else "4"
        start_response("403 Forbidden", [("Content-Length", length)])  # type: ignore[operator]
        return [b"body"]

    server = listener.make("127.0.0.1", 0, app, listener.handler_class(), None)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        # WHEN a HEAD is answered THEN the server says it closes the connection (its body is never misread)
        connection = http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=5)
        connection.request("HEAD", "/object")
        head = connection.getresponse()
        assert head.will_close and head.read() == b""
        connection.close()
        # WHEN the body is shorter than its Content-Length THEN the connection ends instead of waiting
        raw = socket.create_connection(("127.0.0.1", server.server_port), timeout=5)
        raw.sendall(b"GET /short HTTP/1.1\r\nHost: x\r\n\r\n")
        received = b""
        while chunk := raw.recv(4096):
            received += chunk
        raw.close()
        assert received.endswith(b"\r\n\r\nbody")
    finally:
        server.shutdown()
        server.server_close()


def test_a_no_content_answer_keeps_the_connection_and_an_unknown_length_says_it_closes() -> None:
    """Found by the conformance tier: S3's DeleteObject answers 204 without a Content-Length; the server closed
    the connection without saying so and the client's next request on it failed (botocore's retry hid it)."""
    import http.client

    from local.server import listener

    # GIVEN an app that answers 204 without a Content-Length on /gone and a body of no declared length elsewhere
    def app(environ: dict[str, object], start_response: object) -> list[bytes]:
        if environ["PATH_INFO"] == "/gone":
            start_response("204 No Content", [])  # type: ignore[operator]
            return []
        start_response("200 OK", [("Content-Type", "text/plain")])  # type: ignore[operator]
        return [b"streamed"]

    server = listener.make("127.0.0.1", 0, app, listener.handler_class(), None)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        connection = http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=5)
        # WHEN two 204 answers follow each other on one connection THEN both arrive and it stays open
        for _ in range(2):
            connection.request("DELETE", "/gone")
            gone = connection.getresponse()
            assert (gone.status, gone.read(), gone.will_close) == (204, b"", False)
        # WHEN a body's length is unknown THEN the server says it closes the connection
        connection.request("GET", "/streamed")
        streamed = connection.getresponse()
        assert streamed.will_close and streamed.read() == b"streamed"
        connection.close()
    finally:
        server.shutdown()
        server.server_close()
