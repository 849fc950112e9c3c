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

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contract import names
from contract.iam import execution as iam_execution
from contract.iam import policies as iam
from contract.settings import preview as preview_rules
from contract.settings.resolve import FILE_NAME, SettingsFile, load_settings
from doctable.core.aws import Aws
from doctable.core.context import describe_stack, resolve_run
from doctable.core.errors import UserError

if TYPE_CHECKING:
    from contract.settings.resolve import Resolved
    from doctable.core.target import Target

CI_TRUST = "ci-trust"
EXECUTION, BOUNDARY = "execution", "boundary"
KINDS = (*iam.ROLES, CI_TRUST, EXECUTION, BOUNDARY)
ACCOUNT_RE = re.compile(r"^\d{12}$")


def policy_target(target: Target, resolved: Resolved, account: str | None) -> tuple[iam.Target, list[str]]:
    """Where the policies apply (``account``, else the binding, else the credentials'), and how the account and
    region were found (one line each)."""
    env = resolved.config.env
    region = target.region
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
            aws = Aws.connect(region, profile=target.profile)
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


def with_deployed_buckets(
    target: iam.Target, *, profile: str | None, offline: bool
) -> tuple[iam.Target, str | None]:
    """The target with the deployed stack's bucket names, or unchanged with why they could not be read (with
    bucket_names=exact the settings name them: nothing is read; ``offline``: nothing is read either)."""
    if target.config.exact_bucket_names:
        return target, None
    if offline:
        return target, "--offline"
    try:
        aws = Aws.connect(target.region, profile=profile)
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


@dataclass(frozen=True)
class PolicyResult:
    """A policy document (or, for ``execution``, the documents) computed from the settings, with its target and
    the notes a reader of it should know."""

    role: str  # deployer | operator | reader | ci-trust | execution | boundary | preview (deployer --preview)
    env: str  # the environment (with ``preview``: the template)
    account: str
    region: str | None  # None for ci-trust (a trust policy names no region)
    policy: (
        Mapping[str, Any] | None
    )  # the document (the first, for an execution policy of several); None: no AWS
    policies: tuple[Mapping[str, Any], ...]  # every document (one, except an execution policy of several)
    notes: tuple[str, ...]
    document: Mapping[str, Any]  # what --json prints: the policy with its target and notes

    def to_json(self) -> dict[str, Any]:
        return dict(self.document)


def policy(
    target: Target,
    kind: str,
    *,
    account: str | None = None,
    part: str | None = None,
    repo: str | None = None,
    preview: bool = False,
    workflow: str | None = None,
    offline: bool = False,
) -> PolicyResult:
    """The ``kind`` policy of ``target``'s environment (one of KINDS); ``part``: one command's part of a role's
    policy; ``repo`` and ``workflow``: ci-trust's GitHub repository and workflow file; ``preview``: the previews'
    (deployer, ci-trust, execution, boundary); ``offline``: read no bucket name from AWS."""
    if kind not in KINDS:
        raise UserError(f"policy {kind!r}: use one of {', '.join(KINDS)}")
    if kind == CI_TRUST:
        return _ci_trust(target, account=account, part=part, repo=repo, preview=preview, workflow=workflow)
    if kind in (EXECUTION, BOUNDARY):
        if part or repo:
            raise UserError(f"--command and --repo are not options of `doctable policy {kind}`")
        return _bootstrap_policy(target, kind, account=account, preview=preview, offline=offline)
    if preview:
        return _preview_policy(target, kind, account=account)
    if repo:
        raise UserError(f"--repo is for `doctable policy {CI_TRUST}`, not the {kind}'s policy")
    resolved = resolve_run(target)
    try:
        commands = iam.role_commands(kind, part)
    except iam.PolicyError as exc:
        raise UserError(str(exc)) from exc
    where, sources = policy_target(target, resolved, account)
    where, unread = with_deployed_buckets(where, profile=target.profile, offline=offline)
    statements = iam.role_statements(kind, where, part)
    notes = sources + notes_of(where, statements, unread)
    if "verify" in commands and iam.part_of(kind, "verify") == iam.VERIFY_READ_ONLY:
        notes.append(
            f"the {kind}'s verify is `doctable verify --read-only`: the checks that write are skipped"
        )
    document = iam.policy_document(statements) if statements else None
    if document is None:
        notes.append(f"{' and '.join(commands)} makes no AWS call: no policy is needed")
    return _result(
        kind, where, document, notes,
        {
            "kind": "doctable-policy",
            "role": kind,
            "commands": list(commands),
            "env": where.config.env,
            "stack": where.stack,
            "table": where.config.table_name,
            "account": where.account,
            "region": where.region,
            "partition": where.partition,
            "policy": document,
            "size": iam.document_size(document) if document else 0,
            "unscoped": [s.sid for s in iam.unscoped(statements)],
            "buckets": {"exact": where.exact_buckets, "failure": where.failure_bucket, "blob": where.blob_bucket},
            "notes": notes,
        },
    )  # fmt: skip


def _result(
    role: str,
    where: iam.Target,
    document: dict[str, Any] | None,
    notes: list[str],
    shown: dict[str, Any],
    *,
    documents: list[dict[str, Any]] | None = None,
    region: bool = True,
) -> PolicyResult:
    return PolicyResult(
        role=role,
        env=where.config.env,
        account=where.account,
        region=where.region if region else None,
        policy=document,
        policies=tuple(documents if documents is not None else [document] if document is not None else []),
        notes=tuple(notes),
        document=shown,
    )


