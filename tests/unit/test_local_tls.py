"""The local AWS's TLS material: generated once per state directory, reused while valid, trusted by a client."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import stat
import threading
from pathlib import Path

import pytest
from cryptography import x509

from local import state, tls

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
