"""`doctable deploy`, the guarded deploy, against the local AWS: the environment declared in a settings file,
deployed through the real CDK CLI and verified; a repeat is a no-op; an override that drops the index is refused
by the gate until it is allowed; an environment bound to another account stops before any change.

The tests run in file order and share one stack (table_base ``gate``, env stg).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contract import names
from tests.support import localaws as lt
from tests.support.cli import Result, run_doctable

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

STACK = "doctable-gate-stg"
TABLE = "gate-stg"
SETTINGS = """\
[defaults]
table_base = "gate"

[environments.stg]
gsi = "gsi1"
stream = "new-and-old"
"""


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gate-settings") / "doctable.toml"
    path.write_text(SETTINGS)
    return path


@pytest.fixture(scope="module")
def doctable(
    local_aws: lt.LocalAWS,
    bootstrapped: lt.api.CdkRun,
    settings: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[..., Result]:
    state = tmp_path_factory.mktemp("gate-state")
    base = {
        **local_aws.env,
        "DOCTABLE_CONFIG": str(settings),
        "DOCTABLE_STATE_DIR": str(state / "state"),
        "DOCTABLE_LEDGER_DIR": str(state / "ledger"),
    }

    def run(*args: str, env: dict[str, str] | None = None) -> Result:
        return run_doctable(list(args), env={**base, **(env or {})}, timeout=900)

    return run


def stack_state(aws: lt.LocalAWS) -> dict[str, Any]:
    """What the tests compare before and after: the stack's last update and the table's indexes."""
    stack = aws.client("cloudformation").describe_stacks(StackName=STACK)["Stacks"][0]
    table = aws.client("dynamodb").describe_table(TableName=TABLE)["Table"]
    return {
        "status": stack["StackStatus"],
        "updated": stack.get("LastUpdatedTime") or stack["CreationTime"],
        "indexes": sorted(i["IndexName"] for i in table.get("GlobalSecondaryIndexes", [])),
        "stream": table.get("StreamSpecification", {}).get("StreamViewType"),
    }


def test_first_deploy_builds_what_the_file_declares_and_verifies(
    doctable: Callable[..., Result], local_aws: lt.LocalAWS
) -> None:
    # GIVEN a settings file declaring stg with gsi1 and the stream; WHEN deployed with no knob on the command line
    result = doctable("deploy", "--env", "stg", "--json", "--verify-timeout", "60")
    # THEN it deploys and verifies, and the table has the index and the stream
    report = result.json()
    assert result.code == 0, result.err
    assert (report["deployed"], report["verified"], report["refused"]) == (True, True, [])
    assert "table.created" in {f["code"] for f in report["findings"]}
    state = stack_state(local_aws)
    assert state["indexes"] == [names.GSI_NAME] and state["stream"] == "NEW_AND_OLD_IMAGES"


def test_a_second_deploy_is_a_no_op(doctable: Callable[..., Result], local_aws: lt.LocalAWS) -> None:
    before = stack_state(local_aws)
    result = doctable("deploy", "--env", "stg", "--json", "--no-verify")
    report = result.json()
    assert result.code == 0, result.err
    # THEN preflight finds nothing to change and CloudFormation's stack is not updated
    assert {f["level"] for f in report["findings"]} <= {"OK", "INFO"}, report["findings"]
    assert report["destructive"] == [] and stack_state(local_aws) == before


def test_an_override_that_drops_the_index_is_refused_by_the_gate(
    doctable: Callable[..., Result], local_aws: lt.LocalAWS
) -> None:
    before = stack_state(local_aws)
    # WHEN one run overrides gsi to none, without a terminal and without --allow-destructive
    result = doctable("deploy", "--env", "stg", "--json", env={"DOCTABLE_GSI": "none"})
    report = result.json()
    # THEN the gate refuses (exit 3) naming the index's code, and nothing is deployed
    assert result.code == 3, result.err
    assert report["refused"] == ["index.removed"] and report["deployed"] is False
    assert report["overrides"] == [
        {"knob": "gsi", "source": "DOCTABLE_GSI", "file": names.GSI_NAME, "value": "none"}
    ]
    assert any(line.startswith("doctable deploy: refused index.removed") for line in result.err.splitlines())
    assert stack_state(local_aws) == before


def test_the_same_override_goes_through_with_allow_destructive(
    doctable: Callable[..., Result], local_aws: lt.LocalAWS
) -> None:
    result = doctable(
        "deploy", "--env", "stg", "--json", "--allow-destructive", "--verify-timeout", "60",
        env={"DOCTABLE_GSI": "none"},
    )  # fmt: skip
    report = result.json()
    assert result.code == 0, result.err
    assert report["destructive"] == ["index.removed"] and report["refused"] == []
    assert (report["deployed"], report["verified"]) == (True, True)
    assert stack_state(local_aws)["indexes"] == []


def test_an_environment_bound_to_another_account_stops_before_any_change(
    doctable: Callable[..., Result], local_aws: lt.LocalAWS, tmp_path: Path
) -> None:
    # GIVEN the same environment bound to an account that is not the local AWS's
    bound = tmp_path / "doctable.toml"
    bound.write_text(SETTINGS + 'account = "111111111111"\n')
    before = stack_state(local_aws)
    # WHEN deployed (the file restores the index: a change it would make)
    result = doctable("deploy", "--env", "stg", "--config", str(bound))
    # THEN one line names both accounts, exit 2, and the stack is as it was
    assert result.code == 2
    err = [line for line in result.err.splitlines() if line.strip()]
    assert len(err) == 1 and "111111111111" in err[0] and lt.ACCOUNT in err[0], result.err
    assert stack_state(local_aws) == before
