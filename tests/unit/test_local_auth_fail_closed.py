"""The local AWS's permission checks fail closed: a check that raises refuses the request with the service's
500 (InternalFailure; S3's InternalError) naming the check, never an AccessDenied and never the service's answer."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from local.auth import middleware, principals

pytestmark = pytest.mark.unit

# Dated now: a request dated more than 15 minutes away is refused before any check runs.
NOW = datetime.now(UTC)
SCOPE = "AKIDEXAMPLE/" + NOW.strftime("%Y%m%d") + "/us-east-1/{service}/aws4_request"


def _environ(service: str, target: str | None, body: bytes, path: str = "/") -> dict[str, Any]:
    environ = {
        "PATH_INFO": path,
        "REQUEST_METHOD": "POST",
        "QUERY_STRING": "",
        "HTTP_AUTHORIZATION": f"AWS4-HMAC-SHA256 Credential={SCOPE.format(service=service)}, "
        "SignedHeaders=host;x-amz-date, Signature=x",
        "HTTP_X_AMZ_DATE": NOW.strftime("%Y%m%dT%H%M%SZ"),
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
        "wsgi.url_scheme": "https",
    }
    if target:
        environ["HTTP_X_AMZ_TARGET"] = target
    return environ


def _call(environ: dict[str, Any]) -> tuple[str, dict[str, str], bytes, list[str]]:
    reached: list[str] = []

    def service(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        reached.append("service")
        start_response("200 OK", [])
        return [b"{}"]

    answer: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]]) -> None:
        answer["status"], answer["headers"] = status, dict(headers)

    body = b"".join(middleware.AuthMiddleware(service)(environ, start_response))
    return answer["status"], answer["headers"], body, reached


def _broken(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("a bug in the check")


def test_a_json_service_check_that_raises_answers_internal_failure_and_never_reaches_the_service(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN a permission check that raises (here: resolving the caller)
    monkeypatch.setattr(principals, "resolve", _broken)
    body = json.dumps({"TableName": "items-dev", "Key": {"pk": {"S": "a"}}}).encode()
    # WHEN a signed GetItem arrives
    status, headers, data, reached = _call(_environ("dynamodb", "DynamoDB_20120810.GetItem", body))
    # THEN it is refused with a 500 InternalFailure naming the check, and DynamoDB never sees it
    assert status.startswith("500") and reached == []
    error = json.loads(data)
    assert error["__type"].endswith("#InternalFailure")
    assert (
        "permission check of dynamodb:GetItem failed (RuntimeError: a bug in the check)" in error["Message"]
    )
    assert "AccessDenied" not in data.decode()


def test_an_s3_check_that_raises_answers_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(principals, "resolve", _broken)
    environ = _environ("s3", None, b"", path="/blobs/doc/v1/a.bin")
    environ["REQUEST_METHOD"] = "GET"
    status, _, data, reached = _call(environ)
    assert status.startswith("500") and reached == []
    assert b"<Code>InternalError</Code>" in data and b"AccessDenied" not in data
