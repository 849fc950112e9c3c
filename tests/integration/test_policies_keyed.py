"""`doctable policy` proven by behaviour for the statements a customer managed key and Kinesis add (the keyed shape,
tests/support/policies.py KEYED: ``encryption=customer-managed``, ``kinesis=on``), as test_policies.py proves the
plain shape's: each command that reads or changes the key, the table's items, its stream or the Kinesis stream
runs to success holding only its policy; the sweep (``make test-policies``) removes each statement this shape adds
to a command's policy, or changes, and the command then fails naming the refused action.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.support import localaws as lt
from tests.support import policies as pol
from tests.support.policies import KEYED, PLAIN, Context, Principal, refusals

# The whole module is the policy tier (`make test-policies`, which .ci/run runs after `make test`): its shape's
# deployments would add minutes to the newcomer's `make test`, where test_policies.py proves every command.
pytestmark = [pytest.mark.policies, pytest.mark.iam, pytest.mark.timeout(1800)]

sweep = pol.sweep_only
# The commands whose calls meet the key, the items, a stream or Kinesis (ledger and logs read neither).
RUN = ("preflight", "deploy", "verify", "verify-read-only", "reconcile", "replay", "teardown", "invoke")
# What the sweep of this shape proves beyond the plain shape's: the statements it adds or changes.
ADDED = {scenario: pol.statements_added(scenario, KEYED, PLAIN) for scenario in RUN}
SWEPT = tuple(scenario for scenario in RUN if ADDED[scenario])


@pytest.fixture(scope="module", autouse=True)
def enforced(local_aws: lt.LocalAWS) -> None:
    pol.require_enforced(local_aws)


@pytest.fixture(scope="module")
def ctx(
    local_aws: lt.LocalAWS, deploy: Callable[..., lt.Deployed], tmp_path_factory: pytest.TempPathFactory
) -> Context:
    admin_env = pol.settings_env(local_aws, tmp_path_factory.mktemp("policies-keyed"), KEYED)
    deployed = deploy({"env": KEYED.env, **KEYED.knobs})
    return Context(local_aws, pol.Stack(deployed.name, deployed.outputs), admin_env, KEYED)


@pytest.fixture(scope="module")
def principals(local_aws: lt.LocalAWS) -> Iterator[Callable[[str], Principal]]:
    yield from pol.principals_of(local_aws, KEYED.base)


def test_the_keyed_shape_adds_the_key_and_kinesis_statements() -> None:
    # what this module's sweep covers: each statement the key and Kinesis bring, in the command that calls it
    assert {s: sorted(a) for s, a in ADDED.items() if a} == {
        "preflight": ["DescribeKinesisDestination", "ReadTableKey"],
        "deploy": ["DescribeKinesisDestination", "ReadTableKey"],
        "verify": ["DecryptTableReads", "DescribeKinesisDestination", "ReadTableKey"],
        "verify-read-only": ["DescribeKinesisDestination", "ReadTableKey"],
        "reconcile": [
            "DescribeKinesisDestination",
            "ListKinesisStreamsAcceptsNoResource",
            "ReadTableKey",
            "RepairTable",
            "StreamTableToKinesis",
        ],
        "replay": ["DecryptTableReads"],
        "teardown": ["LiftDeletionProtection", "ProbeKinesisStream"],
    }


@pytest.mark.integration
@pytest.mark.parametrize("scenario", RUN)
def test_each_command_succeeds_with_exactly_its_policy(
    scenario: str, ctx: Context, principals: Callable[[str], Principal]
) -> None:
    # GIVEN a principal holding only the command's policy for a table under a customer managed key that streams to
    # Kinesis
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
        assert {r["result"] for r in rows.values()} == {"PASS"}
    if scenario == "reconcile":
        # the Kinesis destination disabled behind the stack is streaming again
        assert ctx.seen["drifted"] == [], results[0].out + results[0].err
    if scenario == "replay":
        replayed = results[0].json()
        assert (replayed["kept"], [o["result"] for o in replayed["objects"]]) == (
            0,
            ["REPLAYED, removed"] * 2,
        )


@pytest.mark.policies
@sweep
@pytest.mark.parametrize("scenario", SWEPT)
def test_every_statement_the_key_and_kinesis_add_is_needed(
    scenario: str, ctx: Context, principals: Callable[[str], Principal]
) -> None:
    unneeded, misreported = pol.sweep(scenario, ctx, principals(f"sweep-{scenario}"), only=ADDED[scenario])
    assert misreported == [], f"{scenario}: " + "\n".join(misreported)
    assert unneeded == [], f"{scenario}: the policy holds statements the command runs without: {unneeded}"
