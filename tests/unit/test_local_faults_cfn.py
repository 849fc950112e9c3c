"""The local AWS's fault injection on CloudFormation CreateChangeSet (local/faults/middleware.py): a matching
change set is refused as CloudFormation refuses one, in the request's protocol; others pass through."""

from __future__ import annotations

import io
import json
from typing import Any
from urllib.parse import urlencode

import pytest

from local.faults.middleware import FaultMiddleware
from local.faults.spec import FaultSpecError, FaultState

pytestmark = pytest.mark.unit

AUTH = "AWS4-HMAC-SHA256 Credential=AKID/20261202/us-east-1/cloudformation/aws4_request, SignedHeaders=host"


def _environ(params: dict[str, str], *, target: str | None = None) -> dict[str, Any]:
    body = json.dumps(params).encode() if target else urlencode(params).encode()
    environ: dict[str, Any] = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/",
        "HTTP_AUTHORIZATION": AUTH,
        "CONTENT_LENGTH": str(len(body)),
        "CONTENT_TYPE": "application/x-www-form-urlencoded",
        "wsgi.input": io.BytesIO(body),
    }
    if target:
        environ["HTTP_X_AMZ_TARGET"] = target
    return environ


def _call(middleware: FaultMiddleware, environ: dict[str, Any]) -> tuple[str, bytes]:
    answered: list[str] = []
    body = b"".join(middleware(environ, lambda status, headers: answered.append(status)))
    return answered[0], body


def _app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    start_response("200 OK", [])
    return [b"passed:" + environ["wsgi.input"].read()]


@pytest.fixture
def faults() -> tuple[FaultMiddleware, FaultState]:
    state = FaultState()
    rule = {"on": "cloudformation:CreateChangeSet", "action": "validation-error", "limit": 1}
    state.configure({"rules": [{**rule, "id": "imp", "stack": "s", "change_set_type": "IMPORT"}]})
    return FaultMiddleware(_app, progress=dict, state=state), state


def test_a_matching_import_change_set_is_refused_once(faults: tuple[FaultMiddleware, FaultState]) -> None:
    middleware, state = faults
    request = {"Action": "CreateChangeSet", "StackName": "s", "ChangeSetType": "IMPORT"}
    # WHEN an IMPORT change set of the stack is created  THEN it is a ValidationError, as CloudFormation answers
    status, body = _call(middleware, _environ(request))
    assert status == "400 Bad Request"
    assert b"<Code>ValidationError</Code>" in body and b"fault injection" in body
    assert state.snapshot()["counts"]["imp"]["fired"] == 1
    # AND the next one (the limit spent) reaches the server with its body intact
    status, body = _call(middleware, _environ(request))
    assert (status, body) == ("200 OK", b"passed:" + urlencode(request).encode())


@pytest.mark.parametrize(
    "request_params",
    [
        {"Action": "CreateChangeSet", "StackName": "s", "ChangeSetType": "UPDATE"},
        {"Action": "CreateChangeSet", "StackName": "other", "ChangeSetType": "IMPORT"},
        {"Action": "DescribeStacks", "StackName": "s"},
    ],
    ids=["other-type", "other-stack", "other-call"],
)
def test_other_requests_pass(
    faults: tuple[FaultMiddleware, FaultState], request_params: dict[str, str]
) -> None:
    middleware, _ = faults
    assert _call(middleware, _environ(request_params))[0] == "200 OK"


def test_the_json_protocol_gets_a_json_error(faults: tuple[FaultMiddleware, FaultState]) -> None:
    middleware, _ = faults
    environ = _environ({"StackName": "s", "ChangeSetType": "IMPORT"}, target="CloudFormation.CreateChangeSet")
    status, body = _call(middleware, environ)
    assert status == "400 Bad Request" and json.loads(body)["__type"] == "ValidationError"


def test_a_bad_option_is_refused() -> None:
    with pytest.raises(FaultSpecError, match="stack must be a non-empty string"):
        FaultState().configure(
            {"rules": [{"on": "cloudformation:CreateChangeSet", "action": "validation-error", "stack": 3}]}
        )
