"""Preview environments on the local AWS: a preview deploys from stg through `doctable deploy`'s path and verifies,
expires by the local AWS's clock (its Date header moved ahead, local/clock.py) and is removed by `doctable preview
gc`, while the declared stg, a foreign stack named like a preview, a preview-tagged stack of another Source and
another project's preview (its Project tag) stay.

The tests run in file order and share the stacks (table_base ``prev``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support import localaws as lt
from tests.support.cli import Result, run_doctable

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

PROJECT = "prev-app"
SETTINGS = f"""\
[project]
name = "{PROJECT}"

[defaults]
table_base = "prev"

[environments.dev]

[environments.stg]
ttl = "on"

[previews]
stream = "new-and-old"  # previews get the built-in consumer (and its log group, for `doctable logs --env pr-7`)
"""
DECLARED = "doctable-prev-stg"
PREVIEW = "doctable-prev-pr-7"
FOREIGN = "doctable-prev-pr-9"  # a preview's name, none of its tags
OTHER_SOURCE = "doctable-prev-pr-8"  # a preview's tags, expired long ago, but another project's Source
OTHER_PROJECT = "doctable-prev-pr-6"  # every tag of an expired preview of this name, but another Project
EMPTY_TEMPLATE = json.dumps({"Resources": {"Handle": {"Type": "AWS::CloudFormation::WaitConditionHandle"}}})


@pytest.fixture(scope="module")
def doctable(
    local_aws: lt.LocalAWS, bootstrapped: lt.api.CdkRun, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., Result]]:
    directory = tmp_path_factory.mktemp("previews")
    settings = directory / "doctable.toml"
    settings.write_text(SETTINGS)
    base = {
        **local_aws.env,
        "DOCTABLE_CONFIG": str(settings),
        "DOCTABLE_STATE_DIR": str(directory / "state"),
        "DOCTABLE_LEDGER_DIR": str(directory / "ledger"),
    }

    def run(*args: str) -> Result:
        return run_doctable(list(args), env=base, timeout=900)

    try:
        yield run
    finally:
        local_aws.faults.reset_clock()  # the other modules' answers carry the real time again
        cfn = local_aws.client("cloudformation")
        for name in (FOREIGN, OTHER_SOURCE, OTHER_PROJECT, DECLARED, PREVIEW):  # this module's own stacks
            cfn.delete_stack(StackName=name)
        for name in (FOREIGN, OTHER_SOURCE, OTHER_PROJECT, DECLARED, PREVIEW):
            cfn.get_waiter("stack_delete_complete").wait(
                StackName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 300}
            )


def stack(aws: lt.LocalAWS, name: str) -> dict[str, Any] | None:
    cfn = aws.client("cloudformation")
    try:
        found = cfn.describe_stacks(StackName=name)["Stacks"]
    except cfn.exceptions.ClientError:
        return None
    return found[0] if found and found[0]["StackStatus"] != "DELETE_COMPLETE" else None


def tags_of(described: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in described.get("Tags", [])}


def test_a_declared_environment_and_lookalike_stacks_exist(
    doctable: Callable[..., Result], local_aws: lt.LocalAWS
) -> None:
    # GIVEN the declared stg deployed, a stack named like a preview without its tags, and one with a preview's
    # tags (expired in 2000) of another Source
    deployed = doctable("deploy", "--env", "stg", "--json", "--no-verify")
    assert deployed.code == 0, deployed.err
    cfn = local_aws.client("cloudformation")
    cfn.create_stack(StackName=FOREIGN, TemplateBody=EMPTY_TEMPLATE)
    other_tags = {
        "ManagedBy": "ephemera",
        "Source": "another-project",
        "Environment": "pr-8",
        "PreviewOf": "stg",
        "ExpiresAt": "2000-01-01T00:00:00Z",
    }
    cfn.create_stack(
        StackName=OTHER_SOURCE,
        TemplateBody=EMPTY_TEMPLATE,
        Tags=[{"Key": k, "Value": v} for k, v in other_tags.items()],
    )
    theirs = {
        **other_tags,
        "Source": "doctable",
        "Project": "another-app",
        "Environment": "pr-6",
        "Tier": "dev",
    }
    cfn.create_stack(
        StackName=OTHER_PROJECT,
        TemplateBody=EMPTY_TEMPLATE,
        Tags=[{"Key": k, "Value": v} for k, v in theirs.items()],
    )
    # THEN all four are there, stg tagged with this project
    assert all(stack(local_aws, name) for name in (DECLARED, FOREIGN, OTHER_SOURCE, OTHER_PROJECT))
    assert tags_of(stack(local_aws, DECLARED) or {})["Project"] == PROJECT


def test_a_preview_deploys_from_stg_and_verifies(
    doctable: Callable[..., Result], local_aws: lt.LocalAWS
) -> None:
    # WHEN preview 7 is deployed from stg, to expire in an hour
    result = doctable("preview", "deploy", "7", "--from", "stg", "--expires", "1h", "--json")
    # THEN doctable deploy's path deployed and verified it
    assert result.code == 0, result.err
    report = result.json()
    assert (report["env"], report["stack"], report["deployed"], report["verified"]) == (
        "pr-7",
        PREVIEW,
        True,
        True,
    )
    # AND its stack is a dev-tier preview of stg with its expiry, its table has the template's TTL
    tags = tags_of(stack(local_aws, PREVIEW) or {})
    assert {
        k: tags.get(k) for k in ("ManagedBy", "Source", "Project", "Environment", "Tier", "PreviewOf")
    } == {
        "ManagedBy": "ephemera",
        "Source": "doctable",
        "Project": PROJECT,
        "Environment": "pr-7",
        "Tier": "dev",
        "PreviewOf": "stg",
    }
    assert tags["ExpiresAt"].endswith("Z")
    table = local_aws.client("dynamodb").describe_table(TableName="prev-pr-7")["Table"]
    assert not table.get("DeletionProtectionEnabled")
    ttl = local_aws.client("dynamodb").describe_time_to_live(TableName="prev-pr-7")["TimeToLiveDescription"]
    assert ttl["TimeToLiveStatus"] == "ENABLED"


def test_list_finds_the_preview_by_its_tags_and_leaves_the_lookalikes(
    doctable: Callable[..., Result],
) -> None:
    result = doctable("preview", "list", "--json")
    assert result.code == 0, result.err
    listed = result.json()
    assert [(p["name"], p["template"], p["stack"], p["expired"]) for p in listed["previews"]] == [
        ("pr-7", "stg", PREVIEW, False)
    ]
    # (this module's lookalikes: another module on the same worker may have left stacks of its own)
    assert {s["stack"]: s["code"] for s in listed["skipped"] if s["stack"].startswith("doctable-prev-")} == {
        FOREIGN: "preview.not_managed",
        OTHER_SOURCE: "preview.other_source",
        OTHER_PROJECT: "preview.other_project",
    }


def test_every_command_reaches_a_deployed_preview_by_its_name(doctable: Callable[..., Result]) -> None:
    # WHEN commands that take --env are given the preview's name (the file declares no pr-7)
    verified = doctable("verify", "--env", "pr-7", "--read-only", "--json")
    logs = doctable("logs", "--env", "pr-7", "--json")
    # THEN each resolves the deployed preview by its tags: its table, its stack
    assert verified.code == 0, verified.err
    assert (verified.json()["table"], verified.json()["stack"]) == ("prev-pr-7", PREVIEW)
    assert logs.code == 0, logs.err
    # AND another project's preview of a name (pr-6), or none at all (pr-5), is refused in one line
    for name in ("pr-6", "pr-5"):
        refused = doctable("verify", "--env", name, "--read-only", "--json")
        assert refused.code == 2, refused.err
        assert (refused.json()["code"], refused.json()["env"]) == ("preview.not_deployed", name)


def test_gc_before_expiry_removes_nothing(doctable: Callable[..., Result], local_aws: lt.LocalAWS) -> None:
    result = doctable("preview", "gc", "--yes", "--json")
    assert result.code == 0, result.err
    assert result.json()["results"] == []
    assert stack(local_aws, PREVIEW) is not None


def test_destroy_refuses_a_stack_that_is_not_a_preview(
    doctable: Callable[..., Result], local_aws: lt.LocalAWS
) -> None:
    result = doctable("preview", "destroy", "9", "--yes", "--json")
    assert result.code == 3, result.err
    assert result.json()["exit"] == 3
    assert stack(local_aws, FOREIGN) is not None


def test_the_preview_expires_by_the_local_aws_clock_and_gc_removes_it_alone(
    doctable: Callable[..., Result], local_aws: lt.LocalAWS
) -> None:
    # GIVEN the local AWS's clock two hours ahead
    assert local_aws.faults.advance_clock(2 * 3600) >= 2 * 3600
    listed = doctable("preview", "list", "--json").json()
    assert [(p["name"], p["expired"]) for p in listed["previews"]] == [("pr-7", True)]
    # WHEN gc runs
    result = doctable("preview", "gc", "--yes", "--json")
    # THEN the preview alone is torn down, its absence verified
    assert result.code == 0, result.err
    outcome = result.json()
    assert [(r["name"], r["status"], r["clean"]) for r in outcome["results"]] == [("pr-7", "removed", True)]
    assert stack(local_aws, PREVIEW) is None
    tables = local_aws.client("dynamodb").list_tables()["TableNames"]
    assert "prev-pr-7" not in tables
    # AND the declared environment, the foreign lookalike and the other projects' previews stay
    assert all(stack(local_aws, name) for name in (DECLARED, FOREIGN, OTHER_SOURCE, OTHER_PROJECT))
    assert "prev-stg" in tables
    # AND a second gc finds nothing left to do
    again = doctable("preview", "gc", "--yes", "--json")
    assert (again.code, again.json()["results"]) == (0, [])
