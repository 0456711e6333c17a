"""
Synergy: CPU and memory beyond GPU-proportional shares
======================================================

Synergy (OSDI'22) gives each job the CPUs and memory it is most sensitive to instead of a share proportional to its
GPUs. Three allocators on Synergy's servers (8 GPUs, 24 CPUs, 500 GB each): the GPU-proportional baseline,
Synergy-TUNE (the paper's greedy) and Synergy-OPT (the joint optimum, proved), each checked independently.
"""

# %%
import matplotlib.pyplot as plt

from schedopt import synergy

methods = [synergy.proportional, synergy.synergy_tune, synergy.synergy_opt]
sizes = [32, 64, 128]
totals: dict[str, list[float]] = {m.__name__: [] for m in methods}
for gpus in sizes:
    inst = synergy.generate_instance(gpus, 0)
    for m in methods:
        a = m(inst.servers, inst.jobs)
        synergy.assert_allocation(inst.servers, inst.jobs, a)
        totals[m.__name__].append(a.total_throughput)
    print(f"{gpus} GPUs: " + ", ".join(f"{k} {v[-1]:.2f}" for k, v in totals.items()))

# %%
fig, ax = plt.subplots(figsize=(6, 3.5))
base = totals["proportional"]
for name, vals in totals.items():
    ax.plot(sizes, [v / b for v, b in zip(vals, base, strict=True)], marker="o", label=name)
ax.set_xlabel("GPUs")
ax.set_ylabel("total throughput / proportional")
ax.legend()
fig.tight_layout()
