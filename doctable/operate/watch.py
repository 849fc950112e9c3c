"""``doctable watch --env dev``: the consumer's inner loop on the local AWS. Each change under
``functions/stream_consumer/`` is staged as the stack's asset is (tooling/asset.py) and sent with Lambda's
UpdateFunctionCode, as ``cdk deploy --hotswap`` does: no CloudFormation update, so the next batch runs the new
code within a couple of seconds. ``--subscriber NAME`` does the same for a subscriber: each change of its handler
file (the settings file's declaration) is staged with doctable's wrapper as synth stages it
(``tooling.asset.stage_subscriber``) and sent to the subscriber's function.

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
from contract.knobs import DEPLOY_LOCAL, PROJECT_ROOT, DocTableConfig
from contract.subscribers import SubscriberSpec
from doctable.core.aws import Aws, user_errors
from doctable.core.command import add_command, connect, print_json
from doctable.core.deployment import Deployment, require_deployed, subscriber_output
from doctable.core.errors import RefusedError, UserError
from doctable.core.render import Progress
from tooling import wheelhouse
from tooling.asset import stage_package, stage_subscriber

SOURCE = PROJECT_ROOT / "functions" / "stream_consumer"
SUBSCRIBER_RUNTIME = PROJECT_ROOT / "functions" / names.SUBSCRIBER_RUNTIME_PACKAGE  # doctable's wrapper
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


def file_fingerprint(path: Path) -> tuple[tuple[str, int, int], ...]:
    """One file with its size and modification time (none while it is missing, as an editor's save leaves it)."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return ()
    return ((path.name, stat.st_size, stat.st_mtime_ns),)


def package_zip(source: Path, build: Path) -> bytes:
    """The function's zip for the sources in ``source``, staged exactly as synth stages the asset."""
    return zip_directory(stage_package(source, build))


def subscriber_zip(
    handler_file: Path,
    function: str,
    build: Path,
    *,
    requirements: str = "",
    platform: wheelhouse.Platform | None = None,
    extra_indexes: tuple[str, ...] = (),
) -> bytes:
    """A subscriber function's zip: doctable's wrapper, the team's handler file and its ``requirements`` installed
    for ``platform`` (from the project's wheelhouse cache), staged as synth stages them; ValueError of one line for
    a file that is missing or not valid Python, or requirements without a wheel."""
    stage, _handler = stage_subscriber(
        SUBSCRIBER_RUNTIME, handler_file.name, function, handler_file.parent, build,
        requirements=requirements, platform=platform, cache=PROJECT_ROOT / "build" / wheelhouse.CACHE,
        extra_indexes=extra_indexes,
    )  # fmt: skip
    return zip_directory(stage)


def zip_directory(stage: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(p for p in stage.rglob("*") if p.is_file()):
            archive.write(path, str(path.relative_to(stage)))
    return buffer.getvalue()


LOCAL_ONLY = (
    "watch updates code behind the stack, which on AWS is drift the next deploy overwrites: it runs on the "
    "local AWS only (`doctable local run -- doctable watch ...`); on AWS, `doctable deploy`"
)


def refusal(config: DocTableConfig, environ: Mapping[str, str]) -> str | None:
    """Why this environment's code cannot be hot-swapped; None when it can."""
    if not config.builtin_consumer:
        return f"consumer={config.consumer}: the stack deploys no consumer function of its own to update"
    if config.deploy_target != DEPLOY_LOCAL or not environ.get(ENDPOINT_VARIABLE):
        return LOCAL_ONLY
    if config.snapstart:
        return "snapstart=on: the mapping invokes a published version, not $LATEST; deploy instead"
    if config.bundles_powertools:
        return "powertools=bundled: the asset carries Powertools too; watch supports powertools=layer"
    return None


def subscriber_refusal(config: DocTableConfig, environ: Mapping[str, str]) -> str | None:
    """Why a subscriber's code cannot be hot-swapped (its function runs $LATEST with the Powertools layer, whatever
    the consumer's snapstart and powertools knobs): off the local AWS only."""
    if config.deploy_target != DEPLOY_LOCAL or not environ.get(ENDPOINT_VARIABLE):
        return LOCAL_ONLY
    return None


def subscriber_source(deployment: Deployment, name: str) -> tuple[str, SubscriberSpec]:
    """Subscriber ``name``'s function and its declaration in the settings file (its handler file); UserError of one
    line when the stack has no such subscriber (the declared ones named), the settings no longer declare it, or
    they declare another handler than the one deployed (the function's handler setting would not find it)."""
    function = subscriber_output(deployment, name, names.OUT_SUBSCRIBER_FUNCTION)
    deployed = next(s for s in deployment.config.subscribers if s.name == name)
    declared = next((s for s in deployment.target.subscribers if s.name == name and s.path), None)
    env = deployment.config.env
    if declared is None:
        raise UserError(
            f"subscriber {name!r} is deployed but the settings file does not declare it, so its handler file is "
            f"unknown: declare it again, or deploy to remove it (doctable deploy --env {env})"
        )
    if (declared.handler_file, declared.function) != (deployed.handler_file, deployed.function):
        raise UserError(
            f"subscriber {name!r}: the settings declare handler {declared.handler_file}:{declared.function}, the "
            f"stack has {deployed.handler_file}:{deployed.function}: deploy the new handler (doctable deploy "
            f"--env {env})"
        )
    return function, declared


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
    return send_on_change(
        lambda: fingerprint(source),
        lambda: package_zip(source, build),
        send,
        say,
        what="the consumer's code",
        once=once,
        stop=stop,
    )


def send_on_change(
    changes: Callable[[], tuple[Any, ...]],
    code: Callable[[], bytes],
    send: Callable[[bytes], float],
    say: Callable[[str], None],
    *,
    what: str,
    once: bool,
    stop: Callable[[], bool] = lambda: False,
) -> list[dict[str, Any]]:
    """Send ``code()`` now, then again each time ``changes()`` answers something else (until ``stop()``, or at once
    with ``once``). Code that cannot be staged (ValueError: a handler file with a syntax error) is not sent: said,
    and watched until the next change; with ``once``, a UserError. Each update as {files, seconds}."""
    updates: list[dict[str, Any]] = []
    seen = changes()
    while True:
        started = time.monotonic()
        try:
            staged = code()
        except ValueError as exc:
            if once:
                raise UserError(f"doctable watch: {exc}") from None
            say(f"not sent: {exc}; waiting for the next change")
        else:
            seconds = send(staged)
            total = time.monotonic() - started
            updates.append(
                {"files": len(seen), "staged_and_sent_seconds": round(total, 3), "update_seconds": seconds}
            )
            say(f"updated {what} ({len(seen)} files) in {total:.2f}s")
            if once:
                return updates
        while not stop():
            time.sleep(POLL_SECONDS)
            now = changes()
            if now != seen:
                seen = now
                break
        else:
            return updates


def cmd_watch(args: argparse.Namespace) -> int:
    config, aws, deployment = connect(args)
    require_deployed(deployment)
    if args.subscriber:
        return _watch_subscriber(args, aws, deployment)
    problem = refusal(config, os.environ)
    if problem:
        raise RefusedError(f"doctable watch: {problem}")
    function = deployment.out(names.OUT_CONSUMER_FUNCTION_NAME)
    if not function:
        raise UserError(
            f"stack {config.stack_name} has no {names.OUT_CONSUMER_FUNCTION_NAME} output: redeploy it"
        )
    source = Path(args.source or SOURCE).resolve()
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
    _report(args, function, source, updates, None)
    return 0


def _watch_subscriber(args: argparse.Namespace, aws: Aws, deployment: Deployment) -> int:
    """``watch --subscriber NAME``: the subscriber's handler file, staged with the wrapper, to its function."""
    name = args.subscriber
    function, spec = subscriber_source(deployment, name)
    problem = subscriber_refusal(deployment.config, os.environ)
    if problem:
        raise RefusedError(f"doctable watch: {problem}")
    source, requirements = Path(spec.path), spec.requirements_path
    config = deployment.config
    architecture = spec.option("architecture") or config.architecture
    platform = wheelhouse.platform_for(architecture, local=config.is_local)  # as synth stages it
    progress = Progress("doctable watch", quiet=args.quiet)
    if not args.once:
        progress.say(f"watching {source} for subscriber {name}'s function {function}; Ctrl-C stops")
    with tempfile.TemporaryDirectory(prefix="doctable-watch-") as build:
        try:
            updates = send_on_change(
                lambda: (
                    file_fingerprint(source) + (file_fingerprint(Path(requirements)) if requirements else ())
                ),
                lambda: subscriber_zip(
                    source,
                    spec.function,
                    Path(build),
                    requirements=requirements,
                    platform=platform,
                    extra_indexes=spec.extra_index_urls,
                ),
                lambda code: push(aws, function, code),
                progress.say,
                what=f"subscriber {name}'s code",
                once=args.once,
            )
        except KeyboardInterrupt:
            return 0
    _report(args, function, source, updates, name)
    return 0


def _report(
    args: argparse.Namespace,
    function: str,
    source: Path,
    updates: list[dict[str, Any]],
    subscriber: str | None,
) -> None:
    if args.json:
        print_json(
            {"kind": "doctable-watch", "function": function, "subscriber": subscriber, "source": str(source),
             "updates": updates}
        )  # fmt: skip


def register(sub: Any) -> None:
    parser = add_command(
        sub,
        "watch",
        cmd_watch,
        help="on the local AWS: send each change under functions/ (or of a subscriber's handler) to the deployed "
        "function (UpdateFunctionCode)",
        description="The consumer's inner loop: stage functions/stream_consumer as the stack's asset is staged "
        "and update the deployed function's code with it, now and at every change, without a CloudFormation "
        "update (as cdk deploy --hotswap). Local AWS only; refuses snapstart=on and powertools=bundled. With "
        "--subscriber NAME: the subscriber's handler file (as the settings file declares it) with doctable's "
        "wrapper, to the subscriber's function.",
        json_help="with --once, print the update as JSON",
    )
    code = parser.add_mutually_exclusive_group()
    code.add_argument("--source", help=f"the consumer package to send (default: {SOURCE})")
    code.add_argument(
        "--subscriber", metavar="NAME", help="send this subscriber's handler file to its function instead"
    )
    parser.add_argument("--once", action="store_true", help="send the code once and exit (no watching)")
