"""``doctable bootstrap --env E [--preview]``: the CDK bootstrap an environment deploys through, least privilege.

It creates (or updates to a new default version) the environment's CloudFormation execution policy and its
permissions boundary as customer managed policies (contract/iam/execution.py: ``doctable policy execution`` and
``boundary`` print the same documents), then runs the real ``cdk bootstrap`` with the environment's own
``qualifier`` (a binding of [environments.E], or of [previews] with ``--preview``), naming those policies as the
execution role's (``--cloudformation-execution-policies``) and the boundary (``--custom-permissions-boundary``):
the execution role is never AdministratorAccess, and every role the stacks create must carry the boundary. The
command it ran is printed. The CDK's default qualifier (hnb659fds) is refused: its bootstrap is every app's.

Exit codes: 0 bootstrapped (or, with ``--dry-run``, the plan printed); 1 ``cdk bootstrap`` failed; 2 bad input or
AWS refused.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import unquote

from contract.iam import execution as iam_execution
from contract.iam import policies as iam
from contract.iam.bootstrap import BOOTSTRAP_QUALIFIER, toolkit_stack_name
from contract.knobs import PROJECT_ROOT
from doctable.core.aws import Aws
from doctable.core.errors import UserError
from doctable.core.render import Progress
from doctable.operate.policy import bootstrap_target
from tooling import toolchain

if TYPE_CHECKING:
    from doctable.core.target import Target

CDK_TIMEOUT = 1800.0
MAX_VERSIONS = 5  # a managed policy keeps at most five versions


def plan(target: iam.Target) -> list[tuple[str, dict[str, Any]]]:
    """(name, document) of each managed policy the bootstrap needs: the boundary, then the execution policy's."""
    boundary = (iam_execution.policy_name(target, "boundary"), iam_execution.boundary_document(target))
    execution = list(
        zip(iam_execution.execution_names(target), iam_execution.execution_documents(target), strict=True)
    )
    return [boundary, *execution]


def cdk_bootstrap_command(target: iam.Target) -> list[str]:
    """The real ``cdk bootstrap`` of ``target``'s account and region with its qualifier, policies and boundary."""
    try:
        cdk = toolchain.find(PROJECT_ROOT).cdk()
    except toolchain.ToolchainError as exc:
        raise UserError(str(exc)) from None
    return [
        *cdk,
        "bootstrap",
        # the home region and each replica's: the replica stacks deploy through the same qualifier there
        *(f"aws://{target.account}/{region}" for region in (target.region, *target.config.replicas)),
        "--qualifier",
        target.qualifier,
        "--toolkit-stack-name",
        toolkit_stack_name(target.qualifier),
        "--cloudformation-execution-policies",
        ",".join(iam_execution.execution_arns(target)),
        "--custom-permissions-boundary",
        iam_execution.policy_name(target, "boundary"),
    ]


def put_managed_policy(client: Any, arn: str, name: str, document: dict[str, Any]) -> str:
    """``created``, ``updated`` (a new default version; the oldest other version deleted when five exist) or
    ``unchanged``."""
    text = json.dumps(document, separators=(",", ":"))
    try:
        policy = client.get_policy(PolicyArn=arn)["Policy"]
    except client.exceptions.NoSuchEntityException:
        client.create_policy(
            PolicyName=name, PolicyDocument=text, Description="doctable: " + name.rsplit("-", 1)[-1]
        )
        return "created"
    current = client.get_policy_version(PolicyArn=arn, VersionId=policy["DefaultVersionId"])["PolicyVersion"]
    held = current["Document"]
    held = json.loads(unquote(held)) if isinstance(held, str) else held
    if held == json.loads(text):
        return "unchanged"
    versions = client.list_policy_versions(PolicyArn=arn)["Versions"]
    if len(versions) >= MAX_VERSIONS:
        oldest = min((v for v in versions if not v["IsDefaultVersion"]), key=lambda v: v["CreateDate"])
        client.delete_policy_version(PolicyArn=arn, VersionId=oldest["VersionId"])
    client.create_policy_version(PolicyArn=arn, PolicyDocument=text, SetAsDefault=True)
    return "updated"


