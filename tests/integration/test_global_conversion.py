"""A live single-region table converted to a global table by `doctable deploy`, its items kept: on the local AWS
with the real CDK CLI, the stack's AWS::DynamoDB::Table is retained, taken out of the stack and imported as
AWS::DynamoDB::GlobalTable (`cdk import`), then the deploy adds the replica and its consumer stack, and verify
passes in both regions. The first conversion's import is refused once (fault injection): that deploy stops naming
the step, and the next one continues from the live state, at the import.

One environment (table_base ``conv``, env dev, home us-east-1, replica us-west-2), deployed once per module.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contract import names
from local import api
from tests.integration.test_global_tables import HOME, WEST, client
from tests.support import localaws as lt
from tests.support.cli import Result, run_doctable

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1500)]

TABLE = "conv-dev"
STACK = "doctable-conv-dev"
KEYS = [f"doc-{n}" for n in range(5)]


def settings_text(replicas: list[str]) -> str:
    shown = ", ".join(f'"{r}"' for r in replicas)
    return f'[defaults]\ntable_base = "conv"\nstream = "new-and-old"\n\n[environments.dev]\nreplicas = [{shown}]\n'


def items(aws: lt.LocalAWS, region: str) -> dict[str, str]:
    """pk -> the ``body`` attribute of the test's items in the table in ``region`` (verify writes others)."""
    scan = client(aws, "dynamodb", region).scan(TableName=TABLE, ConsistentRead=True)
    return {item["pk"]["S"]: item["body"]["S"] for item in scan["Items"] if "body" in item}


def table_resources(aws: lt.LocalAWS) -> list[tuple[str, str, str]]:
    """(logical id, type, physical id) of the home stack's tables."""
    summaries = client(aws, "cloudformation", HOME).list_stack_resources(StackName=STACK)[
        "StackResourceSummaries"
    ]
    return [
        (r["LogicalResourceId"], r["ResourceType"], r["PhysicalResourceId"])
        for r in summaries
        if r["ResourceType"].startswith("AWS::DynamoDB::")
    ]


