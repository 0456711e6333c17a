"""Keep C libraries' prints off standard output: ``schedopt`` writes nothing to stdout unless asked (a silent HiGHS
MIP solve was seen to print ``HighsMipSolverData::transformNewIntegerFeasibleSolution tmpSolver.run();``, which
breaks ``--json`` output)."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator

__all__ = ["filtered_stderr", "stdout_to_stderr"]


_STDOUT_LOCK = threading.Lock()
_stdout_state: dict[str, int] = {"depth": 0, "saved": -1}


@contextlib.contextmanager
def stdout_to_stderr(active: bool = True) -> Iterator[None]:
    """While active, file descriptor 1 (what C code writes to) points at file descriptor 2: nothing is lost, and
    stdout stays clean. A no-op when inactive or when the descriptors cannot be duplicated.

    The descriptors belong to the process, not the thread, so concurrent solves (mckp's residual on one thread and
    the race on another) share one redirection: the first to enter saves descriptor 1, the last to leave puts it
    back. (Each used to save and restore its own copy: interleaved, the last one out restored the redirected
    descriptor, and stdout stayed on stderr for the rest of the process.)"""
    if not active:
        yield
        return
    with _STDOUT_LOCK:
        if _stdout_state["depth"] == 0:
            try:
                sys.stdout.flush()
                saved = os.dup(1)
                os.dup2(2, 1)
            except (OSError, AttributeError, ValueError):
                saved = -1
            _stdout_state["saved"] = saved
        entered = _stdout_state["saved"] >= 0
        if entered:
            _stdout_state["depth"] += 1
    try:
        yield
    finally:
        if entered:
            with _STDOUT_LOCK:
                _stdout_state["depth"] -= 1
                if _stdout_state["depth"] == 0:
                    saved = _stdout_state["saved"]
                    with contextlib.suppress(OSError, AttributeError, ValueError):
                        sys.stdout.flush()
                    os.dup2(saved, 1)
                    os.close(saved)
                    _stdout_state["saved"] = -1


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
