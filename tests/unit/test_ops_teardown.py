"""`doctable teardown`: ownership, deletion protection, confirmation, bucket emptying, absence (moto)."""

from __future__ import annotations

import pytest

from contract import names
from doctable.core.aws import Aws
from doctable.core.context import describe_stack
from doctable.core.deployment import Deployment
from doctable.core.errors import UserError
from doctable.core.render import Progress
from doctable.lifecycle import teardown as t
from tests.support import ops as ot

QUIET = Progress(quiet=True, sleep=lambda s: None)


def deployed(aws: Aws, **knobs: str) -> Deployment:
    config = ot.config_of(**knobs)
    ot.deploy(aws.client, config, with_bucket=True)
    return describe_stack(aws, config)


def teardown(aws: Aws, deployment: Deployment, **kwargs: bool) -> t.Outcome:
    options = {"assume_yes": True, "lift": False, **kwargs}
    _, outcome = t.run_teardown(aws, deployment, timeout=30, progress=QUIET, **options)
    return outcome


def table_exists(aws: Aws, name: str) -> bool:
    return name in aws.client("dynamodb").list_tables()["TableNames"]


def test_dev_teardown_empties_the_bucket_removes_the_stack_and_proves_absence(moto_env: Aws) -> None:
    # GIVEN a dev stack whose blob bucket holds objects
    deployment = deployed(moto_env)
    bucket = deployment.outputs[names.OUT_BLOB_BUCKET]
    s3 = moto_env.client("s3")
    for key in ("a/1", "b/2"):
        s3.put_object(Bucket=bucket, Key=key, Body=b"x")
    # WHEN it is torn down
    outcome = teardown(moto_env, deployment)
    # THEN the bucket was emptied first, everything is gone, nothing is retained
    assert outcome.clean and outcome.retained == []
    assert outcome.emptied == [f"{bucket} (2 objects)"]
    assert "AWS::DynamoDB::Table items-dev" in outcome.removed
    assert f"AWS::S3::Bucket {bucket}" in outcome.removed
    assert not table_exists(moto_env, "items-dev")
    assert not describe_stack(moto_env, deployment.config).exists


def test_uat_teardown_keeps_the_retained_table_and_bucket_contents(moto_env: Aws) -> None:
    # GIVEN uat (RETAIN on delete) with a blob
    deployment = deployed(moto_env, env="uat")
    bucket = deployment.outputs[names.OUT_BLOB_BUCKET]
    moto_env.client("s3").put_object(Bucket=bucket, Key="keep/me", Body=b"x")
    outcome = teardown(moto_env, deployment)
    # THEN the stack is gone, the table and the bucket (with its object) are listed as retained on purpose
    assert outcome.clean and outcome.emptied == []
    assert any(r.startswith("AWS::DynamoDB::Table items-uat (RETAIN") for r in outcome.retained)
    assert f"AWS::S3::Bucket {bucket} (RETAIN, 1 objects kept)" in outcome.retained
    assert table_exists(moto_env, "items-uat")


def test_refuses_a_table_that_is_not_ours(moto_env: Aws) -> None:
    deployment = deployed(moto_env)
    ddb = moto_env.client("dynamodb")
    ddb.untag_resource(ResourceArn=deployment.outputs[names.OUT_TABLE_ARN], TagKeys=["ManagedBy"])
    with pytest.raises(UserError, match="not ours"):
        teardown(moto_env, deployment)
    assert table_exists(moto_env, "items-dev") and describe_stack(moto_env, deployment.config).exists


def test_refuses_deletion_protection_unless_lifted(moto_env: Aws) -> None:
    # GIVEN prod: deletion protection on, table retained
    deployment = deployed(moto_env, env="prod")
    with pytest.raises(UserError, match="--lift-deletion-protection"):
        teardown(moto_env, deployment)
    assert describe_stack(moto_env, deployment.config).exists
    # WHEN lifted explicitly: the stack goes, the RETAINed table stays (and keeps its protection)
    outcome = teardown(moto_env, deployment, lift=True)
    assert outcome.clean and table_exists(moto_env, "items-prod")
    assert any("left ON" in note for note in outcome.notes)
    assert moto_env.client("dynamodb").describe_table(TableName="items-prod")["Table"][
        "DeletionProtectionEnabled"
    ]


def test_lifting_protection_on_a_destroyable_table_lets_the_stack_delete_it(moto_env: Aws) -> None:
    # GIVEN a dev table someone protected behind the stack
    deployment = deployed(moto_env)
    moto_env.client("dynamodb").update_table(TableName="items-dev", DeletionProtectionEnabled=True)
    with pytest.raises(UserError, match="deletion protection"):
        teardown(moto_env, deployment)
    outcome = teardown(moto_env, deployment, lift=True)
    assert outcome.clean and not table_exists(moto_env, "items-dev")
    assert "lifted" in outcome.notes[0]


def test_no_confirmation_no_teardown(moto_env: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    deployment = deployed(moto_env)
    # non-interactive without --yes
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    with pytest.raises(UserError, match="--yes"):
        teardown(moto_env, deployment, assume_yes=False)
    # interactive, wrong answer
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    with pytest.raises(UserError, match="not confirmed"):
        t.run_teardown(
            moto_env,
            deployment,
            assume_yes=False,
            lift=False,
            timeout=30,
            progress=QUIET,
            read=lambda _: "no",
        )
    assert describe_stack(moto_env, deployment.config).exists
    # the right answer goes ahead
    _, outcome = t.run_teardown(
        moto_env, deployment, assume_yes=False, lift=False, timeout=30, progress=QUIET,
        read=lambda _: deployment.config.stack_name,
    )  # fmt: skip
    assert outcome.clean


def test_nothing_deployed_is_a_clean_no_op(moto_env: Aws) -> None:
    deployment = describe_stack(moto_env, ot.config_of())
    outcome = teardown(moto_env, deployment)
    assert outcome.clean and outcome.removed == []
    assert "not deployed" in outcome.notes[0]


class _HeadBucket:
    """An S3 client whose HeadBucket answers ``status`` (200: the bucket is there)."""

    def __init__(self, status: int) -> None:
        self.status = status

    def head_bucket(self, Bucket: str) -> dict[str, object]:  # noqa: N803 (boto3's parameter name)
        from botocore.exceptions import ClientError

        if self.status == 200:
            return {}
        error = {"Error": {"Code": str(self.status), "Message": ""}}
        raise ClientError({**error, "ResponseMetadata": {"HTTPStatusCode": self.status}}, "HeadBucket")


def test_head_bucket_answers_present_absent_or_a_refusal_naming_list_bucket() -> None:
    from doctable.core.aws import bucket_exists
    from doctable.core.errors import AwsError, exit_code_of

    assert bucket_exists(_HeadBucket(200), "b") is True
    assert bucket_exists(_HeadBucket(404), "b") is False
    # a HEAD answer has no body: the 403 is named as the grant it lacks, in one line, exit 4
    with pytest.raises(AwsError) as refused:
        bucket_exists(_HeadBucket(403), "b")
    message = str(refused.value)
    assert "is not authorized to perform: s3:ListBucket on resource: arn:aws:s3:::b" in message
    assert "\n" not in message and exit_code_of(refused.value) == 4
    # AND the refusal is data for --json, as an AWS refusal with a reason is
    fields = refused.value.fields
    assert (fields["code"], fields["action"], fields["resource"]) == (
        "aws.access_denied",
        "s3:ListBucket",
        "arn:aws:s3:::b",
    )
