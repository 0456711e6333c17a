"""What ``in_child_process=True`` (schedopt.backends.isolate) costs per solve: median wall time of
``schedopt.solve`` with and without it, on a millisecond-sized knapsack and on a generated Sia model.

    PYTHONPATH=. python tools/bench_fork_overhead.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import statistics
import time

import schedopt


def _models() -> dict[str, schedopt.LinearModel]:
    from schedopt import sia

    knap = schedopt.LinearModel.from_arrays([3, 4, 5], [[2, 3, 4]], row_upper=[7], col_upper=1, integrality=1,
                                            sense="maximize")
    spec = sia.PROBLEM_IO.generate(64, seed=0)
    return {"knapsack (3 binaries)": knap, "sia generate(64 GPUs)": sia.PROBLEM_IO.build(spec).model}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()
    for backend in ("scipy", "pyomo"):
        for label, model in _models().items():
            row = {}
            for forked in (False, True):
                schedopt.solve(model, backend, time_limit=30, in_child_process=forked)  # warm up
                ts = []
                for _ in range(args.repeats):
                    t0 = time.perf_counter()
                    schedopt.solve(model, backend, time_limit=30, in_child_process=forked)
                    ts.append(time.perf_counter() - t0)
                row[forked] = statistics.median(ts)
            print(f"{backend:6s} {label:24s} in place {row[False] * 1e3:8.1f} ms   in a child {row[True] * 1e3:8.1f} ms"
                  f"   overhead {(row[True] - row[False]) * 1e3:+7.1f} ms (median of {args.repeats})")


if __name__ == "__main__":
    main()
