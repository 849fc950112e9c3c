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

__all__ = [
    "AwsError",
    "RefusedError",
    "Target",
    "UserError",
]
