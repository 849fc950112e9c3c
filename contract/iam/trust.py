"""The trust policy of a CI role that GitHub Actions assume with OIDC (``doctable policy ci-trust``): the
repository's jobs in one GitHub environment (and, for a dev-tier environment only, its main branch), run by one
workflow file as main holds it, nothing else. Standard library only.

IAM reads two claims of GitHub's token in a trust policy: ``aud`` and ``sub`` (GitHub's guide: "AWS does not
support custom claims for OIDC"). A workflow file is pinned through ``sub``: the repository's OIDC subject
template (``SUBJECT_TEMPLATE``, set once with GitHub's API) puts ``job_workflow_ref`` into it, and the trust names
``<repo>/.github/workflows/<file>@refs/heads/main``. A pull request cannot change what runs with the preview role:
its jobs call the previews' reusable workflow at main, whose ref is main's whatever the pull request edits; a
workflow the pull request adds or edits runs at its own ref (``refs/pull/N/merge``), which the trust refuses."""

from __future__ import annotations

import json
import re
from typing import Any

POLICY_VERSION = "2012-10-17"
GITHUB_OIDC_HOST = "token.actions.githubusercontent.com"
STS_AUDIENCE = "sts.amazonaws.com"
REPO_RE = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
# The one tier whose role may also trust a branch: a job without a GitHub environment skips the environment's
# protection rules (required reviewers, wait timers, branch policies), so every other tier trusts its environment's
# jobs only (GitHub's subject for them: repo:OWNER/NAME:environment:NAME).
BRANCH_TRUSTING_TIERS = ("dev",)
# The repository's OIDC subject template: repo, context (environment, ref or pull_request) and the workflow file
# the job runs, as IAM can read them in ``sub``.
SUBJECT_TEMPLATE = {"use_default": False, "include_claim_keys": ["repo", "context", "job_workflow_ref"]}
SUBJECT_COMMAND = "gh api -X PUT repos/{repo}/actions/oidc/customization/sub --input - <<< '{template}'"
DEPLOY_WORKFLOW = "deploy.yml"  # the promotion pipeline (dev, stg, prod)
PREVIEW_WORKFLOW = (
    "preview-deploy.yml"  # the reusable workflow previews.yml calls at main for each pull request
)
PINNED_REF = "refs/heads/main"
WORKFLOW_RE = re.compile(r"^[A-Za-z0-9_.-]+\.ya?ml$")


class PolicyError(ValueError):
    """One line: what was asked that no policy answers, and what is allowed."""


def subject_command(repo: str) -> str:
    """The command that sets ``repo``'s OIDC subject template (GitHub's REST API, through the gh CLI)."""
    return SUBJECT_COMMAND.format(repo=repo, template=json.dumps(SUBJECT_TEMPLATE, separators=(",", ":")))


def ci_trust_policy(
    *, account: str, repo: str, env: str, tier: str, partition: str = "aws", preview: bool = False,
    workflow: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The trust policy of a CI role that GitHub Actions of ``repo`` assume with OIDC: its jobs running in the GitHub
    environment named ``env``, and for a dev-tier environment its main branch too; with ``preview``, the preview
    role's: its pull requests' jobs only (the subject GitHub gives a job run by a pull_request event). Each subject
    is pinned to ``workflow`` (deploy.yml; preview-deploy.yml with ``preview``) as main holds it."""
    if not REPO_RE.match(repo):
        raise PolicyError(f"--repo {repo!r}: expected OWNER/NAME, e.g. octo-org/doctable")
    workflow = workflow or (PREVIEW_WORKFLOW if preview else DEPLOY_WORKFLOW)
    if not WORKFLOW_RE.match(workflow):
        raise PolicyError(f"--workflow {workflow!r}: expected a workflow file name of .github/workflows, e.g. "
                          f"{DEPLOY_WORKFLOW}")  # fmt: skip
    pinned = f":job_workflow_ref:{repo}/.github/workflows/{workflow}@{PINNED_REF}"
    provider = f"arn:{partition}:iam::{account}:oidc-provider/{GITHUB_OIDC_HOST}"
    environment = f"repo:{repo}:environment:{env}{pinned}"
    if preview:
        subjects, sid = [f"repo:{repo}:pull_request{pinned}"], "GitHubActionsOfPullRequestsOnly"
    elif tier in BRANCH_TRUSTING_TIERS:
        subjects = [f"repo:{repo}:ref:refs/heads/main{pinned}", environment]
        sid = "GitHubActionsOfMainAndEnvironment"
    else:
        subjects, sid = [environment], "GitHubActionsOfTheEnvironmentOnly"
    return {
        "Version": POLICY_VERSION,
        "Statement": [
            {
                "Sid": sid,
                "Effect": "Allow",
                "Principal": {"Federated": provider},
                "Action": "sts:AssumeRoleWithWebIdentity",
                "Condition": {
                    "StringEquals": {
                        f"{GITHUB_OIDC_HOST}:aud": STS_AUDIENCE,
                        f"{GITHUB_OIDC_HOST}:sub": subjects,
                    }
                },
            }
        ],
    }
