"""The settings file, ``doctable.toml``: each environment's knobs in version control, read the same way by the CDK
app, every ``doctable`` command, the Makefile, the bench and the tests.

A knob's value is the environment's table over ``[defaults]`` over the built-in default; then, for one run, an
override from ``-c knob=value`` or ``DOCTABLE_<KNOB>``. The environment is chosen by ``-c env=``/``--env`` or
``DOCTABLE_ENV`` (default ``dev``). Standard library only (``tomllib``).
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from contract import indexes as index_specs
from contract import subscribers as subscriber_specs
from contract.knobs import (
    ENV_NAME_ALLOWED,
    ENV_NAME_RE,
    ENV_VALUES,
    INDEXES,
    INTEGER,
    INTEGER_OR_OFF,
    KNOB_DEFAULTS,
    KNOBS,
    NONE,
    OFF,
    PREVIEW_CONTEXT,
    PROJECT_ROOT,
    REGION_RE,
    STACK_PREFIX,
    STRING,
    STRING_ARRAY,
    ConfigError,
    DocTableConfig,
    knob_variable,
    resolve_config,
    unknown_knob,
)
from contract.settings import environments, reach
from contract.settings import preview as preview_rules
from contract.settings import project as project_rules

FILE_NAME = "doctable.toml"
CONFIG_VARIABLE = "DOCTABLE_CONFIG"
DEFAULT_ENV = KNOB_DEFAULTS["env"]
# Where an environment runs: not knobs (they do not shape the stack), but a deploy or a command whose
# credentials resolve elsewhere stops before changing anything.
BINDING_KEYS = ("account", "region", "qualifier")
ACCOUNT_RE = re.compile(r"^\d{12}$")
# The CDK bootstrap an environment deploys through (`doctable bootstrap`): its stacks' synthesizer names its roles
# and asset bucket, and its roles carry the environment's permissions boundary. The CDK's rule for a qualifier.
QUALIFIER_RE = re.compile(r"^[a-z0-9]{1,10}$")
_BINDING_SHAPES = {
    "account": (ACCOUNT_RE, "12 digits"),
    "region": (REGION_RE, "a region name such as us-east-1"),
    "qualifier": (QUALIFIER_RE, "1 to 10 lower-case letters and digits (the CDK bootstrap's qualifier)"),
}
# Chosen per run, never written in the file: the environment (its table names it) and the deploy target
# (`doctable local env` sets DOCTABLE_DEPLOY_TARGET=local for the local AWS).
NOT_IN_FILE = tuple(name for name, declared in KNOBS.items() if declared.per_run)
# Written in an environment's table only: never in [defaults], never for one run (the tier).
FILE_ONLY = tuple(name for name, declared in KNOBS.items() if declared.file_only)

BUILT_IN = "built-in default"
CONTEXT = "-c"


@dataclass
class Section:
    """One table of the file: knob values as TOML gives them, and the account/region binding."""

    values: dict[str, Any] = field(default_factory=dict)
    account: str | None = None
    region: str | None = None
    qualifier: str | None = None
    # The section's index declarations (name -> table) as TOML gives them; None: the section declares none, so
    # an environment takes [defaults]'s. An environment that declares indexes declares its whole set.
    indexes: dict[str, Any] | None = None
    # The section's subscriber declarations (name -> table), taken whole like indexes (contract/subscribers.py).
    subscribers: dict[str, Any] | None = None


@dataclass
class SettingsFile:
    path: Path
    defaults: Section = field(default_factory=Section)
    environments: dict[str, Section] = field(default_factory=dict)
    # [previews]: the preview environments' name prefix, and knobs (and a binding) over their template's.
    previews: Section = field(default_factory=Section)
    preview_prefix: str = preview_rules.PREFIX_DEFAULT
    project_name: str = ""  # [project] name; empty: the repository's (contract/settings/project.py)

    @property
    def project(self) -> str:
        """The project's identity, tagged on every stack: [project] name, else the repository's name."""
        return self.project_name or project_rules.default_name(self.path.absolute().parent)

    def label(self, env: str | None = None) -> str:
        return f"{self.path.name} [environments.{env}]" if env else f"{self.path.name} [defaults]"

    @property
    def previews_label(self) -> str:
        return f"{self.path.name} [previews]"

    def preview_stack_name(self, template: str, env: str) -> str:
        """The stack of preview ``env`` from ``template``: its table_base is [previews]', else the template's."""
        layers = (self.previews, self.environments.get(template, Section()), self.defaults)
        base = next((s.values["table_base"] for s in layers if "table_base" in s.values), None)
        return f"{STACK_PREFIX}{base or KNOB_DEFAULTS['table_base']}-{env}"

    def declared(self) -> tuple[str, ...]:
        """The environments a run may choose: the file's [environments.<env>] tables, or, when it declares none,
        the shipped four."""
        return tuple(self.environments) or ENV_VALUES

    def stack_names(self) -> dict[str, str]:
        """Each declared environment's stack name, from its table_base (its table's, [defaults]', the built-in)."""
        names: dict[str, str] = {}
        for env in self.declared():
            section = self.environments.get(env, Section())
            base = section.values.get(
                "table_base", self.defaults.values.get("table_base", KNOB_DEFAULTS["table_base"])
            )
            names[env] = f"{STACK_PREFIX}{base}-{env}"
        return names


