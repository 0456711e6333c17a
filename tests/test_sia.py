"""Sia: configuration pruning, the configuration ILP, forced jobs, and the independent checkers."""

from __future__ import annotations

import itertools
import math
from typing import ClassVar

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schedopt
from schedopt.errors import InfeasibleError, InputError, NoSolutionError
from schedopt.problem import Structure
from schedopt.sia import (
    Cluster,
    Config,
    GpuType,
    Job,
    SiaProblem,
    SiaSettings,
    check_allocation,
    check_placement,
    default_backend_for,
    generate_configs,
    generate_instance,
    objective_value,
    place,
)
from schedopt.sia.check import utilities_of_job
from schedopt.sia.strategies import problems
from schedopt.testing import backends_for

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def two_types() -> Cluster:
    """Type ``a``: 1 node x 2 GPUs; type ``b``: 1 node x 4 GPUs. Configs: a1, a2, b1, b2, b4 (in this order)."""
    return Cluster([GpuType("a", 2, 1), GpuType("b", 4, 1)])


def brute_force(prob: SiaProblem) -> tuple[float, dict]:
    """Best objective over every allocation (per-job options from the independent utilities), feasibility by the
    independent checker."""
    opts = []
    for j in prob.jobs:
        u = utilities_of_job(prob, j)
        opts.append([None, *u])
    best, arg = None, None
    for combo in itertools.product(*opts):
        alloc = {j.id: c for j, c in zip(prob.jobs, combo)}
        if check_allocation(prob, alloc):
            continue
        v = objective_value(prob, alloc)
        if best is None or (v > best if prob.p > 0 else v < best):
            best, arg = v, alloc
    assert best is not None
    return best, arg


# --------------------------------------------------------------------------------------------- configurations
def test_generate_configs_counts_and_cap() -> None:
    """64-GPU shape: t4 (R=4, N=6): 1,2,4 + n=2..6 -> 8; a100 (8, 2): 1,2,4,8 + n=2 -> 5; rtx (8, 3): 4 + 2 -> 6."""
    cl = schedopt.sia.cluster(64)
    t = generate_configs(cl)
    assert len(t) == 19
    assert t[0] == Config(1, 1, "t4") and t[3] == Config(2, 8, "t4") and t[7] == Config(6, 24, "t4")
    assert [c.label for c in t.configs[8:13]] == ["1x1xa100", "1x2xa100", "1x4xa100", "1x8xa100", "2x16xa100"]
    capped = generate_configs(cl, max_gpus_per_job=8)
    assert len(capped) == 12 and int(capped.n_gpus.max()) == 8
    assert all(capped.index(c) == i for i, c in enumerate(capped.configs))
    # R = 6 is split into virtual nodes 4 + 2: partial configs 1, 2, 4; multi-node (2, 12), (3, 18)
    odd = generate_configs(Cluster([GpuType("x", 6, 3)]))
    assert [(c.n_nodes, c.n_gpus) for c in odd.configs] == [(1, 1), (1, 2), (1, 4), (2, 12), (3, 18)]
    with pytest.raises(InputError, match="max_gpus_per_job"):
        generate_configs(cl, max_gpus_per_job=0)


# ------------------------------------------------------------------------------------------ hand-checked optima
def test_hand_checked_p1_two_jobs_two_types() -> None:
    """p = 1, lam = 0, goodput already normalised (min 1 at one GPU):

    ======  ==  ===  ==  ==  ==
    job     a1  a2   b1  b2  b4
    j1      1   2    2   4   8
    j2      1   1.5  3   5   6
    ======  ==  ===  ==  ==  ==

    Candidates (one config each, a holds 2 GPUs, b 4): j1 b4 + j2 a2 = 9.5; j1 b2 + j2 b2 = 9; j1 a2 + j2 b4 = 8;
    j1 b2 + j2 a2 = 5.5. Optimum 9.5: j1 -> 1x4xb, j2 -> 1x2xa.
    """
    G = np.array([[1, 2, 2, 4, 8], [1, 1.5, 3, 5, 6]], dtype=float)
    jobs = [Job("j1", max_profiled_gpus=4), Job("j2", max_profiled_gpus=4)]
    prob = SiaProblem(two_types(), jobs, G, p=1.0, lam=0.0)
    sol = prob.solve("highs")
    assert sol.is_optimal and sol.backend == "highs"
    assert sol.objective == pytest.approx(9.5)
    assert sol.allocation == {"j1": Config(1, 4, "b"), "j2": Config(1, 2, "a")}


