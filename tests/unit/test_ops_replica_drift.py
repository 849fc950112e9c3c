"""`doctable reconcile` on a global table's replicas: the drift of one replica region (PITR, its period, deletion
protection, the table class) named by its region, the repairs made in that region, the re-read clean and verify's
``replica-options:<region>`` row passing again; preflight tells the same drift apart. moto in process with the
local AWS's global tables, as tests/unit/test_ops_global.py (its fixtures and helpers)."""

from __future__ import annotations

from typing import Any

import pytest

from contract.findings import Level
from contract.iam import policies as iam
from contract.knobs import DocTableConfig
from doctable.capabilities.drift import changed_by_deploy, detect, plan_repairs
from doctable.capabilities.ownership import require_owned_table
from doctable.capabilities.protocol import Drift, observe_table
from doctable.core.aws import Aws
from doctable.core.render import Progress
from doctable.lifecycle import preflight as p
from doctable.lifecycle.reconcile import apply_all
from doctable.verify.record import FAIL, PASS
from tests.support.ops import REGION
from tests.unit import test_ops_global
from tests.unit.test_ops_global import ACCOUNT, B, C, deploy_global, deployment_of, knobs, verify_rows

pytestmark = pytest.mark.unit
global_env = test_ops_global.global_env  # the fixture: moto in process with the local AWS's global tables

QUIET = Progress("doctable reconcile", quiet=True)
DECLARED = {"pitr": "on", "deletion_protection": "on"}


def deployed_with_pitr(aws: Aws, **more: str) -> DocTableConfig:
    """GIVEN a global table in REGION with replicas B and C, declared with PITR (35 days) and deletion protection,
    PITR on in every region as the stack's deploy leaves it; the config."""
    config = knobs(B, C, **(DECLARED | more))
    deploy_global(aws, config)
    for region in (REGION, B, C):
        aws.in_region(region).client("dynamodb").update_continuous_backups(
            TableName=config.table_name,
            PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True},
        )
    return config


def drifted_in_c(aws: Aws, config: DocTableConfig) -> None:
    """C's replica's PITR off and its deletion protection lifted, behind the stack."""
    ddb = aws.in_region(C).client("dynamodb")
    ddb.update_continuous_backups(
        TableName=config.table_name, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": False}
    )
    ddb.update_table(TableName=config.table_name, DeletionProtectionEnabled=False)


def drift_of(aws: Aws, config: DocTableConfig) -> tuple[dict[str, Any], list[Drift]]:
    deployment = deployment_of(aws, config)
    table = require_owned_table(aws, deployment, doing="reconcile it")
    return table, detect(observe_table(aws, deployment, table))


def test_a_replicas_drift_is_named_by_its_region_with_the_call_made_there(global_env: Aws) -> None:
    config = deployed_with_pitr(global_env)
    assert drift_of(global_env, config)[1] == []
    # WHEN C's replica drifts behind the stack
    drifted_in_c(global_env, config)
    _, drifts = drift_of(global_env, config)
    # THEN only C's drift is listed, its subjects naming C, each with its call in C
    assert [(d.prop, d.subject, d.region, d.live, d.declared, d.op, d.params) for d in drifts] == [
        (
            f"replica:{C}:pitr",
            f"pitr ({C})",
            C,
            "DISABLED",
            "ENABLED",
            "UpdateContinuousBackups",
            {"PointInTimeRecoveryEnabled": True, "RecoveryPeriodInDays": 35},
        ),
        (
            f"replica:{C}:deletion_protection",
            f"deletion protection ({C})",
            C,
            "false",
            "true",
            "UpdateTable",
            {"DeletionProtectionEnabled": True},
        ),
    ]
    assert [d.as_dict()["action"] for d in drifts] == [
        f"UpdateContinuousBackups in {C}: PointInTimeRecoveryEnabled=True, RecoveryPeriodInDays=35",
        f"UpdateTable in {C}: DeletionProtectionEnabled=True",
    ]
    # AND the plan makes one call per operation in C
    assert [(r.op, r.region, r.subjects) for r in plan_repairs(drifts)] == [
        ("UpdateTable", C, [f"deletion protection ({C})"]),
        ("UpdateContinuousBackups", C, [f"pitr ({C})"]),
    ]


