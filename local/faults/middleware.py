"""The fault-injection WSGI middleware: the control endpoint, S3 DeleteObjects answered with injected faults, and
CloudFormation CreateChangeSet refused."""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import io
import json
import re
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs
from xml.sax.saxutils import escape, unescape

from local import clock
from local.faults.spec import PATH, STATE, WHOLE_REQUEST, FaultSpecError, FaultState, Rule


class FaultMiddleware:
    """WSGI: serves the control endpoint and intercepts S3 DeleteObjects; everything else passes through."""

    def __init__(
        self, app: Any, progress: Callable[[], dict[str, Any]], state: FaultState | None = None
    ) -> None:
        self.app = app
        self.progress = progress  # each stream mapping's progress, reported by GET
        self.state = state or STATE

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "")
        if path == PATH:
            return self._control(environ, start_response)
        if path == clock.PATH:
            return clock.handle(environ, start_response, _read_body(environ))
        if self.state.rules and _is_delete_objects(environ):
            rules = self.state.active("s3:DeleteObjects")
            if rules:
                return self._delete_objects(environ, start_response, rules)
        if self.state.rules and _is_cloudformation(environ):
            rules = self.state.active("cloudformation:CreateChangeSet")
            if rules:
                body = _read_body(environ)
                environ["wsgi.input"] = io.BytesIO(body)
                environ["CONTENT_LENGTH"] = str(len(body))
                refused = self._create_change_set(environ, body, rules)
                if refused is not None:
                    return _cloudformation_error(start_response, environ, refused)
        return self.app(environ, start_response)

    # ---- CloudFormation CreateChangeSet ----
    def _create_change_set(self, environ: dict[str, Any], body: bytes, rules: list[Rule]) -> str | None:
        """The message of the refusal of a CreateChangeSet a rule matches and fires for; None otherwise."""
        operation, params = _cloudformation_call(environ, body)
        if operation != "CreateChangeSet":
            return None
        stack, change_set_type = str(params.get("StackName", "")), str(params.get("ChangeSetType", "CREATE"))
        with self.state.lock:
            for rule in rules:
                if rule.options.get("stack") not in (None, stack):
                    continue
                if rule.options.get("change_set_type") not in (None, change_set_type):
                    continue
                if rule.draw():
                    self.state.record(rule, {"stack": stack, "change_set_type": change_set_type})
                    return f"Change set of type {change_set_type} for stack {stack} refused (fault injection)"
        return None

    # ---- the control endpoint ----
    def _control(self, environ: dict[str, Any], start_response: Any) -> Any:
        method = environ.get("REQUEST_METHOD", "GET")
        if method == "GET":
            try:
                recent = int(parse_qs(environ.get("QUERY_STRING", "")).get("events", ["20"])[0])
            except ValueError:
                recent = 20
            body = dict(self.state.snapshot(recent), mappings=self.progress())
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
            return delete_result(start_response, "", _injected(failed))
        status, headers, result = _forward(self.app, environ, _delete_body(body, remaining))
        if not status.startswith("200"):
            start_response(status, headers)
            return [result]
        return delete_result(start_response, result.decode("utf-8"), _injected(failed))


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


def _injected(failed: dict[str, str]) -> list[tuple[str, str, str]]:
    """The keys a fault rule fails, each with its error code, as DeleteResult errors."""
    return [(key, code, "injected by the local AWS (fault injection)") for key, code in failed.items()]


def delete_result(start_response: Any, moto_xml: str, errors: Iterable[tuple[str, str, str]]) -> list[bytes]:
    """A DeleteObjects answer, 200: moto's DeleteResult (an empty one when moto was not asked) with an ``<Error>``
    spliced in for each (key, code, message). The one writer of it: the fault rules' key errors here, and the keys
    IAM denies (local/auth/middleware.py)."""
    spliced = "".join(
        f"<Error><Key>{escape(key)}</Key><Code>{escape(code)}</Code><Message>{escape(message)}</Message></Error>"
        for key, code, message in errors
    )
    if "</DeleteResult>" in moto_xml:
        xml = moto_xml.replace("</DeleteResult>", spliced + "</DeleteResult>")
    else:
        xml = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">{spliced}</DeleteResult>'
        )
    body = xml.encode("utf-8")
    start_response("200 OK", [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))])
    return [body]


def _is_cloudformation(environ: dict[str, Any]) -> bool:
    return environ.get("REQUEST_METHOD") == "POST" and "/cloudformation/aws4_request" in environ.get(
        "HTTP_AUTHORIZATION", ""
    )


def _cloudformation_call(environ: dict[str, Any], body: bytes) -> tuple[str, dict[str, Any]]:
    """(operation, parameters) of a CloudFormation request, in the JSON or the query protocol."""
    target = environ.get("HTTP_X_AMZ_TARGET")
    if target:
        try:
            data = json.loads(body or b"{}")
        except ValueError:
            data = {}
        return target.rsplit(".", 1)[-1], data if isinstance(data, dict) else {}
    params = {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}
    params.update({k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()})
    return params.get("Action", ""), params


def _cloudformation_error(start_response: Any, environ: dict[str, Any], message: str) -> list[bytes]:
    """CloudFormation's ValidationError, in the protocol of the request."""
    request_id = str(uuid.uuid4())
    if environ.get("HTTP_X_AMZ_TARGET"):
        data = json.dumps({"__type": "ValidationError", "message": message}).encode()
        content_type = "application/x-amz-json-1.0"
    else:
        data = (
            '<ErrorResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><Error>'
            f"<Type>Sender</Type><Code>ValidationError</Code><Message>{escape(message)}</Message></Error>"
            f"<RequestId>{request_id}</RequestId></ErrorResponse>"
        ).encode()
        content_type = "text/xml"
    start_response(
        "400 Bad Request",
        [
            ("Content-Type", content_type),
            ("Content-Length", str(len(data))),
            ("x-amzn-RequestId", request_id),
        ],
    )
    return [data]
