"""Plain-text and Markdown tables, progress lines on stderr, and the clock the waits use."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TextIO, TypeVar

T = TypeVar("T")
CELL_MAX = 100


def now_iso() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _cell(value: object, limit: int = CELL_MAX) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def text_table(headers: Sequence[str], rows: Sequence[Sequence[object]], limit: int = CELL_MAX) -> str:
    cells = [[_cell(h, limit) for h in headers]] + [[_cell(c, limit) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    def esc(value: object) -> str:
        return _cell(value, 10_000).replace("|", "\\|")

    lines = ["| " + " | ".join(esc(h) for h in headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


class Progress:
    """Bounded waits that say on stderr what they wait for (a line at start, every ``every`` s, and at the end)."""

    def __init__(
        self,
        prefix: str = "doctable",
        stream: TextIO | None = None,
        quiet: bool = False,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        every: float = 10.0,
    ) -> None:
        self.prefix = prefix
        self.stream = stream
        self.quiet = quiet
        self.sleep = sleep
        self.clock = clock
        self.every = every

    def say(self, message: str) -> None:
        if not self.quiet:
            print(f"{self.prefix}: {message}", file=self.stream or sys.stderr, flush=True)

    def wait(
        self,
        what: str,
        probe: Callable[[], T | None],
        timeout: float,
        interval: float = 1.0,
        max_interval: float = 5.0,
    ) -> tuple[T | None, float]:
        """Call ``probe`` until it returns non-None or ``timeout`` passes; return (value or None, seconds)."""
        start = self.clock()
        next_report = start
        delay = interval
        while True:
            value = probe()
            elapsed = self.clock() - start
            if value is not None:
                if elapsed >= 1:
                    self.say(f"{what}: done after {elapsed:.0f}s")
                return value, elapsed
            if elapsed >= timeout:
                self.say(f"{what}: gave up after {elapsed:.0f}s (bound {timeout:.0f}s)")
                return None, elapsed
            if self.clock() >= next_report:
                self.say(f"waiting for {what} ({elapsed:.0f}s of at most {timeout:.0f}s)")
                next_report = self.clock() + self.every
            self.sleep(min(delay, max(0.0, timeout - elapsed)))
            delay = min(delay * 1.5, max_interval)

    def countdown(self, what: str, seconds: float) -> None:
        """Wait ``seconds``, saying how many are left at the start and every ``every`` seconds."""
        deadline = self.clock() + seconds
        while (left := deadline - self.clock()) > 0:
            self.say(f"waiting for {what}: {left:.0f}s left")
            self.sleep(min(self.every, left))
        self.say(f"{what}: done")
