"""``doctable watch --env dev``: the consumer's inner loop on the local AWS. Each change under
``functions/stream_consumer/`` is staged as the stack's asset is (contract/asset.py) and sent with Lambda's
UpdateFunctionCode, as ``cdk deploy --hotswap`` does: no CloudFormation update, so the next batch runs the new
code within a couple of seconds.

It refuses an environment not on the local AWS: on AWS, code changed behind the stack is drift that the next
deploy overwrites, which is what ``doctable deploy`` is for. And it refuses the shapes whose code is not the
function's $LATEST zip alone: ``snapstart=on`` (the mapping's alias targets a published version) and
``powertools=bundled`` (the asset carries Powertools too).
"""

from __future__ import annotations

import argparse
import io
import os
import tempfile
import time
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from contract import names
from contract.asset import stage_package
from contract.knobs import DEPLOY_LOCAL, PROJECT_ROOT, DocTableConfig
from doctable.core.aws import Aws, user_errors
from doctable.core.command import add_command, connect, print_json
from doctable.core.deployment import require_deployed
from doctable.core.errors import RefusedError, UserError
from doctable.core.render import Progress

SOURCE = PROJECT_ROOT / "functions" / "stream_consumer"
POLL_SECONDS = 0.25
UPDATE_BOUND = 60.0  # seconds an UpdateFunctionCode may take to be Successful
ENDPOINT_VARIABLE = "AWS_ENDPOINT_URL"


def fingerprint(source: Path) -> tuple[tuple[str, int, int], ...]:
    """Each Python file under ``source`` with its size and modification time: what a change changes."""
    return tuple(
        (str(p.relative_to(source)), p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(source.rglob("*.py"))
        if "__pycache__" not in p.parts
    )


def package_zip(source: Path, build: Path) -> bytes:
    """The function's zip for the sources in ``source``, staged exactly as synth stages the asset."""
    stage = stage_package(source, build)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(p for p in stage.rglob("*") if p.is_file()):
            archive.write(path, str(path.relative_to(stage)))
    return buffer.getvalue()


def refusal(config: DocTableConfig, environ: Mapping[str, str]) -> str | None:
    """Why this environment's code cannot be hot-swapped; None when it can."""
    if not config.builtin_consumer:
        return f"consumer={config.consumer}: the stack deploys no consumer function of its own to update"
    if config.deploy_target != DEPLOY_LOCAL or not environ.get(ENDPOINT_VARIABLE):
        return (
            "watch updates code behind the stack, which on AWS is drift the next deploy overwrites: it runs on the "
            "local AWS only (`doctable local run -- doctable watch ...`); on AWS, `doctable deploy`"
        )
    if config.snapstart:
        return "snapstart=on: the mapping invokes a published version, not $LATEST; deploy instead"
    if config.bundles_powertools:
        return "powertools=bundled: the asset carries Powertools too; watch supports powertools=layer"
    return None


def push(aws: Aws, function: str, code: bytes, *, bound: float = UPDATE_BOUND) -> float:
    """UpdateFunctionCode, then wait until Lambda says the update is done; the seconds it took."""
    lam = aws.client("lambda")
    started = time.monotonic()
    with user_errors(f"updating the code of {function}"):
        lam.update_function_code(FunctionName=function, ZipFile=code)
        while True:
            status = lam.get_function_configuration(FunctionName=function).get(
                "LastUpdateStatus", "Successful"
            )
            if status == "Successful":
                return time.monotonic() - started
            if status == "Failed" or time.monotonic() - started > bound:
                raise UserError(f"the code update of {function} is {status} after {bound:.0f}s")
            time.sleep(POLL_SECONDS)


def watch(
    source: Path,
    send: Callable[[bytes], float],
    say: Callable[[str], None],
    *,
    build: Path,
    once: bool,
    stop: Callable[[], bool] = lambda: False,
) -> list[dict[str, Any]]:
    """Send the code now, then again at each change of ``source`` (until ``stop()``, or at once with ``once``).
    Each update as {files, seconds}."""
    updates: list[dict[str, Any]] = []
    seen = fingerprint(source)
    while True:
        started = time.monotonic()
        seconds = send(package_zip(source, build))
        total = time.monotonic() - started
        updates.append(
            {"files": len(seen), "staged_and_sent_seconds": round(total, 3), "update_seconds": seconds}
        )
        say(f"updated the consumer's code ({len(seen)} files) in {total:.2f}s")
        if once:
            return updates
        while not stop():
            time.sleep(POLL_SECONDS)
            now = fingerprint(source)
            if now != seen:
                seen = now
                break
        else:
            return updates


def cmd_watch(args: argparse.Namespace) -> int:
    config, aws, deployment = connect(args)
    require_deployed(deployment)
    problem = refusal(config, os.environ)
    if problem:
        raise RefusedError(f"doctable watch: {problem}")
    function = deployment.out(names.OUT_CONSUMER_FUNCTION_NAME)
    if not function:
        raise UserError(
            f"stack {config.stack_name} has no {names.OUT_CONSUMER_FUNCTION_NAME} output: redeploy it"
        )
    source = Path(args.source).resolve()
    if not (source / "handler.py").is_file():
        raise UserError(f"--source {args.source}: not the consumer's package (no handler.py there)")
    progress = Progress("doctable watch", quiet=args.quiet)
    if not args.once:
        progress.say(f"watching {source} for {function}; Ctrl-C stops")
    with tempfile.TemporaryDirectory(prefix="doctable-watch-") as build:
        try:
            updates = watch(
                source,
                lambda code: push(aws, function, code),
                progress.say,
                build=Path(build),
                once=args.once,
            )
        except KeyboardInterrupt:
            return 0
    if args.json:
        print_json(
            {"kind": "doctable-watch", "function": function, "source": str(source), "updates": updates}
        )
    return 0


def register(sub: Any) -> None:
    parser = add_command(
        sub,
        "watch",
        cmd_watch,
        help="on the local AWS: send each change under functions/ to the deployed consumer (UpdateFunctionCode)",
        description="The consumer's inner loop: stage functions/stream_consumer as the stack's asset is staged "
        "and update the deployed function's code with it, now and at every change, without a CloudFormation "
        "update (as cdk deploy --hotswap). Local AWS only; refuses snapstart=on and powertools=bundled.",
        json_help="with --once, print the update as JSON",
    )
    parser.add_argument(
        "--source", default=str(SOURCE), help="the consumer package to send (default: %(default)s)"
    )
    parser.add_argument("--once", action="store_true", help="send the code once and exit (no watching)")