def _ci_trust(
    target: Target,
    *,
    account: str | None,
    part: str | None,
    repo: str | None,
    preview: bool,
    workflow: str | None,
) -> PolicyResult:
    if not repo:
        raise UserError(f"`doctable policy {CI_TRUST}` needs --repo OWNER/NAME (the GitHub repository)")
    if part:
        raise UserError(f"--command is for the roles' policies ({'|'.join(iam.ROLES)}), not {CI_TRUST}")
    resolved = resolve_run(target)
    where, sources = policy_target(target, resolved, account)
    env = where.config.env
    try:
        document = iam.ci_trust_policy(
            account=where.account,
            repo=repo,
            env=env,
            tier=where.config.tier,
            partition=where.partition,
            preview=preview,
            workflow=workflow,
        )
    except iam.PolicyError as exc:
        raise UserError(str(exc)) from exc
    # IAM reads only `sub` of GitHub's claims: the workflow file is pinned through it, once the repository's
    # subject template includes job_workflow_ref.
    sources = [*sources, f"the subjects name the workflow file (job_workflow_ref): set the repository's OIDC "
               f"subject template once with: {iam.subject_command(repo)}"]  # fmt: skip
    return _result(
        CI_TRUST, where, document, sources,
        {
            "kind": "doctable-policy",
            "role": CI_TRUST,
            "repo": repo,
            "env": env,
            "tier": where.config.tier,
            "account": where.account,
            "policy": document,
            "subject_template": iam.SUBJECT_TEMPLATE,
            "subject_command": iam.subject_command(repo),
            "notes": sources,
        },
        region=False,
    )  # fmt: skip


def bootstrap_target(
    target: Target, *, account: str | None, preview: bool, offline: bool
) -> tuple[iam.Target, list[str]]:
    """The target of the execution policy and the boundary: the environment's, or with ``preview`` every
    preview's of the template (their names' patterns, [previews]' qualifier)."""
    resolved = resolve_run(target)
    where, sources = policy_target(target, resolved, account)
    where, unread = with_deployed_buckets(where, profile=target.profile, offline=offline)
    if unread and not where.exact_buckets:
        sources.append(f"the buckets are named by the pattern of generated names ({unread})")
    if not preview:
        return where, sources
    settings = load_settings(resolved.path) if resolved.path else SettingsFile(path=Path(FILE_NAME))
    pattern = preview_rules.pattern_config(resolved.config, settings.preview_prefix)
    problems = preview_rules.borrowed_problems(pattern, resolved.config.env)
    if problems:
        raise UserError("; ".join(problems))
    qualifier = settings.previews.qualifier or where.qualifier
    return dataclasses.replace(where, config=pattern, qualifier=qualifier), sources


def _bootstrap_policy(
    target: Target, kind: str, *, account: str | None, preview: bool, offline: bool
) -> PolicyResult:
    """``doctable policy execution|boundary``: the CloudFormation execution policy of the environment's stacks,
    or the permissions boundary of the roles they create (contract/iam/execution.py)."""
    where, sources = bootstrap_target(target, account=account, preview=preview, offline=offline)
    if kind == EXECUTION:
        documents = iam_execution.execution_documents(where)
        named = iam_execution.execution_names(where)
        if len(documents) > 1:
            sources.append(
                f"the execution policy takes {len(documents)} managed policies ({', '.join(named)})"
            )
    else:
        documents = [iam_execution.boundary_document(where)]
        named = [iam_execution.policy_name(where, BOUNDARY)]
    sizes = [iam.document_size(d) for d in documents]
    if max(sizes) > iam.MANAGED_POLICY_LIMIT:
        sources.append(
            f"{max(sizes)} characters: more than a managed policy holds ({iam.MANAGED_POLICY_LIMIT})"
        )
    return _result(
        kind, where, documents[0], sources,
        {
            "kind": "doctable-policy",
            "role": kind,
            "env": where.config.env,
            "stack": where.stack,
            "account": where.account,
            "region": where.region,
            "qualifier": where.qualifier,
            "name": named[0],
            "names": named,
            "arns": [where.arn("iam", f"policy/{n}", region=False) for n in named],
            "policy": documents[0],
            "policies": documents,
            "size": sizes[0],
            "sizes": sizes,
            "unscoped": [s["Sid"] for d in documents for s in d["Statement"] if s.get("Resource") == ["*"]],
            "notes": sources,
        },
        documents=documents,
    )  # fmt: skip


def _preview_policy(target: Target, kind: str, *, account: str | None) -> PolicyResult:
    """``doctable policy deployer --preview --env TEMPLATE``: the preview role's policy, scoped to the names every
    preview of the template has (``<prefix>*``: contract.settings.preview.pattern_config)."""
    if kind != iam.DEPLOYER:
        raise UserError(
            f"--preview is for `doctable policy {iam.DEPLOYER}` and `{CI_TRUST}`, not the {kind}'s"
        )
    resolved = resolve_run(target)
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
    where, sources = policy_target(target, resolved, account)
    qualifier = settings.previews.qualifier or where.qualifier
    where = dataclasses.replace(where, config=pattern, qualifier=qualifier)
    statements = iam.preview_statements(where)
    document = iam.policy_document(statements)
    shown = {
        "kind": "doctable-policy",
        "role": "preview",
        "template": config.env,
        "stack": where.stack,
        "table": where.config.table_name,
        "account": where.account,
        "region": where.region,
        "policy": document,
        "size": iam.document_size(document),
        "unscoped": [s.sid for s in iam.unscoped(statements)],
        "notes": sources,
    }
    result = _result("preview", where, document, sources, shown)
    return dataclasses.replace(result, env=config.env)
