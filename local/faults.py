"""Fault injection for the local AWS, switched on per test through an HTTP control endpoint.

Nothing is injected until a spec is posted; ``DELETE`` switches everything off again. The server side is a WSGI
middleware (installed by local/server.py) plus two hooks, one in local/runner.py and one in local/esm.py. The
client side (``FaultClient``, ``set_faults``...) uses only the standard library.

Control endpoint, on the local AWS itself::

    POST   /_doctable/faults   {"seed": 7, "rules": [RULE, ...]}   replace the rules (counts are kept)
    GET    /_doctable/faults   rules, counts per rule, the last injections (``?events=N``, default 20; at
                               most 2,000 are kept), and every stream mapping's progress (checkpoint,
                               shard end, ``pending`` records: 0 when it has delivered everything)
    DELETE /_doctable/faults   no rules, counts and injections forgotten

A RULE is a JSON object: ``id`` (optional, default ``<on>#<index>``), ``on`` (what it intercepts), ``action``,
``rate`` (probability, 0..1, default 1), ``limit`` (at most this many injections; default unlimited) and::

    on: "s3:DeleteObjects"   (the request as it reaches the server over HTTP: the consumer's own call)
        action "slowdown"        503 SlowDown, the throttling answer (the SDK retries it)
               "internal-error"  500 InternalError (the SDK retries it)
               "access-denied"   403 AccessDenied for the whole request (the SDK does NOT retry it)
               "key-errors"      200, but some keys come back in <Error> (not deleted; the SDK does NOT retry)
               "delay"           hold the request ``delay_ms`` before serving it
        bucket      only requests to this bucket
        match       a glob on the keys (``fixable-*``): the request is eligible only when a key matches,
                    and only matching keys fail ("key-errors")
        keys        "key-errors": how many keys of an affected request fail (an int, or "all"; default 1)
        code        "key-errors": the per-key error code (default "InternalError")
        phase       whole-request errors: "before" (nothing deleted, default) or "after" (the keys were deleted,
                    but for those a key-errors rule fails, then the error is returned: an answer that was lost)
    on: "lambda:Invoke"      (one invocation of a function by the local runner)
        action "crash"           kill the execution environment ``after_ms`` into the invocation:
                                 "Runtime exited with error: signal: killed" (Runtime.ExitError)
               "timeout"         the same kill, reported as "Task timed out" (status timeout)
        function    only this function (its name, or a substring of it)
        after_ms    milliseconds, an int or [low, high] drawn uniformly (default [0, 100]); an invocation that
                    returns first is not affected (and not counted)
    on: "esm:Deliver"        (one batch delivered by a stream mapping)
        action "duplicate"       after the function processed the batch (no function error), deliver the same
                                 batch again (the first checkpoint was "lost"); the second result counts
        mapping     only this mapping UUID

Each rule draws from its own ``random.Random(f"{seed}:{id}")``: a run is reproducible for a given order of
requests, and adding a rule does not change the draws of the others.
"""

from __future__ import annotations

import base64
import contextlib
import fnmatch
import hashlib
import io
import json
import random
import re
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs
from xml.sax.saxutils import escape

PATH = "/_doctable/faults"

TARGETS: dict[str, tuple[str, ...]] = {
    "s3:DeleteObjects": ("slowdown", "internal-error", "access-denied", "key-errors", "delay"),
    "lambda:Invoke": ("crash", "timeout"),
    "esm:Deliver": ("duplicate",),
}
OPTIONS: dict[str, tuple[str, ...]] = {
    "s3:DeleteObjects": ("bucket", "match", "keys", "code", "phase", "delay_ms"),
    "lambda:Invoke": ("function", "after_ms"),
    "esm:Deliver": ("mapping",),
}
COMMON = ("id", "on", "action", "rate", "limit")
WHOLE_REQUEST = ("slowdown", "internal-error", "access-denied")
MAX_EVENTS = 2000


class FaultSpecError(ValueError):
    pass


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
    for name in ("bucket", "match", "function", "mapping", "code"):
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


