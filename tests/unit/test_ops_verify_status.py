"""`doctable verify`'s stack-status gate: settled stacks are verified (a rolled-back update against the knobs the
stack holds, with a note); a failed create, a busy stack and a failed update or rollback get one line, exit 2."""

from __future__ import annotations

import json
from typing import Any

import pytest

from doctable.cli import main
from doctable.core.aws import Aws
from doctable.core.context import describe_stack
from doctable.core.deployment import Deployment
from tests.support import ops as ot

REFUSED = {
    "ROLLBACK_COMPLETE": "owns no table",
    "ROLLBACK_FAILED": "owns no table",
    "CREATE_FAILED": "owns no table",
    "CREATE_IN_PROGRESS": "owns no table",
    "ROLLBACK_IN_PROGRESS": "owns no table",
    "DELETE_IN_PROGRESS": "owns no table",
    "DELETE_FAILED": "owns no table",
    "UPDATE_IN_PROGRESS": "busy",
    "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS": "busy",
    "UPDATE_ROLLBACK_IN_PROGRESS": "busy",
    "UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS": "busy",
    "IMPORT_IN_PROGRESS": "busy",
    "UPDATE_ROLLBACK_FAILED": "continue-update-rollback",
    "UPDATE_FAILED": "not settled",
    "IMPORT_ROLLBACK_FAILED": "not settled",
}


def _with_status(monkeypatch: pytest.MonkeyPatch, status: str, reason: str | None = None) -> None:
    """CloudFormation reports ``status`` (and ``reason``) for the stack, whatever moto holds."""
    real = describe_stack

    def described(aws: Aws, config: Any) -> Deployment:
        deployment = real(aws, config)
        deployment.stack_status, deployment.status_reason = status, reason
        return deployment

    monkeypatch.setattr("doctable.core.command.describe_stack", described)


def _items(aws: Aws) -> list[dict[str, Any]]:
    return aws.client("dynamodb").scan(TableName="items-dev", ConsistentRead=True)["Items"]


@pytest.mark.parametrize("status", sorted(REFUSED))
def test_verify_refuses_an_unsettled_stack_in_one_line_before_writing(
    status: str,
    moto_env: Aws,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN the stack and its table, the stack reporting ``status``
    monkeypatch.setenv("DOCTABLE_STATE_DIR", str(tmp_path))
    ot.deploy(moto_env.client, ot.config_of())
    _with_status(monkeypatch, status, "Resource handler returned message: boom")
    # WHEN verify runs THEN one line naming the status and why, exit 3, and not one item written
    assert main(["verify", "-q", "--timeout", "2"]) == 3  # refused by a safety gate
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert f"is {status}" in err[0] and REFUSED[status] in err[0] and "refusing to write" in err[0]
    assert _items(moto_env) == []


@pytest.mark.parametrize("status", ["CREATE_COMPLETE", "UPDATE_COMPLETE"])
def test_verify_passes_a_created_or_updated_stack_without_a_rollback_note(
    status: str,
    moto_env: Aws,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("DOCTABLE_STATE_DIR", str(tmp_path))
    ot.deploy(moto_env.client, ot.config_of())
    _with_status(monkeypatch, status)
    assert main(["verify", "--timeout", "2"]) == 0
    out, err = capsys.readouterr()
    assert "rolled back" not in out + err
    assert "verify PASSED" in out


def test_verify_checks_a_rolled_back_update_against_the_knobs_the_stack_holds(
    moto_env: Aws, monkeypatch: pytest.MonkeyPatch, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a stack deployed with ttl=on whose next update (ttl=off) failed and rolled back
    monkeypatch.setenv("DOCTABLE_STATE_DIR", str(tmp_path))
    ot.deploy(moto_env.client, ot.config_of(ttl="on"))
    _with_status(
        monkeypatch, "UPDATE_ROLLBACK_COMPLETE", "The following resource(s) failed to update: [Table]"
    )
    # WHEN verify runs with the knobs of the update that failed
    code = main(["verify", "--timeout", "2", "--json", "-c", "ttl=off"])
    out, err = capsys.readouterr()
    # THEN it passes against the knobs the stack holds, says the last update rolled back, and ttl=off is pending
    assert code == 0, out + err
    record = json.loads(out)
    rows = {row["id"]: row for row in record["rows"]}
    assert rows["stack"]["result"] == "PASS"
    assert "the last update rolled back" in rows["stack"]["observed"]
    assert rows["ttl"]["result"] == "PASS" and rows["ttl"]["observed"].startswith("ENABLED")
    assert record["knobs"]["ttl"] == "on"
    assert "rolled back (The following resource(s) failed to update: [Table])" in err
    assert "the knobs the stack holds" in err
    assert "ttl: deployed on, given off — pending" in err
