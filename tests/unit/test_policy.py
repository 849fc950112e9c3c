"""`doctable policy`: the documents contract/iam/policies.py computes from an environment's knobs, and the command's
arguments, output and one-line errors. No AWS (the account and region are given or bound)."""

from __future__ import annotations

import dataclasses
import fnmatch
import json
from pathlib import Path
from typing import Any

import pytest

from contract.iam import policies as iam
from contract.knobs import resolve_config
from contract.settings.render import default_settings, render_settings
from contract.settings.resolve import CONFIG_VARIABLE, Section
from doctable.cli import main

pytestmark = pytest.mark.unit

ACCOUNT, REGION = "111122223333", "eu-west-1"
FULL = {"gsi": "gsi1", "ttl": "on", "pitr": "on", "stream": "new-and-old", "blob_root": "blobs/"}
# Every knob that adds a statement: Kinesis, a customer managed key, a resource policy.
KITCHEN_SINK = {**FULL, "kinesis": "on", "encryption": "customer-managed", "resource_policy": "policy.json"}


def target(env: str = "dev", **knobs: str) -> iam.Target:
    config = resolve_config(context={"env": env, "table_base": "items", **knobs}, environ={}, defaults={})
    return iam.Target(config, ACCOUNT, REGION)


def statements(role: str, command: str | None = None, **knobs: str) -> dict[str, iam.Statement]:
    return {s.sid: s for s in iam.role_statements(role, target(**knobs), command)}


def actions(found: dict[str, iam.Statement]) -> set[str]:
    return {a for s in found.values() for a in s.actions}


