"""What the local AWS answers before it looks at a signature, as AWS does (local/auth/signing.py): an incomplete
Authorization header is IncompleteSignatureException and reaches no service (a DeleteTable signed without
``Credential=`` deletes nothing); an unsigned call to a service that needs a signature is MissingAuthentication
Token; an unsigned S3 request is the anonymous principal, let through only by a public bucket policy."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from local.auth import middleware, signing
from tests.support import signed

pytestmark = pytest.mark.unit

DATE = {"HTTP_X_AMZ_DATE": "20261204T000000Z"}


def environ(
    method: str = "POST", path: str = "/", query: str = "", body: bytes = b"", **headers: str
) -> dict[str, Any]:
    return {
        "PATH_INFO": path,
        "REQUEST_METHOD": method,
        "QUERY_STRING": query,
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
        "wsgi.url_scheme": "https",
        **headers,
    }


def call(env: dict[str, Any]) -> tuple[str, bytes, bool]:
    return signed.through(middleware.AuthMiddleware, env)


def test_a_header_without_credential_deletes_nothing() -> None:
    # GIVEN a DeleteTable whose Authorization header names the scope without Credential=
    header = "AWS4-HMAC-SHA256 K/20250101/us-east-1/dynamodb/aws4_request"
    env = environ(body=b'{"TableName": "items-dev"}', HTTP_AUTHORIZATION=header,
                  HTTP_X_AMZ_TARGET="DynamoDB_20120810.DeleteTable", **DATE)  # fmt: skip
    status, body, reached = call(env)
    # THEN it is refused as AWS refuses it, naming every part missing, and never reaches DynamoDB
    answer = json.loads(body)
    assert (status, answer["__type"].split("#")[1], reached) == (
        "400 Bad Request",
        "IncompleteSignatureException",
        False,
    )
    for part in ("Credential", "Signature", "SignedHeaders"):
        assert signing.REQUIRES.format(part=part) in answer["Message"]


@pytest.mark.parametrize(
    ("header", "date", "expected"),
    [
        ("AWS4-HMAC-SHA512 Credential=K/20250101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=x",
         DATE, signing.UNSUPPORTED.format(algorithm="AWS4-HMAC-SHA512")),
        ("AWS4-HMAC-SHA256 Credential=K/20250101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=x",
         {}, signing.REQUIRES_DATE),
        ("AWS4-HMAC-SHA256 Credential=K/20250101/us-east-1/dynamodb, SignedHeaders=host, Signature=x",
         DATE, signing.TERMINATOR.format(found="dynamodb")),
        ("Basic dXNlcjpwYXNz", DATE, signing.REQUIRES.format(part="Credential")),
    ],
)  # fmt: skip
def test_an_incomplete_header_is_refused_in_aws_words(
    header: str, date: dict[str, str], expected: str
) -> None:
    env = environ(HTTP_AUTHORIZATION=header, HTTP_X_AMZ_TARGET="DynamoDB_20120810.ListTables", **date)
    status, body, reached = call(env)
    assert status == "400 Bad Request" and not reached
    assert expected in json.loads(body)["Message"]


def test_an_unsigned_call_to_a_service_that_needs_a_signature_is_missing_its_token() -> None:
    status, body, reached = call(
        environ(HTTP_X_AMZ_TARGET="DynamoDB_20120810.Scan", body=b'{"TableName": "t"}')
    )
    assert (status, json.loads(body)["__type"].split("#")[1], reached) == (
        "400 Bad Request", "MissingAuthenticationTokenException", False)  # fmt: skip
    status, body, reached = call(environ(method="GET", query="Action=ListStacks&Version=2010-05-15"))
    assert status == "403 Forbidden" and b"<Code>MissingAuthenticationToken</Code>" in body and not reached


@pytest.fixture
def buckets(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x")):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    from local import state

    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="private-blobs")
        s3.create_bucket(Bucket="public-site")
        public = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": "*",
                  "Action": "s3:GetObject", "Resource": "arn:aws:s3:::public-site/*"}]}  # fmt: skip
        s3.put_bucket_policy(Bucket="public-site", Policy=json.dumps(public))
        monkeypatch.setattr(state, "ACCOUNT_ID", "123456789012")
        yield s3


def test_an_unsigned_s3_request_is_the_anonymous_principal(buckets: Any) -> None:
    # WHEN unsigned requests write to a private bucket, read it, and read a bucket whose policy is public
    put = call(environ(method="PUT", path="/private-blobs/a.txt", body=b"x", HTTP_HOST="localhost"))
    get = call(environ(method="GET", path="/private-blobs/a.txt", HTTP_HOST="localhost"))
    public = call(environ(method="GET", path="/public-site/index.html", HTTP_HOST="localhost"))
    public_put = call(environ(method="PUT", path="/public-site/index.html", body=b"x", HTTP_HOST="localhost"))
    # THEN only the read the public policy allows goes through; the others are S3's AccessDenied
    for status, body, reached in (put, get, public_put):
        assert status == "403 Forbidden" and b"<Code>AccessDenied</Code>" in body and not reached
    assert public[2] is True
    # AND a public access block that restricts public buckets refuses even what the policy allows
    buckets.put_public_access_block(Bucket="public-site", PublicAccessBlockConfiguration={
        "BlockPublicAcls": True, "IgnorePublicAcls": True, "BlockPublicPolicy": False,
        "RestrictPublicBuckets": True})  # fmt: skip
    assert call(environ(method="GET", path="/public-site/index.html", HTTP_HOST="localhost"))[2] is False
