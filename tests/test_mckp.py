"""The ``mckp`` backend: exact optima against the general solvers, bound and repair guarantees, structure detection."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schedopt
from schedopt.errors import BackendCapabilityError, InputError, StructureError
from schedopt.mckp import MAX_KNAPSACK_ROWS, analyze
from schedopt.problem import Structure
from schedopt.results import Limit, TerminationReason
from schedopt.testing import backends_for


def make_mckp(n_jobs: int, n_cfg: int, K: int, seed: int, *, sense: str = "maximize", forced: int = 0,
              free_cols: int = 0, negative: bool = False, cap_frac: float = 0.4, fix_by_rows: bool = True
              ) -> schedopt.LinearModel:
    """Random one-configuration-per-job model: configs with 1, 2, 4, 8, ... GPUs of one of K types, goodput
    concave in the GPU count; ``forced`` jobs get a forced config (via a [1, inf) row or a bound), ``free_cols``
    extra binaries in no at-most-one row, ``negative`` some negative values."""
    rng = np.random.default_rng(seed)
    gpus = 2 ** rng.integers(0, 5, size=(n_jobs, n_cfg))
    typ = rng.integers(0, K, size=(n_jobs, n_cfg))
    alpha = rng.uniform(0.05, 0.5, size=(n_jobs, 1))
    val = rng.uniform(0.5, 2.0, size=(n_jobs, 1)) * gpus / (1 + alpha * (gpus - 1)) * rng.uniform(0.8, 1.2, (1, K))[0][typ]
    if negative:
        val = val - rng.uniform(0, 1.5, size=val.shape)
    P = n_jobs * n_cfg
    fg = rng.integers(1, 8, size=free_cols)
    ft = rng.integers(0, K, size=free_cols)
    fv = rng.uniform(-0.5, 2.0, size=free_cols)
    N = P + free_cols
    sign = 1.0 if sense == "maximize" else -1.0
    m = schedopt.LinearModel("mckp_rand", sense=sense)
    lower = np.zeros(N)
    jobs_forced = rng.choice(n_jobs, size=min(forced, n_jobs), replace=False)
    fcols = jobs_forced * n_cfg + rng.integers(0, n_cfg, size=jobs_forced.size)
    if not fix_by_rows:
        lower[fcols] = 1
    m.add_variables("x", N, kind="binary", lower=lower)
    col = np.arange(P)
    m.add_constraints("one_config_per_job", {"x": sp.csr_matrix((np.ones(P), (col // n_cfg, col)), shape=(n_jobs, N))},
                      upper=1, labels=[f"j{i}" for i in range(n_jobs)])
    w = np.r_[gpus.ravel(), fg].astype(float)
    t = np.r_[typ.ravel(), ft]
    total = np.bincount(t, weights=w, minlength=K)
    cap = np.floor(cap_frac * total) + np.bincount(t[fcols], weights=w[fcols], minlength=K)
    m.add_constraints("gpu_capacity", {"x": sp.csr_matrix((w, (t, np.arange(N))), shape=(K, N))}, upper=cap,
                      labels=[f"type{k}" for k in range(K)])
    if fix_by_rows and fcols.size:
        m.add_constraints("forced_config", {"x": sp.csr_matrix((np.ones(fcols.size), (np.arange(fcols.size), fcols)),
                                                               shape=(fcols.size, N))}, lower=1,
                          labels=[f"j{j}" for j in jobs_forced])
    m.set_objective({"x": sign * np.r_[val.ravel(), fv]}, constant=sign * 0.75)
    m.structure = Structure.MCKP
    return m


def brute_force(m: schedopt.LinearModel) -> float:
    """Optimum by enumerating every 0/1 vector (tiny models only)."""
    arr = m.to_arrays()
    n = arr.num_cols
    X = np.array(list(itertools.product((0.0, 1.0), repeat=n)))
    ok = np.all(X >= arr.col_lower - 1e-9, axis=1) & np.all(X <= arr.col_upper + 1e-9, axis=1)
    act = (arr.A @ X.T).T
    ok &= np.all(act >= arr.row_lower - 1e-9, axis=1) & np.all(act <= arr.row_upper + 1e-9, axis=1)
    vals = X[ok] @ arr.c + arr.constant
    return float(vals.max() if arr.maximize else vals.min())


def test_tiny_hand_checked() -> None:
    """Two jobs, one GPU type with 4 GPUs. Job a: 2 GPUs -> 3, 4 GPUs -> 5; job b: 2 GPUs -> 2.5, 4 GPUs -> 4.
    Options within 4 GPUs: a4 (5), b4 (4), a2+b2 (5.5), a2 (3), b2 (2.5): the optimum is a2 + b2 = 5.5, and the
    LP bound is also 5.5 (a2 + b2 is an LP vertex), so the backend proves it from the dual alone."""
    m = schedopt.LinearModel("tiny", sense="maximize")
    m.add_variables("x", (2, 2), kind="binary", labels=(["a", "b"], ["g2", "g4"]))
    m.add_constraints("one_config_per_job", {"x": sp.csr_matrix([[1, 1, 0, 0], [0, 0, 1, 1]])}, upper=1)
    m.add_constraints("gpu_capacity", {"x": [[2, 4, 2, 4]]}, upper=4)
    m.set_objective({"x": [[3, 5], [2.5, 4]]})
    r = schedopt.solve(m, "mckp")
    assert r.termination.reason is TerminationReason.OPTIMAL
    assert r.objective == pytest.approx(5.5)
    assert r.values["x"].tolist() == [[1, 0], [1, 0]]
    assert r.bound == pytest.approx(5.5)
    # minimisation of the negated objective: the same choice
    m.set_objective({"x": [[-3, -5], [-2.5, -4]]}, sense="minimize", constant=1.0)
    r = schedopt.solve(m, "mckp")
    assert r.objective == pytest.approx(-4.5)
    assert r.bound == pytest.approx(-4.5)


def test_tiny_integrality_gap_needs_exact_mode() -> None:
    """One type with 5 GPUs; jobs a, b, c each: 2 GPUs -> 2 (free binaries). The LP takes 2.5 jobs (bound 5);
    the integer optimum is 4 (two jobs). The Lagrangian bound 5 > 4, so OPTIMAL needs the exact mode.
    (With capacity 3 the row 2a + 2b <= 3 is recognised as the at-most-one row a + b <= 1 instead.)"""
    m = schedopt.LinearModel("gap", sense="maximize")
    m.add_variables("x", 3, kind="binary")
    m.add_constraints("gpu_capacity", {"x": [[2, 2, 2]]}, upper=5)
    m.set_objective({"x": [2, 2, 2]})
    r = schedopt.solve(m, "mckp")
    assert r.termination.reason is TerminationReason.OPTIMAL and r.objective == pytest.approx(4.0)
    h = schedopt.solve(m, "mckp", exact=False)
    assert h.termination.reason is TerminationReason.FEASIBLE and h.termination.limit is Limit.HEURISTIC
    assert h.objective == pytest.approx(4.0) and h.bound == pytest.approx(5.0)
    m2 = schedopt.LinearModel("gub", sense="maximize")
    m2.add_variables("x", 2, kind="binary")
    m2.add_constraints("gpu_capacity", {"x": [[2, 2]]}, upper=3)
    m2.set_objective({"x": [2, 2]})
    assert analyze(m2).K == 0 and analyze(m2).G == 1
    assert schedopt.solve(m2, "mckp").objective == pytest.approx(2.0)


instances = st.tuples(
    st.integers(1, 7),  # jobs
    st.integers(1, 5),  # configs per job
    st.integers(1, 3),  # K
    st.integers(0, 10_000),  # seed
    st.sampled_from(["maximize", "minimize"]),
    st.integers(0, 2),  # forced
    st.integers(0, 3),  # free binaries
    st.booleans(),  # negative values
    st.floats(0.1, 0.9),  # capacity fraction
    st.booleans(),  # forced by rows or by bounds
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances)
def test_equals_general_solvers(spec: tuple) -> None:
    n, c, K, seed, sense, forced, free, neg, frac, by_rows = spec
    m = make_mckp(n, c, K, seed, sense=sense, forced=forced, free_cols=free, negative=neg, cap_frac=frac,
                  fix_by_rows=by_rows)
    names = backends_for(m)
    assert "mckp" in names and "highs" in names and "scipy" in names
    r = schedopt.solve(m, "mckp", mip_rel_gap=0.0)
    ref = schedopt.solve(m, "highs", mip_rel_gap=0.0)
    if ref.termination.reason is TerminationReason.INFEASIBLE:
        assert r.termination.reason is TerminationReason.INFEASIBLE
        return
    assert r.termination.reason is TerminationReason.OPTIMAL
    assert m.violations(r.x) == {}
    tol = 1e-7 * max(1.0, abs(ref.objective))
    assert r.objective == pytest.approx(ref.objective, abs=tol)
    # the dual bound is on the right side of the optimum
    if m.maximize:
        assert r.stats.get("lagrangian_bound", math.inf) >= ref.objective - tol
    else:
        assert r.stats.get("lagrangian_bound", -math.inf) <= ref.objective + tol
    for b in names:
        if b in ("mckp", "highs"):
            continue
        o = schedopt.solve(m, b, time_limit=20)
        assert o.objective == pytest.approx(ref.objective, abs=1e-5 * max(1.0, abs(ref.objective))), b
    if m.num_cols <= 14:
        assert r.objective == pytest.approx(brute_force(m), abs=tol)


@settings(max_examples=25, deadline=None)
@given(st.integers(5, 60), st.integers(2, 12), st.integers(1, 4), st.integers(0, 10_000),
       st.sampled_from(["maximize", "minimize"]), st.integers(0, 3), st.booleans())
def test_bound_and_repair_guarantees(n: int, c: int, K: int, seed: int, sense: str, forced: int, neg: bool) -> None:
    """Without the exact mode: the repaired answer is feasible and the bound is never beaten by the optimum."""
    m = make_mckp(n, c, K, seed, sense=sense, forced=forced, negative=neg)
    h = schedopt.solve(m, "mckp", exact=False, mip_rel_gap=0.0)
    ref = schedopt.solve(m, "highs", mip_rel_gap=0.0, time_limit=20)
    if ref.termination.reason is TerminationReason.INFEASIBLE:
        assert h.termination.reason is TerminationReason.INFEASIBLE
        return
    assert h.has_solution
    assert m.violations(h.x) == {}
    tol = 1e-7 * max(1.0, abs(ref.objective))
    if m.maximize:
        assert h.bound >= ref.objective - tol >= h.objective - 2 * tol
    else:
        assert h.bound <= ref.objective + tol <= h.objective + 2 * tol
    exact = schedopt.solve(m, "mckp", mip_rel_gap=0.0)
    assert exact.objective == pytest.approx(ref.objective, abs=tol)


def test_medium_instances_equal_highs() -> None:
    for seed in range(3):
        m = make_mckp(300, 10, 3, seed, forced=5, free_cols=10)
        r = schedopt.solve(m, "mckp", mip_rel_gap=1e-9)
        h = schedopt.solve(m, "highs", mip_rel_gap=1e-9, time_limit=30)
        assert r.termination.reason is TerminationReason.OPTIMAL
        assert m.violations(r.x) == {}
        assert r.objective == pytest.approx(h.objective, rel=1e-8)
        assert r.stats["dual_iterations"] > 0


def test_default_backend_is_mckp() -> None:
    m = make_mckp(4, 3, 2, 0)
    assert schedopt.default_backend(m) == "mckp"
    r = schedopt.solve(m)
    assert r.backend == "mckp"


def test_infeasible_forced_part_names_the_row() -> None:
    m = make_mckp(4, 3, 1, 0)
    A = sp.csr_matrix(([1.0, 1.0], ([0, 1], [0, 1])), shape=(2, m.num_cols))
    m.add_constraints("forced_config", A, lower=1, labels=["a", "b"])  # two configs of job j0
    r = schedopt.solve(m, "mckp")
    assert r.termination.reason is TerminationReason.INFEASIBLE
    assert "one_config_per_job[j0]" in r.termination.detail
    assert schedopt.solve(m, "highs").termination.reason is TerminationReason.INFEASIBLE


def test_forced_beyond_capacity_is_infeasible() -> None:
    m = schedopt.LinearModel("f", sense="maximize")
    m.add_variables("x", 2, kind="binary", lower=[1, 1])
    m.add_constraints("gpu_capacity", {"x": [[3, 3]]}, upper=5, labels=["a100"])
    m.set_objective({"x": [1, 1]})
    r = schedopt.solve(m, "mckp")
    assert r.termination.reason is TerminationReason.INFEASIBLE
    assert "gpu_capacity[a100]" in r.termination.detail


def test_time_limit_returns_incumbent() -> None:
    m = make_mckp(2000, 12, 3, 1)
    r = schedopt.solve(m, "mckp", time_limit=0.0, mip_rel_gap=0.0)
    assert r.termination.reason in (TerminationReason.FEASIBLE, TerminationReason.OPTIMAL)
    if r.termination.reason is TerminationReason.FEASIBLE:
        assert r.termination.limit is Limit.TIME
    assert r.has_solution and m.violations(r.x) == {}
    assert r.bound >= r.objective - 1e-9


# ---------------------------------------------------------------------------------------------- structure
def _base() -> schedopt.LinearModel:
    m = schedopt.LinearModel("s", sense="maximize")
    m.add_variables("x", 4, kind="binary")
    m.add_constraints("one_config_per_job", {"x": [[1, 1, 0, 0], [0, 0, 1, 1]]}, upper=1, labels=["j0", "j1"])
    m.set_objective({"x": [1, 2, 3, 4]})
    return m


def _rejects(m: schedopt.LinearModel, *words: str) -> None:
    why = schedopt.get_backend("mckp").check_model(m)
    assert why is not None
    for w in words:
        assert w in why, (w, why)
    with pytest.raises(StructureError):
        analyze(m)
    with pytest.raises(BackendCapabilityError):
        schedopt.solve(m, "mckp")
    assert "mckp" not in backends_for(m)


def test_rejects_continuous_variable() -> None:
    m = _base()
    m.add_variables("y", 1, upper=2.0)
    m.set_objective(np.ones(5))
    _rejects(m, "continuous", "y[0]")


def test_rejects_negative_knapsack_coefficient() -> None:
    m = _base()
    m.add_constraints("gpu_capacity", {"x": [[2, -1, 1, 1]]}, upper=3, labels=["t4"])
    _rejects(m, "gpu_capacity[t4]", "negative coefficient")


def test_rejects_equality_knapsack_row() -> None:
    m = _base()
    m.add_constraints("gpu_capacity", {"x": [[2, 1, 1, 1]]}, lower=3, upper=3, labels=["t4"])
    _rejects(m, "gpu_capacity[t4]", "equality row")


def test_rejects_columns_in_two_at_most_one_rows() -> None:
    """An assignment structure: every column lies in a job row and a machine row; the overlapping rows would have
    to be knapsack rows, more than MAX_KNAPSACK_ROWS of them."""
    n = MAX_KNAPSACK_ROWS + 6
    m = schedopt.LinearModel("assign", sense="maximize")
    m.add_variables("x", (n, n), kind="binary")
    eye = sp.identity(n, format="csr")
    m.add_constraints("job", {"x": sp.kron(eye, np.ones((1, n)), format="csr")}, upper=1)
    m.add_constraints("machine", {"x": sp.kron(np.ones((1, n)), eye, format="csr")}, upper=1)
    m.set_objective({"x": np.ones((n, n))})
    _rejects(m, "lies in two at-most-one rows", "job[0]", "machine[0]", "knapsack rows")


def test_overlapping_at_most_one_row_kept_as_knapsack_row() -> None:
    """A capacity row that happens to look like an at-most-one row (a 1-GPU type) is solved as a knapsack row."""
    m = _base()
    m.add_constraints("gpu_capacity", {"x": [[1, 0, 1, 0]]}, upper=1, labels=["tiny"])
    r = schedopt.solve(m, "mckp")
    assert r.objective == pytest.approx(schedopt.solve(m, "highs").objective) == pytest.approx(6.0)


def test_lp_is_not_accepted() -> None:
    m = schedopt.LinearModel("lp")
    m.add_variables("x", 2)
    m.set_objective([1, 1])
    assert "LP" in schedopt.get_backend("mckp").check_model(m)


# ---------------------------------------------------------------------------------------------- Sia
def test_sia_instance_equals_highs() -> None:
    sia = pytest.importorskip("schedopt.sia")
    inst = sia.generate_instance(64, 3)
    m = inst.problem().build()
    # the Sia package tags its model (model.structure; the legacy meta string until it moves)
    assert m.structure is Structure.MCKP or m.meta.get("structure") == "mckp"
    assert "mckp" in backends_for(m)
    r = schedopt.solve(m, "mckp", mip_rel_gap=1e-9)
    h = schedopt.solve(m, "highs", mip_rel_gap=1e-9, time_limit=30)
    assert r.termination.reason is TerminationReason.OPTIMAL
    assert m.violations(r.x) == {}
    assert r.objective == pytest.approx(h.objective, rel=1e-7)


# ---------------------------------------------------------------------------------------------- aggregation
def make_dup_mckp(n_base: int, reps: list[int], n_cfg: int, K: int, seed: int, *, sense: str = "maximize",
                  forced: int = 0, cap_frac: float = 0.4, shuffle: bool = True) -> schedopt.LinearModel:
    """Jobs copied ``reps[i]`` times from ``n_base`` random jobs (identical column sets, in shuffled column order
    and shuffled job order when ``shuffle``); ``forced`` of the jobs get a forced config (a forced copy is no longer
    identical to its twins)."""
    rng = np.random.default_rng(seed)
    gpus = 2 ** rng.integers(0, 4, size=(n_base, n_cfg))
    typ = rng.integers(0, K, size=(n_base, n_cfg))
    val = rng.uniform(0.5, 2.0, size=(n_base, 1)) * np.sqrt(gpus) * rng.uniform(0.8, 1.2, size=(n_base, n_cfg))
    base = np.repeat(np.arange(n_base), np.asarray(reps)[:n_base])
    if shuffle:
        base = rng.permutation(base)
    J = base.size
    perm = np.array([rng.permutation(n_cfg) if shuffle else np.arange(n_cfg) for _ in range(J)])
    G = gpus[base[:, None], perm].ravel().astype(float)
    T = typ[base[:, None], perm].ravel()
    V = val[base[:, None], perm].ravel()
    P = J * n_cfg
    sign = 1.0 if sense == "maximize" else -1.0
    m = schedopt.LinearModel("mckp_dup", sense=sense)
    m.add_variables("x", (J, n_cfg), kind="binary")
    col = np.arange(P)
    m.add_constraints("one_config_per_job", {"x": sp.csr_matrix((np.ones(P), (col // n_cfg, col)), shape=(J, P))},
                      upper=1, labels=[f"j{i}" for i in range(J)])
    fj = rng.choice(J, size=min(forced, J), replace=False)
    fcols = fj * n_cfg + rng.integers(0, n_cfg, size=fj.size)
    total = np.bincount(T, weights=G, minlength=K)
    cap = np.floor(cap_frac * total) + np.bincount(T[fcols], weights=G[fcols], minlength=K)
    m.add_constraints("gpu_capacity", {"x": sp.csr_matrix((G, (T, col)), shape=(K, P))}, upper=cap,
                      labels=[f"type{k}" for k in range(K)])
    if fcols.size:
        m.add_constraints("forced_config", {"x": sp.csr_matrix((np.ones(fcols.size), (np.arange(fcols.size), fcols)),
                                                               shape=(fcols.size, P))}, lower=1)
    m.set_objective({"x": sign * V.reshape(J, n_cfg)})
    return m


def test_aggregate_hand_checked() -> None:
    """Jobs a, b, c, d with 2 configs each: a and c identical (values 1, 2 on 1 and 2 GPUs, listed in opposite
    orders), b distinct, d identical to a but forced (so it leaves the structure with its group). Classes: {a, c}
    (multiplicity 2) and {b}; disaggregating counts (1 of the 2-GPU option, 1 of the 1-GPU option) gives a the
    first column in key order and c the second."""
    from schedopt.mckp import aggregate

    m = schedopt.LinearModel("agg", sense="maximize")
    m.add_variables("x", (4, 2), kind="binary", labels=(["a", "b", "c", "d"], ["p", "q"]))
    m.add_constraints("one_config_per_job", {"x": sp.kron(sp.identity(4), np.ones((1, 2)), format="csr")}, upper=1)
    m.add_constraints("gpu_capacity", {"x": [[1, 2, 1, 4, 2, 1, 1, 2]]}, upper=5)
    m.add_constraints("forced_config", {"x": sp.csr_matrix(([1.0], ([0], [6])), shape=(1, 8))}, lower=1)
    m.set_objective({"x": [[1, 2], [1, 3], [2, 1], [1, 2]]})
    st_ = analyze(m)
    a = aggregate(st_)
    assert st_.G == 3 and a.classes == 2
    assert sorted(a.st.mult.tolist()) == [1, 2]
    ca = a.cls[0]
    assert a.cls[2] == ca and a.cls[1] != ca
    # the class's columns in key order: (value 1, 1 GPU) then (value 2, 2 GPUs)
    cols = np.arange(a.st.starts[ca], a.st.starts[ca] + a.st.counts[ca])
    assert a.st.value[cols].tolist() == [1.0, 2.0]
    y = np.zeros(a.st.n, dtype=np.int64)
    y[cols] = [1, 1]
    ch = a.disaggregate(y)
    # group 0 (job a) takes the 1-GPU column x[a,p] (model column 0), group 2 (job c) the 2-GPU x[c,p] (column 4)
    assert st_.cols[ch[0]] == 0 and st_.cols[ch[2]] == 4 and ch[1] == -1
    assert np.array_equal(a.counts(ch), y)
    r = schedopt.solve(m, "mckp", mip_rel_gap=0.0)
    # forced d@p (1 GPU, value 1) leaves 4 GPUs; a and c: 1 GPU -> 1, 2 GPUs -> 2; b: 1 GPU -> 1, 4 GPUs -> 3.
    # No option earns more than 1 per GPU, so 4 on 4 GPUs (a and c on 2 GPUs) is best: total 1 + 4 = 5
    assert r.objective == pytest.approx(5.0) == brute_force(m)
    assert m.violations(r.x) == {}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 6), st.lists(st.integers(1, 6), min_size=6, max_size=6), st.integers(1, 4), st.integers(1, 3),
       st.integers(0, 10_000), st.sampled_from(["maximize", "minimize"]), st.integers(0, 2), st.floats(0.1, 0.8),
       st.sampled_from([("highs", "binary"), ("highs", "integer"), ("cpsat", "integer")]))
def test_aggregated_solve_equals_highs(n_base: int, reps: list[int], c: int, K: int, seed: int, sense: str,
                                       forced: int, frac: float, how: tuple[str, str]) -> None:
    """Many duplicate jobs: the aggregated solve (each residual form) equals HiGHS on the plain model, the
    disaggregated x satisfies every row, and the Lagrangian bound is on the right side."""
    from schedopt.mckp import aggregate

    rb, form = how
    if rb not in schedopt.available_backends():
        rb, form = "highs", "binary"
    m = make_dup_mckp(n_base, reps, c, K, seed, sense=sense, forced=forced, cap_frac=frac)
    ref = schedopt.solve(m, "highs", mip_rel_gap=0.0, time_limit=30)
    r = schedopt.solve(m, "mckp", mip_rel_gap=0.0, residual_backend=rb, residual_form=form)
    if ref.termination.reason is TerminationReason.INFEASIBLE:
        assert r.termination.reason is TerminationReason.INFEASIBLE
        return
    st_ = analyze(m)
    a = aggregate(st_)
    # forced jobs leave the structure; every other job's copies collapse to at most n_base classes
    assert a.classes <= n_base
    assert int(a.st.mult.sum()) == st_.G if st_.G else True
    assert r.termination.reason is TerminationReason.OPTIMAL
    assert m.violations(r.x) == {}
    tol = 1e-7 * max(1.0, abs(ref.objective))
    assert r.objective == pytest.approx(ref.objective, abs=tol)
    lb = r.stats["lagrangian_bound"]
    assert (lb >= ref.objective - tol) if m.maximize else (lb <= ref.objective + tol)


def test_sia_duplicated_jobs_equal_highs() -> None:
    """A Sia instance whose jobs are each copied three times (same zoo model and state, new ids): the copies
    aggregate, and the answer equals HiGHS's."""
    sia = pytest.importorskip("schedopt.sia")
    from dataclasses import replace

    from schedopt.mckp import aggregate

    inst = sia.generate_instance(128, 5, jobs=30)
    jobs, goodput = [], {}
    for k in range(3):
        for j in inst.jobs:
            jid = f"{j.id}_{k}"
            jobs.append(replace(j, id=jid, current=None, preemptible=True))
            goodput[jid] = inst.goodput[j.id]
    m = sia.SiaProblem(inst.cluster, jobs, goodput, p=inst.p, lam=inst.lam).build()
    st_ = analyze(m)
    a = aggregate(st_)
    assert a.classes <= st_.G // 3 and int(a.st.mult.min()) >= 3
    r = schedopt.solve(m, "mckp", mip_rel_gap=1e-9)
    h = schedopt.solve(m, "highs", mip_rel_gap=1e-9, time_limit=30)
    assert r.termination.reason is TerminationReason.OPTIMAL
    assert m.violations(r.x) == {}
    assert r.objective == pytest.approx(h.objective, rel=1e-7)


