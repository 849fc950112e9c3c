"""How local/ adapts moto: each replacement of a moto internal is registered once, with the internal it replaces.

A module of local/ keeps its replacements in one ``Patches`` (``PATCHES``): each is a module-level function
decorated with ``@PATCHES.replace(Target(...))``, and calls what it replaced through ``PATCHES.original(fn)``.
``install`` puts a module's replacements in place once (a second install is a no-op), ``rollback`` takes them
back (the unit tests' isolation). ``Target`` names a moto internal a module patches or reads (with the
leading parameter names it relies on); local/compat.py checks every declared one before the server starts.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Target:
    module: str
    path: str  # attribute path inside the module, e.g. "LambdaFunction.invoke"
    params: tuple[str, ...] | None = None  # the leading parameter names relied on; None: not checked

    def owner_and_name(self) -> tuple[Any, str]:
        """The object that holds the attribute, and the attribute's name."""
        owner: Any = importlib.import_module(self.module)
        *parents, name = self.path.split(".")
        for part in parents:
            owner = getattr(owner, part)
        return owner, name


@dataclass(frozen=True)
class _Entry:
    target: Target
    function: Callable[..., Any]
    wrap: Callable[[Any], Any] | None  # classmethod or staticmethod, for an attribute of that kind


@dataclass
class Patches:
    """One module's replacements of moto internals, in the order they are installed."""

    entries: list[_Entry] = field(default_factory=list)
    originals: dict[Callable[..., Any], Any] = field(default_factory=dict)
    hooks: list[Callable[[], None]] = field(default_factory=list)

    def replace(self, target: Target, wrap: Callable[[Any], Any] | None = None) -> Callable[[F], F]:
        """Register the decorated function as the replacement of ``target`` (``wrap``: classmethod or
        staticmethod when the attribute is one)."""

        def register(function: F) -> F:
            self.entries.append(_Entry(target, function, wrap))
            return function

        return register

    def on_install(self, function: Callable[[], None]) -> Callable[[], None]:
        """Register the decorated function to run once when the module is installed, after its replacements:
        for a change that is not an attribute (an entry of moto's registry dicts, through ``put``)."""
        self.hooks.append(function)
        return function

    def original(self, function: Callable[..., Any]) -> Any:
        """What ``function`` replaced (a classmethod's or staticmethod's underlying function); None if the
        attribute did not exist."""
        if function not in self.originals:
            raise RuntimeError(f"{function.__qualname__} is not installed: call local.patching.install first")
        return self.originals[function]

    @property
    def targets(self) -> tuple[Target, ...]:
        return tuple(entry.target for entry in self.entries)


# What install changed, newest last: (owner, name, whether the owner had the attribute itself, its old value).
_JOURNAL: list[tuple[Any, str, bool, Any]] = []
_INSTALLED: list[Patches] = []


def install(*patches: Patches) -> None:
    """Put each ``Patches``' replacements in place, in order; one already installed is left as it is."""
    for group in patches:
        if any(group is installed for installed in _INSTALLED):
            continue
        for entry in group.entries:
            owner, name = entry.target.owner_and_name()
            new = entry.wrap(entry.function) if entry.wrap else entry.function
            group.originals[entry.function] = replace(owner, name, new)
        _INSTALLED.append(group)
        for hook in group.hooks:
            hook()


def checkpoint() -> tuple[int, int]:
    """Where the replacements stand now, for ``rollback``."""
    return len(_JOURNAL), len(_INSTALLED)


def rollback(point: tuple[int, int] = (0, 0)) -> None:
    """Take back every replacement made since ``point`` (all of them by default), newest first: moto as it was
    then (the unit tests' isolation)."""
    journaled, installed = point
    while len(_JOURNAL) > journaled:
        owner, name, had, old = _JOURNAL.pop()
        if isinstance(owner, _Item):
            if had:
                owner.mapping[name] = old
            else:
                owner.mapping.pop(name, None)
        elif had:
            setattr(owner, name, old)
        else:
            delattr(owner, name)
    while len(_INSTALLED) > installed:
        _INSTALLED.pop().originals.clear()


def replace(owner: Any, name: str, new: Any) -> Any:
    """Install ``new`` as ``owner.name``; return the original (a classmethod's function), None if it had none.
    For what a ``Patches`` cannot name by a Target (an attribute of an object made at run time)."""
    raw = owner.__dict__ if isinstance(owner, type) else vars(owner)
    _JOURNAL.append((owner, name, name in raw, raw.get(name)))
    original = raw.get(name) if isinstance(owner, type) else getattr(owner, name, None)
    setattr(owner, name, new)
    if isinstance(original, (classmethod, staticmethod)):
        return original.__func__
    return original


@dataclass(frozen=True)
class _Item:
    mapping: MutableMapping[Any, Any]


def put(mapping: MutableMapping[Any, Any], key: Any, value: Any) -> None:
    """Set ``mapping[key]`` (an entry of one of moto's registries), journaled for ``rollback``."""
    _JOURNAL.append((_Item(mapping), key, key in mapping, mapping.get(key)))
    mapping[key] = value


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
