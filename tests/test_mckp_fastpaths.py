"""mckp's fast paths compute exactly what the plain code they replace computes (issue 26: ties decide which optimum
is chosen, so "the same" means bit-identical): the search's inlined node loop against the reference loop it
replaced, the dense capacity test of ``GreedyRepair.improve`` against the per-entry one, the unique-inverse and
hash-power helpers against numpy, the whole-structure ``ColumnSet`` against the one built from explicit indices."""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schedopt
from schedopt.mckp import GreedyRepair, LagrangianDual, analyze, exact
from schedopt.mckp import aggregate as aggregate_fn
from schedopt.mckp.aggregate import _powers
from schedopt.mckp.dual import ColumnSet, columns_of_groups
from schedopt.mckp.heuristics import _unique_inverse
from schedopt.problem import Structure


def multi_row_mckp(n_jobs: int, n_cfg: int, K: int, seed: int, cap_frac: float = 0.4, dup: int = 1
                   ) -> schedopt.LinearModel:
    """Random jobs whose configurations use 1-3 of the K knapsack rows each (integer weights, many ties), every job
    copied ``dup`` times (identical classes for the aggregation and the search)."""
    rng = np.random.default_rng(seed)
    base_w = np.zeros((n_jobs, n_cfg, K))
    for j in range(n_jobs):
        for c in range(n_cfg):
            rows = rng.choice(K, size=int(rng.integers(1, min(K, 3) + 1)), replace=False)
            base_w[j, c, rows] = 2.0 ** rng.integers(0, 4, size=rows.size)
    base_v = np.round(rng.uniform(0.5, 3.0, size=(n_jobs, n_cfg)) * base_w.sum(axis=2) ** 0.5, 1)
    W = np.repeat(base_w, dup, axis=0).reshape(-1, K)
    V = np.repeat(base_v, dup, axis=0).ravel()
    J = n_jobs * dup
    P = J * n_cfg
    m = schedopt.LinearModel("mckp_multi", sense="maximize")
    m.add_variables("x", P, kind="binary")
    col = np.arange(P)
    m.add_constraints("one_config_per_job", {"x": sp.csr_matrix((np.ones(P), (col // n_cfg, col)), shape=(J, P))},
                      upper=1)
    cap = np.floor(cap_frac * W.sum(axis=0)) + 1.0
    m.add_constraints("capacity", {"x": sp.csr_matrix(W.T)}, upper=cap)
    m.set_objective({"x": V})
    m.structure = Structure.MCKP
    return m


def test_unique_inverse_matches_numpy() -> None:
    rng = np.random.default_rng(0)
    cases = [np.zeros(0), np.array([0.0, -0.0, 0.0]), np.array([3.0, 1.0, 3.0, 2.0, 1.0])]
    cases += [rng.integers(0, 6, size=int(rng.integers(1, 80))) * rng.choice([1.0, -0.5, 1e-9]) for _ in range(300)]
    for k in cases:
        got = _unique_inverse(k)
        want = np.unique(k, return_inverse=True)[1]
        assert got.shape == want.shape and np.array_equal(got, want)


def test_hash_powers_match_cumprod() -> None:
    with np.errstate(over="ignore"):
        for m in (1, 2, 7, 64, 65, 300, 5):
            want = np.cumprod(np.full(m, 0x9E3779B97F4A7C15, dtype=np.uint64), dtype=np.uint64)
            assert np.array_equal(_powers(m), want)
    assert _powers(3)[0] == np.uint64(0x9E3779B97F4A7C15)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 8), st.integers(1, 5), st.integers(1, 4), st.integers(1, 3), st.integers(0, 10_000))
def test_whole_column_set_equals_explicit_indices(n_jobs: int, n_cfg: int, K: int, dup: int, seed: int) -> None:
    s = analyze(multi_row_mckp(n_jobs, n_cfg, K, seed, dup=dup))
    for struct in (s, aggregate_fn(s).st):
        a, b = ColumnSet(struct), ColumnSet(struct, np.arange(struct.n))
        for name in ("idx", "gid", "starts", "counts", "v", "ri", "wt"):
            x, y = getattr(a, name), getattr(b, name)
            assert x.dtype == y.dtype and np.array_equal(x, y), name
        assert a.padded == b.padded
        lam = np.random.default_rng(seed).uniform(0, 1, struct.K + 1)
        lam[-1] = 0.0
        for x, y in zip(a.evaluate(lam), b.evaluate(lam)):
            assert np.array_equal(x, y)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 12), st.integers(2, 5), st.integers(1, 4), st.integers(1, 3), st.integers(0, 10_000),
       st.floats(0.1, 0.9))
