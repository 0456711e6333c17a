"""mckp's per-round work on small instances (issue 42, item 4: the everyday run's 764 Sia rounds of a few to ~20
jobs): each shortcut taken for speed computes exactly what the general code beside it computes (ties decide which
optimum is chosen, so "the same" means bit-identical), and the whole solve still proves the brute-force optimum.

* the column-wise row tests of the heuristics against numpy's ``all`` / ``any`` along the rows, the local search's
  partner pairs against the whole grid they were taken from;
* :func:`~schedopt.mckp.local_search` with its narrowed exchange checks against the full checks;
* :meth:`~schedopt.mckp.ResidualClosure.prove` (the table's plan made only when the short search gives up) against
  the order it replaced (the plan first, the search's budget from it);
* the LP's shared HiGHS instance, reused without ``clearModel``, against a fresh instance per LP;
* :class:`~schedopt.mckp.MckpSolver` against brute force on random small MCKPs with tied values;
* :func:`~schedopt.mckp.aggregate` when every group is a class of its own, ``GreedyRepair``'s one-slot usage and
  whole-pool first pass, the LP's matrix written directly for one-slot columns and ``Aggregate.dense_pad``, each
  against its general path.
"""

from __future__ import annotations

import importlib
import itertools
import math
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import schedopt
from schedopt.mckp import LagrangianDual, MckpSolver, ResidualClosure, aggregate, analyze, exact, heuristics
from schedopt.mckp import dual as dual_mod
from schedopt.mckp.heuristics import _partner_pairs, _rows_all, _rows_any
from schedopt.problem import Structure
from schedopt.results import TerminationReason


