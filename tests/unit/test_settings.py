"""doctable.toml: each rule of resolution (file over default, environment over [defaults], override over file,
unprefixed variables ignored), the file's bad inputs, the shipped file kept current, and app.py and the CLI
resolving the same config from the same inputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from contract.knobs import KNOB_DEFAULTS, KNOBS, ConfigError
from contract.settings import resolve as st
from contract.settings.render import render_settings
from doctable.core.context import resolve_run
from doctable.core.target import Target

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
FILE = """\
[defaults]
owner = "team-docs"
batch_size = 50

[environments.dev]

[environments.stg]
gsi = "gsi1"
stream = "new-and-old"
batch_size = 100
region = "eu-west-1"

[environments.uat]

[environments.prod]
account = "123456789012"
region = "us-east-1"
max_read = 500
"""


def write(tmp_path: Path, text: str = FILE) -> Path:
    path = tmp_path / "doctable.toml"
    path.write_text(text)
    return path


def resolve(
    tmp_path: Path, text: str = FILE, context: dict[str, str] | None = None, **environ: str
) -> st.Resolved:
    return st.resolve_settings(context=context or {}, environ=environ, config_path=write(tmp_path, text))


def problems(tmp_path: Path, text: str, context: dict[str, str] | None = None, **environ: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        resolve(tmp_path, text, context, **environ)
    return caught.value.problems


# ------------------------------------------------------------------------------------------ resolution
def test_the_environment_table_beats_defaults_which_beat_the_built_in(tmp_path: Path) -> None:
    # GIVEN stg sets batch_size 100 over [defaults]' 50, and owner only in [defaults]
    resolved = resolve(tmp_path, context={"env": "stg"})
    config = resolved.config
    # THEN each knob comes from the closest table, the rest from the built-in defaults
    assert (config.batch_size, config.owner, config.gsi, config.timeout) == (100, "team-docs", "gsi1", 30)
    assert resolved.sources["batch_size"] == "doctable.toml [environments.stg]"
    assert resolved.sources["owner"] == "doctable.toml [defaults]"
    assert resolved.sources["timeout"] == st.BUILT_IN
    assert (resolved.account, resolved.region) == (None, "eu-west-1")


def test_an_environment_without_a_table_takes_the_defaults(tmp_path: Path) -> None:
    config = resolve(tmp_path, context={"env": "uat"}).config
    assert (config.env, config.batch_size, config.gsi) == ("uat", 50, "none")


def test_doctable_env_selects_the_environment_and_the_binding(tmp_path: Path) -> None:
    resolved = resolve(tmp_path, DOCTABLE_ENV="prod")
    assert resolved.config.env == "prod" and resolved.config.max_read == 500
    assert (resolved.account, resolved.region) == ("123456789012", "us-east-1")


def test_an_override_beats_the_file_and_is_listed(tmp_path: Path) -> None:
    # GIVEN stg declares gsi1; WHEN one run overrides it with DOCTABLE_GSI and batch_size with -c
    resolved = resolve(tmp_path, context={"env": "stg", "batch_size": "7"}, DOCTABLE_GSI="none")
    # THEN the overrides win, -c over the variable, and each differing override is listed with the file's value
    assert (resolved.config.gsi, resolved.config.batch_size) == ("none", 7)
    assert [o.as_dict() for o in resolved.overrides] == [
        {"knob": "gsi", "source": "DOCTABLE_GSI", "file": "gsi1", "value": "none"},
        {"knob": "batch_size", "source": "-c", "file": "100", "value": "7"},
    ]


def test_an_override_equal_to_the_file_is_not_listed(tmp_path: Path) -> None:
    resolved = resolve(tmp_path, context={"env": "stg", "gsi": "gsi1"})
    assert resolved.overrides == [] and resolved.sources["gsi"] == "-c"


def test_unprefixed_variables_are_ignored(tmp_path: Path) -> None:
    # GIVEN GSI, ENV and TIMEOUT left in the shell by something else
    resolved = resolve(tmp_path, GSI="gsi1", ENV="/root/.shrc", TIMEOUT="60", STREAM="new-and-old")
    # THEN the dev environment resolves from the file alone
    config = resolved.config
    assert (config.env, config.gsi, config.timeout, config.stream) == ("dev", "none", 30, "none")
    assert resolved.overrides == []


def test_no_file_means_the_built_in_defaults(tmp_path: Path) -> None:
    resolved = st.resolve_settings(context={}, environ={}, cwd=tmp_path)
    # (the project's own doctable.toml is found when the working directory has none)
    assert resolved.path == ROOT / st.FILE_NAME
    assert resolved.config.knob_values()["batch_size"] == KNOB_DEFAULTS["batch_size"]


def test_doctable_config_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path)
    resolved = st.resolve_settings(context={"env": "stg"}, environ={"DOCTABLE_CONFIG": str(path)}, cwd=ROOT)
    assert resolved.path == path and resolved.config.gsi == "gsi1"


def test_app_and_cli_resolve_the_same_config(tmp_path: Path) -> None:
    # GIVEN one file, one -c override and one DOCTABLE_ variable
    path = write(tmp_path)
    environ = {"DOCTABLE_CONFIG": str(path), "DOCTABLE_TIMEOUT": "45"}
    # WHEN the CLI resolves them
    cli = resolve_run(Target(env="stg", overrides={"memory": "512"}), environ=environ).config
    # AND app.py's resolution runs in a process of its own with the same inputs (as CDK context)
    script = (
        "import json, os; from contract.settings.resolve import resolve_settings; "
        "print(json.dumps(resolve_settings(context={'env': 'stg', 'memory': '512'}, environ=dict(os.environ))"
        ".config.knob_values()))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env={**environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    # THEN both give the same knobs
    assert json.loads(out) == cli.knob_values()
    assert (cli.timeout, cli.memory, cli.gsi) == (45, 512, "gsi1")


def test_app_py_reads_the_settings_file(tmp_path: Path) -> None:
    """The CDK app's own entry resolves through resolve_settings (no other path to the knobs)."""
    source = (ROOT / "app.py").read_text()
    assert "resolve_settings(" in source and "resolve_config(" not in source


