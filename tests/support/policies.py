"""The harness of the policy tests (tests/integration/test_policies*.py): a principal holding one policy, the
commands run as that principal through the console script, each command's scenario on a deployed stack of a
shape (tests/support/policy_stacks.py), and the one-statement-removed sweep.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from contract.iam import policies as iam
from contract.knobs import resolve_config
from contract.settings.render import default_settings, render_settings
from contract.settings.resolve import CONFIG_VARIABLE, Section
from tests.support import localaws as lt
from tests.support.cli import Result, run_doctable
from tests.support.policy_stacks import (
    GLOBAL,
    KEYED,
    PLAIN,
    REPLICA_REGION,
    Context,
    Shape,
    Stack,
    drift,
    drifted,
    kept_batch,
    kept_batch_info,
)

# The shapes and the stack changes, for the test modules beside the harness.
__all__ = ["GLOBAL", "KEYED", "PLAIN", "REPLICA_REGION", "Context", "Stack", "drift"]

REFUSAL = re.compile(r"is not authorized to perform: (\S+) on resource: \"?([^\s\"]+)")
CDK_OUT = lt.ROOT / "cdk.out"
VERIFY_BOUND = ("--timeout", "60")
SWEEP_VARIABLE = "SWEEP_POLICIES"


# ---------------------------------------------------------------------------------------------- harness
# The sweep's marker: it runs in `make test-policies` only.
sweep_only = pytest.mark.skipif(
    os.environ.get(SWEEP_VARIABLE) != "1",
    reason=f"the one-statement-removed sweep runs in `make test-policies` ({SWEEP_VARIABLE}=1)",
)


require_enforced = lt.require_enforced  # fails, never skips, a module whose local AWS does not enforce IAM


def principals_of(aws: lt.LocalAWS, prefix: str) -> Iterator[Callable[[str], Principal]]:
    """A module fixture's body: principals made on first use (named ``<prefix>-<name>``), deleted at its end."""
    made: dict[str, Principal] = {}

    def get(name: str) -> Principal:
        if name not in made:
            made[name] = Principal(aws, f"{prefix}-{name}")
        return made[name]

    yield get
    for principal in made.values():
        principal.delete()


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


def qualifier_of(shape: Shape, env: str) -> str:
    """The bootstrap qualifier of one of the shape's environments under the sweep (each its own: a bootstrap holds
    one environment's execution policy)."""
    return "q" + hashlib.sha1(f"{shape.base}-{env}".encode(), usedforsecurity=False).hexdigest()[:9]


def settings_env(aws: lt.LocalAWS, directory: Path, shape: Shape) -> dict[str, str]:
    """The environment `doctable local env` gives, with a settings file binding the shape's two environments to
    the local account and region (as doctable.toml binds an environment), and state directories of its own.
    Under the sweep (`make test-policies`) each environment also binds a qualifier of its own, bootstrapped by
    `doctable bootstrap` (its execution policy and boundary): the commands then deploy through it."""
    bootstrapped = os.environ.get(SWEEP_VARIABLE) == "1"
    path = directory / "doctable.toml"
    settings = default_settings(path)
    for env, knobs in ((shape.env, shape.knobs), (shape.other_env, shape.other)):
        # the file writes replicas as TOML writes a list (the knobs here carry the command line's text)
        values: dict[str, Any] = {k: v.split(",") if k == "replicas" else v for k, v in knobs.items()}
        qualifier = qualifier_of(shape, env) if bootstrapped else None
        settings.environments[env] = Section(
            values=values, account=lt.ACCOUNT, region=lt.REGION, qualifier=qualifier
        )
    path.write_text(render_settings(settings))
    environment = {
        **aws.env,
        CONFIG_VARIABLE: str(path),
        "DOCTABLE_STATE_DIR": str(directory / "state"),
        "DOCTABLE_LEDGER_DIR": str(directory / "ledger"),
    }
    for env in (shape.env, shape.other_env) if bootstrapped else ():
        done = run_doctable(["bootstrap", "--env", env, "--json"], env=environment, timeout=600)
        assert done.code == 0, done.err[-3000:]
    return environment


