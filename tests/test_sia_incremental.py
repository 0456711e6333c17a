"""The Sia model built incrementally across rounds (``SiaBuildCache``) is the model built from scratch, array for
array and label for label, while jobs arrive, leave, move and grow (issue 26); the simulator's policy builds every
round's model that way."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from schedopt import sim
from schedopt.model import LinearModel
from schedopt.sia import Cluster, Config, GpuType, Job, SiaBuildCache, SiaProblem, generate_configs
from schedopt.sia.direct import DirectModel
from schedopt.sim.policies.sia import SiaPolicy

CLUSTER = Cluster((GpuType("t4", 4, 3), GpuType("a100", 8, 2), GpuType("v6", 6, 2)))
CFG = generate_configs(CLUSTER, 64)


def assert_same_model(a: LinearModel, b: LinearModel) -> None:
    """Every array of the two models equal (matrix entries, bounds, objective, integrality), and every name."""
    x, y = a.to_arrays(), b.to_arrays()
    for f in dataclasses.fields(x):
        u, v = getattr(x, f.name), getattr(y, f.name)
        if sp.issparse(u):
            assert u.shape == v.shape
            u, v = u.tocsr(), v.tocsr()
            u.sort_indices()
            v.sort_indices()
            for k in ("indptr", "indices", "data"):
                assert np.array_equal(getattr(u, k), getattr(v, k)), f"A.{k}"
        elif isinstance(u, np.ndarray):
            assert np.array_equal(u, v), f.name
        else:
            assert u == v, f.name
    assert a.column_names() == b.column_names()
    assert a.row_names() == b.row_names()
    assert [(k.name, k.shape, k.kind) for k in a.blocks.values()] == [(k.name, k.shape, k.kind) for k in b.blocks.values()]
    assert list(a.families) == list(b.families)
    assert a.structure == b.structure


def _problem(jobs: list[Job], goodput: np.ndarray, cache: SiaBuildCache | None) -> SiaProblem:
    return SiaProblem(CLUSTER, jobs, goodput, max_gpus_per_job=64, build_cache=cache)


def _job(k: int, max_prof: int, current: Config | None, age: float, restarts: int) -> Job:
    return Job(id=f"j{k}", max_gpus=64, max_profiled_gpus=max_prof, current=current, age_s=age, restarts=restarts,
               restart_cost_s=30.0, preemptible=current is None or k % 3 != 0)


def built_model(problem: SiaProblem) -> LinearModel:
    """The round's model, built now (a formulation's model is built on demand: ``schedopt.sia.direct``), so that
    the cache's counters are those of this build."""
    m = problem.formulation().model
    if isinstance(m, DirectModel):
        m.build_now()
    return m


def test_a_round_like_the_last_reuses_every_label_and_is_the_same_model() -> None:
    rng = np.random.default_rng(0)
    gp = rng.uniform(0.5, 10.0, size=(6, len(CFG)))
    jobs = [_job(k, 4, None, 100.0 * k, 0) for k in range(6)]
    cache = SiaBuildCache()
    first = built_model(_problem(jobs, gp, cache))
    assert cache.reused == 0 and cache.formatted == first.num_cols
    # next round: a minute older, same columns
    jobs2 = [dataclasses.replace(j, age_s=j.age_s + 60.0) for j in jobs]
    again = built_model(_problem(jobs2, gp, cache))
    assert cache.formatted == 0 and cache.reused == again.num_cols > 0
    assert_same_model(again, _problem(jobs2, gp, None).formulation().model)
    # a job leaves, one arrives, one grows (more columns), one starts running (changed restart factor only)
    c = CFG[int(np.flatnonzero((CFG.n_gpus == 4) & (CFG.type_index == 1))[0])]
    jobs3 = [jobs2[0], dataclasses.replace(jobs2[1], max_profiled_gpus=16), jobs2[3],
             dataclasses.replace(jobs2[4], current=c, restarts=1), jobs2[5], _job(9, 0, None, 0.0, 0)]
    gp3 = np.vstack([gp[[0, 1, 3, 4, 5]], rng.uniform(0.5, 10.0, size=(1, len(CFG)))])
    inc = built_model(_problem(jobs3, gp3, cache))
    assert 0 < cache.reused < inc.num_cols and cache.formatted > 0
    assert_same_model(inc, _problem(jobs3, gp3, None).formulation().model)


_round = st.lists(
    st.tuples(st.integers(0, 11), st.sampled_from([0, 1, 2, 4, 8, 16]), st.integers(-1, len(CFG) - 1),
              st.integers(0, 3), st.booleans()),
    min_size=0, max_size=10, unique_by=lambda t: t[0],
)


