"""Start-up check: moto is exactly the pinned version, and every moto internal that local/ patches still exists.

local/ adapts moto's internals (local/services/); a different moto, even a patch release, may have moved
or renamed any of them. Failing here, naming what changed, beats a half-working server.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterable
from importlib import metadata

from local.errors import LocalError
from local.patching import Target

PINNED_MOTO = "5.2.5"


class CompatError(LocalError, RuntimeError):
    """moto is not what local/ was written against."""


def _resolve(module_name: str, path: str) -> object:
    obj: object = importlib.import_module(module_name)
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def check(targets: Iterable[Target]) -> None:
    """Raise CompatError naming every difference: the version, then each of ``targets`` that changed (the server
    passes every target local/ declares: local.services.declared())."""
    problems: list[str] = []
    try:
        installed = metadata.version("moto")
    except metadata.PackageNotFoundError:
        raise CompatError(f"moto is not installed; the local AWS needs moto[server]=={PINNED_MOTO}") from None
    if installed != PINNED_MOTO:
        problems.append(
            f"moto {installed} is installed but local/ is written against moto {PINNED_MOTO} exactly "
            f"(pip install 'moto[server]=={PINNED_MOTO}', or re-check local/services/ and bump PINNED_MOTO)"
        )
    for module_name, path, params in ((t.module, t.path, t.params) for t in targets):
        target = f"{module_name}.{path}"
        try:
            obj = _resolve(module_name, path)
        except (ImportError, AttributeError) as exc:
            problems.append(f"{target} is gone ({exc.__class__.__name__}: {exc})")
            continue
        if params is None:
            continue
        try:
            actual = tuple(inspect.signature(obj).parameters)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            continue
        if actual[: len(params)] != params:
            problems.append(
                f"{target} changed signature: expected ({', '.join(params)}), found ({', '.join(actual)})"
            )
    if problems:
        raise CompatError(
            "moto is not what the local AWS was written against:\n  - " + "\n  - ".join(problems)
        )
