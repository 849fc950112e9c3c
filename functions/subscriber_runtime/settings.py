"""A subscriber's settings, read from the environment once at cold start, and the team's function they name.

Every problem fails the init with ONE line naming the subscriber and what is wrong (Lambda shows it as the
function's init error): a missing or malformed variable, a handler module that cannot be imported, a function
the module does not define.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from .constants import (
    ENV_SUBSCRIBER_ENVIRONMENT,
    ENV_SUBSCRIBER_FALSE,
    ENV_SUBSCRIBER_HANDLER,
    ENV_SUBSCRIBER_NAME,
    ENV_SUBSCRIBER_PER_RECORD,
    ENV_SUBSCRIBER_TABLE_NAME,
    ENV_SUBSCRIBER_TRUE,
)

# The declaration's rule (contract/subscribers.py: NAME_RE; a test checks that they agree).
NAME_RE = re.compile(r"^[a-z][a-z0-9-]*$")
_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"
HANDLER_RE = re.compile(rf"^(?P<module>{_IDENTIFIER}(\.{_IDENTIFIER})*):(?P<function>{_IDENTIFIER})$")
# The consumer's rule for TABLE_NAME (functions/stream_consumer/settings.py).
TABLE_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{3,255}$")
UNNAMED = "<unnamed>"
Handler = Callable[[Any, Any], Any]


class SubscriberInitError(RuntimeError):
    """The subscriber's function cannot start: one line naming the subscriber and what is wrong."""

    def __init__(self, subscriber: str, problem: str) -> None:
        super().__init__(" ".join(f"subscriber {subscriber}: {problem}".split()))
        self.subscriber = subscriber


class SubscriberSettings(NamedTuple):
    name: str
    handler: str  # module:function, importable from the asset's root
    per_record: bool
    table_name: str
    environment: str | None = None

    @property
    def module(self) -> str:
        return self.handler.partition(":")[0]

    @property
    def function(self) -> str:
        return self.handler.partition(":")[2]

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> SubscriberSettings:
        env = os.environ if environ is None else environ
        raw_name = env.get(ENV_SUBSCRIBER_NAME)
        name = raw_name if raw_name and NAME_RE.fullmatch(raw_name) else None
        who = name or UNNAMED
        if name is None:
            raise SubscriberInitError(
                who,
                _invalid(ENV_SUBSCRIBER_NAME, raw_name, "required; the subscriber's name ([a-z][a-z0-9-]*)"),
            )
        handler = env.get(ENV_SUBSCRIBER_HANDLER)
        # "search.py:handler" is the declaration's file:function, not a module (a package "search", module "py")
        if not handler or not HANDLER_RE.fullmatch(handler) or handler.partition(":")[0].endswith(".py"):
            raise SubscriberInitError(
                who,
                _invalid(
                    ENV_SUBSCRIBER_HANDLER,
                    handler,
                    "required; the team's function as module:function (e.g. subscriber_code.search:handler)",
                ),
            )
        per_record = (env.get(ENV_SUBSCRIBER_PER_RECORD) or ENV_SUBSCRIBER_FALSE).strip().lower()
        if per_record not in (ENV_SUBSCRIBER_TRUE, ENV_SUBSCRIBER_FALSE):
            raise SubscriberInitError(
                who,
                _invalid(
                    ENV_SUBSCRIBER_PER_RECORD,
                    env.get(ENV_SUBSCRIBER_PER_RECORD),
                    f"allowed values are '{ENV_SUBSCRIBER_TRUE}' or '{ENV_SUBSCRIBER_FALSE}' "
                    f"(default '{ENV_SUBSCRIBER_FALSE}')",
                ),
            )
        table = env.get(ENV_SUBSCRIBER_TABLE_NAME)
        if not table or not TABLE_NAME_RE.fullmatch(table):
            raise SubscriberInitError(
                who,
                _invalid(
                    ENV_SUBSCRIBER_TABLE_NAME,
                    table,
                    "required; the DynamoDB table whose changes this subscriber reads (3-255 of letters, digits, "
                    "'_', '-', '.')",
                ),
            )
        return cls(
            name=name,
            handler=handler,
            per_record=per_record == ENV_SUBSCRIBER_TRUE,
            table_name=table,
            environment=(env.get(ENV_SUBSCRIBER_ENVIRONMENT) or "").strip() or None,
        )


def _invalid(variable: str, value: str | None, allowed: str) -> str:
    shown = "<unset>" if value is None else repr(value)
    return f"invalid environment variable {variable}={shown}: {allowed}"


def load_handler(settings: SubscriberSettings) -> Handler:
    """The team's function, imported from the asset's root; :class:`SubscriberInitError` saying why not."""
    try:
        module = importlib.import_module(settings.module)
    except Exception as exc:  # the team's module: any failure of its import is the init's, named here
        missing = isinstance(exc, ModuleNotFoundError) and f"{settings.module}.".startswith(f"{exc.name}.")
        problem = (
            "not found in the function's code"
            if missing
            else f"failed to import: {type(exc).__name__}: {exc}"
        )
        raise SubscriberInitError(settings.name, f"handler module {settings.module} {problem}") from exc
    function = getattr(module, settings.function, None)
    if function is None or not callable(function):
        defined = defined_functions(module)
        listed = f"the module defines: {', '.join(defined)}" if defined else "the module defines no function"
        what = "not found" if function is None else "is not callable"
        raise SubscriberInitError(settings.name, f"handler {settings.handler} {what}; {listed}")
    return function  # type: ignore[no-any-return]


def defined_functions(module: Any) -> list[str]:
    """The public functions ``module`` defines itself (not those it imports)."""
    import inspect  # an init error's message only

    return sorted(
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and inspect.isfunction(value)
        and getattr(value, "__module__", None) == module.__name__
    )
