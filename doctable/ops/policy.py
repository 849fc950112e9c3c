"""``doctable policy deployer|operator|reader|ci-trust``: the least-privilege IAM policy documents of one
environment, computed from its resolved settings (contract/iam.py), printed for ``aws iam put-role-policy``.

The account and region are the environment's binding in doctable.toml, else ``--account``/``--region``, else the
credentials' (one STS GetCallerIdentity call, only when the binding leaves one of them open).
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from contract import iam
from contract.settings import Resolved
from doctable.aws import Aws
from doctable.errors import UserError
from doctable.ops.command import guarded, print_json
from doctable.ops.context import add_knob_arguments, resolve_run

CI_TRUST = "ci-trust"
KINDS = (*iam.ROLES, CI_TRUST)
ACCOUNT_RE = re.compile(r"^\d{12}$")


def target_of(args: argparse.Namespace, resolved: Resolved) -> tuple[iam.Target, list[str]]:
    """Where the policies apply, and how the account and region were found (one line each)."""
    env = resolved.config.env
    account, region = args.account, args.region
    if account is not None and not ACCOUNT_RE.match(account):
        raise UserError(f"--account {account!r}: expected the 12 digits of an AWS account id")
    for name, given, bound in (("account", account, resolved.account), ("region", region, resolved.region)):
        if given and bound and given != bound:
            raise UserError(
                f"{name} mismatch: environment {env} is bound to {name} {bound} in the settings, but --{name} "
                f"says {given}; drop --{name} or fix the binding"
            )
    sources = []
    account, region = account or resolved.account, region or resolved.region
    if account is None or region is None:
        try:
            aws = Aws.connect(region, profile=args.profile)
            found = aws.account if account is None else account
        except UserError as exc:
            raise UserError(
                f"no {'account' if account is None else 'region'} for environment {env}: bind it in the settings "
                f'([environments.{env}] account = "123456789012", region = "eu-west-1"), pass --account/--region, '
                f"or give credentials ({exc})"
            ) from exc
        if account is None:
            account = found
            sources.append(f"account {account} from the credentials (environment {env} is not bound to one)")
        region = region or aws.region
    return iam.Target(resolved.config, account, region), sources


def notes_of(target: iam.Target, statements: list[iam.Statement]) -> list[str]:
    """What a reader of the policy should know about the patterns it uses."""
    notes = []
    resources = {r for s in statements for r in s.resources}
    if any(f":::{target.generated_buckets}" in r for r in resources):
        notes.append(
            f"the S3 statements name the stack's generated buckets by the {iam.GENERATED_BUCKET_STACK_CHARS} "
            f"characters of the stack name CloudFormation keeps in them ({target.generated_buckets}): a stack "
            "whose name starts alike in this account matches too; keep environments in separate accounts"
        )
    size = iam.document_size(iam.policy_document(statements))
    if size > iam.MANAGED_POLICY_LIMIT:
        notes.append(
            f"{size} characters: more than a managed policy holds ({iam.MANAGED_POLICY_LIMIT}); attach it inline "
            "(put-role-policy) or one --command at a time"
        )
    return notes


def cmd_policy(args: argparse.Namespace) -> int:
    if args.kind == CI_TRUST:
        return _ci_trust(args)
    if args.repo:
        raise UserError(f"--repo is for `doctable policy {CI_TRUST}`, not the {args.kind}'s policy")
    resolved = resolve_run(args)
    try:
        commands = iam.role_commands(args.kind, args.part)
    except iam.PolicyError as exc:
        raise UserError(str(exc)) from exc
    target, sources = target_of(args, resolved)
    statements = iam.role_statements(args.kind, target, args.part)
    notes = sources + notes_of(target, statements)
    if "verify" in commands and iam.part_of(args.kind, "verify") == iam.VERIFY_READ_ONLY:
        notes.append(
            f"the {args.kind}'s verify is `doctable verify --read-only`: the checks that write are skipped"
        )
    document = iam.policy_document(statements) if statements else None
    if document is None:
        notes.append(f"{' and '.join(commands)} makes no AWS call: no policy is needed")
    if args.json:
        print_json(
            {
                "kind": "doctable-policy",
                "role": args.kind,
                "commands": list(commands),
                "env": target.config.env,
                "stack": target.stack,
                "table": target.config.table_name,
                "account": target.account,
                "region": target.region,
                "partition": target.partition,
                "policy": document,
                "size": iam.document_size(document) if document else 0,
                "unscoped": [s.sid for s in iam.unscoped(statements)],
                "notes": notes,
            }
        )
    else:
        if document is not None:
            print_json(document)
        for note in notes:
            print(f"doctable policy: {note}", file=sys.stderr)
    return 0


def _ci_trust(args: argparse.Namespace) -> int:
    if not args.repo:
        raise UserError(f"`doctable policy {CI_TRUST}` needs --repo OWNER/NAME (the GitHub repository)")
    if args.part:
        raise UserError(f"--command is for the roles' policies ({'|'.join(iam.ROLES)}), not {CI_TRUST}")
    resolved = resolve_run(args)
    target, sources = target_of(args, resolved)
    env = target.config.env
    try:
        document = iam.ci_trust_policy(
            account=target.account, repo=args.repo, env=env, partition=target.partition
        )
    except iam.PolicyError as exc:
        raise UserError(str(exc)) from exc
    if args.json:
        print_json(
            {
                "kind": "doctable-policy",
                "role": CI_TRUST,
                "repo": args.repo,
                "env": env,
                "account": target.account,
                "policy": document,
                "notes": sources,
            }
        )
    else:
        print_json(document)
        for note in sources:
            print(f"doctable policy: {note}", file=sys.stderr)
    return 0


def register(sub: Any) -> None:
    policy = sub.add_parser(
        "policy",
        help="print the least-privilege IAM policy of the deployer, operator or reader of an environment, or the "
        "trust policy of a CI role (GitHub OIDC)",
        description="Print an IAM policy document computed from the environment's settings: deployer (doctable "
        "deploy: preflight's reads and the CDK bootstrap roles), operator (verify, reconcile, replay, teardown, "
        "ledger, plan, logs, invoke), reader (preflight, ledger, verify --read-only), or ci-trust (who may assume the CI "
        "role). The account and region are the environment's binding, else --account/--region, else the "
        "credentials'.",
    )
    policy.add_argument("kind", choices=KINDS, help="whose policy: " + " | ".join(KINDS))
    add_knob_arguments(policy)
    policy.add_argument("--account", help="the AWS account id (default: the binding, else the credentials')")
    policy.add_argument(
        "--command",
        dest="part",
        metavar="CMD",
        help=f"only this command's part of the role's policy (one of {'|'.join(iam.COMMANDS)})",
    )
    policy.add_argument("--repo", metavar="OWNER/NAME", help=f"{CI_TRUST}: the GitHub repository")
    policy.add_argument(
        "--json", action="store_true", help="print the policy with its target and notes as JSON"
    )
    policy.set_defaults(func=guarded(cmd_policy))