@pytest.fixture(scope="module")
def converted(
    local_aws: lt.LocalAWS, bootstrapped: api.CdkRun, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """A single-region deploy, items written, then the replica declared and `doctable deploy` run again."""
    lt.run_cdk(local_aws, ["bootstrap", f"aws://{lt.ACCOUNT}/{WEST}"], tmp_path_factory.mktemp("boot"))
    folder = tmp_path_factory.mktemp("conv")
    settings: Path = folder / "doctable.toml"
    env = {
        **local_aws.env,
        "DOCTABLE_CONFIG": str(settings),
        "DOCTABLE_STATE_DIR": str(folder / "state"),
        "DOCTABLE_LEDGER_DIR": str(folder / "ledger"),
    }
    doctable: Callable[..., Result] = lambda *args: run_doctable(list(args), env=env, timeout=1400)  # noqa: E731
    settings.write_text(settings_text([]))
    first = doctable("deploy", "--env", "dev", "--json", "--no-verify")
    assert first.code == 0, first.err[-3000:]
    assert [t[1] for t in table_resources(local_aws)] == ["AWS::DynamoDB::Table"]
    ddb = client(local_aws, "dynamodb", HOME)
    for key in KEYS:
        ddb.put_item(
            TableName=TABLE, Item={"pk": {"S": key}, "sk": {"S": "v1"}, "body": {"S": f"kept {key}"}}
        )
    stream = ddb.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
    settings.write_text(settings_text([WEST]))
    # The import refused once (fault injection): the conversion stops after taking the table out of the stack.
    rule = {"id": "import", "on": "cloudformation:CreateChangeSet", "action": "validation-error", "limit": 1}
    local_aws.faults.set([{**rule, "stack": STACK, "change_set_type": "IMPORT"}])
    try:
        stopped = doctable("deploy", "--env", "dev", "--json")
    finally:
        local_aws.faults.clear()
    after_stop = {"resources": table_resources(local_aws), "items": items(local_aws, HOME)}
    result = doctable("deploy", "--env", "dev", "--json")
    assert result.code == 0, result.err[-4000:]
    report: dict[str, Any] = result.json()
    report["stream_before"] = stream
    report["stopped"] = {"code": stopped.code, "report": stopped.json(), **after_stop}
    return report


def test_a_failed_import_stops_the_deploy_naming_the_step(converted: dict[str, Any]) -> None:
    stopped = converted["stopped"]
    report = stopped["report"]
    # THEN preflight warned of the conversion (not a STOP, not destructive)
    finding = next(f for f in report["findings"] if f["code"] == "table.to_global")
    assert (finding["level"], finding["destructive"]) == ("WARN", False)
    # AND the deploy ran retain and detached, then stopped at the refused import: exit 1, the step named
    assert stopped["code"] == 1 and report["exit"] == 1 and report["deployed"] is False
    steps = [(s["step"], s["exit"] == 0) for s in report["conversion"]]
    assert steps == [("retain", True), ("detached", True), ("import", False)]
    imported = report["conversion"][2]["command"]  # the CDK CLI's command word is import, not deploy
    assert "import" in imported and "deploy" not in imported
    assert any("conversion step import failed" in line for line in report["messages"])
    # AND the table was out of the stack, its items kept
    assert stopped["resources"] == []
    assert set(stopped["items"]) >= set(KEYS)


def test_the_next_deploy_continues_at_the_import(converted: dict[str, Any]) -> None:
    # THEN preflight found the stopped conversion (not a foreign or unmanaged table) and the deploy imported it
    codes = {f["code"]: f["level"] for f in converted["findings"]}
    assert codes.get("table.handover") == "WARN" and "table.unmanaged" not in codes
    assert [(s["step"], s["exit"]) for s in converted["conversion"]] == [("import", 0)]
    assert converted["deployed"] is True


def test_the_stack_holds_the_same_table_as_a_global_table(
    local_aws: lt.LocalAWS, converted: dict[str, Any]
) -> None:
    # THEN the stack lists the table as AWS::DynamoDB::GlobalTable under the table's logical id
    assert table_resources(local_aws) == [(names.table_logical_id(), "AWS::DynamoDB::GlobalTable", TABLE)]
    # AND it is the same table: its stream kept, now with a replica in us-west-2
    table = client(local_aws, "dynamodb", HOME).describe_table(TableName=TABLE)["Table"]
    assert table["LatestStreamArn"] == converted["stream_before"]
    assert [r["RegionName"] for r in table["Replicas"]] == [WEST]
    # AND the conversion's marker output is gone after the final deploy
    stack = client(local_aws, "cloudformation", HOME).describe_stacks(StackName=STACK)["Stacks"][0]
    assert names.OUT_TABLE_HANDOVER not in {o["OutputKey"] for o in stack.get("Outputs", [])}


def test_the_items_are_kept_and_readable_in_the_replica(
    local_aws: lt.LocalAWS, converted: dict[str, Any]
) -> None:
    expected = {key: f"kept {key}" for key in KEYS}
    # THEN every item written before the conversion is still in the home table
    assert {k: v for k, v in items(local_aws, HOME).items() if k in expected} == expected
    # AND readable in the replica region
    lt.wait_for(
        lambda: {k: v for k, v in items(local_aws, WEST).items() if k in expected} == expected,
        timeout=60,
        what="the converted table's items in us-west-2",
    )


def test_verify_passed_in_both_regions(converted: dict[str, Any]) -> None:
    rows = {check["id"]: check for check in converted["verify"]["rows"]}
    assert converted["verified"] is True
    for row in (
        "replicas",
        f"replica-consumer:{WEST}",
        f"replica-delivery:{HOME}",
        f"replica-delivery:{WEST}",
    ):
        assert rows[row]["result"] == "PASS", rows[row]
