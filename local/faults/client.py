"""``FaultClient``: the control endpoint of a running local AWS, for tests and the soak (standard library only)."""

from __future__ import annotations

import contextlib
import http.client
import json
import ssl
import threading
import urllib.parse
from pathlib import Path
from typing import Any

from local import clock
from local.faults.spec import PATH, FaultSpecError
from local.state import CONTROL_TOKEN_HEADER


class FaultClient:
    """Talks to the control endpoint of the local AWS at ``url`` (e.g. ``https://localhost:4566``), trusting
    the CA in ``ca_bundle`` (``local.api.ca_bundle(directory)``; None: the system's), with the server's control
    ``token`` (``local.api.control_token(directory)``). One kept-alive connection, shared by the threads that use
    the client one call at a time."""

    def __init__(
        self, url: str, timeout: float = 10.0, ca_bundle: str | Path | None = None, token: str | None = None
    ):
        self.url = url.rstrip("/") + PATH
        self.timeout = timeout
        self.token = token
        self.context = ssl.create_default_context(cafile=str(ca_bundle) if ca_bundle else None)
        self._parts = urllib.parse.urlsplit(self.url)
        self._connection: http.client.HTTPConnection | None = None
        self._lock = threading.Lock()

    def _connect(self) -> http.client.HTTPConnection:
        host, port = self._parts.hostname or "localhost", self._parts.port
        if self._parts.scheme == "https":
            return http.client.HTTPSConnection(host, port, timeout=self.timeout, context=self.context)
        return http.client.HTTPConnection(host, port, timeout=self.timeout)

    def _exchange(self, method: str, target: str, data: bytes | None) -> tuple[int, bytes]:
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers[CONTROL_TOKEN_HEADER] = self.token
        with self._lock:
            for attempt in (1, 2):
                if self._connection is None:
                    self._connection = self._connect()
                try:
                    self._connection.request(method, target, body=data, headers=headers)
                    response = self._connection.getresponse()
                    return response.status, response.read()
                except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                    # The server closed the kept-alive connection: every call here may be sent again.
                    self._connection.close()
                    self._connection = None
                    if attempt == 2:
                        raise
                except BaseException:
                    self._connection.close()
                    self._connection = None
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _call(self, method: str, body: Any = None, query: str = "", path: str = PATH) -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode("utf-8")
        target = self._parts.path.removesuffix(PATH) + path + query
        status, raw = self._exchange(method, target, data)
        if status >= 400:
            detail = raw.decode("utf-8", "replace")
            with contextlib.suppress(ValueError):
                detail = json.loads(detail).get("error", detail)
            raise FaultSpecError(f"{method} {self.url}: {status}: {detail}")
        return dict(json.loads(raw or b"{}"))

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

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

    def ttl_interval_elapsed(self, table_name: str) -> list[str]:
        """The clock control (local/clock.py): UpdateTimeToLive's change interval has passed for the table; the
        regions holding it."""
        return list(self._call("POST", {"ttl_interval_elapsed": table_name}, path=clock.PATH)["tables"])

    def hold_backfill(self, table_name: str, held: bool = True) -> list[str]:
        """The clock control: the table's GSI changes stay CREATING or DELETING until released (held=False);
        the regions holding it."""
        action = "hold_backfill" if held else "release_backfill"
        return list(self._call("POST", {action: table_name}, path=clock.PATH)["tables"])

    def advance_clock(self, seconds: float) -> float:
        """The clock control: the time the local AWS reports (its answers' Date header) moves ``seconds`` ahead;
        the offset now."""
        return float(self._call("POST", {"advance_seconds": seconds}, path=clock.PATH)["offset_seconds"])

    def reset_clock(self) -> float:
        """The clock control: the reported time is the real time again."""
        return float(self._call("POST", {"reset_clock": True}, path=clock.PATH)["offset_seconds"])
