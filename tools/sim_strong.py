"""Strong-scaling jobs in closed loop (issue 31 item 1): average and p99 JCT as a seeded fraction of the jobs train at
their requested batch on up to their requested GPUs.

Usage (repository root)::

    python tools/sim_strong.py [--workload saturn/1] [--fractions 0,0.25,0.5,0.75,1] [--policies sia,pollux]
                               [--workers 2] [--out benchmarks/sim_strong.csv]

Each point is one :class:`schedopt.sim.SimTask` on Sia's 64-GPU cluster (``sia`` job model, bootstrap estimator)
with :func:`schedopt.sim.adaptivity.limit_adaptivity` ``(workload, 0, strong=f, seed=0)``. ``sia`` values strong
jobs by their throughput at their batch (``JobView.kind``); ``pollux`` sees them as adaptive (its search has no job
kinds) while the engine runs them at their batch, capped at their request.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import csv
import sys
import time
from pathlib import Path

from schedopt import sim
from schedopt.sim.adaptivity import limit_adaptivity
from schedopt.sim.workloads import load_workload


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", default="saturn/1")
    ap.add_argument("--fractions", default="0,0.25,0.5,0.75,1")
    ap.add_argument("--policies", default="sia,pollux")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    w = load_workload(a.workload)
    fr = [float(x) for x in a.fractions.split(",")]
    pols = a.policies.split(",")
    tasks = [sim.SimTask(p, a.workload, job_model=limit_adaptivity(w, 0.0, strong=f, seed=0)) for f in fr for p in pols]
    t0 = time.time()
    with cf.ProcessPoolExecutor(max_workers=a.workers) as pool:
        res = list(pool.map(sim.run_task, tasks))
    rows = []
    for r, (f, p) in zip(res, [(f, p) for f in fr for p in pols]):
        s = sim.summarize(r)
        rows.append({"workload": a.workload, "strong": f, "policy": p, "avg_jct_s": round(s["avg_jct_s"], 1),
                     "p99_jct_s": round(s["p99_jct_s"], 1), "unfinished": r.meta.unfinished})
    wr = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]))
    wr.writeheader()
    wr.writerows(rows)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        with open(a.out, "w", newline="") as f:
            wo = csv.DictWriter(f, fieldnames=list(rows[0]))
            wo.writeheader()
            wo.writerows(rows)
    print(f"# {len(tasks)} simulations in {time.time() - t0:.0f} s wall", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