def test_the_repairs_restore_the_replica_and_its_verify_row_passes_again(global_env: Aws) -> None:
    # GIVEN C's replica drifted, its verify row failing
    config = deployed_with_pitr(global_env)
    drifted_in_c(global_env, config)
    assert verify_rows(global_env, config)[f"replica-options:{C}"].result == FAIL
    table, drifts = drift_of(global_env, config)
    # WHEN reconcile applies its repairs
    done = apply_all(
        global_env, deployment_of(global_env, config), table, plan_repairs(drifts), timeout=5, progress=QUIET
    )
    # THEN both are restored, in C: the re-read finds no drift and C's verify row passes
    assert done == [f"deletion protection ({C})", f"pitr ({C})"]
    assert drift_of(global_env, config)[1] == []
    ddb = global_env.in_region(C).client("dynamodb")
    recovery = ddb.describe_continuous_backups(TableName=config.table_name)["ContinuousBackupsDescription"]
    assert recovery["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] == "ENABLED"
    assert ddb.describe_table(TableName=config.table_name)["Table"]["DeletionProtectionEnabled"] is True
    assert [verify_rows(global_env, config)[f"replica-options:{r}"].result for r in (B, C)] == [PASS, PASS]


def test_a_replicas_pitr_period_is_restored_and_its_class_only_reported(global_env: Aws) -> None:
    # GIVEN a global table declaring a 10-day PITR window, and B's replica at 35 days and Standard-IA
    config = deployed_with_pitr(global_env, pitr_days="10")
    for region in (REGION, C):
        global_env.in_region(region).client("dynamodb").update_continuous_backups(
            TableName=config.table_name,
            PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True, "RecoveryPeriodInDays": 10},
        )
    global_env.in_region(B).client("dynamodb").update_table(
        TableName=config.table_name, TableClass="STANDARD_INFREQUENT_ACCESS"
    )
    table, drifts = drift_of(global_env, config)
    # THEN B's period is drift with its call; its class is drift reconcile does not repair
    assert [(d.subject, d.live, d.declared, d.op) for d in drifts] == [
        (f"pitr period ({B})", "35 days", "10 days", "UpdateContinuousBackups"),
        (f"table class ({B})", "STANDARD_INFREQUENT_ACCESS", "STANDARD", None),
    ]
    # WHEN the repairs are applied THEN only the class is left
    apply_all(
        global_env, deployment_of(global_env, config), table, plan_repairs(drifts), timeout=5, progress=QUIET
    )
    assert [(d.subject, d.op) for d in drift_of(global_env, config)[1]] == [(f"table class ({B})", None)]


def test_preflight_tells_a_replicas_drift_apart_unless_the_deploy_changes_its_knob(global_env: Aws) -> None:
    # GIVEN C's replica drifted behind the stack
    config = deployed_with_pitr(global_env)
    drifted_in_c(global_env, config)
    # WHEN preflight observes the unchanged knobs THEN C's drift is DRIFT, named by its region
    findings = p.run_preflight(global_env, deployment_of(global_env, config))
    drifted = [(f.code, f.subject) for f in findings if f.level is Level.DRIFT]
    assert drifted == [
        ("drift.detected", f"pitr ({C})"),
        ("drift.detected", f"deletion protection ({C})"),
    ]
    # AND a deploy that changes the PITR knob, or drops the region, sets the replica's PITR itself: no drift
    assert changed_by_deploy(f"replica:{C}:pitr", config, knobs(B, C, deletion_protection="on"))
    assert changed_by_deploy(f"replica:{C}:pitr", config, knobs(B, **DECLARED))
    assert not changed_by_deploy(f"replica:{C}:pitr", config, config)


def test_reconcile_may_read_and_repair_each_replica_table_and_preflight_read_them() -> None:
    # GIVEN the operator's reconcile and the deployer's preflight and deploy of a global table (B and C)
    statements = {
        s.sid: s
        for s in iam.role_statements("operator", iam.Target(knobs(B, C), ACCOUNT, REGION), "reconcile")
    }
    tables = tuple(f"arn:aws:dynamodb:{r}:{ACCOUNT}:table/items-dev" for r in (B, C))
    # THEN reconcile reads and repairs the table in each replica region, nothing else there
    assert statements["RepairReplicaTables"].resources == tables
    assert set(statements["RepairReplicaTables"].actions) == {
        "dynamodb:DescribeTable",
        "dynamodb:DescribeContinuousBackups",
        "dynamodb:UpdateContinuousBackups",
        "dynamodb:UpdateTable",
    }
    assert not {sid for sid in statements if "Replica" in sid} - {"RepairReplicaTables"}
    # AND preflight (also the deploy's gate) reads each replica's table and PITR
    for command in ("preflight", "deploy"):
        found = {s.sid: s for s in iam.command_statements(command, iam.Target(knobs(B, C), ACCOUNT, REGION))}
        assert found["ReadReplicaTables"].resources == tables
        assert set(found["ReadReplicaTables"].actions) == {
            "dynamodb:DescribeTable",
            "dynamodb:DescribeContinuousBackups",
        }
    # AND a single-region table's reconcile names no replica
    single = iam.role_statements("operator", iam.Target(knobs(), ACCOUNT, REGION), "reconcile")
    assert not {s.sid for s in single if "Replica" in s.sid}