# ------------------------------------------------------------------------------------------------ the server
class FaultMiddleware:
    """WSGI: serves the control endpoint and intercepts S3 DeleteObjects; everything else passes through."""

    def __init__(self, app: Any, state: FaultState | None = None):
        self.app = app
        self.state = state or STATE

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "")
        if path == PATH:
            return self._control(environ, start_response)
        if self.state.rules and _is_delete_objects(environ):
            rules = self.state.active("s3:DeleteObjects")
            if rules:
                return self._delete_objects(environ, start_response, rules)
        return self.app(environ, start_response)

    # ---- the control endpoint ----
    def _control(self, environ: dict[str, Any], start_response: Any) -> Any:
        method = environ.get("REQUEST_METHOD", "GET")
        if method == "GET":
            try:
                recent = int(parse_qs(environ.get("QUERY_STRING", "")).get("events", ["20"])[0])
            except ValueError:
                recent = 20
            body = dict(self.state.snapshot(recent), mappings=mapping_progress())
            return _json(start_response, "200 OK", body)
        if method == "DELETE":
            self.state.reset()
            return _json(start_response, "200 OK", {"reset": True})
        if method == "POST":
            try:
                spec = json.loads(_read_body(environ) or b"{}")
                return _json(start_response, "200 OK", self.state.configure(spec))
            except (ValueError, FaultSpecError) as exc:
                return _json(start_response, "400 Bad Request", {"error": str(exc)})
        return _json(start_response, "405 Method Not Allowed", {"error": f"{method} not allowed"})

    # ---- S3 DeleteObjects ----
    def _delete_objects(self, environ: dict[str, Any], start_response: Any, rules: list[Rule]) -> Any:
        bucket = _bucket_of(environ)
        body = _read_body(environ)
        keys = _keys_of(body)
        whole: Rule | None = None
        phase = "before"
        delay_ms = 0.0
        failed: dict[str, str] = {}
        with self.state.lock:
            eligible: dict[str, list[str]] = {}
            for rule in rules:
                if rule.options.get("bucket") not in (None, bucket):
                    continue
                pattern = rule.options.get("match")
                matching = [k for k in keys if pattern is None or fnmatch.fnmatchcase(k, pattern)]
                if matching:
                    eligible[rule.id] = matching
            # Whole-request answers first (the first that fires wins), then per-key errors.
            for rule in rules:
                if rule.id not in eligible:
                    continue
                if rule.action == "delay" and rule.draw():
                    delay_ms = max(delay_ms, float(rule.options["delay_ms"]))
                    self.state.record(rule, {"bucket": bucket, "keys": len(keys)})
                elif rule.action in WHOLE_REQUEST and whole is None and rule.draw():
                    whole, phase = rule, rule.options.get("phase", "before")
                    self.state.record(rule, {"bucket": bucket, "keys": len(keys), "phase": phase})
            # Per-key errors apply unless the request is refused before anything is deleted ("before").
            # With phase "after" they still hold: a key that cannot be deleted is not deleted by a request
            # whose answer is then lost.
            if whole is None or phase == "after":
                for rule in rules:
                    if rule.id not in eligible or rule.action != "key-errors":
                        continue
                    candidates = [k for k in eligible[rule.id] if k not in failed]
                    if not candidates or not rule.draw():
                        continue
                    count = rule.options.get("keys", 1)
                    chosen = (
                        candidates
                        if count == "all"
                        else rule.rng.sample(candidates, min(int(count), len(candidates)))
                    )
                    failed.update(dict.fromkeys(chosen, rule.options.get("code", "InternalError")))
                    self.state.record(
                        rule, {"bucket": bucket, "failed_keys": sorted(chosen)[:20]}, keys=len(chosen)
                    )
        if delay_ms:
            time.sleep(delay_ms / 1000)
        remaining = [k for k in keys if k not in failed]
        if whole is not None:
            if phase == "after" and remaining:
                _forward(self.app, environ, _delete_body(body, remaining))
            return _s3_error(start_response, whole.action)
        if not failed:
            environ["wsgi.input"] = io.BytesIO(body)
            return self.app(environ, start_response)
        if not remaining:  # nothing left to send: answer for S3
            return _delete_result(start_response, "", failed)
        status, headers, result = _forward(self.app, environ, _delete_body(body, remaining))
        if not status.startswith("200"):
            start_response(status, headers)
            return [result]
        return _delete_result(start_response, result.decode("utf-8"), failed)


def _json(start_response: Any, status: str, body: Any) -> list[bytes]:
    data = json.dumps(body, default=str).encode("utf-8")
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
    return [data]


def _read_body(environ: dict[str, Any]) -> bytes:
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    stream = environ.get("wsgi.input")
    if stream is None:
        return b""
    return stream.read(length) if length > 0 else stream.read()


def _is_delete_objects(environ: dict[str, Any]) -> bool:
    if environ.get("REQUEST_METHOD") != "POST":
        return False
    if "delete" not in parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True):
        return False
    auth = environ.get("HTTP_AUTHORIZATION", "")
    return "/s3/aws4_request" in auth or not auth


def _bucket_of(environ: dict[str, Any]) -> str:
    host = (environ.get("HTTP_HOST") or "").rsplit(":", 1)[0]
    if host.endswith(".localhost"):
        return host.removesuffix(".localhost")  # virtual-hosted style: <bucket>.localhost:<port>
    return environ.get("PATH_INFO", "/").lstrip("/").split("/", 1)[0]


_KEY = re.compile(rb"<Key>(.*?)</Key>", re.S)


def _keys_of(body: bytes) -> list[str]:
    from xml.sax.saxutils import unescape

    return [unescape(m.group(1).decode("utf-8")) for m in _KEY.finditer(body)]


def _delete_body(body: bytes, keys: Iterable[str]) -> bytes:
    quiet = b"<Quiet>true</Quiet>" in body
    objects = "".join(f"<Object><Key>{escape(k)}</Key></Object>" for k in keys)
    return (
        '<?xml version="1.0" encoding="UTF-8"?><Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
        f"{objects}{'<Quiet>true</Quiet>' if quiet else ''}</Delete>"
    ).encode()


