"""verify's rows per subscriber (contract/subscribers.py). ``subscriber:<name>`` reads: its function runs doctable's
wrapper with its declared handler, and its event-source mapping is Enabled on its declared source, with its declared
filters and the stack's tags (GetFunctionConfiguration, GetEventSourceMapping, ListTags). Two rows write (a
read-only run skips them): ``subscriber-nudge:<name>``, a change its filter passes reaches its
``stream_records_received`` line; ``subscriber-excluded:<name>``, a change its filter excludes, written on the same
item before that one, is counted by none of its proof lines (the passing change after it proves its poller went
past it: a bounded wait, never a sleep).

The probe is one item under the run's partition key (``doctable-verify-<run>``, sort key ``subscriber-<name>``,
``kind = "subscriber-nudge"``): it names no blob, so the cleanup consumer that receives its REMOVE deletes nothing.
Which writes the filter passes is decided before (verify/probe.py): a filter no probe can pass or exclude leaves
that half's row SKIPped, saying why."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from contract import names
from contract.knobs import STARTING_LATEST, STARTING_POSITION_CFN
from doctable.capabilities.protocol import replica_stack
from doctable.verify.expect import EXCLUDED_PREFIX, NUDGE_PREFIX
from doctable.verify.probe import NUDGE_KIND, ProbePlan, probe_plan
from doctable.verify.proof import (
    CLOCK_SKEW_MS,
    LOG_LOOKBACK_MS,
    SEQUENCE_LOOKUP_BOUND,
    capture_changes,
    find_proof,
    proof_events,
)
from doctable.verify.record import CheckFailed, Skip

if TYPE_CHECKING:
    from contract.knobs import DocTableConfig
    from contract.subscribers import SubscriberSpec
    from doctable.core.aws import Aws
    from doctable.core.deployment import Deployment
    from doctable.verify.replica_delivery import VerifyRun

PREFIX = "subscriber:"
ENABLED = "Enabled"
LATEST = STARTING_POSITION_CFN[STARTING_LATEST]
# A failed nudge row's error code (its --json ``error.code``), beside the values it saw.
NOT_REACHED, EXCLUDED_REACHED = "subscriber.nudge_not_received", "subscriber.excluded_change_received"


def subscriber_rows(config: DocTableConfig) -> list[tuple[str, str, str]]:
    """(row id, check, expected): three rows per declared subscriber (its declaration, then its two nudges)."""
    rows = []
    for spec in config.subscribers:
        plan = probe_plan(spec, config.stream_view_type)
        rows += _region_rows(config, spec, plan)
        if not spec.runs_in(config.replicas):
            continue  # a global table's subscriber in replica regions alone: its rows are theirs
        rows += [
            (
                f"{PREFIX}{spec.name}",
                f"subscriber {spec.name} as declared",
                f"wrapper around {spec.handler_file}:{spec.function}; mapping {ENABLED} on its {spec.source} "
                f"source, {len(spec.filters)} filter(s) as declared, tagged",
            ),
            (
                f"{NUDGE_PREFIX}{spec.name}",
                f"a change subscriber {spec.name}'s filter passes reaches it",
                f"{plan.text}: a {names.PROOF_LOG_MESSAGE} line of {spec.name} covers the "
                f"{plan.witness_event or 'passing change'}"
                if plan.witness is not None
                else f"not checked: {plan.why}",
            ),
            (
                f"{EXCLUDED_PREFIX}{spec.name}",
                f"a change subscriber {spec.name}'s filter excludes does not invoke it",
                f"{plan.text}: no {names.PROOF_LOG_MESSAGE} line of {spec.name} counts the {plan.excluded_event}"
                if plan.excluded is not None
                else f"not checked: {plan.why}",
            ),
        ]
    return rows


# --------------------------------------------------------------------------------- its declaration (reads)
def _patterns(mapping: dict[str, Any]) -> list[Any]:
    return [json.loads(f["Pattern"]) for f in (mapping.get("FilterCriteria") or {}).get("Filters", [])]


def _declared_patterns(spec: SubscriberSpec) -> list[Any]:
    return [{"data": json.loads(p)} if spec.reads_kinesis else json.loads(p) for p in spec.filters]


def _check(aws: Aws, deployment: Deployment, spec: SubscriberSpec) -> str:
    return _declared(aws, deployment.out, deployment.config.tags(), spec)


def _declared(
    aws: Aws, out: Callable[[str], str | None], stack_tags: Mapping[str, str], spec: SubscriberSpec
) -> str:
    """Its function runs the wrapper around its handler, its mapping is Enabled with its filters and the tags
    (``out``: the stack's outputs, the home stack's or a replica region's)."""
    function = out(names.subscriber_output(spec.name, names.OUT_SUBSCRIBER_FUNCTION))
    uuid_ = out(names.subscriber_output(spec.name, names.OUT_SUBSCRIBER_MAPPING))
    if not function or not uuid_:
        raise CheckFailed(f"the stack has no outputs for subscriber {spec.name}: deploy it")
    lam = aws.client("lambda")
    configuration = lam.get_function_configuration(FunctionName=function)
    mapping = lam.get_event_source_mapping(UUID=uuid_)
    problems = []
    handler = (
        (configuration.get("Environment") or {}).get("Variables", {}).get(names.ENV_SUBSCRIBER_HANDLER, "")
    )
    if configuration.get("Handler") != names.SUBSCRIBER_HANDLER or not handler.endswith(f":{spec.function}"):
        problems.append(
            f"function runs {configuration.get('Handler')} ({handler}), not the wrapper around it"
        )
    if mapping.get("State") != ENABLED:
        problems.append(f"mapping {mapping.get('State')} ({mapping.get('StateTransitionReason', '')})")
    if sorted(map(json.dumps, _patterns(mapping))) != sorted(map(json.dumps, _declared_patterns(spec))):
        problems.append(f"filters {_patterns(mapping)}, declared {_declared_patterns(spec)}")
    tags = lam.list_tags(Resource=mapping["EventSourceMappingArn"]).get("Tags", {})
    missing = {k: v for k, v in stack_tags.items() if tags.get(k) != v}
    if missing:
        problems.append(f"mapping tags lack {missing}")
    if problems:
        raise CheckFailed("; ".join(problems))
    return f"{ENABLED}, {len(spec.filters)} filter(s), wrapper around {handler}"


def subscriber_checks(run: VerifyRun) -> dict[str, Callable[[], str]]:
    """Row id -> its check: returns what was observed, raises ``CheckFailed(differences)`` when one differs and
    ``Skip(why)`` when a nudge cannot be made."""
    nudges = Nudges(run)
    checks: dict[str, Callable[[], str]] = {}
    config = run.deployment.config
    for spec in config.subscribers:
        for region in _regions_of(config, spec):
            checks[region_row_id(spec.name, region)] = functools.partial(_region_check, run, spec, region)
            checks[region_nudge_row_id(spec.name, region)] = functools.partial(
                _region_nudge, run, spec, region
            )
        if not spec.runs_in(config.replicas):
            continue
        checks[f"{PREFIX}{spec.name}"] = functools.partial(_check, run.aws, run.deployment, spec)
        checks[f"{NUDGE_PREFIX}{spec.name}"] = functools.partial(nudges.passing, spec)
        checks[f"{EXCLUDED_PREFIX}{spec.name}"] = functools.partial(nudges.excluded, spec)
    return checks


# ------------------------------------------------------------------- a global table's replica regions
REGION_SEP = "@"  # subscriber:<name>@<region>, subscriber-nudge:<name>@<region>


def region_row_id(name: str, region: str) -> str:
    return f"{PREFIX}{name}{REGION_SEP}{region}"


def region_nudge_row_id(name: str, region: str) -> str:
    return f"{NUDGE_PREFIX}{name}{REGION_SEP}{region}"


def _regions_of(config: DocTableConfig, spec: SubscriberSpec) -> tuple[str, ...]:
    """The replica regions whose stack runs the subscriber (the built-in consumer's stacks hold them)."""
    return spec.replica_regions(config.replicas) if config.builtin_consumer else ()


def _region_rows(config: DocTableConfig, spec: SubscriberSpec, plan: ProbePlan) -> list[tuple[str, str, str]]:
    """Two rows per replica region the subscriber runs in: its declaration there, and a nudge reaching it there."""
    rows = []
    for region in _regions_of(config, spec):
        rows += [
            (
                region_row_id(spec.name, region),
                f"subscriber {spec.name} in {region} as declared",
                f"stack {config.replica_stack_name(region)}: wrapper around {spec.handler_file}:{spec.function}; "
                f"mapping {ENABLED} on the replica stream in {region}, {len(spec.filters)} filter(s), tagged",
            ),
            (
                region_nudge_row_id(spec.name, region),
                f"a change subscriber {spec.name}'s filter passes reaches it in {region}",
                f"{plan.text}, written at home: a {names.PROOF_LOG_MESSAGE} line of {spec.name} in {region}"
                if plan.witness is not None
                else f"not checked: {plan.why}",
            ),
        ]
    return rows


def _replica_outputs(run: VerifyRun, region: str) -> dict[str, str]:
    name = run.deployment.config.replica_stack_name(region)
    stack = replica_stack(run.aws.in_region(region), name)
    if stack is None:
        raise CheckFailed(f"stack {name} not found in {region}")
    return {o["OutputKey"]: o.get("OutputValue", "") for o in stack.get("Outputs") or []}


def _region_check(run: VerifyRun, spec: SubscriberSpec, region: str) -> str:
    """Its function, mapping and tags in ``region``'s stack, the mapping on that region's replica stream."""
    there, config = run.aws.in_region(region), run.deployment.config
    outputs = _replica_outputs(run, region)
    observed = _declared(there, outputs.get, config.tags(), spec)
    uuid_ = outputs[names.subscriber_output(spec.name, names.OUT_SUBSCRIBER_MAPPING)]
    source = there.client("lambda").get_event_source_mapping(UUID=uuid_).get("EventSourceArn")
    stream = (
        there.client("dynamodb").describe_table(TableName=config.table_name)["Table"].get("LatestStreamArn")
    )
    if source != stream:
        raise CheckFailed(f"its mapping in {region} reads {source}, not the replica stream {stream}")
    return f"{observed}; on {stream}"


def _region_nudge(run: VerifyRun, spec: SubscriberSpec, region: str) -> str:
    """The plan's writes on a probe item of its own, at home; replicated to ``region``, the passing change reaches
    the subscriber's proof line there (matched by time: each replica stream numbers its records itself)."""
    config = run.deployment.config
    plan = probe_plan(spec, config.stream_view_type)
    if plan.witness is None:
        raise Skip(plan.why)
    group = _replica_outputs(run, region).get(
        names.subscriber_output(spec.name, names.OUT_SUBSCRIBER_LOG_GROUP)
    )
    if not group:
        raise CheckFailed(f"the stack in {region} has no outputs for subscriber {spec.name}: deploy it")
    sort_key = f"subscriber-{spec.name}-{region}"
    key = {names.PARTITION_KEY: {"S": run.pk}, names.SORT_KEY: {"S": sort_key}}
    run.scratch.items.append((run.pk, sort_key))
    ddb, write_ms = run.aws.client("dynamodb"), int(run.wall() * 1000)
    for number, step in enumerate(plan.writes, 1):
        if step.attributes is None:
            ddb.delete_item(TableName=config.table_name, Key=key)
        else:
            item = {**key, "kind": {"S": NUDGE_KIND}, "n": {"N": str(number)}, **step.item_attributes}
            ddb.put_item(TableName=config.table_name, Item=item)
    there = run.aws.in_region(region)
    line, seconds = run.progress.wait(
        f"{names.PROOF_LOG_MESSAGE} of subscriber {spec.name} in {region}",
        lambda: find_proof(there, group, config.table_name, None, write_ms), run.timeout,
        interval=1.0, max_interval=5.0,
    )  # fmt: skip
    if line is None:
        raise CheckFailed(
            f"no {names.PROOF_LOG_MESSAGE} line of {spec.name} in {region} within {run.timeout:.0f}s of the "
            f"{plan.witness_event} written at home",
            {"code": NOT_REACHED, "event": str(plan.witness_event), "region": region},
        )
    return f"{plan.witness_event} written at home reached it in {region} after {seconds:.1f}s"


# ---------------------------------------------------------------------------------------- the nudges (write)
@dataclass
class Nudged:
    """What one subscriber's nudge wrote and saw: the plan, each write's (event, sequence number) read off its
    source, the write's time, its log group and the proof line covering the passing change."""

    plan: ProbePlan
    group: str
    write_ms: int
    changes: list[tuple[str, str]] = field(default_factory=list)
    proof: dict[str, Any] | None = None

    def sequence(self, index: int | None) -> str | None:
        """The sequence number of write ``index``, when every write was read off the source in order."""
        events = [event for event, _ in self.changes]
        if index is None or events != [w.event for w in self.plan.writes]:
            return None
        return self.changes[index][1]


@dataclass
class Nudges:
    """The nudges of one verify run: each subscriber's passing change, then its excluded one's verdict."""

    run: VerifyRun
    done: dict[str, Nudged] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)  # subscriber -> why its nudge was not made

    def passing(self, spec: SubscriberSpec) -> str:
        plan = probe_plan(spec, self.run.deployment.config.stream_view_type)
        if plan.witness is None:
            self.refused[spec.name] = plan.why
            raise Skip(plan.why)
        try:
            nudged = self._write(spec, plan)
        except CheckFailed as exc:
            self.refused[spec.name] = str(exc)
            raise
        sequence = nudged.sequence(plan.witness)
        what = f"{plan.witness_event} seq {sequence}" if sequence else f"{plan.witness_event} (by time)"

        def proof() -> dict[str, Any] | None:
            return find_proof(
                self.run.aws, nudged.group, self.run.deployment.table_name, sequence, nudged.write_ms
            )

        line, seconds = self.run.progress.wait(
            f"{names.PROOF_LOG_MESSAGE} of subscriber {spec.name} covering {what}", proof, self.run.timeout,
            interval=1.0, max_interval=5.0,
        )  # fmt: skip
        if line is None:
            self.refused[spec.name] = f"the passing {what} did not reach it"
            raise CheckFailed(
                f"no {names.PROOF_LOG_MESSAGE} line of {spec.name} covers the {what} within {self.run.timeout:.0f}s",
                {"code": NOT_REACHED, "event": str(plan.witness_event), "sequence": sequence or ""},
            )
        nudged.proof = line
        batch = f"[{line.get('first_sequence_number')}..{line.get('last_sequence_number')}]"
        return f"{what} in batch {batch} of {line.get('record_count')} after {seconds:.1f}s"

    def excluded(self, spec: SubscriberSpec) -> str:
        plan = probe_plan(spec, self.run.deployment.config.stream_view_type)
        if plan.excluded is None:
            raise Skip(f"{plan.why}; checked: the passing half" if plan.witness is not None else plan.why)
        nudged = self.done.get(spec.name)
        if nudged is None or nudged.proof is None:
            why = self.refused.get(spec.name, "its nudge did not run")
            raise CheckFailed(
                f"not attempted: {why} (only a passing change written after it proves it was skipped)"
            )
        event, sequence = str(plan.excluded_event), nudged.sequence(plan.excluded)
        counted = [
            line
            for at, line in proof_events(self.run.aws, nudged.group, nudged.write_ms - LOG_LOOKBACK_MS)
            if int((line.get("event_names") or {}).get(event, 0) or 0) > 0
            and _spans(line, sequence, at, nudged.write_ms)
        ]
        what = f"{event} seq {sequence}" if sequence else f"{event} (by time)"
        witness = nudged.sequence(plan.witness) or "(by time)"
        if counted:
            line = counted[0]
            raise CheckFailed(
                f"the excluded {what} invoked it: its proof line [{line.get('first_sequence_number')}.."
                f"{line.get('last_sequence_number')}] counts {line.get('event_names')}",
                {"code": EXCLUDED_REACHED, "event": event, "sequence": sequence or ""},
            )
        return f"{what} not delivered; the {plan.witness_event} written after it (seq {witness}) was"

    def _write(self, spec: SubscriberSpec, plan: ProbePlan) -> Nudged:
        """Settle a LATEST poller, then make the plan's writes on the probe item, reading their changes off the
        subscriber's source (its mapping's EventSourceArn)."""
        run, name = self.run, spec.name
        group = run.deployment.out(names.subscriber_output(name, names.OUT_SUBSCRIBER_LOG_GROUP))
        uuid = run.deployment.out(names.subscriber_output(name, names.OUT_SUBSCRIBER_MAPPING))
        if not group or not uuid:
            raise CheckFailed(f"the stack has no outputs for subscriber {name}: deploy it")
        mapping = run.aws.client("lambda").get_event_source_mapping(UUID=uuid)
        if mapping.get("State") != ENABLED:
            raise CheckFailed(f"not attempted: mapping {uuid} is {mapping.get('State')}")
        self._settle(name, mapping)
        table, ddb = run.deployment.table_name, run.aws.client("dynamodb")
        sort_key = f"subscriber-{name}"
        key = {names.PARTITION_KEY: {"S": run.pk}, names.SORT_KEY: {"S": sort_key}}
        run.scratch.items.append((run.pk, sort_key))

        def write() -> None:
            for number, step in enumerate(plan.writes, 1):
                if step.attributes is None:
                    ddb.delete_item(TableName=table, Key=key)
                else:
                    item = {
                        **key,
                        "kind": {"S": NUDGE_KIND},
                        "n": {"N": str(number)},
                        **step.item_attributes,
                    }
                    ddb.put_item(TableName=table, Item=item)

        nudged = Nudged(plan, group, int(run.wall() * 1000))
        nudged.changes = capture_changes(
            run.aws, mapping["EventSourceArn"], write, {names.PARTITION_KEY: run.pk, names.SORT_KEY: sort_key},
            len(plan.writes), bound=min(SEQUENCE_LOOKUP_BOUND, run.timeout), progress=run.progress,
        )  # fmt: skip
        self.done[name] = nudged
        return nudged

    def _settle(self, name: str, mapping: dict[str, Any]) -> None:
        """A LATEST poller misses writes made right after it reports Enabled: wait until it has settled."""
        if mapping.get("StartingPosition") != LATEST:
            return
        last = mapping.get("LastModified")
        age = max(0.0, self.run.wall() - last.timestamp()) if isinstance(last, datetime) else 0.0
        if self.run.settle - age > 0:
            self.run.progress.countdown(
                f"subscriber {name}'s {LATEST} poller to settle", self.run.settle - age
            )


def _spans(line: Mapping[str, Any], sequence: str | None, at: int, write_ms: int) -> bool:
    """The proof line's batch holds the change ``sequence``; without it, the line was logged after the write."""
    if sequence is None:
        return at >= write_ms - CLOCK_SKEW_MS
    try:
        first, last, ours = (
            int(str(v))
            for v in (line.get("first_sequence_number"), line.get("last_sequence_number"), sequence)
        )
    except ValueError:
        return True  # a line that does not say: counted against the filter (fail closed)
    return first <= ours <= last
