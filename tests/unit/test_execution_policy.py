"""The CloudFormation execution policy, the permissions boundary and the bootstrap qualifier of an environment
(contract/iam/execution.py, `doctable policy execution|boundary`, `doctable bootstrap --dry-run`): roles only under
the boundary and passed to Lambda only, no role of the default qualifier nor the lookup role once a qualifier is
set, the boundary's denials, the stacks' roles carrying it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contract.iam import execution as iam_execution
from contract.iam import policies as iam
from contract.knobs import resolve_config
from contract.settings.resolve import resolve_settings

pytestmark = pytest.mark.unit

ACCOUNT, REGION = "123456789012", "eu-west-1"
SETTINGS = f"""
[environments.stg]
account = "{ACCOUNT}"
region = "{REGION}"
qualifier = "dtstg"
stream = "new-and-old"

[environments.dev]
tier = "dev"

[previews]
qualifier = "dtprev"
"""


def target(**knobs: str) -> iam.Target:
    config = resolve_config(context={"env": "stg", "stream": "new-and-old", **knobs}, environ={})
    return iam.Target(config, ACCOUNT, REGION, qualifier="dtstg")


def statements(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["Sid"]: s for s in document["Statement"]}


def test_roles_are_created_only_with_the_boundary_and_passed_to_lambda_only() -> None:
    t = target()
    found = {sid: s for d in iam_execution.execution_documents(t) for sid, s in statements(d).items()}
    boundary = f"arn:aws:iam::{ACCOUNT}:policy/doctable-items-stg-boundary"
    writes = found["RolesOnlyWithTheBoundary"]
    assert set(writes["Action"]) >= {"iam:CreateRole", "iam:PutRolePolicy"}
    attach = found["AttachOnlyTheStacksPoliciesUnderTheBoundary"]["Condition"]
    assert attach["ArnLike"] == {"iam:PolicyARN": [f"arn:aws:iam::{ACCOUNT}:policy/doctable-items-stg-*"]}
    assert writes["Condition"] == {"StringEquals": {"iam:PermissionsBoundary": [boundary]}}
    assert writes["Resource"] == [f"arn:aws:iam::{ACCOUNT}:role/doctable-items-stg-*"]
    assert found["PassRolesToLambdaOnly"]["Condition"] == {
        "StringEquals": {"iam:PassedToService": ["lambda.amazonaws.com"]}
    }
    # no statement lets the execution role remove a boundary, and "*" only where AWS names no resource
    every = {a for s in found.values() for a in s["Action"]}
    assert "iam:DeleteRolePermissionsBoundary" not in every
    assert all(
        sid.endswith(("AcceptsNoResource", "AcceptNoResource"))
        for sid, s in found.items()
        if s["Resource"] == ["*"]
    )
    # the bootstrap version it reads is its own qualifier's
    assert found["ReadBootstrapVersion"]["Resource"] == [
        f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter/cdk-bootstrap/dtstg/version"
    ]


def test_the_boundary_denies_roles_without_it_and_edits_of_the_two_policies() -> None:
    t = target()
    document = iam_execution.boundary_document(t)
    denies = {s["Sid"]: s for s in document["Statement"] if s["Effect"] == "Deny"}
    assert denies["DenyRoleWritesWithoutThisBoundary"]["Condition"] == {
        "StringNotEquals": {"iam:PermissionsBoundary": [iam_execution.policy_arn(t, "boundary")]}
    }
    assert denies["DenyBoundaryRemoval"]["Action"] == ["iam:DeleteRolePermissionsBoundary"]
    assert set(denies["DenyEditingThesePolicies"]["Resource"]) == {
        iam_execution.policy_arn(t, "boundary"),
        *iam_execution.execution_arns(t),
    }
    # every service the execution policy uses is allowed by the boundary too (it bounds the execution role)
    allowed = {a.split(":")[0] for s in document["Statement"] if s["Effect"] == "Allow" for a in s["Action"]}
    used = {
        a.split(":")[0]
        for d in iam_execution.execution_documents(t)
        for s in d["Statement"]
        for a in s["Action"]
    }
    assert used <= allowed
    assert len(json.dumps(document, separators=(",", ":"))) <= iam_execution.MANAGED_POLICY_LIMIT


def test_a_qualifier_names_the_bootstrap_roles_and_the_lookup_role_is_never_named() -> None:
    t = target()
    deployer = json.dumps(iam.policy_document(iam.role_statements(iam.DEPLOYER, t)))
    assert f"role/cdk-dtstg-deploy-role-{ACCOUNT}-{REGION}" in deployer
    assert "hnb659fds" not in deployer and "lookup-role" not in deployer


def test_a_large_execution_policy_is_split_into_managed_policies_of_the_limit() -> None:
    t = target(replicas="us-west-2", consumer="builtin")
    documents = iam_execution.execution_documents(t)
    assert all(
        len(json.dumps(d, separators=(",", ":"))) <= iam_execution.MANAGED_POLICY_LIMIT for d in documents
    )
    names = iam_execution.execution_names(t)
    assert names[0] == "doctable-items-stg-execution" and len(names) == len(documents)
    # each replica region's table is in the policy
    text = json.dumps(documents)
    assert "arn:aws:dynamodb:us-west-2:123456789012:table/items-stg" in text


def test_the_stacks_synthesizer_and_boundary_follow_the_qualifier(tmp_path: Path) -> None:
    from infra.stack import bootstrap_of

    settings = tmp_path / "doctable.toml"
    settings.write_text(SETTINGS)
    environ = {"DOCTABLE_CONFIG": str(settings)}
    resolved = resolve_settings(context={"env": "stg"}, environ=environ, cwd=tmp_path)
    assert bootstrap_of(resolved) is not None
    assert (bootstrap_of(resolved).qualifier, bootstrap_of(resolved).boundary) == (  # type: ignore[union-attr]
        "dtstg",
        "doctable-items-stg-boundary",
    )
    # no qualifier: the CDK's default bootstrap, no boundary
    plain = resolve_settings(context={"env": "dev"}, environ=environ, cwd=tmp_path)
    assert bootstrap_of(plain) is None


def bootstrap_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    from doctable.cli import main

    assert main(["bootstrap", "--env", "stg", "--dry-run", "--json", *args]) == 0
    return dict(json.loads(capsys.readouterr().out))


def test_bootstrap_dry_run_prints_the_policies_and_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "doctable.toml").write_text(SETTINGS)
    monkeypatch.setenv("DOCTABLE_CONFIG", str(tmp_path / "doctable.toml"))
    report = bootstrap_json(capsys)
    assert [p["name"] for p in report["policies"]][0] == "doctable-items-stg-boundary"
    command = report["command"]
    assert command[command.index("--qualifier") + 1] == "dtstg"
    assert command[command.index("--toolkit-stack-name") + 1] == "CDKToolkit-dtstg"
    assert command[command.index("--custom-permissions-boundary") + 1] == "doctable-items-stg-boundary"
    assert command[command.index("--cloudformation-execution-policies") + 1].startswith(
        f"arn:aws:iam::{ACCOUNT}:policy/doctable-items-stg-execution"
    )
    # the previews' bootstrap: [previews]' qualifier and the boundary every preview shares
    report = bootstrap_json(capsys, "--preview")
    assert report["qualifier"] == "dtprev"
    assert report["policies"][0]["name"] == "doctable-items-pr-previews-boundary"
