"""An S3 request's body, checked as S3 checks it once the signature of its head holds (Amazon S3 API Reference,
"Authenticating Requests (AWS Signature Version 4)": the single-chunk, chunked and trailing-header pages; "Checking
object integrity" in the User Guide; the messages are S3's).

- A payload hash the client states (``x-amz-content-sha256``: 64 hex digits) is the body's SHA-256, or
  ``XAmzContentSHA256Mismatch``; any other value than a hash or one of the forms S3 knows is ``InvalidArgument``.
- An ``aws-chunked`` body is decoded: signed chunks (``STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER]``) each carry
  the signature of ``AWS4-HMAC-SHA256-PAYLOAD``, chained from the header's seed signature to the final empty
  chunk, and a signed trailer ``x-amz-trailer-signature`` over its headers (``AWS4-HMAC-SHA256-TRAILER``): a
  mismatch or a missing signature is ``SignatureDoesNotMatch``; the decoded length is
  ``x-amz-decoded-content-length``, a trailer ``x-amz-trailer`` announces is present, or ``IncompleteBody``.
- A checksum (``x-amz-checksum-<algorithm>`` as a header or a trailer: CRC32, CRC32C, CRC64NVME, SHA1, SHA256) is
  the body's, or ``BadDigest``; so is ``Content-MD5`` (``InvalidDigest`` when it is not an MD5 in base64).

moto 5.2.5 decodes aws-chunked bodies but checks none of this: a wrong checksum or MD5 was stored as if right.
Pure: no moto import; the body is read whole (the local AWS's objects are small).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass

UNSIGNED = "UNSIGNED-PAYLOAD"
SIGNED_CHUNKS = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
SIGNED_CHUNKS_TRAILER = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
UNSIGNED_TRAILER = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
FORMS = (
    UNSIGNED,
    UNSIGNED_TRAILER,
    SIGNED_CHUNKS,
    SIGNED_CHUNKS_TRAILER,
    "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD",
    "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD-TRAILER",
)
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
BAD_FORM = (
    "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER, "
    "STREAMING-AWS4-HMAC-SHA256-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER, "
    "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD, STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD-TRAILER or a valid "
    "sha256 value."
)
SHA_MISMATCH = "The provided 'x-amz-content-sha256' header does not match what was computed."
CHECKSUM_MISMATCH = "The {algorithm} you specified did not match the calculated checksum."
MD5_MISMATCH = "The Content-MD5 you specified did not match what we received."
MD5_INVALID = "The Content-MD5 you specified was invalid."
INCOMPLETE = "You did not provide the number of bytes specified by the Content-Length HTTP header."
CHUNK_MISMATCH = (
    "The request signature we calculated does not match the signature you provided. Check your key and "
    "signing method."
)
_HEX64 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Refusal:
    """S3's answer: its code, message, HTTP status and the extra elements its error carries."""

    code: str
    message: str
    status: str = "400 Bad Request"
    fields: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Chain:
    """What signs an aws-chunked body's chunks: the signing key of the header's scope, its date and scope, and
    the seed (the header's own signature)."""

    key: bytes
    amz_date: str
    scope: str
    seed: str

    def sign(self, kind: str, previous: str, digest: str) -> str:
        lines = [f"AWS4-HMAC-SHA256-{kind}", self.amz_date, self.scope, previous]
        lines += [EMPTY_SHA256, digest] if kind == "PAYLOAD" else [digest]
        return hmac.new(self.key, "\n".join(lines).encode("utf-8"), hashlib.sha256).hexdigest()


def check(headers: dict[str, str], body: bytes, chain: Chain | None) -> Refusal | None:
    """Why S3 refuses this body, or None. ``headers`` are the request's, names lower-case; ``chain`` signs the
    chunks of a signed aws-chunked body (None for a presigned or unsigned request)."""
    stated = headers.get("x-amz-content-sha256", "")
    trailers: dict[str, str] = {}
    if stated.startswith("STREAMING-"):
        if stated not in FORMS or "ECDSA" in stated:
            return Refusal("InvalidArgument", BAD_FORM)
        decoded = _decode(body, stated, chain)
        if isinstance(decoded, Refusal):
            return decoded
        body, trailers = decoded
        declared = headers.get("x-amz-decoded-content-length")
        if declared is not None and declared != str(len(body)):
            return Refusal("IncompleteBody", INCOMPLETE)
        wanted = [t.strip().lower() for t in headers.get("x-amz-trailer", "").split(",") if t.strip()]
        if any(name not in trailers for name in wanted):
            return Refusal("IncompleteBody", INCOMPLETE)
    elif stated and stated != UNSIGNED:
        if not _HEX64.fullmatch(stated):
            return Refusal("InvalidArgument", BAD_FORM)
        computed = hashlib.sha256(body).hexdigest()
        if computed != stated:
            fields = (("ClientComputedContentSHA256", stated), ("S3ComputedContentSHA256", computed))
            return Refusal("XAmzContentSHA256Mismatch", SHA_MISMATCH, fields=fields)
    return _digests({**headers, **trailers}, body)


