"""The benchmark's progress bar: :class:`schedopt.progress.Progress` (a neutral module the harness and the simulator
both use); this name stays for existing imports."""

from __future__ import annotations

from ..progress import Progress

__all__ = ["Progress"]
