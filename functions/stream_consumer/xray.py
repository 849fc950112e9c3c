"""X-Ray subsegments for the consumer's AWS calls, sent without the X-Ray SDK.

Lambda's active tracing records each invocation itself (its segment, with Initialization and Invocation). Each
S3 and DynamoDB call is added to that trace as one subsegment, shaped as the X-Ray SDK for Python shapes it in
Lambda: name = the service's endpoint prefix (``s3``, ``dynamodb``), namespace ``aws``, ``aws.operation``,
``region``, ``request_id``, ``retries`` (and ``bucket_name`` or ``table_name(s)``), ``http.response.status``,
``error`` (4xx), ``throttle`` (429), ``fault`` (5xx, or no response) and the error as ``cause``. Each is sent
when its call ends, as one UDP datagram to the daemon Lambda runs (``AWS_XRAY_DAEMON_ADDRESS``) in the daemon's
protocol: a ``{"format": "json", "version": 1}`` line, then the document, whose ``parent_id`` is the
invocation's segment. The request carries ``X-Amzn-Trace-Id`` naming the subsegment as its parent, so the
service's own segment joins the trace (the header is never signed: SigV4 leaves it out).

Nothing is sent when the invocation is not sampled (``_X_AMZN_TRACE_ID``, set by the runtime per invocation,
lacks ``Sampled=1``), outside Lambda (no such variable) or with ``POWERTOOLS_TRACE_DISABLED`` true. A failure
to send is ignored: tracing never fails a batch.

Not the SDK (aws-xray-sdk): importing it loads asyncio and wrapt, about 40 ms of a REMOVE's cold start, and its
support ends on 2027-02-25.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

TRACE_HEADER_ENV = "_X_AMZN_TRACE_ID"
DAEMON_ADDRESS_ENV = "AWS_XRAY_DAEMON_ADDRESS"
DISABLED_ENV = "POWERTOOLS_TRACE_DISABLED"
DEFAULT_DAEMON_ADDRESS = "127.0.0.1:2000"
PROTOCOL_HEADER = b'{"format": "json", "version": 1}\n'
TRACE_HEADER = "X-Amzn-Trace-Id"
_CONTEXT_KEY = "doctable_xray_subsegment"  # botocore's per-call context dict holds the open subsegment
_TRUE = ("1", "true", "yes", "on")


@dataclass
class _Open:
    """One AWS call being traced."""

    trace_id: str
    parent_id: str
    name: str
    operation: str
    start: float
    aws: dict[str, Any]
    id: str = field(default_factory=lambda: os.urandom(8).hex())


def sampled_trace(header: str | None) -> tuple[str, str] | None:
    """(trace id, parent id) from a trace header when it is sampled, else None."""
    if not header:
        return None
    fields = dict(part.strip().split("=", 1) for part in header.split(";") if "=" in part)
    root, parent = fields.get("Root", ""), fields.get("Parent", "")
    if fields.get("Sampled") != "1" or not root or not parent:
        return None
    return root, parent


def daemon_address(value: str | None) -> tuple[str, int]:
    """The daemon's UDP address from ``host:port`` or ``tcp:host:port udp:host:port``."""
    chosen = value or DEFAULT_DAEMON_ADDRESS
    for part in chosen.split():
        if part.startswith("udp:"):
            chosen = part[len("udp:") :]
            break
    host, _, port = chosen.rpartition(":")
    return host, int(port)


class AwsCallTracer:
    """Registers on a botocore session's events; every client built from it afterwards is traced."""

    def __init__(
        self,
        environ: Mapping[str, str] = os.environ,
        send: Callable[[bytes], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.environ = environ
        self.clock = clock
        self._send = send or _UdpSender(daemon_address(environ.get(DAEMON_ADDRESS_ENV))).send

    @property
    def enabled(self) -> bool:
        return self.environ.get(DISABLED_ENV, "").lower() not in _TRUE

    def install(self, session: Any) -> None:
        if not self.enabled:
            return
        session.register("before-parameter-build", self._start)
        session.register("request-created", self._header)
        session.register("after-call", self._end)
        session.register("after-call-error", self._end_without_response)

    def _start(self, params: Mapping[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        trace = sampled_trace(self.environ.get(TRACE_HEADER_ENV))
        if trace is None:
            return
        service = model.service_model.endpoint_prefix
        aws: dict[str, Any] = {"operation": model.name, "region": context.get("client_region")}
        if "Bucket" in params:
            aws["bucket_name"] = params["Bucket"]
        if "Key" in params:
            aws["key"] = params["Key"]
        if "TableName" in params:
            aws["table_name"] = params["TableName"]
        if isinstance(params.get("RequestItems"), Mapping):
            aws["table_names"] = sorted(params["RequestItems"])
        context[_CONTEXT_KEY] = _Open(trace[0], trace[1], service, model.name, self.clock(), aws)

    def _header(self, request: Any, **_: Any) -> None:
        call = (getattr(request, "context", None) or {}).get(_CONTEXT_KEY)
        if call is not None:
            request.headers[TRACE_HEADER] = f"Root={call.trace_id};Parent={call.id};Sampled=1"

    def _end(self, http_response: Any, parsed: Mapping[str, Any], context: dict[str, Any], **_: Any) -> None:
        call = context.pop(_CONTEXT_KEY, None)
        if call is None:
            return
        meta = parsed.get("ResponseMetadata", {})
        status = int(getattr(http_response, "status_code", 0) or meta.get("HTTPStatusCode") or 0)
        call.aws["request_id"] = meta.get("RequestId")
        call.aws["retries"] = meta.get("RetryAttempts", 0)
        error = parsed.get("Error") if status >= 400 else None
        cause = None
        if error:
            code, message = error.get("Code", str(status)), error.get("Message", "")
            cause = {
                "exceptions": [{"id": os.urandom(8).hex(), "type": code, "message": message, "remote": True}]
            }
        self._emit(call, status, cause)

    def _end_without_response(self, exception: BaseException, context: dict[str, Any], **_: Any) -> None:
        call = context.pop(_CONTEXT_KEY, None)
        if call is not None:
            exc = {"id": os.urandom(8).hex(), "type": type(exception).__name__, "message": str(exception)}
            self._emit(call, 0, {"exceptions": [exc]})

    def _emit(self, call: _Open, status: int, cause: dict[str, Any] | None) -> None:
        document: dict[str, Any] = {
            "id": call.id,
            "name": call.name,
            "start_time": call.start,
            "end_time": self.clock(),
            "type": "subsegment",
            "trace_id": call.trace_id,
            "parent_id": call.parent_id,
            "namespace": "aws",
            "aws": call.aws,
        }
        if status:
            document["http"] = {"response": {"status": status}}
        if status == 429:
            document["throttle"] = True
        if 400 <= status < 500:
            document["error"] = True
        if status >= 500 or not status:
            document["fault"] = True
        if cause:
            document["cause"] = cause
        try:
            self._send(PROTOCOL_HEADER + json.dumps(document, separators=(",", ":"), default=str).encode())
        except Exception:  # tracing never fails a call
            return


class _UdpSender:
    def __init__(self, address: tuple[str, int]) -> None:
        self.address = address
        self._socket: socket.socket | None = None

    def send(self, datagram: bytes) -> None:
        if self._socket is None:
            self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self._socket.setblocking(False)
        self._socket.sendto(datagram, self.address)