def doctable(env: dict[str, str], *args: str, timeout: float = 600) -> Result:
    """``doctable ARGS`` as the console script; a deploy first waits until no other CDK CLI holds the project's
    cdk.out (the CLI refuses to share it, and a working tree may be shared with other runs)."""
    if args and args[0] == "deploy":
        lt.wait_for(lambda: not list(CDK_OUT.glob("*.lock")), timeout=300, what="cdk.out to be free")
    return run_doctable(list(args), env=env, timeout=timeout)


def policy_of(admin_env: dict[str, str], role: str, command: str | None, env: str) -> dict[str, Any]:
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
    """(action, resource) of every refusal the command reported as data: anywhere in the JSON it printed (its
    --json error document, a verify row's ``error``), an object whose ``code`` is ``aws.access_denied`` names
    the ``action`` and ``resource`` AWS named (doctable.core.aws.failure_fields)."""
    found: list[tuple[str, str]] = []
    for document in json_documents(result.out):
        found += list(_refused_in(document))
    return found


def cdk_refusals(result: Result) -> list[tuple[str, str]]:
    """(action, resource) of each refusal the CDK CLI printed: its output is prose (not the project's), so a
    deploy's refusal inside `cdk deploy` is read from its line."""
    return [
        (m.group(1), m.group(2))
        for line in (result.out + result.err).splitlines()
        for m in [REFUSAL.search(line)]
        if m
    ]


prose_refusals = cdk_refusals  # the one-line message a person reads names the same action and resource


