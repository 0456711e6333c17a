"""
Solvers compared
================

The same ``LinearModel`` solved by several backends at growing sizes. A fair comparison turns off mckp's race
against HiGHS (``race_backend=None``), uses one thread, and compares the solve phase (``res.timings.solve``) apart
from the build. For real measurements use the benchmark harness (``schedopt bench``), which runs each solve in a
fresh process; this example runs everything in one process, which favours the solvers loaded first.
"""

# %%
import time

import matplotlib.pyplot as plt

import schedopt
from schedopt import sia

sizes = [64, 256, 512]
backends = {"mckp": {"race_backend": None}, "highs": {}, "scipy": {}}
solve_s: dict[str, list[float]] = {b: [] for b in backends}
for gpus in sizes:
    model = sia.generate_instance(gpus, seed=0).problem().build()
    objectives = set()
    for name, options in backends.items():
        res = schedopt.solve(model, backend=name, time_limit=60, mip_rel_gap=1e-6, threads=1, **options)
        res.raise_for_status()
        objectives.add(round(res.objective, 6))
        solve_s[name].append(res.timings.solve)
    print(f"{gpus:5d} GPUs, {model.num_cols:5d} binaries: every backend proves {objectives}")
    assert len(objectives) == 1

# %%
fig, ax = plt.subplots(figsize=(6, 3.5))
for name, ts in solve_s.items():
    ax.plot(sizes, [t * 1000 for t in ts], marker="o", label=name)
ax.set_xlabel("GPUs")
ax.set_ylabel("solve (ms, one run)")
ax.set_yscale("log")
ax.legend()
ax.set_title(f"Sia's ILP, seed 0 (this machine, {time.strftime('%Y-%m-%d')})")
fig.tight_layout()
