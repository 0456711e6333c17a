"""How loose is the hopeless-job bound? Each zoo application alone (4 GPUs requested, its usual batch) on a 16-GPU
cluster (2 x 4 T4, 1 x 8 A100) under fifo (rigid) and sia (adaptive): the simulated JCT next to
``schedopt.sim.feasibility.min_seconds`` (card ``formulations/sim.md``, Input validation).

    python tools/hopeless_bound_tightness.py
"""

from __future__ import annotations

import warnings

from schedopt.sia import Cluster, GpuType
from schedopt.sim import Workload, WorkloadJob, get_policy, simulate
from schedopt.sim.feasibility import min_seconds

CLUSTER = Cluster((GpuType("t4", 4, 2), GpuType("a100", 8, 1)))
BATCH = {"cifar10": 512, "bert": 48, "yolov3": 32, "deepspeech2": 80, "ncf": 32768}


def main() -> None:
    print("| application | policy | JCT (s) | min_seconds (s) | ratio |")
    print("|---|---|---|---|---|")
    for app, batch in BATCH.items():
        for policy, adaptive in (("fifo", False), ("sia", True)):
            w = Workload("one", (WorkloadJob("a", 0.0, app, 4, batch),))
            pol = get_policy(policy) if policy == "fifo" else get_policy(policy, time_limit=5)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                jct = simulate(CLUSTER, w, pol, job_model="sia").jobs[0].jct
            bound = min_seconds(CLUSTER, app, 4, batch, "sia", adaptive=adaptive)
            print(f"| {app} | {policy} | {jct:.0f} | {bound:.0f} | {jct / bound:.2f} |")


if __name__ == "__main__":
    main()
