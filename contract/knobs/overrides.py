"""Where a run overrides the settings file: the DOCTABLE_<KNOB> variables and ``-c`` context, each value taken
from them, the settings file's values and the defaults in that order, the project's other variables and context
entries (never knobs), and the problem of a name that is not a knob."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from contract import names
from contract.knobs.config import KNOB_DEFAULTS, KNOBS

# An override for one run: DOCTABLE_<KNOB> (DOCTABLE_ENV selects the environment). Unprefixed names (GSI, TTL,
# ENV...) are never read: they are common in shells and CI for other purposes.
VARIABLE_PREFIX = "DOCTABLE_"
# The project's other variables: not knobs, and not misspellings of one.
NON_KNOB_VARIABLES = frozenset(
    {
        "DOCTABLE_CONFIG",
        "DOCTABLE_STATE_DIR",
        "DOCTABLE_LEDGER_DIR",
        "DOCTABLE_LIVE",
        "DOCTABLE_SOAK",
        "DOCTABLE_RESOLVED_BY",
        "DOCTABLE_WORKER_PATH",
        "DOCTABLE_PROFILE",
        "DOCTABLE_CDK_OUTPUT",  # doctable deploy's cloud assembly directory
        "DOCTABLE_SYNTH_CACHE",  # app.py's cache of assemblies (infra/synth/cache.py)
        "DOCTABLE_SYNTH_WORKER",  # the warm process app.py hands its synth to (infra/synth/worker.py)
    }
)
LOCAL_VARIABLE_PREFIX = "DOCTABLE_LOCAL_"  # the local AWS's own settings


def knob_variable(name: str) -> str:
    """The environment variable that overrides knob ``name`` for one run."""
    return f"{VARIABLE_PREFIX}{name.upper()}"


KNOB_VARIABLES: dict[str, str] = {knob_variable(name): name for name in KNOBS}


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """One problem per DOCTABLE_ variable that is neither a knob's nor one of the project's own."""
    problems = []
    for variable in sorted(environ):
        if not variable.startswith(VARIABLE_PREFIX) or variable.startswith(LOCAL_VARIABLE_PREFIX):
            continue
        if variable in KNOB_VARIABLES or variable in NON_KNOB_VARIABLES:
            continue
        close = difflib.get_close_matches(variable, [*KNOB_VARIABLES, *NON_KNOB_VARIABLES], n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        problems.append(
            f"{variable} is not a doctable variable{hint}; a knob is overridden by DOCTABLE_<KNOB>, "
            f"e.g. {knob_variable('gsi')}={names.GSI_NAME}"
        )
    return problems


def unknown_knob(name: str, value: Any) -> str:
    """The problem of a name that is not a knob, with the closest knob when there is one."""
    close = difflib.get_close_matches(name, KNOBS, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"{name}={value!r} is not a knob{hint}; knobs: {', '.join(KNOBS)}"


def raw_value(
    name: str, context: Mapping[str, Any], environ: Mapping[str, str], defaults: Mapping[str, Any]
) -> str:
    """``-c`` first, then DOCTABLE_<KNOB> (an empty one is unset), then ``defaults``, then the built-in."""
    from_env = environ.get(knob_variable(name)) or None
    for value in (context.get(name), from_env, defaults.get(name)):
        if value is not None:
            return str(value).strip()
    return KNOB_DEFAULTS[name]


# CDK context that deploys an intermediate index set (``doctable deploy`` applies several GSI creations and
# deletions as one CloudFormation update each): JSON of index name -> declaration, replacing the gsi shorthand
# and the declared indexes for that one update. Namespaced, so never taken for a knob.
INDEX_STEP_CONTEXT = "doctable:indexStep"
# CDK context that makes the run a preview environment (contract/settings/resolve.py): JSON {"from": ENV, "expires_at":
# ISO-8601 UTC}. Namespaced, so never taken for a knob; the settings resolve it (user_context keeps it for them).
PREVIEW_CONTEXT = "doctable:preview"
# CDK context that is not a knob: a JSON object of replica region -> that replica's stream ARN, given to the app
# because CloudFormation cannot give another region's stream ARN (infra/replica_stack.py).
REPLICA_STREAMS_CONTEXT = "replica_streams"
# CDK context that is not a knob: a step of converting a single-region table to a global table (``retain``,
# ``detached``, ``import``; infra/data/handover.py), and the live table's stream ARN the detached steps reference.
TABLE_HANDOVER_CONTEXT = "table_handover"
TABLE_STREAM_CONTEXT = "table_stream_arn"
NON_KNOB_CONTEXT = frozenset({REPLICA_STREAMS_CONTEXT, TABLE_HANDOVER_CONTEXT, TABLE_STREAM_CONTEXT})


def user_context(all_context: Mapping[str, Any]) -> dict[str, Any]:
    """The context entries a user could have meant as knobs: CDK's own keys (``@aws-cdk/...``, ``aws:cdk:...``)
    are namespaced, a knob never is; the app's own (NON_KNOB_CONTEXT) are not knobs. Unknown names then fail in
    resolve_config. The preview (PREVIEW_CONTEXT) is kept: contract.settings.resolve.resolve_settings takes it out."""
    return {
        k: v
        for k, v in all_context.items()
        if (":" not in k and not k.startswith("@") and k not in NON_KNOB_CONTEXT) or k == PREVIEW_CONTEXT
    }
