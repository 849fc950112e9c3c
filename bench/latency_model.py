"""A model of S3's and DynamoDB's request latency for the bench: an in-memory bucket and table that answer
botocore's requests at ``before-send`` (so the consumers' and the client's real clients serialize and parse every
request) and charge each request a service time, ``fixed + per_key x keys``, by sleeping for it in the calling
thread.

The sleeps are real, in the project and in the baseline alike, so concurrency (the project's parallel HEADs) is
the consumer's own and no emulator work is measured: the time a consumer takes is its own CPU plus the modelled
waits. The defaults come from published figures, named in :data:`SOURCES` and printed by the bench.
"""

from __future__ import annotations

import hashlib
import io
import json
import threading
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from bench.events import etag_of

S3_NS = "http://s3.amazonaws.com/doc/2006-03-01/"

SOURCES = {
    "s3_latency": (
        "AWS whitepaper 'Best practices design patterns: optimizing Amazon S3 performance': applications "
        "can achieve consistent small-object latencies of roughly 100-200 ms (the model takes the middle, 150 ms)"
    ),
    "s3_prefix_rate": (
        "Amazon S3 user guide, 'Performance guidelines for Amazon S3': at least 3,500 PUT/COPY/POST/DELETE and "
        "5,500 GET/HEAD requests per second per partitioned prefix (a DeleteObjects key counts as one DELETE, a "
        "PutObject as one PUT: 1/3,500 s per key, on one lane that concurrent requests share)"
    ),
    "dynamodb_latency": (
        "Amazon DynamoDB developer guide, 'What is Amazon DynamoDB?': single-digit millisecond performance at any "
        "scale (the model takes 5 ms per BatchGetItem or PutItem request)"
    ),
}


@dataclass(frozen=True)
class ServiceTime:
    """Seconds one request takes: ``fixed + per_key x keys`` (keys: objects in the request, items read)."""

    fixed_s: float
    per_key_s: float
    source: str

    def charge(self, keys: int) -> float:
        return self.fixed_s + self.per_key_s * keys


# Requests whose keys share one prefix's PUT/DELETE rate: a key waits for the keys of every earlier request, across
# threads (parallel requests cannot exceed 3,500 keys a second together).
RATE_LIMITED = frozenset({"DeleteObject", "DeleteObjects", "PutObject"})


def default_model(s3_ms: float = 150.0, dynamodb_ms: float = 5.0) -> dict[str, ServiceTime]:
    s3 = s3_ms / 1000
    return {
        "HeadObject": ServiceTime(s3, 0.0, "s3_latency"),
        "DeleteObject": ServiceTime(s3, 1 / 3500, "s3_latency + s3_prefix_rate"),
        "DeleteObjects": ServiceTime(s3, 1 / 3500, "s3_latency + s3_prefix_rate"),
        "ListObjectsV2": ServiceTime(s3, 0.0, "s3_latency"),
        "PutObject": ServiceTime(s3, 1 / 3500, "s3_latency + s3_prefix_rate"),
        "BatchGetItem": ServiceTime(dynamodb_ms / 1000, 0.0, "dynamodb_latency"),
        "PutItem": ServiceTime(dynamodb_ms / 1000, 0.0, "dynamodb_latency"),
    }


def zero_model() -> dict[str, ServiceTime]:
    """Every request answered at once: what is left is the consumer's own work (the in-memory store)."""
    return {op: ServiceTime(0.0, 0.0, "none") for op in default_model()}


@dataclass(frozen=True)
class _HttpRequest:
    """What the model's operations read of a request (botocore's AWSPreparedRequest has the same fields)."""

    url: str
    body: bytes
    method: str
    headers: Mapping[str, str] = field(default_factory=dict)


class PrefixLane:
    """One prefix's PUT/DELETE rate as a lane: a request's keys start when the keys of every earlier request are
    done. ``shared``: a ``multiprocessing.Value("d")`` holding when the lane is free again, to share one lane
    between processes (the full-shard replay's execution environments); time.monotonic is system-wide on Linux."""

    def __init__(self, shared: Any = None) -> None:
        self._shared = shared
        self._free_at = 0.0
        self._lock = threading.Lock()

    def book(self, seconds: float) -> float:
        """Book ``seconds`` of the lane: how long from now until they are done."""
        lock = self._shared.get_lock() if self._shared is not None else self._lock
        with lock:
            now = time.monotonic()
            free_at = self._shared.value if self._shared is not None else self._free_at
            end = max(now, free_at) + seconds
            if self._shared is not None:
                self._shared.value = end
            else:
                self._free_at = end
        return end - now


