"""Clients other than the project's boto3 keep working against the local AWS now that it verifies what AWS verifies:
the AWS SDK for JavaScript v3 (the CDK CLI's SDK; tests/integration/clients/sdk_v3.mjs) and the aws CLI (its own
vendored botocore, its s3 transfer manager). Each writes S3 objects in the payload forms it sends (a signed hash,
aws-chunked with a trailing checksum, a multipart upload), reads them back, calls DynamoDB, and is refused as AWS
refuses it: a checksum that is not the body's (BadDigest) and a wrong secret (each protocol's signature error)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import localaws as lt
from tooling import toolchain

pytestmark = pytest.mark.integration

SCRIPT = Path(__file__).parent / "clients" / "sdk_v3.mjs"
AWS_CLI = Path(sys.executable).parent / "aws"


def _env(local_aws: lt.LocalAWS, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(local_aws.env)
    env.update(extra)
    return env


@pytest.mark.parametrize("listener", ["https", "http"])
def test_the_javascript_sdk_v3_signs_and_is_refused_as_on_aws(local_aws: lt.LocalAWS, listener: str) -> None:
    # GIVEN the SDK's S3 and DynamoDB clients on the TLS listener (its CA trusted) or the plain-HTTP one
    endpoint = local_aws.info.url if listener == "https" else local_aws.http_url
    env = _env(local_aws, NODE_EXTRA_CA_CERTS=local_aws.ca_bundle)
    node = toolchain.find().node
    # WHEN the script writes, reads, sends a wrong checksum and signs with a wrong secret
    done = subprocess.run(
        [str(node), str(SCRIPT), endpoint, f"sdk-v3-{listener}"], env=env, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    # THEN every write and read succeeds, and the refusals are AWS's codes
    assert result["outcomes"] == {
        "s3.create-bucket": "ok",
        "s3.put-string": "ok",
        "s3.put-stream": "ok",
        "s3.get-stream": "ok",
        "s3.put-wrong-checksum": "BadDigest",
        "s3.put-forged": "SignatureDoesNotMatch",
        "dynamodb.list-tables": "ok",
        "dynamodb.list-tables-forged": "InvalidSignatureException",
    }
    # AND the stream body went as aws-chunked with a trailing checksum, the others with their hash signed
    assert result["forms"] == ["<sha256>", "STREAMING-UNSIGNED-PAYLOAD-TRAILER"]


def test_the_aws_cli_signs_and_is_refused_as_on_aws(local_aws: lt.LocalAWS, tmp_path: Path) -> None:
    assert AWS_CLI.exists() or shutil.which("aws"), "the aws CLI is installed by `make setup` (the dev extra)"
    cli = str(AWS_CLI if AWS_CLI.exists() else shutil.which("aws"))
    config = tmp_path / "config"
    # a multipart upload from 5 MiB on (S3's smallest part), no retries of what is refused
    config.write_text("[default]\ns3 =\n  multipart_threshold = 5MB\n  multipart_chunksize = 5MB\n")
    env = _env(local_aws, AWS_CONFIG_FILE=str(config), AWS_MAX_ATTEMPTS="1", AWS_PAGER="")
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(6 * 1024 * 1024))
    small = tmp_path / "small.txt"
    small.write_text("hello")

    def aws(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [cli, "--endpoint-url", local_aws.info.url, *args], env={**env, **extra}, capture_output=True,
            text=True, timeout=120, check=False,
        )  # fmt: skip

    # WHEN it makes a bucket, copies a small file and a multipart one up, and the large one back down
    for args in (
        ("s3", "mb", "s3://cli-blobs"),
        ("s3", "cp", str(small), "s3://cli-blobs/small"),
        ("s3", "cp", str(big), "s3://cli-blobs/big"),
        ("s3", "cp", "s3://cli-blobs/big", str(tmp_path / "back.bin")),
    ):
        done = aws(*args)
        assert done.returncode == 0, (args, done.stderr)
    # THEN what came back is what went up
    assert (tmp_path / "back.bin").read_bytes() == big.read_bytes()
    # AND DynamoDB answers it; a wrong checksum and a wrong secret are refused with AWS's codes
    assert "TableNames" in json.loads(aws("dynamodb", "list-tables", "--output", "json").stdout)
    wrong_sum = aws("s3api", "put-object", "--bucket", "cli-blobs", "--key", "c", "--body", str(small),
                    "--checksum-crc32", "AAAAAA==")  # fmt: skip
    assert wrong_sum.returncode != 0 and "(BadDigest)" in wrong_sum.stderr
    forged = aws("dynamodb", "list-tables", AWS_SECRET_ACCESS_KEY="not-the-secret")
    assert forged.returncode != 0 and "(InvalidSignatureException)" in forged.stderr
    forged_s3 = aws("s3", "cp", str(small), "s3://cli-blobs/x", AWS_SECRET_ACCESS_KEY="not-the-secret")
    assert forged_s3.returncode != 0 and "(SignatureDoesNotMatch)" in forged_s3.stderr
