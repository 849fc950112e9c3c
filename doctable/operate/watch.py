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

import io
import os
import tempfile
import time
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contract import names
from contract.knobs import DEPLOY_LOCAL, PROJECT_ROOT, DocTableConfig
from contract.subscribers import SubscriberSpec
from doctable.core.aws import Aws, user_errors
from doctable.core.command import connect
from doctable.core.deployment import Deployment, require_deployed, subscriber_output
from doctable.core.errors import RefusedError, UserError
from doctable.core.render import Progress
from tooling import wheelhouse
from tooling.asset import stage_package, stage_subscriber

if TYPE_CHECKING:
    from doctable.core.target import Target

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


def watch_source(
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
    sent: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Send ``code()`` now, then again each time ``changes()`` answers something else (until ``stop()``, or at once
    with ``once``). Code that cannot be staged (ValueError: a handler file with a syntax error) is not sent: said,
    and watched until the next change; with ``once``, a UserError. Each update as {files, seconds}, appended to
    ``sent`` when given (so what was sent before a Ctrl-C is known)."""
    updates: list[dict[str, Any]] = [] if sent is None else sent
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


@dataclass(frozen=True)
class WatchUpdate:
    """One code update sent: the files it was staged from and how long it took."""

    files: int
    staged_and_sent_seconds: float  # staging, zipping and UpdateFunctionCode until Successful
    update_seconds: float  # UpdateFunctionCode until Lambda said Successful

    def as_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "staged_and_sent_seconds": self.staged_and_sent_seconds,
            "update_seconds": self.update_seconds,
        }


@dataclass(frozen=True)
class WatchResult:
    """What a watch sent, once it ended (``once``, ``stop()`` or Ctrl-C)."""

    function: str
    subscriber: str | None
    source: str  # the package (or the subscriber's handler file) watched
    updates: tuple[WatchUpdate, ...]
    interrupted: bool = False  # ended by Ctrl-C (KeyboardInterrupt), not by ``once`` or ``stop()``

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "doctable-watch",
            "function": self.function,
            "subscriber": self.subscriber,
            "source": self.source,
            "updates": [update.as_dict() for update in self.updates],
        }


def watch(
    target: Target,
    *,
    source: str | None = None,
    subscriber: str | None = None,
    once: bool = False,
    stop: Callable[[], bool] | None = None,
) -> WatchResult:
    """Send the consumer's code (the package ``source``, default functions/stream_consumer), or subscriber
    ``subscriber``'s handler file with doctable's wrapper, to its deployed function now and at each change:
    until ``stop()`` answers true (asked every 0.25 s between changes) or Ctrl-C, or at once with ``once``."""
    if source is not None and subscriber is not None:
        raise UserError(
            "--source and --subscriber: give one (the consumer's package, or a subscriber's file)"
        )
    config, aws, deployment = connect(target, command="watch", regional=True)
    require_deployed(deployment)
    progress = Progress("doctable watch", quiet=target.quiet)
    ended = stop or (lambda: False)
    if subscriber:
        return _watch_subscriber(subscriber, aws, deployment, progress, once=once, stop=ended)
    problem = refusal(config, os.environ)
    if problem:
        raise RefusedError(f"doctable watch: {problem}")
    function = deployment.out(names.OUT_CONSUMER_FUNCTION_NAME)
    if not function:
        raise UserError(
            f"stack {deployment.stack_name} has no {names.OUT_CONSUMER_FUNCTION_NAME} output: redeploy it"
        )
    package = Path(source or SOURCE).resolve()
    if not (package / "handler.py").is_file():
        raise UserError(f"--source {source}: not the consumer's package (no handler.py there)")
    if not once:
        progress.say(f"watching {package} for {function}; Ctrl-C stops")
    updates: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="doctable-watch-") as build:
        try:
            updates = send_on_change(
                lambda: fingerprint(package),
                lambda: package_zip(package, Path(build)),
                lambda code: push(aws, function, code),
                progress.say,
                what="the consumer's code",
                once=once,
                stop=ended,
                sent=updates,
            )
        except KeyboardInterrupt:
            return _result(function, None, package, updates, interrupted=True)
    return _result(function, None, package, updates)


def _watch_subscriber(
    name: str,
    aws: Aws,
    deployment: Deployment,
    progress: Progress,
    *,
    once: bool,
    stop: Callable[[], bool],
) -> WatchResult:
    """``watch --subscriber NAME``: the subscriber's handler file, staged with the wrapper, to its function."""
    function, spec = subscriber_source(deployment, name)
    problem = subscriber_refusal(deployment.config, os.environ)
    if problem:
        raise RefusedError(f"doctable watch: {problem}")
    source, requirements = Path(spec.path), spec.requirements_path
    config = deployment.config
    architecture = spec.option("architecture") or config.architecture
    platform = wheelhouse.platform_for(architecture, local=config.is_local)  # as synth stages it
    if not once:
        progress.say(f"watching {source} for subscriber {name}'s function {function}; Ctrl-C stops")
    updates: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="doctable-watch-") as build:
        try:
            send_on_change(
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
                once=once,
                stop=stop,
                sent=updates,
            )
        except KeyboardInterrupt:
            return _result(function, name, source, updates, interrupted=True)
    return _result(function, name, source, updates)


def _result(
    function: str,
    subscriber: str | None,
    source: Path,
    updates: list[dict[str, Any]],
    *,
    interrupted: bool = False,
) -> WatchResult:
    return WatchResult(
        function=function,
        subscriber=subscriber,
        source=str(source),
        updates=tuple(WatchUpdate(**update) for update in updates),
        interrupted=interrupted,
    )