# ---------------------------------------------------------------------------------------------- documents
@pytest.mark.parametrize("role", iam.ROLES)
@pytest.mark.parametrize("knobs", [{}, FULL, KITCHEN_SINK], ids=["flat", "full", "kitchen-sink"])
def test_every_statement_names_its_resources_and_star_only_where_aws_takes_none(
    role: str, knobs: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # GIVEN a role's policy for a shape
    monkeypatch.chdir(tmp_path)
    statement = {
        "Effect": "Allow",
        "Principal": {"AWS": ACCOUNT},
        "Action": "dynamodb:GetItem",
        "Resource": "*",
    }
    (tmp_path / "policy.json").write_text(json.dumps({"Version": "2012-10-17", "Statement": [statement]}))
    document = iam.policy_document(iam.role_statements(role, target(**knobs)))
    # THEN it is a 2012-10-17 document of Allow statements with unique alphanumeric Sids
    assert document["Version"] == "2012-10-17"
    sids = [s["Sid"] for s in document["Statement"]]
    assert len(sids) == len(set(sids)) and all(sid.isalnum() for sid in sids)
    for statement in document["Statement"]:
        assert statement["Effect"] == "Allow" and statement["Action"] and statement["Resource"]
        assert all(":" in a and "*" not in a for a in statement["Action"]), statement
        for resource in statement["Resource"]:
            if resource == "*":
                # only a list call, in a statement that says AWS authorizes it on no resource
                assert statement["Action"] in (
                    ["logs:DescribeLogGroups"],
                    ["kinesis:ListStreams"],
                    ["cloudformation:ListStacks"],
                    # preflight counts the mappings on the stream; the Service Authorization Reference gives
                    # ListEventSourceMappings no resource type (nor condition key)
                    ["lambda:ListEventSourceMappings"],
                )
                assert "AcceptsNoResource" in statement["Sid"]
                continue
            assert resource.startswith("arn:aws:"), resource
            service = resource.split(":")[2]
            if service not in ("s3", "iam"):
                assert f":{REGION}:{ACCOUNT}:" in resource, resource
            if service == "iam":
                assert f"::{ACCOUNT}:role/" in resource, resource
    # AND it fits where it is attached (a managed policy, else an inline one with the note saying so)
    assert iam.document_size(document) <= 10_240


def test_deployer_assumes_the_deploy_and_publishing_roles_only_and_reads_what_preflight_reads() -> None:
    found = statements("deployer", **FULL)
    assume = found["AssumeCdkBootstrapRoles"]
    assert assume.actions == ("sts:AssumeRole",)
    # not the lookup role: the bootstrap gives it ReadOnlyAccess over the whole account
    assert assume.resources == tuple(
        f"arn:aws:iam::{ACCOUNT}:role/cdk-hnb659fds-{kind}-role-{ACCOUNT}-{REGION}"
        for kind in ("deploy", "file-publishing")
    )
    # the deployer's reads are exactly preflight's: the gate compares what preflight observed
    preflight = statements("reader", "preflight", **FULL)
    own = ("AssumeCdkBootstrapRoles", "EnvironmentLock")
    assert {k: v for k, v in found.items() if k not in own} == preflight
    # and nothing that writes but the environment's lock: CloudFormation changes the stack as the bootstrap's
    # execution role
    writes = {a for a in actions(found) if a.split(":")[1].startswith(("Put", "Update", "Delete", "Create"))}
    assert writes == {"s3:PutObject", "s3:DeleteObject"} == writes & set(found["EnvironmentLock"].actions)


def test_statements_scope_to_the_environments_stack_and_table() -> None:
    found = statements("operator", **FULL)
    assert found["ReadStack"].resources == (
        f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/doctable-items-dev/*",
    )
    assert found["ReadTable"].resources == (f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/items-dev",)
    assert found["ReadConsumer"].resources == (
        f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:doctable-items-dev-*",
    )
    assert found["ReadProofLines"].resources == (
        f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:doctable-items-dev-*",
    )
    # a mapping's UUID is unknown before the deploy: its calls are narrowed by the function it invokes
    assert found["ReadMapping"].condition == {
        "ArnLike": {
            "lambda:FunctionArn": [f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:doctable-items-dev-*"]
        }
    }
    # verify's items and blobs are its own: under its partition key and prefix only
    assert found["VerifyTestItemsOnly"].condition == {
        "ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["doctable-verify-*"]}
    }
    blobs = f"items-dev-{ACCOUNT}-{REGION}-blobs"
    assert found["WriteVerifyBlobs"].resources == (f"arn:aws:s3:::{blobs}/blobs/doctable-verify-*",)
    assert found["ListVerifyBlobs"].condition == {"StringLike": {"s3:prefix": ["blobs/doctable-verify-*"]}}
    # another environment's policy names its own stack
    other = iam.role_statements("operator", target("prod", **FULL))
    assert all("items-dev" not in r for s in other for r in s.resources)


@pytest.mark.parametrize(
    ("knobs", "sid", "present"),
    [
        ({}, "ReadMapping", False),
        (FULL, "ReadMapping", True),
        ({}, "ReadStreamRecord", False),
        (FULL, "ReadStreamRecord", True),
        (FULL, "QueryIndexes", True),
        ({"stream": "new-and-old"}, "QueryIndexes", False),
        (FULL, "ReadKinesisRecord", False),
        # the Kinesis stream's records are read when the mapping reads that stream, not when the table only
        # streams to it
        ({**FULL, "kinesis": "on"}, "ReadKinesisRecord", False),
        ({**FULL, "kinesis": "on", "consumer_source": "kinesis"}, "ReadKinesisRecord", True),
        ({**FULL, "kinesis": "on"}, "DescribeKinesisDestination", True),
        (FULL, "DescribeKinesisDestination", False),
        (FULL, "DecryptTableReads", False),
        ({**FULL, "encryption": "customer-managed"}, "DecryptTableReads", True),
        ({"stream": "new-and-old", "consumer": "none"}, "ReadConsumer", False),
    ],
)
def test_a_statement_is_there_only_when_the_knobs_make_its_call(
    knobs: dict[str, str], sid: str, present: bool
) -> None:
    assert (sid in statements("operator", "verify", **knobs)) is present


@pytest.mark.parametrize(
    ("knobs", "expected"),
    [
        ({}, set()),
        ({"deletion_protection": "on"}, {"LiftDeletionProtection"}),
        (
            {"stream": "new-and-old"},
            {
                "EmptyStackBuckets",
                "ProbeMapping",
                "ProbeStackRoles",
                "ListLogGroupsAcceptsNoResource",
                "ProbeConsumer",
            },
        ),
    ],
)
def test_teardown_holds_what_the_stacks_resources_need_and_nothing_more(
    knobs: dict[str, str], expected: set[str]
) -> None:
    # a table-only stack has no bucket, role, log group or mapping to empty or probe; only a protected table
    # needs the unlock step
    found = set(statements("operator", "teardown", **knobs))
    assert found - {"ReadStack", "DeleteStack", "ReadTable", "EnvironmentLock"} == expected


def test_reconcile_repairs_the_table_and_the_mapping_and_nothing_else() -> None:
    found = statements("operator", "reconcile", **FULL)
    assert set(found["RepairTable"].actions) == {f"dynamodb:{a}" for a in iam.TABLE_REPAIRS}
    assert found["RepairMapping"].actions == ("lambda:UpdateEventSourceMapping",)
    lock = set(found["EnvironmentLock"].actions)
    assert not any(a.startswith(("s3:", "logs:", "cloudformation:Delete")) for a in actions(found) - lock)
    # a resource policy to restore, a Kinesis destination to re-enable: only with those knobs
    assert "dynamodb:PutResourcePolicy" not in found["RepairTable"].actions
    kinesis = statements("operator", "reconcile", **{**FULL, "kinesis": "on"})
    assert "dynamodb:EnableKinesisStreamingDestination" in kinesis["RepairTable"].actions


@pytest.mark.parametrize(
    ("role", "command"), [("deployer", "deploy"), ("operator", "reconcile"), ("operator", "teardown")]
)
def test_the_commands_that_change_an_environment_hold_its_lock_and_nothing_wider(
    role: str, command: str
) -> None:
    # GIVEN an environment with its own CDK bootstrap qualifier
    found = {
        s.sid: s
        for s in iam.role_statements(role, dataclasses.replace(target(), qualifier="doctest"), command)
    }
    # THEN the lock's statement grants exactly its actions on its one object in that bootstrap's assets bucket
    lock = found["EnvironmentLock"]
    assert lock.actions == ("s3:GetObject", "s3:PutObject", "s3:DeleteObject") and lock.condition is None
    bucket = f"cdk-doctest-assets-{ACCOUNT}-{REGION}"
    assert lock.resources == (f"arn:aws:s3:::{bucket}/doctable/locks/{target().stack}.json",)
    # AND no other statement names that bucket
    others = [r for s in found.values() if s.sid != "EnvironmentLock" for r in s.resources]
    assert not any(bucket in r for r in others)


def test_the_read_only_commands_hold_no_lock() -> None:
    for role in ("reader",):
        assert "EnvironmentLock" not in statements(role)
    for command in ("verify", "replay", "ledger", "logs", "invoke"):
        assert "EnvironmentLock" not in statements("operator", command)


def test_logs_reads_the_consumers_log_group_and_invoke_invokes_what_the_mapping_invokes() -> None:
    logs = statements("operator", "logs", **FULL)
    assert {sid: s.actions for sid, s in logs.items()} == {
        "ReadStack": ("cloudformation:DescribeStacks",),
        "ReadProofLines": ("logs:FilterLogEvents",),
    }
    assert logs["ReadProofLines"].resources == (
        f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:doctable-items-dev-*",
    )
    invoke = statements("operator", "invoke", **FULL)
    assert {sid: s.actions for sid, s in invoke.items()} == {
        "ReadStack": ("cloudformation:DescribeStacks",),
        "ReadMapping": ("lambda:GetEventSourceMapping",),
        "InvokeConsumer": ("lambda:InvokeFunction",),
    }
    function = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:doctable-items-dev-*"
    assert invoke["InvokeConsumer"].resources == (function,)
    assert invoke["ReadMapping"].condition == {"ArnLike": {"lambda:FunctionArn": [function]}}
    # a stack without a consumer: the stack is read, then the command says there is nothing to invoke or read
    assert set(statements("operator", "invoke")) == set(statements("operator", "logs")) == {"ReadStack"}
    # a borrowed consumer: invoked by its own ARN, and it has no log group of the stack's
    arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:their-consumer"
    borrowed = statements("operator", "invoke", stream="new-and-old", consumer=arn)
    assert borrowed["InvokeConsumer"].resources == (arn, f"{arn}:*")
    assert set(statements("operator", "logs", stream="new-and-old", consumer=arn)) == {"ReadStack"}


def s3_buckets(document: dict[str, Any]) -> set[str]:
    """The bucket names a policy document's S3 resources name."""
    return {
        r.split(":::", 1)[1].split("/", 1)[0]
        for s in document["Statement"]
        for r in s["Resource"]
        if r.startswith("arn:aws:s3:::")
    }


@pytest.mark.parametrize("role", iam.ROLES)
def test_exact_bucket_names_differ_per_environment_and_no_resource_of_one_matches_anothers_buckets(
    role: str,
) -> None:
    # GIVEN two environments of one table whose names start alike, in one account and region (bucket_names=exact)
    ours, theirs = target("prod", **FULL), target("prod-eu", tier="prod", **FULL)
    # THEN each names its buckets exactly, from the settings alone
    assert (ours.exact_buckets, ours.failure_bucket, ours.blob_bucket) == (
        True,
        f"items-prod-{ACCOUNT}-{REGION}-failures",
        f"items-prod-{ACCOUNT}-{REGION}-blobs",
    )
    assert ours.stack_buckets == (ours.blob_bucket, ours.failure_bucket)
    # AND no S3 resource of one environment's policy matches an object or a bucket of the other's
    resources = [r for s in iam.role_statements(role, ours) for r in s.resources if ":s3:::" in r]
    for bucket in theirs.stack_buckets:
        for arn in (theirs.bucket_arn(bucket), theirs.bucket_arn(bucket, "blobs/k")):
            assert not [r for r in resources if fnmatch.fnmatchcase(arn, r)], (arn, resources)


def test_generated_bucket_names_keep_the_deployed_names_or_the_shared_pattern() -> None:
    # GIVEN an environment whose buckets CloudFormation names (bucket_names=generated)
    generated = target(bucket_names="generated", **FULL)
    # THEN before its names are read the policy names the pattern every environment shares
    assert (generated.exact_buckets, generated.failure_bucket) == (False, "doctable-items*")
    found = {s.sid: s for s in iam.role_statements("operator", generated)}
    assert found["WriteVerifyBlobs"].resources == ("arn:aws:s3:::doctable-items*/blobs/doctable-verify-*",)
    # AND once the deployed stack's names are read, those
    deployed = dataclasses.replace(
        generated,
        deployed_failure_bucket="doctable-items-dev-f-1",
        deployed_blob_bucket="doctable-items-dev-b-1",
    )
    assert (deployed.exact_buckets, deployed.failure_bucket, deployed.blob_bucket) == (
        True,
        "doctable-items-dev-f-1",
        "doctable-items-dev-b-1",
    )


def test_a_borrowed_consumer_is_named_exactly() -> None:
    arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:their-consumer"
    found = statements("reader", "preflight", stream="new-and-old", consumer=arn)
    assert found["ReadBorrowedConsumer"].resources == (arn,)
    assert found["ReadMapping"].condition == {"ArnLike": {"lambda:FunctionArn": [arn, f"{arn}:*"]}}


def test_a_role_is_the_union_of_its_commands() -> None:
    role = statements("operator", **FULL)
    parts = [statements("operator", c, **FULL) for c in iam.ROLE_COMMANDS["operator"]]
    assert set(role) == {sid for part in parts for sid in part}
    for sid, statement in role.items():
        assert set(statement.actions) == {a for part in parts if sid in part for a in part[sid].actions}


# What the read-only verify calls (doctable/verify, the checks that write nothing), and what it must not.
READ_ONLY_VERIFY = {
    "cloudformation:DescribeStacks",
    "cloudformation:ListStackResources",
    *(f"dynamodb:{a}" for a in iam.TABLE_OBSERVE),
    "lambda:GetEventSourceMapping",
    "lambda:ListTags",
    "lambda:GetFunctionConfiguration",
}
WRITES_OR_RECORD_READS = {
    "dynamodb:PutItem",
    "dynamodb:DeleteItem",
    "dynamodb:GetItem",
    "dynamodb:Query",
    "dynamodb:GetRecords",
    "kinesis:GetRecords",
    "s3:PutObject",
    "s3:DeleteObject",
    "lambda:InvokeFunction",
    "logs:FilterLogEvents",
    "kms:Decrypt",
}


@pytest.mark.parametrize("knobs", [{}, FULL, KITCHEN_SINK], ids=["flat", "full", "kitchen-sink"])
def test_the_readers_verify_is_the_read_only_verify_and_writes_nothing(
    knobs: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    statement = {
        "Effect": "Allow",
        "Principal": {"AWS": ACCOUNT},
        "Action": "dynamodb:GetItem",
        "Resource": "*",
    }
    (tmp_path / "policy.json").write_text(json.dumps({"Version": "2012-10-17", "Statement": [statement]}))
    # GIVEN the reader's verify part, beside the operator's
    assert iam.role_commands("reader", "verify") == ("verify",)
    reader = actions(statements("reader", "verify", **knobs))
    operator = actions(statements("operator", "verify", **knobs))
    # THEN every action reads a configuration (Describe, Get, List), none writes or reads items or records
    assert all(a.split(":")[1].startswith(("Describe", "Get", "List")) for a in reader), reader
    assert reader & WRITES_OR_RECORD_READS == set()
    # AND it is a part of what the full verify calls: the operator's keeps its writes
    assert reader < operator and "dynamodb:PutItem" in operator
    # AND the whole reader role writes nothing either
    whole = actions(statements("reader", **knobs))
    assert not any(a.split(":")[1].startswith(("Put", "Update", "Delete", "Tag", "Invoke")) for a in whole)


def test_the_read_only_verify_reads_exactly_what_its_checks_read() -> None:
    assert actions(statements("reader", "verify", **FULL)) == READ_ONLY_VERIFY
    # the knobs that add a check add only its reads: the stream's, the key and its rotation
    kitchen = actions(
        statements("reader", "verify", **{**FULL, "kinesis": "on", "encryption": "customer-managed"})
    )
    assert kitchen - READ_ONLY_VERIFY == {
        "kinesis:DescribeStreamSummary",
        "kinesis:DescribeStream",  # DescribeKinesisStreamingDestination's own read of the stream
        "kms:DescribeKey",
        "kms:GetKeyRotationStatus",
    }
    # without the built-in consumer there is no function of the stack's to read
    assert "lambda:GetFunctionConfiguration" not in actions(
        statements("reader", "verify", stream="new-and-old", consumer="none")
    )


def test_plan_needs_nothing() -> None:
    assert iam.command_statements("plan", target()) == []


# Each subject names the workflow file the job runs as main holds it (the OIDC subject template adds it).
DEPLOY_PIN = ":job_workflow_ref:octo/doctable/.github/workflows/deploy.yml@refs/heads/main"


def test_ci_trust_of_a_dev_tier_lets_main_and_the_environment_assume_the_role() -> None:
    document = iam.ci_trust_policy(account=ACCOUNT, repo="octo/doctable", env="dev", tier="dev")
    (statement,) = document["Statement"]
    assert statement["Principal"] == {
        "Federated": f"arn:aws:iam::{ACCOUNT}:oidc-provider/token.actions.githubusercontent.com"
    }
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert statement["Condition"] == {
        "StringEquals": {
            "token.actions.githubusercontent.com:aud": "sts.amazonaws.com",
            "token.actions.githubusercontent.com:sub": [
                "repo:octo/doctable:ref:refs/heads/main" + DEPLOY_PIN,
                "repo:octo/doctable:environment:dev" + DEPLOY_PIN,
            ],
        }
    }
    with pytest.raises(iam.PolicyError, match="expected OWNER/NAME"):
        iam.ci_trust_policy(account=ACCOUNT, repo="octo", env="dev", tier="dev")
    with pytest.raises(iam.PolicyError, match="expected a workflow file name"):
        iam.ci_trust_policy(account=ACCOUNT, repo="octo/doctable", env="dev", tier="dev", workflow="../x.yml")


@pytest.mark.parametrize("tier", ["stg", "uat", "prod"])
def test_ci_trust_of_any_other_tier_lets_its_environments_jobs_only_assume_the_role(tier: str) -> None:
    # GIVEN an environment of a tier whose GitHub environment has protection rules (reviewers, branch policies)
    document = iam.ci_trust_policy(account=ACCOUNT, repo="octo/doctable", env=f"{tier}-eu", tier=tier)
    # THEN only a job running in that GitHub environment may assume its role: a job on main without one may not
    (statement,) = document["Statement"]
    assert statement["Condition"]["StringEquals"]["token.actions.githubusercontent.com:sub"] == [
        f"repo:octo/doctable:environment:{tier}-eu" + DEPLOY_PIN
    ]
    assert statement["Sid"] == "GitHubActionsOfTheEnvironmentOnly"


# ---------------------------------------------------------------------------------------------- the command
@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A settings file whose stg is bound to an account and a region, dev to neither."""
    path = tmp_path / "doctable.toml"
    file = default_settings(path)
    file.environments["stg"] = Section(values=dict(FULL), account=ACCOUNT, region=REGION)
    path.write_text(render_settings(file))
    monkeypatch.setenv(CONFIG_VARIABLE, str(path))
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_PROFILE",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["policy", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_bound_environments_policy_needs_no_credentials(
    settings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # WHEN the operator's policy of the bound environment is printed
    code, out, err = run(capsys, "operator", "--env", "stg")
    # THEN stdout is the document alone (for put-role-policy), computed from the file's knobs and binding
    assert code == 0
    document = json.loads(out)
    assert document["Version"] == "2012-10-17"
    stack = f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/doctable-items-stg/*"
    assert {s["Sid"]: s for s in document["Statement"]}["ReadStack"]["Resource"] == [stack]
    # AND its S3 statements name the environment's two buckets exactly, from the settings alone, and stderr says so
    buckets = {f"items-stg-{ACCOUNT}-{REGION}-{kind}" for kind in ("blobs", "failures")}
    # the lock: its one object in the bootstrap's assets bucket
    lock = f"cdk-hnb659fds-assets-{ACCOUNT}-{REGION}"
    assert {s["Sid"]: s for s in document["Statement"]}["EnvironmentLock"]["Resource"] == [
        f"arn:aws:s3:::{lock}/doctable/locks/doctable-items-stg.json"
    ]
    assert s3_buckets(document) == buckets | {lock}
    assert "name the environment's buckets exactly" in err and "*" not in "".join(s3_buckets(document))


def test_json_names_the_target_and_one_commands_part(
    settings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "operator", "--env", "stg", "--command", "verify", "--json")
    assert code == 0
    report: dict[str, Any] = json.loads(out)
    assert report["kind"] == "doctable-policy" and report["commands"] == ["verify"]
    assert (report["account"], report["region"], report["stack"]) == (ACCOUNT, REGION, "doctable-items-stg")
    assert report["unscoped"] == [] and report["size"] == iam.document_size(report["policy"])


def test_the_readers_verify_prints_the_read_only_part(
    settings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # WHEN the reader's verify part is printed
    code, out, _ = run(capsys, "reader", "--env", "stg", "--command", "verify", "--json")
    # THEN it is the read-only verify's, and a note says so
    assert code == 0
    report: dict[str, Any] = json.loads(out)
    assert report["role"] == "reader" and report["commands"] == ["verify"]
    printed = {a for s in report["policy"]["Statement"] for a in s["Action"]}
    assert printed == READ_ONLY_VERIFY
    assert any("doctable verify --read-only" in note for note in report["notes"])


def test_plan_needs_no_policy(settings: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "operator", "--env", "stg", "--command", "plan")
    assert code == 0 and out == ""
    assert "plan makes no AWS call: no policy is needed" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["reader", "--env", "stg", "--command", "reconcile"], "allowed: preflight|ledger|verify"),
        (
            ["operator", "--env", "stg", "--command", "deploy"],
            "allowed: verify|reconcile|replay|teardown|ledger|plan|logs|invoke",
        ),
        (
            ["operator", "--env", "stg", "--command", "watch"],
            "watch has no policy: watch runs on the local AWS",
        ),
        (["operator", "--env", "stg", "--account", "42"], "expected the 12 digits"),
        (["operator", "--env", "stg", "--account", "999999999999"], "account mismatch"),
        (["operator", "--env", "stg", "--region", "us-east-1"], "region mismatch"),
        (["operator", "--env", "dev"], "no account for environment dev: bind it in the settings"),
        (["ci-trust", "--env", "stg"], "needs --repo OWNER/NAME"),
        (["ci-trust", "--env", "stg", "--repo", "no-slash"], "expected OWNER/NAME"),
        (["operator", "--env", "stg", "--repo", "octo/doctable"], "--repo is for `doctable policy ci-trust`"),
    ],
)
def test_bad_input_is_one_line(
    settings: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, out, err = run(capsys, *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err, err
    assert "Traceback" not in err


def test_ci_trust_of_an_unbound_environment_takes_account_and_region_given(
    settings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        capsys,
        "ci-trust",
        "--env",
        "dev",
        "--repo",
        "octo/doctable",
        "--account",
        ACCOUNT,
        "--region",
        REGION,
    )
    assert code == 0
    condition = json.loads(out)["Statement"][0]["Condition"]["StringEquals"]
    assert (
        condition["token.actions.githubusercontent.com:sub"][1]
        == "repo:octo/doctable:environment:dev" + DEPLOY_PIN
    )


def test_ci_trust_of_the_prod_environment_names_its_github_environment_only(
    settings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # WHEN the trust of prod's role is printed (prod is of the prod tier)
    code, out, _ = run(
        capsys, "ci-trust", "--env", "prod", "--repo", "octo/doctable", "--account", ACCOUNT, "--region", REGION,
        "--json",
    )  # fmt: skip
    # THEN no branch may assume it: a job on main without `environment: prod` (the dev job) is refused by IAM
    assert code == 0
    printed = json.loads(out)
    assert printed["tier"] == "prod"
    condition = printed["policy"]["Statement"][0]["Condition"]["StringEquals"]
    assert condition["token.actions.githubusercontent.com:sub"] == [
        "repo:octo/doctable:environment:prod" + DEPLOY_PIN
    ]
    # AND the subject template that makes IAM see the workflow file, with the command that sets it
    assert printed["subject_template"]["include_claim_keys"] == ["repo", "context", "job_workflow_ref"]
    assert printed["subject_command"].startswith(
        "gh api -X PUT repos/octo/doctable/actions/oidc/customization/sub"
    )


def test_a_global_tables_deploy_reads_each_replica_and_assumes_each_regions_bootstrap_roles() -> None:
    # GIVEN an environment with two replica regions
    statements = {
        s.sid: s
        for s in iam.command_statements(
            "deploy", target(stream="new-and-old", replicas="us-west-2,eu-west-1")
        )
    }
    # THEN the deploy reads each replica's description in that region's table: its drift (the gate's preflight)
    # and its stream ARN (the replica stacks), with its PITR
    assert statements["ReadReplicaTables"].resources == (
        f"arn:aws:dynamodb:us-west-2:{ACCOUNT}:table/items-dev",
        f"arn:aws:dynamodb:eu-west-1:{ACCOUNT}:table/items-dev",
    )
    assert statements["ReadReplicaTables"].actions == (
        "dynamodb:DescribeTable",
        "dynamodb:DescribeContinuousBackups",
    )
    # AND assumes the bootstrap roles of each replica region (the CLI deploys the replica stacks there)
    roles = statements["AssumeReplicaBootstrapRoles"].resources
    assert f"arn:aws:iam::{ACCOUNT}:role/cdk-hnb659fds-deploy-role-{ACCOUNT}-eu-west-1" in roles
    assert len(roles) == 4
    # AND may delete only this environment's replica stacks, in whichever region the settings dropped
    assert statements["DeleteRemovedReplicaStacks"].resources == (
        f"arn:aws:cloudformation:*:{ACCOUNT}:stack/doctable-items-dev-*/*",
    )
    # AND a single-region table's deploy has none of them
    single = {s.sid for s in iam.command_statements("deploy", target())}
    assert not single & {
        "ReadReplicaTables",
        "AssumeReplicaBootstrapRoles",
        "DeleteRemovedReplicaStacks",
    }


def test_no_policy_names_the_lookup_role_while_the_app_makes_no_context_lookup() -> None:
    # GIVEN the app and its constructs: a context lookup (from_lookup) is what the bootstrap's lookup role is for
    root = Path(__file__).resolve().parents[2]
    sources = [root / "app.py", *sorted((root / "infra").rglob("*.py"))]
    lookups = [
        str(p.relative_to(root))
        for p in sources
        if "from_lookup" in p.read_text() or "fromLookup" in p.read_text()
    ]
    # THEN there is none, and no policy of any command assumes the lookup role (one appearing fails here first)
    assert lookups == []
    for role in ("deployer", "operator", "reader"):
        for statement in statements(role, **FULL).values():
            assert not any("-lookup-role-" in r for r in statement.resources), (role, statement.sid)