def test_hand_checked_fairness_p_minus_one() -> None:
    """Same goodput, p = -1, lam = 1.1: minimise sum 1/G x + lam * (jobs without a config).

    Both jobs allocated (1/G <= 1 < lam): j1 b2 + j2 b2 = 1/4 + 1/5 = 0.45; j1 a2 + j2 b4 = 0.5 + 1/6 = 0.667;
    j1 b4 + j2 a2 = 0.125 + 0.667 = 0.792; j1 b1 + j2 b2 = 0.5 + 0.2 = 0.7. Optimum 0.45 (the two jobs share b
    and the a GPUs stay idle: fairness beats total goodput).
    """
    G = np.array([[1, 2, 2, 4, 8], [1, 1.5, 3, 5, 6]], dtype=float)
    jobs = [Job("j1", max_profiled_gpus=4), Job("j2", max_profiled_gpus=4)]
    prob = SiaProblem(two_types(), jobs, G, p=-1.0, lam=1.1)
    sol = prob.solve()
    assert sol.backend == default_backend_for(prob.formulation()) == "mckp"
    assert sol.objective == pytest.approx(0.45)
    assert sol.allocation == {"j1": Config(1, 2, "b"), "j2": Config(1, 2, "b")}


def test_hand_checked_three_jobs_normalisation_and_growth() -> None:
    """Three jobs, p = 1, lam = 0; rows are normalised by their smallest goodput (u = 1 GPU):

    j1 raw a1=2, a2=4, b1=2, b2=4, b4=8 -> /2: 1, 2, 1, 2, 4.
    j2 new (max_profiled 0: growth limit 1 GPU) raw 5 everywhere valid (a1, b1) -> 1, 1.
    j3 allowed only on a, raw a1=1, a2=3 -> 1, 3.
    Best: j1 b4 (4) + j3 a2 (3) = 7, j2 gets nothing (a and b full). Alternatives: j1 b2 (2) + j2 b1 (1)
    + j3 a2 (3) = 6; j1 b4 + j2 a1 + j3 a1 = 6. Optimum 7.
    """
    nan = np.nan
    G = np.array([[2, 4, 2, 4, 8], [5, nan, 5, nan, nan], [1, 3, nan, nan, nan]], dtype=float)
    jobs = [Job("j1", max_profiled_gpus=2), Job("j2"), Job("j3", max_profiled_gpus=2, allowed_types=["a"])]
    prob = SiaProblem(two_types(), jobs, G, p=1.0, lam=0.0)
    pt = prob.valid_pairs()
    assert pt.mask.sum() == 5 + 2 + 2
    assert np.allclose(pt.utility[pt.job == 0], [1, 2, 1, 2, 4])
    sol = prob.solve("highs")
    assert sol.objective == pytest.approx(7.0)
    assert sol.allocation == {"j1": Config(1, 4, "b"), "j2": None, "j3": Config(1, 2, "a")}
    assert sol.model.blocks["x"].labels[0][0] == "j1@1x1xa"


def test_p_zero_and_bad_inputs_rejected() -> None:
    G = np.ones((1, 5))
    with pytest.raises(InputError, match="p=0"):
        SiaProblem(two_types(), [Job("j1")], G, p=0.0)
    with pytest.raises(InputError, match=r"goodput.*\(1, 5\)"):
        SiaProblem(two_types(), [Job("j1"), Job("j2")], G)
    with pytest.raises(InputError, match=r"jobs\[1\]\.id"):
        SiaProblem(two_types(), [Job("j1"), Job("j1")], np.ones((2, 5)))
    with pytest.raises(InputError, match=r"jobs\[0\]\.allowed_types\[0\]='z'"):
        SiaProblem(two_types(), [Job("j1", allowed_types=["z"])], G)
    with pytest.raises(InputError, match=r"jobs\[0\]\.current='1x3xb'"):
        SiaProblem(two_types(), [Job("j1", current=Config(1, 3, "b"))], G)
    with pytest.raises(InputError, match=r"job\[j1\]\.min_gpus=0"):
        Job("j1", min_gpus=0)
    with pytest.raises(InputError, match=r"job\[j1\]\.scale_unit=4"):
        Job("j1", min_gpus=1, max_gpus=3, scale_unit=4)
    with pytest.raises(InputError, match=r"goodput\[j1, 1x1xa\]=-1"):
        SiaProblem(two_types(), [Job("j1")], -G).build()
    with pytest.raises(InputError, match=r"available\[b\]=9"):
        SiaProblem(two_types(), [Job("j1")], G, available={"b": 9})


