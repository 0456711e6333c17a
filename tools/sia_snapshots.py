"""Capture Sia rounds of a simulation as snapshots, to benchmark backends on real round instances (issue 26).

    python tools/sia_snapshots.py --workload saturn-32x/1 --cluster sia-2048 --every 25 --max-time 15000 \\
        --out /tmp/sia2048_snapshots.pkl

Runs the ``sia`` policy (default backend) and, every ``--every`` rounds, keeps the round's inputs: the cluster
preset, the :class:`schedopt.sia.Job` list and each job's goodput model (the policy's estimate). ``snapshot_problem``
rebuilds a round as a :class:`schedopt.sia.SiaProblem` in any mode: ``exact`` (the paper's model, the simulator's
``max_gpus_per_job=64``) or ``preset`` (``sia.published_settings()``: coefficients rounded to 0.01, the published
node caps; ``lambda_a`` on or off). ``tools/bench_mckp_ties.py`` times backends on them.
"""

from __future__ import annotations

import argparse
import pickle
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from schedopt import sim
from schedopt.sia import SiaProblem, generate_configs, published_settings
from schedopt.sim.policies.sia import SiaPolicy


class _Capturing(SiaPolicy):
    def __init__(self, every: int, **kw: Any) -> None:
        super().__init__(**kw)
        self.every = every
        self.snaps: list[dict[str, Any]] = []

    def decide(self, state: Any) -> Any:
        if state.round_index % self.every == 0 and state.round_index > 0:
            jobs = self.jobs(state)
            self.snaps.append({"round": state.round_index, "time": state.time, "jobs": jobs,
                               "models": {v.id: v.estimate for v in state.jobs}})
        return super().decide(state)


def snapshot_problem(snap: dict[str, Any], cluster: str, mode: str, lambda_a: bool = False) -> SiaProblem:
    """The snapshot's round as a SiaProblem: ``mode`` "exact" or "preset" (published settings, ``lambda_a``: the
    physical scheduler's change penalty 0.01, else 0 as the published simulator)."""
    cl = sim.cluster_preset(cluster)
    if mode == "exact":
        return SiaProblem(cl, snap["jobs"], snap["models"], max_gpus_per_job=64)
    st = published_settings(change_penalty=0.01 if lambda_a else 0.0)
    # the published node caps cut some configurations the simulator ran: such a job starts from nothing
    allowed = set(generate_configs(cl, 64, max_nodes=st.max_physical_nodes).configs)
    jobs = [j if j.current is None or j.current in allowed else replace(j, current=None, preemptible=True)
            for j in snap["jobs"]]
    return SiaProblem(cl, jobs, snap["models"], settings=st)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", default="saturn-32x/1")
    ap.add_argument("--cluster", default="sia-2048")
    ap.add_argument("--every", type=int, default=25)
    ap.add_argument("--max-time", type=float, default=15000.0)
    ap.add_argument("--out", default="/tmp/sia2048_snapshots.pkl")
    a = ap.parse_args()
    pol = _Capturing(a.every)
    t0, c0 = time.perf_counter(), time.process_time()
    sim.simulate(sim.cluster_preset(a.cluster), sim.load_workload(a.workload), pol, job_model="sia",
                 max_time=a.max_time, progress=False)
    print(f"{len(pol.snaps)} snapshots in {time.perf_counter() - t0:.1f} s wall, {time.process_time() - c0:.1f} s CPU; "
          f"jobs per snapshot: {[len(s['jobs']) for s in pol.snaps]}")
    Path(a.out).write_bytes(pickle.dumps({"cluster": a.cluster, "workload": a.workload, "snaps": pol.snaps}))
    print(f"written to {a.out}")


if __name__ == "__main__":
    main()
