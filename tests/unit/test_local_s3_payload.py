"""The local AWS checks an S3 request's body and a signature's scope as AWS does (local/auth/payload.py,
local/auth/signing.py, through the auth middleware): the chunk and trailer signatures of AWS's own published
examples hold and a changed byte does not; a stated payload hash, a checksum and a Content-MD5 are the body's; a
scope names a real region and the request's service, and an S3 request its bucket's region."""

from __future__ import annotations

import base64
import hashlib
import io
import zlib
from typing import Any

import boto3
import botocore.auth
import botocore.session
import pytest
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from local.auth import middleware, payload, signing, sigv4
from tests.support import signed
from tests.support.signed import environ

pytestmark = pytest.mark.unit

HOST = "127.0.0.1:4566"
keys = pytest.fixture(signed.iam_keys)

# The example of the S3 API Reference's pages "Signature Calculations for the Authorization Header: Transferring
# Payload in Multiple Chunks" and "... for trailing headers": 65,536 and 1,024 bytes of 'a' and the final chunk.
EXAMPLE_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
EXAMPLE_DATE = "20130524T000000Z"
EXAMPLE_SCOPE = "20130524/us-east-1/s3/aws4_request"
CHUNKED = (
    "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9",
    (
        "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
        "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
        "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
    ),
    "",
)
TRAILING = (
    "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e",
    (
        "b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2",
        "1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7",
        "2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992",
    ),
    "x-amz-checksum-crc32c:sOO8/Q==\r\n"
    "x-amz-trailer-signature:d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435\r\n",
)


def example(
    seed: str, signatures: tuple[str, ...], trailer: str
) -> tuple[dict[str, str], bytes, payload.Chain]:
    body = (
        f"10000;chunk-signature={signatures[0]}\r\n".encode() + b"a" * 65536
        + f"\r\n400;chunk-signature={signatures[1]}\r\n".encode() + b"a" * 1024
        + f"\r\n0;chunk-signature={signatures[2]}\r\n{trailer}\r\n".encode()
    )  # fmt: skip
    form = payload.SIGNED_CHUNKS_TRAILER if trailer else payload.SIGNED_CHUNKS
    headers = {"x-amz-content-sha256": form, "x-amz-decoded-content-length": "66560"}
    if trailer:
        headers["x-amz-trailer"] = "x-amz-checksum-crc32c"
    key = sigv4.signing_key(EXAMPLE_SECRET, EXAMPLE_SCOPE)
    return headers, body, payload.Chain(key, EXAMPLE_DATE, EXAMPLE_SCOPE, seed)


def code(refusal: payload.Refusal | None) -> str | None:
    return None if refusal is None else refusal.code


@pytest.mark.parametrize("published", [CHUNKED, TRAILING], ids=["chunks", "chunks-and-trailer"])
def test_the_published_chunked_examples_hold_and_a_changed_byte_does_not(published: Any) -> None:
    # GIVEN AWS's published example of a chunked upload (with and without a signed trailer)
    headers, body, chain = example(*published)
    # THEN its chunk signatures (and the trailer's) hold as published
    assert len(body) == (66824 if not published[2] else 66946)  # 66,824: the page's Content-Length
    assert payload.check(headers, body, chain) is None
    # WHEN one byte of the data changes, or the final chunk is cut off, or a chunk is signed with another key
    changed = body.replace(b"a" * 1024, b"a" * 1023 + b"b")
    other = payload.Chain(
        sigv4.signing_key("another", EXAMPLE_SCOPE), EXAMPLE_DATE, EXAMPLE_SCOPE, chain.seed
    )
    # THEN S3's answers: the signature does not match, or the body is incomplete
    assert code(payload.check(headers, changed, chain)) == "SignatureDoesNotMatch"
    assert code(payload.check(headers, body[: body.index(b"\r\n0;")], chain)) == "IncompleteBody"
    assert code(payload.check(headers, body, other)) == "SignatureDoesNotMatch"
    # AND a signed form without a signed head to chain from is refused (a presigned URL's body)
    assert code(payload.check(headers, body, None)) == "SignatureDoesNotMatch"


