"""The table options on a live table (moto in-process, with the local AWS's table-option adaptations): what
preflight says each change does and costs, what drift lists, and the calls that restore it."""

from __future__ import annotations

from typing import Any

from contract.findings import Level
from contract.knobs import resolve_config
from contract.shape import table_shape
from doctable.capabilities import table_options as opts
from doctable.core.aws import Aws

ALL = {
    "table_class": "standard-ia",
    "max_read": "20000",
    "max_write": "8000",
    "warm_read": "15000",
    "warm_write": "5000",
    "pitr": "on",
    "pitr_days": "7",
    "contributor_insights": "accessed-and-throttled-keys",
}


def _table(aws: Aws, name: str = "items-dev") -> dict[str, Any]:
    ddb = aws.client("dynamodb")
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    return dict(ddb.describe_table(TableName=name)["Table"])


def test_a_default_table_matches_the_default_knobs(moto_env: Aws) -> None:
    # GIVEN a plain on-demand table and the default knobs
    table = _table(moto_env)
    # THEN no option differs (class STANDARD, no cap, warm throughput left to DynamoDB, no PITR, no insights)
    assert opts.findings(moto_env.client("dynamodb"), table_shape(resolve_config({}, {}, {})), table) == []


def test_every_option_changed_is_a_change_with_its_values(moto_env: Aws) -> None:
    # GIVEN a plain table with PITR on (35 days) and knobs setting every option
    table = _table(moto_env)
    ddb = moto_env.client("dynamodb")
    ddb.update_continuous_backups(
        TableName="items-dev", PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True}
    )
    shape = table_shape(resolve_config(ALL, {}, {}))
    # WHEN preflight compares them
    found = {f.code: f for f in opts.findings(ddb, shape, table)}
    # THEN each option is a change with its live and declared values; only the shorter PITR window destroys
    assert {f.level for f in found.values()} == {Level.CHANGE}
    assert [code for code, f in found.items() if f.destructive] == ["pitr.window_shortened"]
    values = {code: (f.before, f.after) for code, f in found.items()}
    assert values["table_class.changed"] == ("STANDARD", "STANDARD_INFREQUENT_ACCESS")
    assert values["throughput.max_changed"] == (
        None,
        {"MaxReadRequestUnits": 20000, "MaxWriteRequestUnits": 8000},
    )
    assert values["throughput.warm_changed"][1] == {"ReadUnitsPerSecond": 15000, "WriteUnitsPerSecond": 5000}
    assert values["pitr.window_shortened"] == (35, 7)
    assert values["contributor_insights.changed"] == (None, "ACCESSED_AND_THROTTLED_KEYS")


def test_a_longer_pitr_window_is_not_destructive_and_off_means_35_days(moto_env: Aws) -> None:
    # GIVEN a table keeping 7 days of PITR, and knobs with PITR on and pitr_days off (AWS's default: 35 days)
    table = _table(moto_env)
    ddb = moto_env.client("dynamodb")
    ddb.update_continuous_backups(
        TableName="items-dev",
        PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True, "RecoveryPeriodInDays": 7},
    )
    shape = table_shape(resolve_config({"pitr": "on"}, {}, {}))
    # WHEN preflight compares them THEN the window grows from 7 to 35 days, which loses nothing
    found = [(f.code, f.destructive, f.before, f.after) for f in opts.findings(ddb, shape, table)]
    assert found == [("pitr.window_lengthened", False, 7, 35)]


def test_each_drift_has_a_call_that_restores_it(moto_env: Aws) -> None:
    # GIVEN the table deployed with every option, then changed behind the stack
    table = _table(moto_env)
    ddb = moto_env.client("dynamodb")
    shape = table_shape(resolve_config(ALL, {}, {}))
    ddb.update_continuous_backups(
        TableName="items-dev",
        PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True, "RecoveryPeriodInDays": 30},
    )
    ddb.update_table(TableName="items-dev", OnDemandThroughput={"MaxReadRequestUnits": 5})
    # WHEN each difference's repair is made
    for prop, *_ in opts.differences(shape, opts.LiveOptions.read(ddb, table)):
        op, params, _how = opts.repair(shape, prop)
        if op == opts.UPDATE_TABLE:
            ddb.update_table(TableName="items-dev", **params)
        elif op == opts.PITR_CALL:
            ddb.update_continuous_backups(TableName="items-dev", PointInTimeRecoverySpecification=params)
        elif op == opts.INSIGHTS_CALL:
            ddb.update_contributor_insights(TableName="items-dev", **params)
        else:
            assert prop == "warm"  # only rises: deployed, never restored
            ddb.update_table(TableName="items-dev", WarmThroughput=shape.warm_throughput)
    # THEN nothing differs any more
    live = opts.LiveOptions.read(ddb, ddb.describe_table(TableName="items-dev")["Table"])
    assert opts.differences(shape, live) == []
    assert live.on_demand == {"MaxReadRequestUnits": 20000, "MaxWriteRequestUnits": 8000}
    assert (live.pitr_days, live.insights_mode) == (7, "ACCESSED_AND_THROTTLED_KEYS")


def test_a_deploy_changes_an_option_only_when_its_knob_changes() -> None:
    before = table_shape(resolve_config(ALL, {}, {}))
    after = table_shape(resolve_config({**ALL, "pitr_days": "14"}, {}, {}))
    assert opts.changed_by_deploy("pitr_days", before, after)
    assert not opts.changed_by_deploy("table_class", before, after)
    assert not opts.changed_by_deploy("contributor_insights", before, after)
