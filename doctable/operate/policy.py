"""``doctable policy deployer|operator|reader|ci-trust``: the least-privilege IAM policy documents of one
environment, computed from its resolved settings (contract/iam/policies.py), printed for ``aws iam put-role-policy``.

The account and region are the environment's binding in doctable.toml, else ``--account``/``--region``, else the
credentials' (one STS GetCallerIdentity call, only when the binding leaves one of them open).

The S3 statements name the stack's buckets exactly: with bucket_names=exact (the default) the stack names them
``<table>-<account>-<region>-blobs|failures`` (contract/names.py), so the settings alone give them. With
bucket_names=generated CloudFormation generates them from the first 14 characters of the stack name: the deployed
stack's FailureBucketName and BlobBucketName outputs are read with the credentials when they are the target
account's (``--offline`` reads nothing), and before the stack exists the only name known is a pattern that every
environment of the table shares: the policy then says so, and is to be printed again once the stack is deployed.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contract import names
from contract.iam import execution as iam_execution
from contract.iam import policies as iam
from contract.settings import preview as preview_rules
from contract.settings.resolve import FILE_NAME, SettingsFile, load_settings
from doctable.core.aws import Aws
from doctable.core.command import add_command, print_json
from doctable.core.context import add_knob_arguments, describe_stack, resolve_run
from doctable.core.errors import UserError

if TYPE_CHECKING:
    from contract.settings.resolve import Resolved

CI_TRUST = "ci-trust"
EXECUTION, BOUNDARY = "execution", "boundary"
KINDS = (*iam.ROLES, CI_TRUST, EXECUTION, BOUNDARY)
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
    qualifier = resolved.qualifier or iam.Target(resolved.config, account, region).qualifier
    return iam.Target(resolved.config, account, region, qualifier=qualifier), sources


def with_deployed_buckets(args: argparse.Namespace, target: iam.Target) -> tuple[iam.Target, str | None]:
    """The target with the deployed stack's bucket names, or unchanged with why they could not be read (with
    bucket_names=exact the settings name them: nothing is read)."""
    if target.config.exact_bucket_names:
        return target, None
    if args.offline:
        return target, "--offline"
    try:
        aws = Aws.connect(target.region, profile=args.profile)
        if aws.account != target.account:
            return target, f"the credentials are account {aws.account}'s, not {target.account}'s"
        deployment = describe_stack(aws, target.config)
    except UserError as exc:
        return target, str(exc)
    if not deployment.exists:
        return target, f"stack {target.stack} is not deployed in {target.account} {target.region}"
    failure = deployment.outputs.get(names.OUT_FAILURE_BUCKET, "")
    if not failure:
        return target, f"stack {target.stack} has no {names.OUT_FAILURE_BUCKET} output"
    blob = deployment.outputs.get(names.OUT_BLOB_BUCKET, "") if not target.config.blob_bucket else ""
    return dataclasses.replace(target, deployed_failure_bucket=failure, deployed_blob_bucket=blob), None


def notes_of(target: iam.Target, statements: list[iam.Statement], unread: str | None = None) -> list[str]:
    """What a reader of the policy should know about the patterns it uses."""
    notes = []
    resources = {r for s in statements for r in s.resources}
    if any(f":::{target.generated_buckets}" in r for r in resources):
        notes.append(
            f"the S3 statements name the stack's generated buckets by the {iam.GENERATED_BUCKET_STACK_CHARS} "
            f"characters of the stack name CloudFormation keeps in them ({target.generated_buckets}), which the "
            f"buckets of every other environment of the table share: print the policy again once the stack is "
            f"deployed, for its buckets' exact names ({unread})"
        )
    elif target.config.exact_bucket_names and any(":s3:::" in r for r in resources):
        named = ", ".join(target.stack_buckets)
        notes.append(
            f"the S3 statements name the environment's buckets exactly ({named}): bucket_names=exact names them "
            f"<table>-<account>-<region>-blobs|failures"
        )
    elif target.exact_buckets and any(":s3:::" in r for r in resources):
        deployed = ", ".join(b for b in (target.deployed_failure_bucket, target.deployed_blob_bucket) if b)
        notes.append(
            f"the S3 statements name the deployed stack's buckets ({deployed}): print the policy again if the "
            "stack is replaced"
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
    if args.kind in (EXECUTION, BOUNDARY):
        return _bootstrap_policy(args)
    if args.preview:
        return _preview_policy(args)
    if args.repo:
        raise UserError(f"--repo is for `doctable policy {CI_TRUST}`, not the {args.kind}'s policy")
    resolved = resolve_run(args)
    try:
        commands = iam.role_commands(args.kind, args.part)
    except iam.PolicyError as exc:
        raise UserError(str(exc)) from exc
    target, sources = target_of(args, resolved)
    target, unread = with_deployed_buckets(args, target)
    statements = iam.role_statements(args.kind, target, args.part)
    notes = sources + notes_of(target, statements, unread)
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
                "buckets": {
                    "exact": target.exact_buckets,
                    "failure": target.failure_bucket,
                    "blob": target.blob_bucket,
                },
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
            account=target.account,
            repo=args.repo,
            env=env,
            tier=target.config.tier,
            partition=target.partition,
            preview=args.preview,
            workflow=args.workflow,
        )
    except iam.PolicyError as exc:
        raise UserError(str(exc)) from exc
    # IAM reads only `sub` of GitHub's claims: the workflow file is pinned through it, once the repository's
    # subject template includes job_workflow_ref.
    sources = [*sources, f"the subjects name the workflow file (job_workflow_ref): set the repository's OIDC "
               f"subject template once with: {iam.subject_command(args.repo)}"]  # fmt: skip
    if args.json:
        print_json(
            {
                "kind": "doctable-policy",
                "role": CI_TRUST,
                "repo": args.repo,
                "env": env,
                "tier": target.config.tier,
                "account": target.account,
                "policy": document,
                "subject_template": iam.SUBJECT_TEMPLATE,
                "subject_command": iam.subject_command(args.repo),
                "notes": sources,
            }
        )
    else:
        print_json(document)
        for note in sources:
            print(f"doctable policy: {note}", file=sys.stderr)
    return 0


def bootstrap_target(args: argparse.Namespace) -> tuple[iam.Target, list[str]]:
    """The target of the execution policy and the boundary: the environment's, or with ``--preview`` every
    preview's of the template (their names' patterns, [previews]' qualifier)."""
    resolved = resolve_run(args)
    target, sources = target_of(args, resolved)
    target, unread = with_deployed_buckets(args, target)
    if unread and not target.exact_buckets:
        sources.append(f"the buckets are named by the pattern of generated names ({unread})")
    if not args.preview:
        return target, sources
    settings = load_settings(resolved.path) if resolved.path else SettingsFile(path=Path(FILE_NAME))
    pattern = preview_rules.pattern_config(resolved.config, settings.preview_prefix)
    problems = preview_rules.borrowed_problems(pattern, resolved.config.env)
    if problems:
        raise UserError("; ".join(problems))
    qualifier = settings.previews.qualifier or target.qualifier
    return dataclasses.replace(target, config=pattern, qualifier=qualifier), sources