def test_a_trailer_is_signed_and_its_checksum_is_the_bodys() -> None:
    # GIVEN the published trailing-header example
    headers, body, chain = example(*TRAILING)
    # WHEN its trailer's checksum is edited (the trailer signature no longer holds)
    edited = body.replace(b"sOO8/Q==", b"AAAAAA==")
    assert code(payload.check(headers, edited, chain)) == "SignatureDoesNotMatch"
    # AND an unsigned trailer states a wrong checksum, or none where x-amz-trailer announced one
    unsigned = {**headers, "x-amz-content-sha256": payload.UNSIGNED_TRAILER}
    wrong = _aws_chunked(b"a" * 66560, "x-amz-checksum-crc32c:AAAAAA==")
    right = _aws_chunked(b"a" * 66560, "x-amz-checksum-crc32c:sOO8/Q==")
    # THEN BadDigest for the wrong value, IncompleteBody for the missing one; the right value passes
    assert payload.check(unsigned, right, None) is None
    assert code(payload.check(unsigned, wrong, None)) == "BadDigest"
    assert code(payload.check(unsigned, _aws_chunked(b"a" * 66560, ""), None)) == "IncompleteBody"


def _aws_chunked(data: bytes, trailer: str) -> bytes:
    """An unsigned aws-chunked body as botocore sends it (one chunk, then the trailer)."""
    return f"{len(data):x}\r\n".encode() + data + f"\r\n0\r\n{trailer}\r\n\r\n".encode()


def test_the_checksums_are_the_crc_catalogues_and_hashlibs() -> None:
    # The check values of "123456789" (the CRC catalogue: CRC-32C/ISCSI, CRC-64/NVME) and zlib's and hashlib's
    check = b"123456789"
    assert payload.CHECKSUMS["crc32c"](check).hex() == "e3069283"
    assert payload.CHECKSUMS["crc64nvme"](check).hex() == "ae8b14860a799888"
    assert payload.CHECKSUMS["crc32"](check) == zlib.crc32(check).to_bytes(4, "big")
    assert payload.CHECKSUMS["sha256"](check) == hashlib.sha256(check).digest()


def s3_put(creds: Credentials, body: bytes, headers: dict[str, str] | None = None, sent: bytes | None = None,
           region: str = "us-east-1") -> dict[str, Any]:  # fmt: skip
    """A PUT botocore signed over ``body`` (a signed payload), sent with ``sent`` as its body."""
    request = AWSRequest("PUT", f"http://{HOST}/blobs/k", data=body, headers=headers or {})
    botocore.auth.S3SigV4Auth(creds, "s3", region).add_auth(request)
    env = environ(request)
    if sent is not None:
        env.update({"wsgi.input": io.BytesIO(sent), "CONTENT_LENGTH": str(len(sent))})
    return env


def test_a_signed_s3_body_is_checked_against_its_hash_its_checksum_and_its_md5(
    keys: dict[str, Credentials],
) -> None:
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="blobs")
    user = keys["user"]
    crc = base64.b64encode(zlib.crc32(b"hello").to_bytes(4, "big")).decode()
    md5 = base64.b64encode(hashlib.md5(b"hello", usedforsecurity=False).digest()).decode()
    # GIVEN a body whose hash, CRC32 and MD5 are right: it reaches S3
    assert signed.through(middleware.AuthMiddleware, s3_put(user, b"hello", {"x-amz-checksum-crc32": crc,
                          "Content-MD5": md5}))[2]  # fmt: skip
    cases = {
        # a body other than the one signed
        "XAmzContentSHA256Mismatch": s3_put(user, b"hello", sent=b"HELLO"),
        "BadDigest": s3_put(user, b"hello", {"x-amz-checksum-crc32": "AAAAAA=="}),
        "InvalidDigest": s3_put(user, b"hello", {"Content-MD5": "not-an-md5"}),
    }
    for expected, env in cases.items():
        status, answer, reached = signed.through(middleware.AuthMiddleware, env)
        # THEN each is S3's 400 with its code, and S3 never sees it
        assert (status[:3], f"<Code>{expected}</Code>" in answer.decode(), reached) == ("400", True, False)
    wrong_md5 = s3_put(user, b"hello", {"Content-MD5": base64.b64encode(b"0" * 16).decode()})
    assert b"<Code>BadDigest</Code>" in signed.through(middleware.AuthMiddleware, wrong_md5)[1]


