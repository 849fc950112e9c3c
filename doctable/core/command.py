"""What every command's entry shares: its registration and common arguments, connecting to the stack, one-line
errors, JSON out."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from contract import names
from doctable.core import previews
from doctable.core.aws import Aws
from doctable.core.context import check_binding, describe_stack, resolve_run
from doctable.core.deployment import Deployment, check_region, require_deployed, use_deployed_knobs
from doctable.core.errors import UserError
from doctable.core.render import Progress
from doctable.core.target import Target

if TYPE_CHECKING:
    from contract.knobs import DocTableConfig
    from contract.settings.resolve import Resolved

# What a replica region's deployment takes from the home stack's outputs: the one table's name, the dashboard
# (every region's rows). Never a bucket or a function: those of the region are its replica stack's.
HOME_OUTPUTS = (names.OUT_TABLE_NAME, names.OUT_DASHBOARD_NAME)
# --region naming a replica region the settings declare but the deployed table has not (yet).
NOT_A_REPLICA = "region.not_a_replica"


def connect(
    target: Target, *, same_region: bool = True, command: str = "", regional: bool = False
) -> tuple[DocTableConfig, Aws, Deployment]:
    """Resolve the settings, open the session (credentials checked first, then the environment's account and
    region binding) and describe the stack; the config returned is the one the stack was deployed with (its
    ``Knobs`` output) whenever it recorded one.

    Settings that differ from the deployed knobs are reported on stderr as pending (``deployment.pending``).
    ``same_region``: refuse a stack whose ARNs name another region or account than the client's. ``command``: the
    command's name, for the progress lines. ``regional``: a ``--region`` naming a replica region of the global
    table gives that region's replica stack (its consumer and subscribers) and a session there.
    """
    config, aws, deployment, replica = connect_home(
        target, same_region=same_region, command=command, regional=regional
    )
    if replica is None:
        return config, aws, deployment
    there = aws.in_region(replica)
    return config, there, in_replica_region(there, deployment)


def connect_home(
    target: Target, *, same_region: bool = True, command: str = "", regional: bool = False
) -> tuple[DocTableConfig, Aws, Deployment, str | None]:
    """:func:`connect` in the home region, and the replica region ``--region`` names (``regional`` only; None
    when it names none: the home region, or an environment that is no global table)."""
    target = previews.reach(target)  # --env pr-12: the deployed preview of that name
    resolved = resolve_run(target)
    replica = target.region if regional and target.region in resolved.config.replicas else None
    aws = connect_aws(replace(target, region=None) if replica else target, resolved)
    deployment = use_settings(use_deployed_knobs(describe_stack(aws, resolved.config)), resolved)
    if same_region:
        check_region(deployment)
    report_knobs(
        deployment,
        Progress(f"doctable {command}".rstrip()),
        quiet=target.quiet,
    )
    if replica is not None:
        require_deployed(deployment)
        if replica not in deployment.config.replicas:
            raise UserError(
                f"--region {replica}: the deployed table {deployment.table_name} has no replica there; its "
                f"replica regions: {', '.join(deployment.config.replicas) or 'none'} (deploy the settings first: "
                f"doctable deploy --env {deployment.config.env})",
                {"code": NOT_A_REPLICA},
            )
        if replica == deployment.region:
            replica = None
    return deployment.config, aws, deployment, replica


def in_replica_region(there: Aws, home: Deployment) -> Deployment:
    """The replica stack in ``there``'s region of the global table ``home`` describes: the home stack's knobs,
    the replica stack's status and outputs (with the home stack's dashboard, which shows every region); one line
    when that region has no stack (no consumer or subscriber runs there)."""
    regional = describe_stack(there, home.config, home_region=home.region)
    if not regional.exists:
        runs = "" if home.config.builtin_consumer else " (the built-in consumer is off: nothing runs there)"
        raise UserError(
            f"stack {regional.stack_name} is not deployed in {there.region}{runs}; a replica region's consumer "
            f"and subscribers come with the home stack's deploy: doctable deploy --env {home.config.env}"
        )
    home_outputs = {k: v for k, v in home.outputs.items() if k in HOME_OUTPUTS}
    return replace(
        home,
        region=regional.region,
        stack_id=regional.stack_id,
        stack_status=regional.stack_status,
        status_reason=regional.status_reason,
        outputs={**home_outputs, **regional.outputs},
        last_updated=regional.last_updated,
        home_region=home.region,
    )


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
