"""The environment's lock (doctable/lifecycle/lock.py) as the commands take it: from a :class:`Target` (its
settings resolved, the session connected and checked against the environment's binding, the lock in that
account's and region's bootstrap bucket of the environment's qualifier), and ``--wait DURATION`` read."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from contract.iam.lock import lock_bucket, lock_key
from doctable.core.command import connect_aws
from doctable.core.context import resolve_run
from doctable.core.errors import UserError
from doctable.core.render import Progress
from doctable.core.target import Target
from doctable.lifecycle.lock import LEASE_SECONDS, HeldLock, LockHolder, LockRef, break_lock, holding

if TYPE_CHECKING:
    from contract.settings.resolve import Resolved
    from doctable.core.aws import Aws

P = ParamSpec("P")
R = TypeVar("R")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h)?\s*$")
_UNITS = {None: 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}
MAX_WAIT = 24 * 3600.0


def duration(text: str) -> float:
    """``--wait``'s value in seconds: a number of seconds, or with a unit (``90s``, ``5m``, ``1h``)."""
    match = _DURATION.match(str(text))
    if match is None:
        raise UserError(
            f"--wait {text!r}: not a duration; allowed: seconds (90) or a number with s, m or h (90s, 5m, 1h)"
        )
    seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if seconds > MAX_WAIT:
        raise UserError(f"--wait {text!r}: more than {MAX_WAIT / 3600:.0f}h; allowed: 0 to 24h")
    return seconds


def lock_ref(resolved: Resolved, aws: Aws, stack_name: str | None = None) -> LockRef:
    """Where the lock of ``resolved``'s environment (or of its stack ``stack_name``, a preview's) lives."""
    stack = stack_name or resolved.config.stack_name
    bucket = lock_bucket(aws.account, aws.region, resolved.qualifier)
    return LockRef(env=resolved.config.env, stack=stack, bucket=bucket, key=lock_key(stack))


@contextmanager
def environment_lock(
    target: Target,
    command: str,
    *,
    wait: float = 0.0,
    stack_name: str | None = None,
    lease: float = LEASE_SECONDS,
) -> Iterator[HeldLock]:
    """The lock of ``target``'s environment held for the body (``command`` is what its body says it runs)."""
    resolved = resolve_run(target)
    aws = connect_aws(target, resolved)
    progress = Progress(f"doctable {command.split()[0]}", quiet=target.quiet)
    ref = lock_ref(resolved, aws, stack_name)
    with holding(
        aws.client("s3"), ref, who=aws.identity()["arn"], command=command, wait=wait, lease=lease,
        say=progress.say,
    ) as held:  # fmt: skip
        yield held


def locked(command: str, function: Callable[P, R]) -> Callable[P, R]:
    """``function`` (an API function: a Target first, ``wait`` among its keywords) run under its environment's
    lock; ``wait`` is the lock's, not passed on."""

    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        target = args[0] if args else kwargs["target"]
        assert isinstance(target, Target)
        wait = float(kwargs.pop("wait", 0.0) or 0.0)  # type: ignore[arg-type]
        with environment_lock(target, command, wait=wait):
            return function(*args, **kwargs)

    call.__name__ = getattr(function, "__name__", command)
    call.__doc__ = function.__doc__
    return call


def unlock(target: Target, lock_id: str) -> LockHolder:
    """Break the lock of ``target``'s environment whose id is ``lock_id``; the holder removed."""
    resolved = resolve_run(target)
    aws = connect_aws(target, resolved)
    return break_lock(aws.client("s3"), lock_ref(resolved, aws), lock_id)
