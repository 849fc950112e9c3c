"""Buckets that are ours: every S3 call of the commands and of the client names the account expected to own the
bucket (``ExpectedBucketOwner``), preflight stops on a bucket name the deploy creates that exists outside the
stack (``bucket.taken``), and the client refuses a bucket of another account (``bucket.not_owned``).

moto does not check ``ExpectedBucketOwner`` (S3 answers 403 to a request naming another account than the
bucket's): the tests assert what is sent, and fakes answer as S3 does. The consumer's calls:
tests/unit/test_consumer_handler.py; end to end on the local AWS: tests/integration/test_client.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from contract import names
from doctable.capabilities.ownership import bucket_findings, created_bucket_names
from doctable.capabilities.protocol import observe
from doctable.cli import main
from doctable.client import BucketOwnerError, ConfigurationError, DocClient, RetryPolicy
from doctable.client.errors import BUCKET_NOT_OWNED
from doctable.core.aws import Aws
from doctable.core.context import describe_stack
from doctable.lifecycle.teardown import empty_bucket
from doctable.operate.replay import run_replay
from tests.support import ops as ot
from tests.support.ops import REGION

pytestmark = pytest.mark.unit

ACCOUNT = "123456789012"  # moto's
OTHER = "210987654321"
CONSUMER = {"stream": "new-and-old", "consumer": "builtin"}
FAILURES = f"items-dev-{ACCOUNT}-{REGION}-failures"
BLOBS = f"items-dev-{ACCOUNT}-{REGION}-blobs"


def owners_sent(s3: Any) -> list[tuple[str, str | None]]:
    """(operation, its x-amz-expected-bucket-owner header) of each request ``s3`` sends from now on."""
    sent: list[tuple[str, str | None]] = []

    def record(params: dict[str, Any], model: Any, **_: Any) -> None:
        sent.append((model.name, params["headers"].get("x-amz-expected-bucket-owner")))

    s3.meta.events.register("before-call.s3", record)
    return sent


def make_bucket(aws: Aws, name: str) -> None:
    aws.client("s3").create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": REGION})


# ------------------------------------------------------------------------------------------ the commands
def test_every_s3_call_of_the_commands_names_the_environments_account(moto_env: Aws) -> None:
    # GIVEN a failure bucket with a kept batch, and the commands' S3 client
    make_bucket(moto_env, "kept")
    s3 = moto_env.client("s3")
    s3.put_object(Bucket="kept", Key="aws/lambda/batch.json", Body=b"{}")
    sent = owners_sent(s3)

    # WHEN replay reads it (a dry run), teardown empties it, and a call names an owner of its own
    run_replay(s3=s3, lambda_client=None, ddb=None, bucket="kept", function="f", table="t", dry_run=True)
    assert empty_bucket(s3, "kept") == 1
    s3.head_bucket(Bucket="kept", ExpectedBucketOwner=OTHER)

    # THEN every request named the credentials' account (the environment's: its binding is checked against it)
    assert {op for op, _ in sent} >= {"ListObjectsV2", "GetObject", "ListObjectVersions", "DeleteObjects"}
    assert [owner for _, owner in sent[:-1]] == [ACCOUNT] * (len(sent) - 1)
    # AND a caller's own value is kept
    assert sent[-1] == ("HeadBucket", OTHER)


# ------------------------------------------------------------------------------------------ preflight
def test_the_exact_names_a_deploy_creates_are_listed() -> None:
    # GIVEN the built-in consumer, a borrowed blob bucket, a subscriber-free stack with generated names
    builtin = ot.config_of(**CONSUMER)
    borrowed = ot.config_of(**CONSUMER, blob_bucket="their-blobs")
    generated = ot.config_of(**CONSUMER, bucket_names="generated")
    # THEN the failure and blob buckets; the failure bucket alone; none (CloudFormation picks free names)
    assert created_bucket_names(builtin, ACCOUNT, REGION) == [
        ("failure bucket", FAILURES),
        ("blob bucket", BLOBS),
    ]
    assert created_bucket_names(borrowed, ACCOUNT, REGION) == [("failure bucket", FAILURES)]
    assert created_bucket_names(generated, ACCOUNT, REGION) == []
    assert created_bucket_names(ot.config_of(), ACCOUNT, REGION) == []


def test_a_bucket_name_taken_in_this_account_outside_the_stack_stops_the_deploy(
    moto_env: Aws, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the blob bucket's exact name already used in this account (kept by an earlier stack, say)
    make_bucket(moto_env, BLOBS)
    # WHEN preflight runs for a first deploy
    assert main(["preflight", "--json", *(a for k, v in CONSUMER.items() for a in ("-c", f"{k}={v}"))]) == 1
    report = json.loads(capsys.readouterr().out)
    # THEN it stops on that name alone (the failure bucket's is free), naming the bucket and who holds it
    (taken,) = [f for f in report["findings"] if f["code"] == "bucket.taken"]
    assert (taken["level"], taken["subject"], report["go"]) == ("STOP", "blob bucket", False)
    assert taken["before"] == {"bucket": BLOBS, "owner": "this account"}
    assert taken["after"] == {"bucket": BLOBS, "stack": "doctable-items-dev"}


def test_turning_the_consumer_on_again_stops_on_the_failure_bucket_it_left_behind(
    moto_env: Aws, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the failure bucket a consumer turned off left behind (RETAIN), under the exact name it had
    make_bucket(moto_env, FAILURES)
    # WHEN preflight runs for turning the consumer on again
    assert main(["preflight", "--json", *(a for k, v in CONSUMER.items() for a in ("-c", f"{k}={v}"))]) == 1
    report = json.loads(capsys.readouterr().out)
    # THEN it stops on that name before CloudFormation would fail halfway, naming the way out
    (taken,) = [f for f in report["findings"] if f["code"] == "bucket.taken"]
    assert (taken["level"], taken["subject"], report["go"]) == ("STOP", "failure bucket", False)
    assert taken["before"] == {"bucket": FAILURES, "owner": "this account"}
    assert "doctable replay" in taken["effect"]


def test_a_bucket_name_of_another_account_stops_the_deploy_and_headbucket_names_the_owner(
    moto_env: Aws,
) -> None:
    # GIVEN S3 answering HeadBucket of the failure bucket's name with 403 (another account's), the blob's 404
    deployment = describe_stack(moto_env, ot.config_of(**CONSUMER))
    observed = observe(moto_env, deployment)
    with Stubber(moto_env.client("s3")) as s3:
        owned = {"ExpectedBucketOwner": ACCOUNT}
        s3.add_client_error(
            "head_bucket", "403", http_status_code=403, expected_params={"Bucket": FAILURES, **owned}
        )
        s3.add_client_error(
            "head_bucket", "404", http_status_code=404, expected_params={"Bucket": BLOBS, **owned}
        )
        # WHEN preflight looks at the names the deploy creates
        found = bucket_findings(observed)
        s3.assert_no_pending_responses()
    # THEN the failure bucket's name stops the deploy as another account's
    (taken,) = found
    assert (taken.code, taken.level, taken.subject) == ("bucket.taken", "STOP", "failure bucket")
    assert taken.before == {"bucket": FAILURES, "owner": "another account"}


def test_the_stacks_own_buckets_and_free_names_are_not_taken(moto_env: Aws) -> None:
    # GIVEN a deployed stack holding its failure bucket under its exact name; the blob bucket's name is free
    config = ot.config_of(**CONSUMER)
    template = ot.template(config)
    template["Resources"]["FailureBucket"] = {
        "Type": "AWS::S3::Bucket",
        "Properties": {"BucketName": FAILURES},
    }
    moto_env.client("cloudformation").create_stack(
        StackName=config.stack_name, TemplateBody=json.dumps(template)
    )
    # WHEN preflight looks at the names THEN nothing is taken
    assert bucket_findings(observe(moto_env, describe_stack(moto_env, config))) == []


def test_with_generated_names_no_bucket_is_looked_up(moto_env: Aws) -> None:
    config = ot.config_of(**CONSUMER, bucket_names="generated")
    with Stubber(moto_env.client("s3")):  # any S3 call would fail: no response is queued
        assert bucket_findings(observe(moto_env, describe_stack(moto_env, config))) == []


# ------------------------------------------------------------------------------------------ the client
@pytest.fixture
def client_aws(moto_env: Aws) -> Aws:
    """GIVEN moto's table (pk, sk) and blob bucket, of this account."""
    ot.deploy(moto_env.client, ot.config_of(table_base="docs"))
    make_bucket(moto_env, "docs-blobs")
    return moto_env