# ------------------------------------------------------------------------------------------------ pruning
def _full_configs(cl: Cluster) -> list[Config]:
    """Every (n, r, t): 1 <= n <= N_t nodes, n <= r <= n R_t GPUs (Pollux-style full enumeration)."""
    return [Config(n, r, t.name) for t in cl.gpu_types for n in range(1, t.nodes + 1) for r in range(n, n * t.gpus_per_node + 1)]


def _round_down(cl: Cluster, c: Config) -> int:
    """The GPU count of the largest pruned configuration of c's type with at most c.n_gpus GPUs."""
    counts = [x.n_gpus for x in generate_configs(cl).configs if x.gpu_type == c.gpu_type and x.n_gpus <= c.n_gpus]
    return max(counts)


def _full_optimum(cl: Cluster, jobs: list[Job], f, p: float, lam: float) -> float:
    """Brute force over the full enumeration with per-type GPU counts as the only capacity (a relaxation of
    placement), the same job rules, normalisation and restart factor."""
    full = _full_configs(cl)
    opts = []
    utils = []
    for j in jobs:
        cand = [(c, f(j, c)) for c in full if c.n_gpus <= max(2 * j.max_profiled_gpus, 1)]
        u = min(c.n_gpus for c, _ in cand)
        gmin = min(g for _, g in cand)
        r = j.restart_factor()
        util = {c: g * u / gmin * (r if j.current is not None and c != j.current else 1.0) for c, g in cand}
        opts.append([None, *[c for c, v in util.items() if v > 0]])
        utils.append(util)
    cap = {t.name: t.total_gpus for t in cl.gpu_types}
    best = None
    for combo in itertools.product(*opts):
        use = dict.fromkeys(cap, 0)
        for c in combo:
            if c is not None:
                use[c.gpu_type] += c.n_gpus
        if any(use[t] > cap[t] for t in cap):
            continue
        v = sum((-lam if p > 0 else lam) if c is None else u[c] ** p for u, c in zip(utils, combo))
        best = v if best is None or (v > best if p > 0 else v < best) else best
    return best


@SETTINGS
@given(data=st.data())
def test_pruning_never_loses_the_optimum(data) -> None:
    """Assumption (stated): goodput is non-decreasing in the GPU count and only improves at the pruned counts
    (G(n, r, t) = g_t(round_down_t(r)), independent of how many nodes hold the r GPUs); node sizes are powers of two,
    min_gpus = scale_unit = 1 and the growth limit is a power of two. Then rounding any full-enumeration allocation
    down to pruned configurations keeps per-type capacity and every utility, so the pruned optimum (solver) equals
    the full-enumeration optimum (brute force)."""
    names = ["a", "b"]
    cl = Cluster([GpuType(n, data.draw(st.sampled_from([1, 2, 4])), data.draw(st.integers(1, 2))) for n in names])
    n_jobs = data.draw(st.integers(1, 3))
    speed = {n: data.draw(st.floats(0.5, 4.0)) for n in names}
    expo = [data.draw(st.floats(0.3, 1.0)) for _ in range(n_jobs)]
    table = generate_configs(cl)
    jobs = []
    for i in range(n_jobs):
        cur = data.draw(st.none() | st.integers(0, len(table) - 1))
        prof = data.draw(st.sampled_from([0, 1, 2, 4]))
        c = table[cur] if cur is not None else None
        if c is not None:
            prof = max(prof, c.n_gpus)
            prof = 1 << (prof - 1).bit_length()
        jobs.append(Job(f"j{i}", max_profiled_gpus=prof, current=c, age_s=data.draw(st.floats(0, 1000)),
                        restarts=data.draw(st.integers(0, 2)), restart_cost_s=data.draw(st.floats(0, 400))))
    idx = {j.id: i for i, j in enumerate(jobs)}

    def f(job: Job, c: Config) -> float:
        return speed[c.gpu_type] * (1 + idx[job.id]) * _round_down(cl, c) ** expo[idx[job.id]]

    p = data.draw(st.sampled_from([-0.5, 1.0]))
    lam = data.draw(st.sampled_from([0.0, 1.1]))
    sol = SiaProblem(cl, jobs, f, p=p, lam=lam).solve("highs")
    assert sol.objective == pytest.approx(_full_optimum(cl, jobs, f, p, lam), rel=1e-7, abs=1e-7)


