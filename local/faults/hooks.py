"""The fault hooks the Lambda runner (crash/timeout of an invocation) and the stream pollers (duplicates) call."""

from __future__ import annotations

import threading
from collections.abc import Callable

from local.faults.spec import STATE, Rule


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
