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


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    fd = int(args[0])
    serving = "--serve" in args[1:]
    from multiprocessing.connection import Connection

    from .runner import child_main, read_message, serve

    conn = Connection(fd, readable=False)
    stdin = sys.stdin.buffer
    if serving:
        data = read_message(stdin)
        paths = pickle.loads(data) if data is not None else []
    else:
        paths = pickle.load(stdin)
    for p in reversed(paths):
        if p not in sys.path:
            sys.path.insert(0, p)
    if serving:
        return serve(conn, stdin)
    try:
        task = pickle.load(stdin)
    except Exception as exc:  # a hook that does not import here
        conn.send(("error", {"error": f"cannot load the task in the run's process: {type(exc).__name__}: {exc}"}))
        conn.close()
        return 1
    child_main(conn, task)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