def test_pruning_can_lose_with_merely_monotone_goodput() -> None:
    """Why the assumption above is needed. One type, 1 node x 4 GPUs, p = 1, lam = 1, both jobs may grow to 4 GPUs.
    j1's goodput is linear (utility r), j2's flat (utility 1 on any count). Objective: sum (U + lam) x - lam n.
    Full enumeration: j1 on 3 GPUs + j2 on 1 = (3 + 1) + (1 + 1) - 2 = 4. Pruned counts are 1, 2, 4 only:
    j1 on 4 alone = 5 - 2 = 3; j1 2 + j2 1 or 2 = 3 + 2 - 2 = 3. The full enumeration is strictly better (4 > 3):
    with merely increasing goodput, pruning can lose the optimum."""
    cl = Cluster([GpuType("a", 4, 1)])

    def f(job: Job, c: Config) -> float:
        return float(c.n_gpus) if job.id == "j1" else 1.0

    jobs = [Job("j1", max_profiled_gpus=2), Job("j2", max_profiled_gpus=2)]
    sol = SiaProblem(cl, jobs, f, p=1.0, lam=1.0).solve("highs")
    assert sol.objective == pytest.approx(3.0)
    assert _full_optimum(cl, jobs, f, 1.0, 1.0) == pytest.approx(4.0)


# ------------------------------------------------------------------------------------ capacity and backends
@SETTINGS
@given(prob=problems(max_jobs=4))
def test_capacity_never_exceeded_and_solutions_place(prob: SiaProblem) -> None:
    """Every returned allocation passes the independent checker and places from empty without eviction."""
    sol = prob.solve("highs")
    assert sol.is_optimal
    alloc = sol.allocation
    assert check_allocation(prob, alloc) == []
    assert objective_value(prob, alloc) == pytest.approx(sol.objective, rel=1e-7, abs=1e-7)
    pl = place(prob.cluster, alloc)
    assert pl.unplaced == () and pl.evicted == ()
    assert check_placement(prob.cluster, alloc, pl) == []


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prob=problems(max_jobs=3))
def test_solver_matches_brute_force(prob: SiaProblem) -> None:
    """The solver's optimum equals brute force over every allocation (independent utilities and checker)."""
    best, _ = brute_force(prob)
    assert prob.solve("highs").objective == pytest.approx(best, rel=1e-7, abs=1e-7)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prob=problems(max_jobs=3, p=1.0))
def test_p1_is_total_goodput_maximisation(prob: SiaProblem) -> None:
    """With p = 1 the objective is sum of normalised goodput + lam * allocated jobs - lam * n: with lam = 0 the
    solver's optimum is the largest total (normalised) goodput of any feasible allocation (brute force)."""
    prob = SiaProblem(prob.cluster, prob.jobs, prob.goodput, p=1.0, lam=0.0)
    total = 0.0
    opts = [[None, *utilities_of_job(prob, j).items()] for j in prob.jobs]
    for combo in itertools.product(*opts):
        alloc = {j.id: (o[0] if o else None) for j, o in zip(prob.jobs, combo)}
        if not check_allocation(prob, alloc):
            total = max(total, sum(o[1] for o in combo if o))
    assert prob.solve("highs").objective == pytest.approx(total, rel=1e-7, abs=1e-9)


