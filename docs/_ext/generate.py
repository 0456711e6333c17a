"""Pages written at build time from the repository's own files (run by ``docs/conf.py``)."""

from __future__ import annotations

from pathlib import Path


def write_all(outdir: Path, root: Path) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