def test_residual_solver_optimal_is_not_taken_on_its_word() -> None:
    """Sia 64 GPUs seed 3: CP-SAT's default absolute gap (1e-4) once made it stop at the warm start while the
    optimum is 6e-5 better; mckp must still return HiGHS's optimum (the backend now checks the bound itself)."""
    sia = pytest.importorskip("schedopt.sia")
    m = sia.generate_instance(64, 3).problem().build()
    h = schedopt.solve(m, "highs", mip_rel_gap=1e-9, time_limit=30)
    for rb in [b for b in ("cpsat", "highs") if b in schedopt.available_backends()]:
        r = schedopt.solve(m, "mckp", mip_rel_gap=1e-9, residual_backend=rb)
        assert r.termination.reason is TerminationReason.OPTIMAL, rb
        assert r.objective == pytest.approx(h.objective, rel=1e-9), rb


def _local_search_setup(m: schedopt.LinearModel) -> tuple:
    """The aggregated structure of ``m`` with its dual, the repaired incumbent's counts and the Lagrangian bound."""
    from schedopt.mckp import GreedyRepair, LagrangianDual, aggregate

    st_ = analyze(m)
    agg = aggregate(st_)
    a = agg.st
    d = LagrangianDual(a).solve()
    best, rc, gmax = d.best, d.rc, d.gmax
    ch = GreedyRepair(st_).repair(agg.expand(best.choice), best.lam)
    bestg = np.maximum(gmax, 0.0)
    return a, agg.counts(ch), best, bestg[a.group] - rc, bestg, best.L + st_.const, st_.value_of(ch)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 6), st.lists(st.integers(1, 6), min_size=6, max_size=6), st.integers(1, 4), st.integers(1, 3),
       st.integers(0, 10_000), st.floats(0.1, 0.8))
