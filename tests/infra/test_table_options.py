"""The table's options (class, on-demand maximum, warm throughput, PITR and its period, deletion protection,
contributor insights) in the synthesized template, over a matrix of their values and the environments."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from contract.knobs import ENV_VALUES
from tests.infra.synth import only, synth

ALL_OPTIONS = dict(
    table_class="standard-ia",
    max_read="20000",
    max_write="8000",
    warm_read="15000",
    warm_write="5000",
    pitr="on",
    pitr_days="7",
    deletion_protection="on",
    contributor_insights="accessed-and-throttled-keys",
)
MATRIX = [
    dict(table_class=c, contributor_insights=i, env=e)
    for c, i, e in itertools.product(
        ("standard", "standard-ia"), ("off", "throttled-keys", "accessed-and-throttled-keys"), ("dev", "prod")
    )
]


def _table(**knobs: str) -> tuple[Any, dict[str, Any]]:
    config, template, _ = synth(**knobs)
    return config, only(template, "AWS::DynamoDB::Table")["Properties"]


@pytest.mark.parametrize("knobs", MATRIX, ids=lambda k: "-".join(f"{a}={b}" for a, b in k.items()))
def test_class_and_contributor_insights_follow_the_knobs(knobs: dict[str, str]) -> None:
    # GIVEN a table class and a contributor-insights mode  WHEN synthesized
    _, props = _table(**knobs)
    # THEN the class is explicit either way (so a change back to standard really changes it)
    assert (
        props["TableClass"]
        == {"standard": "STANDARD", "standard-ia": "STANDARD_INFREQUENT_ACCESS"}[knobs["table_class"]]
    )
    # AND contributor insights are explicit either way, with the mode only when enabled
    mode = {"throttled-keys": "THROTTLED_KEYS", "accessed-and-throttled-keys": "ACCESSED_AND_THROTTLED_KEYS"}
    if knobs["contributor_insights"] == "off":
        assert props["ContributorInsightsSpecification"] == {"Enabled": False}
    else:
        assert props["ContributorInsightsSpecification"] == {
            "Enabled": True,
            "Mode": mode[knobs["contributor_insights"]],
        }


def test_all_options_land_in_the_template() -> None:
    # GIVEN every table option set  WHEN synthesized
    config, props = _table(**ALL_OPTIONS)
    # THEN each lands under its CloudFormation property
    assert props["OnDemandThroughput"] == {"MaxReadRequestUnits": 20000, "MaxWriteRequestUnits": 8000}
    assert props["WarmThroughput"] == {"ReadUnitsPerSecond": 15000, "WriteUnitsPerSecond": 5000}
    assert props["PointInTimeRecoverySpecification"] == {
        "PointInTimeRecoveryEnabled": True,
        "RecoveryPeriodInDays": 7,
    }
    assert props["DeletionProtectionEnabled"] is True
    # AND the deployed record carries them back as knobs
    assert config.knob_values()["pitr_days"] == "7" and config.knob_values()["max_read"] == "20000"


def test_options_off_leave_their_properties_out() -> None:
    # GIVEN the defaults  WHEN synthesized
    _, props = _table()
    # THEN no cap, no warm throughput, no period: DynamoDB's own defaults
    assert "OnDemandThroughput" not in props
    assert "WarmThroughput" not in props
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": False}


def test_one_direction_of_a_cap_or_warm_throughput_alone() -> None:
    _, props = _table(max_write="100", warm_read="12000")
    assert props["OnDemandThroughput"] == {"MaxWriteRequestUnits": 100}
    assert props["WarmThroughput"] == {"ReadUnitsPerSecond": 12000}


@pytest.mark.parametrize("env", ENV_VALUES)
def test_pitr_defaults_on_in_prod_only_and_an_explicit_value_wins(env: str) -> None:
    # GIVEN no pitr knob  THEN prod gets PITR, the other environments do not
    _, props = _table(env=env)
    assert props["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is (env == "prod")
    # AND an explicit value wins in every environment
    for value, enabled in (("on", True), ("off", False)):
        _, props = _table(env=env, pitr=value)
        assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": enabled}


@pytest.mark.parametrize("env", ENV_VALUES)
def test_deletion_protection_defaults_to_the_environment_and_the_knob_overrides_it(env: str) -> None:
    _, props = _table(env=env)
    assert props["DeletionProtectionEnabled"] is (env == "prod")
    for value, enabled in (("on", True), ("off", False)):
        _, props = _table(env=env, deletion_protection=value)
        assert props["DeletionProtectionEnabled"] is enabled


def test_prod_without_pitr_or_deletion_protection_warns_at_synth() -> None:
    # GIVEN prod with both protections turned off explicitly
    config, _, outdir = synth(env="prod", pitr="off", deletion_protection="off")
    # THEN the config names both, and the cloud assembly carries them as synth warnings on the table
    assert [w.split(":")[0] for w in config.warnings()] == [
        "env=prod (tier prod) with pitr=off",
        "env=prod (tier prod) with deletion_protection=off",
    ]
    manifest = (outdir / f"{config.stack_name}.metadata.json").read_text()
    assert "env=prod (tier prod) with pitr=off: the table has no point-in-time recovery" in manifest
    assert "deletion_protection=off" in manifest
    # AND the cdk-nag acknowledgement of PITR-off says what happened: prod set it off explicitly
    report = (outdir / "validation-report.json").read_text()
    assert "env=prod set pitr=off explicitly" in report


def test_dev_without_pitr_says_it_is_the_default_and_warns_nothing() -> None:
    config, _, outdir = synth(env="dev")
    assert config.warnings() == []
    assert "point-in-time recovery" not in (outdir / f"{config.stack_name}.metadata.json").read_text()
    assert (
        "off by default outside the environments it protects (env=dev)"
        in (outdir / "validation-report.json").read_text()
    )
