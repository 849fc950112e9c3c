"""Signature Version 4, checked as AWS checks it: the signature recomputed with the access key's secret, the
request's time held to 15 minutes of the server's, a presigned URL's expiry (Signature Version 4 reference,
"Create a signed AWS API request" and "Authenticating requests: using query parameters"; the messages are the
ones AWS's services send).

The canonical request is built from the request as it arrived: the path as sent (S3 signs it as it is, every
other service its dot-segment-normalized form URI-encoded once more), the query parameters decoded and encoded
again as the reference says (sorted, ``X-Amz-Signature`` left out of a presigned URL's), the signed headers'
values trimmed, and the payload's hash: S3 takes ``x-amz-content-sha256`` as the client states it (a hash,
``UNSIGNED-PAYLOAD``, one of the ``STREAMING-*`` forms: an aws-chunked body's seed signature is this one; its
chunks are not verified here); the other services hash the body they received.

Times go by the real clock, not the clock control's reported one (local/clock.py): a client signs with its own
clock, which the control does not move. Pure: no moto import.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote, unquote

from local.auth import signing

ALGORITHM = "AWS4-HMAC-SHA256"
AMZ_DATE = "%Y%m%dT%H%M%SZ"
SKEW = timedelta(minutes=15)
MAX_EXPIRES = 604800  # a presigned URL lives at most a week
UNSIGNED = "UNSIGNED-PAYLOAD"
# What AWS answers, by kind; the code and status come from the protocol (middleware.py).
MISMATCH = (
    "The request signature we calculated does not match the signature you provided. Check your AWS Secret "
    "Access Key and signing method. Consult the service documentation for details."
)
S3_MISMATCH = (
    "The request signature we calculated does not match the signature you provided. Check your key and "
    "signing method."
)
S3_SKEWED = "The difference between the request time and the current time is too large."
EXPIRED = "Signature expired: {signed} is now earlier than {earliest} ({now} - 15 min.)"
NOT_YET = "Signature not yet current: {signed} is still later than {latest} ({now} + 15 min.)"
PRESIGNED_EXPIRED = "Request has expired"
BAD_EXPIRES = "X-Amz-Expires must be less than a week (in seconds) that is 604800"
NO_CONTENT_SHA = "Missing required header for this request: x-amz-content-sha256"
BAD_DATE = "Date must be in ISO-8601 'basic format'. Got '{value}'. See http://en.wikipedia.org/wiki/ISO_8601"
SCOPE_DATE = (
    "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: "
    "'{scope}' != '{date}', from '{amz}'."
)
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Signature:
    """What a request says about its signature: from its Authorization header or its presigned query."""

    access_key: str
    scope: str  # date/region/service/aws4_request
    signed_headers: tuple[str, ...]
    signature: str
    amz_date: str
    presigned: bool
    expires: str | None = None

    @property
    def service(self) -> str:
        return self.scope.split("/")[2]


@dataclass(frozen=True)
class Problem:
    """Why the signature does not hold: ``kind`` is mismatch, skewed, expired (a presigned URL), malformed; a
    mismatch carries the canonical request the server signed (S3 returns it in its error, the log shows it)."""

    kind: str
    message: str
    canonical: str = ""


def read(environ: dict[str, Any]) -> Signature | None:
    """The request's SigV4 signature parts; None when it carries none (the caller decided it needs none)."""
    header = environ.get("HTTP_AUTHORIZATION", "").strip()
    if header.startswith(ALGORITHM + " "):
        found = signing.parameters(header)
        key, _, scope = found.get("Credential", "").partition("/")
        amz = environ.get("HTTP_X_AMZ_DATE") or _from_http_date(environ.get("HTTP_DATE", ""))
        return Signature(
            key,
            scope,
            tuple(found.get("SignedHeaders", "").split(";")),
            found.get("Signature", ""),
            amz,
            False,
        )
    query = _pairs(environ.get("QUERY_STRING", ""))
    params = {k: v for k, v in query}
    if "X-Amz-Credential" not in params:
        return None
    key, _, scope = params["X-Amz-Credential"].partition("/")
    return Signature(
        key,
        scope,
        tuple(params.get("X-Amz-SignedHeaders", "host").split(";")),
        params.get("X-Amz-Signature", ""),
        params.get("X-Amz-Date", ""),
        True,
        params.get("X-Amz-Expires"),
    )


def _from_http_date(value: str) -> str:
    """An RFC 1123 ``Date`` header in ISO 8601 basic form (the string to sign's); empty when unreadable."""
    from email.utils import parsedate_to_datetime

    try:
        return parsedate_to_datetime(value).astimezone(UTC).strftime(AMZ_DATE)
    except (TypeError, ValueError):
        return ""


def _pairs(query: str) -> list[tuple[str, str]]:
    pairs = []
    for item in query.split("&") if query else []:
        key, _, value = item.partition("=")
        pairs.append((unquote(key), unquote(value)))
    return pairs


def problem(
    environ: dict[str, Any], body: bytes | None, secret: str, signature: Signature, now: datetime
) -> Problem | None:
    """Why AWS refuses this signature (its time first, then its value), or None when it holds."""
    s3 = signature.service == "s3"
    when = _time_problem(signature, now, s3)
    if when is not None:
        return when
    payload = _payload_hash(environ, body, signature, s3)
    if payload is None:
        return Problem("malformed", NO_CONTENT_SHA)
    canonical = canonical_request(environ, signature, payload, s3)
    expected = sign(secret, signature, canonical)
    if not hmac.compare_digest(expected, signature.signature):
        return Problem("mismatch", S3_MISMATCH if s3 else MISMATCH, canonical)
    return None


