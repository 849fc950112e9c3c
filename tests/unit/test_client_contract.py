"""doctable.client keeps copies of the contract's names (it must not import contract/): they are equal, the keys
it makes are ones the consumer owns, and it reads a deployment from the stack outputs the stack writes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from stream_consumer.domain import key_refusal, prefix_problem
from stream_consumer.domain import record_prefix as consumer_prefix

from contract import names
from contract.knobs import BLOB_ROOT_RE, KNOB_DEFAULTS, STACK_PREFIX
from doctable.client import ConfigurationError, Deployment, DocClient, ValidationError, rules
from tests.support import ops

REGION = ops.REGION


def test_the_copied_names_are_the_contracts() -> None:
    assert (rules.PARTITION_KEY, rules.SORT_KEY) == (names.PARTITION_KEY, names.SORT_KEY)
    assert rules.BLOBS_ATTRIBUTE == names.BLOBS_ATTRIBUTE
    assert rules.TTL_ATTRIBUTE == names.TTL_ATTRIBUTE
    assert rules.GSI_KEYS == (names.GSI_PARTITION_KEY, names.GSI_SORT_KEY)
    assert (rules.OUT_TABLE_NAME, rules.OUT_BLOB_BUCKET, rules.OUT_KNOBS) == (
        names.OUT_TABLE_NAME,
        names.OUT_BLOB_BUCKET,
        names.OUT_KNOBS,
    )
    assert rules.STACK_PREFIX == STACK_PREFIX
    assert KNOB_DEFAULTS["table_base"] == rules.DEFAULT_TABLE_BASE
    assert rules.BLOB_ROOT_KNOB in KNOB_DEFAULTS
    assert KNOB_DEFAULTS[rules.BLOB_ROOT_KNOB] == rules.DEFAULT_BLOB_ROOT
    assert rules.BLOB_ROOT_RE.pattern == BLOB_ROOT_RE.pattern


@pytest.mark.parametrize(("env", "base"), [("stg", "items"), ("prod", "orders-eu")])
def test_the_stack_name_is_the_one_the_app_deploys(env: str, base: str) -> None:
    assert rules.stack_name(env, base) == ops.config_of(env=env, table_base=base).stack_name


@pytest.mark.parametrize("root", ["", "docs/", "a/b-c/"])
@pytest.mark.parametrize(
    ("pk", "sk"), [("invoice#42", "v1"), ("tenant:7", "2024-01-01T00:00:00Z"), ("é", "ß")]
)
def test_the_keys_the_client_makes_are_ones_the_consumer_owns(root: str, pk: str, sk: str) -> None:
    # GIVEN a key the client makes for a blob of (pk, sk)
    rules.check_blob_key_parts(pk, sk)
    key = rules.fresh_key(root, pk, sk, "scan.pdf")
    # THEN the consumer finds it in the record's own prefix and would delete it when the record drops it
    assert rules.record_prefix(root, pk, sk) == consumer_prefix(root, pk, sk)
    assert key_refusal(key, consumer_prefix(root, pk, sk), prefix_problem(pk, sk)) is None


@pytest.mark.parametrize(
    ("pk", "sk"), [("a/b", "c"), ("a", "b/c"), (".", "x"), ("x", ".."), ("a\\b", "c"), ("a\x01", "c")]
)
def test_the_client_refuses_blobs_for_every_key_the_consumer_cannot_own(pk: str, sk: str) -> None:
    assert prefix_problem(pk, sk) is not None
    with pytest.raises(ValidationError):
        rules.check_blob_key_parts(pk, sk)


@pytest.fixture
def cloudformation(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        session = boto3.session.Session(region_name=REGION)
        yield session


def test_from_stack_reads_the_table_the_bucket_and_the_recorded_blob_root(cloudformation: Any) -> None:
    # GIVEN a stack deployed with blob_root=docs/ (its Knobs output records it)
    session = cloudformation
    config = ops.config_of(env="stg", table_base="orders", stream="new-and-old", blob_root="docs/")
    outputs = ops.deploy(session.client, config, with_bucket=True)

    # WHEN the client is configured from the environment's stack
    docs = DocClient.from_stack("stg", table_base="orders", session=session)

    # THEN it has the stack's table, bucket and blob root, and the bucket must be the stack's account's
    assert docs.deployment == Deployment(
        outputs[names.OUT_TABLE_NAME], outputs[names.OUT_BLOB_BUCKET], "docs/", "123456789012"
    )
    # AND a blob_root that disagrees with the stack's is refused, one that agrees accepted
    with pytest.raises(ConfigurationError, match="blob_root 'other/' differs from 'docs/'"):
        DocClient.from_stack("stg", table_base="orders", session=session, blob_root="other/")
    assert (
        DocClient.from_stack(
            stack_name=config.stack_name, session=session, blob_root="docs/"
        ).deployment.blob_root
        == "docs/"
    )


def test_from_stack_of_a_stack_without_its_knobs_takes_the_given_root(cloudformation: Any) -> None:
    session = cloudformation
    config = ops.config_of(env="dev", table_base="old", stream="new-and-old")
    ops.deploy(session.client, config, with_bucket=True, record_knobs=False)
    assert DocClient.from_stack("dev", table_base="old", session=session).deployment.blob_root == ""
    assert (
        DocClient.from_stack("dev", table_base="old", session=session, blob_root="b/").deployment.blob_root
        == "b/"
    )


def test_from_stack_of_a_missing_stack_says_which(cloudformation: Any) -> None:
    with pytest.raises(
        ConfigurationError, match=r"^configure of doctable: cannot read stack doctable-items-uat: "
    ):
        DocClient.from_stack("uat", session=cloudformation)
    with pytest.raises(ConfigurationError, match="give env"):
        DocClient.from_stack(session=cloudformation)


def test_outputs_without_a_table_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="stack X has no TableName output"):
        Deployment.from_outputs({names.OUT_BLOB_BUCKET: "b"}, stack="stack X")
    assert Deployment.from_outputs({names.OUT_TABLE_NAME: "t"}).blob_bucket is None
