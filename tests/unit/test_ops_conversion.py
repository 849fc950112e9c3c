"""doctable deploy's conversion of a single-region table to a global table (doctable/lifecycle/global_table.py): where it
starts from the live state, each step's CDK command, a failed step stopping, a re-run continuing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contract import names
from contract.findings import Level
from doctable.capabilities.ownership import _table_outside
from doctable.core.deployment import Deployment
from doctable.lifecycle import global_table as conversion
from tests.support import ops as ot

pytestmark = pytest.mark.unit

STREAM = "arn:aws:dynamodb:us-east-1:123456789012:table/items-dev/stream/2026-12-02T00:00:00.000"
DEPLOY = [
    "/p/node_modules/.bin/node", "/p/node_modules/aws-cdk/bin/cdk", "deploy", "doctable-items-dev", "--require-approval", "never",
    "-c", "env=dev", "--outputs-file", "/tmp/o.json", "--output", "/tmp/out",
]  # fmt: skip


class FakeAws:
    """DescribeTable of a table with a stream, the only call the conversion makes itself."""

    def client(self, service: str) -> Any:
        assert service == "dynamodb"
        return self

    def describe_table(self, TableName: str) -> dict[str, Any]:  # noqa: N803 - boto3's keyword
        return {
            "Table": {
                "TableName": TableName,
                "LatestStreamArn": STREAM,
                "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
            }
        }


CONFIG = ot.config_of(stream="new-and-old", replicas="us-west-2")


def _run(start: str, exits: dict[str, int]) -> tuple[tuple[int, str | None], list[dict[str, Any]], list[Any]]:
    records: list[dict[str, Any]] = []
    mappings: list[Any] = []

    def run(command: list[str]) -> int:
        step = command[command.index("-c", command.index("env=dev")) + 1].split("=", 1)[1]
        if "--resource-mapping" in command:
            with open(command[command.index("--resource-mapping") + 1], encoding="utf-8") as mapping:
                mappings.append(json.load(mapping))
        return exits.get(step, 0)

    result = conversion.convert(FakeAws(), CONFIG, start, DEPLOY, run, lambda line: None, records)  # type: ignore[arg-type]
    return result, records, mappings


def test_a_conversion_runs_retain_detach_import_in_order() -> None:
    # GIVEN a conversion from the start  WHEN every step succeeds
    result, records, mappings = _run("retain", {})
    # THEN three steps ran in order, each recorded with its exit code
    assert result == (0, None)
    assert [(r["step"], r["exit"]) for r in records] == [("retain", 0), ("detached", 0), ("import", 0)]
    retain, detached, imported = (r["command"] for r in records)
    # AND retain and detached are deploys with the step's context, the detached ones naming the live stream
    assert retain == [*DEPLOY, "-c", "table_handover=retain"]
    assert detached == [*DEPLOY, "-c", "table_handover=detached", "-c", f"table_stream_arn={STREAM}"]
    # AND the import is `cdk import` of the same stack, context and output, with the table's resource mapping
    assert imported[:4] == [
        "/p/node_modules/.bin/node",
        "/p/node_modules/aws-cdk/bin/cdk",
        "import",
        "doctable-items-dev",
    ]
    assert "--require-approval" not in imported and "--outputs-file" not in imported
    assert (imported[-3], imported[-1]) == ("--resource-mapping", "--force")
    assert imported[imported.index("--output") : imported.index("--output") + 2] == ["--output", "/tmp/out"]
    assert "table_handover=import" in imported and f"table_stream_arn={STREAM}" in imported
    assert mappings == [{names.table_logical_id(): {"TableName": "items-dev"}}]


def test_a_failed_step_stops_the_conversion_and_names_it() -> None:
    # GIVEN the detached deploy fails  WHEN converting
    result, records, _ = _run("retain", {"detached": 1})
    # THEN it stops there, the import not attempted
    assert result == (1, "detached")
    assert [(r["step"], r["exit"]) for r in records] == [("retain", 0), ("detached", 1)]


def test_a_rerun_continues_at_the_import() -> None:
    # GIVEN the table out of the stack (table.handover)  WHEN the conversion continues
    result, records, _ = _run("import", {})
    # THEN only the import runs
    assert result == (0, None)
    assert [r["step"] for r in records] == ["import"]


def test_the_table_logical_id_is_the_cdks() -> None:
    # The CDK's makeUniqueId of DocumentTable/Table/Resource (tests/infra/test_table_handover.py checks the synth)
    assert names.table_logical_id() == "DocumentTableE88AFB8E"
    assert names.cdk_logical_id("Consumer", "Role", "DefaultPolicy", "Resource").startswith(
        "ConsumerRoleDefaultPolicy"
    )


def test_a_table_out_of_its_stack_mid_conversion_is_continued_not_refused() -> None:
    # GIVEN the stack records the detached step and our table is outside it
    deployment = Deployment(
        config=CONFIG, region="us-east-1", account="123456789012", stack_id="s", stack_status="UPDATE_COMPLETE",
        outputs={names.OUT_TABLE_HANDOVER: "detached"},
    )  # fmt: skip
    finding = _table_outside(deployment, CONFIG.tags())
    # THEN it is the conversion to continue (a warning, its start step the import), not table.unmanaged
    assert (finding.level, finding.code) == (Level.WARN, "table.handover")
    assert conversion.start_step([finding]) == "import"
    # AND without the record, the same table is refused as before
    deployment.outputs = {}
    assert (_table_outside(deployment, CONFIG.tags()).code, Level.STOP) == ("table.unmanaged", Level.STOP)