def test_local_search_keeps_feasibility_and_never_loses(n_base: int, reps: list[int], c: int, K: int, seed: int,
                                                        frac: float) -> None:
    """On random aggregated instances with duplicates: the local search's counts stay within the class sizes and
    the capacities, never lose value (nor do the kicks from its result), never pass the Lagrangian bound (which stays >= the HiGHS optimum), and the
    full solve with and without it equals HiGHS with a feasible x."""
    from schedopt.mckp import kick_search, local_search

    m = make_dup_mckp(n_base, reps, c, K, seed, cap_frac=frac)
    if analyze(m).infeasible:
        return
    a, y0, best, delta, bestg, UB, LB = _local_search_setup(m)
    if not a.n:
        return
    y1, _ = local_search(a, y0, best.lam, delta, bestg, max(UB - LB, 0.0) + 1e-9)
    assert y1.min() >= 0
    assert np.all(np.add.reduceat(y1, a.starts) <= a.mult)
    assert np.all(a.usage(np.flatnonzero(y1), y1[y1 > 0]) <= a.cap + 1e-9 * np.maximum(1.0, a.cap))
    gain = float(a.value @ y1 - a.value @ y0)
    assert gain >= -1e-12
    # the iterated local search (kicks) from the local optimum: same guarantees, never worse than y1
    y2, _ = kick_search(a, y1, best.lam, delta, bestg, max(UB - LB, 0.0) + 1e-9, math.inf, seed=seed, kicks=5)
    assert y2.min() >= 0
    assert np.all(np.add.reduceat(y2, a.starts) <= a.mult)
    assert np.all(a.usage(np.flatnonzero(y2), y2[y2 > 0]) <= a.cap + 1e-9 * np.maximum(1.0, a.cap))
    assert float(a.value @ y2) >= float(a.value @ y1) - 1e-12
    gain = max(gain, float(a.value @ y2 - a.value @ y0))
    ref = schedopt.solve(m, "highs", mip_rel_gap=0.0, time_limit=30)
    tol = 1e-7 * max(1.0, abs(ref.objective))
    assert LB + gain <= ref.objective + tol <= UB + 2 * tol
    for ls in (True, False):
        r = schedopt.solve(m, "mckp", mip_rel_gap=0.0, local_search=ls)
        assert r.termination.reason is TerminationReason.OPTIMAL
        assert m.violations(r.x) == {}
        assert r.objective == pytest.approx(ref.objective, abs=tol)


