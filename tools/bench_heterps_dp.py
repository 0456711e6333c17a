"""HeterPS DP under short time limits: what ``solve_exact(method="dp", time_limit=T)`` returns (O optimal, F
feasible with a plan and a proven bound, N no plan) on the generated instances the bench uses (``ctrdnn``,
``gpus`` 8-64, 64 CPUs) and on larger unit counts, and the median time of an unlimited solve.

    PYTHONPATH=. python tools/bench_heterps_dp.py [--repeats 5]

Run it with ``PYTHONPATH`` pointing at another checkout to compare (the numbers in formulations/heterps.md).
"""

from __future__ import annotations

import argparse
import statistics
import time

from schedopt import heterps

LIMITS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5)
INSTANCES = [("ctrdnn", 64, g) for g in (8, 16, 32, 64)] + [("ctrdnn", 1000, 64), ("ctrdnn", 4000, 256),
                                                              ("matchnet", 4000, 256)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    print(f"{'instance':28s} " + " ".join(f"{t:>5g}s" for t in LIMITS) + "   full solve (median)  first plan")
    for model, cpus, gpus in INSTANCES:
        p = heterps.generate(model, 0, cpus=cpus, gpus=gpus)
        marks = []
        for t in LIMITS:
            r = heterps.solve_exact(p, "dp", time_limit=t)
            marks.append({"optimal": "O", "feasible": "F"}.get(r.termination.reason.value, "N"))
        ts, first = [], []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            r = heterps.solve_exact(p, "dp")
            ts.append(time.perf_counter() - t0)
            first.append(r.info.get("first_plan_seconds", float("nan")))
        print(f"{model} cpus={cpus} gpus={gpus}".ljust(28) + " " + " ".join(f"{m:>6s}" for m in marks)
              + f"   {statistics.median(ts) * 1e3:10.1f} ms   {statistics.median(first) * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
