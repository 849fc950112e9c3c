"""`doctable policy` proven by behaviour on the local AWS, which enforces IAM: a principal holding only a
command's policy runs it to success against a deployed stack; with any one statement removed, the command fails
with one line naming the refused action and its resource (the sweep, ``make test-policies``).

One stack (table_base ``itpol``) deployed once for the module; the commands run as the console script does, with
the module's own settings file (env dev bound to the local account and region, as doctable.toml binds an
environment), so they run exactly as written in .github/workflows/deploy.yml.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from contract.settings import CONFIG_VARIABLE, Section, default_settings, render_settings
from doctable.ops.verify.expect import WRITING_CHECKS
from tests.support import localaws as lt
from tests.support.cli import Result, run_doctable

pytestmark = [pytest.mark.timeout(1800)]

# OTHER_ENV has no stack but while the teardown scenario runs: the ledger's look for a retained table.
ENV, OTHER_ENV = "dev", "stg"
KNOBS = {
    "table_base": "itpol",
    "gsi": "gsi1",
    "ttl": "on",
    "pitr": "on",
    "stream": "new-and-old",
    "blob_root": "blobs/",
}
SWEEP_VARIABLE = "SWEEP_POLICIES"
sweep = pytest.mark.skipif(
    os.environ.get(SWEEP_VARIABLE) != "1",
    reason=f"the one-statement-removed sweep runs in `make test-policies` ({SWEEP_VARIABLE}=1)",
)
REFUSAL = re.compile(r"is not authorized to perform: (\S+) on resource: \"?([^\s\"]+)")
WORKFLOWS = lt.ROOT / ".github" / "workflows"
CDK_OUT = lt.ROOT / "cdk.out"
VERIFY_BOUND = ("--timeout", "60")


# ---------------------------------------------------------------------------------------------- harness
class Principal:
    """An IAM user holding one inline policy, made through the IAM API as an administrator would."""

    def __init__(self, aws: lt.LocalAWS, name: str) -> None:
        self.iam = aws.client("iam")
        self.name = name
        self.iam.create_user(UserName=name)
        key = self.iam.create_access_key(UserName=name)["AccessKey"]
        self.key = {"AWS_ACCESS_KEY_ID": key["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"]}

    def allow(self, document: dict[str, Any]) -> None:
        self.iam.put_user_policy(
            UserName=self.name, PolicyName="doctable", PolicyDocument=json.dumps(document)
        )

    def env(self, base: dict[str, str]) -> dict[str, str]:
        return {**base, **self.key}

    def delete(self) -> None:
        self.iam.delete_user_policy(UserName=self.name, PolicyName="doctable")
        self.iam.delete_access_key(UserName=self.name, AccessKeyId=self.key["AWS_ACCESS_KEY_ID"])
        self.iam.delete_user(UserName=self.name)


@pytest.fixture(scope="module", autouse=True)
def enforced(local_aws: lt.LocalAWS) -> None:
    if (lt.api.health(local_aws.info.port) or {}).get("iam") != "enforced":
        pytest.skip("the local AWS runs without IAM enforcement (DOCTABLE_LOCAL_IAM=off)")


@pytest.fixture(scope="module")
def admin_env(local_aws: lt.LocalAWS, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment `doctable local env` gives, with this module's settings file and state directories."""
    directory = tmp_path_factory.mktemp("policies")
    path = directory / "doctable.toml"
    settings = default_settings(path)
    binding = {"account": lt.ACCOUNT, "region": lt.REGION}
    settings.environments[ENV] = Section(values=dict(KNOBS), **binding)
    # With the stream and the built-in consumer: the teardown scenario's stack has buckets, a role, a log group
    # and a mapping to empty and probe.
    other = {"table_base": KNOBS["table_base"], "stream": "new-and-old"}
    settings.environments[OTHER_ENV] = Section(values=other, **binding)
    path.write_text(render_settings(settings))
    return {
        **local_aws.env,
        CONFIG_VARIABLE: str(path),
        "DOCTABLE_STATE_DIR": str(directory / "state"),
        "DOCTABLE_LEDGER_DIR": str(directory / "ledger"),
    }


@pytest.fixture(scope="module")
def stack(deploy: Callable[..., lt.Deployed]) -> lt.Deployed:
    return deploy({"env": ENV, **KNOBS})


@pytest.fixture(scope="module")
def principals(local_aws: lt.LocalAWS) -> Iterator[Callable[[str], Principal]]:
    made: dict[str, Principal] = {}

    def get(name: str) -> Principal:
        if name not in made:
            made[name] = Principal(local_aws, f"itpol-{name}")
        return made[name]

    yield get
    for principal in made.values():
        principal.delete()


