"""The local AWS checks a SigV4 signature as AWS does (local/auth/sigv4.py, through the auth middleware): requests
signed by botocore's own signers with the key's secret reach the service; a wrong secret, a request dated 20
minutes ago, an expired presigned URL and an expired session are each refused with the protocol's code."""

from __future__ import annotations

import datetime
import io
from typing import Any

import botocore.auth
import pytest
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from local.auth import middleware
from tests.support import signed
from tests.support.signed import environ

pytestmark = pytest.mark.unit

HOST = "127.0.0.1:4566"


keys = pytest.fixture(signed.iam_keys)


def call(env: dict[str, Any]) -> tuple[str, bytes, bool]:
    return signed.through(middleware.AuthMiddleware, env)


def dynamodb(creds: Credentials, target: str = "ListTables", body: bytes = b"{}") -> AWSRequest:
    request = AWSRequest("POST", f"http://{HOST}/", data=body, headers={
        "X-Amz-Target": f"DynamoDB_20120810.{target}", "Content-Type": "application/x-amz-json-1.0"})  # fmt: skip
    botocore.auth.SigV4Auth(creds, "dynamodb", "us-east-1").add_auth(request)
    return request


def s3_put(creds: Credentials, key: str) -> AWSRequest:
    request = AWSRequest("PUT", f"http://{HOST}/blobs/{key}", data=b"hello")
    botocore.auth.S3SigV4Auth(creds, "s3", "us-east-1").add_auth(request)
    return request


def test_a_request_signed_with_the_keys_secret_reaches_the_service(keys: dict[str, Credentials]) -> None:
    # GIVEN requests botocore signed for DynamoDB, S3 (a key to encode), Lambda (an ARN in the path: encoded
    # twice in the canonical request) and STS (a form body), with a user's key and a session's
    lam = AWSRequest("POST", f"http://{HOST}/2015-03-31/functions/arn%3Aaws%3Alambda%3Aus-east-1%3A123456789012"
                     "%3Afunction%3Acleanup/invocations?Qualifier=%24LATEST", data=b"{}")  # fmt: skip
    botocore.auth.SigV4Auth(keys["user"], "lambda", "us-east-1").add_auth(lam)
    sts = AWSRequest("POST", f"http://{HOST}/", data=b"Action=GetCallerIdentity&Version=2011-06-15",
                     headers={"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"})  # fmt: skip
    botocore.auth.SigV4Auth(keys["session"], "sts", "us-east-1").add_auth(sts)
    requests = [
        dynamodb(keys["user"]),
        dynamodb(keys["session"]),
        s3_put(keys["user"], "a%20b/%C3%BC.txt"),
        lam,
        sts,
    ]
    # WHEN each is sent; THEN each reaches the service
    for request in requests:
        status, body, reached = call(environ(request))
        assert (status, reached) == ("200 OK", True), (request.url, body)


def test_a_wrong_secret_is_refused_in_each_protocols_form(keys: dict[str, Credentials]) -> None:
    # GIVEN the user's key signed with another secret
    wrong = Credentials(keys["user"].access_key, "not-the-secret")
    lam = AWSRequest("GET", f"http://{HOST}/2015-03-31/functions/cleanup")
    botocore.auth.SigV4Auth(wrong, "lambda", "us-east-1").add_auth(lam)
    sts = AWSRequest("POST", f"http://{HOST}/", data=b"Action=GetCallerIdentity&Version=2011-06-15",
                     headers={"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"})  # fmt: skip
    botocore.auth.SigV4Auth(wrong, "sts", "us-east-1").add_auth(sts)
    # WHEN DynamoDB, S3, Lambda and STS get them
    answers = [call(environ(r)) for r in (dynamodb(wrong), s3_put(wrong, "a.txt"), lam, sts)]
    # THEN none reaches its service, each refused with its protocol's code and status
    assert [a[2] for a in answers] == [False] * 4
    assert answers[0][0] == "400 Bad Request" and b"#InvalidSignatureException" in answers[0][1]
    assert answers[1][0] == "403 Forbidden" and b"<Code>SignatureDoesNotMatch</Code>" in answers[1][1]
    assert answers[2][0] == "403 Forbidden" and b"does not match the signature" in answers[2][1]
    assert answers[3][0] == "403 Forbidden" and b"<Code>SignatureDoesNotMatch</Code>" in answers[3][1]
    # AND a body changed after signing is a mismatch too (the body's hash is signed)
    request = dynamodb(keys["user"], "DeleteTable", b'{"TableName": "items-dev"}')
    tampered = environ(request)
    tampered["wsgi.input"] = io.BytesIO(b'{"TableName": "items-prd"}')
    assert call(tampered)[2] is False


