"""
Finish-time fairness
====================

Per job, ``rho = JCT / JCT in isolation`` (Themis's finish-time fairness; ``rho > 1``: the job finished later than
it would have on its fair share alone). Every simulation summary carries ``worst_rho``, ``unfair_fraction`` and
``jain_rho``; ``sim.fairness.finish_time_fairness`` gives the per-job numbers. Two policies on the same workload.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

from schedopt import sim
from schedopt.sim.fairness import finish_time_fairness
from schedopt.traces.named import shipped_trace

workload = sim.generate_workload(shipped_trace("philly"), jobs=48, load=1.5, window_h=2, seed=1)
fig, ax = plt.subplots(figsize=(6, 3.5))
for name in ["fifo", "tiresias", "gavel"]:
    res = sim.simulate(sim.cluster_preset("pollux"), workload, sim.get_policy(name), progress=False)
    rho = np.sort(np.array(list(finish_time_fairness(res).rho.values()), dtype=float))
    s = res.summary()
    print(f"{name:9s} worst rho {s['worst_rho']:.2f}, unfair fraction {s['unfair_fraction']:.2f}, "
          f"Jain's index {s['jain_rho']:.3f}")
    ax.step(rho, np.arange(1, len(rho) + 1) / len(rho), where="post", label=name)
ax.axvline(1.0, color="0.6", linestyle=":")
ax.set_xscale("log")
ax.set_xlabel("rho = JCT / JCT in isolation")
ax.set_ylabel("fraction of jobs")
ax.legend()
fig.tight_layout()
