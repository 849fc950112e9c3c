"""How local/ adapts moto: one helper replaces an attribute, and each module declares the internals it relies on.

``replace`` is the only way a module here changes moto. ``Target`` names a moto internal that a module patches
or reads (with the leading parameter names it relies on, when a changed signature would break it); every
module declares its own in ``MOTO_TARGETS`` and local/compat.py checks them all before the server starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Target:
    module: str
    path: str  # attribute path inside the module, e.g. "LambdaFunction.invoke"
    params: tuple[str, ...] | None = None  # the leading parameter names relied on; None: not checked


def replace(owner: Any, name: str, new: Any) -> Any:
    """Install ``new`` as ``owner.name``; return the original (a classmethod's function), None if it had none."""
    original = owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name, None)
    setattr(owner, name, new)
    if isinstance(original, (classmethod, staticmethod)):
        return original.__func__
    return original


def tags_dict(tags: Any) -> dict[str, str]:
    """A template's Tags (a list of Key/Value, or already a dict) as a dict."""
    if isinstance(tags, dict):
        return {str(k): str(v) for k, v in tags.items()}
    if isinstance(tags, list):
        return {str(t["Key"]): str(t.get("Value", "")) for t in tags if isinstance(t, dict) and "Key" in t}
    return {}


def truthy(value: Any) -> bool:
    """A template boolean: True or the string "true" (any case)."""
    return value is True or str(value).lower() == "true"