class _Raw(io.BytesIO):
    def stream(self, **_: Any) -> Iterable[bytes]:
        yield self.getvalue()


@dataclass
class _Object:
    etag: str
    modified: float


class ModelledAws:
    """One bucket and one table in memory; install it on a boto3 session before the consumers build clients."""

    def __init__(
        self, bucket: str, table: str, model: dict[str, ServiceTime], lane: PrefixLane | None = None
    ) -> None:
        self.bucket = bucket
        self.table = table
        self.model = model
        self.objects: dict[str, _Object] = {}
        self.items: dict[tuple[str, str], dict[str, Any]] = {}
        self.requests: Counter[str] = Counter()
        self.charged_s = 0.0  # service time charged (summed over requests; concurrent ones overlap)
        self.lane = lane or PrefixLane()  # the prefix's PUT/DELETE rate
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ set-up and checks (no charge)

    def put(self, keys: Iterable[str], upload: int = 0) -> None:
        """Upload ``keys`` (the ``upload``-th time: each upload of a key has its own ETag, :func:`etag_of`)."""
        now = time.time()
        with self._lock:
            for key in keys:
                self.objects[key] = _Object(etag_of(key, upload), now)

    def present(self, keys: Iterable[str]) -> set[str]:
        with self._lock:
            return {key for key in keys if key in self.objects}

    def etag(self, key: str) -> str | None:
        """The ETag of the object ``key`` names now, None if there is none."""
        with self._lock:
            found = self.objects.get(key)
        return found.etag if found else None

    def reset_counts(self) -> None:
        with self._lock:
            self.requests.clear()
            self.charged_s = 0.0

    def install(self) -> None:
        """Answer every S3 and DynamoDB request of each botocore session created from now on (boto3's clients, and
        the project's botocore clients alike), until :meth:`uninstall`."""
        from botocore.handlers import BUILTIN_HANDLERS

        BUILTIN_HANDLERS.append(("before-send", self._maybe_answer))

    def uninstall(self) -> None:
        from botocore.handlers import BUILTIN_HANDLERS

        BUILTIN_HANDLERS[:] = [entry for entry in BUILTIN_HANDLERS if entry[1] != self._maybe_answer]

    def _maybe_answer(self, request: Any, event_name: str = "", **kwargs: Any) -> Any:
        service = event_name.split(".")[1] if event_name.count(".") >= 2 else ""
        if service not in ("s3", "dynamodb"):
            return None
        return self._answer(request, event_name=event_name, **kwargs)

    # ------------------------------------------------------------------ requests

    def _answer(self, request: Any, event_name: str = "", **_: Any) -> Any:
        from botocore.awsrequest import AWSResponse

        operation = event_name.rsplit(".", 1)[-1]
        status, headers, body = self.handle(operation, request)
        return AWSResponse(request.url, status, headers, _Raw(body))

    def handle(self, operation: str, request: Any) -> tuple[int, dict[str, str], bytes]:
        """Answer one request of ``operation`` (charging its service time): (status, headers, body)."""
        handler = getattr(self, f"_op_{operation}", None)
        if handler is None:
            status, headers, body, keys = 501, {}, b"", 0
        else:
            status, headers, body, keys = handler(request)
        service = self.model.get(operation)
        seconds = service.charge(keys) if service else 0.0
        with self._lock:
            self.requests[operation] += 1
            self.charged_s += seconds
        if service and operation in RATE_LIMITED and service.per_key_s:
            # The keys' time is a shared lane: this request's keys start when the earlier ones are done.
            seconds = service.fixed_s + self.lane.book(service.per_key_s * keys)
        if seconds > 0:
            time.sleep(seconds)
        return status, headers, body

    def _key(self, url: str) -> str:
        parts = urlsplit(url)
        path = unquote(parts.path)
        if parts.netloc.startswith(self.bucket + "."):
            return path[1:]
        return path[len(self.bucket) + 2 :]

    def _op_HeadObject(self, request: Any) -> tuple[int, dict[str, str], bytes, int]:
        with self._lock:
            found = self.objects.get(self._key(request.url))
        if found is None:
            return 404, {}, b"", 1
        headers = {
            "ETag": found.etag,
            "Last-Modified": formatdate(found.modified, usegmt=True),
            "Content-Length": "1",
        }
        return 200, headers, b"", 1

    def _op_DeleteObject(self, request: Any) -> tuple[int, dict[str, str], bytes, int]:
        with self._lock:
            self.objects.pop(self._key(request.url), None)
        return 204, {}, b"", 1

    def _op_DeleteObjects(self, request: Any) -> tuple[int, dict[str, str], bytes, int]:
        body = request.body if isinstance(request.body, bytes) else request.body.read()
        root = ET.fromstring(body)
        errors: list[str] = []
        objects = root.findall(f"{{{S3_NS}}}Object")
        with self._lock:
            for entry in objects:
                key = entry.findtext(f"{{{S3_NS}}}Key") or ""
                etag = entry.findtext(f"{{{S3_NS}}}ETag")
                found = self.objects.get(key)
                if found is not None and etag is not None and etag != found.etag:
                    errors.append(
                        f"<Error><Key>{_xml(key)}</Key><Code>PreconditionFailed</Code>"
                        "<Message>At least one of the pre-conditions you specified did not hold</Message></Error>"
                    )
                else:
                    self.objects.pop(key, None)
        text = f'<?xml version="1.0" encoding="UTF-8"?><DeleteResult xmlns="{S3_NS}">{"".join(errors)}</DeleteResult>'
        return 200, {"Content-Type": "application/xml"}, text.encode(), len(objects)

    def _op_PutObject(self, request: Any) -> tuple[int, dict[str, str], bytes, int]:
        body = request.body if isinstance(request.body, bytes) else (request.body or b"")
        if not isinstance(body, bytes):
            body = body.read()
        if "aws-chunked" in _header(request, "Content-Encoding"):
            body = _unchunk(body)
        key = self._key(request.url)
        etag = '"' + hashlib.md5(body, usedforsecurity=False).hexdigest() + '"'  # a single-part upload's
        with self._lock:
            if _header(request, "If-None-Match") == "*" and key in self.objects:
                error = (
                    "<Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you "
                    "specified did not hold</Message><Condition>If-None-Match</Condition></Error>"
                )
                return 412, {"Content-Type": "application/xml"}, error.encode(), 1
            self.objects[key] = _Object(etag, time.time())
        return 200, {"ETag": etag}, b"", 1

    def _op_PutItem(self, request: Any) -> tuple[int, dict[str, str], bytes, int]:
        asked = json.loads(request.body)
        if asked.get("TableName") != self.table:
            return _dynamodb_error("ResourceNotFoundException", "Requested resource not found")
        item = asked["Item"]
        key = (item["pk"]["S"], item["sk"]["S"])
        condition = asked.get("ConditionExpression", "")
        names = asked.get("ExpressionAttributeNames", {})
        # The conditions the bench's writers send: none, or attribute_not_exists on the partition key.
        if condition and condition not in {f"attribute_not_exists({n})" for n in names if names[n] == "pk"}:
            return _dynamodb_error("ValidationException", f"condition not modelled: {condition}", 501)
        with self._lock:
            if condition and key in self.items:
                return _dynamodb_error("ConditionalCheckFailedException", "The conditional request failed")
            self.items[key] = item
        return 200, {"Content-Type": "application/x-amz-json-1.0"}, b"{}", 1

    def _op_ListObjectsV2(self, request: Any) -> tuple[int, dict[str, str], bytes, int]:
        query = parse_qs(urlsplit(request.url).query)
        prefix = query.get("prefix", [""])[0]
        after = query.get("continuation-token", [""])[0]
        with self._lock:
            keys = sorted(k for k in self.objects if k.startswith(prefix) and k > after)
        page, truncated = keys[:1000], len(keys) > 1000
        contents = "".join(
            f"<Contents><Key>{_xml(k)}</Key><LastModified>2024-05-01T12:00:00.000Z</LastModified>"
            f"<ETag>&quot;x&quot;</ETag><Size>1</Size><StorageClass>STANDARD</StorageClass></Contents>"
            for k in page
        )
        token = f"<NextContinuationToken>{_xml(page[-1])}</NextContinuationToken>" if truncated else ""
        text = (
            f'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="{S3_NS}"><Name>{self.bucket}</Name>'
            f"<Prefix>{_xml(prefix)}</Prefix><KeyCount>{len(page)}</KeyCount><MaxKeys>1000</MaxKeys>"
            f"<IsTruncated>{'true' if truncated else 'false'}</IsTruncated>{contents}{token}</ListBucketResult>"
        )
        return 200, {"Content-Type": "application/xml"}, text.encode(), len(page)

    def _op_BatchGetItem(self, request: Any) -> tuple[int, dict[str, str], bytes, int]:
        asked = json.loads(request.body)["RequestItems"]
        responses: dict[str, list[dict[str, Any]]] = {}
        count = 0
        for table, spec in asked.items():
            found = []
            for key in spec["Keys"]:
                count += 1
                item = self.items.get((key["pk"]["S"], key["sk"]["S"])) if table == self.table else None
                if item is not None:
                    found.append(item)
            responses[table] = found
        body = json.dumps({"Responses": responses, "UnprocessedKeys": {}}).encode()
        return 200, {"Content-Type": "application/x-amz-json-1.0"}, body, count