def test_local_search_exchange_hand_checked() -> None:
    """One GPU type, capacity 8; job a: 4 GPUs -> 4.0, 8 GPUs -> 4.9 (the repair's kind of choice); jobs b, c:
    2 GPUs -> 2.0, 4 GPUs -> 2.5. Counts y start at a8 (value 4.9, all 8 GPUs used, b and c idle). No single
    move fits (b or c taking 2 GPUs needs free capacity); the exchange a8 -> a4 plus b2 and c2 (-4 + 2 + 2 = 0
    GPUs) gains 4.0 + 2.0 + 2.0 - 4.9 = 3.1, and a4 + b2 + c2 = 8.0 is optimal (checked by brute force)."""
    from schedopt.mckp import aggregate, local_search

    m = schedopt.LinearModel("ls", sense="maximize")
    m.add_variables("x", (3, 2), kind="binary", labels=(["a", "b", "c"], ["lo", "hi"]))
    m.add_constraints("one_config_per_job", {"x": sp.csr_matrix(np.kron(np.eye(3), np.ones((1, 2))))}, upper=1)
    m.add_constraints("gpu_capacity", {"x": [[4, 8, 2, 4, 2, 4]]}, upper=8)
    m.set_objective({"x": [[4.0, 4.9], [2.0, 2.5], [2.0, 2.5]]})
    assert brute_force(m) == pytest.approx(8.0)
    a = aggregate(analyze(m)).st
    # a is its own class; b and c are one class of two: columns in key order (value, weights)
    assert a.G == 2 and sorted(a.mult.tolist()) == [1, 2]
    y0 = np.zeros(a.n, dtype=np.int64)
    y0[int(np.flatnonzero(a.value == 4.9)[0])] = 1
    lam = np.array([0.6])
    rc = a.value - lam[0] * a.dense(np.arange(a.n))[:, 0]
    bestg = np.maximum(np.maximum.reduceat(rc, a.starts), 0.0)
    delta = bestg[a.group] - rc
    y1, moves = local_search(a, y0, lam, delta, bestg, 10.0)
    assert moves >= 1
    assert float(a.value @ y1) == pytest.approx(8.0)
    assert float(a.dense(np.arange(a.n))[:, 0] @ y1) <= 8.0


