"""``pollux-unaware`` on all-rigid jobs (issue 29): how many of ten rigid cifar10 jobs are unfinished at a time cap.

Usage (repository root)::

    python tools/pollux_unaware_rigid.py [--max-time 3000] [--cluster sia-64]

Ten cifar10 jobs asking 1, 2, 4, 8 GPUs in turn (batch 128 per GPU), 30 s apart, all rigid
(:func:`schedopt.sim.adaptivity.limit_adaptivity` at 1.0, ``sia`` job model), under ``pollux-unaware`` with its
defaults. Prints the unfinished count and the average JCT of the finished jobs.
"""

from __future__ import annotations

import argparse
import warnings

from schedopt import sim
from schedopt.sim.adaptivity import limit_adaptivity

GPUS = (1, 2, 4, 8)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-time", type=float, default=3000.0)
    ap.add_argument("--cluster", default="sia-64")
    a = ap.parse_args(argv)
    rows = ["name,time,application,num_replicas,batch_size"]
    rows += [f"c{k},{30 * k},cifar10,{GPUS[k % 4]},{128 * GPUS[k % 4]}" for k in range(10)]
    w = sim.read_workload("\n".join(rows) + "\n", "rigid10")
    jm = limit_adaptivity(w, 1.0, job_model="sia")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the capped run and hopeless-job warnings: the count below says it
        r = sim.simulate(sim.cluster_preset(a.cluster), w, sim.get_policy("pollux-unaware"), job_model=jm,
                         max_time=a.max_time, progress=False)
    done = [j.finish - j.arrival for j in r.jobs if j.finish is not None]
    avg = sum(done) / len(done) if done else float("nan")
    print(f"pollux-unaware, 10 rigid cifar10 jobs on {a.cluster}, cap {a.max_time:g} s: "
          f"{len(r.jobs) - len(done)} unfinished; average JCT of the {len(done)} finished {avg:,.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
