"""The Synergy comparison tables of formulations/synergy.md on the 15 job sets of issue 17.

    PYTHONPATH=. python tools/synergy_compare.py tune            # TUNE / GREEDY / proportional against the published rounds
    PYTHONPATH=. python tools/synergy_compare.py opt [seconds]   # OPT and the joint MILP (time limit per joint solve, default 60)

Sets: ``generate_instance(8 * S, seed)`` for S in 4, 16, 32 servers and seeds 0..4. The published figures are
the shipped ``schedopt/synergy/published_rounds.json`` (made by tools/synergy_published_rounds.py).
"""

from __future__ import annotations

import json
import sys
import time
from importlib import resources

import numpy as np

from schedopt.synergy import (
    generate_instance,
    load_profiles,
    proportional,
    solve_joint,
    synergy_greedy,
    synergy_opt,
    synergy_tune,
)

SETS = [(s, seed) for s in (4, 16, 32) for seed in range(5)]


def _published_total(jobs: list, points: list) -> float:
    prof = load_profiles()
    cg, mg = prof["cpu_grid"], np.array(prof["mem_grid"])
    return sum(
        float(j.throughput[cg.index(p[0]), int(np.argmin(np.abs(mg - p[1])))]) for j, p in zip(jobs, points) if p is not None
    )


def tune_table() -> None:
    rows = json.loads(resources.files("schedopt.synergy").joinpath("published_rounds.json").read_text())["sets"]
    print("| set | proportional | published TUNE | queue TUNE | queue TUNE + promotion | largest-first | largest + promotion "
          "| published GREEDY | GREEDY |")
    for row in rows:
        inst = generate_instance(8 * row["servers"], row["seed"])
        S, J = inst.servers, inst.jobs
        vals = [
            proportional(S, J).total_throughput,
            _published_total(J, row["tune"]),
            synergy_tune(S, J, promote=False).total_throughput,
            synergy_tune(S, J).total_throughput,
            synergy_tune(S, J, order="largest", promote=False).total_throughput,
            synergy_tune(S, J, order="largest").total_throughput,
            _published_total(J, row["greedy"]),
            synergy_greedy(S, J).total_throughput,
        ]
        print(f"| {row['servers']}, {row['seed']} | " + " | ".join(f"{v:.2f}" for v in vals) + " |")


def opt_table(limit: float) -> None:
    print("| set | OPT | OPT termination | placement | OPT s | paper's OPT | joint | joint termination | joint bound | joint s |")
    for S, seed in SETS:
        inst = generate_instance(8 * S, seed)
        t0 = time.perf_counter()
        o = synergy_opt(inst.servers, inst.jobs)
        to = time.perf_counter() - t0
        paper = synergy_opt(inst.servers, inst.jobs, placements=("rounding",), repair="none")
        t0 = time.perf_counter()
        j = solve_joint(inst.servers, inst.jobs, time_limit=limit)
        tj = time.perf_counter() - t0
        print(f"| {S}, {seed} | {o.total_throughput:.2f} | {o.termination.reason.value} | {o.stats['placement']} | {to:.1f} "
              f"| {paper.total_throughput:.2f} | {j.objective_value:.2f} | {j.termination.reason.value} | {j.bound:.2f} | {tj:.1f} |",
              flush=True)


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "tune"
    if what == "tune":
        tune_table()
    else:
        opt_table(float(sys.argv[2]) if len(sys.argv) > 2 else 60.0)