@dataclass(frozen=True)
class PolicyAction:
    """A managed policy of the bootstrap and what was done to it."""

    name: str
    arn: str
    action: str  # created | updated | unchanged | planned (dry run)

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "arn": self.arn, "action": self.action}


@dataclass(frozen=True)
class BootstrapResult:
    """The bootstrap of an environment (or its previews): the managed policies put, the ``cdk bootstrap`` run."""

    env: str
    preview: bool
    account: str
    region: str
    qualifier: str
    toolkit_stack: str
    policies: tuple[PolicyAction, ...]
    command: tuple[
        str, ...
    ]  # the cdk bootstrap command line (run, or with ``dry_run`` the one that would be)
    dry_run: bool
    exit: int  # 1: cdk bootstrap failed (its output says why), else 0
    cdk_exit: int  # cdk bootstrap's own exit status (0 with ``dry_run``)
    notes: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return self.exit == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "doctable-bootstrap",
            "env": self.env,
            "preview": self.preview,
            "account": self.account,
            "region": self.region,
            "qualifier": self.qualifier,
            "toolkit_stack": self.toolkit_stack,
            "policies": [p.as_dict() for p in self.policies],
            "command": list(self.command),
            "dry_run": self.dry_run,
            "exit": self.exit,
            "notes": list(self.notes),
        }


def bootstrap(
    target: Target,
    *,
    account: str | None = None,
    preview: bool = False,
    dry_run: bool = False,
    cdk_output: Literal["stdout", "stderr"] = "stderr",
) -> BootstrapResult:
    """Create or update the environment's execution policy and permissions boundary (``preview``: its previews')
    as managed policies, then run ``cdk bootstrap`` with its qualifier, those policies and that boundary;
    ``dry_run``: change nothing, say what would be done. ``cdk_output``: where cdk's own output goes."""
    where, notes = bootstrap_target(target, account=account, preview=preview, offline=True)
    section = "[previews]" if preview else f"[environments.{where.config.env}]"
    if where.qualifier == BOOTSTRAP_QUALIFIER:
        raise UserError(
            f"environment {where.config.env}{' (previews)' if preview else ''} has no qualifier: the CDK's "
            f"default bootstrap ({BOOTSTRAP_QUALIFIER}) is every app's of the account; allowed: qualifier = "
            f'"<1 to 10 lower-case letters and digits>" in {section} of the settings'
        )
    command = cdk_bootstrap_command(where)
    policies = plan(where)
    results: list[PolicyAction] = []
    code = 0
    if not dry_run:
        aws = Aws.connect(where.region, profile=target.profile)
        if aws.account != where.account:
            raise UserError(
                f"account mismatch: the credentials are account {aws.account}'s, the environment's is "
                f"{where.account}; allowed: credentials of {where.account}"
            )
        client = aws.client("iam")
        for name, document in policies:
            arn = where.arn("iam", f"policy/{name}", region=False)
            results.append(PolicyAction(name, arn, put_managed_policy(client, arn, name, document)))
        Progress("doctable bootstrap", quiet=target.quiet).say(f"running {shlex.join(command)}")
        env = toolchain.find(PROJECT_ROOT).environment(dict(os.environ))
        env.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")
        # Outside the project: the CLI would synthesize the app (cdk.json) first, which bootstrapping needs not.
        with tempfile.TemporaryDirectory(prefix="doctable-bootstrap-") as outside:
            try:
                code = subprocess.run(
                    command, cwd=outside, env=env, stdin=subprocess.DEVNULL,
                    stdout=sys.stderr if cdk_output == "stderr" else None, timeout=CDK_TIMEOUT, check=False,
                ).returncode  # fmt: skip
            except subprocess.TimeoutExpired as exc:
                raise UserError(f"cdk bootstrap gave no answer within {CDK_TIMEOUT:.0f}s") from exc
    else:
        results = [
            PolicyAction(n, where.arn("iam", f"policy/{n}", region=False), "planned") for n, _ in policies
        ]
    return BootstrapResult(
        env=where.config.env,
        preview=preview,
        account=where.account,
        region=where.region,
        qualifier=where.qualifier,
        toolkit_stack=toolkit_stack_name(where.qualifier),
        policies=tuple(results),
        command=tuple(command),
        dry_run=dry_run,
        exit=1 if code else 0,
        cdk_exit=code,
        notes=tuple(notes),
    )
