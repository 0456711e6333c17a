"""Keep C libraries' prints off standard output: ``schedopt`` writes nothing to stdout unless asked (a silent HiGHS
MIP solve was seen to print ``HighsMipSolverData::transformNewIntegerFeasibleSolution tmpSolver.run();``, which
breaks ``--json`` output)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

__all__ = ["stdout_to_stderr"]


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
