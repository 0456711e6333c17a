"""Keep C libraries' prints off standard output: ``schedopt`` writes nothing to stdout unless asked (a silent HiGHS
MIP solve was seen to print ``HighsMipSolverData::transformNewIntegerFeasibleSolution tmpSolver.run();``, which
breaks ``--json`` output)."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator

__all__ = ["filtered_stderr", "stdout_to_stderr"]


@contextlib.contextmanager
def stdout_to_stderr(active: bool = True) -> Iterator[None]:
    """While active, file descriptor 1 (what C code writes to) points at file descriptor 2: nothing is lost, and
    stdout stays clean. A no-op when inactive or when the descriptors cannot be duplicated."""
    if not active:
        yield
        return
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, AttributeError, ValueError):
        yield
        return
    try:
        os.dup2(2, 1)
        yield
    finally:
        with contextlib.suppress(OSError, AttributeError, ValueError):
            sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


@contextlib.contextmanager
def filtered_stderr(drop: re.Pattern[str], active: bool = True) -> Iterator[None]:
    """While active, C-level writes to file descriptor 2 go to a temporary file; afterwards every line that does not
    match ``drop`` is written to stderr. Used for a known, harmless library message (OR-Tools' SCIP prints two ERROR
    lines whenever a solve interrupter is attached, although interrupting works); everything else still shows."""
    if not active:
        yield
        return
    try:
        sys.stderr.flush()
        saved = os.dup(2)
        tmp = tempfile.TemporaryFile(mode="w+b")
    except (OSError, AttributeError, ValueError):
        yield
        return
    try:
        os.dup2(tmp.fileno(), 2)
        yield
    finally:
        with contextlib.suppress(OSError, AttributeError, ValueError):
            sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        tmp.seek(0)
        kept = [ln for ln in tmp.read().decode(errors="replace").splitlines(keepends=True) if not drop.search(ln)]
        tmp.close()
        if kept:
            sys.stderr.write("".join(kept))
            sys.stderr.flush()
