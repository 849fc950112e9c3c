"""`doctable preview destroy` and `gc` trust nothing a preview says about itself (moto behind the console script):
a record claiming another environment is refused by its code, one preview failing never stops the others, each
preview is read again right before it goes, and the table checked for items is the stack's own resource."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contract import names
from contract.knobs import DocTableConfig
from contract.settings import preview as rules
from contract.settings.project import TAG_PROJECT
from contract.settings.resolve import load_settings
from doctable.cli import main
from doctable.core.aws import Aws
from doctable.core.deployment import IDENTITY_MISMATCH
from doctable.core.render import Progress
from doctable.operate import preview as p
from tests.support import ops as ot

PAST, FUTURE = "2020-01-01T00:00:00Z", "2099-01-01T00:00:00Z"
PROJECT = "items-app"
SETTINGS = f'[project]\nname = "{PROJECT}"\n\n[defaults]\ntable_base = "items"\n\n[environments.dev]\n\n[environments.stg]\n'


@pytest.fixture
def aws(ops_env: None, moto_env: Aws, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Aws:
    """GIVEN moto, and a settings file declaring dev and stg of table base ``items``."""
    ot.use_settings(monkeypatch, tmp_path, SETTINGS)
    return moto_env


def deploy_preview(
    aws: Aws, env: str, *, expires: str = PAST, record: str | None = None, project: str | None = PROJECT
) -> DocTableConfig:
    """A preview stack of stg named ``env`` with its tags; ``record``: the Knobs output it writes instead of its
    own (what a pull request's app can make it say); ``project``: its Project tag (None: none)."""
    config = ot.config_of(env=env, table_base="items", tier=rules.PREVIEW_TIER)
    outputs = {names.OUT_KNOBS: record} if record is not None else None
    aws.client("cloudformation").create_stack(
        StackName=config.stack_name,
        TemplateBody=json.dumps(ot.template(config, record_knobs=record is None, extra_outputs=outputs)),
        Tags=tags(config, expires, project),
    )
    return config


def tags(config: DocTableConfig, expires: str, project: str | None = PROJECT) -> list[dict[str, str]]:
    values = {
        **config.tags(),
        TAG_PROJECT: project,
        rules.TAG_PREVIEW_OF: "stg",
        rules.TAG_EXPIRES_AT: expires,
    }
    return [{"Key": k, "Value": v} for k, v in values.items() if v is not None]


def stack_status(aws: Aws, stack: str) -> str | None:
    found = aws.client("cloudformation").describe_stacks()["Stacks"]
    return next((s["StackStatus"] for s in found if s["StackName"] == stack), None)


def test_gc_refuses_a_preview_claiming_stg_reports_a_failing_one_and_removes_the_rest(
    aws: Aws, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN stg deployed with an item, and three expired previews: one honest, one whose Knobs output claims
    # env=stg, one whose output does not resolve
    stg = ot.config_of(env="stg", table_base="items")
    ot.deploy(aws.client, stg)
    aws.client("dynamodb").put_item(TableName=stg.table_name, Item={"pk": {"S": "a"}, "sk": {"S": "b"}})
    honest = deploy_preview(aws, "pr-1")
    liar = deploy_preview(aws, "pr-2", record=stg.deployed_record())
    broken = deploy_preview(aws, "pr-3", record='{"gsi": "gsi9"}')
    # WHEN gc runs with every confirmation given
    code = main(["preview", "gc", "--yes", "--json", "-q"])
    document = json.loads(capsys.readouterr().out)
    results = {r["name"]: r for r in document["results"]}
    # THEN the liar is refused by its code, the broken one is reported as data, the honest one is removed
    assert results["pr-2"]["status"] == "refused" and results["pr-2"]["code"] == IDENTITY_MISMATCH
    assert results["pr-3"]["status"] == "failed" and results["pr-3"]["code"] == "usage"
    assert results["pr-1"]["status"] == "removed"
    assert code == document["exit"] == 1
    assert stack_status(aws, honest.stack_name) in (None, "DELETE_COMPLETE")
    # AND stg, its table and its item are untouched; the refused previews are left as they were
    assert stack_status(aws, stg.stack_name) == "CREATE_COMPLETE"
    assert aws.client("dynamodb").scan(TableName=stg.table_name)["Count"] == 1
    for config in (liar, broken):
        assert stack_status(aws, config.stack_name) == "CREATE_COMPLETE"


def never_torn_down(*_: Any, **__: Any) -> tuple[Any, Any]:
    raise AssertionError("a preview that is no longer to be removed was torn down")


def test_a_preview_extended_after_the_survey_is_kept(aws: Aws, tmp_path: Path) -> None:
    # GIVEN an expired preview, seen expired by gc's survey
    config = deploy_preview(aws, "pr-4")
    settings = load_settings(tmp_path / "doctable.toml")
    found = p.survey(aws, settings)
    assert [x.env for x in found.expired()] == ["pr-4"]
    # WHEN its expiry is extended before gc reaches it
    aws.client("cloudformation").update_stack(
        StackName=config.stack_name,
        TemplateBody=json.dumps(ot.template(config)),
        Tags=tags(config, FUTURE),
    )
    run = p.Teardown(
        never_torn_down, aws, settings, Progress("test", quiet=True), expired_only=True, yes=True, timeout=30
    )
    results, code = p._run_each(run, found.expired())
    # THEN it is kept, saying why, and nothing is torn down
    assert code == 0 and results[0].status == "kept" and "no longer expired" in (results[0].reason or "")
    assert stack_status(aws, config.stack_name) == "UPDATE_COMPLETE"


def test_destroy_counts_the_items_of_the_stacks_own_table_not_the_one_its_outputs_name(
    aws: Aws, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a preview whose TableName output names stg's table (which holds an item); its own table is empty
    stg = ot.config_of(env="stg", table_base="items")
    ot.deploy(aws.client, stg)
    aws.client("dynamodb").put_item(TableName=stg.table_name, Item={"pk": {"S": "a"}, "sk": {"S": "b"}})
    config = ot.config_of(env="pr-5", table_base="items", tier=rules.PREVIEW_TIER)
    body = ot.template(config)
    body["Outputs"][names.OUT_TABLE_NAME] = {"Value": stg.table_name}
    aws.client("cloudformation").create_stack(
        StackName=config.stack_name, TemplateBody=json.dumps(body), Tags=tags(config, FUTURE)
    )
    # WHEN it is destroyed, THEN its own empty table does not hold the teardown back, and stg keeps its item
    assert main(["preview", "destroy", "5", "--yes", "-q"]) == 0
    assert "pr-5 (doctable-items-pr-5): removed" in capsys.readouterr().out
    assert stack_status(aws, config.stack_name) in (None, "DELETE_COMPLETE")
    assert aws.client("dynamodb").scan(TableName=stg.table_name)["Count"] == 1


def test_two_projects_in_one_account_never_touch_each_others_previews(
    aws: Aws, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN three expired previews of the same names' shape: this project's, another project's, and one deployed
    # before stacks carried the Project tag
    ours = deploy_preview(aws, "pr-1")
    theirs = deploy_preview(aws, "pr-2", project="other-app")
    untagged = deploy_preview(aws, "pr-3", project=None)
    # WHEN list runs, THEN only ours is a preview; the others are shown as skipped, each by its code
    assert main(["preview", "list", "--json", "-q"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [x["name"] for x in listed["previews"]] == ["pr-1"]
    assert {s["stack"]: s["code"] for s in listed["skipped"]} == {
        theirs.stack_name: "preview.other_project",
        untagged.stack_name: "preview.project_untagged",
    }
    # WHEN destroy names another project's preview, THEN it is refused and left as it was
    assert main(["preview", "destroy", "2", "--yes", "-q"]) == 3
    assert stack_status(aws, theirs.stack_name) == "CREATE_COMPLETE"
    capsys.readouterr()
    # WHEN gc runs, THEN it removes ours only
    assert main(["preview", "gc", "--yes", "--json", "-q"]) == 0
    assert [r["name"] for r in json.loads(capsys.readouterr().out)["results"]] == ["pr-1"]
    assert stack_status(aws, ours.stack_name) in (None, "DELETE_COMPLETE")
    for config in (theirs, untagged):
        assert stack_status(aws, config.stack_name) == "CREATE_COMPLETE"


def test_a_preview_redeployed_after_the_project_tag_came_is_ours_again(aws: Aws, tmp_path: Path) -> None:
    # GIVEN a preview deployed before stacks carried the Project tag: not this project's
    config = deploy_preview(aws, "pr-6", project=None)
    settings = load_settings(tmp_path / "doctable.toml")
    assert [s["code"] for s in p.survey(aws, settings).skipped] == ["preview.project_untagged"]
    # WHEN it is deployed again (the way out its reason names: the deploy writes the tags)
    aws.client("cloudformation").update_stack(
        StackName=config.stack_name, TemplateBody=json.dumps(ot.template(config)), Tags=tags(config, PAST)
    )
    # THEN it is this project's preview again
    assert [x.env for x in p.survey(aws, settings).previews] == ["pr-6"]