def _type_name(value: Any) -> str:
    return {bool: "boolean", int: "integer", float: "float", str: "string", list: "array", dict: "table"}.get(
        type(value), type(value).__name__
    )


def knob_text(name: str, value: Any) -> str | None:
    """A knob's TOML value as the text the knob parsers take; None when its type is not the knob's."""
    kind = KNOBS[name].parser.toml
    if kind == STRING and isinstance(value, str):
        return value
    if kind in (INTEGER, INTEGER_OR_OFF) and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if kind == INTEGER_OR_OFF and value == OFF:
        return OFF
    if kind == STRING_ARRAY and isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ",".join(value) or NONE
    return None


def _section(data: Any, where: str, problems: list[str], *, environment: bool = True) -> Section:
    section = Section()
    if not isinstance(data, dict):
        problems.append(f"{where}: expected a table of knobs, got a {_type_name(data)}")
        return section
    for name, value in data.items():
        if name in BINDING_KEYS:
            pattern, shape = _BINDING_SHAPES[name]
            if not isinstance(value, str) or not pattern.match(value):
                kind = "a CDK bootstrap qualifier" if name == "qualifier" else f"an AWS {name}"
                problems.append(f"{where}: {name} = {value!r} is not {kind}; allowed: {shape}")
            else:
                setattr(section, name, value)
        elif name == subscriber_specs.SUBSCRIBERS:
            if isinstance(value, dict):
                section.subscribers = dict(value)
            else:
                problems.append(
                    f"{where}: subscribers must be a table of [<section>.subscribers.<name>] tables"
                )
        elif name == INDEXES:
            index_specs.parse_indexes(problems, where, value)
            if isinstance(value, dict):
                section.indexes = dict(value)
        elif name in FILE_ONLY and not environment:
            problems.append(
                f"{where}: {name} = {value!r} belongs to each environment; allowed: {name} in "
                "[environments.<env>] tables only"
            )
        elif name in NOT_IN_FILE:
            problems.append(
                f"{where}: {name} = {value!r} cannot be set in the file; it is chosen per run with "
                f"-c {name}= or {knob_variable(name)}"
                + (" (or --env, or an [environments.<env>] table)" if name == "env" else "")
            )
        elif name not in KNOBS:
            problems.append(f"{where}: {unknown_knob(name, value)}")
        elif knob_text(name, value) is None:
            declared = KNOBS[name].parser
            problems.append(
                f"{where}: {name} = {value!r} is a TOML {_type_name(value)}; allowed: a TOML "
                f"{declared.toml} ({declared.allowed})"
            )
        else:
            section.values[name] = value
    return section


