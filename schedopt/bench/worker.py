"""The process one benchmark run executes in: ``python -m schedopt.bench.worker FD``.

The parent writes two pickles to this process's stdin — its ``sys.path`` (so hooks defined next to the caller
import here too), then the task — and reads progress messages from the pipe whose write end is file descriptor
``FD``. Solver output on stdout / stderr never mixes with the messages.
"""

from __future__ import annotations

import pickle
import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    fd = int(args[0])
    from multiprocessing.connection import Connection

    conn = Connection(fd, readable=False)
    stdin = sys.stdin.buffer
    paths = pickle.load(stdin)
    for p in reversed(paths):
        if p not in sys.path:
            sys.path.insert(0, p)
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
