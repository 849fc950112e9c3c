"""Converting a single-region table to a global table (infra/data/handover.py): the ``table_handover`` steps'
templates — the retained table, the stack without it (every reference literal), the global table to import."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contract import names
from contract.knobs import ConfigError
from tests.infra.synth import only, resources, synth

pytestmark = pytest.mark.infra

HOME = "us-east-1"
KNOBS = dict(stream="new-and-old", replicas="us-west-2", gsi="gsi1", ttl="on")
STREAM = "arn:aws:dynamodb:us-east-1:123456789012:table/items-dev/stream/2026-12-02T00:00:00.000"


def _step(step: str | None, **extra: Any) -> tuple[Any, dict[str, Any]]:
    context: dict[str, Any] = {} if step is None else {"table_handover": step}
    if step in ("detached", "import"):
        context["table_stream_arn"] = STREAM
    config, template, _ = synth(region=HOME, context=context, **{**KNOBS, **extra})
    return config, template


def _tables(template: dict[str, Any]) -> dict[str, str]:
    """logical id -> type of the template's tables."""
    return {
        name: body["Type"]
        for name, body in template["Resources"].items()
        if body["Type"] in ("AWS::DynamoDB::Table", "AWS::DynamoDB::GlobalTable")
    }


def _references_to(template: dict[str, Any], logical_ids: set[str]) -> list[str]:
    """The Ref/GetAtt of ``logical_ids`` anywhere in the template but the tables themselves."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("Ref") in logical_ids:
                found.append(f"Ref {node['Ref']}")
            target = node.get("Fn::GetAtt")
            if isinstance(target, list) and target[0] in logical_ids:
                found.append(f"GetAtt {'.'.join(target)}")
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    others = {k: v for k, v in template["Resources"].items() if k not in logical_ids}
    walk(others)
    walk(template.get("Outputs", {}))
    return found


def test_retain_is_the_single_region_table_retained() -> None:
    # GIVEN replicas declared  WHEN synthesized at the retain step
    _, template = _step("retain")
    # THEN the table is the single-region table, retained on deletion and replacement, no handover output
    table = only(template, "AWS::DynamoDB::Table")
    assert (table["DeletionPolicy"], table["UpdateReplacePolicy"]) == ("Retain", "Retain")
    assert "AWS::DynamoDB::GlobalTable" not in {body["Type"] for body in template["Resources"].values()}
    assert names.OUT_TABLE_HANDOVER not in template["Outputs"]


def test_retain_keeps_the_single_region_tables_logical_id_and_shape() -> None:
    # GIVEN the same knobs without replicas (the live single-region stack)
    _, live, _ = synth(region=HOME, **{**KNOBS, "replicas": "none"})
    _, retained = _step("retain")
    # THEN the retain step's table is the live one with only its policies changed
    ((logical, body),) = resources(live, "AWS::DynamoDB::Table").items()
    changed = {**body, "DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"}
    assert resources(retained, "AWS::DynamoDB::Table") == {logical: changed}


def test_detached_has_no_table_and_names_it_literally() -> None:
    # GIVEN the retain step's table  WHEN synthesized at the detached step
    _, retained = _step("retain")
    _, template = _step("detached")
    logical = next(iter(_tables(retained)))
    # THEN no table resource, and nothing refers to the table's resource
    assert _tables(template) == {}
    assert _references_to(template, {logical}) == []
    # AND the consumer reads the live stream by its ARN, the outputs name the table and its stream
    mapping = only(template, "AWS::Lambda::EventSourceMapping")
    assert mapping["Properties"]["EventSourceArn"] == STREAM
    outputs = template["Outputs"]
    assert outputs[names.OUT_TABLE_NAME]["Value"] == "items-dev"
    assert outputs[names.OUT_STREAM_ARN]["Value"] == STREAM
    assert outputs[names.OUT_TABLE_HANDOVER]["Value"] == "detached"
    # AND the runtime policy still names the table's ARN
    policy = json.dumps(only(template, "AWS::IAM::ManagedPolicy"))
    assert "table/items-dev" in policy


def test_import_adds_only_the_global_table_without_replicas() -> None:
    # GIVEN the detached step's template  WHEN synthesized at the import step
    _, detached = _step("detached")
    _, template = _step("import")
    _, final = _step(None)
    # THEN the only new resource is the global table, under the final template's logical id, retained
    added = {k: v for k, v in template["Resources"].items() if k not in detached["Resources"]}
    assert (
        {k: v["Type"] for k, v in added.items()}
        == _tables(final)
        == {next(iter(_tables(final))): "AWS::DynamoDB::GlobalTable"}
    )
    ((logical, body),) = added.items()
    assert body["DeletionPolicy"] == "Retain"
    # AND its one replica is the stack's region; everything else is the detached step's
    assert [r["Region"] for r in body["Properties"]["Replicas"]] == [HOME]
    assert {k: v for k, v in template["Resources"].items() if k != logical} == detached["Resources"]
    assert template["Outputs"] == {
        **detached["Outputs"],
        names.OUT_TABLE_HANDOVER: {**detached["Outputs"][names.OUT_TABLE_HANDOVER], "Value": "import"},
    }
    # AND the final template has the replicas and no handover output
    assert [r["Region"] for r in final["Resources"][logical]["Properties"]["Replicas"]] == ["us-west-2", HOME]
    assert names.OUT_TABLE_HANDOVER not in final["Outputs"]


@pytest.mark.parametrize(
    ("step", "stream", "extra", "expected"),
    [
        ("later", None, {}, "table_handover='later'; allowed: retain, detached, import"),
        ("detached", None, {}, "table_stream_arn=None; allowed with table_handover=detached"),
        ("retain", None, {"replicas": "none"}, "converts the table to a global table, but replicas=none"),
    ],
)
def test_a_wrong_handover_is_a_config_error(
    step: str, stream: str | None, extra: dict[str, str], expected: str
) -> None:
    context: dict[str, Any] = {"table_handover": step}
    if stream:
        context["table_stream_arn"] = stream
    with pytest.raises(ConfigError) as raised:
        synth(region=HOME, context=context, **{**KNOBS, **extra})
    assert any(expected in problem for problem in raised.value.problems)
