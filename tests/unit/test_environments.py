"""The environment's own findings (doctable/capabilities/ownership.py: environment_findings): a prod tier without
an account binding, a tier change (lowering production's protections goes through the gate), a stack whose
environment the settings no longer declare; and the pipeline's refusal of an unbound prod-tier environment."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from contract.knobs import DocTableConfig, resolve_config
from doctable.capabilities.ownership import environment_findings
from doctable.capabilities.protocol import Observed
from doctable.core.deployment import DEPLOYED, Deployment
from tests.support.cli import run_doctable

ROOT = Path(__file__).resolve().parents[2]


def config(env: str, tier: str | None = None, table_base: str = "items") -> DocTableConfig:
    defaults = {"table_base": table_base, **({"tier": tier} if tier else {})}
    return resolve_config(context={"env": env}, environ={}, defaults=defaults)


class Stacks:
    """ListStacks' answer, paginated as boto3 pages it."""

    def __init__(self, names: list[tuple[str, str]]):
        self.names = names
        self.filters: list[Any] = []

    def client(self, service: str) -> Stacks:
        assert service == "cloudformation"
        return self

    def get_paginator(self, operation: str) -> Stacks:
        assert operation == "list_stacks"
        return self

    def describe_stacks(self, StackName: str) -> dict[str, Any]:  # noqa: N803 - boto3's name
        """No bootstrap stack (preflight's bootstrap findings read it): CloudFormation's answer for a missing one."""
        error = {"Error": {"Code": "ValidationError", "Message": f"Stack with id {StackName} does not exist"}}
        raise ClientError(error, "DescribeStacks")  # type: ignore[arg-type]

    def paginate(self, StackStatusFilter: list[str]) -> list[dict[str, Any]]:  # noqa: N803 - boto3's name
        self.filters.append(StackStatusFilter)
        summaries = [{"StackName": n, "StackStatus": s} for n, s in self.names]
        return [{"StackSummaries": summaries[:1]}, {"StackSummaries": summaries[1:]}]


def observed(
    target: DocTableConfig,
    *,
    deployed: DocTableConfig | None = None,
    bound: str | None = None,
    declared: dict[str, str] | None = None,
    stacks: list[tuple[str, str]] | None = None,
) -> Observed:
    deployment = Deployment(config=deployed or target, region="us-east-1", account="123456789012")
    if deployed is not None:
        deployment.stack_status, deployment.knobs_source, deployment.intended = (
            "UPDATE_COMPLETE",
            DEPLOYED,
            target,
        )
    deployment.bound_account = bound
    deployment.declared_stacks = dict(declared or {})
    deployment.preview_prefix = "pr-"
    return Observed(Stacks(stacks or []), deployment, None, False, {}, {})  # type: ignore[arg-type]


def found(observed: Observed) -> dict[str, tuple[str, bool, Any, Any]]:
    return {f.code: (f.level.value, f.destructive, f.before, f.after) for f in environment_findings(observed)}


# ------------------------------------------------------------------------------------------ the binding
@pytest.mark.parametrize(("env", "tier", "bound", "warned"), [
    ("prod", None, None, True),
    ("prod-eu", "prod", None, True),
    ("prod", None, "123456789012", False),
    ("qa", "stg", None, False),
    ("uat", None, None, False),
])  # fmt: skip
def test_a_prod_tier_without_an_account_binding_is_warned(
    env: str, tier: str | None, bound: str | None, warned: bool
) -> None:
    codes = found(observed(config(env, tier), bound=bound))
    assert ("env.prod_unbound" in codes) is warned
    if warned:
        assert codes["env.prod_unbound"] == ("WARN", False, None, "prod")


# ------------------------------------------------------------------------------------------ the tier
@pytest.mark.parametrize(("was", "now", "level", "destructive"), [
    ("prod", "stg", "WARN", True),  # production's protections lowered: the gate
    ("uat", "dev", "WARN", True),  # the data no longer outlives the stack: the gate
    ("stg", "prod", "CHANGE", False),  # raised: production's protections apply
    ("dev", "stg", "CHANGE", False),
])  # fmt: skip
def test_a_tier_change_is_a_finding_and_lowering_protections_goes_through_the_gate(
    was: str, now: str, level: str, destructive: bool
) -> None:
    codes = found(observed(config("qa", now), deployed=config("qa", was), bound="123456789012"))
    assert codes["env.tier_changed"] == (level, destructive, was, now)


