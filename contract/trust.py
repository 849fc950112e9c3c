"""The trust policy of a CI role that GitHub Actions assume with OIDC (``doctable policy ci-trust``): the
repository's main branch and its jobs in one GitHub environment, nothing else. Standard library only."""

from __future__ import annotations

import re
from typing import Any

POLICY_VERSION = "2012-10-17"
GITHUB_OIDC_HOST = "token.actions.githubusercontent.com"
STS_AUDIENCE = "sts.amazonaws.com"
REPO_RE = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


class PolicyError(ValueError):
    """One line: what was asked that no policy answers, and what is allowed."""


def ci_trust_policy(
    *, account: str, repo: str, env: str, partition: str = "aws", preview: bool = False
) -> dict[str, Any]:
    """The trust policy of a CI role that GitHub Actions of ``repo`` assume with OIDC: its main branch, and its
    jobs running in the GitHub environment named ``env``; with ``preview``, the preview role's: its pull requests'
    jobs only (the subject GitHub gives a job run by a pull_request event), never a branch or an environment."""
    if not REPO_RE.match(repo):
        raise PolicyError(f"--repo {repo!r}: expected OWNER/NAME, e.g. octo-org/doctable")
    provider = f"arn:{partition}:iam::{account}:oidc-provider/{GITHUB_OIDC_HOST}"
    subjects = (
        [f"repo:{repo}:pull_request"]
        if preview
        else [f"repo:{repo}:ref:refs/heads/main", f"repo:{repo}:environment:{env}"]
    )
    return {
        "Version": POLICY_VERSION,
        "Statement": [
            {
                "Sid": "GitHubActionsOfPullRequestsOnly" if preview else "GitHubActionsOfMainAndEnvironment",
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
