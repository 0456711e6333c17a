"""The fixed cost of a small Sia round's build and solve (issue 42 item 4), in one process, for one checkout.

    PYTHONPATH=/path/to/checkout python tools/sia_round_costs.py --label after --out benchmarks/everyday_rounds.csv

Runs saturn/1 under ``sia`` on ``sia-64`` (job model ``--job-model``, default ``sia``) once, keeps every
``--every``-th round's :class:`~schedopt.sia.SiaProblem` as the policy built it, then times on each kept round (the
minimum of ``--reps`` repetitions, CPU seconds by ``time.process_time``):

* ``build``: :func:`schedopt.sia.build.build_formulation` from scratch (no build cache; the pair table is kept);
* ``structure``: mckp's structure analysis of that model (:func:`schedopt.mckp.structure.detect` and ``presolve``);
* ``solve``: :func:`schedopt.solve` with ``mckp`` of a model solved once before (the analysis cached);
* ``build+solve``: a fresh build and its first solve, what a round of the simulation pays.

Prints the median per round and the sum over the kept rounds; ``--out`` appends one row per part. Run it with
each checkout first on ``PYTHONPATH`` (alternating, on the same machine load) to compare two commits.
"""

from __future__ import annotations

import argparse
import csv
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--label", default="")
    ap.add_argument("--job-model", default="sia")
    ap.add_argument("--every", type=int, default=7, help="keep every n-th round's problem")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default=None, help="append one row per part to this CSV")
    ap.add_argument("--note", default="")
    a = ap.parse_args()

    import schedopt
    from schedopt import sim
    from schedopt.mckp.structure import detect, presolve
    from schedopt.sia import build as sia_build
    from schedopt.sim.policies import get_policy
    from schedopt.sim.policies.sia import SiaPolicy

    kept: list[Any] = []
    seen = [0]
    original = SiaPolicy.problem

    def problem(self: SiaPolicy, state: Any) -> Any:
        p = original(self, state)
        seen[0] += 1
        if seen[0] % a.every == 0:
            kept.append(p)
        return p

    SiaPolicy.problem = problem  # type: ignore[method-assign]
    try:
        sim.simulate(sim.cluster_preset("sia-64"), sim.load_workload("saturn/1"), get_policy("sia"),
                     job_model=a.job_model, progress=False)
    finally:
        SiaPolicy.problem = original  # type: ignore[method-assign]
    solved = [sia_build.build_formulation(p) for p in kept]
    for f in solved:
        schedopt.solve(f, "mckp")

    def timed(fn: Callable[[int], object]) -> list[float]:
        out = []
        for i in range(len(kept)):
            best = float("inf")
            for _ in range(a.reps):
                t = time.process_time()
                fn(i)
                best = min(best, time.process_time() - t)
            out.append(best)
        return out

    def fresh_solve(i: int) -> None:
        schedopt.solve(sia_build.build_formulation(kept[i]), "mckp")

    parts = {
        "build": timed(lambda i: sia_build.build_formulation(kept[i])),
        "structure": timed(lambda i: presolve(solved[i].model, detect(solved[i].model))),
        "solve": timed(lambda i: schedopt.solve(solved[i], "mckp")),
        "build+solve": timed(fresh_solve),
    }
    jobs = float(np.median([len(p.jobs) for p in kept]))
    cols = float(np.median([len(p.valid_pairs()) for p in kept]))
    print(f"{a.label or schedopt.__file__}: {len(kept)} rounds kept (every {a.every}th), median {jobs:g} jobs, "
          f"{cols:g} columns")
    for name, ts in parts.items():
        print(f"  {name:12s} median {np.median(ts) * 1e3:7.3f} ms   sum {sum(ts):.3f} s")
    if a.out:
        path = Path(a.out)
        new = not path.exists()
        env = f"python {platform.python_version()}, numpy {np.__version__}"
        with path.open("a", newline="") as fh:
            w = csv.writer(fh)
            if new:
                w.writerow(["label", "job_model", "rounds", "median_jobs", "median_columns", "part", "cpu_ms_median",
                            "cpu_s_sum", "reps", "note", "env"])
            for name, ts in parts.items():
                w.writerow([a.label, a.job_model, len(kept), jobs, cols, name, round(float(np.median(ts)) * 1e3, 4),
                            round(sum(ts), 4), a.reps, a.note, env])


if __name__ == "__main__":
    main()
