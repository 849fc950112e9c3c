"""Preflight reads the CDK bootstrap a deploy goes through (doctable/capabilities/ownership.py
``bootstrap_findings``): an administrator execution role is ``bootstrap.admin_execution`` (WARN; STOP for a
preview), a bound qualifier without its bootstrap ``bootstrap.missing`` (STOP), a stack deployed through another
qualifier ``bootstrap.qualifier_mismatch`` (WARN)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from doctable.capabilities.ownership import bootstrap_findings
from doctable.capabilities.protocol import observe
from doctable.core.aws import Aws
from doctable.core.context import describe_stack
from local import patching
from local.services.cloudformation import stacks
from tests.support import ops as ot

pytestmark = pytest.mark.unit

ADMIN = "arn:aws:iam::aws:policy/AdministratorAccess"
SCOPED = "arn:aws:iam::123456789012:policy/doctable-items-dev-execution"


def toolkit(aws: Aws, name: str, policies: str) -> None:
    """A bootstrap stack with the CDK's parameter of its execution role's policies (moto runs no bootstrap)."""
    template = {
        "Parameters": {"CloudFormationExecutionPolicies": {"Type": "CommaDelimitedList", "Default": ""}},
        "Resources": {"Marker": {"Type": "AWS::SSM::Parameter", "Properties": {"Type": "String", "Value": "1",
                                                                             "Name": f"/{name}/marker"}}},
    }  # fmt: skip
    aws.client("cloudformation").create_stack(
        StackName=name,
        TemplateBody=json.dumps(template),
        Parameters=[{"ParameterKey": "CloudFormationExecutionPolicies", "ParameterValue": policies}],
    )


def findings(aws: Aws, qualifier: str | None = None, env: str = "dev", prefix: str = "") -> dict[str, Any]:
    deployment = describe_stack(aws, ot.config_of(env=env, tier="dev"))
    deployment.qualifier = qualifier
    deployment.preview_prefix = prefix
    return {f.code: f for f in bootstrap_findings(observe(aws, deployment))}


@pytest.fixture
def list_parameters() -> Iterator[None]:
    """The local AWS's DescribeStacks parameters (a list comma-joined, as CloudFormation answers), for the test."""
    point = patching.checkpoint()
    patching.install(stacks.PATCHES)
    try:
        yield
    finally:
        patching.rollback(point)


def test_an_administrator_execution_role_warns_and_stops_a_preview(
    moto_env: Aws, list_parameters: None
) -> None:
    # GIVEN the CDK's default bootstrap with AdministratorAccess (what `cdk bootstrap` gives unless told)
    toolkit(moto_env, "CDKToolkit", ADMIN)
    # THEN a declared environment's preflight warns, a preview's stops
    assert findings(moto_env)["bootstrap.admin_execution"].level.value == "WARN"
    stop = findings(moto_env, env="pr-7", prefix="pr-")["bootstrap.admin_execution"]
    assert (stop.level.value, stop.before) == ("STOP", [ADMIN])


def test_a_bound_qualifier_needs_its_bootstrap_and_a_scoped_one_passes(
    moto_env: Aws, list_parameters: None
) -> None:
    # GIVEN no bootstrap of qualifier dtdev
    missing = findings(moto_env, qualifier="dtdev")["bootstrap.missing"]
    # THEN the deploy stops, naming the qualifier
    assert (missing.level.value, missing.after) == ("STOP", "dtdev")
    # WHEN `doctable bootstrap` made it with a scoped execution policy THEN nothing is found
    toolkit(moto_env, "CDKToolkit-dtdev", SCOPED)
    assert findings(moto_env, qualifier="dtdev") == {}
    # AND the default bootstrap, absent, is `cdk deploy`'s to report
    assert findings(moto_env) == {}


def test_a_stack_deployed_through_another_qualifier_is_named(moto_env: Aws, list_parameters: None) -> None:
    # GIVEN the environment's stack, synthesized for the CDK's default qualifier (its BootstrapVersion parameter)
    config = ot.config_of(env="dev")
    template = ot.template(config)
    template["Parameters"] = {
        "BootstrapVersion": {"Type": "String", "Default": "/cdk-bootstrap/hnb659fds/version"}
    }
    moto_env.client("cloudformation").create_stack(
        StackName=config.stack_name, TemplateBody=json.dumps(template)
    )
    toolkit(moto_env, "CDKToolkit-dtdev", SCOPED)
    # WHEN the settings now bind qualifier dtdev
    mismatch = findings(moto_env, qualifier="dtdev")["bootstrap.qualifier_mismatch"]
    # THEN preflight says the deploy changes bootstrap
    assert (mismatch.level.value, mismatch.before, mismatch.after) == ("WARN", "hnb659fds", "dtdev")
