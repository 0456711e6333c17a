"""
HeterPS: the cost frontier
==========================

HeterPS assigns a model's layers to resource types (CPU or GPU) and units per stage for the least cost under a
throughput floor. ``heterps.frontier`` solves it exactly at every floor; the greedy heuristic is shown beside it.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

from schedopt import heterps

problem = heterps.generate("ctrdnn", seed=1)
peak, _ = heterps.max_throughput(problem)
limits = np.round(np.linspace(0.1, 1.0, 10) * peak, 1)
front = heterps.frontier(problem, limits)
greedy = []
for lim, ok in zip(limits, front.feasible, strict=True):
    plan = heterps.solve_greedy(problem.with_limit(float(lim))) if ok else None
    greedy.append(plan.cost if plan is not None and plan.feasible else float("nan"))
print(f"{int(np.sum(front.feasible))} of {len(limits)} floors reachable; highest throughput {peak:.0f} samples/s")

# %%
fig, ax = plt.subplots(figsize=(6, 3.5))
heterps.plot_frontier(front, ax=ax, label="exact")
ax.scatter(limits, greedy, marker="+", s=90, label="greedy", zorder=3)
ax.legend()
fig.tight_layout()
