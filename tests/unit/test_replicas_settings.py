"""The `replicas` knob: read from doctable.toml as an array, from -c and DOCTABLE_REPLICAS as comma-separated
text, recorded and read back, and each of its validation rules (the problem's knob and value compared)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from contract.knobs import ConfigError, DocTableConfig, knobs_from_record, resolve_config
from contract.settings import resolve as st
from contract.settings.render import default_settings, render_settings

pytestmark = pytest.mark.unit

STREAM = {"stream": "new-and-old"}
# The problem's opening ``knob='value'`` (or ``knob=value``): what the problem is about.
PROBLEM_SUBJECT = re.compile(r"^(?:[^:]+\.toml \[[^]]+\]: )?(\w+) ?= ?'?([^' ]*)'?[ ;]")


def subjects(problems: list[str]) -> list[tuple[str, str]]:
    found = []
    for problem in problems:
        match = PROBLEM_SUBJECT.match(problem)
        assert match is not None, problem
        found.append((match.group(1), match.group(2)))
    return found


def refused(**context: str) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as caught:
        resolve_config(context=context, environ={})
    return subjects(caught.value.problems)


def settings_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "doctable.toml"
    path.write_text(text)
    return path


# ------------------------------------------------------------------------------------------ resolution
def test_single_region_is_the_default() -> None:
    # GIVEN no replicas knob  WHEN resolved  THEN the table has no replica and is not a global table
    config = resolve_config(context=dict(STREAM), environ={})
    assert config.replicas == () and not config.is_global
    assert config.knob_values()["replicas"] == "none"


def test_the_settings_file_declares_replicas_as_a_toml_array(tmp_path: Path) -> None:
    # GIVEN [defaults] with one replica and stg with two
    path = settings_file(
        tmp_path,
        '[defaults]\nstream = "new-and-old"\nreplicas = ["eu-west-1"]\n\n[environments.dev]\n\n'
        '[environments.stg]\nreplicas = ["us-west-2", "eu-west-1"]\n',
    )
    # WHEN dev and stg are resolved
    dev = st.resolve_settings(context={"env": "dev"}, environ={}, config_path=path).config
    stg = st.resolve_settings(context={"env": "stg"}, environ={}, config_path=path).config
    # THEN each takes its regions, in the file's order
    assert dev.replicas == ("eu-west-1",)
    assert stg.replicas == ("us-west-2", "eu-west-1") and stg.is_global


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("us-west-2,eu-west-1", ("us-west-2", "eu-west-1")),
        (" us-west-2 , eu-west-1 ", ("us-west-2", "eu-west-1")),
        ("none", ()),
        ("", ()),
    ],
)
def test_context_and_the_variable_take_a_comma_separated_list(given: str, expected: tuple[str, ...]) -> None:
    # GIVEN the list as -c replicas= and as DOCTABLE_REPLICAS  WHEN resolved
    from_context = resolve_config(context={**STREAM, "replicas": given}, environ={})
    from_variable = resolve_config(context=dict(STREAM), environ={"DOCTABLE_REPLICAS": given})
    # THEN both give the same regions (an empty variable is unset: the default, none)
    assert from_context.replicas == expected
    assert from_variable.replicas == (expected if given.strip() else ())


def test_the_deployed_record_gives_the_replicas_back() -> None:
    # GIVEN a config with two replicas  WHEN its record is read back and resolved again
    config = resolve_config(context={**STREAM, "replicas": "us-west-2,eu-west-1"}, environ={})
    knobs = knobs_from_record(config.deployed_record())
    again = resolve_config(context=knobs, environ={})
    # THEN the record holds the comma-separated list and resolves to the same config
    assert knobs["replicas"] == "us-west-2,eu-west-1"
    assert again == config


def test_the_replica_stack_is_named_after_the_home_stack_and_the_region() -> None:
    config = resolve_config(context={**STREAM, "replicas": "us-west-2"}, environ={})
    assert config.replica_stack_name("us-west-2") == "doctable-items-dev-us-west-2"


def test_the_file_renders_replicas_as_an_array(tmp_path: Path) -> None:
    # GIVEN the built-in defaults and an environment with replicas  WHEN rendered and parsed back
    settings = default_settings(tmp_path / "doctable.toml")
    settings.environments["prod"] = st.Section(values={"replicas": ["us-west-2", "eu-west-1"]})
    text = render_settings(settings)
    parsed = st.parse_settings(text, tmp_path / "doctable.toml")
    # THEN [defaults] writes an empty array under its generated comment, and prod's regions survive
    assert "replicas = []" in text and "on a live stack: adding a replica copies the table" in text
    assert parsed.environments["prod"].values["replicas"] == ["us-west-2", "eu-west-1"]
    assert parsed.defaults.values["replicas"] == []


# ------------------------------------------------------------------------------------------ validation
@pytest.mark.parametrize(
    ("given", "subject"),
    [
        ("us-west", ("replicas", "us-west")),
        (
            "arn:aws:dynamodb:us-west-2:123456789012:table/items-dev",
            ("replicas", "arn:aws:dynamodb:us-west-2:123456789012:table/items-dev"),
        ),
        ("US-WEST-2", ("replicas", "US-WEST-2")),
        ("us-west-2,", ("replicas", "")),
    ],
)
def test_each_replica_must_be_a_region_name(given: str, subject: tuple[str, str]) -> None:
    assert refused(**STREAM, replicas=given) == [subject]


def test_a_region_listed_twice_is_refused() -> None:
    assert refused(**STREAM, replicas="us-west-2,eu-west-1,us-west-2") == [("replicas", "us-west-2")]


def test_the_environments_own_region_is_not_a_replica(tmp_path: Path) -> None:
    # GIVEN prod bound to us-east-1 with us-east-1 among its replicas
    path = settings_file(
        tmp_path,
        '[environments.prod]\nregion = "us-east-1"\nstream = "new-and-old"\nreplicas = ["us-west-2", "us-east-1"]\n',
    )
    # WHEN resolved
    with pytest.raises(ConfigError) as caught:
        st.resolve_settings(context={"env": "prod"}, environ={}, config_path=path)
    # THEN one problem names the knob and the region, located in the file's section
    assert subjects(caught.value.problems) == [("replicas", "us-east-1")]
    assert caught.value.problems[0].startswith("doctable.toml [environments.prod]: ")


def test_an_unbound_environment_takes_any_region() -> None:
    # GIVEN no region binding  THEN the own-region rule has nothing to compare with
    assert resolve_config(context={**STREAM, "replicas": "us-east-1"}, environ={}).replicas == ("us-east-1",)


def test_replicas_need_the_new_and_old_stream() -> None:
    assert refused(replicas="us-west-2") == [("replicas", "us-west-2")]
    assert refused(replicas="us-west-2,eu-west-1", stream="none") == [("replicas", "us-west-2,eu-west-1")]


@pytest.mark.parametrize(
    ("knobs", "expected"),
    [
        ({"encryption": "customer-managed"}, [("encryption", "customer-managed")]),
        ({"kinesis": "on"}, [("kinesis", "on")]),
        (
            {"kinesis": "arn:aws:kinesis:us-east-1:123456789012:stream/theirs"},
            [("kinesis", "arn:aws:kinesis:us-east-1:123456789012:stream/theirs")],
        ),
        (
            {"kinesis": "on", "consumer_source": "kinesis"},
            [("kinesis", "on"), ("consumer_source", "kinesis")],
        ),
    ],
)
def test_what_a_global_table_does_not_support_yet_is_refused(
    knobs: dict[str, str], expected: list[tuple[str, str]]
) -> None:
    # GIVEN replicas with an option a global table does not support yet  THEN one problem per option
    assert refused(**STREAM, replicas="us-west-2", **knobs) == expected
    # AND without replicas the same options resolve
    assert isinstance(resolve_config(context={**STREAM, **knobs}, environ={}), DocTableConfig)


def test_the_local_aws_takes_a_global_table() -> None:
    # GIVEN replicas deployed to the local AWS (which emulates global tables)  THEN they resolve
    config = resolve_config(context={**STREAM, "replicas": "us-west-2", "deploy_target": "local"}, environ={})
    assert config.replicas == ("us-west-2",)


def test_the_aws_managed_key_is_allowed_with_replicas() -> None:
    config = resolve_config(
        context={**STREAM, "replicas": "us-west-2", "encryption": "aws-managed"}, environ={}
    )
    assert config.replicas == ("us-west-2",)


def test_a_toml_string_is_not_an_array(tmp_path: Path) -> None:
    # GIVEN replicas written as a TOML string  WHEN the file is parsed  THEN the problem names the knob
    with pytest.raises(ConfigError) as caught:
        st.parse_settings('[defaults]\nreplicas = "us-west-2"\n', tmp_path / "doctable.toml")
    assert subjects(caught.value.problems) == [("replicas", "us-west-2")]
    assert "TOML array of strings" in caught.value.problems[0]


def test_replica_streams_context_is_not_taken_for_a_knob() -> None:
    # GIVEN the CDK context doctable deploy passes beside a knob  WHEN the app picks the knobs from it
    from contract.knobs import user_context

    context = {"replica_streams": '{"us-west-2": "arn:..."}', "gsi": "gsi1", "@aws-cdk/core:flag": True}
    # THEN replica_streams is left to the stack, like CDK's own keys
    assert user_context(context) == {"gsi": "gsi1"}
