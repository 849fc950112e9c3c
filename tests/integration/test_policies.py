"""`doctable policy` proven by behaviour on the local AWS, which enforces IAM: a principal holding only a
command's policy runs it to success against a deployed stack; with any one statement removed, the command fails
with one line naming the refused action and its resource (the sweep, ``make test-policies``).

One stack of the plain shape (tests/support/policies.py PLAIN: the stream, the built-in consumer, an index)
deployed once for the module; the commands run as the console script does, with the module's own settings file
(env dev bound to the local account and region, as doctable.toml binds an environment), so they run exactly as
written in .github/workflows/deploy.yml. test_policies_keyed.py does the same for the statements a customer
managed key and Kinesis add.
"""

from __future__ import annotations

import fnmatch
import shlex
from collections.abc import Callable, Iterator

import pytest
import yaml

from contract.iam.lock import LOCK_PREFIX, lock_arn
from doctable.verify.expect import WRITING_CHECKS
from tests.support import localaws as lt
from tests.support import policies as pol
from tests.support.policies import PLAIN, Context, Principal, doctable, policy_of, refusals, union

pytestmark = [pytest.mark.iam, pytest.mark.timeout(1800)]

WORKFLOWS = lt.ROOT / ".github" / "workflows"
sweep = pol.sweep_only
# The deployed environment's ledger needs no DescribeTable (there is no retained table to look for): swept on
# the environment whose stack is gone instead.
SWEPT = tuple(s for s in pol.EVERY_SHAPE if s != "ledger")


@pytest.fixture(scope="module", autouse=True)
def enforced(local_aws: lt.LocalAWS) -> None:
    pol.require_enforced(local_aws)


