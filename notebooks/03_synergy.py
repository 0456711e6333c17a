# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Synergy: CPU and memory beyond GPU-proportional shares
#
# Synergy (OSDI'22) gives each job CPUs and memory according to its measured sensitivity instead of a
# GPU-proportional share. Four methods on one trace — 4 servers of 8 GPUs, 24 CPUs and 500 GB each:
#
# * **proportional**: every job gets its GPU-proportional CPU and memory (the baseline);
# * **TUNE**: the paper's greedy heuristic;
# * **OPT**: the paper's LP route (P1 on the pooled cluster, a packing LP, rounding, P1 per server);
# * **joint**: an exact MILP deciding placement and CPU / memory together (short time limit).
#
# Every allocation goes through `synergy.check_allocation`, which verifies it from the data alone.

# %%
import time

import matplotlib.pyplot as plt
import numpy as np

from schedopt import synergy

inst = synergy.generate_instance(32, seed=6)
servers, jobs = inst.servers, inst.jobs
print(len(servers), "servers:", servers[0])
print(len(jobs), "jobs:", ", ".join(f"{j.id} ({j.gpus} GPU)" for j in jobs))

# %%
methods = {
    "proportional": lambda: synergy.proportional(servers, jobs),
    "TUNE": lambda: synergy.synergy_tune(servers, jobs),
    "OPT": lambda: synergy.synergy_opt(servers, jobs, backend="highs"),
    "joint": lambda: synergy.solve_joint(servers, jobs, backend="highs", time_limit=10),
}
allocs, seconds, usage = {}, {}, {}
for name, run in methods.items():
    t0 = time.perf_counter()
    allocs[name] = run()
    seconds[name] = time.perf_counter() - t0
    usage[name] = synergy.check_allocation(servers, jobs, allocs[name])  # raises AllocationCheckError if wrong

print(f"{'method':<13} {'total W':>8} {'bound':>8} {'termination':<22} {'unplaced':>8} {'time (s)':>8}  check")
for name, a in allocs.items():
    bound = "-" if a.lp_bound is None else f"{a.lp_bound:.3f}"
    print(f"{name:<13} {a.total_throughput:8.3f} {bound:>8} {a.termination:<22} {len(a.unplaced):>8} "
          f"{seconds[name]:8.3f}  OK")

# %% [markdown]
# Per-server use of the joint allocation (GPUs, CPUs, GB) against capacity:

# %%
used, cap = usage["joint"]["used"], usage["joint"]["capacity"]
for i, (u, c) in enumerate(zip(used, cap)):
    print(f"server {i}: GPUs {u[0]:.0f}/{c[0]:.0f}  CPUs {u[1]:.1f}/{c[1]:.0f}  GB {u[2]:.1f}/{c[2]:.0f}")
print()
for row in allocs["joint"].rows():
    print(row)

# %% [markdown]
# ## Throughput per job

# %%
ids = [j.id for j in jobs]
fig, ax = plt.subplots(figsize=(12, 4))
width = 0.2
for k, (name, a) in enumerate(allocs.items()):
    ax.bar(np.arange(len(ids)) + (k - 1.5) * width, [a.per_job[i].throughput for i in ids], width, label=name)
ax.set_xticks(np.arange(len(ids)), ids, rotation=45, ha="right", fontsize=8)
ax.set_ylabel("normalised per-GPU throughput W")
ax.set_title("Synergy: throughput per job under each method")
ax.legend()
fig.tight_layout()
fig.canvas.draw()  # render now, also under the non-interactive Agg backend
plt.show()

# %% [markdown]
# ## Claims checked

# %%
tot = {k: a.total_throughput for k, a in allocs.items()}
tol = 1e-6
assert allocs["joint"].optimal, allocs["joint"].termination
# the exact joint MILP is at least as good as every method (all are feasible points of it)
assert all(tot["joint"] >= v - tol for v in tot.values()), tot
# OPT's pooled P1 optimum bounds every integral placement, the joint optimum included
assert allocs["OPT"].lp_bound >= tot["joint"] - tol
# Synergy never gives a job less than its GPU-proportional throughput (check_allocation enforces it too)
for a in allocs.values():
    assert all(ja.throughput >= ja.proportional_throughput - tol for ja in a.per_job.values() if ja.placed)
# on this trace the resource-aware methods beat the proportional baseline, and the order is strict
assert tot["proportional"] < tot["TUNE"] < tot["OPT"] < tot["joint"], tot
assert len(ax.patches) == len(allocs) * len(jobs)  # one bar per (method, job)
print("all claims hold:", {k: round(v, 3) for k, v in tot.items()})