def test_a_scope_names_a_real_region_and_the_requests_service(keys: dict[str, Credentials]) -> None:
    user = keys["user"]

    def dynamodb(region: str, service: str) -> str:
        request = AWSRequest("POST", f"http://{HOST}/", data=b"{}", headers={
            "X-Amz-Target": "DynamoDB_20120810.ListTables", "Content-Type": "application/x-amz-json-1.0"})  # fmt: skip
        botocore.auth.SigV4Auth(user, service, region).add_auth(request)
        status, answer, _ = signed.through(middleware.AuthMiddleware, environ(request))
        return status[:3] + " " + answer.decode()

    # WHEN a DynamoDB call is signed for a region that is none, for S3, or both
    # THEN InvalidSignatureException naming each, in DynamoDB's order
    assert "Credential should be scoped to a valid region, not 'xx-nowhere-1'. " in dynamodb(
        "xx-nowhere-1", "dynamodb"
    )
    assert "Credential should be scoped to correct service: 'dynamodb'. " in dynamodb("us-east-1", "s3")
    both = dynamodb("c", "kinesis")
    assert both.startswith("400") and "InvalidSignatureException" in both
    assert "not 'c'. Credential should be scoped to correct service: 'dynamodb'. " in both
    # AND in another real region it is a region's request (each region its own tables)
    assert dynamodb("eu-west-1", "dynamodb").startswith("200")


def test_an_s3_request_signed_for_another_region_than_its_buckets_names_the_region(
    keys: dict[str, Credentials],
) -> None:
    # GIVEN a bucket in eu-west-1
    boto3.client("s3", region_name="eu-west-1").create_bucket(
        Bucket="blobs", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}
    )
    # WHEN a PUT into it is signed for us-east-1
    status, answer, reached = signed.through(middleware.AuthMiddleware, s3_put(keys["user"], b"hello"))
    # THEN AuthorizationHeaderMalformed with the bucket's region (what botocore's redirect reads), never stored
    assert (status[:3], reached) == ("400", False)
    assert "<Code>AuthorizationHeaderMalformed</Code>" in answer.decode()
    assert "<Region>eu-west-1</Region>" in answer.decode()
    # AND signed for eu-west-1 it is stored
    assert signed.through(middleware.AuthMiddleware, s3_put(keys["user"], b"hello", region="eu-west-1"))[2]


def test_the_signing_names_are_botocores() -> None:
    # The tables that read a request's service without its signature, held to botocore's models
    session = botocore.session.get_session()
    models = {
        name: session.get_service_model(name).metadata
        for name in (
            "dynamodb",
            "dynamodbstreams",
            "kinesis",
            "logs",
            "ssm",
            "kms",
            "cloudwatch",
            "sts",
            "cloudformation",
            "iam",
        )  # fmt: skip
    }
    by_target = {
        m["targetPrefix"]: m.get("signingName", m["endpointPrefix"])
        for m in models.values()
        if "targetPrefix" in m
    }
    by_version = {
        m["apiVersion"]: m.get("signingName", m["endpointPrefix"])
        for m in models.values()
        if "query" in m.get("protocols", [m.get("protocol")])
    }
    assert by_target == signing.TARGET_SIGNING_NAMES
    assert by_version == signing.QUERY_SIGNING_NAMES


def test_a_bucket_nobody_owns_is_no_such_bucket_whoever_asks(keys: dict[str, Credentials]) -> None:
    # GIVEN a principal with no S3 right at all, and no bucket named "unclaimed"
    iam = boto3.client("iam", region_name="us-east-1")
    iam.create_user(UserName="nobody")
    key = iam.create_access_key(UserName="nobody")["AccessKey"]
    nobody = Credentials(key["AccessKeyId"], key["SecretAccessKey"])
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="claimed")

    def head(bucket: str) -> tuple[str, bool]:
        request = AWSRequest("HEAD", f"http://{HOST}/{bucket}")
        botocore.auth.S3SigV4Auth(nobody, "s3", "us-east-1").add_auth(request)
        status, _, reached = signed.through(middleware.AuthMiddleware, environ(request))
        return status[:3], reached

    # WHEN it asks for the missing bucket THEN S3 answers it (NoSuchBucket, 404): nothing to authorize against
    assert head("unclaimed")[1] is True
    # AND a bucket that exists is refused to it (AccessDenied), as S3 answers a bucket of someone else's
    assert head("claimed") == ("403", False)
