"""`doctable policy` proven by behaviour for a global table (the global shape, tests/support/policies.py GLOBAL: the
table replicated to us-west-2, that region's consumer stack on the replica's stream), as test_policies.py proves the
plain shape's: each command that reads or changes a replica or a replica stack runs to success holding only its
policy, deployed by `doctable deploy` into both regions; the sweep (``make test-policies``) removes each statement
the replicas add to a command's policy, and the command then fails naming the refused action.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.support import localaws as lt
from tests.support import policies as pol
from tests.support.policies import GLOBAL, PLAIN, REPLICA_REGION, Context, Principal, refusals

# The whole module is the policy tier (`make test-policies`, which .ci/run runs after `make test`): its shape's
# deployments would add minutes to the newcomer's `make test`, where test_policies.py proves every command.
pytestmark = [pytest.mark.policies, pytest.mark.iam, pytest.mark.timeout(1800)]

sweep = pol.sweep_only
# The commands whose calls meet a replica or a replica stack (replay, logs and invoke act on the home region, or
# with --region on a replica region's stack: the -replica scenarios).
RUN = (
    "preflight", "deploy", "verify", "verify-read-only", "reconcile", "teardown", "logs-replica", "invoke-replica"
)  # fmt: skip
ADDED = {scenario: pol.statements_added(scenario, GLOBAL, PLAIN) for scenario in RUN}
# Statements a scenario does not call, and why (none now: the deploy's gate reads each replica stack, for the
# mappings it owns on that region's stream, through DeleteRemovedReplicaStacks' DescribeStacks on <stack>-*).
NOT_CALLED: set[tuple[str, str]] = set()
SWEPT = tuple(scenario for scenario in RUN if ADDED[scenario])


@pytest.fixture(scope="module", autouse=True)
def enforced(local_aws: lt.LocalAWS) -> None:
    pol.require_enforced(local_aws)


@pytest.fixture(scope="module")
def ctx(
    local_aws: lt.LocalAWS, bootstrapped: lt.api.CdkRun, tmp_path_factory: pytest.TempPathFactory
) -> Context:
    # The replica region's consumer stack is deployed by the CDK CLI into that region: bootstrapped there too.
    lt.run_cdk(
        local_aws, ["bootstrap", f"aws://{lt.ACCOUNT}/{REPLICA_REGION}"], tmp_path_factory.mktemp("boot")
    )
    admin_env = pol.settings_env(local_aws, tmp_path_factory.mktemp("policies-global"), GLOBAL)
    deployed = pol.doctable(admin_env, "deploy", "--env", GLOBAL.env, "--json", "--no-verify", timeout=900)
    assert deployed.code == 0, deployed.err[-3000:]
    stack = f"doctable-{GLOBAL.base}-{GLOBAL.env}"
    return Context(local_aws, pol.Stack(stack, lt.stack_outputs(local_aws, stack)), admin_env, GLOBAL)


@pytest.fixture(scope="module")
def principals(local_aws: lt.LocalAWS) -> Iterator[Callable[[str], Principal]]:
    yield from pol.principals_of(local_aws, GLOBAL.base)


def test_the_global_shape_adds_the_replica_statements() -> None:
    assert {s: sorted(a) for s, a in ADDED.items() if a} == {
        "preflight": ["ReadReplicaStacks", "ReadReplicaTables"],
        "deploy": [
            "AssumeReplicaBootstrapRoles",
            "DeleteRemovedReplicaStacks",
            "ReadReplicaTables",
        ],
        "verify": [
            "ReadReplicaMappings",
            "ReadReplicaProofLines",
            "ReadReplicaStacks",
            "ReadReplicaStreamRecord",
            "ReadReplicaTables",
            "VerifyReplicaTestItemsOnly",
        ],
        "verify-read-only": ["ReadReplicaMappings", "ReadReplicaStacks", "ReadReplicaTables"],
        "reconcile": ["RepairReplicaTables"],
        "teardown": ["DeleteReplicaStacks", "LiftDeletionProtection", "LiftReplicaDeletionProtection"],
        "logs-replica": ["ReadReplicaProofLines", "ReadReplicaStacks"],
        "invoke-replica": ["InvokeReplicaFunctions", "ReadReplicaMappings", "ReadReplicaStacks"],
    }


@pytest.mark.integration
@pytest.mark.parametrize("scenario", RUN)
def test_each_command_succeeds_with_exactly_its_policy(
    scenario: str, ctx: Context, principals: Callable[[str], Principal]
) -> None:
    # GIVEN a principal holding only the command's policy for a table replicated to a second region
    principal = principals(scenario)
    principal.allow(pol.scenario_policy(ctx, scenario))
    # WHEN it runs the command
    results = pol.SCENARIOS[scenario][2](principal.env(ctx.admin_env), ctx)
    # THEN it succeeds, refused nothing
    for result in results:
        assert result.code == 0, f"{scenario}: exit {result.code}\n{result.out[-3000:]}\n{result.err[-3000:]}"
        assert refusals(result) == []
    if scenario == "verify":
        rows = {row["id"]: row for row in results[0].json()["rows"]}
        # no row failed, and none was skipped for want of a grant (a global table's verify skips what the
        # replicas make moot, as for the administrator)
        assert {r["result"] for r in rows.values()} <= {"PASS", "SKIP"}, rows
        skipped = [r for r in rows.values() if r["result"] == "SKIP"]
        assert not [r for r in skipped if "authorized" in str(r) or "denied" in str(r).lower()], skipped
        # the replica's own rows ran: its consumer stack, and a write delivered across both regions
        for row in (f"replica-options:{REPLICA_REGION}", f"replica-consumer:{REPLICA_REGION}"):
            assert rows[row]["result"] == "PASS", rows[row]
        for region in (lt.REGION, REPLICA_REGION):
            assert rows[f"replica-delivery:{region}"]["result"] == "PASS", rows[f"replica-delivery:{region}"]
    if scenario == "reconcile":
        # the replica's PITR, disabled in its region behind the stack, is restored there
        assert ctx.seen["drifted"] == [], results[0].out + results[0].err


@pytest.mark.policies
@sweep
@pytest.mark.parametrize("scenario", SWEPT)
def test_every_statement_the_replicas_add_is_needed(
    scenario: str, ctx: Context, principals: Callable[[str], Principal]
) -> None:
    only = {sid for sid in ADDED[scenario] if (scenario, sid) not in NOT_CALLED}
    unneeded, misreported = pol.sweep(scenario, ctx, principals(f"sweep-{scenario}"), only=only)
    assert misreported == [], f"{scenario}: " + "\n".join(misreported)
    assert unneeded == [], f"{scenario}: the policy holds statements the command runs without: {unneeded}"