def test_all_backends_agree() -> None:
    """Every installed backend able to solve the model finds the same optimum (highs and scipy at least)."""
    inst = generate_instance(64, seed=3, jobs=16, load="heavy")  # small enough for every backend to prove
    for prob in (inst.problem(),
                 SiaProblem(two_types(), [Job("j1", max_profiled_gpus=4), Job("j2", max_profiled_gpus=4)],
                            np.array([[1, 2, 2, 4, 8], [1, 1.5, 3, 5, 6]], dtype=float), p=-1.0)):
        m = prob.build()
        names = backends_for(m)
        assert {"highs", "scipy"} <= set(names)
        objs = {}
        for b in names:
            sol = prob.solve(b, time_limit=60)
            assert sol.is_optimal, (b, sol.result.termination)
            assert check_allocation(prob, sol.allocation) == []
            objs[b] = sol.objective
        ref = objs["highs"]
        assert all(v == pytest.approx(ref, rel=1e-6, abs=1e-6) for v in objs.values()), objs


@pytest.mark.parametrize("p", [-0.5, 1.0])
def test_large_lambda_allocates_every_job_when_capacity_allows(p: float) -> None:
    """Six new jobs (growth limit 1 GPU), 6 GPUs in all: with lam = 100 the no-allocation penalty dominates any
    goodput difference, so every job gets a configuration; with lam = 0 and p = 1 a job without goodput gain is not
    required to run."""
    cl = two_types()
    rng = np.random.default_rng(1)
    G = rng.uniform(0.5, 3.0, size=(6, 5))
    jobs = [Job(f"j{i}") for i in range(6)]
    sol = SiaProblem(cl, jobs, G, p=p, lam=100.0).solve("highs")
    assert all(c is not None for c in sol.allocation.values())
    assert sum(c.n_gpus for c in sol.allocation.values()) == 6
    # one job more than GPUs: exactly one is left out
    sol7 = SiaProblem(cl, [*jobs, Job("j6")], np.vstack([G, G[:1]]), p=p, lam=100.0).solve("highs")
    assert sum(c is None for c in sol7.allocation.values()) == 1


# ------------------------------------------------------------------------------------------- restart factor
def test_restart_factor_keeps_running_job_in_place() -> None:
    """One job running on 1x2xa (normalised utility 2); 1x4xb would give 2.4 (raw a1=1, a2=2, b4=2.4).
    Age 100 s, 3 restarts of 30 s: r = max(100 - 90, 0) / (100 + 30) = 1/13, so b4's utility becomes 2.4/13 = 0.18
    < 2 and the job stays. A fresh job (no restarts, r = 100/130 = 0.77 -> 1.85 < 2) also stays, while with no
    restart cost (r = 1) it moves to b4 (2.4 > 2)."""
    G = np.array([[1, 2, 1, 1.5, 2.4]], dtype=float)
    base = {"max_profiled_gpus": 2, "current": Config(1, 2, "a"), "age_s": 100.0}
    stay = SiaProblem(two_types(), [Job("j", restarts=3, restart_cost_s=30.0, **base)], G, p=1.0, lam=0.0)
    assert stay.restart_factors()[0] == pytest.approx(1 / 13)
    assert stay.solve("highs").allocation["j"] == Config(1, 2, "a")
    mild = SiaProblem(two_types(), [Job("j", restarts=0, restart_cost_s=30.0, **base)], G, p=1.0, lam=0.0)
    assert mild.solve("highs").allocation["j"] == Config(1, 2, "a")
    free = SiaProblem(two_types(), [Job("j", restarts=3, restart_cost_s=0.0, **base)], G, p=1.0, lam=0.0)
    assert free.solve("highs").allocation["j"] == Config(1, 4, "b")
    # T < S: r = 1 (a job younger than one restart is not penalised)
    young = Job("y", age_s=10.0, restarts=5, restart_cost_s=30.0)
    assert young.restart_factor() == 1.0
    # utility 0 after the factor: the pair is dropped, not given an infinite p < 0 utility
    dead = SiaProblem(two_types(), [Job("j", restarts=5, restart_cost_s=30.0, **base)], G, p=-0.5)
    pt = dead.valid_pairs()
    assert len(pt) == 1 and dead.configs[int(pt.config[0])] == Config(1, 2, "a")


