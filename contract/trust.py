"""The trust policy of a CI role that GitHub Actions assume with OIDC (``doctable policy ci-trust``): the
repository's jobs in one GitHub environment (and, for a dev-tier environment only, its main branch), nothing else.
Standard library only."""

from __future__ import annotations

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


class PolicyError(ValueError):
    """One line: what was asked that no policy answers, and what is allowed."""


def ci_trust_policy(
    *, account: str, repo: str, env: str, tier: str, partition: str = "aws", preview: bool = False
) -> dict[str, Any]:
    """The trust policy of a CI role that GitHub Actions of ``repo`` assume with OIDC: its jobs running in the GitHub
    environment named ``env``, and for a dev-tier environment its main branch too; with ``preview``, the preview
    role's: its pull requests' jobs only (the subject GitHub gives a job run by a pull_request event)."""
    if not REPO_RE.match(repo):
        raise PolicyError(f"--repo {repo!r}: expected OWNER/NAME, e.g. octo-org/doctable")
    provider = f"arn:{partition}:iam::{account}:oidc-provider/{GITHUB_OIDC_HOST}"
    environment = f"repo:{repo}:environment:{env}"
    if preview:
        subjects, sid = [f"repo:{repo}:pull_request"], "GitHubActionsOfPullRequestsOnly"
    elif tier in BRANCH_TRUSTING_TIERS:
        subjects, sid = [f"repo:{repo}:ref:refs/heads/main", environment], "GitHubActionsOfMainAndEnvironment"
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