def doctable(env: dict[str, str], *args: str, timeout: float = 600) -> Result:
    """``doctable ARGS`` as the console script; a deploy first waits until no other CDK CLI holds the project's
    cdk.out (the CLI refuses to share it, and a working tree may be shared with other runs)."""
    if args and args[0] == "deploy":
        lt.wait_for(lambda: not list(CDK_OUT.glob("*.lock")), timeout=300, what="cdk.out to be free")
    return run_doctable(list(args), env=env, timeout=timeout)


def policy_of(
    admin_env: dict[str, str], role: str, command: str | None = None, env: str = ENV
) -> dict[str, Any]:
    """`doctable policy ROLE --env ENV [--command CMD] --json`'s document."""
    args = ["policy", role, "--env", env, "--json", *(["--command", command] if command else [])]
    result = doctable(admin_env, *args)
    assert result.code == 0, result.err
    document: dict[str, Any] = result.json()["policy"]
    return document


def union(*documents: dict[str, Any]) -> dict[str, Any]:
    """Several policies as one principal holds them (Sids kept apart)."""
    statements = [
        {**s, "Sid": f"{s['Sid']}{number}"} for number, d in enumerate(documents) for s in d["Statement"]
    ]
    return {"Version": "2012-10-17", "Statement": statements}


def without(document: dict[str, Any], sid: str) -> dict[str, Any]:
    kept = [s for s in document["Statement"] if s["Sid"] != sid]
    assert len(kept) == len(document["Statement"]) - 1
    return {**document, "Statement": kept}


def refusals(result: Result) -> list[tuple[str, str]]:
    """(action, resource) of every refusal the command printed, each on one line."""
    return [
        (m.group(1), m.group(2))
        for line in (result.out + result.err).splitlines()
        for m in [REFUSAL.search(line)]
        if m
    ]


# ---------------------------------------------------------------------------------------------- scenarios
@dataclass
class Context:
    aws: lt.LocalAWS
    stack: lt.Deployed
    admin_env: dict[str, str]


# Each runs one command as the principal (its environment variables) and returns what it said.
def run_preflight(env: dict[str, str], ctx: Context) -> list[Result]:
    return [doctable(env, "preflight", "--env", ENV)]


def run_ledger(env: dict[str, str], ctx: Context) -> list[Result]:
    return [doctable(env, "ledger", "--env", ENV)]


def run_other_ledger(env: dict[str, str], ctx: Context) -> list[Result]:
    # an environment whose stack does not exist: the ledger looks for a table retained without it
    return [doctable(env, "ledger", "--env", OTHER_ENV)]


def run_verify(env: dict[str, str], ctx: Context) -> list[Result]:
    return [doctable(env, "verify", "--env", ENV, "--json", *VERIFY_BOUND)]


def run_verify_read_only(env: dict[str, str], ctx: Context) -> list[Result]:
    return [doctable(env, "verify", "--env", ENV, "--json", "--read-only", *VERIFY_BOUND)]


def drift(aws: lt.LocalAWS, stack: lt.Deployed) -> None:  # the mapping's batch size: declared + 1
    """Change behind the stack what reconcile restores: PITR, a table tag, the mapping's batch size, a mapping tag."""
    ddb, lam = aws.client("dynamodb"), aws.client("lambda")
    table, uuid = stack.outputs["TableName"], stack.outputs["EventSourceMappingUuid"]
    ddb.update_continuous_backups(
        TableName=table, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": False}
    )
    ddb.untag_resource(ResourceArn=stack.outputs["TableArn"], TagKeys=["Environment"])
    declared = lam.get_event_source_mapping(UUID=uuid)["BatchSize"]
    mapping = lam.update_event_source_mapping(UUID=uuid, BatchSize=declared + 1)
    lam.untag_resource(Resource=mapping["EventSourceMappingArn"], TagKeys=["Environment"])


