"""A fault spec: its validation, the server process's rules and counters (``STATE``), and the hooks the Lambda
runner (crash/timeout of an invocation) and the stream pollers (duplicates) call."""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from local.errors import LocalError

PATH = "/_doctable/faults"

TARGETS: dict[str, tuple[str, ...]] = {
    "s3:DeleteObjects": ("slowdown", "internal-error", "access-denied", "key-errors", "delay"),
    "lambda:Invoke": ("crash", "timeout"),
    "esm:Deliver": ("duplicate",),
    # A CreateChangeSet refused as CloudFormation refuses one (ValidationError): a deploy step that fails.
    "cloudformation:CreateChangeSet": ("validation-error",),
}
OPTIONS: dict[str, tuple[str, ...]] = {
    "s3:DeleteObjects": ("bucket", "match", "keys", "code", "phase", "delay_ms"),
    "lambda:Invoke": ("function", "after_ms"),
    "esm:Deliver": ("mapping",),
    "cloudformation:CreateChangeSet": ("stack", "change_set_type"),
}
COMMON = ("id", "on", "action", "rate", "limit")
WHOLE_REQUEST = ("slowdown", "internal-error", "access-denied")
MAX_EVENTS = 2000


class FaultSpecError(LocalError, ValueError):
    """A fault spec the server refuses (every problem listed), or a failed call to the control endpoint."""


@dataclass
class Rule:
    id: str
    on: str
    action: str
    rate: float = 1.0
    limit: int | None = None
    options: dict[str, Any] = field(default_factory=dict)
    rng: random.Random = field(default_factory=random.Random, repr=False)
    fired: int = 0

    def spent(self) -> bool:
        return self.limit is not None and self.fired >= self.limit

    def draw(self) -> bool:
        """Whether the rule fires now (the caller holds the state lock)."""
        if self.spent():
            return False
        return self.rate >= 1.0 or self.rng.random() < self.rate

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "on": self.on, "action": self.action, "rate": self.rate}
        if self.limit is not None:
            out["limit"] = self.limit
        out.update(self.options)
        return out


def parse_spec(spec: Any) -> tuple[int, list[Rule]]:
    """Validate a posted spec; every problem in one FaultSpecError."""
    if not isinstance(spec, dict):
        raise FaultSpecError('the fault spec must be a JSON object: {"seed": 1, "rules": [...]}')
    problems: list[str] = []
    unknown = set(spec) - {"seed", "rules"}
    if unknown:
        problems.append(f"unknown top-level field(s) {sorted(unknown)}; allowed: seed, rules")
    seed = spec.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        problems.append(f"seed must be an integer, got {seed!r}")
        seed = 0
    raw_rules = spec.get("rules", [])
    if not isinstance(raw_rules, list):
        raise FaultSpecError("rules must be a list of objects")
    rules: list[Rule] = []
    seen: set[str] = set()
    for index, raw in enumerate(raw_rules):
        where = f"rules[{index}]"
        if not isinstance(raw, dict):
            problems.append(f"{where} must be an object")
            continue
        on, action = raw.get("on"), raw.get("action")
        if on not in TARGETS:
            problems.append(f"{where}.on is {on!r}; allowed: {', '.join(TARGETS)}")
            continue
        if action not in TARGETS[on]:
            problems.append(f"{where}.action is {action!r}; allowed for {on}: {', '.join(TARGETS[on])}")
            continue
        extra = set(raw) - set(COMMON) - set(OPTIONS[on])
        if extra:
            problems.append(f"{where}: unknown field(s) {sorted(extra)} for {on}")
        rule_id = str(raw.get("id") or f"{on}#{index}")
        if rule_id in seen:
            problems.append(f"{where}.id {rule_id!r} is used twice")
        seen.add(rule_id)
        rate = raw.get("rate", 1.0)
        if not isinstance(rate, (int, float)) or isinstance(rate, bool) or not 0.0 <= rate <= 1.0:
            problems.append(f"{where}.rate must be a number in 0..1, got {rate!r}")
            rate = 0.0
        limit = raw.get("limit")
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
            problems.append(f"{where}.limit must be a non-negative integer, got {limit!r}")
            limit = None
        options = {k: raw[k] for k in OPTIONS[on] if k in raw}
        problems += _option_problems(where, on, action, options)
        rules.append(
            Rule(
                id=rule_id,
                on=on,
                action=action,
                rate=float(rate),
                limit=limit,
                options=options,
                rng=random.Random(f"{seed}:{rule_id}"),
            )
        )
    if problems:
        raise FaultSpecError("invalid fault spec:\n  - " + "\n  - ".join(problems))
    return seed, rules


