"""A botocore-signed request as a WSGI server receives it: the environ the local AWS's middleware reads (its raw
path and query as sent, its headers), for tests and the bench that drive the middleware without a socket."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import unquote, urlsplit

import boto3
import pytest
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from moto import mock_aws

ALLOW_ALL = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}


def environ(request: AWSRequest) -> dict[str, Any]:
    """The WSGI environ a server gives for ``request`` as it goes on the wire (a fresh body stream each call)."""
    body = request.body if isinstance(request.body, bytes) else (request.body or "").encode()
    return wsgi_environ(request.method, request.url, dict(request.headers.items()), body)


def wsgi_environ(method: str, url: str, headers: dict[str, str], body: bytes = b"") -> dict[str, Any]:
    """The WSGI environ a server builds from a request to ``url`` with ``headers`` and ``body``."""
    parts = urlsplit(url)
    env: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "PATH_INFO": unquote(parts.path) or "/",
        "QUERY_STRING": parts.query,
        "RAW_URI": parts.path + (f"?{parts.query}" if parts.query else ""),
        "wsgi.input": io.BytesIO(body),
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.url_scheme": parts.scheme,
        "HTTP_HOST": parts.netloc,
    }
    for name, value in headers.items():
        key = name.upper().replace("-", "_")
        env[key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}"] = value
    return env


def through(middleware: Callable[[Any], Any], env: dict[str, Any]) -> tuple[str, bytes, bool]:
    """``env`` sent through ``middleware(service)`` in front of a stub service: (the status answered, the body,
    whether the request reached the service)."""
    reached: list[bool] = []

    def service(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        reached.append(True)
        start_response("200 OK", [])
        return [b"{}"]

    answer: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]]) -> None:
        answer["status"] = status

    body = b"".join(middleware(service)(env, start_response))
    return answer["status"], body, bool(reached)


def iam_keys(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Credentials]]:
    """An IAM user's key and an assumed-role session's, issued by the (in-process) local IAM and STS."""
    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x")):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    from local import state

    with mock_aws():
        iam = boto3.client("iam", region_name="us-east-1")
        iam.create_user(UserName="dev")
        iam.put_user_policy(UserName="dev", PolicyName="all", PolicyDocument=json.dumps(ALLOW_ALL))
        key = iam.create_access_key(UserName="dev")["AccessKey"]
        trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                 "Principal": {"AWS": "arn:aws:iam::123456789012:root"}}]}  # fmt: skip
        role = iam.create_role(RoleName="worker", AssumeRolePolicyDocument=json.dumps(trust))["Role"]
        iam.put_role_policy(RoleName="worker", PolicyName="all", PolicyDocument=json.dumps(ALLOW_ALL))
        session = boto3.client("sts", region_name="us-east-1").assume_role(
            RoleArn=role["Arn"], RoleSessionName="job", DurationSeconds=900
        )["Credentials"]
        monkeypatch.setattr(state, "ACCOUNT_ID", "123456789012")
        yield {
            "user": Credentials(key["AccessKeyId"], key["SecretAccessKey"]),
            "session": Credentials(
                session["AccessKeyId"], session["SecretAccessKey"], session["SessionToken"]
            ),
        }
