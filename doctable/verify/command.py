"""``doctable verify``: the run against one deployed environment, the record kept for the ledger, the result
(doctable/cli/lifecycle.py parses its arguments and renders it)."""

from __future__ import annotations

from contract import names
from doctable.capabilities.ownership import require_owned_table, rolled_back_note
from doctable.core.aws import user_errors
from doctable.core.command import connect_home
from doctable.core.context import state_dir as state_directory
from doctable.core.deployment import require_deployed
from doctable.core.errors import UserError
from doctable.core.ledger import record_ledger, region_hint, save_record
from doctable.core.render import Progress, now_iso
from doctable.core.target import Target
from doctable.verify.checks import DEFAULT_SETTLE, DEFAULT_TIMEOUT, Verifier
from doctable.verify.record import VerifyResult, verify_record

REGION_LEDGER = (
    "--region {region} with --ledger: the ledger records full runs only ({region} is a replica region: its rows "
    "alone run); allowed: --region {region} alone, or --ledger without --region"
)
READ_ONLY_LEDGER = (
    "--read-only with --ledger: the ledger records full runs only (a read-only run skips the checks that write); "
    "allowed: --read-only alone, or --ledger without --read-only"
)


def verify(
    target: Target,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    settle: float = DEFAULT_SETTLE,
    read_only: bool = False,
    ledger: bool = False,
    ledger_dir: str | None = None,
    state_dir: str | None = None,
) -> VerifyResult:
    """The acceptance contract against ``target``'s deployed environment; a full run's record is kept in
    ``state_dir`` (and written to the ledger with ``ledger``). ``target.region`` naming a replica region of the
    global table: that region's rows alone (its replica, consumer, subscribers and nudge), the record not kept."""
    if read_only and ledger:
        raise UserError(READ_ONLY_LEDGER)
    config, aws, deployment, region = connect_home(target, command="verify", regional=True)
    if region is not None and ledger:
        raise UserError(REGION_LEDGER.format(region=region))
    require_deployed(deployment, hint_region=region_hint(ledger_dir, config.table_name))
    with user_errors(f"checking that stack {config.stack_name} owns {deployment.table_name}"):
        # Before one test item is written: never into a table the stack does not own. A read-only run, which
        # writes nothing, still checks only a table the stack owns.
        doing = "verify it read-only" if read_only else "write verify's test items into it"
        require_owned_table(aws, deployment, doing=doing)
    progress = Progress("doctable verify", quiet=target.quiet)
    rolled_back = rolled_back_note(deployment)
    if rolled_back:
        progress.say(rolled_back)
    started = now_iso()
    verifier = Verifier(
        aws, deployment, timeout=timeout, settle=settle, progress=progress, read_only=read_only, region=region
    )
    with user_errors(f"verifying {config.table_name}"):
        rows = verifier.run()
    record = verify_record(
        deployment, rows, started, verifier.run_id, verifier.skipped, read_only=read_only, region=region
    )
    # The environment's dashboard (null for a stack deployed before it had one).
    record["dashboard_url"] = names.dashboard_url(deployment.region, deployment.out(names.OUT_DASHBOARD_NAME))
    # A read-only run, or one region's rows, is not kept: `doctable ledger` reads the last full run's record.
    path = None if read_only or region else save_record(state_directory(state_dir), record)
    if ledger:
        record_ledger(ledger_dir, aws, deployment, record, state_directory=state_dir)
    return VerifyResult.of(
        record, rolled_back=rolled_back, saved_to=None if path is None else str(path), ledger_written=ledger
    )