# ------------------------------------------------------------------------------------------ job kinds
class _Model:
    """A duck-typed per-job goodput model: goodput(type, nodes, replicas) -> object with .goodput; throughput at a
    fixed batch for strong/rigid jobs."""

    init_batch = 64.0
    gpu_types = ("a", "b")
    speed: ClassVar[dict[str, float]] = {"a": 1.0, "b": 3.0}

    class _R:
        def __init__(self, g: np.ndarray) -> None:
            self.goodput = g

    def goodput(self, gpu_type, nodes, replicas):
        r = np.asarray(replicas, dtype=float)
        return self._R(self.speed[gpu_type] * r**0.8 / np.asarray(nodes, dtype=float) ** 0.1)

    def throughput(self, gpu_type, nodes, replicas, batch):
        r = np.asarray(replicas, dtype=float)
        return self.speed[gpu_type] * np.minimum(r, 2.0) * batch / 64.0


def test_rigid_job_chooses_only_the_type() -> None:
    """Rigid job of 4 GPUs on a (2 nodes x 2 GPUs) and b (1 x 4): exactly two columns, 2x4xa (whole nodes) and
    1x4xb. Throughput (from the model, fixed batch): a 2, b 6 -> normalised so the slower type equals the GPU
    count: a 4, b 12. p = 1, lam = 0: it picks b (12)."""
    cl = Cluster([GpuType("a", 2, 2), GpuType("b", 4, 1)])
    job = Job("r", kind="rigid", rigid_gpus=4)
    prob = SiaProblem(cl, [job], {"r": _Model()}, p=1.0, lam=0.0)
    pt = prob.valid_pairs()
    assert [prob.configs[int(c)] for c in pt.config] == [Config(2, 4, "a"), Config(1, 4, "b")]
    assert np.allclose(pt.utility, [4.0, 12.0])
    assert prob.solve("highs").allocation["r"] == Config(1, 4, "b")
    with pytest.raises(InputError, match=r"jobs\[0\]\.rigid_gpus=3"):
        SiaProblem(cl, [Job("r", kind="rigid", rigid_gpus=3)], {"r": _Model()})
    with pytest.raises(InputError, match=r"jobs\[0\]\.rigid_gpus=8.*'a'.*at most 2 whole nodes"):
        SiaProblem(cl, [Job("r", kind="rigid", rigid_gpus=8, allowed_types=["a", "b"])], {"r": _Model()})
    with pytest.raises(InputError, match=r"job\[r\]\.rigid_gpus"):
        Job("r", kind="rigid")


def test_strong_scaling_uses_throughput_and_model_path_matches_matrix() -> None:
    """A strong-scaling job's utility is the model's throughput at its fixed batch (flat beyond 2 GPUs here), an
    adaptive job's the model's goodput; the vectorised model path equals the same numbers given as a matrix."""
    cl = two_types()
    jobs = [Job("s", kind="strong", max_profiled_gpus=4), Job("d", max_profiled_gpus=4, batch_size=None)]
    mdl = _Model()
    prob = SiaProblem(cl, jobs, {"s": mdl, "d": mdl}, p=1.0, lam=0.0)
    pt = prob.valid_pairs()
    raw_s = pt.goodput[pt.job == 0]
    assert np.allclose(raw_s, [1, 2, 3, 6, 6])  # a1, a2, b1, b2, b4
    table = prob.configs
    G = np.array([[mdl.throughput(c.gpu_type, 1, c.n_gpus, 64.0) for c in table.configs],
                  [float(mdl.goodput(c.gpu_type, 1, c.n_gpus).goodput) for c in table.configs]])
    prob2 = SiaProblem(cl, jobs, G, p=1.0, lam=0.0)
    assert np.allclose(prob2.valid_pairs().utility, pt.utility)
    assert prob.solve("highs").objective == pytest.approx(prob2.solve("highs").objective)
    alloc = prob.solve("highs").allocation
    assert check_allocation(prob, alloc) == []
    with pytest.raises(InputError, match=r"goodput\[d\]"):
        SiaProblem(cl, jobs, {"s": mdl})