def _time_problem(signature: Signature, now: datetime, s3: bool) -> Problem | None:
    try:
        signed = datetime.strptime(signature.amz_date, AMZ_DATE).replace(tzinfo=UTC)
    except ValueError:
        return Problem("malformed", BAD_DATE.format(value=signature.amz_date))
    scope_date = signature.scope.split("/")[0]
    if scope_date != signature.amz_date[:8]:
        return Problem(
            "malformed",
            SCOPE_DATE.format(scope=scope_date, date=signature.amz_date[:8], amz=signature.amz_date),
        )
    if signature.presigned:
        try:
            expires = int(signature.expires or "")
        except ValueError:
            expires = -1
        if not 0 < expires <= MAX_EXPIRES:
            return Problem("malformed", BAD_EXPIRES)
        if now > signed + timedelta(seconds=expires):
            return Problem("expired", PRESIGNED_EXPIRED)
        return None
    return skew(signature, now)


def skew(signature: Signature, now: datetime) -> Problem | None:
    """A header-signed request dated more than 15 minutes from ``now``, refused before anything else is read of
    it; None otherwise (a date that does not parse, or a presigned URL, is the full check's to answer)."""
    try:
        signed = datetime.strptime(signature.amz_date, AMZ_DATE).replace(tzinfo=UTC)
    except ValueError:
        return None
    if signature.presigned:
        return None
    s3 = signature.service == "s3"
    stamp = now.strftime(AMZ_DATE)
    if signed < now - SKEW:
        earliest = (now - SKEW).strftime(AMZ_DATE)
        return Problem(
            "skewed",
            S3_SKEWED if s3 else EXPIRED.format(signed=signature.amz_date, earliest=earliest, now=stamp),
        )
    if signed > now + SKEW:
        latest = (now + SKEW).strftime(AMZ_DATE)
        return Problem(
            "skewed", S3_SKEWED if s3 else NOT_YET.format(signed=signature.amz_date, latest=latest, now=stamp)
        )
    return None


def _payload_hash(environ: dict[str, Any], body: bytes | None, signature: Signature, s3: bool) -> str | None:
    stated = environ.get("HTTP_X_AMZ_CONTENT_SHA256")
    if s3:
        if stated:
            return str(stated)
        if signature.presigned:
            query = dict(_pairs(environ.get("QUERY_STRING", "")))
            return query.get("X-Amz-Content-Sha256", UNSIGNED)
        return None  # S3 requires the header on a header-signed request
    return hashlib.sha256(body or b"").hexdigest()


def canonical_request(environ: dict[str, Any], signature: Signature, payload: str, s3: bool) -> str:
    raw = str(environ.get("RAW_URI") or environ.get("REQUEST_URI") or "").split("?", 1)[0]
    if not raw:
        raw = quote(environ.get("PATH_INFO", "") or "/", safe="/~")
    if raw.startswith(("http://", "https://")):  # an absolute-form request target
        raw = "/" + raw.split("/", 3)[3] if raw.count("/") >= 3 else "/"
    path = raw or "/"
    if not s3:
        path = quote(_remove_dot_segments(path), safe="/~")
    pairs = [
        (quote(k, safe="-_.~"), quote(v, safe="-_.~"))
        for k, v in _pairs(environ.get("QUERY_STRING", ""))
        if not (signature.presigned and k == "X-Amz-Signature")
    ]
    query = "&".join(f"{k}={v}" for k, v in sorted(pairs))
    headers = "".join(f"{name}:{_header(environ, name)}\n" for name in signature.signed_headers)
    return "\n".join(
        [
            environ.get("REQUEST_METHOD", "GET").upper(),
            path,
            query,
            headers,
            ";".join(signature.signed_headers),
            payload,
        ]
    )


def _header(environ: dict[str, Any], name: str) -> str:
    if name in ("content-type", "content-length"):
        value = environ.get(name.upper().replace("-", "_"), "")
    else:
        value = environ.get("HTTP_" + name.upper().replace("-", "_"), "")
    return _SPACES.sub(" ", str(value).strip())


def _remove_dot_segments(path: str) -> str:
    """RFC 3986's dot-segment removal, empty segments dropped as AWS's services require (as the SDKs sign)."""
    out: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if out:
                out.pop()
        elif segment and segment != ".":
            out.append(segment)
    last = "/" if path.endswith("/") and out else ""
    return "/" + "/".join(out) + last


def sign(secret: str, signature: Signature, canonical: str) -> str:
    """The hex signature of ``canonical`` in ``signature``'s scope with ``secret``."""
    to_sign = "\n".join(
        [
            ALGORITHM,
            signature.amz_date,
            signature.scope,
            hashlib.sha256(canonical.encode("utf-8")).hexdigest(),
        ]
    )
    return hmac.new(signing_key(secret, signature.scope), to_sign.encode("utf-8"), hashlib.sha256).hexdigest()


def signing_key(secret: str, scope: str) -> bytes:
    """The key a scope's signatures are made with (the header's, its chunks', its trailer's)."""
    key = ("AWS4" + secret).encode("utf-8")
    for part in scope.split("/"):
        key = hmac.new(key, part.encode("utf-8"), hashlib.sha256).digest()
    return key