def json_documents(text: str) -> list[Any]:
    """Every JSON document in ``text`` (a command's stdout with --json: one document, or one per line)."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while at < len(text):
        start = min((i for i in (text.find("{", at), text.find("[", at)) if i >= 0), default=-1)
        if start < 0:
            break
        try:
            document, at = decoder.raw_decode(text, start)
        except ValueError:
            at = start + 1
            continue
        found.append(document)
    return found


def _refused_in(value: Any) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        if value.get("code") == "aws.access_denied" and value.get("action"):
            yield str(value["action"]), str(value.get("resource", ""))
        for inner in value.values():
            yield from _refused_in(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _refused_in(inner)


# ---------------------------------------------------------------------------------------------- scenarios
# Every scenario runs its command with --json: the sweep reads a refusal from the fields it prints.
def run_preflight(env: dict[str, str], ctx: Context) -> list[Result]:
    return [doctable(env, "preflight", "--env", ctx.shape.env, "--json")]


def run_ledger(env: dict[str, str], ctx: Context) -> list[Result]:
    return [doctable(env, "ledger", "--env", ctx.shape.env, "--json")]


def run_other_ledger(env: dict[str, str], ctx: Context) -> list[Result]:
    # an environment whose stack does not exist: the ledger looks for a table retained without it
    return [doctable(env, "ledger", "--env", ctx.shape.other_env, "--json")]


def run_verify(env: dict[str, str], ctx: Context) -> list[Result]:
    return [doctable(env, "verify", "--env", ctx.shape.env, "--json", *VERIFY_BOUND)]


def run_verify_read_only(env: dict[str, str], ctx: Context) -> list[Result]:
    return [doctable(env, "verify", "--env", ctx.shape.env, "--json", "--read-only", *VERIFY_BOUND)]


def run_reconcile(env: dict[str, str], ctx: Context) -> list[Result]:
    drift(ctx)
    result = doctable(env, "reconcile", "--env", ctx.shape.env, "--apply", "--json")
    ctx.seen["drifted"] = drifted(ctx)
    if ctx.seen["drifted"]:  # leave the stack as deployed for the next run
        restored = doctable(ctx.admin_env, "reconcile", "--env", ctx.shape.env, "--apply")
        assert restored.code == 0, restored.err
    return [result]


def run_replay(env: dict[str, str], ctx: Context) -> list[Result]:
    kept_batch(ctx, "one")
    kept_batch_info(ctx, "two")  # the stream read: RereadStreamRecords
    result = doctable(env, "replay", "--env", ctx.shape.env, "--json")
    lt.empty_bucket(ctx.aws, ctx.stack.outputs["FailureBucketName"])  # what a refused replay left
    return [result]


def run_teardown(env: dict[str, str], ctx: Context) -> list[Result]:
    # The other environment's stack, deployed by the administrator for each run and torn down by the principal;
    # whatever a refused teardown left is removed by the administrator, so it has no stack between runs.
    other = ctx.shape.other_env
    # a protected table (and its replicas) is unlocked first, as the operator says it means it
    lift = ("--lift-deletion-protection",) if ctx.shape.other.get("deletion_protection") == "on" else ()
    deployed = doctable(ctx.admin_env, "deploy", "--env", other, "--json", "--no-verify", timeout=900)
    assert deployed.code == 0, deployed.err[-3000:]
    result = doctable(env, "teardown", "--env", other, "--yes", "--json", *lift)
    if result.code != 0:
        cleaned = doctable(ctx.admin_env, "teardown", "--env", other, "--yes", *lift)
        assert cleaned.code == 0, cleaned.err[-3000:]
    return [result]


def run_deploy(env: dict[str, str], ctx: Context) -> list[Result]:
    # the deployer's part alone: preflight, the gate and cdk deploy (verify is the operator's)
    return [doctable(env, "deploy", "--env", ctx.shape.env, "--json", "--no-verify", timeout=900)]


def _invoke(env: dict[str, str], ctx: Context, sk: str, *more: str) -> Result:
    """`doctable invoke` of one INSERT of the item (policies, ``sk``)."""
    args = ("--env", ctx.shape.env, "--event", "insert", "--pk", "policies", "--sk", sk, "--json", *more)
    return doctable(env, "invoke", *args)


def run_logs(env: dict[str, str], ctx: Context) -> list[Result]:
    # a proof line to read: the administrator invokes the consumer once first
    sent = _invoke(ctx.admin_env, ctx, "logs")
    assert sent.code == 0, sent.err
    return [doctable(env, "logs", "--env", ctx.shape.env, "--since", "1h", "--json")]


def run_invoke(env: dict[str, str], ctx: Context) -> list[Result]:
    return [_invoke(env, ctx, "invoke")]


def run_logs_replica(env: dict[str, str], ctx: Context) -> list[Result]:
    """`doctable logs --region REPLICA_REGION`: the replica region's consumer's lines (one invoked there first)."""
    sent = _invoke(ctx.admin_env, ctx, "logs", "--region", REPLICA_REGION)
    assert sent.code == 0, sent.err
    return [
        doctable(env, "logs", "--env", ctx.shape.env, "--region", REPLICA_REGION, "--since", "1h", "--json")
    ]


def run_invoke_replica(env: dict[str, str], ctx: Context) -> list[Result]:
    return [_invoke(env, ctx, "invoke", "--region", REPLICA_REGION)]


Scenario = Callable[[dict[str, str], Context], list[Result]]
# scenario -> (the role whose part it is, whether it runs on the other environment, the run)
SCENARIOS: dict[str, tuple[str, bool, Scenario]] = {
    "preflight": ("reader", False, run_preflight),
    "deploy": ("deployer", False, run_deploy),
    "ledger": ("reader", False, run_ledger),
    "ledger-of-a-stack-gone": ("reader", True, run_other_ledger),
    "verify": ("operator", False, run_verify),
    "verify-read-only": ("reader", False, run_verify_read_only),
    "reconcile": ("operator", False, run_reconcile),
    "replay": ("operator", False, run_replay),
    "teardown": ("operator", True, run_teardown),
    "logs": ("operator", False, run_logs),
    "invoke": ("operator", False, run_invoke),
    # a global table's replica region (--region): its consumer's lines, its consumer invoked
    "logs-replica": ("operator", False, run_logs_replica),
    "invoke-replica": ("operator", False, run_invoke_replica),
}
# The scenarios of a global table's replica region alone (test_policies_global.py); every other shape runs the rest.
GLOBAL_ONLY = ("logs-replica", "invoke-replica")
EVERY_SHAPE = tuple(s for s in SCENARIOS if s not in GLOBAL_ONLY)
# A statement whose refusal verify survives by design, and what it then loses: without a stream's read, the
# proof line is matched by time instead of by the write's sequence number.
DEGRADED = {
    ("verify", "ReadStreamRecord"): "sequence number unavailable",
    # a replica region's nudge, proven by time instead of by its record's sequence number in that region
    ("verify", "ReadReplicaStreamRecord"): "(by time)",
}
# A refusal the command reports in another's name: without the bootstrap roles, the CDK CLI falls back to the
# caller's own credentials (it says so only with --verbose), whose first call, the bootstrap version's SSM
# parameter, is then refused.
REFUSED_INSTEAD = {
    ("deploy", "AssumeCdkBootstrapRoles"): "ssm:getparameter",
    ("deploy", "AssumeReplicaBootstrapRoles"): "ssm:getparameter",  # the replica region's, the same way
}


def command_of(scenario: str) -> str:
    return scenario.split("-", 1)[0]


def scenario_policy(ctx: Context, scenario: str) -> dict[str, Any]:
    """The policy `doctable policy` prints for the scenario's command, role and environment."""
    role, other, _ = SCENARIOS[scenario]
    env = ctx.shape.other_env if other else ctx.shape.env
    return policy_of(ctx.admin_env, role, command_of(scenario), env)


