"""Pipeline-parallel GPT jobs and strong-scaling jobs in closed loop (issue 31 items 1-2): mean JCT per application.

Usage (repository root)::

    python tools/sim_gpt.py [--workload saturn/1] [--gpt 0.1] [--strong 0.25] [--seed 0] [--out benchmarks/sim_gpt.csv]

Runs the ``sia`` policy (bootstrap estimator, ``sia`` job model) on ``sia-gpt`` (Sia's A100 and RTX 2080Ti nodes:
GPT was profiled on no other type) for three variants of the workload: as shipped; with a seeded fraction ``--gpt``
of its jobs turned into GPT jobs (:func:`schedopt.sim.workloads.with_gpt_jobs`); and the GPT mix with a further
seeded fraction ``--strong`` strong-scaling (:func:`schedopt.sim.adaptivity.limit_adaptivity`). Prints one row per
(variant, application) and checks that every GPT segment holds a multiple of its type's pipeline depth.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from collections import defaultdict
from pathlib import Path

from schedopt.sim import simulate
from schedopt.sim.adaptivity import limit_adaptivity
from schedopt.sim.policies.sia import SiaPolicy
from schedopt.sim.workloads import cluster_preset, load_workload, with_gpt_jobs
from schedopt.zoo.pmp import gpt_pmp


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", default="saturn/1")
    ap.add_argument("--gpt", type=float, default=0.1)
    ap.add_argument("--strong", type=float, default=0.25)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    base = load_workload(a.workload)
    mixed = with_gpt_jobs(base, a.gpt, seed=a.seed)
    variants = [("as shipped", base, "sia"), (f"gpt={a.gpt:g}", mixed, "sia"),
                (f"gpt={a.gpt:g}, strong={a.strong:g}", mixed, limit_adaptivity(mixed, 0.0, strong=a.strong, seed=a.seed))]
    depth = gpt_pmp().stages
    rows = []
    for label, w, jm in variants:
        t0, c0 = time.perf_counter(), time.process_time()
        r = simulate(cluster_preset("sia-gpt"), w, SiaPolicy(), job_model=jm, round_seconds=60)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        by: dict[str, list[float]] = defaultdict(list)
        for j in r.jobs:
            if j.application == "gpt_pmp":
                bad = [s for s in j.segments if s[3] % depth[s[2]]]
                assert not bad, (j.id, bad)
            if j.finish is not None:
                by[j.application].append(j.finish - j.arrival)
                by["all"].append(j.finish - j.arrival)
        for app in sorted(by):
            v = by[app]
            rows.append({"workload": w.name, "variant": label, "application": app, "jobs": len(v),
                         "mean_jct_s": round(sum(v) / len(v), 1), "unfinished": r.meta.unfinished,
                         "wall_s": round(wall, 1), "cpu_s": round(cpu, 1)})
            print(",".join(str(x) for x in rows[-1].values()), flush=True)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        with open(a.out, "w", newline="") as f:
            wr = csv.DictWriter(f, fieldnames=list(rows[0]))
            wr.writeheader()
            wr.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
