"""Progress of a sweep on stderr: a one-line bar on a terminal, a plain line every ``interval`` seconds elsewhere.

Used by the benchmark harness (:mod:`schedopt.bench`) and the simulator's sweeps (:mod:`schedopt.sim.sweep`): a
neutral module, so neither imports the other for it (``schedopt.bench.progress.Progress`` is the same class).

Why our own and not tqdm or rich: neither is a dependency of the core, and neither does what a sweep in a CI log or
under ``nohup`` needs out of the box -- tqdm off a terminal still writes carriage-return updates into the log (one
long line, or one per update with ``mininterval``), and rich hides its live display entirely when the output is not a
terminal. What we need is small: a bar on a terminal, and off it a readable line now and then (done / total, elapsed,
an estimate of the time left, the task under way) plus one at the end, so a log shows the sweep is alive.
"""

from __future__ import annotations

import math
import sys
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """Progress of ``total`` tasks on ``stream`` (default: stderr).

    ``enabled``: ``None`` (auto) draws the bar when the stream is a terminal and otherwise writes a plain line at most
    every ``interval`` seconds and a last one at :meth:`close`; ``True`` forces the bar, ``False`` writes nothing.
    ``mode`` says which: ``"bar"``, ``"lines"`` or ``"off"``.
    """

    def __init__(self, total: int, enabled: bool | None = None, stream: TextIO | None = None, width: int = 24,
                 interval: float = 30.0) -> None:
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            self.mode = "bar" if bool(getattr(self.stream, "isatty", lambda: False)()) else "lines"
        else:
            self.mode = "bar" if enabled else "off"
        self.total = max(int(total), 1)
        self.done = 0
        self.width = width
        self.interval = float(interval)
        self.t0 = time.perf_counter()
        self._last_line = self.t0
        self._closed = False

    @property
    def enabled(self) -> bool:
        return self.mode != "off"

    @staticmethod
    def _fmt(s: float) -> str:
        if not math.isfinite(s):
            return "?"
        s = round(s)
        return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else (f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s")

    def _times(self) -> tuple[str, str]:
        el = time.perf_counter() - self.t0
        left = el / self.done * (self.total - self.done) if self.done else math.inf
        return self._fmt(el), self._fmt(left)

    def line(self, label: str = "") -> str:
        """The bar: ``[####....] done/total elapsed .. left ~.. label``."""
        el, left = self._times()
        fill = int(self.width * self.done / self.total)
        bar = "#" * fill + "." * (self.width - fill)
        return f"[{bar}] {self.done}/{self.total} elapsed {el} left ~{left} {label}"

    def plain(self, label: str = "") -> str:
        """The line written off a terminal: ``progress: done/total (pct%) elapsed .. left ~.. label``."""
        el, left = self._times()
        pct = 100.0 * self.done / self.total
        return f"progress: {self.done}/{self.total} ({pct:.0f}%) elapsed {el} left ~{left}" + (f" {label}" if label else "")

    def update(self, label: str = "", advance: int = 0) -> None:
        self.done = min(self.total, self.done + advance)
        if self.mode == "bar":
            self.stream.write("\r\x1b[2K" + self.line(label)[:160])
            self.stream.flush()
        elif self.mode == "lines":
            now = time.perf_counter()
            if now - self._last_line >= self.interval:
                self._last_line = now
                self.stream.write(self.plain(label) + "\n")
                self.stream.flush()

    def close(self) -> None:
        """End the bar's line, or write the last plain line (once)."""
        if self._closed:
            return
        self._closed = True
        if self.mode == "bar":
            self.stream.write("\n")
            self.stream.flush()
        elif self.mode == "lines":
            self.stream.write(self.plain("finished" if self.done >= self.total else "stopped") + "\n")
            self.stream.flush()