def test_the_same_tier_says_nothing() -> None:
    assert "env.tier_changed" not in found(observed(config("qa", "stg"), deployed=config("qa", "stg")))


# ------------------------------------------------------------------------------------------ orphans
def test_a_stack_of_an_environment_the_file_no_longer_declares_is_named() -> None:
    # GIVEN the file declares qa2 and prod (prod global in eu-west-1), and the region holds these stacks
    declared = {"qa2": "doctable-items-qa2", "prod": "doctable-items-prod"}
    stacks = [
        ("doctable-items-qa", "UPDATE_COMPLETE"),  # qa, renamed qa2 in the file: orphaned
        ("doctable-items-qa2", "CREATE_COMPLETE"),  # declared
        ("doctable-items-prod-eu-west-1", "CREATE_COMPLETE"),  # prod's replica stack
        ("doctable-items-pr-12", "CREATE_COMPLETE"),  # a preview
        ("doctable-other-dev", "CREATE_COMPLETE"),  # another table's
        ("someone-elses", "CREATE_COMPLETE"),
    ]
    look = observed(config("qa2", "stg"), declared=declared, stacks=stacks)
    orphans = [(f.level.value, f.before) for f in environment_findings(look) if f.code == "env.orphaned"]
    # THEN only the renamed environment's stack is named, as INFO
    assert orphans == [("INFO", "doctable-items-qa")]
    # AND the listing asked for live stacks only (never DELETE_COMPLETE)
    assert "DELETE_COMPLETE" not in look.aws.filters[0]  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------------------ the pipeline
def test_the_pipelines_deploy_refuses_an_unbound_prod_tier(tmp_path: Path) -> None:
    # GIVEN prod-eu of tier prod without an account binding
    settings = tmp_path / "doctable.toml"
    settings.write_text('[environments.prod-eu]\ntier = "prod"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCTABLE_", "AWS_"))}
    env["DOCTABLE_CONFIG"] = str(settings)
    # WHEN the pipeline's deploy runs  THEN it is refused before any AWS call (exit 3), one line
    result = run_doctable(["deploy", "--env", "prod-eu", "--require-binding"], env=env, timeout=120)
    assert result.code == 3
    assert len(result.err.strip().splitlines()) == 1
    assert "tier prod but binds no account (--require-binding)" in result.err


def test_every_deploy_of_the_pipeline_requires_the_binding() -> None:
    workflow = (ROOT / ".github" / "workflows" / "deploy.yml").read_text()
    deploys = re.findall(r"run: doctable deploy .*", workflow)
    assert deploys and all("--require-binding" in line for line in deploys), deploys


# ------------------------------------------------------------------------------------------ upgrading
@pytest.mark.parametrize(("recorded", "drifted"), [(False, set()), (True, {"table-tag:Tier"})])
def test_a_stack_deployed_before_tiers_is_not_drifted_for_its_missing_tier_tag(
    recorded: bool, drifted: set[str]
) -> None:
    # GIVEN a stack whose table carries every tag but Tier, its knob record with or without the tier knob
    from contract import names
    from doctable.capabilities.ownership import OWNERSHIP

    deployed = config("prod")
    record = json.loads(deployed.deployed_record())
    if not recorded:
        record.pop("tier")
    look = observed(deployed, deployed=deployed)
    look.deployment.outputs[names.OUT_KNOBS] = json.dumps(record)
    tags = {k: v for k, v in deployed.tags().items() if k != "Tier"}
    look._reads["table tags"] = tags
    look = Observed(
        look.aws,
        look.deployment,
        {"TableArn": "arn:aws:dynamodb:us-east-1:123456789012:table/items-prod"},
        True,
        {},
        {},
        _reads=look._reads,
    )
    # THEN the missing Tier tag is drift only where the stack's template wrote it
    assert {d.prop for d in OWNERSHIP.drift(look)} == drifted
