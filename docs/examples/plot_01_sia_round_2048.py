"""
A Sia round at 2,048 GPUs
=========================

Sia (SOSP'23) picks one configuration (nodes x GPUs x GPU type) per job to maximise the cluster's goodput. Here a
seeded instance of 2,048 GPUs of three types and 1,024 jobs: build the configuration ILP, solve it with the default
backend (``mckp``, schedopt's exact solver for one-choice-per-job models), place the answer on nodes and GPUs, and
check both with the independent checkers.
"""

# %%
import time

import matplotlib.pyplot as plt
import numpy as np

from schedopt import sia

inst = sia.generate_instance(2048, seed=0)
problem = inst.problem()
t0 = time.process_time()
model = problem.build()
print(model.summary())
sol = problem.solve()
print(f"{sol.backend}: {sol.result.termination.reason.value}, objective {sol.objective:.4f}, "
      f"gap {sol.result.gap:.1e}, {time.process_time() - t0:.2f} s CPU for build and solve")

# %%
# Place the allocation and check it (the checkers read the spec, not the model).
placement = sia.place(inst.cluster, sol.allocation)
assert sia.check_allocation(problem, sol.allocation) == []
assert sia.check_placement(inst.cluster, sol.allocation, placement) == []
given = [c for c in sol.allocation.values() if c is not None]
print(f"{len(given)} of {len(inst.jobs)} jobs get GPUs")

# %%
# GPUs per type, and how jobs are spread over configuration sizes.
types = inst.cluster.type_names
used = {t: sum(c.n_gpus for c in given if c.gpu_type == t) for t in types}
total = {t.name: t.nodes * t.gpus_per_node for t in inst.cluster.gpu_types}
sizes = np.array([c.n_gpus for c in given])
fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.5))
a.bar(types, [total[t] for t in types], color="0.85", label="GPUs")
a.bar(types, [used[t] for t in types], label="allocated")
a.set_ylabel("GPUs")
a.legend()
values, counts = np.unique(sizes, return_counts=True)
b.bar([str(v) for v in values], counts)
b.set_xlabel("GPUs per job")
b.set_ylabel("jobs")
fig.suptitle("Sia's allocation, 2,048 GPUs, seed 0")
fig.tight_layout()
