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

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from typing import Any
from urllib.parse import unquote

from contract.iam import execution as iam_execution
from contract.iam import policies as iam
from contract.iam.bootstrap import BOOTSTRAP_QUALIFIER, toolkit_stack_name
from contract.knobs import PROJECT_ROOT
from doctable.core.aws import Aws
from doctable.core.command import add_command, print_json
from doctable.core.context import add_knob_arguments
from doctable.core.errors import UserError
from doctable.operate.policy import bootstrap_target
from tooling import toolchain

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


def cmd_bootstrap(args: argparse.Namespace) -> int:
    target, notes = bootstrap_target(args)
    where = "[previews]" if args.preview else f"[environments.{target.config.env}]"
    if target.qualifier == BOOTSTRAP_QUALIFIER:
        raise UserError(
            f"environment {target.config.env}{' (previews)' if args.preview else ''} has no qualifier: the CDK's "
            f"default bootstrap ({BOOTSTRAP_QUALIFIER}) is every app's of the account; allowed: qualifier = "
            f'"<1 to 10 lower-case letters and digits>" in {where} of the settings'
        )
    command = cdk_bootstrap_command(target)
    policies = plan(target)
    results: list[dict[str, str]] = []
    code = 0
    if not args.dry_run:
        aws = Aws.connect(target.region, profile=args.profile)
        if aws.account != target.account:
            raise UserError(
                f"account mismatch: the credentials are account {aws.account}'s, the environment's is "
                f"{target.account}; allowed: credentials of {target.account}"
            )
        client = aws.client("iam")
        for name, document in policies:
            arn = target.arn("iam", f"policy/{name}", region=False)
            results.append(
                {"name": name, "arn": arn, "action": put_managed_policy(client, arn, name, document)}
            )
        print(f"doctable bootstrap: running {shlex.join(command)}", file=sys.stderr)
        env = toolchain.find(PROJECT_ROOT).environment(dict(os.environ))
        env.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")
        # Outside the project: the CLI would synthesize the app (cdk.json) first, which bootstrapping needs not.
        with tempfile.TemporaryDirectory(prefix="doctable-bootstrap-") as outside:
            try:
                code = subprocess.run(
                    command, cwd=outside, env=env, stdin=subprocess.DEVNULL,
                    stdout=sys.stderr if args.json else None, timeout=CDK_TIMEOUT, check=False,
                ).returncode  # fmt: skip
            except subprocess.TimeoutExpired as exc:
                raise UserError(f"cdk bootstrap gave no answer within {CDK_TIMEOUT:.0f}s") from exc
    else:
        results = [
            {"name": n, "arn": target.arn("iam", f"policy/{n}", region=False), "action": "planned"}
            for n, _ in policies
        ]
    report = {
        "kind": "doctable-bootstrap",
        "env": target.config.env,
        "preview": bool(args.preview),
        "account": target.account,
        "region": target.region,
        "qualifier": target.qualifier,
        "toolkit_stack": toolkit_stack_name(target.qualifier),
        "policies": results,
        "command": command,
        "dry_run": bool(args.dry_run),
        "exit": 1 if code else 0,
        "notes": notes,
    }
    if args.json:
        print_json(report)
    else:
        for result in results:
            print(f"{result['action']:>9}  {result['name']}")
        print(("would run: " if args.dry_run else "ran: ") + shlex.join(command))
        if code:
            print(
                f"doctable bootstrap: cdk bootstrap failed (exit {code}): its output above says why",
                file=sys.stderr,
            )
    return 1 if code else 0


def register(sub: Any) -> None:
    parser = add_command(
        sub,
        "bootstrap",
        cmd_bootstrap,
        help="bootstrap the CDK for an environment with its own qualifier, a least-privilege execution policy "
        "and a permissions boundary",
        description="Create or update the environment's CloudFormation execution policy and permissions boundary "
        "(`doctable policy execution|boundary`) as managed policies, then run `cdk bootstrap` with the "
        "environment's qualifier, those policies and that boundary. The account and region are the environment's "
        "binding, else --account/--region, else the credentials'.",
    )
    add_knob_arguments(parser)
    parser.add_argument("--account", help="the AWS account id (default: the binding, else the credentials')")
    parser.add_argument(
        "--preview",
        action="store_true",
        help="the previews' bootstrap of the template --env names ([previews])",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print the policies and the command; change nothing"
    )
    parser.add_argument("--json", action="store_true", help="print what was done as JSON")
    parser.set_defaults(offline=True, part=None, repo=None)
