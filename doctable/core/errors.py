"""The operations commands' errors and exit codes: a problem the user can act on, printed as one line.

Exit codes (``doctable --help`` lists them): 0 ok; 1 a check failed; 2 usage or bad input; 3 refused by a safety
gate; 4 AWS or credentials; 130 interrupted.
"""

from __future__ import annotations

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    InvalidRegionError,
    NoRegionError,
    ParamValidationError,
)
from botocore.parsers import ResponseParserError

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_REFUSED = 3
EXIT_AWS = 4
EXIT_INTERRUPTED = 130

EXIT_CODES = (
    (EXIT_OK, "ok"),
    (EXIT_FAILED, "a check failed (verify, preflight STOP, drift left, replay kept objects, invoke's records "
                  "failed, teardown incomplete)"),
    (EXIT_USAGE, "usage or bad input (arguments, settings, a stack not deployed, an unreadable file)"),
    (EXIT_REFUSED, "refused by a safety gate (deploy's destructive-change gate)"),
    (EXIT_AWS, "AWS or credentials (none usable, rejected, access denied, throttled, unreachable, any AWS "
               "refusal)"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C)"),
)  # fmt: skip

# botocore errors that are the user's input, not AWS's answer: a missing or malformed region, a bad parameter.
_INPUT_ERRORS = (NoRegionError, InvalidRegionError, ParamValidationError)


class UserError(Exception):
    """An error the user can act on: the console script prints it as one line, never a traceback (exit 2, or
    4 when it was raised from an AWS failure: see :func:`exit_code_of`). ``fields`` is what a machine reads of it
    in ``--json`` (doctable.core.aws.failure_fields: a stable ``code`` and, for a refusal, the action, resource and
    principal AWS named)."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, fields: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.fields: dict[str, str] = dict(fields or {})

    @property
    def code(self) -> str:
        """The stable code ``--json`` prints for it: ``usage`` for a problem of the input, ``aws.*`` for AWS's,
        a command's own (such as ``env.locked``) where it set one."""
        return self.fields.get("code", "usage")


class AwsError(UserError):
    """AWS refused the call or could not be reached, or there are no usable credentials (exit 4)."""

    exit_code = EXIT_AWS


class RefusedError(UserError):
    """A safety gate refused to go on (exit 3): nothing was changed."""

    exit_code = EXIT_REFUSED


def _aws_failure(exc: BaseException) -> bool:
    cause = exc.__cause__
    while cause is not None:
        if isinstance(cause, _INPUT_ERRORS):
            return False
        if isinstance(cause, BotoCoreError | ClientError | ResponseParserError):
            return True
        cause = cause.__cause__
    return False


def exit_code_of(exc: BaseException) -> int:
    """The exit code for an error the console script reports: the error's own, else 4 for a UserError raised
    from a botocore failure (doctable.core.aws.user_errors raises them so), else 2."""
    code = getattr(exc, "exit_code", EXIT_USAGE)
    if code == EXIT_USAGE and _aws_failure(exc):
        return EXIT_AWS
    return int(code)
