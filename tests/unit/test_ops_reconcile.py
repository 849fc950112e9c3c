"""`doctable reconcile`: drift against the deployed knobs, a dry run, the repairs, the refusals (moto)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from contract import names
from doctable.capabilities import drift
from doctable.capabilities.ownership import require_owned_table
from doctable.cli import main
from doctable.core.aws import Aws
from doctable.core.context import describe_stack
from doctable.core.deployment import use_deployed_knobs
from doctable.core.errors import UserError
from doctable.lifecycle import reconcile as reconcile_module
from tests.support import ops as ot

ALL_ON = {"gsi": "gsi1", "ttl": "on", "pitr": "on", "stream": "new-and-old", "owner": "team-docs"}
TABLE = "items-dev"


@pytest.fixture
def moto(ops_env: None, moto_env: Aws, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Aws:
    """GIVEN moto, and a settings file that declares the stack the tests deploy (nothing pending)."""
    monkeypatch.setenv("DOCTABLE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("DOCTABLE_CONFIG", str(ot.write_settings(tmp_path / "doctable.toml", **ALL_ON)))
    return moto_env


@pytest.fixture
def stack(moto: Aws) -> dict[str, str]:
    """GIVEN an all-on stack with its mapping, as deployed."""
    return ot.deploy_with_mapping(moto.client, ot.config_of(**ALL_ON))


def reconcile(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, Any]]:
    code = main(["reconcile", "--json", "-q", *extra])
    return code, json.loads(capsys.readouterr().out)


def _ttl_off(aws: Aws, outputs: dict[str, str]) -> None:
    aws.client("dynamodb").update_time_to_live(
        TableName=TABLE, TimeToLiveSpecification={"Enabled": False, "AttributeName": names.TTL_ATTRIBUTE}
    )


def _pitr_off(aws: Aws, outputs: dict[str, str]) -> None:
    aws.client("dynamodb").update_continuous_backups(
        TableName=TABLE, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": False}
    )


def _tag_removed(aws: Aws, outputs: dict[str, str]) -> None:
    aws.client("dynamodb").untag_resource(ResourceArn=outputs[names.OUT_TABLE_ARN], TagKeys=["Owner"])


def _protection_on(aws: Aws, outputs: dict[str, str]) -> None:
    aws.client("dynamodb").update_table(TableName=TABLE, DeletionProtectionEnabled=True)


def _mapping_disabled(aws: Aws, outputs: dict[str, str]) -> None:
    aws.client("lambda").update_event_source_mapping(UUID=outputs[names.OUT_MAPPING_UUID], Enabled=False)


def _mapping_settings(aws: Aws, outputs: dict[str, str]) -> None:
    aws.client("lambda").update_event_source_mapping(
        UUID=outputs[names.OUT_MAPPING_UUID],
        BatchSize=1,
        MaximumRetryAttempts=0,
        BisectBatchOnFunctionError=False,
        FunctionResponseTypes=[],
        DestinationConfig={"OnFailure": {}},
    )


def _mapping_tag_removed(aws: Aws, outputs: dict[str, str]) -> None:
    lam = aws.client("lambda")
    arn = lam.get_event_source_mapping(UUID=outputs[names.OUT_MAPPING_UUID])["EventSourceMappingArn"]
    lam.untag_resource(Resource=arn, TagKeys=["Owner"])


DRIFTS: dict[str, tuple[Callable[[Aws, dict[str, str]], None], set[str]]] = {
    "ttl disabled": (_ttl_off, {"ttl"}),
    "pitr off": (_pitr_off, {"pitr"}),
    "tag removed": (_tag_removed, {"table tag Owner"}),
    "deletion protection flipped": (_protection_on, {"deletion protection"}),
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
    "mapping tag removed": (_mapping_tag_removed, {"mapping tag Owner"}),
}


def test_no_drift_is_exit_0(stack: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    code, report = reconcile(capsys)
    assert code == 0 and report["drift"] == []


@pytest.mark.parametrize("kind", sorted(DRIFTS))
def test_each_drift_is_listed_by_the_dry_run_then_repaired(
    moto: Aws, stack: dict[str, str], capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    # GIVEN one property changed behind the stack
    make, subjects = DRIFTS[kind]
    make(moto, stack)
    # WHEN reconcile runs dry
    code, report = reconcile(capsys)
    # THEN it lists exactly that drift with the call it would make, and changes nothing (exit 1: drift remains)
    assert code == 1 and not report["applied"]
    assert {d["subject"] for d in report["drift"]} == subjects
    assert all(d["op"] for d in report["drift"])
    again, still = reconcile(capsys)
    assert again == 1 and {d["subject"] for d in still["drift"]} == subjects
    # WHEN it applies
    code, report = reconcile(capsys, "--apply")
    # THEN it restored each property, re-read the live state, and nothing is left
    assert code == 0, report
    assert set(report["restored"]) == subjects and report["remaining"] == []


def test_dry_run_text_names_the_call(
    stack: dict[str, str], moto: Aws, capsys: pytest.CaptureFixture[str]
) -> None:
    _mapping_settings(moto, stack)
    assert main(["reconcile", "-q"]) == 1
    out = capsys.readouterr().out
    assert "drift on doctable-items-dev" in out and "UpdateEventSourceMapping BatchSize=10" in out
    assert "dry run: nothing changed" in out


def test_the_ttl_rate_limit_is_one_line_saying_when_to_retry(
    moto: Aws, stack: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN TTL and PITR drifted, and DynamoDB refusing another TTL change this hour
    _ttl_off(moto, stack)
    _pitr_off(moto, stack)
    refused = ClientError(
        {
            "Error": {
                "Code": "ValidationException",
                "Message": "Time to live has been modified multiple times within a fixed interval",
            }
        },
        "UpdateTimeToLive",
    )
    real = drift.apply_repair

    def apply(aws: Aws, deployment: Any, table: dict[str, Any], repair: drift.Repair) -> None:
        if repair.op == drift.TTL:
            raise refused
        real(aws, deployment, table, repair)

    monkeypatch.setattr("doctable.lifecycle.reconcile.apply_repair", apply)
    # WHEN reconcile applies
    code = main(["reconcile", "--apply", "-q"])
    # THEN one line, exit 2, saying when to retry; the other repair (PITR) was made first
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 4 and len(err) == 1 and "Traceback" not in err[0]
    assert "Time to live has been modified" in err[0] and "retry `doctable reconcile --apply` after" in err[0]
    assert "pitr restored" in err[0]
    backups = moto.client("dynamodb").describe_continuous_backups(TableName=TABLE)
    assert backups["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"][
        "PointInTimeRecoveryStatus"
    ] == ("ENABLED")


def test_a_refused_step_is_data_in_the_json_error(
    moto: Aws, stack: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN TTL and PITR drifted, and DynamoDB refusing the TTL change (its rate limit)
    _ttl_off(moto, stack)
    _pitr_off(moto, stack)
    refused = ClientError(
        {"Error": {"Code": "ValidationException", "Message": reconcile_module.TTL_RATE_LIMIT_MESSAGE}},
        "UpdateTimeToLive",
    )
    real = drift.apply_repair

    def apply(aws: Aws, deployment: Any, table: dict[str, Any], repair: drift.Repair) -> None:
        if repair.op == drift.TTL:
            raise refused
        real(aws, deployment, table, repair)

    monkeypatch.setattr("doctable.lifecycle.reconcile.apply_repair", apply)
    # WHEN reconcile applies with --json
    code = main(["reconcile", "--apply", "--json", "-q"])
    # THEN the error document names the refused step, what was restored before it and AWS's refusal as fields
    document = json.loads(capsys.readouterr().out)
    assert code == 4
    assert {k: document[k] for k in ("code", "step", "restored", "aws_code", "operation")} == {
        "code": "aws.ttl_rate_limited",
        "step": drift.TTL,
        "restored": "pitr",
        "aws_code": "ValidationException",
        "operation": "UpdateTimeToLive",
    }
    assert document["retry_after"].endswith(" UTC")


def test_refuses_a_table_tagged_as_someone_elses(
    moto: Aws, stack: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the stack's table re-tagged ManagedBy=payments, and PITR off
    moto.client("dynamodb").tag_resource(
        ResourceArn=stack[names.OUT_TABLE_ARN], Tags=[{"Key": "ManagedBy", "Value": "payments"}]
    )
    _pitr_off(moto, stack)
    # WHEN reconcile applies THEN it refuses in one line and changes nothing
    assert main(["reconcile", "--apply", "-q"]) == 3  # refused by a safety gate
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ManagedBy=payments" in err[0] and "refusing to reconcile" in err[0]
    backups = moto.client("dynamodb").describe_continuous_backups(TableName=TABLE)
    assert backups["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"][
        "PointInTimeRecoveryStatus"
    ] == ("DISABLED")


def test_refuses_a_stack_that_records_no_knobs(moto: Aws, capsys: pytest.CaptureFixture[str]) -> None:
    ot.deploy(moto.client, ot.config_of(pitr="on"), record_knobs=False)
    assert main(["reconcile", "--apply", "-q"]) == 3  # refused by a safety gate
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "declared configuration is unknown" in err[0]


@pytest.mark.parametrize("status", ["ROLLBACK_COMPLETE", "CREATE_FAILED", "DELETE_FAILED"])
def test_a_stack_that_owns_no_table_is_refused(moto: Aws, status: str) -> None:
    # GIVEN a failed create beside a same-named (retained) table
    ot.deploy(moto.client, ot.config_of())
    deployment = use_deployed_knobs(describe_stack(moto, ot.config_of()))
    deployment.stack_status = status
    with pytest.raises(UserError, match=f"is {status}.*refusing to reconcile it"):
        require_owned_table(moto, deployment, doing="reconcile it")


def test_a_table_outside_the_stack_is_refused(moto: Aws) -> None:
    # GIVEN a stack of another table_base whose table output names a table it does not hold
    config = ot.config_of(table_base="other")
    ot.deploy(moto.client, ot.config_of())
    ot.deploy(moto.client, config)
    deployment = describe_stack(moto, config)
    deployment.outputs[names.OUT_TABLE_NAME] = TABLE
    with pytest.raises(UserError, match="is not stack doctable-other-dev's"):
        require_owned_table(moto, deployment, doing="reconcile it")


def test_a_mapping_that_stays_busy_is_one_line(
    moto: Aws, stack: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a drifted mapping that never leaves a transitional state (no state counts as settled)
    _mapping_disabled(moto, stack)
    monkeypatch.setattr("doctable.lifecycle.reconcile.SETTLED_MAPPING_STATES", ())
    # WHEN reconcile applies with a zero bound THEN one line, exit 2
    assert main(["reconcile", "--apply", "-q", "--timeout", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "did not settle within 0s" in err[0]