def test_zoo_models_as_goodput() -> None:
    """Goodput from ``schedopt.zoo`` models (vectorised per model and GPU type) equals per-config evaluation."""
    zoo = pytest.importorskip("schedopt.zoo")
    cl = schedopt.sia.cluster(64)
    names = ["cifar10", "imagenet", "bert"]
    models = {n: zoo.load_model(n) for n in names}
    jobs = [Job(f"j{i}", max_profiled_gpus=8) for i in range(3)]
    prob = SiaProblem(cl, jobs, {f"j{i}": models[n] for i, n in enumerate(names)})
    pt = prob.valid_pairs()
    for k in range(0, len(pt), 5):
        j, c = int(pt.job[k]), prob.configs[int(pt.config[k])]
        ref = models[names[j]].goodput(c.gpu_type, np.array([c.n_nodes]), np.array([c.n_gpus])).goodput[0]
        assert pt.goodput[k] == pytest.approx(ref)
    sol = prob.solve("highs")
    assert check_allocation(prob, sol.allocation) == []


# -------------------------------------------------------------------------------------------- forced jobs
def test_non_preemptible_job_is_forced() -> None:
    """j1 runs non-preemptibly on 1x1xa (utility 1) although b4 would give it 8; j2 (preemptible, same goodput)
    may use b. Optimum (p = 1, lam = 0): j1 stays on a1 (1), j2 -> b4 (6): objective 7 (without forcing, 9.5)."""
    G = np.array([[1, 2, 2, 4, 8], [1, 1.5, 3, 5, 6]], dtype=float)
    jobs = [Job("j1", max_profiled_gpus=4, current=Config(1, 1, "a"), preemptible=False),
            Job("j2", max_profiled_gpus=4)]
    prob = SiaProblem(two_types(), jobs, G, p=1.0, lam=0.0)
    m = prob.build()
    assert m.families["forced_config"].labels == ("j1",)
    sol = prob.solve("highs")
    assert sol.allocation == {"j1": Config(1, 1, "a"), "j2": Config(1, 4, "b")}
    assert sol.objective == pytest.approx(7.0)


def test_infeasible_forced_set_is_explained_by_name() -> None:
    """Two non-preemptible jobs each holding 1x4xb on a cluster with one 4-GPU b node: raise InfeasibleError
    before solving, naming both jobs and gpu_capacity[b]; the model's explanation names forced_config and
    gpu_capacity[b]."""
    G = np.ones((2, 5))
    jobs = [Job(f"j{i}", max_profiled_gpus=4, current=Config(1, 4, "b"), preemptible=False) for i in (1, 2)]
    prob = SiaProblem(two_types(), jobs, G)
    with pytest.raises(InfeasibleError, match=r"gpu_capacity\[b\].*j1, j2.*need 8 b GPUs but 4"):
        prob.solve("highs")
    rep = schedopt.explain_infeasibility(prob.build())
    assert not rep.feasible
    assert {"forced_config", "gpu_capacity"} <= set(rep.families)
    assert "gpu_capacity[b]" in rep.rows
    # a type with fewer free GPUs than it has: available counts
    prob2 = SiaProblem(two_types(), jobs[:1], G[:1], available={"b": 2})
    with pytest.raises(InfeasibleError, match=r"gpu_capacity\[b\]: non-preemptible jobs j1 need 4 b GPUs but 2"):
        prob2.solve("highs")


def test_available_gpus_limit_the_allocation() -> None:
    G = np.array([[1, 2, 2, 4, 8], [1, 1.5, 3, 5, 6]], dtype=float)
    jobs = [Job("j1", max_profiled_gpus=4), Job("j2", max_profiled_gpus=4)]
    prob = SiaProblem(two_types(), jobs, G, p=1.0, lam=0.0, available={"b": 2})
    sol = prob.solve("highs")
    # b has 2 free GPUs: j1 a2 (2) + j2 b2 (5) = 7 beats j1 b2 (4) + j2 a2 (1.5) = 5.5 and j1 b1 + j2 b1 = 5
    assert sol.objective == pytest.approx(7.0)
    assert sol.allocation == {"j1": Config(1, 2, "a"), "j2": Config(1, 2, "b")}