@settings(max_examples=30, deadline=None)
@given(st.lists(_round, min_size=1, max_size=5), st.integers(0, 2**31 - 1))
def test_any_sequence_of_rounds_builds_the_scratch_model(rounds: list[list[tuple]], seed: int) -> None:
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.1, 5.0, size=(12, len(CFG)))
    cache = SiaBuildCache()
    for t, spec in enumerate(rounds):
        jobs, rows = [], []
        for k, prof, cur, restarts, zero in sorted(spec):
            current = None if cur < 0 else CFG[cur]
            if current is not None and current.n_gpus > 2 * prof:
                current = None  # outside the growth rule: not a configuration the job could hold
            jobs.append(_job(k, prof, current, 60.0 * (t + 1) + k, restarts))
            row = base[k].copy()
            if zero:  # a goodput estimate that changed: some configurations cannot run
                row[(np.arange(len(CFG)) + t) % 3 == 0] = 0.0
                if current is not None:
                    row[cur] = 1.0
            rows.append(row)
        gp = np.array(rows).reshape(len(jobs), len(CFG))
        assert_same_model(_problem(jobs, gp, cache).formulation().model, _problem(jobs, gp, None).formulation().model)


class _CheckedSia(SiaPolicy):
    """The Sia policy, checking each round's model against a build from scratch."""

    def __init__(self) -> None:
        super().__init__(backend="highs")
        self.seen: list[tuple[int, int]] = []

    def problem(self, state: sim.RoundState) -> SiaProblem:
        prob = super().problem(state)
        scratch = SiaProblem(prob.cluster, prob.jobs, prob.goodput, p=prob.p, lam=prob.lam,
                             max_gpus_per_job=prob.max_gpus_per_job).formulation().model
        assert_same_model(prob.formulation().model, scratch)
        assert prob.build_cache is not None
        self.seen.append((prob.build_cache.reused, prob.build_cache.formatted))
        return prob


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_the_policy_builds_each_round_incrementally_and_exactly() -> None:
    """A short simulation: every round's model (built with the policy's cache) equals a build from scratch, and
    most rounds reuse labels."""
    pol = _CheckedSia()
    wl = sim.load_workload("saturn/1")
    wl = dataclasses.replace(wl, jobs=wl.jobs[:12])
    sim.simulate(sim.cluster_preset("sia-64"), wl, pol, job_model="sia", max_time=3600.0, progress=False)
    assert len(pol.seen) > 20
    assert sum(r > 0 for r, _ in pol.seen) > len(pol.seen) // 2


def test_the_builders_matrices_are_scipys_own_construction() -> None:
    """The families' matrices the builder makes without scipy's checks (``build.canonical_csr``) are, attribute for
    attribute, what ``scipy.sparse.csr_matrix((data, indices, indptr), shape=...)`` makes of the same arrays, and pass
    scipy's full format check: with running, forced (non-preemptible) and new jobs, and with none."""
    from schedopt.sia import build

    assert build._CSR_DIRECT  # this scipy's matrices hold what canonical_csr sets (else every matrix is scipy's own)
    rng = np.random.default_rng(3)
    gp = rng.uniform(0.5, 10.0, size=(7, len(CFG)))
    running = [CFG[int(np.flatnonzero((CFG.n_gpus == 2) & (CFG.type_index == t))[0])] for t in (0, 1, 2)]
    jobs = [_job(k, 8, running[k] if k < 3 else None, 50.0 * k, k % 2) for k in range(7)]  # j0: forced
    for js, g in ((jobs, gp), ([], np.zeros((0, len(CFG))))):
        m = _problem(js, g, SiaBuildCache()).formulation().model
        mats = dict(zip(m.families, m._rows))
        assert mats["forced_config"].shape[0] == (1 if js else 0)
        for name, A in mats.items():
            ref = sp.csr_matrix((A.data, A.indices, A.indptr), shape=A.shape)
            assert ref.has_canonical_format  # (the model asked A's when it took it: both now cache the flags)
            assert type(A) is type(ref) and set(vars(A)) == set(vars(ref)), name
            assert A.shape == ref.shape and A.maxprint == ref.maxprint, name
            for k in ("data", "indices", "indptr"):
                assert getattr(A, k).dtype == getattr(ref, k).dtype, (name, k)
                assert np.array_equal(getattr(A, k), getattr(ref, k)), (name, k)
            A.check_format(full_check=True)
            assert A.has_canonical_format, name
            assert np.array_equal(A.toarray(), ref.toarray()), name
    empty, ref = build._no_rows(5), sp.csr_matrix((0, 5))  # virtual_node_capacity's rows where no type splits
    assert set(vars(empty)) == set(vars(ref)) and empty.shape == ref.shape == (0, 5)
    for k in ("data", "indices", "indptr"):
        assert getattr(empty, k).dtype == getattr(ref, k).dtype and np.array_equal(getattr(empty, k), getattr(ref, k))
