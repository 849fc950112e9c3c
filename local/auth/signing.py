"""What AWS answers before it looks at a request's signature: a request with no signature at all, and an
``Authorization`` header that is not a complete SigV4 one (Signature Version 4 reference, "Authorization header";
the messages are AWS's as its services send them).

An unsigned request to a JSON-protocol service (DynamoDB, Kinesis, Logs, ...) is ``MissingAuthenticationToken
Exception``, to a query-protocol one (CloudFormation, IAM, STS) ``MissingAuthenticationToken``, to Lambda's REST API
"Missing Authentication Token"; S3 alone takes unsigned requests, as the anonymous principal (middleware.py). A
header that is not ``AWS4-HMAC-SHA256 Credential=<key>/<date>/<region>/<service>/aws4_request, SignedHeaders=...,
Signature=...`` with a date is ``IncompleteSignatureException`` (S3: ``InvalidArgument``), naming every part it
lacks. The local AWS had handed both on to moto, which read a scope without ``Credential=`` its own way (a
DeleteTable so signed deleted the table) and answered an unsigned DynamoDB call as S3's ListBuckets.

Pure: no moto import.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

ALGORITHM = "AWS4-HMAC-SHA256"
MISSING_TOKEN = "Request is missing Authentication Token"
REQUIRES = "Authorization header requires '{part}' parameter."
REQUIRES_DATE = "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header."
UNSUPPORTED = "Unsupported AWS 'algorithm': '{algorithm}'"
TERMINATOR = "Credential should be scoped with a valid terminator: 'aws4_request', not '{found}'."
_LAMBDA_PATH = re.compile(r"^/20\d\d-\d\d-\d\d/")


@dataclass(frozen=True)
class Refusal:
    """How to answer: the protocol's format, the error code (query/XML and JSON forms), message and status."""

    protocol: str  # json, query, rest-json, rest-xml
    xml_code: str
    json_code: str
    message: str
    status: str


def protocol_of(environ: dict[str, Any]) -> str:
    """The protocol a request speaks, read without its signature: X-Amz-Target is JSON, an Action query, a dated
    path Lambda's REST JSON; anything else S3's REST XML."""
    if environ.get("HTTP_X_AMZ_TARGET"):
        return "json"
    if "Action" in parse_qs(environ.get("QUERY_STRING", "")) or (
        "x-www-form-urlencoded" in environ.get("CONTENT_TYPE", "") and environ.get("REQUEST_METHOD") == "POST"
    ):
        return "query"
    if _LAMBDA_PATH.match(environ.get("PATH_INFO", "")):
        return "rest-json"
    return "rest-xml"


def parameters(header: str) -> dict[str, str]:
    """The ``name=value`` components of an Authorization header after its algorithm, separated by commas,
    whitespace or both (AWS reads ``Credential=... SignedHeaders=... Signature=...`` as it reads them with
    commas)."""
    found: dict[str, str] = {}
    for part in re.split(r"[,\s]+", header.split(" ", 1)[1]) if " " in header.strip() else []:
        name, sep, value = part.partition("=")
        if sep:
            found[name] = value
    return found


def header_problem(environ: dict[str, Any]) -> str | None:
    """Why AWS refuses the request's Authorization header as incomplete, in its words, or None."""
    header = environ.get("HTTP_AUTHORIZATION", "").strip()
    algorithm = header.split(" ", 1)[0]
    if algorithm.startswith("AWS4-") and algorithm != ALGORITHM:
        return UNSUPPORTED.format(algorithm=algorithm)
    found = parameters(header) if algorithm == ALGORITHM else {}
    problems = [
        REQUIRES.format(part=p) for p in ("Credential", "Signature", "SignedHeaders") if not found.get(p)
    ]
    if not (environ.get("HTTP_X_AMZ_DATE") or environ.get("HTTP_DATE")):
        problems.append(REQUIRES_DATE)
    if problems:
        return " ".join(problems) + f" Authorization={header}"
    scope = found["Credential"].split("/")
    if len(scope) != 5 or scope[4] != "aws4_request":
        return TERMINATOR.format(found=scope[-1] if len(scope) > 1 else "")
    return None


def refusal(environ: dict[str, Any]) -> Refusal | None:
    """What AWS answers before checking the signature: an incomplete Authorization header, or an unsigned request
    to a service that takes none; None to go on (a complete header, a presigned URL, an unsigned S3 request)."""
    protocol = protocol_of(environ)
    if environ.get("HTTP_AUTHORIZATION"):
        problem = header_problem(environ)
        if problem is None:
            return None
        if protocol == "rest-xml":
            return Refusal(protocol, "InvalidArgument", "", problem, "400 Bad Request")
        code = "IncompleteSignatureException" if protocol != "query" else "IncompleteSignature"
        return Refusal(
            protocol, code, code, problem, "400 Bad Request" if protocol != "rest-json" else "403 Forbidden"
        )
    if "X-Amz-Credential" in parse_qs(environ.get("QUERY_STRING", "")) or protocol == "rest-xml":
        return None
    if protocol == "json":
        return Refusal(protocol, "", "MissingAuthenticationTokenException", MISSING_TOKEN, "400 Bad Request")
    if protocol == "query":
        return Refusal(protocol, "MissingAuthenticationToken", "", MISSING_TOKEN, "403 Forbidden")
    return Refusal(
        protocol, "", "MissingAuthenticationTokenException", "Missing Authentication Token", "403 Forbidden"
    )