def parse_settings(text: str, path: Path) -> SettingsFile:
    """The settings in ``text`` (read from ``path``); ConfigError naming every problem at once."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([f"{path}: not valid TOML: {exc}"]) from None
    problems: list[str] = []
    settings = SettingsFile(path=path)
    for key, value in data.items():
        if key == "defaults":
            settings.defaults = _section(value, settings.label(), problems, environment=False)
        elif key == "environments":
            if not isinstance(value, dict):
                problems.append(f"{path.name}: environments must be a table of [environments.<env>] tables")
                continue
            for env, table in value.items():
                if not ENV_NAME_RE.match(env):
                    problems.append(
                        f"{path.name}: [environments.{env}] is not an environment name; allowed: {ENV_NAME_ALLOWED}"
                    )
                    continue
                settings.environments[env] = _section(table, settings.label(env), problems)
        elif key == "previews":
            _previews_table(settings, value, problems)
        elif key == project_rules.PROJECT_TABLE:
            settings.project_name = project_rules.parse_project_table(
                value, f"{path.name} [project]", problems
            )
        else:
            problems.append(
                f"{path.name}: {key!r} is not a settings table; allowed: [defaults], [environments.<env>], "
                "[previews], [project]"
            )
    if not problems:
        problems += environments.name_conflicts(
            settings.stack_names(), settings.label, settings.environments, settings.preview_prefix
        )
    if problems:
        raise ConfigError(problems)
    return settings


def _previews_table(settings: SettingsFile, data: Any, problems: list[str]) -> None:
    """[previews]: ``prefix`` and the knobs every preview takes over its template's (never a tier: a preview's
    is dev)."""
    where = settings.previews_label
    if not isinstance(data, dict):
        problems.append(f"{where}: expected a table of knobs and prefix, got a {_type_name(data)}")
        return
    knobs = dict(data)
    if preview_rules.PREFIX_KEY in knobs:
        prefix = knobs.pop(preview_rules.PREFIX_KEY)
        problem = preview_rules.prefix_problem(prefix, where)
        if problem:
            problems.append(problem)
        else:
            settings.preview_prefix = prefix
    settings.previews = _section(knobs, where, problems, environment=False)


def load_settings(path: Path) -> SettingsFile:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError([f"settings file {path} not found"]) from None
    except OSError as exc:
        raise ConfigError([f"settings file {path} cannot be read: {exc.strerror or exc}"]) from None
    return parse_settings(text, path)


def settings_path(
    explicit: str | os.PathLike[str] | None, environ: Mapping[str, str], cwd: Path | None = None
) -> Path | None:
    """``--config``, else ``$DOCTABLE_CONFIG``, else ``doctable.toml`` in the working directory, else the
    project's; None when there is none (the built-in defaults alone)."""
    named = explicit or environ.get(CONFIG_VARIABLE) or None
    if named:
        return Path(named)
    for candidate in ((cwd or Path.cwd()) / FILE_NAME, PROJECT_ROOT / FILE_NAME):
        if candidate.is_file():
            return candidate
    return None


def cdk_json_knobs(path: Path) -> list[str]:
    """Knobs written in cdk.json's context: the app would read them as overrides the CLI never sees, so each is
    a problem naming where it belongs."""
    try:
        context = json.loads(path.read_text()).get("context", {})
    except (FileNotFoundError, ValueError, AttributeError):
        return []
    return [
        f"{path.name}: context key {name!r} is a knob; allowed: knobs in {FILE_NAME} (or -c {name}=... for one run)"
        for name in context
        if name in KNOBS
    ]


@dataclass(frozen=True)
class Override:
    """A knob given for this run that differs from what the file (or the built-in default) says."""

    knob: str
    source: str  # "-c" or the DOCTABLE_ variable
    file_value: str
    value: str

    def as_dict(self) -> dict[str, str]:
        return {"knob": self.knob, "source": self.source, "file": self.file_value, "value": self.value}


@dataclass(frozen=True)
class Resolved:
    """The config one run uses, where each knob came from, and where the environment must run."""

    config: DocTableConfig
    path: Path | None
    sources: dict[str, str]
    overrides: list[Override]
    account: str | None = None
    region: str | None = None
    qualifier: str | None = None  # the CDK bootstrap it deploys through (None: the CDK's default, hnb659fds)
    index_source: str = BUILT_IN  # the section whose indexes the environment takes
    preview: preview_rules.Preview | None = None  # a preview's template and expiry (PREVIEW_CONTEXT)
    # Every environment a run may choose, with its stack name (the file's, or the shipped four's).
    stacks: dict[str, str] = field(default_factory=dict)
    preview_prefix: str = preview_rules.PREFIX_DEFAULT  # a preview environment's name begins so

    def rows(self) -> list[dict[str, str]]:
        """Each knob's resolved value (as text) and its source."""
        values = self.config.knob_values()
        return [{"knob": name, "value": values[name], "source": self.sources[name]} for name in KNOBS]

    def as_dict(self) -> dict[str, Any]:
        return {
            "file": str(self.path) if self.path else None,
            "env": self.config.env,
            "account": self.account,
            "region": self.region,
            "qualifier": self.qualifier,
            "knobs": self.rows(),
            "indexes": {"source": self.index_source, "declared": self.config.index_declarations},
            "overrides": [o.as_dict() for o in self.overrides],
            "preview": self.preview.as_dict() if self.preview else None,
        }


