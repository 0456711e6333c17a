# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # HeterPS: cost versus throughput limit for a recommendation model
#
# HeterPS (FGCS 2023) schedules the layers of a DNN onto resource types (CPU, GPU), groups consecutive layers of
# one type into pipeline stages, and sizes each stage, minimising the monetary cost of training under a throughput
# floor and per-type unit limits. `CTRDNN` is a click-through-rate recommendation model (embedding layers that suit
# CPUs, dense layers that suit GPUs).
#
# The exact solver (`solve_exact`, a dynamic program over stages) traces the optimal cost for every throughput
# floor; the paper's RL scheduler (a numpy LSTM trained with REINFORCE) and a greedy layer-flipping heuristic are
# compared against it, and every plan is re-costed by the independent cost model `evaluate`.

# %%
import time

import matplotlib.pyplot as plt
import numpy as np

from schedopt import heterps

problem = heterps.generate("ctrdnn", seed=1)
print(problem.num_layers, "layers:", " ".join(layer.kind for layer in problem.layers))
print("types:", [(t.name, f"{t.limit} units", f"{t.price_per_hour} $/h") for t in problem.types])
peak, peak_plan = heterps.max_throughput(problem)
print(f"highest throughput stage by stage: {peak:.0f} samples/s with plan {peak_plan}")

# %%
limits = np.round(np.linspace(0.1, 1.0, 10) * peak, 1)
t0 = time.perf_counter()
front = heterps.frontier(problem, limits)
print(f"frontier of {len(limits)} limits in {time.perf_counter() - t0:.2f} s")

rows = []
for lim, ok, blame in zip(limits, front.feasible, front.blame):
    if not ok:
        rows.append((lim, None, None, None, blame))
        continue
    q = problem.with_limit(float(lim))
    ex = heterps.solve_exact(q)
    rl = heterps.solve_rl(q, seed=0, iterations=40)
    gr = heterps.solve_greedy(q)
    rows.append((lim, ex, rl, gr, None))

def cost(p):
    return p.cost if p is not None and p.feasible else float("nan")

print(f"{'limit':>9} {'exact $':>9} {'RL $':>9} {'greedy $':>9}  exact plan (stages: type x units)")
for lim, ex, rl, gr, blame in rows:
    if ex is None:
        print(f"{lim:9.0f} {'infeasible':>9}  (blamed: {blame})")
        continue
    stages = " | ".join(f"{t}x{k}" for (_, _, t), k in zip(ex.stages, ex.k))
    print(f"{lim:9.0f} {ex.cost:9.4f} {cost(rl):9.4f} {cost(gr):9.4f}  {stages}")

# %% [markdown]
# ## The frontier, with RL and greedy on top

# %%
fig, ax = plt.subplots(figsize=(7, 4.5))
heterps.plot_frontier(front, ax=ax, label="exact (DP)")
feas = [(lim, rl, gr) for lim, ex, rl, gr, _ in rows if ex is not None]
ax.scatter([f[0] for f in feas], [cost(f[1]) for f in feas], marker="x", s=60, label="RL (LSTM + REINFORCE)", zorder=3)
ax.scatter([f[0] for f in feas], [cost(f[2]) for f in feas], marker="+", s=90, label="greedy", zorder=3)
ax.legend()
fig.tight_layout()
fig.canvas.draw()  # render now, also under the non-interactive Agg backend
plt.show()

# %% [markdown]
# Every plan re-costed by the cost model, which knows nothing of the solvers:

# %%
recost = []
for lim, ex, rl, gr, _ in rows:
    if ex is None:
        continue
    q = problem.with_limit(float(lim))
    for p in (ex, rl, gr):
        if p.feasible:
            e = heterps.evaluate(q, p.plan, p.k)
            recost.append((p.method, lim, p.cost, e.cost, e.feasible, e.throughput))
worst = max(abs(c - e) / max(1.0, abs(e)) for _, _, c, e, _, _ in recost)
print(f"{len(recost)} plans re-costed; largest relative difference {worst:.1e}")

# %% [markdown]
# ## Claims checked

# %%
ok = front.feasible
assert ok.sum() >= 8, front.feasible
# a higher floor never costs less: the frontier is non-decreasing
assert np.all(np.diff(front.cost[ok]) >= -1e-9), front.cost
# every exact point meets its floor
assert np.all(front.throughput[ok] >= limits[ok] * (1 - 1e-9))
for lim, ex, rl, gr, _ in rows:
    if ex is None:
        continue
    assert ex.status == "optimal" and abs(ex.cost - front.cost[list(limits).index(lim)]) <= 1e-9
    for h in (rl, gr):  # the heuristics never beat the exact optimum
        assert not h.feasible or h.cost >= ex.cost * (1 - 1e-9), (lim, h.method, h.cost, ex.cost)
assert all(feasible and tp >= lim * (1 - 1e-9) for _, lim, _, _, feasible, tp in recost)
assert worst <= 1e-9
assert len(ax.lines) == 1 and len(ax.collections) == 2  # the exact frontier, RL and greedy
print("all claims hold")
