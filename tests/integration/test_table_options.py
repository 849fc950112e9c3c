"""The table's options on one live stack: every option deployed with the real CDK CLI into a local AWS of its
own, read back as AWS reports them, verify passing; preflight naming what a change does and costs; a day-2
update changing each, verify passing again; then what AWS refuses (a table-class change over its limit, a
lower warm throughput, a recovery period outside 1..35) refused, the refused deploy rolled back; and a
contributor-insights change made behind the stack restored by reconcile."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.support import localaws as lt
from tests.support.cli import context_args, run_doctable

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]

CLASS_CHANGES_ENV = (
    "DOCTABLE_LOCAL_TABLE_CLASS_CHANGES"  # AWS: 2 per 30 days; 1 here, to reach it in one test
)
BASE = {"env": "dev", "table_base": "options", "stream": "new-and-old"}
ALL_OPTIONS = {
    **BASE,
    "table_class": "standard-ia",
    "max_read": "20000",
    "max_write": "8000",
    "warm_read": "15000",
    "warm_write": "5000",
    "pitr": "on",
    "pitr_days": "7",
    "deletion_protection": "on",
    "contributor_insights": "accessed-and-throttled-keys",
}
DAY2 = {
    **ALL_OPTIONS,
    "table_class": "standard",
    "max_read": "off",
    "warm_read": "20000",
    "pitr_days": "14",
    "deletion_protection": "off",
    "contributor_insights": "throttled-keys",
}


class Stack:
    def __init__(self, aws: lt.LocalAWS, workdir: Path):
        self.aws = aws
        self.workdir = workdir
        self.runs = 0
        self.ddb = aws.client("dynamodb")

    def _out(self) -> Path:
        self.runs += 1
        out = self.workdir / f"cdk-{self.runs:02d}"
        out.mkdir()
        return out

    def deploy(self, knobs: dict[str, str]) -> lt.Deployed:
        return lt.deploy(self.aws, knobs, self._out())

    def failed_deploy(self, knobs: dict[str, str]) -> str:
        out = self._out()
        with pytest.raises(lt.CdkFailed):
            lt.deploy(self.aws, knobs, out)
        return (out / "cdk.log").read_text(errors="replace")

    def doctable(self, *args: str, knobs: dict[str, str] | None = None) -> Any:
        env = {**self.aws.env, "DOCTABLE_STATE_DIR": str(self.workdir / "state")}
        return run_doctable([*args, *context_args(knobs or {})], env=env, timeout=600)

    def verify(self, knobs: dict[str, str]) -> dict[str, dict[str, Any]]:
        result = self.doctable("verify", "--json", "--timeout", "60", "--settle", "5", knobs=knobs)
        assert result.code == 0, result.out + result.err
        return {row["id"]: row for row in result.json()["rows"]}

    def live(self) -> dict[str, Any]:
        name = "options-dev"
        table = self.ddb.describe_table(TableName=name)["Table"]
        backups = self.ddb.describe_continuous_backups(TableName=name)["ContinuousBackupsDescription"]
        insights = self.ddb.describe_contributor_insights(TableName=name)
        return {
            "class": table["TableClassSummary"]["TableClass"],
            "on_demand": table["OnDemandThroughput"],
            "warm": {k: v for k, v in table["WarmThroughput"].items() if k != "Status"},
            "pitr": backups["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"],
            "days": backups["PointInTimeRecoveryDescription"].get("RecoveryPeriodInDays"),
            "protection": table["DeletionProtectionEnabled"],
            "insights": (insights["ContributorInsightsStatus"], insights.get("ContributorInsightsMode")),
            "rules": insights.get("ContributorInsightsRuleList", []),
        }

    def status(self) -> str:
        stacks = self.aws.client("cloudformation").describe_stacks(StackName=lt.stack_name(BASE))["Stacks"]
        return str(stacks[0]["StackStatus"])


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    if not lt.CDK_BIN.exists():
        if os.environ.get("CI"):
            pytest.fail("the CDK CLI is not installed: run `npm ci` in the project root")
        pytest.skip("the CDK CLI is not installed: run `npm ci` in the project root")
    previous = os.environ.get(CLASS_CHANGES_ENV)
    os.environ[CLASS_CHANGES_ENV] = "1"  # read by the server process when it starts
    try:
        context = lt.private_local_aws(tmp_path_factory.mktemp("options-aws"))
        aws = context.__enter__()
    finally:
        if previous is None:
            os.environ.pop(CLASS_CHANGES_ENV, None)
        else:
            os.environ[CLASS_CHANGES_ENV] = previous
    try:
        workdir = tmp_path_factory.mktemp("options")
        lt.run_cdk(aws, ["bootstrap", f"aws://{lt.ACCOUNT}/{lt.REGION}"], workdir)
        yield Stack(aws, workdir)
    finally:
        context.__exit__(None, None, None)


OPTION_ROWS = ("table-class", "max-throughput", "warm-throughput", "pitr-period", "contributor-insights")


def test_every_table_option_deployed_changed_on_day_2_and_refused_as_aws_refuses(stack: Stack) -> None:
    # GIVEN a stack deployed with every table option set
    stack.deploy(ALL_OPTIONS)
    # THEN the live table reports each as DescribeTable / DescribeContinuousBackups / DescribeContributorInsights do
    live = stack.live()
    assert live["class"] == "STANDARD_INFREQUENT_ACCESS"
    assert live["on_demand"] == {"MaxReadRequestUnits": 20000, "MaxWriteRequestUnits": 8000}
    assert live["warm"] == {"ReadUnitsPerSecond": 15000, "WriteUnitsPerSecond": 5000}
    assert (live["pitr"], live["days"], live["protection"]) == ("ENABLED", 7, True)
    assert live["insights"] == ("ENABLED", "ACCESSED_AND_THROTTLED_KEYS") and len(live["rules"]) == 4
    # AND verify passes, each option's row among its checks
    rows = stack.verify(ALL_OPTIONS)
    assert {r: rows[r]["result"] for r in OPTION_ROWS} == dict.fromkeys(OPTION_ROWS, "PASS")
    assert rows["pitr-period"]["observed"] == "7 days"

    # WHEN preflight looks at the day-2 knobs
    result = stack.doctable("preflight", "--json", knobs=DAY2)
    assert result.code == 0, result.out + result.err
    found = {f["code"]: f for f in result.json()["findings"]}
    # THEN it names each change by its code, with the values before and after
    assert (found["table_class.changed"]["before"], found["table_class.changed"]["after"]) == (
        "STANDARD_INFREQUENT_ACCESS",
        "STANDARD",
    )
    assert found["throughput.max_changed"]["after"] == {"MaxWriteRequestUnits": 8000}
    assert found["throughput.warm_changed"]["after"] == {
        "ReadUnitsPerSecond": 20000,
        "WriteUnitsPerSecond": 5000,
    }
    assert (found["pitr.window_lengthened"]["before"], found["pitr.window_lengthened"]["after"]) == (7, 14)
    assert found["contributor_insights.changed"]["after"] == "THROTTLED_KEYS"
    # deletion protection off outside uat/prod is a change, not a destructive one
    assert not found["deletion_protection.disabled"]["destructive"]
    assert not [f for f in result.json()["findings"] if f["destructive"]]

    # WHEN day 2 deploys them
    stack.deploy(DAY2)
    # THEN each changed in place, and verify passes again
    live = stack.live()
    assert live["class"] == "STANDARD"
    assert live["on_demand"] == {"MaxReadRequestUnits": -1, "MaxWriteRequestUnits": 8000}
    assert live["warm"] == {"ReadUnitsPerSecond": 20000, "WriteUnitsPerSecond": 5000}
    assert (live["days"], live["protection"]) == (14, False)
    assert live["insights"] == ("ENABLED", "THROTTLED_KEYS") and len(live["rules"]) == 2
    rows = stack.verify(DAY2)
    assert {r: rows[r]["result"] for r in OPTION_ROWS} == dict.fromkeys(OPTION_ROWS, "PASS")

    # WHEN a third deploy changes the class again (over the limit) THEN it fails, rolls back, and verify still passes
    log = stack.failed_deploy({**DAY2, "table_class": "standard-ia"})
    assert "Table class can be updated at most 1 times in a 30-day trailing window" in log
    assert stack.status() == "UPDATE_ROLLBACK_COMPLETE"
    assert stack.live()["class"] == "STANDARD"
    stack.verify(DAY2)

    # AND DynamoDB's own refusals: a lower warm throughput, a recovery period outside 1..35
    with pytest.raises(ClientError) as lower:
        stack.ddb.update_table(TableName="options-dev", WarmThroughput={"ReadUnitsPerSecond": 12000})
    assert lower.value.response["Error"]["Code"] == "ValidationException"
    assert "lower than the current WarmThroughput" in lower.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as period:
        stack.ddb.update_continuous_backups(
            TableName="options-dev",
            PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True, "RecoveryPeriodInDays": 36},
        )
    assert "Member must have value less than or equal to 35" in period.value.response["Error"]["Message"]

    # WHEN contributor insights are switched off behind the stack
    stack.ddb.update_contributor_insights(TableName="options-dev", ContributorInsightsAction="DISABLE")
    # THEN verify fails that row, reconcile restores it, and verify passes
    failing = stack.doctable("verify", "--json", "--timeout", "60", "--settle", "5", knobs=DAY2)
    assert failing.code == 1
    assert {r["id"] for r in failing.json()["rows"] if r["result"] == "FAIL"} == {"contributor-insights"}
    repaired = stack.doctable("reconcile", "--apply", knobs=DAY2)
    assert repaired.code == 0, repaired.out + repaired.err
    assert "UpdateContributorInsights" in repaired.out
    assert stack.live()["insights"] == ("ENABLED", "THROTTLED_KEYS")
    stack.verify(DAY2)