# ------------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    ("text", "context", "expected"),
    [
        (
            "[environments.Qa]\n",
            {},
            "[environments.Qa] is not an environment name; allowed: lower-case letters, digits and -, starting with "
            "a letter",
        ),
        (
            "[environments.qa]\n",
            {"env": "qa"},
            "env='qa' has no tier; allowed: tier = 'dev'|'stg'|'uat'|'prod'",
        ),
        (
            '[environments.staging]\ntier = "stg"\n[environments.qa]\ntier = "stg"\n',
            {"env": "stagin"},
            "environment 'stagin' is not declared in doctable.toml (did you mean 'staging'?); declared: staging|qa",
        ),
        (
            '[environments.qa]\ntier = "stg"\n',
            {},
            "environment 'dev' is not declared in doctable.toml; declared: qa",
        ),
        ('[environments.qa]\ntier = "gold"\n', {"env": "qa"}, "tier='gold' is not allowed"),
        ('[defaults]\ntier = "prod"\n', {}, "tier = 'prod' belongs to each environment"),
        ('[environments.dev]\ntier = "dev"\n', {"tier": "prod"}, "-c tier=prod cannot be given for one run"),
        (
            '[environments.prod]\ntier = "prod"\n[environments.prod-eu]\ntier = "prod"\n',
            {"env": "prod"},
            "its stack doctable-items-prod-eu begins with doctable-items-prod- (environment prod's stack",
        ),
        (
            '[environments.prod]\ntier = "prod"\nstream = "new-and-old"\nreplicas = ["eu-west-1"]\n'
            '[environments.prod-eu-west-1]\ntier = "prod"\n',
            {"env": "prod"},
            "its stack doctable-items-prod-eu-west-1 begins with doctable-items-prod-",
        ),
        ('[defaults]\ngsii = "gsi1"\n', {}, "gsii='gsi1' is not a knob (did you mean gsi?)"),
        (
            '[defaults]\nbatch_size = "50"\n',
            {},
            "batch_size = '50' is a TOML string; allowed: a TOML integer (1..10000)",
        ),
        ("[defaults]\ngsi = 1\n", {}, "gsi = 1 is a TOML integer; allowed: a TOML string (none|gsi1)"),
        (
            "[defaults]\nmax_read = true\n",
            {},
            "max_read = True is a TOML boolean; allowed: a TOML integer or off",
        ),
        ('[defaults]\ngsi = "gsi2"\n', {}, "doctable.toml [defaults]: gsi='gsi2' is not allowed"),
        ('[environments.stg]\nttl = "yes"\n', {"env": "stg"}, "[environments.stg]: ttl='yes' is not allowed"),
        ('[defaults]\nenv = "prod"\n', {}, "env = 'prod' cannot be set in the file"),
        ('[environments.prod]\naccount = "12345"\n', {}, "account = '12345' is not an AWS account"),
        ('[environments.prod]\nregion = "mars-1"\n', {}, "region = 'mars-1' is not an AWS region"),
        ('[knobs]\ngsi = "gsi1"\n', {}, "'knobs' is not a settings table"),
        ('[defaults]\ngsi = "gsi1\n', {}, "not valid TOML: "),
    ],
)
def test_bad_files_name_what_is_wrong(
    tmp_path: Path, text: str, context: dict[str, str], expected: str
) -> None:
    found = problems(tmp_path, text, context)
    assert len(found) == 1 and expected in found[0], found
    assert "\n" not in found[0]


