"""The local AWS's TLS material: a private CA and a server certificate for localhost, made once per state directory.

``ensure(directory)`` returns the paths of ``tls/ca.pem`` (the bundle every client trusts: ``AWS_CA_BUNDLE``),
``tls/server.pem`` and ``tls/server.key``, generating them on first use and reusing them while they are valid
for every loopback name the endpoint answers on. The CA's private key is discarded once the server certificate
is signed, so the CA can vouch for nothing else; a certificate near its end is replaced by a new pair.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import ipaddress
import os
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from local import state

DNS_NAMES = ("localhost",)
IP_ADDRESSES = ("127.0.0.1", "::1")
CA_DAYS = 3650
SERVER_DAYS = 825
RENEW_BEFORE = datetime.timedelta(days=30)


@dataclass(frozen=True)
class TlsFiles:
    ca: Path  # the CA certificate: what a client trusts
    cert: Path  # the server certificate, signed by the CA
    key: Path  # the server certificate's private key (mode 0600)

    def server_context(self) -> ssl.SSLContext:
        """An ``ssl`` server context presenting the server certificate (TLS 1.2 and later)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.cert, self.key)
        return context


def files(directory: Path | None = None) -> TlsFiles:
    """Where the TLS material of the state directory lives (it may not exist yet)."""
    ca = state.ca_bundle(directory)
    return TlsFiles(ca=ca, cert=ca.with_name("server.pem"), key=ca.with_name("server.key"))


def ensure(directory: Path | None = None) -> TlsFiles:
    """The state directory's CA and server certificate: reused when valid, else generated (atomically)."""
    paths = files(directory)
    paths.ca.parent.mkdir(parents=True, exist_ok=True)
    with _locked(paths.ca.parent / ".lock"):
        if not valid(paths):
            _generate(paths)
    return paths


def valid(paths: TlsFiles, now: datetime.datetime | None = None) -> bool:
    """True if the files exist, the key matches the certificate, the CA signed it, it names every loopback
    address, and neither certificate ends within ``RENEW_BEFORE``."""
    now = now or datetime.datetime.now(datetime.UTC)
    try:
        ca = x509.load_pem_x509_certificate(paths.ca.read_bytes())
        cert = x509.load_pem_x509_certificate(paths.cert.read_bytes())
        key = serialization.load_pem_private_key(paths.key.read_bytes(), password=None)
    except (OSError, ValueError, TypeError):
        return False
    if key.public_key() != cert.public_key() or cert.issuer != ca.subject:
        return False
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    for certificate in (ca, cert):
        if not certificate.not_valid_before_utc <= now < certificate.not_valid_after_utc - RENEW_BEFORE:
            return False
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    return set(DNS_NAMES) <= set(names.get_values_for_type(x509.DNSName)) and {
        ipaddress.ip_address(a) for a in IP_ADDRESSES
    } <= set(names.get_values_for_type(x509.IPAddress))


def _generate(paths: TlsFiles, now: datetime.datetime | None = None) -> None:
    now = (now or datetime.datetime.now(datetime.UTC)) - datetime.timedelta(minutes=5)  # clock skew
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "doctable local AWS"),
            x509.NameAttribute(NameOID.COMMON_NAME, f"doctable local AWS CA {os.urandom(4).hex()}"),
        ]
    )
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in DNS_NAMES]
    names += [x509.IPAddress(ipaddress.ip_address(a)) for a in IP_ADDRESSES]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, DNS_NAMES[0])]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=SERVER_DAYS))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    _write(paths.key, key_pem, mode=0o600)
    _write(paths.cert, cert.public_bytes(serialization.Encoding.PEM))
    _write(paths.ca, ca.public_bytes(serialization.Encoding.PEM))


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True, content_commitment=False, key_encipherment=False, data_encipherment=False,
        key_agreement=False, key_cert_sign=cert_sign, crl_sign=cert_sign, encipher_only=False,
        decipher_only=False,
    )  # fmt: skip


def _write(path: Path, data: bytes, mode: int = 0o644) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.chmod(tmp, mode)
    tmp.replace(path)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Two servers starting on one state directory generate one pair, not two halves of two."""
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
