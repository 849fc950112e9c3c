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
SCOPE_REGION = "Credential should be scoped to a valid region, not '{region}'. "
SCOPE_SERVICE = "Credential should be scoped to correct service: '{service}'. "
S3_REGION = "The authorization header is malformed; the region '{region}' is wrong; expecting '{expected}'"
S3_QUERY_REGION = (
    "Error parsing the X-Amz-Credential parameter; the region '{region}' is wrong; expecting '{expected}'"
)
# The signing name of each service the local AWS serves, by what a request names without its signature: a JSON
# service's X-Amz-Target prefix, a query service's Version (botocore's models: metadata targetPrefix, apiVersion
# and signingName; tests/unit/test_local_scope.py holds the two tables to them).
TARGET_SIGNING_NAMES = {
    "DynamoDB_20120810": "dynamodb",
    "DynamoDBStreams_20120810": "dynamodb",
    "Kinesis_20131202": "kinesis",
    "Logs_20140328": "logs",
    "AmazonSSM": "ssm",
    "TrentService": "kms",
    "GraniteServiceVersion20100801": "monitoring",
}
QUERY_SIGNING_NAMES = {
    "2011-06-15": "sts",
    "2010-05-15": "cloudformation",
    "2010-05-08": "iam",
    "2010-08-01": "monitoring",
}
# AWS's region names, as botocore's partitions describe them (endpoints.json: each partition's regionRegex).
_REGION_PATTERNS: list[re.Pattern[str]] = []


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


def signing_name(environ: dict[str, Any]) -> str | None:
    """The service a request is for, read from the request itself (never from its signature's scope): the
    signing name its scope must carry; None where the request does not say (S3's REST API, an unknown target)."""
    protocol = protocol_of(environ)
    if protocol == "json":
        return TARGET_SIGNING_NAMES.get(environ.get("HTTP_X_AMZ_TARGET", "").split(".", 1)[0])
    if protocol == "rest-json":
        return "lambda"
    if protocol == "query":
        version = parse_qs(environ.get("QUERY_STRING", "")).get("Version", [""])[0]
        if not version and environ.get("REQUEST_METHOD") == "POST":
            return None  # in the form body: the service reads it; moto's router still needs a signing name
        return QUERY_SIGNING_NAMES.get(version)
    return None


def valid_region(region: str) -> bool:
    """Whether ``region`` is a name AWS's partitions allow (botocore's endpoints data)."""
    if not _REGION_PATTERNS:
        from botocore.loaders import create_loader

        partitions = create_loader().load_data("endpoints")["partitions"]
        _REGION_PATTERNS.extend(re.compile(p["regionRegex"]) for p in partitions)
        _REGION_PATTERNS.extend(
            re.compile(re.escape(name) + "$") for p in partitions for name in p.get("regions", {})
        )
    return any(pattern.match(region) for pattern in _REGION_PATTERNS)


def scope_problem(environ: dict[str, Any], region: str, service: str) -> str | None:
    """What AWS answers a signature scoped to a region that is none or to another service than the request's
    (both, in that order, as DynamoDB names them together), or None."""
    problems = []
    if not valid_region(region):
        problems.append(SCOPE_REGION.format(region=region))
    wanted = signing_name(environ)
    if wanted is not None and service != wanted:
        problems.append(SCOPE_SERVICE.format(service=wanted))
    return "".join(problems) or None
