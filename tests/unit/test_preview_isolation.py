"""A preview reaches only itself, and a project only its own previews, without AWS: a subscriber's grant,
environment value or filter naming a resource outside the preview is refused by its code (contract/settings/reach.py), and
the project's identity ([project] name, else the repository's) is tagged on every stack (contract/settings/project.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from contract.knobs import PREVIEW_CONTEXT, ConfigError
from contract.settings import preview as rules
from contract.settings import project, reach
from contract.settings.render import render_settings
from contract.settings.resolve import parse_settings, resolve_settings

pytestmark = pytest.mark.unit

ACCOUNT, REGION = "123456789012", "eu-west-1"
SEARCH_STG = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/search-stg"
HEAD = '[project]\nname = "items-app"\n\n[environments.stg]\nstream = "new-and-old"\n\n[environments.prod]\n'


def settings(tmp_path: Path, subscriber: str, extra: str = "") -> Path:
    """A settings file declaring stg's subscriber ``search`` (its table's lines given) beside its handler."""
    (tmp_path / "search.py").write_text("def handler(event, context):\n    return event\n")
    path = tmp_path / "doctable.toml"
    path.write_text(
        f'{HEAD}\n[environments.stg.subscribers.search]\nhandler = "search.py:handler"\n{subscriber}{extra}'
    )
    return path


def preview_of_stg(env: str = "pr-12") -> dict[str, str]:
    context = {PREVIEW_CONTEXT: rules.Preview("stg", "2030-01-01T00:00:00Z").context_value()}
    return {"env": env, **context}


def outside(path: Path) -> list[tuple[str, str, str, str]]:
    """What reach finds outside preview pr-12 of stg: (code, subscriber, where, names) of each reference."""
    config = resolve_settings({"env": "stg"}, {}, config_path=path).config
    as_preview = replace(config, env="pr-12")
    stacks = {"stg": "doctable-items-stg", "prod": "doctable-items-prod"}
    return [(o.code, o.subscriber, o.where, o.names) for o in reach.outside_preview(as_preview, stacks)]


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (
            f'grants = ["table:write", {{resource = "{SEARCH_STG}", actions = ["dynamodb:PutItem"]}}]\n',
            [(reach.GRANT_OUTSIDE, "search", "grant resource", "search-stg")],
        ),
        (
            '[environments.stg.subscribers.search.environment]\nSEARCH_TABLE = "search-stg"\n',
            [(reach.ENVIRONMENT_OUTSIDE, "search", "environment SEARCH_TABLE", "environment stg")],
        ),
        (
            '[environments.stg.subscribers.search.environment]\nAPI = "https://api.prod.example.com/v1"\n',
            [(reach.ENVIRONMENT_OUTSIDE, "search", "environment API", "environment prod")],
        ),
        (
            f'[environments.stg.subscribers.search.environment]\nQUEUE = "arn:aws:sqs:{REGION}:{ACCOUNT}:jobs"\n',
            [(reach.ENVIRONMENT_OUTSIDE, "search", "environment QUEUE", "jobs")],
        ),
        (
            f'filters = [\'{{"eventSourceARN": [{{"prefix": "arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/items-stg/'
            "stream\"}]}']\n",
            [(reach.FILTER_OUTSIDE, "search", "filter value", "items-stg")],
        ),
    ],
)
def test_each_reference_outside_the_preview_is_found_with_its_code(
    tmp_path: Path, lines: str, expected: list[tuple[str, str, str, str]]
) -> None:
    assert outside(settings(tmp_path, lines)) == expected


def test_the_previews_own_names_and_values_of_no_environment_pass(tmp_path: Path) -> None:
    # GIVEN grants, values and filters naming only the preview's own resources, or no environment at all
    own_table = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/items-pr-12"
    own_log = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/lambda/doctable-items-pr-12-search"
    lines = (
        f'grants = ["table:read", "blobs:read", {{resource = "{own_table}", actions = ["dynamodb:PutItem"]}},'
        f' {{resource = "{own_log}", actions = ["logs:PutLogEvents"]}}]\n'
        'filters = [\'{"eventName": ["INSERT"]}\']\n'
        '[environments.stg.subscribers.search.environment]\nLOG_LEVEL = "debug"\nMODE = "production-like"\n'
    )
    # THEN nothing is outside
    assert outside(settings(tmp_path, lines)) == []


@pytest.mark.parametrize(
    ("arn", "name"),
    [
        (SEARCH_STG + "/index/by-x", "search-stg"),
        ("arn:aws:s3:::search-stg/items-pr-12/key", "search-stg"),
        (f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:f:live", "f"),
        (f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter/stg/db", "stg"),
        (f"arn:aws:sns:{REGION}:{ACCOUNT}:topic", "topic"),
        ("search-stg", None),
    ],
)
def test_an_arn_names_the_resource_after_its_type(arn: str, name: str | None) -> None:
    assert reach.arn_name(arn) == name


def test_a_preview_deploy_refuses_each_reference_in_one_line_and_the_previews_own_subscribers_pass(
    tmp_path: Path,
) -> None:
    # GIVEN stg's subscriber granted search-stg and given SEARCH_TABLE=search-stg
    lines = (
        f'grants = [{{resource = "{SEARCH_STG}", actions = ["dynamodb:PutItem"]}}]\n'
        '[environments.stg.subscribers.search.environment]\nSEARCH_TABLE = "search-stg"\n'
    )
    path = settings(tmp_path, lines)
    # WHEN preview pr-12 of stg resolves, THEN each reference is one line naming it and the way out
    with pytest.raises(ConfigError) as caught:
        resolve_settings(preview_of_stg(), {}, config_path=path)
    found = caught.value.problems
    assert len(found) == 2 and all(
        p.startswith("preview pr-12 from stg: subscriber 'search': ") for p in found
    )
    assert all("[previews.subscribers.<name>]" in p for p in found)
    # AND stg itself keeps them (its own environment's names)
    assert resolve_settings({"env": "stg"}, {}, config_path=path).config.subscribers
    # WHEN [previews] declares the previews' own subscriber, THEN the preview resolves with it
    own = '\n[previews.subscribers.search]\nhandler = "search.py:handler"\ngrants = ["table:write"]\n'
    path = settings(tmp_path, lines, own)
    (spec,) = resolve_settings(preview_of_stg(), {}, config_path=path).config.subscribers
    assert (spec.environment, [g.resource for g in spec.grants]) == ((), ["table"])


# ---------------------------------------------------------------------------------------------- the project
def test_project_name_is_tagged_on_every_stack_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "doctable.toml"
    path.write_text(HEAD)
    for context in ({"env": "stg"}, preview_of_stg()):
        assert resolve_settings(context, {}, config_path=path).config.tags()["Project"] == "items-app"
    # AND the file renders back with its [project] table
    assert parse_settings(render_settings(parse_settings(HEAD, path)), path).project_name == "items-app"


def git_repo(root: Path, url: str | None) -> Path:
    (root / ".git").mkdir(parents=True)
    remote = f'[remote "upstream"]\n\turl = x/wrong.git\n[remote "origin"]\n\turl = {url}\n' if url else ""
    (root / ".git" / "config").write_text(
        f'[core]\n\tbare = false\n{remote}[branch "main"]\n\tremote = origin\n'
    )
    (root / "app").mkdir()
    return root / "app"


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("https://github.com/acme/orders-api.git", "orders-api"),
        ("git@github.com:acme/orders-api.git", "orders-api"),
        ("https://github.com/acme/orders-api", "orders-api"),
        (None, "checkout"),  # no origin: the folder holding .git
    ],
)
def test_the_default_project_is_the_origin_remotes_repository(
    tmp_path: Path, url: str | None, name: str
) -> None:
    folder = git_repo(tmp_path / "checkout", url)
    assert project.default_name(folder) == name
    # AND a file without [project] takes it
    (folder / "doctable.toml").write_text("[environments.stg]\n")
    resolved = resolve_settings({"env": "stg"}, {}, config_path=folder / "doctable.toml")
    assert resolved.config.project == name


def test_a_worktree_reads_its_repositorys_origin(tmp_path: Path) -> None:
    git_repo(tmp_path / "main", "https://github.com/acme/orders-api.git")
    gitdir = tmp_path / "main" / ".git" / "worktrees" / "feature"
    gitdir.mkdir(parents=True)
    (gitdir / "commondir").write_text("../..\n")
    (tmp_path / "feature").mkdir()
    (tmp_path / "feature" / ".git").write_text(f"gitdir: {gitdir}\n")
    assert project.default_name(tmp_path / "feature") == "orders-api"


def test_outside_a_repository_the_project_is_the_working_directorys_repository_else_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "orders"
    folder.mkdir()
    # GIVEN a settings folder in no repository, run from a checkout of orders-api: the checkout's
    monkeypatch.chdir(git_repo(tmp_path / "checkout", "https://github.com/acme/orders-api.git"))
    assert project.default_name(folder) == "orders-api"
    # AND run from no repository either: the settings file's folder
    monkeypatch.chdir(tmp_path)
    assert project.default_name(folder) == "orders"
    with pytest.raises(ConfigError, match=r"allowed: \[project\] name"):
        project.default_name(tmp_path / "no such" / ".." / "has space")


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ('name = "has space"', "name = 'has space' is not a project name; allowed: letters, digits"),
        ('name = "x"\nowner = "y"', 'expected a table holding name = "<project>" only'),
    ],
)
def test_a_bad_project_table_is_refused_in_one_line(tmp_path: Path, table: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_settings(f"[project]\n{table}\n", tmp_path / "doctable.toml")
    (problem,) = caught.value.problems
    assert problem.startswith(f"doctable.toml [project]: {expected}")
