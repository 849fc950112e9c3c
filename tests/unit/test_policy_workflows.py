"""The pipeline's workflows (.github/workflows) say what docs/deploy-to-aws.md promises: what .ci/run runs (setup,
lint, the README's test command, the policy sweep) on every push and pull request; on main, dev deployed with OIDC credentials and verified, then stg and prod behind
GitHub environments, never with --allow-destructive. (tests/integration/test_policies.py runs the deploy and
verify steps' commands on the local AWS with the deployer's and operator's policies.)"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
CREDENTIALS_ACTION = "aws-actions/configure-aws-credentials"


def load(name: str) -> dict[str, Any]:
    workflow: dict[str, Any] = yaml.safe_load((WORKFLOWS / name).read_text())
    # YAML 1.1 reads the key `on` as True
    workflow["on"] = workflow.pop(True, workflow.get("on"))
    return workflow


def runs(job: dict[str, Any]) -> list[list[str]]:
    return [shlex.split(step["run"].split("&&")[0]) for step in job["steps"] if "run" in step]


def test_ci_runs_what_ci_run_runs_on_every_push_and_pull_request() -> None:
    workflow = load("ci.yml")
    assert set(workflow["on"]) == {"push", "pull_request"}
    assert workflow["on"]["push"] is None  # every branch
    (job,) = workflow["jobs"].values()
    script = (ROOT / ".ci" / "run").read_text().splitlines()
    local = [shlex.split(line)[:2] for line in script if line.startswith("make ")]
    assert (
        runs(job)
        == local
        == [["make", "setup"], ["make", "lint"], ["make", "test"], ["make", "test-policies"]]
    )
    assert workflow["permissions"] == {"contents": "read"}


def test_deploy_promotes_dev_then_stg_then_prod_through_the_gate() -> None:
    workflow = load("deploy.yml")
    assert workflow["on"]["push"] == {"branches": ["main"]}
    assert workflow["permissions"] == {"contents": "read", "id-token": "write"}  # OIDC, nothing else
    jobs = workflow["jobs"]
    assert list(jobs) == ["dev", "stg", "prod"]
    assert (jobs["stg"]["needs"], jobs["prod"]["needs"]) == ("dev", "stg")
    # dev runs on main without a GitHub environment; stg and prod wait for their reviewers
    assert "environment" not in jobs["dev"]
    assert (jobs["stg"]["environment"], jobs["prod"]["environment"]) == ("stg", "prod")
    for env, job in jobs.items():
        credentials = next(s for s in job["steps"] if s.get("uses", "").startswith(CREDENTIALS_ACTION))
        assert credentials["with"]["role-to-assume"] == f"${{{{ vars.DOCTABLE_{env.upper()}_ROLE_ARN }}}}"
        assert "aws-access-key-id" not in credentials["with"]
        commands = runs(job)
        deploy = next(c for c in commands if c[:2] == ["doctable", "deploy"])
        assert deploy[2:4] == ["--env", env]
        # a destructive change stops the pipeline at the gate: never allowed here
        assert all("--allow-destructive" not in c for c in commands)
        # the credentials come before any AWS call
        steps = job["steps"]
        assert steps.index(credentials) < next(
            i for i, s in enumerate(steps) if "doctable" in s.get("run", "")
        )
    assert ["doctable", "deploy", "--env", "dev", "--require-binding", "--json"] in runs(jobs["dev"])
    assert ["doctable", "verify", "--env", "dev"] in runs(jobs["dev"])


def test_previews_deploy_per_pull_request_destroy_on_close_and_gc_on_schedule() -> None:
    workflow = load("previews.yml")
    assert workflow["on"]["pull_request"] == {"types": ["opened", "synchronize", "reopened", "closed"]}
    assert "schedule" in workflow["on"]
    assert workflow["permissions"] == {"contents": "read", "id-token": "write"}
    jobs = workflow["jobs"]
    assert list(jobs) == ["deploy", "destroy", "gc"]
    # the pull-request jobs run the reusable workflow as main holds it (never this commit's copy, which a pull
    # request could edit): the preview role trusts that file at main only (`doctable policy ci-trust --preview`)
    for name in ("deploy", "destroy"):
        assert re.fullmatch(r"[^/]+/[^/]+/\.github/workflows/preview-deploy\.yml@main", jobs[name]["uses"]), (
            name
        )
        assert jobs[name]["with"] == {"action": name, "pr-number": "${{ github.event.pull_request.number }}"}
        assert "environment" not in jobs[name] and "steps" not in jobs[name]
    assert jobs["gc"]["environment"] == "previews"
    gc_role = next(s for s in jobs["gc"]["steps"] if s.get("uses", "").startswith(CREDENTIALS_ACTION))["with"]
    assert gc_role["role-to-assume"] == "${{ vars.DOCTABLE_PREVIEW_GC_ROLE_ARN }}"
    assert runs(jobs["gc"])[-1][:3] == ["doctable", "preview", "gc"]
    # the reusable workflow: called only, with the preview role, each action its preview command
    called = load("preview-deploy.yml")
    assert list(called["on"]) == ["workflow_call"]
    assert called["permissions"] == {"contents": "read", "id-token": "write"}
    (job,) = called["jobs"].values()
    role = next(s for s in job["steps"] if s.get("uses", "").startswith(CREDENTIALS_ACTION))["with"]
    assert (
        role["role-to-assume"] == "${{ vars.DOCTABLE_PREVIEW_ROLE_ARN }}" and "aws-access-key-id" not in role
    )
    commands = {step["if"]: step["run"].split() for step in job["steps"] if "run" in step and "if" in step}
    assert commands["inputs.action == 'deploy'"] == [
        "doctable", "preview", "deploy", '"$PR_NUMBER"', "--from", "stg", "--expires", "72h", "--json",
    ]  # fmt: skip
    assert commands["inputs.action == 'destroy'"][:4] == ["doctable", "preview", "destroy", '"$PR_NUMBER"']
    # nothing a pull request runs deploys or tears down a declared environment
    for command in [*commands.values(), *runs(jobs["gc"])]:
        assert command[:2] != ["doctable", "deploy"] and command[:2] != ["doctable", "teardown"]
    assert "closed" not in jobs["deploy"]["if"].replace("!= 'closed'", "")
    assert "== 'closed'" in jobs["destroy"]["if"]