def test_sia_2048_local_search_reaches_optimum_and_proves_it() -> None:
    """Sia 2048 GPUs seed 1 (1024 jobs, uncapped configurations): the repair ends 0.29 above the optimum; the
    local search finds the optimum, which the Lagrangian bound certifies (no residual solve); the answer equals
    the exact solve without the local search."""
    sia = pytest.importorskip("schedopt.sia")
    m = sia.generate_instance(2048, 1).problem().build()
    r = schedopt.solve(m, "mckp", lp_rounding=False)  # from the Lagrangian choice (the LP's start is closer)
    assert r.termination.reason is TerminationReason.OPTIMAL
    assert "residual_columns" not in r.stats and r.stats["local_search_moves"] >= 1
    assert r.stats["repair_objective"] - r.objective > 0.1  # minimisation: the local search gained
    assert m.violations(r.x) == {}
    r2 = schedopt.solve(m, "mckp", local_search=False, mip_rel_gap=1e-9)
    assert r2.termination.reason is TerminationReason.OPTIMAL
    assert r.objective <= r2.objective + 1e-4 * abs(r2.objective)
    assert r.bound <= r2.objective + 1e-9 * abs(r2.objective)


def test_sia_2048_kicks_reach_optimum_that_local_search_misses() -> None:
    """Sia 2048 GPUs seed 4: the local search alone ends 0.021 above the optimum (528.8632; gap to the Lagrangian
    bound 528.8158 is 8.97e-5 with the kicks' answer, 1.3e-4 without), so without kicks the residual solve is
    needed; the kicks find a solution within 1e-4 of the bound and prove it with no residual solve. The answer
    equals the exact solve (gap 1e-9) within 1e-4 and the bound never passes the true optimum."""
    sia = pytest.importorskip("schedopt.sia")
    m = sia.generate_instance(2048, 4).problem().build()
    r0 = schedopt.solve(m.copy(), "mckp", mip_rel_gap=1e-4, kick_seconds=0.0, lp_rounding=False)
    assert "residual_columns" in r0.stats  # the local search alone does not close the gap
    r = schedopt.solve(m.copy(), "mckp", mip_rel_gap=1e-4, kick_seconds=5.0, lp_rounding=False)
    assert r.termination.reason is TerminationReason.OPTIMAL
    assert "residual_columns" not in r.stats and r.stats["kick_improvements"] >= 1
    assert r.stats["local_search_objective"] < r0.stats["local_search_objective"] - 1e-3  # minimisation
    assert m.violations(r.x) == {}
    ex = schedopt.solve(m.copy(), "mckp", mip_rel_gap=1e-9, kick_seconds=0.0)
    assert ex.termination.reason is TerminationReason.OPTIMAL
    assert ex.objective - 1e-9 * abs(ex.objective) <= r.objective <= ex.objective + 1e-4 * abs(ex.objective)
    assert r.bound <= ex.objective + 1e-9 * abs(ex.objective)