def test_improve_dense_fit_equals_entry_fit(n_jobs: int, n_cfg: int, K: int, dup: int, seed: int, frac: float) -> None:
    """The same upgrades with the dense capacity test as with the per-(row, weight) one, from the Lagrangian
    choice repaired and from nothing chosen."""
    s = analyze(multi_row_mckp(n_jobs, n_cfg, K, seed, frac, dup))
    if s.infeasible or not s.n:
        return
    d = LagrangianDual(s).solve()
    fast, plain = GreedyRepair(s), GreedyRepair(s)
    assert fast._dense_fit()
    plain._fit_dense = False
    repaired = fast.repair(d.best.choice, d.lam)
    assert np.array_equal(repaired, plain.repair(d.best.choice, d.lam))
    for start in (d.best.choice, np.full(s.G, -1, dtype=np.int64), repaired):
        a, b = fast.improve(start), plain.improve(start)
        assert np.array_equal(a, b)
        if s.fits(start):  # a feasible start stays feasible
            assert s.fits(a) and s.value_of(a) >= s.value_of(start)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 8), st.integers(1, 5), st.integers(1, 3), st.integers(0, 10_000), st.floats(0.0, 1.0))
def test_group_marks_equal_columns_of_groups(n_jobs: int, n_cfg: int, K: int, seed: int, keep: float) -> None:
    """``improve`` marks the pool's columns of the upgraded groups through a group mask: the same set as
    ``columns_of_groups``, for the whole pool and for a screened one."""
    s = analyze(multi_row_mckp(n_jobs, n_cfg, K, seed))
    rng = np.random.default_rng(seed)
    for pool in (ColumnSet(s), ColumnSet(s, np.flatnonzero(rng.random(s.n) < keep))):
        if not pool.idx.size:
            continue  # columns_of_groups needs a nonempty pool (improve never upgrades from an empty one)
        gt = rng.choice(s.G, size=int(rng.integers(0, s.G + 1)), replace=False) if s.G else np.zeros(0, np.int64)
        gmark = np.zeros(s.G, dtype=bool)
        gmark[gt] = True
        got = np.zeros(s.n, dtype=bool)
        got[pool.idx[gmark[s.group[pool.idx]]]] = True
        want = np.zeros(s.n, dtype=bool)
        want[columns_of_groups(s, np.sort(gt), pool)] = True
        assert np.array_equal(got, want)


def test_dense_fit_refused_when_a_column_lists_a_row_twice() -> None:
    s = analyze(multi_row_mckp(4, 3, 3, 1))
    assert s.ri.shape[1] >= 2
    ri = s.ri.copy()
    ri[0, 1] = ri[0, 0]  # column 0 lists its first row twice
    assert not GreedyRepair(dataclasses.replace(s, ri=ri))._dense_fit()
    one = dataclasses.replace(s, ri=s.ri[:, :1].copy(), wt=s.wt[:, :1].copy())
    assert GreedyRepair(one)._dense_fit()


class _ReferenceTree(exact._SearchTree):
    """The search's node loop as it was before its fast path (kept here as the reference)."""

    def place(self, o: int, left: int, pos: int, used: int, loss: float, val: float) -> None:
        classes, K, capl, y = self.classes, self.K, self.capl, self.y
        if o == len(classes):
            if val > self.best_val:
                self.best_val, self.best_y = val, y.copy()
            return
        if left == 0:
            self.place(o + 1, classes[o + 1][0] if o + 1 < len(classes) else 0, 0, 0, loss, val)
            return
        ch = classes[o][1]
        for p in range(pos, len(ch)):
            d, v, w, lim, col = ch[p]
            if p == pos and used >= lim:
                continue
            bound = self.R - (loss + left * d + self.rest[o + 1])
            if self._beaten(bound):
                self.pruned = max(self.pruned, bound)
                break
            if any(w[k] > capl[k] + self.ctol[k] for k in range(K)):
                continue
            if self.priced:
                waste = 0.0
                mwp, rw = self.mw[o][p], self.restw[o + 1]
                for k in self.priced:
                    unused = capl[k] - w[k] - (left - 1) * mwp[k] - rw[k]
                    if unused > 0:
                        waste += self.lam[k] * unused
                if waste > 0 and self._beaten(bound - waste):
                    self.pruned = max(self.pruned, bound - waste)
                    continue
            self.nodes += 1
            if self.nodes > self.limit:
                raise exact._SearchBudgetExceeded
            for k in range(K):
                capl[k] -= w[k]
            if col >= 0:
                y[col] += 1
            self.place(o, left - 1, p, used + 1 if p == pos else 1, loss + d, val + v)
            if col >= 0:
                y[col] -= 1
            for k in range(K):
                capl[k] += w[k]