def _file_layer(
    settings: SettingsFile | None, env: str, *, preview: bool = False
) -> tuple[dict[str, str], dict[str, str], Section]:
    """The file's knob values for ``env`` as text, their sources (``indexes`` among them), and the merged
    binding and index declarations; with ``preview``, ``env`` is the template and [previews] comes last."""
    values: dict[str, str] = {}
    sources: dict[str, str] = {}
    binding = Section()
    if settings is None:
        return values, sources, binding
    layers = [(settings.defaults, settings.label())]
    if env in settings.environments:
        layers.append((settings.environments[env], settings.label(env)))
    if preview:
        layers.append((settings.previews, settings.previews_label))
    for section, label in layers:
        if preview and section is settings.previews:
            # The template's deletion protection is not the preview's (tier dev); [previews]' is refused.
            values.pop("deletion_protection", None)
            sources.pop("deletion_protection", None)
        for name, value in section.values.items():
            values[name] = knob_text(name, value) or ""
            sources[name] = label
        binding.account = section.account or binding.account
        binding.region = section.region or binding.region
        binding.qualifier = section.qualifier or binding.qualifier
        if section.indexes is not None:
            binding.indexes = section.indexes
            sources[INDEXES] = label
        if section.subscribers is not None:
            binding.subscribers = section.subscribers
    return values, sources, binding


def resolve_settings(
    context: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    config_path: str | os.PathLike[str] | None = None,
    cwd: Path | None = None,
) -> Resolved:
    """Resolve one run's config: the settings file for the environment chosen, then this run's overrides.

    ``context``: the ``-c`` knobs (CDK context, or the CLI's ``-c``/``--env``); ``environ``: the process
    environment (only DOCTABLE_ variables are read). ConfigError lists every problem at once."""
    context = dict(context or {})
    given_preview = context.pop(PREVIEW_CONTEXT, None)
    environ = environ if environ is not None else {}
    path = settings_path(config_path, environ, cwd)
    settings = load_settings(path) if path is not None else None
    env = str(context.get("env") or environ.get(knob_variable("env")) or DEFAULT_ENV).strip()
    early = environments.per_run_problems(context, environ, FILE_ONLY, FILE_NAME)
    preview = None
    if given_preview is not None:
        try:
            preview = preview_rules.parse_context(given_preview)
        except preview_rules.PreviewError as exc:
            early.append(str(exc))
    early += environments.env_problems(
        env,
        settings.declared() if settings is not None else ENV_VALUES,
        preview,
        settings.preview_prefix if settings is not None else preview_rules.PREFIX_DEFAULT,
        path.name if path is not None else "the built-in settings",
    )
    if early:
        raise ConfigError(early)
    layer, file_sources, binding = _file_layer(
        settings, preview.of if preview else env, preview=bool(preview)
    )
    if preview is not None:
        layer["tier"], file_sources["tier"] = preview_rules.PREVIEW_TIER, "preview (always dev)"
    try:
        config = resolve_config(
            context=context,
            environ=environ,
            defaults=layer,
            indexes=binding.indexes,
            region=binding.region,
            subscribers=binding.subscribers,
            settings_dir=path.parent if path is not None else None,
        )
    except ConfigError as exc:
        from_file = {
            name: label
            for name, label in file_sources.items()
            if name not in context and not environ.get(knob_variable(name))
        }
        raise ConfigError([_locate(problem, from_file) for problem in exc.problems]) from None
    foreign = reach.foreign_grants(
        config, binding.account, binding.region, settings.declared() if settings else ()
    )
    if foreign:
        raise ConfigError(foreign)
    if preview is not None:
        declared_stacks = (settings or SettingsFile(path=Path(FILE_NAME))).stack_names()
        config = preview_rules.preview_config(config, preview, declared_stacks)
    config = replace(config, project=(settings or SettingsFile(path=(cwd or Path.cwd()) / FILE_NAME)).project)
    index_source = file_sources.get(INDEXES, BUILT_IN)
    sources: dict[str, str] = {}
    overrides: list[Override] = []
    for name in KNOBS:
        variable = knob_variable(name)
        if name in context:
            sources[name], given = CONTEXT, str(context[name]).strip()
        elif environ.get(variable):
            sources[name], given = variable, environ[variable].strip()
        else:
            sources[name] = file_sources.get(name, BUILT_IN)
            continue
        file_value = layer.get(name, KNOB_DEFAULTS[name])
        if name not in NOT_IN_FILE and given != file_value:
            overrides.append(Override(name, sources[name], file_value, given))
    return Resolved(
        config=config,
        path=path,
        sources=sources,
        overrides=overrides,
        account=binding.account,
        region=binding.region,
        qualifier=binding.qualifier,
        index_source=index_source,
        stacks=(settings or SettingsFile(path=Path(FILE_NAME))).stack_names(),
        preview_prefix=settings.preview_prefix if settings is not None else preview_rules.PREFIX_DEFAULT,
        preview=preview,
    )


def _locate(problem: str, file_sources: Mapping[str, str]) -> str:
    """Name the file section a bad value came from, so the user knows which line to fix."""
    name = problem.split("=", 1)[0]
    return f"{file_sources[name]}: {problem}" if name in file_sources else problem