class ModelServer:
    """The model's bucket and table over HTTP on 127.0.0.1, for clients in other processes (the cold-start
    children, pointed at it by ``AWS_ENDPOINT_URL``): the operations the consumers call, told apart by method,
    query and ``X-Amz-Target`` as S3 and DynamoDB tell them apart; anything else is 501. A warm round trip from
    botocore takes 2-4 ms, the client's own work included; against moto's server it took 6-16 ms."""

    def __init__(self, aws: ModelledAws) -> None:
        self.aws = aws
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="model-server", daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> ModelServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        aws = self.aws

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as botocore's pool expects
            # Headers and body leave in separate writes: with Nagle's algorithm on, the second waits for the
            # client's delayed ACK (40 ms on Linux).
            disable_nagle_algorithm = True

            def log_message(self, *_: Any) -> None:  # no access log on the bench's output
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                operation = operation_of(self.command, self.path, self.headers.get("X-Amz-Target", ""))
                request = _HttpRequest(
                    f"http://{self.headers.get('Host', '')}{self.path}",
                    body,
                    self.command,
                    dict(self.headers),
                )
                status, headers, data = aws.handle(operation, request)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                if "Content-Length" not in headers:
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = _serve

        return Handler


def operation_of(method: str, path: str, target: str) -> str:
    """The operation a request names (of those the model answers), or "" for any other."""
    if target:
        return target.rsplit(".", 1)[-1]  # DynamoDB: X-Amz-Target: DynamoDB_20120810.BatchGetItem
    query = parse_qs(urlsplit(path).query, keep_blank_values=True)
    if method == "HEAD":
        return "HeadObject"
    if method == "DELETE":
        return "DeleteObject"
    if method == "POST" and "delete" in query:
        return "DeleteObjects"
    if method == "GET" and query.get("list-type") == ["2"]:
        return "ListObjectsV2"
    if method == "PUT" and not query:
        return "PutObject"
    return ""


def _header(request: Any, name: str) -> str:
    value = request.headers.get(name) or ""
    return value.decode() if isinstance(value, bytes) else str(value)


def _unchunk(body: bytes) -> bytes:
    """The content of an aws-chunked body (``<hex size>[;ext]\\r\\n<data>\\r\\n`` ... ``0`` and the trailer)."""
    out: list[bytes] = []
    at = 0
    while True:
        end = body.index(b"\r\n", at)
        size = int(body[at:end].split(b";")[0], 16)
        if size == 0:
            return b"".join(out)
        out.append(body[end + 2 : end + 2 + size])
        at = end + 2 + size + 2


def _dynamodb_error(code: str, message: str, status: int = 400) -> tuple[int, dict[str, str], bytes, int]:
    body = json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": message}).encode()
    return status, {"Content-Type": "application/x-amz-json-1.0"}, body, 1


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
