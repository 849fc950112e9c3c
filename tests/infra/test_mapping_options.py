"""The mapping's FilterCriteria, MetricsConfig and the dropped-events alarm across the knobs that shape them;
each template cfn-lint clean and cdk-nag clean (synth fails on an unacknowledged finding)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contract.shape import cleanup_filter_patterns
from tests.infra.synth import cfn_lint, only, resources, synth

pytestmark = pytest.mark.infra

ROOT = Path(__file__).resolve().parents[2]
BORROWED = "arn:aws:lambda:us-east-1:123456789012:function:theirs"
MATRIX = [
    dict(stream="new-and-old"),
    dict(stream="new-and-old", events="cleanup"),
    dict(stream="new-and-old", events="cleanup", mapping_metrics="off"),
    dict(stream="new-and-old", mapping_metrics="off"),
    dict(stream="new-and-old", consumer=BORROWED),
    dict(stream="new-and-old", consumer=BORROWED, mapping_metrics="off"),
    dict(stream="new-and-old", events="cleanup", blob_prefix_cleanup="on", env="prod"),
]


def mapping_of(template: dict[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = only(template, "AWS::Lambda::EventSourceMapping")["Properties"]
    return properties


def dropped_alarms(template: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        a["Properties"]
        for a in resources(template, "AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("MetricName") == "DroppedEventCount"
    ]


@pytest.mark.parametrize(
    "knobs", MATRIX, ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items() if a != "consumer")
)
def test_filter_metrics_and_alarm_follow_the_knobs(knobs: dict[str, str]) -> None:
    # GIVEN the knobs  WHEN the app synthesizes
    config, template, _ = synth(**knobs)
    mapping = mapping_of(template)
    # THEN FilterCriteria is the cleanup filter exactly when events=cleanup
    if config.filters_events:
        patterns = [f["Pattern"] for f in mapping["FilterCriteria"]["Filters"]]
        assert patterns == list(cleanup_filter_patterns())
        assert {json.loads(p)["eventName"][0] for p in patterns} == {"REMOVE", "MODIFY"}
    else:
        assert "FilterCriteria" not in mapping
    # AND MetricsConfig carries EventCount exactly when mapping_metrics=on
    if config.has_mapping_metrics:
        assert mapping["MetricsConfig"] == {"Metrics": ["EventCount"]}
    else:
        assert "MetricsConfig" not in mapping
    # AND the dropped-events alarm watches this mapping's UUID, with metrics on and alarms built (builtin consumer)
    alarms = dropped_alarms(template)
    if config.has_mapping_metrics and config.builtin_consumer:
        (alarm,) = alarms
        assert alarm["Namespace"] == "AWS/Lambda" and alarm["Statistic"] == "Sum"
        (logical_id,) = resources(template, "AWS::Lambda::EventSourceMapping")
        assert alarm["Dimensions"] == [{"Name": "EventSourceMappingUUID", "Value": {"Ref": logical_id}}]
        assert alarm["Threshold"] == 1 and alarm["EvaluationPeriods"] == 1
        assert alarm["TreatMissingData"] == "notBreaching" and alarm["AlarmActions"]
    else:
        assert alarms == []


def test_cfn_lint_is_clean(tmp_path: Path) -> None:
    for i, knobs in enumerate(MATRIX):
        _, template, _ = synth(**knobs)
        (tmp_path / f"m{i:02d}.template.json").write_text(json.dumps(template))
    result = cfn_lint(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