def test_a_toml_syntax_error_names_its_line(tmp_path: Path) -> None:
    found = problems(tmp_path, '[defaults]\n\ngsi = "gsi1\n')
    assert "line 3" in found[0]


def test_a_missing_named_file_is_one_problem(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        st.resolve_settings(context={}, environ={}, config_path=tmp_path / "nope.toml")
    assert caught.value.problems == [f"settings file {tmp_path / 'nope.toml'} not found"]


# ------------------------------------------------------------------------------------------ the shipped file
def test_the_shipped_file_is_generated_from_the_declarations() -> None:
    # GIVEN the committed doctable.toml; WHEN rendered again from what it holds
    path = ROOT / st.FILE_NAME
    text = path.read_text()
    # THEN it is the same text: every knob's comment is the declaration's current one
    assert render_settings(st.parse_settings(text, path)) == text


def test_the_shipped_file_reproduces_the_built_in_defaults() -> None:
    path = ROOT / st.FILE_NAME
    shipped = st.parse_settings(path.read_text(), path)
    assert set(shipped.defaults.values) == set(KNOBS) - set(st.NOT_IN_FILE) - set(st.FILE_ONLY)
    assert {k: st.knob_text(k, v) for k, v in shipped.defaults.values.items()} == {
        k: v for k, v in KNOB_DEFAULTS.items() if k not in (*st.NOT_IN_FILE, *st.FILE_ONLY)
    }
    # the four shipped environments, each naming its own tier
    assert {env: section.values for env, section in shipped.environments.items()} == {
        env: {"tier": env} for env in ("dev", "stg", "uat", "prod")
    }


def test_every_knob_declares_its_meaning_and_live_effect() -> None:
    for name, declared in KNOBS.items():
        assert declared.meaning and declared.live and declared.parser.allowed, name


def test_the_knob_reference_and_the_file_comments_are_current() -> None:
    from contract.iam import reference

    assert reference.stale() == [], "run `make docs`"


def test_a_knob_in_cdk_json_is_refused_naming_where_it_belongs(tmp_path: Path) -> None:
    # GIVEN a cdk.json whose context carries a knob beside CDK's own keys
    path = tmp_path / "cdk.json"
    path.write_text(
        json.dumps({"app": "x", "context": {"gsi": "gsi1", "@aws-cdk/core:checkSecretUsage": True}})
    )
    # THEN one problem names the knob and the settings file
    assert st.cdk_json_knobs(path) == [
        "cdk.json: context key 'gsi' is a knob; allowed: knobs in doctable.toml (or -c gsi=... for one run)"
    ]
    assert st.cdk_json_knobs(ROOT / "cdk.json") == []
