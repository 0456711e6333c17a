"""
A trace at several loads
========================

The shipped Philly trace (Pollux's preprocessed copy, 82,247 jobs) turned into simulator workloads the way the
Pollux artifact did: a window of the trace, jobs mapped to the model zoo by Pollux's rule, and ``load`` scaling the
number of jobs over the same window. Bring your own trace with ``schedopt.traces.read_trace(path)`` (Philly, Helios,
Alibaba PAI, Acme, Gavel formats) and the same call.
"""

# %%
import matplotlib.pyplot as plt

from schedopt import sim, traces
from schedopt.traces.named import shipped_trace

trace = shipped_trace("philly")
loads = [0.5, 1.0, 1.5, 2.0]
policies = ["fifo", "tiresias"]
avg_h: dict[str, list[float]] = {p: [] for p in policies}
for load in loads:
    workload = traces.generate_workload(trace, jobs=40, load=load, window_h=2, seed=0)
    for p in policies:
        s = sim.simulate(sim.cluster_preset("pollux"), workload, sim.get_policy(p), progress=False).summary()
        avg_h[p].append(s["avg_jct_s"] / 3600)
    print(f"load {load}: {len(workload.jobs)} jobs; avg JCT " +
          ", ".join(f"{p} {avg_h[p][-1]:.2f} h" for p in policies))

# %%
fig, ax = plt.subplots(figsize=(6, 3.5))
for p in policies:
    ax.plot(loads, avg_h[p], marker="o", label=p)
ax.set_xlabel("load (x the trace's own)")
ax.set_ylabel("average JCT (h)")
ax.legend()
fig.tight_layout()