def _option_problems(where: str, on: str, action: str, options: dict[str, Any]) -> list[str]:
    problems = []
    for name in ("bucket", "match", "function", "mapping", "code", "stack", "change_set_type"):
        if name in options and not (isinstance(options[name], str) and options[name]):
            problems.append(f"{where}.{name} must be a non-empty string")
    if "keys" in options and options["keys"] != "all":
        keys = options["keys"]
        if not isinstance(keys, int) or isinstance(keys, bool) or keys < 1:
            problems.append(f'{where}.keys must be a positive integer or "all", got {keys!r}')
    if "phase" in options and options["phase"] not in ("before", "after"):
        problems.append(f'{where}.phase must be "before" or "after", got {options["phase"]!r}')
    if "phase" in options and action not in WHOLE_REQUEST:
        problems.append(f"{where}.phase applies to {', '.join(WHOLE_REQUEST)} only")
    if "delay_ms" in options:
        delay = options["delay_ms"]
        if not isinstance(delay, (int, float)) or isinstance(delay, bool) or not 0 <= delay <= 60_000:
            problems.append(f"{where}.delay_ms must be 0..60000, got {delay!r}")
    elif action == "delay":
        problems.append(f"{where}: a delay rule needs delay_ms")
    if "after_ms" in options:
        value = options["after_ms"]
        bounds = value if isinstance(value, list) else [value, value]
        if (
            len(bounds) != 2
            or not all(isinstance(b, (int, float)) and not isinstance(b, bool) and b >= 0 for b in bounds)
            or bounds[0] > bounds[1]
        ):
            problems.append(f"{where}.after_ms must be a number >= 0 or [low, high], got {value!r}")
    return problems


class FaultState:
    """The server process's rules and counters (one instance: ``STATE``)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seed = 0
        self.rules: list[Rule] = []
        self.counts: dict[str, dict[str, int]] = {}
        self.events: deque[dict[str, Any]] = deque(maxlen=MAX_EVENTS)

    def configure(self, spec: Any) -> dict[str, Any]:
        seed, rules = parse_spec(spec)
        with self.lock:
            self.seed, self.rules = seed, rules
            for rule in rules:
                self.counts.setdefault(rule.id, {"fired": 0})
        return self.snapshot()

    def reset(self) -> None:
        with self.lock:
            self.seed, self.rules = 0, []
            self.counts.clear()
            self.events.clear()

    def active(self, on: str) -> list[Rule]:
        # Unlocked fast path: the list is replaced, never mutated in place.
        return [r for r in self.rules if r.on == on and not r.spent()]

    def record(self, rule: Rule, detail: dict[str, Any], **extra_counts: int) -> None:
        """Count one injection (the caller holds the lock)."""
        rule.fired += 1
        counts = self.counts.setdefault(rule.id, {"fired": 0})
        counts["fired"] += 1
        for name, value in extra_counts.items():
            counts[name] = counts.get(name, 0) + value
        self.events.append({"at": time.time(), "rule": rule.id, "action": rule.action, **detail})

    def snapshot(self, recent: int = 20) -> dict[str, Any]:
        with self.lock:
            return {
                "seed": self.seed,
                "rules": [r.as_dict() for r in self.rules],
                "counts": {k: dict(v) for k, v in self.counts.items()},
                "events": list(self.events)[-recent:] if recent > 0 else [],
            }


STATE = FaultState()


# ---- the hooks: what local/runtime/runner.py and local/pollers/streams.py call ----
class ArmedKill:
    """A pending kill of one invocation's execution environment."""

    def __init__(self, rule: Rule, function: str, after_ms: float, kill: Callable[[], None]):
        self.rule = rule
        self.function = function
        self.after_ms = after_ms
        self.kill = kill
        self.lock = threading.Lock()
        self.done = False
        self.fired = False
        self.timer = threading.Timer(after_ms / 1000, self._fire)
        self.timer.daemon = True

    def _fire(self) -> None:
        with self.lock:
            if self.done:
                return
            self.fired = True
        with STATE.lock:
            STATE.record(self.rule, {"function": self.function, "after_ms": round(self.after_ms)})
        self.kill()


def arm_invocation(function_name: str, kill: Callable[[], None]) -> ArmedKill | None:
    """Called by the runner as an invocation starts: maybe arm a crash/timeout of the environment."""
    rules = STATE.active("lambda:Invoke")
    if not rules:
        return None
    with STATE.lock:
        for rule in rules:
            wanted = rule.options.get("function")
            if wanted and wanted not in function_name:
                continue
            if not rule.draw():
                continue
            bounds = rule.options.get("after_ms", [0, 100])
            low, high = bounds if isinstance(bounds, list) else (bounds, bounds)
            armed = ArmedKill(rule, function_name, rule.rng.uniform(float(low), float(high)), kill)
            armed.timer.start()
            return armed
    return None


def disarm_invocation(armed: ArmedKill | None, kind: str) -> str:
    """Called by the runner when the invocation ended with ``kind``; returns the kind to report."""
    if armed is None:
        return kind
    with armed.lock:
        armed.done = True
        fired = armed.fired
    armed.timer.cancel()
    if fired and kind == "EXIT" and armed.rule.action == "timeout":
        return "TIMEOUT"
    return kind


def duplicate_delivery(mapping_uuid: str) -> bool:
    """Called by a stream mapping after a batch was processed: deliver it once more?"""
    rules = STATE.active("esm:Deliver")
    if not rules:
        return False
    with STATE.lock:
        for rule in rules:
            if rule.options.get("mapping") not in (None, mapping_uuid):
                continue
            if rule.draw():
                STATE.record(rule, {"mapping": mapping_uuid})
                return True
    return False
