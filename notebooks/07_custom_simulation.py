# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Your own policy, placer and admission rule in the simulator
#
# `schedopt.sim` splits a scheduler into three roles a user replaces: the **policy** (each round, who gets how many
# GPUs), the **placer** (which nodes and GPU indices) and the **admission rule** (whether an arriving job enters the
# queue now, later or never). Each is a small class with a typed protocol; the engine validates what it returns and
# names the culprit when something is wrong. Below, all three are written in a module of our own, run through
# `simulate`, a sweep on a process pool, and registered under a name as a package would through its entry points.

# %%
import sys
import warnings
from pathlib import Path

import numpy as np

from schedopt import sim
from schedopt.sia import Cluster, GpuType

# %% [markdown]
# ## The module
#
# A least-attained-service policy that asks for each job's requested GPUs with `GpuRequest` (any size the cluster
# can host, not only Sia's configurations), a placer that fills the lowest free GPUs of the first type with room,
# and an admission rule that keeps at most `limit` jobs in the scheduler.

# %%
Path("my_sched.py").write_text('''
from schedopt.sia import Config, Placement
from schedopt.sim import ACCEPT, DEFER, Decision, GpuRequest


class LeastAttained:
    name = "least-attained"

    def __init__(self, max_running: int = 1000):
        self.max_running = max_running

    def decide(self, state):
        free, want = state.cluster.num_gpus, {}
        for v in sorted(state.jobs, key=lambda v: (v.attained_gpu_seconds, v.arrival, v.id)):
            if len(want) < self.max_running and v.requested_gpus <= free:
                want[v.id] = GpuRequest(v.requested_gpus)
                free -= v.requested_gpus
        return Decision(requests=want)


class FirstFit:
    name = "first-fit"

    def place(self, cluster, want, previous, pinned=()):
        free = {n: list(range(t.gpus_per_node)) for t in cluster.gpu_types for n in cluster.node_ids(t.name)}
        out, configs, unplaced = {}, {}, []
        for jid, w in want.items():
            g, slots = (w.n_gpus if isinstance(w, Config) else w.gpus), []
            for n in free:
                take, free[n] = free[n][:g - sum(len(s) for _, s in slots)], free[n][g - sum(len(s) for _, s in slots):]
                if take:
                    slots.append((n, tuple(take)))
            if sum(len(s) for _, s in slots) == g:
                out[jid], configs[jid] = slots, Config(len(slots), g, cluster.type_names[0])
            else:
                unplaced.append(jid)
        return Placement(assignments=out, configs=configs, unplaced=tuple(unplaced))


class MaxAdmitted:
    name = "max-admitted"

    def __init__(self, limit: int = 4):
        self.limit = limit

    def admit(self, job, state):
        return ACCEPT if len(state.admitted) < self.limit else DEFER
''')
sys.path.insert(0, str(Path.cwd()))
import my_sched  # noqa: E402

# %% [markdown]
# ## One simulation
#
# Twelve jobs of Pollux's workload 1 (at most 4 GPUs each, all arriving at once) on a small cluster of 2 x 4 T4
# GPUs, so that they contend; Tiresias (two-queue least-attained service) beside it.

# %%
full = sim.load_workload("pollux/1")
small = sim.Workload("small", tuple(sim.WorkloadJob(j.name, 0.0, j.application, j.num_replicas, j.batch_size)
                                     for j in full.jobs if j.num_replicas <= 4)[:12])
Path("small.csv").write_text(small.to_csv())
cluster = Cluster((GpuType("t4", 4, 2),))

mine = sim.simulate(cluster, small, my_sched.LeastAttained(), job_model="pollux",
                    placer=my_sched.FirstFit(), admission=my_sched.MaxAdmitted(4))
las = sim.simulate(cluster, small, sim.get_policy("tiresias"), job_model="pollux")
for r in (mine, las):
    s = r.summary()
    print(f"{r.meta.policy:15s} placer={r.meta.placer:10s} admission={r.meta.admission:13s} "
          f"avg JCT {s['avg_jct_s'] / 3600:.2f} h, makespan {s['makespan_s'] / 3600:.2f} h, {s['finished']}/{s['jobs']}")

# %% [markdown]
# ## A sweep, by name
#
# On a process pool the policy travels as a spec, `module:Class[:option=value]`, checked against the class's own
# parameters; registering it gives it a short name (a package does the same through the `schedopt.policies`
# entry-point group, with `schedopt.placers` and `schedopt.admissions` beside it).

# %%
sim.register_policy("least-attained", "my_sched:LeastAttained", replace=True)
sim.register_placer("first-fit", "my_sched:FirstFit", replace=True)
sweep = sim.simulate_many(["least-attained:max_running=4", "my_sched:LeastAttained", "tiresias"], ["small.csv"],
                          seeds=[0], cluster="pollux", placer="first-fit", workers=2, progress=False)
# (the sweep runs on a cluster preset: Pollux's 64 T4 GPUs)
for r in sweep:
    print(f"{r.meta.policy:32s} avg JCT {r.summary()['avg_jct_s'] / 3600:.2f} h")
try:
    sim.get_policy("least-attained", max_runing=3)
except Exception as exc:  # a misspelt option is refused, naming the closest one
    print(type(exc).__name__, exc)

# %% [markdown]
# ## When a policy never finishes its jobs
#
# A run that reaches its time cap with unfinished jobs warns, and its record says so.

# %%
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    stuck = sim.simulate(cluster, small, my_sched.LeastAttained(max_running=0), job_model="pollux",
                         max_time=6 * 3600.0)
print(caught[0].message)
print(stuck.meta.capped, stuck.meta.unfinished, stuck.summary()["makespan_s"] / 3600)

# %% [markdown]
# ## Claims checked

# %%
assert all(j.finish is not None for j in mine.jobs) and all(j.finish is not None for j in las.jobs)
assert mine.meta.placer == "first-fit" and mine.meta.admission == "max-admitted"
assert sweep[0].jobs == sim.simulate(sim.cluster_preset("pollux"), small, my_sched.LeastAttained(max_running=4),
                                     job_model="pollux", placer=my_sched.FirstFit()).jobs
assert [r.meta.policy for r in sweep] == ["least-attained:max_running=4", "my_sched:LeastAttained", "tiresias"]
assert stuck.meta.capped and stuck.meta.unfinished == 12 and "time cap" in str(caught[0].message)
held = [sum(1 for j in mine.jobs for s in j.segments if s[0] <= t < s[1]) for t in np.arange(0, 36000, 600)]
assert max(held) <= 4  # never more than 4 jobs admitted, so never more than 4 holding GPUs
print("all claims hold")