def _bootstrap_policy(args: argparse.Namespace) -> int:
    """``doctable policy execution|boundary``: the CloudFormation execution policy of the environment's stacks,
    or the permissions boundary of the roles they create (contract/iam/execution.py)."""
    if args.part or args.repo:
        raise UserError(f"--command and --repo are not options of `doctable policy {args.kind}`")
    target, sources = bootstrap_target(args)
    if args.kind == EXECUTION:
        documents = iam_execution.execution_documents(target)
        named = iam_execution.execution_names(target)
        if len(documents) > 1:
            sources.append(
                f"the execution policy takes {len(documents)} managed policies ({', '.join(named)})"
            )
    else:
        documents = [iam_execution.boundary_document(target)]
        named = [iam_execution.policy_name(target, BOUNDARY)]
    sizes = [iam.document_size(d) for d in documents]
    if max(sizes) > iam.MANAGED_POLICY_LIMIT:
        sources.append(
            f"{max(sizes)} characters: more than a managed policy holds ({iam.MANAGED_POLICY_LIMIT})"
        )
    if args.json:
        print_json(
            {
                "kind": "doctable-policy",
                "role": args.kind,
                "env": target.config.env,
                "stack": target.stack,
                "account": target.account,
                "region": target.region,
                "qualifier": target.qualifier,
                "name": named[0],
                "names": named,
                "arns": [target.arn("iam", f"policy/{n}", region=False) for n in named],
                "policy": documents[0],
                "policies": documents,
                "size": sizes[0],
                "sizes": sizes,
                "unscoped": [
                    s["Sid"] for d in documents for s in d["Statement"] if s.get("Resource") == ["*"]
                ],
                "notes": sources,
            }
        )
    else:
        print_json(documents[0] if len(documents) == 1 else documents)
        for note in sources:
            print(f"doctable policy: {note}", file=sys.stderr)
    return 0


