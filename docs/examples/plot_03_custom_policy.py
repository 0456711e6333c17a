"""
A policy of your own
====================

A simulation policy is a small class: ``decide(RoundState) -> Decision``. This one gives GPUs to the jobs that have
had the least service so far (least attained service, like Tiresias without its queues). Keep it in a module of your
own folder and name it as ``mymod:LeastAttained`` (``schedopt simulate --policy my_sched:LeastAttained`` with
``PYTHONPATH=.``), or pass the object to ``sim.simulate`` as here.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

from schedopt import sim
from schedopt.traces.named import shipped_trace


class LeastAttained:
    name = "least-attained"

    def decide(self, state: sim.RoundState) -> sim.Decision:
        free, want = state.cluster.num_gpus, {}
        for v in sorted(state.jobs, key=lambda v: (v.attained_gpu_seconds, v.arrival, v.id)):
            if v.requested_gpus <= free:
                want[v.id] = sim.GpuRequest(v.requested_gpus)
                free -= v.requested_gpus
        return sim.Decision(requests=want)


workload = sim.generate_workload(shipped_trace("philly"), jobs=48, load=1.0, window_h=2, seed=0)
cluster = sim.cluster_preset("pollux")          # 16 nodes x 4 T4
results = {name: sim.simulate(cluster, workload, policy, progress=False)
           for name, policy in [("fifo", sim.get_policy("fifo")), ("least-attained", LeastAttained())]}
for name, res in results.items():
    s = res.summary()
    print(f"{name:15s} avg JCT {s['avg_jct_s'] / 3600:.2f} h, p99 {s['p99_jct_s'] / 3600:.2f} h, "
          f"{s['finished']}/{s['jobs']} finished")

# %%
# Job completion times, as CDFs.
fig, ax = plt.subplots(figsize=(6, 3.5))
for name, res in results.items():
    jct = np.sort([j.jct for j in res.jobs if j.jct is not None]) / 3600
    ax.step(jct, np.arange(1, len(jct) + 1) / len(jct), where="post", label=name)
ax.set_xscale("log")
ax.set_xlabel("JCT (h)")
ax.set_ylabel("fraction of jobs")
ax.legend()
fig.tight_layout()
