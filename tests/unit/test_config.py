"""The knobs: precedence, closed enums, malformed names, contradictions, all errors collected at once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contract.knobs import (
    KNOB_DEFAULTS,
    ConfigError,
    knobs_from_record,
    resolve_config,
)

ROOT = Path(__file__).resolve().parents[2]


def test_cdk_json_holds_no_knob() -> None:
    # GIVEN cdk.json  THEN it carries CDK's own settings only: the knobs live in doctable.toml
    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    assert not set(context) & set(KNOB_DEFAULTS)
    assert all(":" in key for key in context)


def test_defaults_give_the_flat_dev_table() -> None:
    config = resolve_config(context={}, environ={}, defaults={})
    assert (config.gsi, config.ttl, config.stream, config.pitr) == ("none", "off", "none", "off")
    assert config.table_name == "items-dev"
    assert config.stack_name == "doctable-items-dev"
    assert config.consumer == "none"  # auto resolves to none without a stream
    assert config.tags() == {
        "ManagedBy": "ephemera",
        "Source": "doctable",
        "PlanVersion": config.tags()["PlanVersion"],
        "Environment": "dev",
        "Tier": "dev",
    }


def test_context_beats_environment_beats_default() -> None:
    # GIVEN the same knob from all three sources
    defaults = {"gsi": "none", "ttl": "off"}
    environ = {"DOCTABLE_GSI": "gsi1", "DOCTABLE_TTL": "on"}
    # WHEN context names gsi only
    config = resolve_config(context={"gsi": "none"}, environ=environ, defaults=defaults)
    # THEN context wins for gsi, the environment for ttl
    assert config.gsi == "none"
    assert config.ttl == "on"


def test_empty_environment_variable_counts_as_unset() -> None:
    config = resolve_config(context={}, environ={"DOCTABLE_GSI": ""}, defaults={"gsi": "gsi1"})
    assert config.gsi == "gsi1"


def test_unprefixed_variables_are_never_knobs() -> None:
    # GIVEN the names a shell or a CI runner sets for other purposes
    environ = {
        "GSI": "gsi1",
        "TTL": "on",
        "ENV": "/root/.shrc",
        "TIMEOUT": "60",
        "MEMORY": "1024",
        "OWNER": "x",
    }
    # WHEN the knobs are resolved  THEN none of them is read
    config = resolve_config(context={}, environ=environ, defaults={})
    assert (config.gsi, config.ttl, config.env, config.timeout, config.memory, config.owner) == (
        "none",
        "off",
        "dev",
        30,
        512,
        "",
    )


def test_unknown_doctable_variable_is_refused_with_a_suggestion() -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_config(context={}, environ={"DOCTABLE_GSII": "gsi1", "DOCTABLE_LOCAL_PORT": "1"}, defaults={})
    assert len(caught.value.problems) == 1
    assert "DOCTABLE_GSII" in caught.value.problems[0] and "DOCTABLE_GSI?" in caught.value.problems[0]


def test_stream_turns_on_the_builtin_consumer_by_default() -> None:
    config = resolve_config(context={"stream": "new-and-old"}, environ={}, defaults={})
    assert config.consumer == "builtin"
    assert config.has_mapping


@pytest.mark.parametrize(
    ("knob", "value", "allowed"),
    [
        ("gsi", "gsi2", "none|gsi1"),
        ("ttl", "yes", "off|on"),
        ("stream", "new-image", "none|new-and-old"),
        ("pitr", "true", "off|on"),
        ("env", "Qa", "lower-case letters, digits and -, starting with a letter"),
        ("env", "qa", "tier = 'dev'|'stg'|'uat'|'prod' in [environments.qa]"),
        ("table_base", "Items", "[a-z0-9-]"),
        ("table_base", "items_v2", "[a-z0-9-]"),
        ("table_base", "a" * 200, "a table_base of at most 24 characters"),
        ("cost_center", "cc#1", "letters, digits"),
        ("owner", "aws:me", "not starting with 'aws:'"),
        ("owner", "x" * 257, "at most 256"),
        ("consumer", "lambda-fn", "auto|builtin|none|<Lambda function ARN>"),
        (
            "consumer",
            "arn:aws:lambda:us-east-1:12:function:x",
            "arn:aws:lambda:<region>:<account>:function:<name>",
        ),
        ("blob_bucket", "Bad_Bucket", "3-63 characters"),
        ("blob_root", "/abs/", "ending in '/'"),
        ("blob_root", "a/../b/", "ending in '/'"),
        ("blob_prefix_cleanup", "maybe", "off|on"),
        ("starting_position", "at-timestamp", "trim-horizon|latest"),
        ("batch_size", "0", "1 to 10000"),
        ("batch_size", "10001", "1 to 10000"),
        ("batch_size", "ten", "1 to 10000"),
        ("batching_window", "301", "0 to 300"),
        ("max_retries", "-1", "0 to 10000"),
        ("max_record_age", "-1", "60 to 604800"),
        ("parallelization_factor", "11", "1 to 10"),
        ("powertools", "pip", "layer|bundled"),
        ("architecture", "x86", "arm64|x86_64"),
        ("memory", "64", "128 to 10240"),
        ("timeout", "901", "1 to 900"),
        ("deploy_target", "localstack", "aws|local"),
    ],
)
def test_invalid_value_names_the_knob_the_value_and_the_allowed_values(
    knob: str, value: str, allowed: str
) -> None:
    # GIVEN one bad knob (with the stream on, so consumer knobs are meaningful)
    context = {"stream": "new-and-old", knob: value}
    # WHEN the config resolves
    with pytest.raises(ConfigError) as caught:
        resolve_config(context=context, environ={}, defaults={})
    # THEN the single message names the knob, the value and what is allowed
    message = str(caught.value)
    assert f"{knob}=" in message
    assert repr(value)[:60].rstrip("'") in message
    assert allowed in message


@pytest.mark.parametrize(
    ("context", "fragment"),
    [
        ({"consumer": "builtin"}, "set but stream=none"),
        ({"consumer": "arn:aws:lambda:us-east-1:123456789012:function:mine"}, "set but stream=none"),
        ({"stream": "new-and-old", "consumer": "none", "blob_bucket": "my-blobs"}, "only consumer=builtin"),
        ({"stream": "new-and-old", "consumer": "none", "blob_prefix_cleanup": "on"}, "only consumer=builtin"),
        ({"stream": "new-and-old", "batch_size": "5000"}, "needs batching_window"),
    ],
)
def test_contradictory_combinations_fail(context: dict[str, str], fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        resolve_config(context=context, environ={}, defaults={})


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_config(
            context={"gsi": "x", "ttl": "y", "env": "z", "consumer": "builtin"}, environ={}, defaults={}
        )
    assert len(caught.value.problems) == 4
    assert [p.split("=")[0] for p in caught.value.problems] == ["gsi", "ttl", "env", "consumer"]


def test_borrowed_consumer_arn_is_accepted_with_the_stream() -> None:
    arn = "arn:aws:lambda:eu-west-1:123456789012:function:my-consumer"
    config = resolve_config(context={"stream": "new-and-old", "consumer": arn}, environ={}, defaults={})
    assert config.borrowed_consumer_arn == arn
    assert not config.builtin_consumer


@pytest.mark.parametrize(
    ("env", "protected", "retained"),
    [("dev", False, False), ("stg", False, False), ("uat", False, True), ("prod", True, True)],
)
def test_environment_policy(env: str, protected: bool, retained: bool) -> None:
    config = resolve_config(context={"env": env}, environ={}, defaults={})
    assert (config.deletion_protection, config.retain_on_delete) == (protected, retained)


@pytest.mark.parametrize(
    ("env", "tier", "protected", "retained", "pitr"),
    [
        ("qa", "stg", False, False, False),
        ("prod-eu", "prod", True, True, True),
        ("perf", "uat", False, True, False),
    ],
)
def test_the_tier_not_the_name_carries_the_rules(
    env: str, tier: str, protected: bool, retained: bool, pitr: bool
) -> None:
    # GIVEN an environment of any name with its tier  WHEN it resolves
    config = resolve_config(context={"env": env}, environ={}, defaults={"tier": tier})
    # THEN its protections are its tier's, and its tags say both
    assert (config.deletion_protection, config.retain_on_delete, config.has_pitr) == (
        protected,
        retained,
        pitr,
    )
    assert (config.tags()["Environment"], config.tags()["Tier"]) == (env, tier)


@pytest.mark.parametrize(
    ("context", "room"),
    [
        (
            {"env": "a" * 40, "tier": "dev"},
            "the failure bucket name <table_base>-<env>-<account>-<region>-failures",
        ),
        ({"env": "a" * 40, "tier": "dev"}, "an environment name of at most 20 characters"),
        (
            {"env": "a" * 40, "tier": "dev", "bucket_names": "generated"},
            "an environment name of at most 33 characters",
        ),
        (
            {
                "env": "prod-x",
                "tier": "prod",
                "table_base": "a" * 20,
                "stream": "new-and-old",
                "replicas": "ap-southeast-2",
                "bucket_names": "generated",
            },
            "an environment name of at most 3 characters",
        ),
    ],
)
def test_a_name_too_long_for_a_generated_name_says_which_and_how_long(
    context: dict[str, str], room: str
) -> None:
    # GIVEN an environment name that would cut the stack name out of CloudFormation's generated names
    with pytest.raises(ConfigError) as caught:
        resolve_config(context=context, environ={}, defaults={})
    # THEN one problem names the generated name that would not fit and the room left
    assert len(caught.value.problems) == 1
    assert room in caught.value.problems[0]


def test_config_is_frozen() -> None:
    config = resolve_config(context={}, environ={}, defaults={})
    with pytest.raises(AttributeError):
        config.gsi = "gsi1"  # type: ignore[misc]


def test_a_misspelt_knob_fails_with_a_suggestion() -> None:
    # GIVEN `-c gsii=gsi1` (a typo that would otherwise deploy gsi=none)
    with pytest.raises(ConfigError) as caught:
        resolve_config(context={"gsii": "gsi1"}, environ={}, defaults={})
    # THEN the message names the unknown key and the knob it resembles
    assert "gsii='gsi1' is not a knob (did you mean gsi?)" in str(caught.value)


def test_cdk_namespaced_context_is_not_mistaken_for_a_knob() -> None:
    from contract.knobs import user_context

    context = {"@aws-cdk/core:checkSecretUsage": True, "aws:cdk:version-reporting": False, "gsi": "gsi1"}
    assert user_context(context) == {"gsi": "gsi1"}


@pytest.mark.parametrize(
    "context",
    [
        {},
        {"stream": "new-and-old", "gsi": "gsi1", "ttl": "on", "pitr": "on", "env": "prod", "owner": "team docs"},
        {"stream": "new-and-old", "blob_root": "blobs/", "blob_prefix_cleanup": "on", "batch_size": "2000",
         "batching_window": "5", "powertools": "bundled", "architecture": "x86_64", "starting_position": "latest"},
        {"stream": "new-and-old", "consumer": "arn:aws:lambda:us-east-1:123456789012:function:theirs"},
    ],
)  # fmt: skip
def test_the_deployed_knob_record_resolves_back_to_the_same_config(context: dict[str, str]) -> None:
    # GIVEN a config and the record its stack carries
    config = resolve_config(context=context, environ={})
    record = config.deployed_record()
    # WHEN the record is read back as knobs  THEN it resolves to the very same config, whatever the environment
    again = resolve_config(
        context=knobs_from_record(record), environ={"DOCTABLE_GSI": "gsi1", "DOCTABLE_TTL": "on"}
    )
    assert again == config


@pytest.mark.parametrize("record", ["not json", "[1, 2]", '{"gsi": 1}'])
def test_a_knob_record_that_is_not_one_is_refused(record: str) -> None:
    with pytest.raises(ValueError, match="knob record"):
        knobs_from_record(record)