def _run_tree(cls: type, args: tuple, start: tuple) -> tuple:
    tree = cls(*(list(a) if isinstance(a, list) else a for a in args))  # its own copy of the capacities
    try:
        tree.place(*start)
    except exact._SearchBudgetExceeded:
        return ("budget", tree.nodes)
    return (tree.best_val, list(tree.best_y), tree.pruned, tree.nodes)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 7), st.integers(2, 4), st.integers(1, 3), st.integers(1, 4), st.integers(0, 10_000),
       st.floats(0.15, 0.8), st.sampled_from([40, 1500]))
def test_search_tree_equals_reference(n_jobs: int, n_cfg: int, K: int, dup: int, seed: int, frac: float,
                                      budget: int) -> None:
    """The inlined node loop visits the same nodes as the reference: same best value and counts, same largest
    pruned bound, same node count, the same give-up at the same budget; residuals with identical classes, ties
    (values rounded to 0.1, integer weights) and several rows per option."""
    _compare_search(n_jobs, n_cfg, K, dup, seed, frac, budget)


def test_search_comparison_reaches_deep_trees_and_give_ups() -> None:
    """The comparison above is not vacuous: on these fixed instances the trees have hundreds of nodes, and some
    give up at the small budget (both loops at the same node)."""
    out = [r for seed in range(12) for r in _compare_search(6, 3, 3, 3, seed, 0.4, 40)]
    out += [r for seed in range(12) for r in _compare_search(6, 3, 2, 2, seed, 0.3, 1500)]
    assert sum(1 for r in out if r[0] == "budget") >= 3
    assert sum(1 for r in out if r[0] != "budget") >= 3
    assert max(r[-1] for r in out if r[0] != "budget") >= 100


def _compare_search(n_jobs: int, n_cfg: int, K: int, dup: int, seed: int, frac: float, budget: int) -> list[tuple]:
    """Run :meth:`ResidualClosure.search` on a wide residual of a random instance, then the inlined and the
    reference loops on every tree it built; assert they agree and return their outcomes."""
    s = analyze(multi_row_mckp(n_jobs, n_cfg, K, seed, frac, dup))
    if s.infeasible or not s.n:
        return []
    agg = aggregate_fn(s)
    a = agg.st
    d = LagrangianDual(a).solve()
    bestg = np.maximum(d.gmax, 0.0)
    delta = bestg[a.group] - d.rc
    ch = GreedyRepair(s).repair(agg.expand(d.best.choice), d.lam)
    UB, LB = d.best.L + s.const, s.value_of(ch)
    gam = max(UB - LB, 0.0) + 1e-9 * max(1.0, abs(UB)) + 0.5  # a wide residual: more of the tree
    seen: list[tuple[tuple, tuple]] = []

    class _Capture(exact._SearchTree):
        """Records the tree's inputs and its first call (the search's start), then searches as usual."""

        def __init__(self, *args: object) -> None:
            self.args = tuple(list(x) if isinstance(x, list) else x for x in args)
            self.started = False
            super().__init__(*args)

        def place(self, *start: object) -> None:
            if not self.started:
                self.started = True
                seen.append((self.args, start))
            super().place(*start)

    closure = exact.ResidualClosure(agg, delta, bestg, schedopt.solve, lam=d.lam, search_nodes=budget, table=False)
    orig = exact._SearchTree
    exact._SearchTree = _Capture
    try:
        closure.restricted(agg.counts(ch), gam, gam, None, search=True)
    finally:
        exact._SearchTree = orig
    out = []
    for args, start in seen:
        got = _run_tree(exact._SearchTree, args, start)
        assert got == _run_tree(_ReferenceTree, args, start)
        out.append(got)
    return out
