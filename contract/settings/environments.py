"""An environment's name as the settings file and a run give it: the names a run may choose (declared, or a
preview's), a did-you-mean for one that is not, stack names that would share what they own, and the knobs a run may
not give (the tier). Pure functions of what contract/settings/resolve.py read; standard library only."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from typing import Any

from contract.knobs import ENV_NAME_RE, knob_variable
from contract.settings import preview as preview_rules


def name_conflicts(
    stacks: Mapping[str, str],
    label: Callable[[str], str],
    environments: Mapping[str, Any],
    preview_prefix: str,
) -> list[str]:
    """An environment whose stack name extends another's (``doctable-items-prod-eu`` beside
    ``doctable-items-prod``): every name the other owns by ``<stack>-*`` (its functions, roles, log groups, a
    replica region's stack ``<stack>-<region>``) would take in this one's, so a policy for one would reach the
    other. Refused, naming both; and an environment named with the preview prefix."""
    problems = []
    for env, stack in stacks.items():
        for other, taken in stacks.items():
            if other != env and stack.startswith(taken + "-"):
                problems.append(
                    f"{label(env)}: its stack {stack} begins with {taken}- (environment {other}'s stack "
                    f"and the names it owns, its replica regions' stacks among them); allowed: a name that does not "
                    f"extend {other!r} with '-' (e.g. {env.replace('-', '')!r} or one that starts differently)"
                )
    return problems + preview_rules.prefixed_environments(environments, preview_prefix, label)


def undeclared_env(env: str, declared: tuple[str, ...], where: str) -> str:
    """The problem of an environment the settings do not declare, with the closest declared one."""
    close = difflib.get_close_matches(env, declared, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (
        f"environment {env!r} is not declared in {where}{hint}; declared: {'|'.join(declared)} "
        f"(add [environments.{env}] with its tier to declare it)"
    )


def env_problems(
    env: str, declared: tuple[str, ...], preview: preview_rules.Preview | None, prefix: str, where: str
) -> list[str]:
    """A run chooses a declared environment; a preview, an undeclared one carrying the prefix, from a declared
    template."""
    if preview is None:
        return (
            [undeclared_env(env, declared, where)] if ENV_NAME_RE.match(env) and env not in declared else []
        )
    return preview_rules.name_problems(env, preview.of, prefix, declared, where, undeclared_env)


def per_run_problems(
    context: Mapping[str, Any], environ: Mapping[str, str], file_only: tuple[str, ...], file_name: str
) -> list[str]:
    """A file-only knob given for one run: refused, naming where it belongs."""
    problems = []
    for name in file_only:
        for given, source in (
            (context.get(name), f"-c {name}="),
            (environ.get(knob_variable(name)), knob_variable(name)),
        ):
            if given not in (None, ""):
                problems.append(
                    f"{source}{given if source.endswith('=') else '=' + str(given)} cannot be given for one run: an "
                    f"environment's {name} is set in the settings file only; allowed: {name} = ... in "
                    f"[environments.<env>] of {file_name}"
                )
    return problems