# ------------------------------------------------------------------------------------------ model structure
def test_model_names_structure_and_virtual_rows() -> None:
    """Block/family names match the formulation card; mckp arrays are consistent; for R = 6 (virtual nodes 4 + 2)
    the virtual_node_capacity row caps the 4-GPU partial configs: with 2 nodes at most two 1x4 configs fit, so a
    third 4-GPU job cannot run even though 12 GPUs are free (4 + 4 + 4 <= 12)."""
    import pathlib
    import re

    cl = Cluster([GpuType("x", 6, 2)])
    jobs = [Job(f"j{i}", min_gpus=4, max_gpus=4) for i in range(3)]
    prob = SiaProblem(cl, jobs, np.ones((3, len(generate_configs(cl)))), p=1.0, lam=1.0)
    m = prob.build()
    card = pathlib.Path(__file__).resolve().parents[1] / "formulations" / "sia.md"
    text = card.read_text()
    names_sec = text.split("## Names", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^- `([A-Za-z_]+)`", names_sec, flags=re.M))
    aux = SiaProblem(cl, [Job("j", min_gpus=4, max_gpus=4, current=Config(1, 4, "x"))], np.ones((1, 4)), p=1.0,
                     settings=SiaSettings(change_penalty=0.01, change_form="auxiliary")).build()
    assert listed == set(m.blocks) | set(m.families) | set(aux.blocks) | set(aux.families)
    assert set(aux.blocks) - set(m.blocks) == {"t"}
    assert m.families["virtual_node_capacity"].labels == ("x:>2",)
    form = prob.formulation()
    assert form.structure is Structure.MCKP and form.inverse is prob.valid_pairs() and form.problem == "sia"
    assert set(m.meta) <= {"structure"}  # the inverse map is typed (form.inverse); no arrays ride on the model
    arr = m.to_arrays()
    assert list(arr.row_upper[m.families["gpu_capacity"].start:][:2]) == [12.0, 8.0]
    sol = prob.solve("highs")
    assert sum(c is not None for c in sol.allocation.values()) == 2
    assert check_allocation(prob, sol.allocation) == []
    three = {f"j{i}": Config(1, 4, "x") for i in range(3)}
    assert any("virtual nodes hold 8" in v.message and v.path == "virtual_node_capacity[x]"
               for v in check_allocation(prob, three))
    assert m.build_seconds is not None and m.build_seconds > 0


def test_time_limited_solve_reports_status() -> None:
    """A time-limited solve returns the incumbent with its status, or raises NoSolutionError on .allocation."""
    prob = generate_instance(512, seed=1, load="heavy").problem()
    sol = prob.solve("highs", time_limit=0.0)
    if sol.result.has_solution:
        assert sol.status in (schedopt.TerminationReason.FEASIBLE, schedopt.TerminationReason.OPTIMAL)
        assert check_allocation(prob, sol.allocation) == []
    else:
        assert sol.status is schedopt.TerminationReason.NO_SOLUTION_FOUND
        with pytest.raises(NoSolutionError):
            _ = sol.allocation


def test_generated_instance_solves_checks_and_places() -> None:
    inst = generate_instance(512, seed=0)
    prob = inst.problem()
    sol = prob.solve("highs", place=True, time_limit=60)
    assert sol.is_optimal and math.isfinite(sol.objective)
    assert check_allocation(prob, sol.allocation) == []
    assert sol.placement is not None and sol.placement.unplaced == ()
    assert check_placement(prob.cluster, sol.allocation, sol.placement) == []
    forced = [j for j in prob.jobs if not j.preemptible]
    assert forced and all(sol.allocation[j.id] == j.current for j in forced)
    # re-place with the previous placement: nothing changed, nothing moves
    again = place(prob.cluster, sol.allocation, sol.placement)
    assert again.evicted == () and dict(again) == dict(sol.placement)


def test_goodput_callable_must_return_numbers() -> None:
    """Issue 20: a goodput callable returning a string, None, a bool or a list is a named InputError on the pair
    (it was a raw ValueError / TypeError from float(), and "3" or True was half-converted); a numpy scalar or a 0-d
    array is a number and gives the same model as the float."""
    for bad in ("3", None, True, [1.0]):
        with pytest.raises(InputError, match=r"goodput\[j, 1x1xa\]"):
            SiaProblem(two_types(), [Job("j")], lambda job, c, v=bad: v).build()
    plain = SiaProblem(two_types(), [Job("j", max_profiled_gpus=4)], lambda job, c: float(c.n_gpus)).build()
    numpy = SiaProblem(two_types(), [Job("j", max_profiled_gpus=4)],
                       lambda job, c: np.array(np.float32(c.n_gpus))).build()
    assert plain.num_cols == 5 and np.array_equal(plain.to_arrays().c, numpy.to_arrays().c)