def _digests(headers: dict[str, str], body: bytes) -> Refusal | None:
    md5 = headers.get("content-md5")
    if md5 is not None:
        try:
            given = base64.b64decode(md5, validate=True)
        except (binascii.Error, ValueError):
            given = b""
        if len(given) != 16:
            return Refusal("InvalidDigest", MD5_INVALID)
        if given != hashlib.md5(body, usedforsecurity=False).digest():
            return Refusal("BadDigest", MD5_MISMATCH)
    for name, value in headers.items():
        algorithm = name.removeprefix("x-amz-checksum-")
        if algorithm == name or algorithm not in CHECKSUMS:
            continue
        if value.strip() != base64.b64encode(CHECKSUMS[algorithm](body)).decode():
            return Refusal("BadDigest", CHECKSUM_MISMATCH.format(algorithm=algorithm.upper()))
    return None


def _decode(body: bytes, form: str, chain: Chain | None) -> tuple[bytes, dict[str, str]] | Refusal:
    """The data and trailing headers of an aws-chunked body, each chunk's signature checked when it is signed."""
    signed = form in (SIGNED_CHUNKS, SIGNED_CHUNKS_TRAILER)
    if signed and chain is None:  # signed chunks need a signed head (a presigned URL has none to chain from)
        return Refusal("SignatureDoesNotMatch", CHUNK_MISMATCH, "403 Forbidden")
    data: list[bytes] = []
    previous = chain.seed if chain is not None else ""
    at = 0
    while True:
        end = body.find(b"\r\n", at)
        if end < 0:
            return Refusal("IncompleteBody", INCOMPLETE)
        size_text, _, extension = body[at:end].decode("latin-1").partition(";")
        try:
            size = int(size_text, 16)
        except ValueError:
            return Refusal("IncompleteBody", INCOMPLETE)
        chunk = body[end + 2 : end + 2 + size]
        if len(chunk) != size:
            return Refusal("IncompleteBody", INCOMPLETE)
        if chain is not None and signed:
            given = extension.partition("chunk-signature=")[2].strip()
            expected = chain.sign("PAYLOAD", previous, hashlib.sha256(chunk).hexdigest())
            if not hmac.compare_digest(given, expected):
                return Refusal("SignatureDoesNotMatch", CHUNK_MISMATCH, "403 Forbidden")
            previous = expected
        at = end + 2 + size
        if size == 0:
            break
        data.append(chunk)
        if body[at : at + 2] != b"\r\n":
            return Refusal("IncompleteBody", INCOMPLETE)
        at += 2
    trailers, signature, text = _trailers(body[at:])
    if form == SIGNED_CHUNKS_TRAILER and chain is not None:
        expected = chain.sign("TRAILER", previous, hashlib.sha256(text.encode("utf-8")).hexdigest())
        if not hmac.compare_digest(signature, expected):
            return Refusal("SignatureDoesNotMatch", CHUNK_MISMATCH, "403 Forbidden")
    return b"".join(data), trailers


def _trailers(rest: bytes) -> tuple[dict[str, str], str, str]:
    """The trailing headers (lower-case names), the trailer's signature and the text it signs (``name:value\\n``
    per header, as sent)."""
    trailers: dict[str, str] = {}
    signature = ""
    text = ""
    for line in rest.decode("latin-1").split("\r\n"):
        name, sep, value = line.partition(":")
        if not sep:
            continue
        if name.strip().lower() == "x-amz-trailer-signature":
            signature = value.strip()
            continue
        trailers[name.strip().lower()] = value.strip()
        text += f"{name.strip().lower()}:{value.strip()}\n"
    return trailers, signature, text


def _table(poly: int, width: int) -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
        table.append(crc & ((1 << width) - 1))
    return table


_CRC32C = _table(0x82F63B78, 32)
_CRC64NVME = _table(0x9A6C9329AC4BC9B5, 64)


def _reflected(table: list[int], width: int) -> Callable[[bytes], bytes]:
    mask = (1 << width) - 1

    def digest(data: bytes) -> bytes:
        crc = mask
        for byte in data:
            crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
        return (crc ^ mask).to_bytes(width // 8, "big")

    return digest


CHECKSUMS: dict[str, Callable[[bytes], bytes]] = {
    "crc32": lambda data: zlib.crc32(data).to_bytes(4, "big"),
    "crc32c": _reflected(_CRC32C, 32),
    "crc64nvme": _reflected(_CRC64NVME, 64),
    "sha1": lambda data: hashlib.sha1(data, usedforsecurity=False).digest(),
    "sha256": lambda data: hashlib.sha256(data).digest(),
}
