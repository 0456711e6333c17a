# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Comparing solvers on Sia's configuration ILP
#
# `schedopt.bench.run` runs every (size, seed, backend) in its own fresh process with a wall-clock guard and times
# each phase apart (goodput evaluation, model build, hand-off to the solver, solve, decode, placement). Here: a small
# sweep at 64 and 128 GPUs, one seed, normal load, with HiGHS, SciPy (`milp`, which is HiGHS behind SciPy's API) and
# the `mckp` backend, where installed. Sizes are kept small so the notebook runs in the test suite; the same call
# with `sizes="default"` produces the README's table.

# %%
import math
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt

import schedopt
from schedopt import bench

wanted = ["highs", "scipy", "mckp"]
backends = [b for b in wanted if b in schedopt.available_backends()]
print("backends:", backends, "| not installed here:", sorted(set(wanted) - set(backends)))
records = bench.run("sia", sizes=[64, 128], seeds=[0], loads=["normal"], backends=backends, time_limit=30,
                    progress=False)
print(len(records), "runs on", records[0].machine_cpu, f"({records[0].machine_cores} cores), Python", records[0].python)

# %%
print(f"{'GPUs':>5} {'jobs':>5} {'backend':<8} {'termination':<12} {'objective':>12} {'gap':>8} "
      f"{'build':>7} {'solve':>7} {'path':>7} (s)")
for r in sorted(records, key=lambda r: (r.gpus, r.backend)):
    print(f"{r.gpus:>5} {r.jobs:>5} {r.backend:<8} {r.termination:<12} {r.objective:>12.6f} {r.gap:>8.1e} "
          f"{r.t_build:>7.4f} {r.t_solve:>7.4f} {r.t_path:>7.4f}")

print()
for row in bench.summarize(records):
    ratio = "-" if row["ratio"] is None else f"{row['ratio']:.2f}"
    print(f"{row['gpus']:>5} GPUs  {row['backend']:<8} median path {row['path_median']:.4f} s  x{ratio} vs reference")

# %% [markdown]
# ## Time versus GPUs, and gap versus time
#
# Straight from the records. The gap is the solver's own relative gap between its incumbent and its bound (0 when
# proven optimal); a symmetric-log axis keeps zero gaps visible.

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
for b in backends:
    rs = sorted((r for r in records if r.backend == b), key=lambda r: r.gpus)
    ax1.plot([r.gpus for r in rs], [r.t_path for r in rs], marker="o", label=b)
    ax2.scatter([r.t_path for r in rs], [r.gap for r in rs], label=b, s=40)
ax1.set_xscale("log", base=2)
ax1.set_yscale("log")
ax1.set_xlabel("GPUs")
ax1.set_ylabel("whole path (s): goodput + build + solve + decode + place")
ax1.set_title("time vs GPUs")
ax1.legend()
ax2.set_xscale("log")
ax2.set_yscale("symlog", linthresh=1e-6)
ax2.set_xlabel("whole path (s)")
ax2.set_ylabel("relative gap")
ax2.set_title("gap vs time")
ax2.legend()
fig.tight_layout()
fig.canvas.draw()  # render now, also under the non-interactive Agg backend
plt.show()

# %% [markdown]
# `bench.report` writes the same comparison as Markdown (what the README's table comes from; `figures=True`, the default, adds PNG versions of the plots above):

# %%
out = Path(tempfile.mkdtemp(prefix="schedopt-bench-"))
md_path = bench.report(records, out, figures=False)
print("\n".join(md_path.read_text().splitlines()[:25]))

# %% [markdown]
# ## Claims checked

# %%
assert {r.backend for r in records} == set(backends) and {"highs", "scipy"} <= set(backends)
assert {r.gpus for r in records} == {64, 128}
assert all(r.termination == "optimal" for r in records), [(r.backend, r.gpus, r.termination) for r in records]
for gpus in (64, 128):
    objs = [r.objective for r in records if r.gpus == gpus]
    # every backend solves to the sweep's relative gap (1e-4): the optima agree within it
    assert max(objs) - min(objs) <= 1e-4 * max(1.0, max(abs(o) for o in objs)), (gpus, objs)
assert all(r.t_path is not None and r.t_path > 0 and math.isfinite(r.t_path) for r in records)
assert md_path.exists() and "| 128 |" in md_path.read_text()
assert len(ax1.lines) == len(backends) and len(ax2.collections) == len(backends)
print("all claims hold")