@pytest.fixture(scope="module")
def admin_env(local_aws: lt.LocalAWS, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return pol.settings_env(local_aws, tmp_path_factory.mktemp("policies"), PLAIN)


@pytest.fixture(scope="module")
def ctx(local_aws: lt.LocalAWS, deploy: Callable[..., lt.Deployed], admin_env: dict[str, str]) -> Context:
    deployed = deploy({"env": PLAIN.env, **PLAIN.knobs})
    return Context(local_aws, pol.Stack(deployed.name, deployed.outputs), admin_env, PLAIN)


@pytest.fixture(scope="module")
def principals(local_aws: lt.LocalAWS) -> Iterator[Callable[[str], Principal]]:
    yield from pol.principals_of(local_aws, PLAIN.base)


# ---------------------------------------------------------------------------------------------- each command
@pytest.mark.integration
@pytest.mark.parametrize("scenario", pol.EVERY_SHAPE)
def test_each_command_succeeds_with_exactly_its_policy(
    scenario: str, ctx: Context, principals: Callable[[str], Principal]
) -> None:
    # GIVEN a principal holding only the command's policy, as `doctable policy` prints it
    principal = principals(scenario)
    principal.allow(pol.scenario_policy(ctx, scenario))
    # WHEN it runs the command against the deployed stack
    results = pol.SCENARIOS[scenario][2](principal.env(ctx.admin_env), ctx)
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
    if scenario == "reconcile":
        assert ctx.seen["drifted"] == [], results[0].out + results[0].err
    if scenario == "replay":
        replayed = results[0].json()
        assert (replayed["kept"], [o["result"] for o in replayed["objects"]]) == (
            0,
            ["REPLAYED, removed"] * 2,
        )
    if scenario == "logs":
        read = results[0].json()
        assert read["proof_lines"] >= 1 and read["log_group"] == ctx.stack.outputs["ConsumerLogGroupName"]
    if scenario == "invoke":
        answer = results[0].json()
        assert (answer["function_error"], answer["batch_item_failures"]) == (None, [])
        assert answer["proof_lines"] == 1, answer["log"]


@pytest.mark.integration
def test_the_policies_name_the_deployed_buckets_so_no_other_environments_bucket_matches(ctx: Context) -> None:
    # GIVEN the deployed stack, whose buckets are named <table>-<account>-<region>-blobs|failures (bucket_names=exact)
    failure, blob = ctx.stack.outputs["FailureBucketName"], ctx.stack.outputs["BlobBucketName"]
    # WHEN the operator's policy is printed with the credentials of the stack's account
    result = doctable(ctx.admin_env, "policy", "operator", "--env", PLAIN.env, "--json")
    assert result.code == 0, result.err
    record = result.json()
    # THEN it names those two buckets exactly, and says so
    assert record["buckets"] == {"exact": True, "failure": failure, "blob": blob}
    named = {r.split(":::", 1)[1].split("/", 1)[0] for s in record["policy"]["Statement"] for r in s["Resource"]
             if ":s3:::" in r and LOCK_PREFIX not in r}  # fmt: skip
    assert named == {failure, blob}
    # AND beside them only the environment's lock, one object in the bootstrap's assets bucket
    locks = {r for s in record["policy"]["Statement"] for r in s["Resource"] if LOCK_PREFIX in r}
    assert locks == {lock_of(ctx)}
    # AND a bucket of another environment of the same table, whose name starts alike, matches none
    other_environments = f"{failure[:14]}{'x' * (len(failure) - 14)}"
    s3 = [r for s in record["policy"]["Statement"] for r in s["Resource"] if r.startswith("arn:aws:s3:::")]
    theirs = (f"arn:aws:s3:::{other_environments}", f"arn:aws:s3:::{other_environments}/blobs/k")
    assert not [r for r in s3 for arn in theirs if fnmatch.fnmatchcase(arn, r)]
    # AND offline (as before a deploy) the settings alone name the same two buckets: no pattern
    offline = doctable(ctx.admin_env, "policy", "operator", "--env", PLAIN.env, "--json", "--offline").json()
    assert offline["buckets"] == record["buckets"] and offline["policy"] == record["policy"]
    assert not any("print the policy again once the stack is deployed" in note for note in offline["notes"])


@pytest.mark.integration
def test_a_command_outside_the_policy_is_refused_naming_action_and_resource(
    ctx: Context, principals: Callable[[str], Principal]
) -> None:
    # GIVEN the reader's policy (preflight, ledger, the read-only verify) and drift on the stack
    principal = principals("reader")
    principal.allow(policy_of(ctx.admin_env, "reader", None, PLAIN.env))
    pol.drift(ctx)
    # WHEN the reader runs reconcile --apply
    try:
        result = doctable(principal.env(ctx.admin_env), "reconcile", "--env", PLAIN.env, "--apply")
        as_json = doctable(principal.env(ctx.admin_env), "reconcile", "--env", PLAIN.env, "--apply", "--json")
    finally:
        restored = doctable(ctx.admin_env, "reconcile", "--env", PLAIN.env, "--apply")
    # THEN its first change is refused, the environment's lock it must take before any repair: one line naming
    # the action and the lock's object, exit non-zero, no traceback
    assert result.code != 0
    assert pol.prose_refusals(result) == [("s3:PutObject", lock_of(ctx))], result.err
    # AND with --json the refusal is data: its code, the action, the resource and who was refused
    error = as_json.json()
    assert (as_json.code, error["code"], error["action"], error["resource"]) == (
        4, "aws.access_denied", "s3:PutObject", lock_of(ctx)
    )  # fmt: skip
    assert error["principal"].endswith(f":user/{principal.name}"), error
    assert restored.code == 0, restored.err


def lock_of(ctx: Context) -> str:
    """The ARN of the environment's lock (contract/iam/lock.py), in the account and region of its table."""
    _, _, _, region, account, _ = ctx.stack.outputs["TableArn"].split(":", 5)
    return lock_arn("aws", account, region, ctx.stack.name)


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
    principal.allow(
        union(
            policy_of(ctx.admin_env, "deployer", None, PLAIN.env),
            policy_of(ctx.admin_env, "operator", None, PLAIN.env),
        )
    )
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
    # GIVEN the command's policy without one statement, for each statement in turn
    # WHEN the command runs
    unneeded, misreported = pol.sweep(scenario, ctx, principals(f"sweep-{scenario}"))
    # THEN it fails naming a refused action of that statement (or loses what the statement is for)
    assert misreported == [], f"{scenario}: " + "\n".join(misreported)
    assert unneeded == [], f"{scenario}: the policy holds statements the command runs without: {unneeded}"
