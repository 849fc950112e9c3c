"""The local AWS over TLS: aws:SecureTransport is how the request arrived, so the blob bucket's TLS-only policy
(CDK's enforceSSL) refuses a plain-HTTP request with AWS's message and lets the same request over HTTPS through.

The session's local AWS serves HTTPS on its endpoint and, for this proof only, plain HTTP on a second port
(tests/support/localaws.py).
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from local import api
from tests.support import localaws as lt

pytestmark = [pytest.mark.integration, pytest.mark.iam, pytest.mark.timeout(600)]
DEPLOYER = f"arn:aws:iam::{lt.ACCOUNT}:user/doctable-local-deployer"


@pytest.fixture(scope="module", autouse=True)
def enforced(local_aws: lt.LocalAWS) -> None:
    lt.require_enforced(local_aws)


def _tls_only_statement(policy: str) -> dict[str, object]:
    return next(
        s
        for s in json.loads(policy)["Statement"]
        if s["Effect"] == "Deny" and s.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
    )


def test_blob_bucket_denies_plain_http_and_allows_https(
    local_aws: lt.LocalAWS, full_stack: lt.Deployed
) -> None:
    # GIVEN the deployed blob bucket, whose policy holds the TLS-only deny, and the admin deployer
    bucket = full_stack.outputs["BlobBucketName"]
    https = local_aws.client("s3")
    assert _tls_only_statement(https.get_bucket_policy(Bucket=bucket)["Policy"])
    http = local_aws.client("s3", url=local_aws.http_url)
    key = "tls-proof/object.txt"

    # WHEN the admin writes over HTTPS THEN it is allowed (AdministratorAccess, no deny applies)
    https.put_object(Bucket=bucket, Key=key, Body=b"over TLS")
    assert https.get_object(Bucket=bucket, Key=key)["Body"].read() == b"over TLS"

    # WHEN the same principal does the same over plain HTTP THEN the bucket policy's explicit deny refuses it
    for action, call in (
        ("s3:PutObject", lambda: http.put_object(Bucket=bucket, Key=key, Body=b"in clear")),
        ("s3:GetObject", lambda: http.get_object(Bucket=bucket, Key=key)),
        ("s3:DeleteObject", lambda: http.delete_object(Bucket=bucket, Key=key)),
    ):
        with pytest.raises(ClientError) as caught:
            call()
        error = caught.value.response["Error"]
        assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
        assert error["Code"] == "AccessDenied"
        assert error["Message"] == (
            f"User: {DEPLOYER} is not authorized to perform: {action} on resource: "
            f'"arn:aws:s3:::{bucket}/{key}" with an explicit deny in a resource-based policy'
        )
    with pytest.raises(ClientError) as listing:
        http.list_objects_v2(Bucket=bucket)
    assert listing.value.response["Error"]["Code"] == "AccessDenied"

    # THEN the object is as the HTTPS write left it, and HTTPS still deletes it
    assert https.get_object(Bucket=bucket, Key=key)["Body"].read() == b"over TLS"
    https.delete_object(Bucket=bucket, Key=key)
    assert https.list_objects_v2(Bucket=bucket, Prefix="tls-proof/")["KeyCount"] == 0


def test_env_exports_https_and_the_ca_bundle(local_aws: lt.LocalAWS) -> None:
    lines = api.env_lines(local_aws.info.port, local_aws.directory)
    env = dict(line.removeprefix("export ").split("=", 1) for line in lines)
    assert env["AWS_ENDPOINT_URL"] == local_aws.info.url == f"https://localhost:{local_aws.info.port}"
    assert env["AWS_CA_BUNDLE"] == local_aws.ca_bundle == local_aws.env["AWS_CA_BUNDLE"]
    assert Path(env["AWS_CA_BUNDLE"]).read_text().startswith("-----BEGIN CERTIFICATE-----")


def test_plain_http_on_the_tls_port_is_refused_and_the_server_keeps_answering(local_aws: lt.LocalAWS) -> None:
    # WHEN a client speaks plain HTTP to the HTTPS endpoint
    with socket.create_connection(("127.0.0.1", local_aws.info.port), timeout=10) as raw:
        raw.sendall(b"GET /_doctable/health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        answer = raw.recv(4096)
    # THEN it gets no HTTP answer (the handshake fails), and the server still answers over TLS
    assert not answer.startswith(b"HTTP/")
    assert local_aws.client("sts").get_caller_identity()["Arn"] == DEPLOYER