_SIGINT_CHILD = """
import sys
sys.path.insert(0, "tests")
import schedopt
from test_mckp import make_mckp
m = make_mckp(300, 10, 3, 0)
base = schedopt.solve(m, "mckp", exact=False, kick_seconds=0, mip_rel_gap=0.0)  # the repaired incumbent
print("ready", flush=True)
r = schedopt.solve(m, "mckp", exact=False, kick_seconds=60, kicks=10**9, mip_rel_gap=0.0, time_limit=60)
print(r.termination.reason.value, r.termination.limit.value, r.has_solution, round(r.timings.solve, 2),
      r.objective >= base.objective - 1e-9, r.objective <= r.bound + 1e-9, flush=True)
"""


def test_ctrl_c_in_mckps_own_loop_reports_interrupted_with_the_incumbent() -> None:
    """SIGINT half a second into a 60 s kick search (mckp's own Python loop; it never meets its bound on this
    instance): run_interruptible sets the solver's stop flag, the search ends at its next round and the answer is
    FEASIBLE with Limit.INTERRUPTED, holding an incumbent at least as good as the repaired one, below the bound."""
    from schedopt.testing.interrupt import sigint_child

    run = sigint_child(_SIGINT_CHILD, delay=0.5)
    assert run.returncode == 0, run.stderr
    out, waited = run.stdout, run.waited
    assert out.split() == ["feasible", "interrupted", "True", out.split()[3], "True", "True"], out
    assert waited < 5 and float(out.split()[3]) < 5