def _preview_policy(args: argparse.Namespace) -> int:
    """``doctable policy deployer --preview --env TEMPLATE``: the preview role's policy, scoped to the names every
    preview of the template has (``<prefix>*``: contract.settings.preview.pattern_config)."""
    if args.kind != iam.DEPLOYER:
        raise UserError(
            f"--preview is for `doctable policy {iam.DEPLOYER}` and `{CI_TRUST}`, not the {args.kind}'s"
        )
    resolved = resolve_run(args)
    settings = load_settings(resolved.path) if resolved.path else SettingsFile(path=Path(FILE_NAME))
    config = resolved.config
    pattern = preview_rules.pattern_config(config, settings.preview_prefix)
    problems = preview_rules.borrowed_problems(pattern, config.env)
    if not config.exact_bucket_names:
        problems.append(
            f"preview of {config.env}: bucket_names={config.bucket_names!r} names buckets by a pattern every "
            "environment of the table shares; allowed: bucket_names=exact for a policy scoped to previews"
        )
    if problems:
        raise UserError("; ".join(problems))
    target, sources = target_of(args, resolved)
    qualifier = settings.previews.qualifier or target.qualifier
    target = dataclasses.replace(target, config=pattern, qualifier=qualifier)
    statements = iam.preview_statements(target)
    document = iam.policy_document(statements)
    if args.json:
        print_json(
            {
                "kind": "doctable-policy",
                "role": "preview",
                "template": config.env,
                "stack": target.stack,
                "table": target.config.table_name,
                "account": target.account,
                "region": target.region,
                "policy": document,
                "size": iam.document_size(document),
                "unscoped": [s.sid for s in iam.unscoped(statements)],
                "notes": sources,
            }
        )
    else:
        print_json(document)
        for note in sources:
            print(f"doctable policy: {note}", file=sys.stderr)
    return 0


def register(sub: Any) -> None:
    policy = add_command(
        sub,
        "policy",
        cmd_policy,
        help="print the least-privilege IAM policy of the deployer, operator or reader of an environment, or the "
        "trust policy of a CI role (GitHub OIDC)",
        description="Print an IAM policy document computed from the environment's settings: deployer (doctable "
        "deploy: preflight's reads and the CDK bootstrap roles), operator (verify, reconcile, replay, teardown, "
        "ledger, plan, logs, invoke), reader (preflight, ledger, verify --read-only), ci-trust (who may assume the CI "
        "role), execution (what CloudFormation needs, as the bootstrap's execution role, to create, update and "
        "delete the environment's stacks) or boundary (the permissions boundary of every role the stacks create, "
        "and of the execution role). The account and region are the environment's binding, else "
        "--account/--region, else the credentials'.",
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
        "--preview",
        action="store_true",
        help=f"the preview role's: {iam.DEPLOYER} --preview --env TEMPLATE, its policy scoped to the previews' "
        f"names; {CI_TRUST} --preview, its trust of pull-request jobs only",
    )
    policy.add_argument(
        "--workflow",
        metavar="FILE",
        help=f"{CI_TRUST}: the workflow file of .github/workflows the role's jobs run, as main holds it (default: "
        "deploy.yml; with --preview preview-deploy.yml)",
    )
    policy.add_argument(
        "--json", action="store_true", help="print the policy with its target and notes as JSON"
    )
    policy.add_argument(
        "--offline",
        action="store_true",
        help="read nothing from AWS: the buckets are named by the pattern every environment's generated names "
        "share (default: the deployed stack's exact names, when the credentials can read them)",
    )
