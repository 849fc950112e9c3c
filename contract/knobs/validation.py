"""The validation: ``resolve_config`` parses every knob and checks every rule across them (each area's, and the
subscribers' against the table), every problem at once in a ``ConfigError``; ``with_index_step`` swaps in one
step's indexes."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from contract import indexes as index_specs
from contract import names
from contract import subscribers as subscriber_specs
from contract.knobs.config import KNOBS, DocTableConfig
from contract.knobs.consumer import BUCKET_NAMES_EXACT, CONSUMER_BUILTIN, consumer_rules
from contract.knobs.declare import NONE, OFF, ConfigError, Problems
from contract.knobs.environment import environment_rules
from contract.knobs.overrides import INDEX_STEP_CONTEXT, raw_value, unknown_knob, unknown_variables
from contract.knobs.replicas import replica_rules
from contract.knobs.stream import SOURCE_KINESIS, STREAM_VIEW_TYPES, mapping_rules
from contract.knobs.table import GSI_SHORTHAND, table_rules


def resolve_config(
    context: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    defaults: Mapping[str, Any] | None = None,
    indexes: Mapping[str, Any] | None = None,
    region: str | None = None,
    subscribers: Mapping[str, Any] | None = None,
    settings_dir: Path | None = None,
) -> DocTableConfig:
    """Build the config from the overrides (``context``, DOCTABLE_ variables) over ``defaults`` (the settings
    file's values for the environment, as text) over the built-in defaults; ``indexes``: the environment's
    index declarations (name -> table); ``region``: the region the environment binds, if any.
    ConfigError lists every problem."""
    context = context or {}
    environ = environ or {}
    defaults = defaults or {}
    problems: list[str] = [unknown_knob(name, context[name]) for name in sorted(set(context) - set(KNOBS))]
    problems += unknown_variables(environ)
    raw = {name: raw_value(name, context, environ, defaults) for name in KNOBS}
    values = {name: declared.parser.parse(problems, name, raw[name]) for name, declared in KNOBS.items()}
    environment_rules(problems, raw, values)
    consumer_rules(problems, raw, values)
    mapping_rules(problems, values)
    table_rules(problems, values)
    replica_rules(problems, values, region)
    specs = index_specs.parse_indexes(problems, "", dict(indexes or {}))
    index_specs.check_indexes(
        problems, specs, shorthand=GSI_SHORTHAND if values["gsi"] == names.GSI_NAME else ()
    )
    subscribed = _subscriber_rules(problems, values, subscribers, settings_dir)
    if problems:
        raise ConfigError(problems)
    return DocTableConfig(**values, indexes=specs, subscribers=subscribed)


def _option_text(problems: Problems, at: str, option: str, value: Any) -> str | None:
    """A subscriber's option as its knob's text, checked by that knob's parser; None with one problem."""
    declared = KNOBS[option].parser
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        problems.append(f"{at} = {value!r} is not allowed; allowed: {declared.allowed}")
        return None
    found: list[str] = []
    declared.parse(found, option, str(value))
    if found:
        problems.append(f"{at}: {found[0]}")
        return None
    return str(value)


def _subscriber_rules(
    problems: Problems, values: dict[str, Any], declared: Mapping[str, Any] | None, settings_dir: Path | None
) -> tuple[subscriber_specs.SubscriberSpec, ...]:
    """The declared subscribers, each checked, and the rules across them and the table (contract/subscribers.py)."""
    if not declared:
        return ()
    specs = subscriber_specs.parse_subscribers(problems, "", dict(declared), settings_dir, _option_text)
    builtin = values["consumer"] == CONSUMER_BUILTIN
    subscriber_specs.check_subscribers(
        problems,
        specs,
        stream_on=values["stream"] in STREAM_VIEW_TYPES,
        kinesis_on=values["kinesis"] != OFF,
        is_global=bool(values["replicas"]),
        consumer_reads_stream=values["consumer"] != NONE and values["consumer_source"] != SOURCE_KINESIS,
        replicas=tuple(values["replicas"]),
    )
    if values["bucket_names"] == BUCKET_NAMES_EXACT:
        problems += subscriber_specs.failure_bucket_problems(f"{values['table_base']}-{values['env']}", specs)
    if not builtin and not values["blob_bucket"]:
        problems += [
            f"subscriber {s.name!r}: a blobs grant needs the blob bucket; allowed: table grants, or the built-in "
            "consumer's bucket (consumer=builtin) or blob_bucket"
            for s in specs
            if any(g.resource == "blobs" for g in s.grants)
        ]
    return specs


def with_index_step(config: DocTableConfig, declarations: Mapping[str, Any] | str) -> DocTableConfig:
    """``config`` with exactly these indexes (the gsi shorthand spelt out among them), given as a mapping or
    its JSON text; ConfigError if invalid."""
    problems: list[str] = []
    if isinstance(declarations, str):
        try:
            declarations = json.loads(declarations)
        except json.JSONDecodeError as exc:
            raise ConfigError([f"{INDEX_STEP_CONTEXT}: not JSON ({exc})"]) from None
    specs = index_specs.parse_indexes(problems, INDEX_STEP_CONTEXT, declarations)
    index_specs.check_indexes(problems, specs)
    if problems:
        raise ConfigError(problems)
    return replace(config, gsi=NONE, indexes=specs)