_SIGINT_RESIDUAL_CHILD = """
import sys
sys.path.insert(0, "tests")
from ortools.sat.python import cp_model
import schedopt
from test_mckp import make_mckp
m = make_mckp(3000, 20, 8, 2, cap_frac=0.2)
schedopt.solve(make_mckp(300, 10, 3, 0), "mckp", kick_seconds=0, mip_rel_gap=0.0, core_columns=10**9)  # warm up
solve = cp_model.CpSolver.solve


def started(self, *args, **kwargs):  # "ready" once the residual's CP-SAT search is under way (the signal's cue)
    cp_model.CpSolver.solve = solve  # (said once)
    print("ready", flush=True)
    return solve(self, *args, **kwargs)


cp_model.CpSolver.solve = started
r = schedopt.solve(m, "mckp", kick_seconds=0, mip_rel_gap=0.0, core_columns=10**9, time_limit=60, race_backend=None)
print(r.termination.reason.value, getattr(r.termination.limit, "value", None), r.has_solution,
      round(r.timings.solve, 2), r.stats.get("residual_status", "none").replace(" ", "_"),
      r.objective <= r.bound + 1e-9, flush=True)
"""


@pytest.mark.slow
def test_ctrl_c_stops_the_cp_sat_residual_sub_solve_too() -> None:
    """An instance whose CP-SAT residual problem runs for seconds (3,000 jobs x 20 configurations, 8 GPU types):
    SIGINT 0.5 s after the residual's CP-SAT search starts. The child says "ready" from inside the solve call, so
    the signal lands there whatever the machine's speed; a fixed delay from the start of the whole solve missed the
    residual once the residual got faster than the delay. The stop reaches CP-SAT through run_interruptible's
    nested stops (it used to run to its own limit), the residual reports INTERRUPTED with its incumbent and bound,
    and the whole solve is FEASIBLE / INTERRUPTED within a second or two of the signal.

    The race (HiGHS on the whole model) is off here: it is stopped by the same signal, but HiGHS 1.12 checks its
    interrupt only after its MIP presolve and symmetry detection, about 3.5 s on this model, and the solve waits for
    it (formulations/mckp.md, "What the race costs when it loses")."""
    from schedopt.testing.interrupt import sigint_child

    run = sigint_child(_SIGINT_RESIDUAL_CHILD, delay=0.5, timeout=60)
    assert run.returncode == 0, run.stderr
    reason, limit, has, seconds, residual, below_bound = run.stdout.split()
    assert (reason, limit, has, below_bound) == ("feasible", "interrupted", "True", "True"), run.stdout
    assert "interrupted" in residual, residual  # the stop reached the residual solve itself
    assert run.waited < 2.5 and float(seconds) < 6


def test_default_kick_budget_scales_with_the_aggregated_columns() -> None:
    """The tiny integrality-gap model (bound 5, optimum 4: the kicks run): the default budget is 10 us per
    aggregated column (not 30 ms); an explicit kick_seconds is kept as given; the answer is the optimum 4 either way."""
    from schedopt.mckp.solver import KICK_SECONDS_PER_COLUMN

    m = schedopt.LinearModel("gap", sense="maximize")
    m.add_variables("x", 3, kind="binary")
    m.add_constraints("gpu_capacity", {"x": [[2, 2, 2]]}, upper=5)
    m.set_objective({"x": [2, 2, 2]})
    # the residual's search or table would prove it before any kick
    r = schedopt.solve(m, "mckp", search_nodes=0, residual_table=False)
    assert KICK_SECONDS_PER_COLUMN == 1e-5
    assert r.stats["kick_budget_seconds"] == pytest.approx(1e-5 * r.stats["aggregated_columns"])
    assert r.objective == pytest.approx(4.0) and r.termination.reason is TerminationReason.OPTIMAL
    r2 = schedopt.solve(m, "mckp", kick_seconds=0.02, search_nodes=0, residual_table=False)
    assert r2.stats["kick_budget_seconds"] == 0.02 and r2.objective == pytest.approx(4.0)


def _gap_model(n: int = 7) -> schedopt.LinearModel:
    """n jobs of value 2 needing 2 GPUs, on 2n - 1 GPUs (the LP takes n - 0.5 jobs; the optimum is n - 1 jobs):
    the Lagrangian bound never closes the gap, so mckp reaches its exact steps."""
    m = schedopt.LinearModel("gap", sense="maximize")
    m.add_variables("x", n, kind="binary")
    m.add_constraints("gpu_capacity", {"x": [[2] * n]}, upper=2 * n - 1)
    m.set_objective({"x": [2] * n})
    return m


