# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Property-testing your own allocation policy
#
# schedopt ships hypothesis strategies that build valid specs directly (`schedopt.sia.strategies`) and checkers
# that verify allocations and placements from the spec alone (`check_allocation`, `check_placement`). Together
# they test *any* policy, not just the ILP. Below: a small greedy Sia policy written from scratch, tested against
# random clusters and jobs, compared with the ILP optimum, and a deliberately broken variant that hypothesis
# catches with a minimal failing example.

# %%
import numpy as np
from hypothesis import given, settings

from schedopt import sia
from schedopt.sia import strategies as sst

# %% [markdown]
# ## A greedy policy: best goodput per GPU first, with its own first-fit placer
#
# The policy reads the valid (job, configuration) pairs and their goodput from `problem.valid_pairs()` (the
# configuration-pruning layer), ranks them by goodput per GPU, and gives each job the first configuration it can
# actually place on free GPUs: a single-node configuration of `s` GPUs takes an aligned block inside a
# power-of-two virtual node (a 6-GPU node is a 4 and a 2), a multi-node one takes whole free nodes. It returns the
# allocation and the placement, so both checkers apply.

# %%
def virtual_blocks(gpus_per_node, size):
    """Aligned GPU blocks of `size` inside the node's power-of-two virtual nodes."""
    out, off = [], 0
    for b in sia.virtual_bins(gpus_per_node):
        if b >= size:
            out += [tuple(range(o, o + size)) for o in range(off, off + b, size)]
        off += b
    return out


def greedy_policy(problem, respect_capacity=True):
    cl = problem.cluster
    free = {f"{t.name}-{k}": np.ones(t.gpus_per_node, bool) for t in cl.gpu_types for k in range(t.nodes)}
    left = dict(zip(cl.type_names, problem.available.tolist()))
    pairs = problem.valid_pairs()
    configs = problem.configs.configs
    order = np.argsort(-pairs.goodput / problem.configs.n_gpus[pairs.config], kind="stable")
    alloc = {j.id: None for j in problem.jobs}
    slots = {}
    for k in order.tolist():
        job = problem.jobs[pairs.job[k]]
        c = configs[pairs.config[k]]
        if alloc[job.id] is not None or (respect_capacity and c.n_gpus > left[c.gpu_type]):
            continue
        t = cl[c.gpu_type]
        nodes = [f"{t.name}-{i}" for i in range(t.nodes)]
        if c.n_nodes == 1:
            spot = next(((n, blk) for n in nodes for blk in virtual_blocks(t.gpus_per_node, c.n_gpus)
                         if not respect_capacity or free[n][list(blk)].all()), None)
            got = None if spot is None else [spot]
        else:
            whole = [n for n in nodes if not respect_capacity or free[n].all()][: c.n_nodes]
            got = [(n, tuple(range(t.gpus_per_node))) for n in whole] if len(whole) == c.n_nodes else None
        if got is None:
            continue
        for n, blk in got:
            free[n][list(blk)] = False
        left[c.gpu_type] -= c.n_gpus
        alloc[job.id], slots[job.id] = c, got
    placement = sia.Placement(slots, {j: c for j, c in alloc.items() if c is not None})
    return alloc, placement


problem = sia.generate_instance(64, seed=3, jobs=16).problem()
alloc, placement = greedy_policy(problem)
for jid, c in alloc.items():
    print(f"{jid:<4} {c!s:<14} {placement.get(jid, '-')}")
print("check_allocation:", sia.check_allocation(problem, alloc) or "OK")
print("check_placement: ", sia.check_placement(problem.cluster, alloc, placement) or "OK")


# %% [markdown]
# ## The properties, run by hypothesis inside the notebook
#
# For random small problems from `sst.problems()` (1-2 GPU types, nodes of 1-8 GPUs, up to 5 jobs of every kind,
# random goodput matrices with zeros): the greedy allocation passes `check_allocation`, its placement passes
# `check_placement`, and its objective is never better than the ILP optimum (the objective is maximised for
# `p > 0` and minimised for `p < 0`). A hypothesis test is a plain function: call it.

# %%
def better_or_equal(problem, a, b):
    """a is at least as good as b in the model's sense."""
    tol = 1e-6 * max(1.0, abs(a), abs(b))
    return a >= b - tol if problem.p > 0 else a <= b + tol


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(sst.problems(max_jobs=5))
def test_greedy_policy(problem):
    alloc, placement = greedy_policy(problem)
    assert sia.check_allocation(problem, alloc) == []
    assert sia.check_placement(problem.cluster, alloc, placement) == []
    best = problem.solve("highs")
    assert best.is_optimal
    assert better_or_equal(problem, best.objective, sia.objective_value(problem, alloc))


test_greedy_policy()
print("greedy policy: 60 random problems, every property holds")


# %% [markdown]
# ## A broken policy is caught
#
# The same policy with capacity tracking switched off: every job takes its best configuration whether or not the
# GPUs are free. Hypothesis finds a counterexample and shrinks it to a minimal one; we print it.

# %%
@settings(max_examples=200, deadline=None, derandomize=True, database=None, print_blob=False)
@given(sst.problems(max_jobs=5))
def test_broken_policy(problem):
    alloc, placement = greedy_policy(problem, respect_capacity=False)
    problems_found = sia.check_allocation(problem, alloc) + sia.check_placement(problem.cluster, alloc, placement)
    assert problems_found == [], problems_found


caught = None
try:
    test_broken_policy()
except AssertionError as exc:
    caught = exc
print("falsified:", caught is not None)
print("\n".join(getattr(caught, "__notes__", [])))  # hypothesis's report: the shrunk falsifying example
print("AssertionError:", caught)

# %%
# the same check on the minimal kind of case by hand: two 1-GPU jobs on a one-GPU cluster
tiny = sia.SiaProblem(sia.Cluster((sia.GpuType("a", 1, 1),)), [sia.Job("j0"), sia.Job("j1")], np.ones((2, 1)), p=1.0)
bad_alloc, bad_place = greedy_policy(tiny, respect_capacity=False)
bad_report = sia.check_allocation(tiny, bad_alloc) + sia.check_placement(tiny.cluster, bad_alloc, bad_place)
print(bad_alloc)
print("\n".join(map(str, bad_report)))
good_alloc, good_place = greedy_policy(tiny)
print(good_alloc, sia.check_allocation(tiny, good_alloc) or "OK")

# %% [markdown]
# ## Claims checked

# %%
assert sia.check_allocation(problem, alloc) == [] and sia.check_placement(problem.cluster, alloc, placement) == []
assert caught is not None, "the broken policy was not caught"
# hypothesis reports the shrunk call ("Falsifying example: ..." before 6.16x, "Failing test case: ..." after)
assert "test_broken_policy(" in "".join(getattr(caught, "__notes__", []))
assert any("allocated" in str(m) for m in bad_report) and any("used by jobs" in str(m) for m in bad_report)
assert sum(c is not None for c in good_alloc.values()) == 1
print("all claims hold")
