"""Unit-test fixtures: the stream consumer (moto S3, a freshly imported handler, parsed stdout) and the
operations commands (moto in-process behind the commands' own AWS session)."""

from __future__ import annotations

import importlib
import json
import logging
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import boto3
import pytest
from moto import mock_aws

from contract.iam.lock import lock_bucket
from contract.knobs import KNOB_DEFAULTS
from doctable.core.aws import Aws
from local import patching
from local.services.dynamodb import options as dynamodb_options
from tests.support.moto_seed import put_objects
from tests.support.ops import REGION

CONSUMER_BUCKET = "doctable-blobs-test"
CONSUMER_SERVICE = "doctable-consumer"
CONSUMER_TABLE = "doctable-DocumentTable"  # tests.unit.events.TABLE: the table the test records come from


@pytest.fixture
def consumer_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """GIVEN a Lambda-like environment with fake credentials, tracing off and the consumer's contract set."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_REGION": "eu-west-1",
        "POWERTOOLS_TRACE_DISABLED": "1",
        "POWERTOOLS_METRICS_NAMESPACE": "Doctable",
        "POWERTOOLS_SERVICE_NAME": CONSUMER_SERVICE,
        "BLOB_BUCKET": CONSUMER_BUCKET,
        "BLOB_ROOT": "blobs/",
        "BLOB_PREFIX_CLEANUP": "off",
        "TABLE_NAME": CONSUMER_TABLE,
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@dataclass
class Bucket:
    client: Any
    name: str = CONSUMER_BUCKET

    def put(self, *keys: str) -> None:
        put_objects(self.client, self.name, keys)

    def keys(self) -> set[str]:
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.name)
        return {item["Key"] for page in pages for item in page.get("Contents", [])}


@pytest.fixture
def s3(consumer_env: None) -> Iterator[Bucket]:
    """GIVEN an empty (moto) blob bucket."""
    with mock_aws():
        client = boto3.client("s3", region_name="eu-west-1")
        client.create_bucket(
            Bucket=CONSUMER_BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}
        )
        # The table the consumer reads live items from (empty: no record's item exists any more).
        boto3.client("dynamodb", region_name="eu-west-1").create_table(
            TableName=CONSUMER_TABLE,
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        yield Bucket(client)


def _purge_consumer_modules() -> None:
    for name in [m for m in sys.modules if m == "stream_consumer" or m.startswith("stream_consumer.")]:
        del sys.modules[name]


@pytest.fixture
def load_consumer(
    consumer_env: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[Callable[..., ModuleType]]:
    """Import ``stream_consumer.handler`` afresh (cold start) with extra env vars (``None`` unsets one)."""

    def load(**env: str | None) -> ModuleType:
        for name, value in env.items():
            if value is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, value)
        _purge_consumer_modules()
        module = importlib.import_module("stream_consumer.handler")
        # The Powertools logger is process-wide; point its handler at this test's captured stdout.
        for handler in logging.getLogger(CONSUMER_SERVICE).handlers:
            if isinstance(handler, logging.StreamHandler):
                handler.stream = sys.stdout  # not setStream(): it flushes the previous, closed stream
        return module

    yield load
    _purge_consumer_modules()


@pytest.fixture
def stdout_json(capsys: pytest.CaptureFixture[str]) -> Callable[[], list[dict[str, Any]]]:
    """Parse every JSON line written to stdout so far (Powertools logs and EMF metric blobs)."""

    def read() -> list[dict[str, Any]]:
        lines = capsys.readouterr().out.splitlines()
        return [json.loads(line) for line in lines if line.startswith("{")]

    return read


KNOB_VARIABLES = [name.upper() for name in KNOB_DEFAULTS]


@pytest.fixture
def ops_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """GIVEN fake credentials, a region, no custom endpoint or profile, and no knob set in the environment."""
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_DEFAULT_REGION", *KNOB_VARIABLES):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_REGION", REGION)


@pytest.fixture
def moto_env(ops_env: None) -> Iterator[Aws]:
    """GIVEN ``ops_env`` with moto in-process; the commands' Aws session."""
    # The table options moto lacks (contributor insights, table class, on-demand maximum), as the local AWS has them.
    patching.install(dynamodb_options.PATCHES)
    with mock_aws():
        aws = Aws.connect()
        # the CDK bootstrap's assets bucket, which exists before any deploy: each environment's lock is there
        where = {"LocationConstraint": aws.region} if aws.region != "us-east-1" else None
        bucket = lock_bucket(aws.account, aws.region)
        aws.client("s3").create_bucket(
            Bucket=bucket, **({"CreateBucketConfiguration": where} if where else {})
        )
        yield aws


@pytest.fixture
def local_moto(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """GIVEN moto in-process with the local AWS's adaptations (undone after the test), fake credentials and no
    custom endpoint: boto3 clients made in the test talk to it."""
    from tests.unit.test_local_kinesis_destination import isolated_services

    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x")):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with isolated_services(), mock_aws():
        yield
