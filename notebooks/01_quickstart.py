# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # schedopt quickstart: one Sia scheduling round on the 64-GPU heterogeneous cluster
#
# Sia (SOSP'23) picks, for every job, one *configuration* — (nodes, GPUs, GPU type) — maximising a fairness-weighted
# sum of goodputs, as an integer program. Here we build the 64-GPU cluster of the Sia paper, a dozen jobs whose
# goodput comes from models fitted to public profiles (`schedopt.zoo`), solve the ILP with HiGHS, place the
# allocation on nodes and GPUs, and check both with the independent checkers (plain Python over the spec, written
# without the model).

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Patch, Rectangle

import schedopt
from schedopt import sia, zoo

cluster = sia.cluster(64)  # 6 nodes x 4 T4, 2 nodes x 8 A100, 3 nodes x 8 RTX 2080Ti
print(f"{'GPU type':<10} {'nodes':>5} {'GPUs/node':>9} {'GPUs':>5}")
for t in cluster.gpu_types:
    print(f"{t.name:<10} {t.nodes:>5} {t.gpus_per_node:>9} {t.total_gpus:>5}")
print("total GPUs:", cluster.num_gpus, "| models in the zoo:", zoo.list_models())

# %% [markdown]
# ## A dozen jobs from the model zoo
#
# Each job names a zoo model; `zoo.load_model(name)` returns a `JobGoodputModel` (Pollux throughput x statistical
# efficiency per GPU type) which `SiaProblem` evaluates for every valid configuration. `max_profiled_gpus` drives
# Sia's growth rule (a job may use at most twice the GPUs it has been profiled on); BERT and DeepSpeech2 are kept
# off the 11 GB RTX 2080Ti, as the instance generator does. Two jobs already run, one of them non-preemptible.

# %%
specs = [  # (model, kind, max_profiled_gpus, extra Job fields)
    ("cifar10", "adaptive", 8, {}),
    ("cifar10", "adaptive", 2, {}),
    ("imagenet", "adaptive", 16, {"current": sia.Config(2, 16, "a100"), "age_s": 7200.0, "restarts": 1,
                                  "restart_cost_s": 90.0}),
    ("imagenet", "adaptive", 4, {}),
    ("bert", "adaptive", 4, {"allowed_types": ["t4", "a100"]}),
    ("bert", "strong", 2, {"allowed_types": ["t4", "a100"]}),
    ("deepspeech2", "adaptive", 4, {"allowed_types": ["t4", "a100"]}),
    ("yolov3", "adaptive", 8, {}),
    ("yolov3", "adaptive", 1, {}),
    ("ncf", "adaptive", 2, {"current": sia.Config(1, 2, "t4"), "preemptible": False, "age_s": 600.0}),
    ("ncf", "strong", 1, {}),
    ("cifar10", "rigid", 0, {"rigid_gpus": 4}),
]
jobs, goodput = [], {}
for k, (name, kind, prof, extra) in enumerate(specs):
    jid = f"{name}-{k}"
    jobs.append(sia.Job(jid, kind=kind, max_profiled_gpus=prof, **extra))
    goodput[jid] = zoo.load_model(name)

problem = sia.SiaProblem(cluster, jobs, goodput, p=-0.5, lam=1.1)
model = problem.build()
print(problem)
print(model.summary())

# %% [markdown]
# ## Solve, then place
#
# `problem.solve(backend, place=True)` builds the model, solves it and maps every chosen configuration onto node
# ids and GPU indices (partial-node configurations take aligned blocks, multi-node ones whole nodes).

# %%
t0 = time.perf_counter()
sol = problem.solve("highs", place=True)
print(f"termination: {sol.result.termination}  objective: {sol.objective:.6f}  ({time.perf_counter() - t0:.2f} s)")
print("timings:", {k: round(v, 4) for k, v in sol.result.timings.as_dict().items()})

pairs = problem.valid_pairs()
chosen_goodput = dict(zip((problem.jobs[j].id for j in pairs.job[sol.chosen_columns]), pairs.goodput[sol.chosen_columns]))
rows = sol.rows()
print()
print(f"{'job':<15} {'kind':<9} {'config':<14} {'GPUs':>4} {'goodput':>9}  {'current':<12} nodes")
for r in rows:
    g = chosen_goodput.get(r["job"])
    gs = f"{g:9.2f}" if g is not None else f"{'-':>9}"
    print(f"{r['job']:<15} {r['kind']:<9} {r['config']:<14} {r['gpus']:>4} {gs}  {r['current']:<12} {r['nodes']}")

# %%
alloc_problems = sia.check_allocation(problem, sol.allocation)
place_problems = sia.check_placement(cluster, sol.allocation, sol.placement)
print("check_allocation:", alloc_problems or "OK")
print("check_placement: ", place_problems or "OK")
print("objective recomputed by the checker:", round(sia.objective_value(problem, sol.allocation), 6))

# every installed backend able to solve the model reaches the same optimum
others = {b: problem.solve(b).objective for b in ("scipy", "mckp") if b in schedopt.available_backends()}
print("other backends:", {b: round(v, 6) for b, v in others.items()})

# %% [markdown]
# ## A picture of the nodes
#
# One row per node, one cell per GPU, colored by the job that holds it (white: free).

# %%
node_rows = [(t.name, f"{t.name}-{k}", t.gpus_per_node) for t in cluster.gpu_types for k in range(t.nodes)]
width = int(max(cluster.gpus_per_node))
placed = [j.id for j in jobs if sol.allocation[j.id] is not None]
colors = {jid: plt.get_cmap("tab20")(i % 20) for i, jid in enumerate(placed)}
owner = {}
for jid, slots in sol.placement.items():
    for node, gpus in slots:
        for g in gpus:
            owner[(node, g)] = jid

fig, ax = plt.subplots(figsize=(10, 0.45 * len(node_rows) + 1.2))
for row, (_, node, n) in enumerate(node_rows):
    y = len(node_rows) - 1 - row
    for g in range(n):
        jid = owner.get((node, g))
        ax.add_patch(Rectangle((g, y), 0.95, 0.9, facecolor=colors[jid] if jid else "white", edgecolor="0.3"))
ax.set_xlim(0, width)
ax.set_ylim(0, len(node_rows))
ax.set_yticks(np.arange(len(node_rows)) + 0.45, [r[1] for r in node_rows][::-1])
ax.set_xticks(np.arange(width) + 0.475, range(width))
ax.set_xlabel("GPU index")
ax.set_title(f"Sia allocation on {cluster.num_gpus} GPUs ({len(placed)} of {len(jobs)} jobs placed)")
ax.legend(handles=[Patch(facecolor=colors[j], label=f"{j} ({sol.allocation[j]})") for j in placed],
          loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
fig.tight_layout()
fig.canvas.draw()  # render now, also under the non-interactive Agg backend
plt.show()

# %% [markdown]
# ## Claims checked

# %%
assert sol.is_optimal, sol.result.termination
assert alloc_problems == [] and place_problems == []
assert abs(sia.objective_value(problem, sol.allocation) - sol.objective) <= 1e-6 * max(1.0, abs(sol.objective))
assert all(abs(v - sol.objective) <= 1e-6 * max(1.0, abs(sol.objective)) for v in others.values()), others
assert sol.allocation["ncf-9"] == sia.Config(1, 2, "t4")  # the non-preemptible job keeps its configuration
assert len(owner) == sum(c.n_gpus for c in sol.allocation.values() if c is not None)  # no GPU used twice
assert len(placed) >= 10 and not sol.placement.unplaced
assert len(ax.patches) == cluster.num_gpus  # the picture has one cell per GPU
print("all claims hold")
