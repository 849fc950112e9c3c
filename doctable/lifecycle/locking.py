"""The environment's lock (doctable/lifecycle/lock.py) as the commands take it: from a :class:`Target` (its
settings resolved, the session connected and checked against the environment's binding, the lock in that
account's and region's bootstrap bucket of the environment's qualifier), and broken by ``doctable unlock``."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from contract.iam.lock import lock_bucket, lock_key
from doctable.core import previews
from doctable.core.command import connect_aws
from doctable.core.context import resolve_run
from doctable.core.errors import UserError
from doctable.core.render import Progress
from doctable.core.target import Target
from doctable.lifecycle.lock import LEASE_SECONDS, HeldLock, LockHolder, LockRef, break_lock, holding

if TYPE_CHECKING:
    from contract.settings.resolve import Resolved
    from doctable.core.aws import Aws

R = TypeVar("R")


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
    target = previews.reach(target)  # --env pr-12: the deployed preview of that name, resolved as deploy did
    resolved = resolve_run(target)
    aws = connect_aws(target, resolved)
    progress = Progress(f"doctable {command.split()[0]}", quiet=target.quiet)
    ref = lock_ref(resolved, aws, stack_name)
    # where: the checkout, the folder of the settings file (else the working directory)
    checkout = str(resolved.path.resolve().parent) if resolved.path is not None else None
    with holding(
        aws.client("s3"), ref, who=aws.identity()["arn"], command=f"doctable {command} --env {ref.env}",
        wait=wait, lease=lease, checkout=checkout, say=progress.say,
    ) as held:  # fmt: skip
        yield held


def locked_teardowner(
    target: Target, teardowner: Callable[..., R], *, command: str, wait: float
) -> Callable[..., R]:
    """``teardowner`` (teardown's run: ``(aws, deployment, **options)``, a preview's in ``preview destroy`` and
    ``gc``) run under the lock of the environment it tears down, located as that environment's deploy located it;
    its progress lines on the run's ``progress``."""

    def run(aws: Aws, deployment: Any, **options: Any) -> R:
        env = deployment.config.env
        resolved = resolve_run(previews.reach(dataclasses.replace(target, env=env)))
        ref = lock_ref(resolved, aws, deployment.config.stack_name)
        progress = options.get("progress")
        checkout = str(resolved.path.resolve().parent) if resolved.path is not None else None
        with holding(
            aws.client("s3"), ref, who=aws.identity()["arn"], command=f"doctable {command} --env {env}",
            wait=wait, checkout=checkout, say=progress.say if progress is not None else None,
        ):  # fmt: skip
            return teardowner(aws, deployment, **options)

    return run


@dataclass(frozen=True)
class UnlockResult:
    """``doctable unlock``: the environment, where its lock was, and the holder whose lock was broken."""

    env: str
    stack: str
    lock: str  # s3://bucket/key
    broken: LockHolder

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "doctable-unlock",
            "env": self.env,
            "stack": self.stack,
            "lock": self.lock,
            "broken": self.broken.to_json(),
        }


def unlock(target: Target, *, lock_id: str) -> UnlockResult:
    """Break the lock of ``target``'s environment whose id is ``lock_id`` (``terraform force-unlock``'s role):
    refused in one line when nobody holds it or another id does."""
    if not lock_id.strip():
        raise UserError(
            "unlock needs the lock's id (the refusal of the command that found it locked names it)"
        )
    target = previews.reach(target)
    resolved = resolve_run(target)
    aws = connect_aws(target, resolved)
    ref = lock_ref(resolved, aws)
    broken = break_lock(aws.client("s3"), ref, lock_id.strip())
    return UnlockResult(env=ref.env, stack=ref.stack, lock=f"s3://{ref.bucket}/{ref.key}", broken=broken)