def test_a_request_dated_past_the_skew_is_refused(
    keys: dict[str, Credentials], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN requests signed with a clock 20 minutes behind
    past = datetime.datetime.now(datetime.UTC).replace(tzinfo=None) - datetime.timedelta(minutes=20)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: past)
    # WHEN DynamoDB and S3 get them
    ddb = call(environ(dynamodb(keys["user"])))
    s3 = call(environ(s3_put(keys["user"], "a.txt")))
    # THEN DynamoDB says the signature expired, S3 that the time is too skewed
    assert ddb[0] == "400 Bad Request" and b"Signature expired: " in ddb[1] and not ddb[2]
    assert s3[0] == "403 Forbidden" and b"<Code>RequestTimeTooSkewed</Code>" in s3[1] and not s3[2]


def test_a_stale_request_is_refused_before_its_key_is_looked_up(keys: dict[str, Credentials]) -> None:
    # GIVEN requests with an Authorization header whose parts are separated by spaces alone, signed by a key
    # nobody issued, dated 2017 and 3020
    for date, words in (
        ("20170101T010101Z", b"Signature expired: "),
        ("30200101T010101Z", b"Signature not yet"),
    ):
        env = signed.wsgi_environ("POST", f"https://{HOST}/", {
            "Content-Type": "application/x-amz-json-1.0", "X-Amz-Date": date,
            "X-Amz-Target": "DynamoDB_20120810.DescribeEndpoints",
            "Authorization": "AWS4-HMAC-SHA256 Credential=nobody/2/3/4/aws4_request "
                             "SignedHeaders=x-amz-date;host Signature=123",
        }, b"{}")  # fmt: skip
        # THEN the header is read whole, and the date refuses it before the unknown key could
        status, body, reached = call(env)
        assert status == "400 Bad Request" and not reached
        assert b"InvalidSignatureException" in body and words in body


def test_a_presigned_url_holds_until_it_expires(
    keys: dict[str, Credentials], monkeypatch: pytest.MonkeyPatch
) -> None:
    def presigned(expires: int) -> AWSRequest:
        request = AWSRequest("GET", f"http://{HOST}/blobs/report%20v1.pdf")
        botocore.auth.S3SigV4QueryAuth(keys["user"], "s3", "us-east-1", expires=expires).add_auth(request)
        request.url = request.url  # the query holds the signature
        return request

    # GIVEN a URL presigned for 60 s now, and one presigned for 60 s an hour ago
    fresh = presigned(60)
    earlier = datetime.datetime.now(datetime.UTC).replace(tzinfo=None) - datetime.timedelta(hours=1)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: earlier)
    stale = presigned(60)
    # WHEN each is fetched; THEN the fresh one reaches S3, the stale one is "Request has expired"
    assert call(environ(fresh))[2] is True
    status, body, reached = call(environ(stale))
    assert status == "403 Forbidden" and b"<Message>Request has expired</Message>" in body and not reached
    # AND a URL whose signature was edited is refused
    edited = environ(fresh)
    edited["QUERY_STRING"] = edited["QUERY_STRING"].replace("X-Amz-Expires=60", "X-Amz-Expires=600")
    assert b"<Code>SignatureDoesNotMatch</Code>" in call(edited)[1]


def test_an_expired_session_is_refused(keys: dict[str, Credentials], monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN the session's expiration has passed (moto holds it; moved back for the test)
    from moto.sts.models import sts_backends

    for session in sts_backends["123456789012"]["aws"].assumed_roles:
        session.expiration -= datetime.timedelta(hours=1)
    # WHEN it signs a DynamoDB call; THEN AWS's ExpiredTokenException
    status, body, reached = call(environ(dynamodb(keys["session"])))
    assert status == "400 Bad Request" and b"#ExpiredTokenException" in body and not reached