def test_race_backend_wins_when_the_residual_is_slow_and_the_residual_is_stopped() -> None:
    """The exact steps' residual solve is held until the race is decided (a real CP-SAT solve started late, as a
    slow residual would be): HiGHS on the whole model (race_delay 0) proves the optimum 12 first, its answer is
    taken with its bound (the held residual, released by the proof, meets a cancelled scope: a CP-SAT stop
    requested before its solve; this tiny one still ends OPTIMAL, which an interrupt leaves standing)."""
    import threading

    from schedopt.backends.base import SolveParams
    from schedopt.backends.mckp import MckpBackend

    m = _gap_model()
    held = threading.Event()
    seen: list[str] = []

    def sub_solve(model: schedopt.LinearModel, backend: str, **kw: object) -> schedopt.SolveResult:
        if model.name == "mckp_residual":
            held.wait(30)  # released when the racer's proof arrives (or after 30 s: the test then fails below)
        r = schedopt.solve(model, backend, **kw)
        seen.append(f"{model.name}:{r.termination.limit}")
        return r

    import schedopt.mckp.solver as ms

    start = ms._Racer.start

    def start_and_release(self: ms._Racer) -> None:
        proof = self.on_proof

        def on_proof() -> None:
            assert proof is not None
            proof()
            held.set()

        self.on_proof = on_proof
        start(self)

    ms._Racer.start = start_and_release  # type: ignore[method-assign]
    try:
        params = SolveParams(mip_rel_gap=1e-4, options={"race_delay": 0.0, "kick_seconds": 0.0, "search_nodes": 0,
                                                        "residual_table": False},
                             sub_solve=sub_solve)
        r = MckpBackend().solve(m, params)
    finally:
        ms._Racer.start = start  # type: ignore[method-assign]
    assert r.termination.reason is TerminationReason.OPTIMAL and r.objective == pytest.approx(12.0)
    assert r.bound == pytest.approx(12.0, abs=1e-3)
    assert r.stats["fallback"] == "highs on the whole model" and r.stats["race_started"] is True
    assert seen[0] == "gap:None" and seen[1].startswith("mckp_residual"), seen  # the race finished first


def test_race_backend_off_or_too_late_leaves_mckp_alone() -> None:
    """race_backend=None: no race; the default delay (>= 0.05 s) on a model mckp proves in milliseconds: the race
    never starts. Both answers are the optimum 12 with mckp's own proof."""
    m = _gap_model()
    r = schedopt.solve(m, "mckp", race_backend=None, search_nodes=0, residual_table=False)
    assert r.objective == pytest.approx(12.0) and "race_backend" not in r.stats
    r2 = schedopt.solve(m, "mckp", search_nodes=0, residual_table=False)
    assert r2.objective == pytest.approx(12.0) and r2.termination.reason is TerminationReason.OPTIMAL
    assert r2.stats["race_backend"] == "highs" and "fallback" not in r2.stats


def test_no_race_on_a_model_beyond_race_max_columns() -> None:
    """The gap model (7 columns) with the race at once (race_delay 0): a cap of 6 columns starts no race and says
    why in the stats; a cap of 7 (the model's size) lets it run; either way the answer is mckp's optimum 12. A cap
    that is not a non-negative integer or None is refused, naming the option."""
    m = _gap_model()
    opts = {"race_delay": 0.0, "search_nodes": 0, "residual_table": False}
    r = schedopt.solve(m, "mckp", race_max_columns=6, **opts)
    assert r.objective == pytest.approx(12.0) and r.termination.reason is TerminationReason.OPTIMAL
    assert "race_backend" not in r.stats and r.stats["race_skipped"] == "7 columns > race_max_columns = 6"
    r2 = schedopt.solve(m, "mckp", race_max_columns=7, **opts)
    assert r2.objective == pytest.approx(12.0) and r2.stats["race_backend"] == "highs"
    assert "race_skipped" not in r2.stats
    from schedopt.mckp.solver import RACE_MAX_COLUMNS, MckpOptions

    assert MckpOptions().race_max_columns == RACE_MAX_COLUMNS == 100_000
    assert MckpOptions.from_mapping({"race_max_columns": None}).race_max_columns is None
    for bad in (-1, 2.5, True, "100"):
        with pytest.raises(InputError, match="options.race_max_columns"):
            schedopt.solve(m, "mckp", race_max_columns=bad)


def test_small_residual_goes_to_highs_until_cpsat_is_loaded() -> None:
    """In a fresh process (OR-Tools not loaded): a residual of under CPSAT_MIN_COLUMNS = 200 columns goes to HiGHS
    and a cold mckp solve of the tiny gap model never loads OR-Tools; 200 columns and up go to CP-SAT, and once
    CP-SAT is loaded every residual does."""
    import subprocess
    import sys

    pytest.importorskip("ortools")
    code = (
        "import sys, schedopt\n"
        "from schedopt.mckp import default_residual_backend as d\n"
        "from schedopt.mckp.exact import CPSAT_MIN_COLUMNS\n"
        "m = schedopt.LinearModel('gap', sense='maximize')\n"
        "m.add_variables('x', 7, kind='binary')\n"
        "m.add_constraints('gpu_capacity', {'x': [[2] * 7]}, upper=13)\n"
        "m.set_objective({'x': [2] * 7})\n"
        "r = schedopt.solve(m, 'mckp', search_nodes=0, residual_table=False)\n"
        "print(CPSAT_MIN_COLUMNS, d(199), d(200), d(), r.stats['residual_backend'], r.objective,\n"
        "      'ortools.sat.python.cp_model' in sys.modules)\n"
        "import ortools.sat.python.cp_model\n"
        "print(d(5))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["200", "highs", "cpsat", "cpsat", "highs", "12.0", "False", "cpsat"], out