def sweep(
    scenario: str, ctx: Context, principal: Principal, only: set[str] | None = None
) -> tuple[list[str], list[str]]:
    """Run the scenario once per statement of its policy (of ``only``'s Sids, when given), that statement
    removed. Returns the statements the command ran without (unneeded) and, for each other one, a line where the
    command failed without naming one of that statement's actions (wrongly reported)."""
    run = SCENARIOS[scenario][2]
    command = command_of(scenario)
    document = scenario_policy(ctx, scenario)
    unneeded: list[str] = []
    misreported: list[str] = []
    swept = [s for s in document["Statement"] if only is None or s["Sid"] in only]
    assert only is None or {s["Sid"] for s in swept} == only, f"{scenario}: {only} not all in its policy"
    for statement in swept:
        sid = statement["Sid"]
        principal.allow(without(document, sid))
        results = run(principal.env(ctx.admin_env), ctx)
        if (command, sid) in DEGRADED:
            if DEGRADED[command, sid] not in "".join(r.out for r in results):
                unneeded.append(sid)
            continue
        if all(r.code == 0 for r in results):
            unneeded.append(sid)
            continue
        # a refusal as the command's data (deploy's preflight and gate too); inside `cdk deploy`, as the CDK CLI's
        # line (its output is prose)
        refused = [
            action.lower()
            for r in results
            for action, _ in refusals(r) + (cdk_refusals(r) if command == "deploy" else [])
        ]
        actions = {a.lower() for a in statement["Action"]}
        if (command, sid) in REFUSED_INSTEAD:
            actions = {REFUSED_INSTEAD[command, sid]}
        if not actions & set(refused):
            said = "\n".join(r.out[-1500:] + r.err[-1500:] for r in results)
            misreported.append(f"without {sid} it failed naming none of {sorted(actions)}: {refused}\n{said}")
    return unneeded, misreported


def statements_added(scenario: str, shape: Shape, than: Shape) -> set[str]:
    """The Sids of the scenario's policy for ``shape`` that ``than``'s has not, or has with other actions: what a
    sweep of ``shape`` proves that one of ``than`` does not."""
    role, other, _ = SCENARIOS[scenario]
    part = iam.part_of(role, command_of(scenario))

    def sids(of: Shape) -> dict[str, tuple[str, ...]]:
        env = of.other_env if other else of.env
        knobs = of.other if other else of.knobs
        config = resolve_config(context={"env": env, **knobs}, environ={}, defaults={})
        target = iam.Target(config, lt.ACCOUNT, lt.REGION)
        return {s.sid: s.actions for s in iam.command_statements(part, target)}

    found, base = sids(shape), sids(than)
    return {sid for sid, actions in found.items() if base.get(sid) != actions}