def small_mckp(n_jobs: int, n_cfg: int, K: int, seed: int, dup: int = 1, one_row: bool = False,
               cap_frac: float = 0.45, scale: float = 1.0) -> schedopt.LinearModel:
    """Random jobs (each copied ``dup`` times: identical classes) whose configurations use one row (``one_row``:
    a Sia configuration lives on one GPU type) or 1-2 of the K rows, with integer weights (times ``scale``: 1.1
    gives weights the table cannot take) and values rounded to halves (many ties)."""
    rng = np.random.default_rng(seed)
    W = np.zeros((n_jobs, n_cfg, K))
    for j in range(n_jobs):
        for c in range(n_cfg):
            rows = rng.choice(K, size=1 if one_row else int(rng.integers(1, min(K, 2) + 1)), replace=False)
            W[j, c, rows] = rng.integers(1, 5, size=rows.size)
    V = np.round(2 * rng.uniform(0.5, 3.0, size=(n_jobs, n_cfg)) * W.sum(axis=2) ** 0.5) / 2
    W = np.repeat(W, dup, axis=0).reshape(-1, K) * scale
    V = np.repeat(V, dup, axis=0).ravel()
    J, P = n_jobs * dup, n_jobs * dup * n_cfg
    m = schedopt.LinearModel("mckp_small", sense="maximize")
    m.add_variables("x", P, kind="binary")
    col = np.arange(P)
    m.add_constraints("one_config_per_job", {"x": sp.csr_matrix((np.ones(P), (col // n_cfg, col)), shape=(J, P))},
                      upper=1)
    m.add_constraints("capacity", {"x": sp.csr_matrix(W.T)}, upper=np.floor(cap_frac * W.sum(axis=0)) + 1.0)
    m.set_objective({"x": V})
    m.structure = Structure.MCKP
    return m


def brute_force(st: schedopt.mckp.MckpStructure) -> float:
    """The optimum (maximisation form, constant included) over every choice of one column or none per group."""
    pad = np.vstack([st.dense(np.arange(st.n)), np.zeros((1, st.K))])  # row -1: no column
    vpad = np.concatenate((st.value, [0.0]))
    options = [np.concatenate(([-1], np.arange(s, s + c))) for s, c in zip(st.starts, st.counts)]
    combos = np.stack([g.ravel() for g in np.meshgrid(*options, indexing="ij")], axis=1)
    fits = np.all(pad[combos].sum(axis=1) <= st.cap + 1e-9, axis=1)
    return float(vpad[combos].sum(axis=1)[fits].max()) + st.const


def test_row_tests_equal_numpy() -> None:
    rng = np.random.default_rng(0)
    for _ in range(300):
        shape = (int(rng.integers(0, 12)), int(rng.integers(0, 11)))
        b = rng.random(shape) < rng.uniform(0.1, 0.95)
        for got, want in ((_rows_all(b), b.all(axis=1)), (_rows_any(b), b.any(axis=1))):
            assert got.dtype == want.dtype and np.array_equal(got, want)
    b = np.array([[True, True, False], [True, True, True]])
    assert _rows_all(b).tolist() == [False, True] and _rows_any(~b).tolist() == [True, False]


def test_partner_pairs_equal_the_grid() -> None:
    """The pairs taken from the whole grid of ``[Bq, -1]`` (as before), against :func:`_partner_pairs`."""
    rng = np.random.default_rng(1)
    for _ in range(300):
        nb = int(rng.integers(0, 30))
        bt = rng.integers(0, max(1, nb // 3 + 1), size=nb)
        Bq = np.flatnonzero(rng.random(nb) < rng.uniform(0.0, 1.0))
        q1 = np.concatenate((Bq, [-1]))
        qa = np.repeat(q1, q1.size)
        qb = np.tile(q1, q1.size)
        bt_pad = np.concatenate((bt, [-1]))
        ok = ((qa < qb) | ((qa == -1) & (qb == -1))) & ((bt_pad[qa] != bt_pad[qb]) | (qb == -1))
        got = _partner_pairs(Bq, bt)
        for g, w in zip(got, (qa[ok], qb[ok])):
            assert g.dtype == w.dtype and np.array_equal(g, w)


def _local_search_inputs(seed: int, dup: int) -> tuple:
    """An aggregated structure, the dual's prices and losses at them, and the greedy repair's counts."""
    st = analyze(small_mckp(4, 4, 3, seed, dup=dup, one_row=seed % 2 == 0))
    agg = aggregate(st)
    d = LagrangianDual(agg.st).solve()
    bestg = np.maximum(d.gmax, 0.0)
    delta = bestg[agg.st.group] - d.rc
    ch = heuristics.GreedyRepair(st).repair(agg.expand(d.best.choice), d.lam)
    gam = float(d.best.L - agg.st.value @ agg.counts(ch)) + 1e-9
    return agg.st, agg.counts(ch), d.lam, delta, bestg, max(gam, 0.5)


@pytest.mark.parametrize("dup", [1, 3])
def test_local_search_narrowed_checks_equal_full_checks(dup: int, monkeypatch: pytest.MonkeyPatch) -> None:
    moved = 0
    for seed in range(40):
        a, y, lam, delta, bestg, gam = _local_search_inputs(seed, dup)
        # from the repaired counts, and from counts with members moved to nothing (room for exchanges that add one)
        starts = [y, np.where(np.arange(a.n) % 3 == 0, 0, y)]
        for y0 in starts:
            monkeypatch.setattr(heuristics, "_FULL_EXCHANGE_CHECKS", False)
            fast = heuristics.local_search(a, y0, lam, delta, bestg, gam)
            monkeypatch.setattr(heuristics, "_FULL_EXCHANGE_CHECKS", True)
            full = heuristics.local_search(a, y0, lam, delta, bestg, gam)
            assert np.array_equal(fast[0], full[0]) and fast[1] == full[1], seed
            moved += fast[1]
    assert moved > 20  # the exchanges were exercised, not only the first round's exit


def _prove_eager(c: ResidualClosure, res_cols: np.ndarray, ub: np.ndarray, og: np.ndarray, lo_rows: np.ndarray,
                 members: np.ndarray, cap: np.ndarray, const: float, ws: np.ndarray, none_alive: np.ndarray
                 ) -> tuple[tuple[np.ndarray, float, int] | None, str]:
    """The order :meth:`ResidualClosure.prove` replaced: the table's plan first, the search's budget from it."""
    found, how = None, ""
    plan = c.table_plan(res_cols, og, members, cap) if c.use_table else None
    if c.search_nodes > 0 and c.lam is not None and int(members.sum()) <= exact.SEARCH_MAX_MEMBERS and \
            exact.search_tree_log10(c.agg.st.group[res_cols], og, members, none_alive) <= exact.SEARCH_MAX_LOG10_TREE:
        budget = c.search_nodes if plan is None else min(c.search_nodes, exact.SEARCH_NODES_BEFORE_TABLE)
        found = c.search(res_cols, ub, og, lo_rows, members, cap, const, ws, budget)
        how = "search"
    if found is None and plan is not None:
        found, how = c.table(res_cols, og, members, const, plan), "table"
    return found, how


def test_prove_equals_the_plan_first_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every residual the solves hand to ``prove``, proved again under node budgets from none to the default and
    with the table on and off: the same answer as the plan-first order, value for value."""
    calls: list[tuple[ResidualClosure, tuple[Any, ...]]] = []
    orig = ResidualClosure.prove

    def prove(self: ResidualClosure, *args: Any) -> Any:
        calls.append((self, args))
        return orig(self, *args)

    monkeypatch.setattr(ResidualClosure, "prove", prove)
    for seed in range(40):
        # identical jobs (large trees: short searches give up) and non-integer weights (no table) among them
        nj, dup = [(6, 1), (4, 3), (3, 6), (8, 2), (2, 10)][seed % 5]
        m = small_mckp(nj, 5, 3, seed, dup=dup, scale=1.1 if seed % 3 == 0 else 1.0, cap_frac=0.3 + 0.05 * (seed % 4))
        schedopt.solve(m, "mckp", mip_rel_gap=1e-9)
    assert len(calls) >= 10
    hows = []
    for c, args in calls:
        for nodes, table in itertools.product((0, 3, 30, exact.SEARCH_NODES_BEFORE_TABLE + 50, 1500), (True, False)):
            c.search_nodes, c.use_table = nodes, table
            got, want = orig(c, *args), _prove_eager(c, *args)
            assert got[1] == want[1]
            hows.append((got[1], got[0] is None))
            assert (got[0] is None) == (want[0] is None)
            if got[0] is not None and want[0] is not None:
                assert np.array_equal(got[0][0], want[0][0]) and got[0][1] == want[0][1] and got[0][2] == want[0][2]
    # every way out was taken: proved by the search, by the table, and neither
    assert {("search", False), ("table", False), ("search", True)} <= set(hows)


def test_lp_reused_without_clear_equals_a_fresh_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    cases = []
    for seed in range(12):
        a = aggregate(analyze(small_mckp(3 + seed % 4, 4, 1 + seed % 3, seed, dup=1 + seed % 2))).st
        d = LagrangianDual(a, deadline=math.inf if seed % 3 else 1e18)
        cases.append((d, seed % 4 == 1))  # some with one row per class of several candidates only
    shared = [d.solve_lp(np.arange(d.n), singleton_bounds=sb) for d, sb in cases]
    for (d, sb), got in zip(cases, shared):
        monkeypatch.delattr(dual_mod._LP_HIGHS, "h", raising=False)  # a fresh instance for this LP alone
        want = d.solve_lp(np.arange(d.n), singleton_bounds=sb)
        assert (got is None) == (want is None)
        if got is not None and want is not None:
            assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


@pytest.mark.parametrize("seed", range(10))
def test_solver_proves_the_brute_force_optimum_on_tied_small_mckps(seed: int) -> None:
    m = small_mckp(2 + seed % 3, 3, 1 + seed % 3, seed, dup=1 + seed % 2, one_row=seed % 2 == 1)
    st = analyze(m)
    out = MckpSolver(st, mip_rel_gap=1e-6, sub_solve=schedopt.solve, model=m).run()
    want = brute_force(st)
    assert out.termination.reason is TerminationReason.OPTIMAL
    assert out.choice is not None and st.fits(out.choice)
    assert st.value_of(out.choice) == pytest.approx(want, abs=1e-9)
    assert out.bound >= want - 1e-9 and out.bound <= want + 1e-6 * max(1.0, abs(want)) + 1e-9


def _same_aggregate(x: Any, y: Any) -> None:
    for name in ("cls", "rank", "sorted_cols", "col_map", "ostarts"):
        a, b = getattr(x, name), getattr(y, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    for name in ("cols", "group", "starts", "counts", "value", "ri", "wt", "cap", "mult"):
        a, b = getattr(x.st, name), getattr(y.st, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name


@pytest.mark.parametrize("dup", [1, 2])
def test_aggregate_singleton_classes_path_equals_the_general_path(dup: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """When every group is a class of its own, ``aggregate`` skips the hash verification and the class ranks: the same
    arrays as the general path, with one-row (Sia) and multi-row columns, with and without identical groups (tied
    values: many equal column keys)."""
    aggregate_mod = importlib.import_module("schedopt.mckp.aggregate")  # the package's name is the function

    singletons = 0
    for seed in range(30):
        st = analyze(small_mckp(2 + seed % 6, 2 + seed % 4, 1 + seed % 3, seed, dup=dup, one_row=seed % 2 == 0))
        assert np.all(np.diff(st.group) >= 0)  # the columns are sorted by group (what the fast path relies on)
        got = aggregate(st)
        st.aggregated = None
        monkeypatch.setattr(aggregate_mod, "_GENERAL_PATH", True)
        want = aggregate(st)
        monkeypatch.setattr(aggregate_mod, "_GENERAL_PATH", False)
        _same_aggregate(got, want)
        singletons += int(got.classes == st.G)
    assert singletons >= 10 if dup == 1 else singletons < 30  # both paths were taken


@pytest.mark.parametrize("one_row", [True, False])
def test_repair_shortcuts_equal_the_general_paths(one_row: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """``GreedyRepair`` with its one-slot usage and whole-pool first pass against its general paths: the same
    repaired and improved choices, from the Lagrangian choice, from nothing and from every group's last column, with
    the whole pool and a screened one."""
    changed = 0
    for seed in range(25):
        st = analyze(small_mckp(2 + seed % 7, 2 + seed % 4, 1 + seed % 3, seed, dup=1 + seed % 2, one_row=one_row))
        if st.infeasible or not st.n:
            continue
        d = LagrangianDual(st).solve()
        rng = np.random.default_rng(seed)
        pools = [None, dual_mod.ColumnSet(st, np.flatnonzero(rng.random(st.n) < 0.7))]
        starts = [d.best.choice, np.full(st.G, -1, dtype=np.int64), st.starts + st.counts - 1]
        for pool in pools:
            got: list[np.ndarray] = []
            for general in (False, True):
                monkeypatch.setattr(heuristics, "_GENERAL_PATHS", general)
                r = heuristics.GreedyRepair(st, pool)
                assert (r._slot0 is not None) == (st.ri.shape[1] == 1)
                got.append(np.concatenate([r.repair(d.best.choice, d.lam)] + [r.improve(s) for s in starts]))
            assert np.array_equal(got[0], got[1]), seed
            changed += int(not np.array_equal(got[0][st.G:2 * st.G], starts[0]))
    assert changed >= 5  # improve upgraded something, not only its first pass's exit


def test_lp_arrays_of_one_slot_columns_equal_the_general_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    """The LP relaxation's matrix written directly for one-slot columns (a Sia round) against the general ELL
    route: the same optimal counts and duals, float for float (one-row and multi-row instances, identical groups)."""
    direct = 0
    for seed in range(16):
        a = aggregate(analyze(small_mckp(2 + seed % 5, 3 + seed % 3, 1 + seed % 3, seed, dup=1 + seed % 2,
                                         one_row=seed % 4 != 3))).st
        d = LagrangianDual(a)
        got = []
        for general in (False, True):
            monkeypatch.setattr(dual_mod, "_LP_GENERAL_ARRAYS", general)
            got.append(d.solve_lp(np.arange(d.n)))
        assert got[0] is not None and got[1] is not None
        assert np.array_equal(got[0][0], got[1][0]) and np.array_equal(got[0][1], got[1][1]), seed
        direct += int(a.ri.shape[1] == 1 and a.K > 0)
    assert direct >= 8


def test_the_aggregates_dense_pad_equals_dense_per_column() -> None:
    for seed in range(10):
        agg = aggregate(analyze(small_mckp(3 + seed % 4, 3, 1 + seed % 3, seed, dup=1 + seed % 3)))
        a = agg.st
        assert np.array_equal(agg.dense_pad[:-1], a.dense(np.arange(a.n))) and not agg.dense_pad[-1].any()
        idx = np.random.default_rng(seed).permutation(a.n)[: a.n // 2]
        assert np.array_equal(agg.dense_pad[idx], a.dense(idx))