def drifted(aws: lt.LocalAWS, stack: lt.Deployed) -> list[str]:
    """What of :func:`drift` is drifted now."""
    ddb, lam = aws.client("dynamodb"), aws.client("lambda")
    table, uuid = stack.outputs["TableName"], stack.outputs["EventSourceMappingUuid"]
    left = []
    backups = ddb.describe_continuous_backups(TableName=table)["ContinuousBackupsDescription"]
    if backups["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] != "ENABLED":
        left.append("pitr")
    tags = ddb.list_tags_of_resource(ResourceArn=stack.outputs["TableArn"])["Tags"]
    if {t["Key"]: t["Value"] for t in tags}.get("Environment") != ENV:
        left.append("table tag")
    mapping = lam.get_event_source_mapping(UUID=uuid)
    declared = json.loads(lt.stack_outputs(aws, stack.name)["Knobs"])["batch_size"]  # as last deployed
    if mapping["BatchSize"] != int(declared):
        left.append("batch size")
    if lam.list_tags(Resource=mapping["EventSourceMappingArn"])["Tags"].get("Environment") != ENV:
        left.append("mapping tag")
    return left


def run_reconcile(env: dict[str, str], ctx: Context) -> list[Result]:
    drift(ctx.aws, ctx.stack)
    result = doctable(env, "reconcile", "--env", ENV, "--apply")
    if drifted(ctx.aws, ctx.stack):  # leave the stack as deployed for the next run
        restored = doctable(ctx.admin_env, "reconcile", "--env", ENV, "--apply")
        assert restored.code == 0, restored.err
    return [result]


def kept_batch(ctx: Context, key: str) -> str:
    """A batch kept on the failure bucket with its payload (one REMOVE that listed a blob), as an object key."""
    outputs = ctx.stack.outputs
    record = {
        "eventID": "replayed-1",
        "eventName": "REMOVE",
        "eventSource": "aws:dynamodb",
        "eventSourceARN": outputs["StreamArn"],
        "awsRegion": lt.REGION,
        "dynamodb": {
            "Keys": {"pk": {"S": "replayed"}, "sk": {"S": key}},
            "OldImage": {
                "pk": {"S": "replayed"},
                "sk": {"S": key},
                "blobs": {"L": [{"S": f"{KNOBS['blob_root']}replayed/{key}.bin"}]},
            },
            "SequenceNumber": "1",
            "ApproximateCreationDateTime": 1_700_000_000,
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        },
    }
    name = f"aws/lambda/itpol/{key}.json"
    body = {
        "requestContext": {"condition": "RetryAttemptsExhausted"},
        "payload": json.dumps({"Records": [record]}),
    }
    ctx.aws.client("s3").put_object(
        Bucket=outputs["FailureBucketName"], Key=name, Body=json.dumps(body).encode()
    )
    return name


def kept_batch_info(ctx: Context, key: str) -> str:
    """A batch kept without its payload (Lambda keeps only DDBStreamBatchInfo then): the stream range of one
    INSERT written now, which replay re-reads from the stream."""
    outputs = ctx.stack.outputs
    ddb, streams = ctx.aws.client("dynamodb"), ctx.aws.client("dynamodbstreams")
    ddb.put_item(TableName=outputs["TableName"], Item={"pk": {"S": "replayed"}, "sk": {"S": key}})
    shard = streams.describe_stream(StreamArn=outputs["StreamArn"])["StreamDescription"]["Shards"][-1]
    iterator = streams.get_shard_iterator(
        StreamArn=outputs["StreamArn"], ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    records = streams.get_records(ShardIterator=iterator, Limit=1000)["Records"]
    sequence = records[-1]["dynamodb"]["SequenceNumber"]
    body = {
        "requestContext": {"condition": "RetryAttemptsExhausted"},
        "DDBStreamBatchInfo": {
            "streamArn": outputs["StreamArn"],
            "shardId": shard["ShardId"],
            "startSequenceNumber": sequence,
            "endSequenceNumber": sequence,
            "batchSize": 1,
        },
    }
    name = f"aws/lambda/itpol/{key}.json"
    ctx.aws.client("s3").put_object(
        Bucket=outputs["FailureBucketName"], Key=name, Body=json.dumps(body).encode()
    )
    return name


def run_replay(env: dict[str, str], ctx: Context) -> list[Result]:
    kept_batch(ctx, "one")
    kept_batch_info(ctx, "two")  # the stream read: RereadStreamRecords
    result = doctable(env, "replay", "--env", ENV)
    lt.empty_bucket(ctx.aws, ctx.stack.outputs["FailureBucketName"])  # what a refused replay left
    return [result]


def run_teardown(env: dict[str, str], ctx: Context) -> list[Result]:
    # OTHER_ENV's stack, deployed by the administrator for each run and torn down by the principal; whatever a
    # refused teardown left is removed by the administrator, so OTHER_ENV has no stack between runs.
    deployed = doctable(ctx.admin_env, "deploy", "--env", OTHER_ENV, "--json", "--no-verify", timeout=900)
    assert deployed.code == 0, deployed.err[-3000:]
    result = doctable(env, "teardown", "--env", OTHER_ENV, "--yes")
    if result.code != 0:
        cleaned = doctable(ctx.admin_env, "teardown", "--env", OTHER_ENV, "--yes")
        assert cleaned.code == 0, cleaned.err[-3000:]
    return [result]


def run_deploy(env: dict[str, str], ctx: Context) -> list[Result]:
    # the deployer's part alone: preflight, the gate and cdk deploy (verify is the operator's)
    return [doctable(env, "deploy", "--env", ENV, "--json", "--no-verify", timeout=900)]


Scenario = Callable[[dict[str, str], Context], list[Result]]
# command -> (the role whose part it is, the environment whose policy it holds, the run)
SCENARIOS: dict[str, tuple[str, str, Scenario]] = {
    "preflight": ("reader", ENV, run_preflight),
    "deploy": ("deployer", ENV, run_deploy),
    "ledger": ("reader", ENV, run_ledger),
    "ledger-of-a-stack-gone": ("reader", OTHER_ENV, run_other_ledger),
    "verify": ("operator", ENV, run_verify),
    "verify-read-only": ("reader", ENV, run_verify_read_only),
    "reconcile": ("operator", ENV, run_reconcile),
    "replay": ("operator", ENV, run_replay),
    "teardown": ("operator", OTHER_ENV, run_teardown),
}
# A statement whose refusal verify survives by design, and what it then loses: without the stream read, the
# proof line is matched by time instead of by the write's sequence number.
DEGRADED = {("verify", "ReadStreamRecord"): "sequence number unavailable"}
# A refusal the command reports in another's name: without the bootstrap roles, the CDK CLI falls back to the
# caller's own credentials (it says so only with --verbose), whose first call, the bootstrap version's SSM
# parameter, is then refused.
REFUSED_INSTEAD = {("deploy", "AssumeCdkBootstrapRoles"): "ssm:getparameter"}
# The deployed environment's ledger needs no DescribeTable (there is no retained table to look for): swept on
# the environment whose stack is gone instead.
SWEPT = (
    "preflight",
    "deploy",
    "ledger-of-a-stack-gone",
    "verify",
    "verify-read-only",
    "reconcile",
    "replay",
    "teardown",
)


@pytest.fixture(scope="module")
def ctx(local_aws: lt.LocalAWS, stack: lt.Deployed, admin_env: dict[str, str]) -> Context:
    return Context(local_aws, stack, admin_env)


def command_of(scenario: str) -> str:
    return scenario.split("-", 1)[0]


# ---------------------------------------------------------------------------------------------- each command
@pytest.mark.integration
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_each_command_succeeds_with_exactly_its_policy(
    scenario: str, ctx: Context, principals: Callable[[str], Principal]
) -> None:
    # GIVEN a principal holding only the command's policy, as `doctable policy` prints it
    role, env, run = SCENARIOS[scenario]
    command = command_of(scenario)
    principal = principals(scenario)
    principal.allow(policy_of(ctx.admin_env, role, command, env=env))
    # WHEN it runs the command against the deployed stack
    results = run(principal.env(ctx.admin_env), ctx)
    # THEN it succeeds, refused nothing
    for result in results:
        assert result.code == 0, f"{scenario}: exit {result.code}\n{result.out[-3000:]}\n{result.err[-3000:]}"
        assert refusals(result) == []
    if scenario == "verify":
        rows = {row["id"]: row for row in results[0].json()["rows"]}
        assert {r["result"] for r in rows.values()} == {"PASS"}
        # the record-level proof: the nudge's sequence number read off the stream
        assert rows["stream-delivery"]["observed"].startswith("seq "), rows["stream-delivery"]
    if scenario == "verify-read-only":
        record = results[0].json()
        assert record["read_only"] is True and {r["result"] for r in record["rows"]} == {"PASS"}
        # every check that writes skipped, by its id; none of them run
        assert [(s["id"], s["reason"]) for s in record["skipped"]] == [
            (c, "read-only") for c in WRITING_CHECKS
        ]
        assert not {r["id"] for r in record["rows"]} & set(WRITING_CHECKS)
    if command == "reconcile":
        assert drifted(ctx.aws, ctx.stack) == [], results[0].out + results[0].err
    if command == "replay":
        assert "2 replayed and removed, 0 kept" in results[0].out, results[0].out


@pytest.mark.integration
def test_a_command_outside_the_policy_is_refused_naming_action_and_resource(
    ctx: Context, principals: Callable[[str], Principal]
) -> None:
    # GIVEN the reader's policy (preflight, ledger, the read-only verify) and drift on the stack
    principal = principals("reader")
    principal.allow(policy_of(ctx.admin_env, "reader"))
    drift(ctx.aws, ctx.stack)
    # WHEN the reader runs reconcile --apply
    try:
        result = doctable(principal.env(ctx.admin_env), "reconcile", "--env", ENV, "--apply")
    finally:
        restored = doctable(ctx.admin_env, "reconcile", "--env", ENV, "--apply")
    # THEN its first repair is refused: one line naming the action and the table, exit non-zero, no traceback
    assert result.code != 0
    assert refusals(result) == [("dynamodb:TagResource", ctx.stack.outputs["TableArn"])], result.err
    assert restored.code == 0, restored.err


# ---------------------------------------------------------------------------------------------- the workflow
def workflow_steps(name: str, step_names: tuple[str, ...]) -> list[list[str]]:
    """The ``run:`` commands of the named steps of a workflow, split as the shell splits them."""
    workflow = yaml.safe_load((WORKFLOWS / name).read_text())
    steps = [s for job in workflow["jobs"].values() for s in job.get("steps", [])]
    found = []
    for wanted in step_names:
        step = next(s for s in steps if s.get("name") == wanted)
        found.append(shlex.split(step["run"]))
    return found


@pytest.mark.integration
def test_the_pipelines_deploy_and_verify_steps_run_with_the_deployer_and_operator_policies(
    ctx: Context, principals: Callable[[str], Principal]
) -> None:
    # GIVEN the dev job's deploy and verify steps as deploy.yml writes them
    deploy_step, verify_step = workflow_steps("deploy.yml", ("deploy dev", "verify dev"))
    assert deploy_step[:2] == ["doctable", "deploy"] and verify_step[:2] == ["doctable", "verify"]
    assert "--allow-destructive" not in deploy_step
    # AND a principal holding only the deployer's and the operator's policies (the CI role's)
    principal = principals("ci")
    principal.allow(union(policy_of(ctx.admin_env, "deployer"), policy_of(ctx.admin_env, "operator")))
    env = principal.env(ctx.admin_env)
    # WHEN the steps run, exactly as written
    deployed = doctable(env, *deploy_step[1:], timeout=900)
    verified = doctable(env, *verify_step[1:], timeout=600)
    # THEN the deploy went through preflight, the gate and cdk deploy (the CLI assuming the bootstrap roles),
    # and verify passed, both times
    assert deployed.code == 0, f"{deployed.out[-3000:]}\n{deployed.err[-3000:]}"
    report = deployed.json()
    assert report["deployed"] is True and report["refused"] == [] and report["verified"] is True
    assert verified.code == 0, verified.err[-3000:]
    assert refusals(deployed) == [] and refusals(verified) == []


# ---------------------------------------------------------------------------------------------- the sweep
@pytest.mark.policies
@sweep
@pytest.mark.parametrize("scenario", SWEPT)
def test_every_statement_is_needed(
    scenario: str, ctx: Context, principals: Callable[[str], Principal]
) -> None:
    role, env, run = SCENARIOS[scenario]
    command = command_of(scenario)
    principal = principals(f"sweep-{scenario}")
    document = policy_of(ctx.admin_env, role, command, env=env)
    unneeded = []
    for statement in document["Statement"]:
        sid = statement["Sid"]
        # GIVEN the command's policy without one statement
        principal.allow(without(document, sid))
        # WHEN the command runs
        results = run(principal.env(ctx.admin_env), ctx)
        # THEN it fails naming a refused action of that statement (or loses what the statement is for)
        if (command, sid) in DEGRADED:
            if DEGRADED[command, sid] not in "".join(r.out for r in results):
                unneeded.append(sid)
            continue
        if all(r.code == 0 for r in results):
            unneeded.append(sid)
            continue
        refused = [action.lower() for r in results for action, _ in refusals(r)]
        actions = {a.lower() for a in statement["Action"]}
        if (command, sid) in REFUSED_INSTEAD:
            actions = {REFUSED_INSTEAD[command, sid]}
        assert actions & set(refused), (
            f"{scenario} without {sid} failed without naming one of {sorted(actions)}: {refused}\n"
            + "\n".join(r.out[-2000:] + r.err[-2000:] for r in results)
        )
    assert unneeded == [], f"{scenario}: the policy holds statements the command runs without: {unneeded}"
