"""Drift on a live stack (the local AWS, deployed with the real CDK CLI): each property changed behind the stack
is reported by preflight as drift (never as something the deploy changes), listed by `doctable reconcile`,
repaired by `reconcile --apply`, and verify passes again.

The stack is this module's own (table_base ``drift``); the commands read a settings file that declares it, so
the deploy would change nothing and what differs live is drift. Each case breaks one property and leaves it repaired.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.support import localaws as lt
from tests.support import ops as ot
from tests.support.cli import Result, context_args, run_doctable

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

KNOBS = {
    "env": "dev",
    "table_base": "drift",
    "gsi": "gsi1",
    "ttl": "on",
    "pitr": "on",
    "stream": "new-and-old",
    "owner": "team-docs",
}
WHICH = {"env": KNOBS["env"]}  # names the environment; its settings file names the rest
TABLE = "drift-dev"
Outputs = dict[str, str]


@pytest.fixture(scope="module")
def outputs(deploy: Callable[..., lt.Deployed]) -> Outputs:
    return deploy(KNOBS).outputs


@pytest.fixture(scope="module")
def doctable(local_aws: lt.LocalAWS, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Result]:
    state = tmp_path_factory.mktemp("drift-state")
    declared = {k: v for k, v in KNOBS.items() if k != "env"}
    env = {
        **local_aws.env,
        "DOCTABLE_STATE_DIR": str(state / "state"),
        "DOCTABLE_LEDGER_DIR": str(state / "l"),
        "DOCTABLE_CONFIG": str(ot.write_settings(state / "doctable.toml", KNOBS["env"], **declared)),
    }

    def run(*args: str) -> Result:
        return run_doctable([*args, *context_args(WHICH)], env=env, timeout=600)

    return run


def _pitr_off(aws: lt.LocalAWS, out: Outputs) -> None:
    aws.client("dynamodb").update_continuous_backups(
        TableName=TABLE, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": False}
    )


def _tag_removed(aws: lt.LocalAWS, out: Outputs) -> None:
    aws.client("dynamodb").untag_resource(ResourceArn=out["TableArn"], TagKeys=["Owner"])


def _protection_flipped(aws: lt.LocalAWS, out: Outputs) -> None:
    aws.client("dynamodb").update_table(TableName=TABLE, DeletionProtectionEnabled=True)


def _mapping_disabled(aws: lt.LocalAWS, out: Outputs) -> None:
    aws.client("lambda").update_event_source_mapping(UUID=out["EventSourceMappingUuid"], Enabled=False)


def _mapping_settings(aws: lt.LocalAWS, out: Outputs) -> None:
    aws.client("lambda").update_event_source_mapping(
        UUID=out["EventSourceMappingUuid"],
        BatchSize=1,
        MaximumRetryAttempts=0,
        BisectBatchOnFunctionError=False,
        FunctionResponseTypes=[],
        DestinationConfig={"OnFailure": {}},
    )


CASES: dict[str, tuple[Callable[[lt.LocalAWS, Outputs], None], set[str]]] = {
    "pitr off": (_pitr_off, {"pitr"}),
    "a tag removed": (_tag_removed, {"table tag Owner"}),
    "deletion protection flipped": (_protection_flipped, {"deletion protection"}),
    "mapping disabled": (_mapping_disabled, {"mapping state"}),
    "mapping settings": (
        _mapping_settings,
        {
            "mapping BatchSize",
            "mapping MaximumRetryAttempts",
            "mapping BisectBatchOnFunctionError",
            "mapping FunctionResponseTypes",
            "mapping on-failure destination",
        },
    ),
}


def subjects(items: list[dict[str, Any]]) -> set[str]:
    return {item["subject"] for item in items}


def assert_reported_as_drift(doctable: Callable[..., Result], drifted: set[str]) -> None:
    """preflight: drift, never a deploy change; reconcile's dry run: each listed with its call, nothing done."""
    preflight = doctable("preflight", "--json")
    assert preflight.code == 0, preflight.out + preflight.err
    report = preflight.json()
    assert report["knobs_source"] == "deployed"
    assert subjects(report["drift"]) == drifted
    assert not [f for f in report["findings"] if f["level"] == "CHANGE"], report["findings"]
    assert all(f["code"] == "drift.detected" and not f["destructive"] for f in report["drift"])
    dry = doctable("reconcile", "--json")
    assert dry.code == 1, dry.out + dry.err
    listed = dry.json()
    assert not listed["applied"] and subjects(listed["drift"]) == drifted
    assert all(d["op"] for d in listed["drift"])


def assert_repaired(doctable: Callable[..., Result], drifted: set[str]) -> None:
    applied = doctable("reconcile", "--apply", "--json")
    assert applied.code == 0, applied.out + applied.err
    outcome = applied.json()
    assert set(outcome["restored"]) == drifted and outcome["remaining"] == []
    verify = doctable("verify", "--json", "-q", "--timeout", "60")
    failing = {r["id"]: r["observed"] for r in verify.json()["rows"] if r["result"] == "FAIL"}
    assert verify.code == 0 and failing == {}
    assert doctable("reconcile", "--json").code == 0  # and nothing is left to reconcile


@pytest.mark.parametrize("case", list(CASES))
def test_drift_is_reported_listed_and_repaired(
    local_aws: lt.LocalAWS, doctable: Callable[..., Result], outputs: Outputs, case: str
) -> None:
    # GIVEN one property changed behind the stack
    make, drifted = CASES[case]
    make(local_aws, outputs)
    # THEN preflight calls it drift and reconcile lists it; WHEN reconcile applies THEN it is repaired
    assert_reported_as_drift(doctable, drifted)
    assert_repaired(doctable, drifted)


def test_ttl_disabled_behind_the_stack_is_drift_and_reconcile_respects_the_rate_limit(
    local_aws: lt.LocalAWS, doctable: Callable[..., Result], outputs: Outputs
) -> None:
    # GIVEN TTL disabled behind the stack (the deploy enabled it: this is the table's second TTL change, refused
    # by DynamoDB's rate limit until its interval has passed since the deploy's change)
    ot.change_ttl_now(local_aws, TABLE, enabled=False)
    # THEN preflight reports drift (never "enables TTL"), reconcile lists UpdateTimeToLive
    assert_reported_as_drift(doctable, {"ttl"})
    applied = doctable("reconcile", "--apply", "--json")
    if applied.code == 4:  # AWS refused the change
        # WHEN the repair is the third TTL change within the interval THEN one line saying when to retry
        lines = applied.err.strip().splitlines()
        assert ot.TTL_RATE_LIMITED in lines[-1] and "retry `doctable reconcile --apply` after" in lines[-1]
        # WHEN the interval has passed (the local AWS's clock control) THEN the retry repairs it
        assert local_aws.faults.ttl_interval_elapsed(TABLE)
        applied = doctable("reconcile", "--apply", "--json")
    assert applied.code == 0, applied.out + applied.err
    assert applied.json()["restored"] == ["ttl"]
    verify = doctable("verify", "--json", "-q", "--timeout", "60")
    assert verify.code == 0, [r for r in verify.json()["rows"] if r["result"] == "FAIL"]
