"""doctable from Python: each command is a function with typed parameters that returns a typed result (frozen
dataclasses, the same objects its ``--json`` serializes), and raises a typed error carrying the same ``code`` and
fields as ``--json``'s error document. The console script (doctable/cli/) parses its arguments, calls these and
renders what they return; docs/api.md documents each function, and tests/unit/test_api.py pins the fields of
every result type (a change to them is deliberate).

Every function takes a :class:`Target` first: the environment, its settings file, this run's overrides, the
credentials' profile and region, and ``quiet`` (no progress lines on stderr)::

    from doctable import api

    result = api.verify(api.Target(env="dev"), read_only=True)
    assert result.ok, [row.name for row in result.rows if not row.ok]

Errors: :class:`UserError` (exit 2: a problem of the input; ``code`` "usage" or the command's own),
:class:`AwsError` (exit 4: AWS refused or could not be reached; ``code`` "aws.*" with the refused action,
resource and principal in ``fields``), :class:`RefusedError` (exit 3: a safety gate refused; nothing changed).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from doctable.core.aws import user_errors
from doctable.core.errors import AwsError, RefusedError, UserError
from doctable.core.target import Target

P = ParamSpec("P")
R = TypeVar("R")


def typed_errors(function: Callable[P, R]) -> Callable[P, R]:
    """``function`` raising only the API's errors: AWS's failures as AwsError (its code and fields, as ``--json``
    prints them), a file-system failure as one UserError line."""

    @functools.wraps(function)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            with user_errors(f"running doctable.api.{function.__name__}"):
                return function(*args, **kwargs)
        except OSError as exc:
            raise UserError(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")) from exc

    return call


# ---- changing an environment (doctable/lifecycle/) and verify (doctable/verify/) ----

# ---- the day-to-day commands (doctable/operate/) and the plan (doctable/plan/) ----
from doctable.operate import bootstrap as _bootstrap  # noqa: E402
from doctable.operate import invoke as _invoke  # noqa: E402
from doctable.operate import ledger as _ledger  # noqa: E402
from doctable.operate import logs as _logs  # noqa: E402
from doctable.operate import policy as _policy  # noqa: E402
from doctable.operate import replay as _replay  # noqa: E402
from doctable.operate import settings as _settings  # noqa: E402
from doctable.operate import watch as _watch  # noqa: E402
from doctable.operate.bootstrap import BootstrapResult, PolicyAction  # noqa: E402
from doctable.operate.invoke import InvokeLogLine, InvokeResult  # noqa: E402
from doctable.operate.ledger import LedgerResult  # noqa: E402
from doctable.operate.logs import LogLine, LogsResult  # noqa: E402
from doctable.operate.policy import PolicyResult  # noqa: E402
from doctable.operate.replay import ReplayedObject, ReplayResult  # noqa: E402
from doctable.operate.settings import IndexRow, KnobRow, OverrideRow, SettingsResult  # noqa: E402
from doctable.operate.watch import WatchResult, WatchUpdate  # noqa: E402
from doctable.plan import cost as _cost  # noqa: E402
from doctable.plan.cost import Plan  # noqa: E402
from doctable.plan.workload import Workload  # noqa: E402

logs = typed_errors(_logs.logs)
invoke = typed_errors(_invoke.invoke)
watch = typed_errors(_watch.watch)
replay = typed_errors(_replay.replay)
ledger = typed_errors(_ledger.ledger)
settings = typed_errors(_settings.settings)
policy = typed_errors(_policy.policy)
bootstrap = typed_errors(_bootstrap.bootstrap)
plan = typed_errors(_cost.plan)

__all__ = [
    "BootstrapResult",
    "PolicyAction",
    "bootstrap",
    "IndexRow",
    "KnobRow",
    "OverrideRow",
    "SettingsResult",
    "settings",
    "InvokeLogLine",
    "InvokeResult",
    "invoke",
    "LedgerResult",
    "ledger",
    "LogLine",
    "LogsResult",
    "logs",
    "Plan",
    "Workload",
    "plan",
    "PolicyResult",
    "policy",
    "ReplayedObject",
    "ReplayResult",
    "replay",
    "WatchResult",
    "WatchUpdate",
    "watch",
    "AwsError",
    "RefusedError",
    "Target",
    "UserError",
]
