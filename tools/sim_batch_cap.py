"""Experiment (issue 31): the published Sia policy sees each adaptive job's goodput with the global batch capped at
the workload's requested batch (``sia-simulator/job.py`` ``Job.get_speedup_fn``: ``max_batch_size =
target_batch_size``, which ``cluster.py`` sets to the workload's ``batch_size``); ours caps it at the application's
maximum. This script runs saturn/1 under ``sia`` with the policy's estimate capped at the request (the job itself
still picks its batch up to the application's maximum, as the published ``update_local_bsz``) and prints the mean JCT
per application.

Usage (repository root): ``python tools/sim_batch_cap.py [job model, default sia-measured] [workload]``.
The cap is applied by wrapping the engine's ``goodput_estimate`` here (an experiment, not a library option).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections import defaultdict
from typing import Any

from schedopt import sim
from schedopt.sim import engine, jobs

_orig = jobs.goodput_estimate
_cache: dict[tuple[int, float], tuple[Any, Any]] = {}


def capped(job: jobs.JobState) -> Any:
    est = _orig(job)
    if job.rigid_shape is not None:
        return est
    cap = float(job.batch_size)
    hit = _cache.get((id(est), cap))
    if hit is None or hit[0] is not est:
        m = float(max(min(est.max_batch, cap), est.init_batch))
        hit = _cache[(id(est), cap)] = (est, dataclasses.replace(est, max_batch=m))
    return hit[1]


def main(argv: list[str]) -> int:
    jm = argv[0] if argv else "sia-measured"
    wl = argv[1] if len(argv) > 1 else "saturn/1"
    engine.goodput_estimate = capped  # type: ignore[assignment]
    t = time.time()
    r = sim.simulate(sim.cluster_preset("sia-64"), sim.load_workload(wl), sim.get_policy("sia"), job_model=jm)
    by: dict[str, list[float]] = defaultdict(list)
    for j in r.jobs:
        if j.jct is not None:
            by[j.application].append(j.jct)
    print(f"{wl} {jm}, policy batch capped at the request: avg JCT {r.summary()['avg_jct_s']:.1f} s "
          f"({time.time() - t:.0f} s wall)")
    for a, v in sorted(by.items()):
        print(f"  {a}: {len(v)} jobs, mean {sum(v) / len(v):.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
