"""What every command's entry shares: its registration and common arguments, connecting to the stack, one-line
errors, JSON out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from doctable.core import previews
from doctable.core.aws import Aws
from doctable.core.context import check_binding, describe_stack, resolve_run
from doctable.core.deployment import Deployment, check_region, use_deployed_knobs
from doctable.core.render import Progress
from doctable.core.target import Target

if TYPE_CHECKING:
    from contract.knobs import DocTableConfig
    from contract.settings.resolve import Resolved


def connect(
    target: Target, *, same_region: bool = True, command: str = ""
) -> tuple[DocTableConfig, Aws, Deployment]:
    """Resolve the settings, open the session (credentials checked first, then the environment's account and
    region binding) and describe the stack; the config returned is the one the stack was deployed with (its
    ``Knobs`` output) whenever it recorded one.

    Settings that differ from the deployed knobs are reported on stderr as pending (``deployment.pending``).
    ``same_region``: refuse a stack whose ARNs name another region or account than the client's. ``command``: the
    command's name, for the progress lines.
    """
    target = previews.reach(target)  # --env pr-12: the deployed preview of that name
    resolved = resolve_run(target)
    aws = connect_aws(target, resolved)
    deployment = use_settings(use_deployed_knobs(describe_stack(aws, resolved.config)), resolved)
    if same_region:
        check_region(deployment)
    report_knobs(
        deployment,
        Progress(f"doctable {command}".rstrip()),
        quiet=target.quiet,
    )
    return deployment.config, aws, deployment


def use_settings(deployment: Deployment, resolved: Resolved) -> Deployment:
    """What the settings say beside the knobs: this run's overrides, the environment's account binding and every
    declared environment's stack (preflight's environment findings read them)."""
    deployment.overrides = resolved.overrides
    deployment.bound_account = resolved.account
    deployment.qualifier = resolved.qualifier
    deployment.declared_stacks = dict(resolved.stacks)
    deployment.preview_prefix = resolved.preview_prefix
    return deployment


def connect_aws(target: Target, resolved: Resolved) -> Aws:
    """The session for ``target`` (its profile, its region, else the environment's), its identity checked
    against the environment's binding."""
    aws = Aws.connect(target.region or resolved.region, profile=target.profile)
    aws.identity()
    check_binding(resolved, aws)
    return aws


def report_knobs(deployment: Deployment, progress: Progress, *, quiet: bool = False) -> None:
    """One stderr line per pending knob (even when ``quiet``: a knob that is not live yet must never pass
    unnoticed), and, unless ``quiet``, the note on where the knobs came from."""
    for pending in deployment.pending:
        progress.say(f"{pending.text()} — pending: deploy to apply")
    if deployment.knob_note and not quiet:
        progress.say(deployment.knob_note)