def _forward(app: Any, environ: dict[str, Any], body: bytes) -> tuple[str, list[tuple[str, str]], bytes]:
    """Serve the request with ``body`` by moto; return its status, headers and body."""
    inner = dict(environ)
    inner["wsgi.input"] = io.BytesIO(body)
    inner["CONTENT_LENGTH"] = str(len(body))
    for name in list(inner):
        if name.startswith("HTTP_X_AMZ_CHECKSUM_") or name == "HTTP_X_AMZ_SDK_CHECKSUM_ALGORITHM":
            del inner[name]
    if "HTTP_CONTENT_MD5" in inner:
        inner["HTTP_CONTENT_MD5"] = base64.b64encode(hashlib.md5(body).digest()).decode("ascii")  # noqa: S324
    captured: dict[str, Any] = {}

    def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        captured["status"], captured["headers"] = status, headers
        return lambda data: None

    chunks = app(inner, capture)
    try:
        data = b"".join(chunks)
    finally:
        close = getattr(chunks, "close", None)
        if close:
            close()
    return captured.get("status", "500 Internal Server Error"), captured.get("headers", []), data


_S3_ERRORS = {
    "access-denied": ("403 Forbidden", "AccessDenied", "Access Denied"),
    "slowdown": ("503 Slow Down", "SlowDown", "Please reduce your request rate."),
    "internal-error": (
        "500 Internal Server Error",
        "InternalError",
        "We encountered an internal error. Please try again.",
    ),
}


def _s3_error(start_response: Any, action: str) -> list[bytes]:
    status, code, message = _S3_ERRORS[action]
    request_id = uuid.uuid4().hex[:16].upper()
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>{code}</Code><Message>{message}</Message><RequestId>{request_id}</RequestId>"
        f"<HostId>doctable-local-fault</HostId></Error>"
    ).encode()
    start_response(
        status,
        [
            ("Content-Type", "application/xml"),
            ("Content-Length", str(len(body))),
            ("x-amz-request-id", request_id),
        ],
    )
    return [body]


def _delete_result(start_response: Any, moto_xml: str, failed: dict[str, str]) -> list[bytes]:
    errors = "".join(
        f"<Error><Key>{escape(key)}</Key><Code>{escape(code)}</Code>"
        f"<Message>injected by local/faults.py</Message></Error>"
        for key, code in failed.items()
    )
    if "</DeleteResult>" in moto_xml:
        xml = moto_xml.replace("</DeleteResult>", errors + "</DeleteResult>")
    else:
        xml = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">{errors}</DeleteResult>'
        )
    body = xml.encode("utf-8")
    start_response("200 OK", [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))])
    return [body]


# ------------------------------------------------------------------------- hooks (runner.py, esm.py)
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


def mapping_progress() -> dict[str, Any]:
    """Each stream mapping's checkpoint against the end of its shard (``idle``: nothing left to deliver)."""
    try:
        from local.esm import get_manager

        pollers = list(get_manager().pollers.items())
    except (RuntimeError, ImportError):
        return {}
    out: dict[str, Any] = {}
    for mapping_uuid, poller in pollers:
        esm = poller._mapping()
        found = poller._shard(esm) if esm is not None else None
        end = found[1].starting_sequence_number + len(found[1].items) if found else None
        checkpoint = poller.status.checkpoint
        out[mapping_uuid] = {
            "state": poller.status.state,
            "checkpoint": str(checkpoint) if checkpoint is not None else None,
            "shard_end": str(end) if end is not None else None,
            "pending": (end - checkpoint) if end is not None and checkpoint is not None else None,
            "invocations": poller.status.invocations,
            "last_result": poller.status.last_result,
        }
    return out


# ------------------------------------------------------------------------------------------------ the client
class FaultClient:
    """Talks to the control endpoint of the local AWS at ``url`` (e.g. ``http://localhost:4566``)."""

    def __init__(self, url: str, timeout: float = 10.0):
        self.url = url.rstrip("/") + PATH
        self.timeout = timeout

    def _call(self, method: str, body: Any = None, query: str = "") -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(self.url + query, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")
            with contextlib.suppress(ValueError):
                detail = json.loads(detail).get("error", detail)
            raise FaultSpecError(f"{method} {self.url}: {exc.code}: {detail}") from None

    def set(self, rules: list[dict[str, Any]], seed: int = 0) -> dict[str, Any]:
        """Replace the rules (counts of rules already seen are kept)."""
        return self._call("POST", {"seed": seed, "rules": rules})

    def clear(self) -> None:
        """No rules; counts and injections forgotten."""
        self._call("DELETE")

    def status(self, events: int = 20) -> dict[str, Any]:
        return self._call("GET", query=f"?events={events}")

    def counts(self) -> dict[str, dict[str, int]]:
        return dict(self.status(events=0)["counts"])

    def mappings(self) -> dict[str, Any]:
        return dict(self.status(events=0)["mappings"])


def set_faults(url: str, rules: list[dict[str, Any]], seed: int = 0) -> dict[str, Any]:
    return FaultClient(url).set(rules, seed)


def clear_faults(url: str) -> None:
    FaultClient(url).clear()


def fault_status(url: str) -> dict[str, Any]:
    return FaultClient(url).status()
