"""The process one benchmark run executes in: ``python -m schedopt.bench.worker FD [--serve]``.

The parent writes two pickles to this process's stdin — its ``sys.path`` (so hooks defined next to the caller
import here too), then the task — and reads progress messages from the pipe whose write end is file descriptor
``FD``. Solver output on stdout / stderr never mixes with the messages.

With ``--serve`` (:class:`schedopt.bench.runner.WarmWorkers`) each pickle comes with its length (8 bytes, little
endian) and the process runs task after task until its stdin ends; before each task it resets its memory
high-water mark (Linux ``/proc/self/clear_refs``), so a run's ``peak_rss_mb`` is its own.
"""

from __future__ import annotations

import pickle
import sys
from typing import Any, BinaryIO


def _read(stdin: BinaryIO) -> bytes | None:
    """One length-prefixed message, or None at the end of the input."""
    head = stdin.read(8)
    if len(head) < 8:
        return None
    n = int.from_bytes(head, "little")
    data = stdin.read(n)
    return data if len(data) == n else None


def _serve(conn: Any, stdin: BinaryIO) -> int:
    from .pipelines import reset_peak_rss
    from .runner import child_main

    while (data := _read(stdin)) is not None:
        try:
            task = pickle.loads(data)
        except Exception as exc:  # a hook that does not import here
            conn.send(("error", {"error": f"cannot load the task in the run's process: {type(exc).__name__}: {exc}"}))
            continue
        reset_peak_rss()
        child_main(conn, task, close=False)
    conn.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    fd = int(args[0])
    serve = "--serve" in args[1:]
    from multiprocessing.connection import Connection

    conn = Connection(fd, readable=False)
    stdin = sys.stdin.buffer
    if serve:
        data = _read(stdin)
        paths = pickle.loads(data) if data is not None else []
    else:
        paths = pickle.load(stdin)
    for p in reversed(paths):
        if p not in sys.path:
            sys.path.insert(0, p)
    if serve:
        return _serve(conn, stdin)
    try:
        task = pickle.load(stdin)
    except Exception as exc:  # a hook that does not import here
        conn.send(("error", {"error": f"cannot load the task in the run's process: {type(exc).__name__}: {exc}"}))
        conn.close()
        return 1
    from .runner import child_main

    child_main(conn, task)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
