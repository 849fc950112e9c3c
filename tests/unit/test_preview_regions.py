"""`doctable preview list`, `destroy` and `gc` read every region previews live in (moto behind the console script):
the session's and each region a template environment is bound to (a preview from it deploys there, not in the
session's region). A preview's teardown runs in its own region; a stack named as a preview's replica stack
(``<preview stack>-<region>``, the preview's tags) whose preview is in no region read is listed by its code with
the way out. (A preview owns every resource: a global template is previewed with ``replicas = []`` in [previews],
so a preview has no replica stacks of its own today; the regions of a template's replicas are read all the same.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contract.knobs import DocTableConfig
from contract.settings import preview as rules
from contract.settings.project import TAG_PROJECT
from doctable.cli import main
from doctable.core.aws import Aws
from doctable.core.target import Target
from doctable.operate import preview as p
from doctable.operate.preview_survey import REPLICA_ORPHANED
from tests.support import ops as ot

PAST = "2020-01-01T00:00:00Z"
PROJECT = "items-app"
HOME = "us-east-2"  # stg's region; the session is in ot.REGION
SETTINGS = (
    f'[project]\nname = "{PROJECT}"\n\n[defaults]\ntable_base = "items"\n\n'
    f'[environments.dev]\n\n[environments.stg]\nregion = "{HOME}"\n'
)


@pytest.fixture
def aws(ops_env: None, moto_env: Aws, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Aws:
    """GIVEN moto in the session's region, and a settings file whose stg is bound to us-east-2."""
    ot.use_settings(monkeypatch, tmp_path, SETTINGS)
    return moto_env


def preview_stacks(aws: Aws, env: str, *, home: bool = True, replica: str | None = None) -> DocTableConfig:
    """Preview ``env`` of stg: its stack in stg's region (``home``), and a replica stack in ``replica`` (each with
    the preview's tags)."""
    config = ot.config_of(env=env, table_base="items", tier=rules.PREVIEW_TIER)
    values = {**config.tags(), TAG_PROJECT: PROJECT, rules.TAG_PREVIEW_OF: "stg", rules.TAG_EXPIRES_AT: PAST}
    tags = [{"Key": k, "Value": v} for k, v in values.items()]
    if home:
        aws.in_region(HOME).client("cloudformation").create_stack(
            StackName=config.stack_name, TemplateBody=json.dumps(ot.template(config)), Tags=tags
        )
    if replica:
        body = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}}
        aws.in_region(replica).client("cloudformation").create_stack(
            StackName=config.replica_stack_name(replica), TemplateBody=json.dumps(body), Tags=tags
        )
    return config


def test_list_reads_the_templates_region_beside_the_sessions(
    aws: Aws, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN preview pr-6 of stg (its stack in us-east-2, and one named as its replica stack in eu-west-1), and a
    # stack named as the replica stack of a preview pr-9 whose own stack is in no region
    preview_stacks(aws, "pr-6", replica=ot.REGION)
    orphan = preview_stacks(aws, "pr-9", home=False, replica=ot.REGION)
    # WHEN previews are listed from a session in eu-west-1
    code = main(["preview", "list", "--json"])
    document = json.loads(capsys.readouterr().out)
    # THEN the session's region and stg's were read
    assert code == 0 and document["regions"] == [ot.REGION, HOME]
    # AND pr-6 is listed in its region with its replica stack's, which is no look-alike
    (found,) = document["previews"]
    assert (found["name"], found["region"], found["replica_regions"]) == ("pr-6", HOME, [ot.REGION])
    # AND pr-9's is listed by its code, naming its way out
    stack = orphan.replica_stack_name(ot.REGION)
    skipped = {s["stack"]: s for s in document["skipped"]}
    assert list(skipped) == [stack] and skipped[stack]["code"] == REPLICA_ORPHANED
    assert f"delete-stack --region {ot.REGION} --stack-name {stack}" in skipped[stack]["why"]


def test_gc_tears_an_expired_preview_down_in_its_own_region(aws: Aws, tmp_path: Path) -> None:
    # GIVEN expired preview pr-7 of stg, in us-east-2
    preview_stacks(aws, "pr-7")
    seen: list[str] = []

    def teardowner(where: Aws, deployment: Any, **_: Any) -> tuple[Any, Any]:
        seen.append(where.region)
        outcome = type("Outcome", (), {"clean": True, "removed": (), "retained": (), "still_present": (),
                                       "emptied": (), "notes": ()})  # fmt: skip
        return None, outcome

    # WHEN gc runs from a session in eu-west-1
    result = p.gc(Target(quiet=True), yes=True, teardowner=teardowner)
    # THEN pr-7's teardown ran in us-east-2, where its stack is (teardown removes its replica stacks there first)
    assert [(r.name, r.status) for r in result.results] == [("pr-7", "removed")] and seen == [HOME]


def test_region_names_the_one_home_region_read(aws: Aws, capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN preview pr-6 in us-east-2  WHEN previews are listed with --region eu-west-1
    preview_stacks(aws, "pr-6")
    main(["preview", "list", "--json", "--region", ot.REGION])
    document = json.loads(capsys.readouterr().out)
    # THEN that region alone was read: pr-6, in us-east-2, is not among the previews
    assert document["regions"] == [ot.REGION] and document["previews"] == []
