"""Environments named by the settings file, each with its tier, deployed by `doctable deploy` into the local AWS:
`qa` (tier stg) and `prod-eu` (tier prod, in its own region) get their tier's rules, read back as AWS reports
them; a prod-tier environment without an account binding is warned of by preflight and refused by the pipeline's
deploy; an environment renamed in the file leaves its old stack named by preflight.

The tests run in file order and share the stacks (table_base ``envs``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support import localaws as lt
from tests.support.cli import Result, settings_runner

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]

EU = "eu-west-1"
QA = """\
[defaults]
table_base = "envs"

[environments.qa]
tier = "stg"
"""
PROD_EU = """
[environments.prod-eu]
tier = "prod"
region = "eu-west-1"
"""
BOUND = f'account = "{lt.ACCOUNT}"\n'


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("envs-settings") / "doctable.toml"
    path.write_text(QA + PROD_EU)
    return path


@pytest.fixture(scope="module")
def doctable(
    local_aws: lt.LocalAWS,
    bootstrapped: lt.api.CdkRun,
    settings: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[..., Result]:
    lt.run_cdk(local_aws, ["bootstrap", f"aws://{lt.ACCOUNT}/{EU}"], tmp_path_factory.mktemp("envs-boot"))
    return settings_runner(local_aws.env, settings, tmp_path_factory.mktemp("envs-state"))


def live(aws: lt.LocalAWS, region: str, stack: str, table: str) -> dict[str, Any]:
    """The table's protections and tags as AWS reports them, and the stack's deletion policy for it."""
    ddb = aws.client("dynamodb", region=region)
    described = ddb.describe_table(TableName=table)["Table"]
    backups = ddb.describe_continuous_backups(TableName=table)["ContinuousBackupsDescription"]
    tags = {
        t["Key"]: t["Value"] for t in ddb.list_tags_of_resource(ResourceArn=described["TableArn"])["Tags"]
    }
    template = aws.client("cloudformation", region=region).get_template(StackName=stack)["TemplateBody"]
    body = template if isinstance(template, dict) else json.loads(template)
    policies = {
        r.get("DeletionPolicy", "Delete")
        for r in body["Resources"].values()
        if r["Type"] in ("AWS::DynamoDB::Table", "AWS::DynamoDB::GlobalTable")
    }
    return {
        "protection": described["DeletionProtectionEnabled"],
        "pitr": backups["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"],
        "tags": (tags.get("Environment"), tags.get("Tier")),
        "deletion_policy": policies,
    }


def codes(result: Result) -> dict[str, dict[str, Any]]:
    return {f["code"]: f for f in result.json()["findings"]}


def test_qa_of_tier_stg_deploys_with_stg_rules(
    doctable: Callable[..., Result], local_aws: lt.LocalAWS
) -> None:
    # GIVEN qa declared with tier stg  WHEN deployed through the pipeline's command
    result = doctable("deploy", "--env", "qa", "--require-binding", "--json", "--verify-timeout", "60")
    # THEN it deploys and verifies, with stg's rules: no deletion protection, no PITR, deleted with its stack
    assert result.code == 0, result.out + result.err
    assert live(local_aws, lt.REGION, "doctable-envs-qa", "envs-qa") == {
        "protection": False,
        "pitr": "DISABLED",
        "tags": ("qa", "stg"),
        "deletion_policy": {"Delete"},
    }


def test_a_prod_tier_without_an_account_binding_is_warned_and_refused_by_the_pipeline(
    doctable: Callable[..., Result], local_aws: lt.LocalAWS
) -> None:
    # GIVEN prod-eu of tier prod, bound to its region but to no account
    # WHEN preflight looks  THEN it warns, naming the tier
    found = codes(doctable("preflight", "--env", "prod-eu", "--json"))
    assert (found["env.prod_unbound"]["level"], found["env.prod_unbound"]["after"]) == ("WARN", "prod")
    # WHEN the pipeline's deploy runs  THEN it is refused (exit 3) and nothing is deployed in its region
    refused = doctable("deploy", "--env", "prod-eu", "--require-binding", "--json")
    assert refused.code == 3, refused.out + refused.err
    stacks = local_aws.client("cloudformation", region=EU).list_stacks()["StackSummaries"]
    assert "doctable-envs-prod-eu" not in {
        s["StackName"] for s in stacks if s["StackStatus"] != "DELETE_COMPLETE"
    }


def test_prod_eu_bound_deploys_in_its_region_with_prod_rules(
    doctable: Callable[..., Result], local_aws: lt.LocalAWS, settings: Path
) -> None:
    # GIVEN prod-eu bound to the account  WHEN deployed through the pipeline's command
    settings.write_text(QA + PROD_EU + BOUND)
    result = doctable("deploy", "--env", "prod-eu", "--require-binding", "--json", "--verify-timeout", "60")
    # THEN it deploys in eu-west-1 with the prod tier's rules, and preflight no longer warns
    assert result.code == 0, result.out + result.err
    assert live(local_aws, EU, "doctable-envs-prod-eu", "envs-prod-eu") == {
        "protection": True,
        "pitr": "ENABLED",
        "tags": ("prod-eu", "prod"),
        "deletion_policy": {"Retain"},
    }
    assert "env.prod_unbound" not in codes(doctable("preflight", "--env", "prod-eu", "--json"))


def test_an_environment_renamed_in_the_file_leaves_its_old_stack_named(
    doctable: Callable[..., Result], settings: Path
) -> None:
    # GIVEN qa renamed qa2 in the file (its stack doctable-envs-qa still deployed)
    settings.write_text(QA.replace("[environments.qa]", "[environments.qa2]") + PROD_EU + BOUND)
    # WHEN preflight of qa2 looks  THEN it names the old stack as orphaned (INFO), and only that one
    found = doctable("preflight", "--env", "qa2", "--json").json()["findings"]
    orphaned = [(f["level"], f["before"]) for f in found if f["code"] == "env.orphaned"]
    assert orphaned == [("INFO", "doctable-envs-qa")]
    # AND the old name is refused as an environment the file no longer declares
    gone = doctable("preflight", "--env", "qa")
    assert gone.code == 2 and "environment 'qa' is not declared" in gone.err