def owned_by(owner: str, real: Callable[..., Any]) -> Callable[..., Any]:
    """``real``, answering 403 as S3 does when a request names another account than the bucket's owner."""

    def call(**request: Any) -> Any:
        if request.get("ExpectedBucketOwner") != owner:
            error = {"Error": {"Code": "AccessDenied", "Message": "Access Denied"}}
            raise ClientError({**error, "ResponseMetadata": {"HTTPStatusCode": 403}}, "Call")
        return real(**request)

    return call


class Guarded:
    """moto's S3 client with S3's owner check on the calls the client makes."""

    def __init__(self, real: Any, owner: str) -> None:
        self._real = real
        self.meta = real.meta
        for name in ("put_object", "get_object", "head_object", "delete_objects"):
            setattr(self, name, owned_by(owner, getattr(real, name)))


def doc_client(aws: Aws, **options: Any) -> DocClient:
    options.setdefault("retry", RetryPolicy(sleep=lambda _: None))
    return DocClient("docs-dev", "docs-blobs", session=aws.session, **options)


def test_the_client_names_the_credentials_account_by_default(client_aws: Aws) -> None:
    # GIVEN a client configured without an owner
    docs = doc_client(client_aws)
    sent = owners_sent(docs._client("s3"))
    # WHEN it writes and reads a document with a blob
    docs.put("doc", "v", blobs={"a": b"A"})
    assert docs.get("doc", "v").blobs["a"].read() == b"A"
    # THEN each S3 request named the credentials' account (STS) as the bucket's owner
    assert {op for op, _ in sent} == {"PutObject", "GetObject"}
    assert {owner for _, owner in sent} == {ACCOUNT}


