"""``FaultClient``: the control endpoint of a running local AWS, for tests and the soak (standard library only)."""

from __future__ import annotations

import contextlib
import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from local.faults.spec import PATH, FaultSpecError


class FaultClient:
    """Talks to the control endpoint of the local AWS at ``url`` (e.g. ``https://localhost:4566``), trusting
    the CA in ``ca_bundle`` (``local.api.ca_bundle(directory)``; None: the system's)."""

    def __init__(self, url: str, timeout: float = 10.0, ca_bundle: str | Path | None = None):
        self.url = url.rstrip("/") + PATH
        self.timeout = timeout
        self.context = ssl.create_default_context(cafile=str(ca_bundle) if ca_bundle else None)

    def _call(self, method: str, body: Any = None, query: str = "") -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(self.url + query, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=self.context) as response:
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
