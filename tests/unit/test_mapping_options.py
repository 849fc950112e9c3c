"""The mapping's event filter (``events``) and metrics (``mapping_metrics``): knobs, shape, live comparison,
drift repair and preflight's lines. No AWS."""

from __future__ import annotations

import json

import pytest

from contract.findings import Level
from contract.knobs import ConfigError, resolve_config
from contract.shape import EVENT_INSERT, EVENT_REMOVE, cleanup_filter_patterns, mapping_shape
from doctable.capabilities import mapping
from doctable.capabilities.mapping import MAPPING_CLEARED
from doctable.core.live import mapping_differences, setting_text

pytestmark = pytest.mark.unit

STREAM = {"stream": "new-and-old"}


def shape(**knobs: str):  # type: ignore[no-untyped-def]
    found = mapping_shape(resolve_config({**STREAM, **knobs}, environ={}))
    assert found is not None
    return found


def test_defaults_deliver_every_event_with_metrics_on() -> None:
    # GIVEN the defaults  THEN no filter, EventCount metrics, and verify's nudge is the INSERT
    default = shape()
    assert default.filter_criteria is None
    assert default.metrics_config == {"Metrics": ["EventCount"]}
    assert default.nudge_event == EVENT_INSERT


def test_cleanup_filters_and_moves_the_nudge_to_a_remove() -> None:
    cleanup = shape(events="cleanup", mapping_metrics="off")
    assert cleanup.filter_criteria == {"Filters": [{"Pattern": p} for p in cleanup_filter_patterns()]}
    assert cleanup.metrics_config is None
    assert cleanup.nudge_event == EVENT_REMOVE
    patterns = [json.loads(p) for p in cleanup_filter_patterns()]
    assert patterns[0] == {"eventName": ["REMOVE"]}
    assert {json.dumps(p["dynamodb"]["OldImage"]["blobs"], sort_keys=True) for p in patterns[1:]} == {
        '{"L": {"S": [{"exists": true}]}}',
        '{"L": {"M": {"key": {"S": [{"exists": true}]}}}}',
        '{"SS": [{"exists": true}]}',
    }


@pytest.mark.parametrize(
    ("knobs", "problem"),
    [
        ({"events": "inserts"}, "events='inserts' is not allowed; allowed values: all|cleanup"),
        ({"mapping_metrics": "yes"}, "mapping_metrics='yes' is not allowed; allowed values: off|on"),
        ({"events": "cleanup", "stream": "none"}, "events='cleanup' set but consumer='none'"),
        (
            {"events": "cleanup", "consumer": "arn:aws:lambda:us-east-1:123456789012:function:theirs"},
            "only what the built-in consumer's blob cleanup needs",
        ),
    ],
)
def test_bad_values_fail_naming_the_knob(knobs: dict[str, str], problem: str) -> None:
    with pytest.raises(ConfigError) as failed:
        resolve_config({**STREAM, **knobs}, environ={})
    assert any(problem in line for line in failed.value.problems)


def test_knob_record_round_trips() -> None:
    config = resolve_config({**STREAM, "events": "cleanup", "mapping_metrics": "off"}, environ={})
    assert resolve_config(config.knob_values(), environ={}) == config


def live_mapping(**fields: object) -> dict[str, object]:
    want = shape(events="cleanup")
    mapping: dict[str, object] = {k: v for k, v in want.live_fields().items() if v is not None}
    mapping.update(State="Enabled", DestinationConfig={"OnFailure": {"Destination": "arn:aws:s3:::b"}})
    mapping.update(fields)
    return mapping


def test_filter_compared_as_json_in_any_order_and_empty_as_absent() -> None:
    want = shape(events="cleanup")
    patterns = cleanup_filter_patterns()
    # the same patterns, reordered and spaced differently, are no difference
    reordered = {"Filters": [{"Pattern": json.dumps(json.loads(p), indent=1)} for p in reversed(patterns)]}
    assert mapping_differences(live_mapping(FilterCriteria=reordered), want, "arn:aws:s3:::b") == []
    # a filter removed out of band is a difference, reported by count
    (name, live, declared), *_ = mapping_differences(live_mapping(FilterCriteria={}), want, "arn:aws:s3:::b")
    assert name == "FilterCriteria" and setting_text(name, live) == "no filter"
    assert setting_text(name, declared) == "4 filter patterns"
    # with events=all an empty FilterCriteria is the same as none
    everything = shape()
    mapping = {k: v for k, v in everything.live_fields().items() if v is not None}
    mapping.update(State="Enabled", DestinationConfig={"OnFailure": {"Destination": "arn:aws:s3:::b"}})
    for empty in ({}, {"Filters": []}):
        assert mapping_differences({**mapping, "FilterCriteria": empty}, everything, "arn:aws:s3:::b") == []
    drifted = mapping_differences({**mapping, "MetricsConfig": {"Metrics": []}}, everything, "arn:aws:s3:::b")
    assert [d[0] for d in drifted] == ["MetricsConfig"]


def test_reconcile_clears_what_the_knobs_leave_unset() -> None:
    # GIVEN the knobs declare no filter  THEN the repair sends the empty FilterCriteria AWS documents
    assert MAPPING_CLEARED == {"FilterCriteria": {}, "MetricsConfig": {"Metrics": []}}


def test_preflight_reports_each_setting_change_with_its_values() -> None:
    def config(**knobs: str):  # type: ignore[no-untyped-def]
        return resolve_config({**STREAM, **knobs}, environ={})

    # GIVEN the filter turned on and the metrics off  THEN one in-place change each, with the knobs' values
    lines = mapping.option_findings(config(), config(events="cleanup", mapping_metrics="off"))
    assert [(f.level, f.code, f.destructive, f.before, f.after) for f in lines] == [
        (Level.CHANGE, "mapping.events_changed", False, "all", "cleanup"),
        (Level.CHANGE, "mapping.metrics_changed", False, True, False),
    ]
    assert (lines[0].live, lines[0].declared) == ("no filter", "4 filter patterns")
    # AND back again, or nothing changed, or no mapping before: the same code the other way, or nothing
    back = mapping.option_findings(config(events="cleanup"), config())
    assert [(f.code, f.before, f.after) for f in back] == [("mapping.events_changed", "cleanup", "all")]
    assert mapping.option_findings(config(), config()) == []
    assert mapping.option_findings(config(stream="none"), config(events="cleanup")) == []