def test_from_stack_the_bucket_must_be_the_stacks_accounts(client_aws: Aws) -> None:
    # GIVEN a stack whose outputs name its blob bucket
    config = ot.config_of(table_base="docs", env="stg")
    ot.deploy(client_aws.client, config, extra_outputs={names.OUT_BLOB_BUCKET: "docs-blobs"})
    # WHEN the client is configured from it THEN the owner is the account of its StackId
    docs = DocClient.from_stack("stg", table_base="docs", session=client_aws.session)
    assert docs.deployment.bucket_owner == ACCOUNT


def test_a_bucket_of_another_account_is_refused_and_nothing_is_written(client_aws: Aws) -> None:
    # GIVEN a bucket owned by another account than the one the client expects (S3 refuses such requests)
    s3 = Guarded(client_aws.client("s3"), owner=OTHER)
    docs = doc_client(client_aws, s3=s3, bucket_owner=ACCOUNT)
    # WHEN a document with a blob is put
    with pytest.raises(BucketOwnerError) as refused:
        docs.put("doc", "v", {"n": 1}, blobs={"a": b"A"})
    # THEN one error with the stable code, naming the bucket and the owner expected; no object, no item, no orphan
    assert (refused.value.code, refused.value.step) == (BUCKET_NOT_OWNED, "upload")
    assert (refused.value.bucket, refused.value.expected_owner, refused.value.orphans) == (
        "docs-blobs",
        ACCOUNT,
        (),
    )
    assert "\n" not in str(refused.value)
    assert client_aws.client("s3").list_objects_v2(Bucket="docs-blobs").get("KeyCount") == 0
    assert client_aws.client("dynamodb").scan(TableName="docs-dev")["Count"] == 0


def test_a_blob_read_from_a_bucket_of_another_account_is_refused(client_aws: Aws) -> None:
    # GIVEN a document written to the bucket, then read by a client that expects another owner
    doc_client(client_aws).put("doc", "v", blobs={"a": b"A"})
    s3 = Guarded(client_aws.client("s3"), owner=ACCOUNT)
    reader = doc_client(client_aws, s3=s3, bucket_owner=OTHER)
    # WHEN its blob is read THEN the read is refused with the stable code
    with pytest.raises(BucketOwnerError) as refused:
        reader.get("doc", "v").blobs["a"].read()
    assert (refused.value.code, refused.value.step, refused.value.expected_owner) == (
        BUCKET_NOT_OWNED,
        "read-blob",
        OTHER,
    )


@pytest.mark.parametrize("owner", ["12345678901", "abcdefghijkl", "arn:aws:iam::123456789012:root", ""])
def test_a_bucket_owner_that_is_not_an_account_is_refused_before_any_call(owner: str) -> None:
    session = boto3.session.Session(aws_access_key_id="k", aws_secret_access_key="s", region_name=REGION)
    with pytest.raises(ConfigurationError) as refused:
        DocClient("docs-dev", "docs-blobs", session=session, bucket_owner=owner)
    assert refused.value.step == "configure" and "\n" not in str(refused.value)
