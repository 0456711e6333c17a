"""The Lagrangian dual of the multiple-choice multi-knapsack problem over the knapsack prices.

``L(lam) = lam.b + sum_g max(0, max_{i in g} v_i - lam.W_i)`` is convex piecewise linear; every ``L(lam)`` is an
upper bound (maximisation form) and its minimum equals the LP relaxation's bound. For given prices every group
picks its best column with numpy (:class:`ColumnSet`); :class:`LagrangianDual` minimises ``L`` exactly: on a
structure of at most :data:`LP_DUAL_COLUMNS` columns by solving the LP relaxation once (its knapsack rows' duals are
the minimising prices: one HiGHS LP of about 0.3-1 ms on a 100-column instance, against 20-35 Kelley iterations of
about 5 ms; 4 against 9 ms at 1,049 columns), on larger ones by Kelley's cutting-plane method with Wentges
smoothing on a (K+1)-variable HiGHS LP (measured faster from about 2,000 aggregated columns up: 14 against 30 ms
at 2,495, 20 against 90 ms at 4,544), followed by the LP on the columns best at its prices for LP-optimal counts.
Those counts, rounded down, are the repair's best start.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from .structure import MckpStructure

__all__ = ["LP_DUAL_COLUMNS", "STALL_ITERATIONS", "ColumnSet", "DualResult", "LagrangianDual", "OracleAnswer", "columns_of_groups"]

#: constant one-element arrays for the run-start masks and offsets (a list there costs a conversion a call)
_TRUE = np.ones(1, dtype=bool)
_ZERO = np.zeros(1, dtype=np.int64)

#: Kelley's loop stops after this many iterations without progress (see :meth:`LagrangianDual.kelley`)
STALL_ITERATIONS = 20

#: structures of at most this many columns get their prices from one LP solve of the relaxation (:meth:`LagrangianDual.lp_prices`)
LP_DUAL_COLUMNS = 2000


@dataclass
class OracleAnswer:
    """One evaluation of the Lagrangian function: prices, value ``L``, subgradient ``s`` and the choice."""

    lam: np.ndarray
    L: float
    s: np.ndarray  # subgradient b - W x(lam)
    choice: np.ndarray  # chosen column per group, -1 for none


class ColumnSet:
    """A subset of the columns (whole groups' worth or a screened part) laid out for fast group maxima: a padded
    (groups x slots) array and ``argmax(axis=1)`` when the groups are about equally long, ``reduceat`` otherwise."""

    def __init__(self, st: MckpStructure, idx: np.ndarray | None = None) -> None:
        whole = idx is None
        idx = np.arange(st.n) if idx is None else idx
        self.idx = idx
        self.whole = whole  #: built from every column of ``st`` (``idx`` is ``arange(st.n)``)
        if whole and idx.size and int(st.counts.min()) > 0:
            # every column, no empty group: the group starts are the structure's own (what the search below finds),
            # and the columns' arrays are the structure's own (read only: the same values as copies of them)
            starts, counts = st.starts.astype(np.int64), st.counts.astype(np.int64)
            self.gid = st.group[starts]
            self.v, self.ri, self.wt = st.value, st.ri, st.wt
        else:
            g = st.group[idx]
            if idx.size:
                newg = np.concatenate((_TRUE, g[1:] != g[:-1]))
                starts = newg.nonzero()[0]
            else:
                starts = np.zeros(0, dtype=np.int64)
            counts = np.diff(np.concatenate((starts, [idx.size]))).astype(np.int64)
            self.gid = g[starts]
            self.v = st.value[idx]
            self.ri, self.wt = st.ri[idx], st.wt[idx]
        self.starts, self.counts = starts, counts
        self.K = st.K
        Gs = starts.size
        M = int(counts.max(initial=0))
        self.padded = bool(idx.size) and Gs * M <= 2 * idx.size + 64
        self._built = False

    def _build_padded(self) -> None:
        idx, starts, counts = self.idx, self.starts, self.counts
        Gs = starts.size
        M = int(counts.max(initial=0))
        if True:
            gl = np.arange(Gs).repeat(counts)
            slot = np.arange(idx.size) - starts.repeat(counts)
            m = self.ri.shape[1]
            self.vp = np.full((Gs, M), -np.inf)
            self.vp[gl, slot] = self.v
            self.rip = np.full((Gs, M, m), self.K, dtype=np.int64)
            self.rip[gl, slot] = self.ri
            self.wtp = np.zeros((Gs, M, m))
            self.wtp[gl, slot] = self.wt
            self.idp = np.full((Gs, M), -1, dtype=np.int64)
            self.idp[gl, slot] = idx
            self.ar = np.arange(Gs)
        self._built = True

    def evaluate(self, lam_pad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(best reduced value, best column) per group of the subset at prices ``lam_pad``."""
        if not self.idx.size:
            return np.zeros(0), np.zeros(0, dtype=np.int64)
        if self.padded:
            if not self._built:
                self._build_padded()
            rc = self.vp - lam_pad[self.rip[:, :, 0]] * self.wtp[:, :, 0]
            for j in range(1, self.rip.shape[2]):
                rc -= lam_pad[self.rip[:, :, j]] * self.wtp[:, :, j]
            am = rc.argmax(axis=1)
            return rc[self.ar, am], self.idp[self.ar, am]
        rc = self.v - lam_pad[self.ri[:, 0]] * self.wt[:, 0]
        for j in range(1, self.ri.shape[1]):
            rc -= lam_pad[self.ri[:, j]] * self.wt[:, j]
        gmax = np.maximum.reduceat(rc, self.starts)
        hit = (rc >= gmax.repeat(self.counts)).nonzero()[0]
        gl = np.arange(self.starts.size).repeat(self.counts)[hit]
        first = hit[np.concatenate((_TRUE, gl[1:] != gl[:-1]))]
        return gmax, self.idx[first]


_LP_HIGHS = threading.local()


def _lp_highs() -> Any:
    """This thread's HiGHS instance for :meth:`LagrangianDual.solve_lp`, options set once: a new
    ``highspy.Highs()`` with its options cost about 0.1 ms a round, as much as the LP's own simplex on a 64-GPU
    Sia round. ``passModel`` replaces the model whole and clears the solver's status, solution, basis and info of
    the previous one, so every solve starts from the same state without a ``clearModel`` first (which cost about
    30 us a round more; the same answers, checked on the 764 and 689 round models of the saturn/1 runs of both job
    models by ``tools/bench_mckp_rounds.py``)."""
    h = getattr(_LP_HIGHS, "h", None)
    if h is None:
        import highspy

        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", 1)
        h.setOptionValue("presolve", "off")
        h.setOptionValue("simplex_strategy", 4)
        _LP_HIGHS.h = h
        _LP_HIGHS.opts = {"simplex_strategy": 4}
    return h


def _lp_option(h: Any, name: str, value: Any) -> None:
    """Set an option of :func:`_lp_highs`'s instance unless it holds that value already (a few us a call)."""
    opts = _LP_HIGHS.opts
    if opts.get(name) != value:
        h.setOptionValue(name, value)
        opts[name] = value


#: :meth:`LagrangianDual.solve_lp` builds the LP's arrays by the general path even for one-slot columns (tests
#: compare the two)
_LP_GENERAL_ARRAYS = False

_TWO_PER_COLUMN: dict[int, np.ndarray] = {}


def _two_per_column(n: int) -> np.ndarray:
    """The column starts ``0, 2, ..., 2n`` (int32) of a matrix with two entries per column, kept per ``n``
    (read only: HiGHS copies what it is passed)."""
    got = _TWO_PER_COLUMN.get(n)
    if got is None:
        got = np.arange(0, 2 * n + 1, 2, dtype=np.int32)
        if len(_TWO_PER_COLUMN) < 4096:
            _TWO_PER_COLUMN[n] = got
    return got


class _Master:
    """Kelley's master LP: min eta s.t. eta >= L_j + s_j.(lam - lam_j), lo <= lam <= hi."""

    def __init__(self, lam_max: np.ndarray) -> None:
        import highspy

        self.K = int(lam_max.size)
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("presolve", "off")
        # one thread: a (K+1)-column LP gains nothing from HiGHS's workers and each run() waited on them (about
        # 0.2 ms wall a run on a loaded 2-core machine against 0.12 ms; 23 -> 16 us CPU; same answers)
        h.setOptionValue("threads", 1)
        inf = highspy.kHighsInf
        cost = np.concatenate((np.zeros(self.K), [1.0]))
        lower = np.concatenate((np.zeros(self.K), [-inf]))
        upper = np.concatenate((lam_max, [inf]))
        h.addCols(self.K + 1, cost, lower, upper, 0, np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0))
        self.h = h
        self.inf = inf
        self.idx = np.arange(self.K + 1, dtype=np.int32)
        self.kidx = np.arange(self.K, dtype=np.int32)

    def set_box(self, lo: np.ndarray, hi: np.ndarray) -> None:
        self.h.changeColsBounds(self.K, self.kidx, lo, hi)

    def add_cut(self, o: OracleAnswer) -> None:
        vals = np.concatenate((-o.s, [1.0]))
        self.h.addRow(float(o.L - o.s @ o.lam), self.inf, self.K + 1, self.idx, vals)

    def solve(self) -> tuple[np.ndarray, float]:
        self.h.run()
        x = np.asarray(self.h.getSolution().col_value, dtype=np.float64)
        return np.maximum(x[: self.K], 0.0), float(x[self.K])


@dataclass
class DualResult:
    """The minimised dual: the exact oracle at the best prices (``best.L + st.const`` is the bound), the reduced
    values of every column and the group maxima there, and the number of oracle calls."""

    best: OracleAnswer
    rc: np.ndarray
    gmax: np.ndarray
    iterations: int
    #: the LP relaxation's optimal counts per column when the prices came from it (a start for the repair)
    y_lp: np.ndarray | None = None

    @property
    def lam(self) -> np.ndarray:
        return self.best.lam


def columns_of_groups(st: MckpStructure, gs: np.ndarray, pool: ColumnSet | None = None) -> np.ndarray:
    """The columns of the (sorted) groups ``gs``: all of them, or those in ``pool`` when it is a screened part."""
    if pool is None or pool.idx.size == st.n:
        starts, cnt = st.starts[gs], st.counts[gs]
        base_idx = None
    else:
        p = pool
        loc = np.minimum(p.gid.searchsorted(gs), max(p.gid.size - 1, 0))
        here = p.gid[loc] == gs if p.gid.size else np.zeros(gs.size, dtype=bool)
        starts = p.starts[loc]
        cnt = np.where(here, p.counts[loc], 0)
        base_idx = p.idx
    tot = int(cnt.sum())
    if tot == 0:
        return np.zeros(0, dtype=np.int64)
    out = (starts - cnt.cumsum() + cnt).repeat(cnt) + np.arange(tot)
    return out if base_idx is None else base_idx[out]


class LagrangianDual:
    """Minimises the Lagrangian function ``L(lam)`` of a structure over the capacity prices ``lam >= 0`` (Kelley's
    cutting planes with Wentges smoothing, in a box that grows until the best prices are inside it).

    Named steps: :meth:`oracle` / :meth:`full_oracle` (evaluate ``L``), :meth:`screen` (the columns that can win in a
    box of prices), :meth:`kelley` (the cutting-plane loop), :meth:`sample_prices` (a warm start from a sample of
    groups), :meth:`solve` (the whole minimisation). ``pool`` holds the columns of the last box after :meth:`solve`.
    """

    def __init__(self, st: MckpStructure, *, deadline: float = math.inf, seed: int | None = 0,
                 tolerance: float = 1e-10, max_iterations: int = 500, method: str = "auto",
                 primal: bool = True, start: np.ndarray | None = None) -> None:
        self.st = st
        #: prices to start Kelley's method from (None: a sample's prices on large structures, see :meth:`solve`)
        self.start = None if start is None else np.asarray(start, dtype=np.float64)
        self.boxes = 0  #: how many boxes of prices the last :meth:`solve` ran Kelley's method in
        self.primal = primal  #: also find LP-optimal counts after Kelley's method (``DualResult.y_lp``)
        self.method = method  #: "auto" (LP up to LP_DUAL_COLUMNS columns, Kelley above), "lp" or "kelley"
        self.lp_status = ""  #: HiGHS's status of the LP relaxation when it was solved
        self.y_lp: np.ndarray | None = None  #: its optimal counts per column
        self.used = ""  #: how the last solve found its prices: "zero" (lam = 0 fits), "lp" or "kelley"
        self.deadline = deadline
        self.seed = seed
        self.tolerance = tolerance
        self.max_iterations = max_iterations
        self.v = st.value
        self.n, self.G, self.K = st.n, st.G, st.K
        self.mult = st.mult
        self.oracle_calls = 0
        self.oracle_columns = 0
        self.sample_iterations = 0
        self.pool = ColumnSet(st)  #: the columns of the last box of prices (all columns before and at the start)

    def time_left(self) -> float:
        return self.deadline - time.perf_counter()

    # ---- Lagrangian oracle
    def oracle(self, cs: ColumnSet, lam: np.ndarray, cap: np.ndarray | None = None) -> OracleAnswer:
        st = self.st
        cap = st.cap if cap is None else cap
        self.oracle_calls += 1
        self.oracle_columns += cs.idx.size
        gmax, best = cs.evaluate(np.concatenate((lam, [0.0])))
        pos = gmax > 0
        choice = np.full(self.G, -1, dtype=np.int64)
        choice[cs.gid[pos]] = best[pos]
        if self.mult is None:
            L = float(lam @ cap + gmax[pos].sum())
            s = cap - st.usage(best[pos])
        else:
            mu = self.mult[cs.gid[pos]]
            L = float(lam @ cap + gmax[pos] @ mu)
            s = cap - st.usage(best[pos], mu)
        return OracleAnswer(lam, L, s, choice)

    def full_oracle(self, lam: np.ndarray) -> tuple[OracleAnswer, np.ndarray, np.ndarray]:
        """The exact oracle over every column, with the reduced values and the group maxima (for the fixing)."""
        st = self.st
        self.oracle_calls += 1
        self.oracle_columns += st.n
        rc = self.v - st.priced(np.concatenate((lam, [0.0])))
        if not st.n:
            return OracleAnswer(lam, float(lam @ st.cap), st.cap.copy(), np.zeros(0, np.int64)), rc, np.zeros(0)
        gmax = np.maximum.reduceat(rc, st.starts)
        hit = (rc >= gmax[st.group]).nonzero()[0]
        gh = st.group[hit]
        first = hit[np.concatenate((_TRUE, gh[1:] != gh[:-1]))]
        pos = gmax > 0
        choice = np.where(pos, first, -1)
        if self.mult is None:
            L = float(lam @ st.cap + gmax[pos].sum())
            s = st.cap - st.usage(first[pos])
        else:
            mu = self.mult[pos]
            L = float(lam @ st.cap + gmax[pos] @ mu)
            s = st.cap - st.usage(first[pos], mu)
        return OracleAnswer(lam, L, s, choice), rc, gmax

    def lam_max(self) -> np.ndarray:
        st = self.st
        out = np.zeros(self.K + 1)
        if self.K and st.n:
            r = np.maximum(self.v, 0.0)[:, None] / np.where(st.wt > 0, st.wt, np.inf)
            np.maximum.at(out, st.ri.ravel(), r.ravel())
        return out[: self.K] * (1 + 1e-9) + 1e-12

    def screen(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Columns that can be their group's best for some prices in the box [lo, hi] (W >= 0: a column's reduced
        value is largest at ``lo``; its group's best is at least the best reduced value at ``hi``, and 0)."""
        st = self.st
        ub = self.v - st.priced(np.concatenate((lo, [0.0])))
        rc_hi = self.v - st.priced(np.concatenate((hi, [0.0])))
        lbg = np.maximum(np.maximum.reduceat(rc_hi, st.starts), 0.0)
        tol = 1e-9 * (np.abs(self.v) + 1.0)
        return (ub >= lbg[st.group] - tol).nonzero()[0]

    def kelley(self, cs: ColumnSet, master: _Master, best: OracleAnswer, tol: float, max_it: int,
                stop_gap: float, cap: np.ndarray | None = None) -> tuple[OracleAnswer, float, int]:
        """Kelley's method with Wentges smoothing (queries stay within the master's box). Stops at the tolerance,
        or when neither the best value nor the master's bound moved by more than it in :data:`STALL_ITERATIONS`
        iterations: the master LP's own tolerances (about 1e-7) can keep its bound short of a tighter tolerance
        forever (a 64-GPU Sia instance found its best prices at iteration 49 and ran to the 500-iteration cap)."""
        center = best.lam
        alpha = 0.5
        lb = -math.inf
        it = 0
        scale = max(1.0, abs(best.L) + abs(self.st.const))
        step = max(tol, stop_gap) * scale
        mark_L, mark_lb, mark_it = best.L, -math.inf, 0
        while it < max_it:
            lam_m, eta = master.solve()
            lb = eta
            if best.L - lb <= step or self.time_left() <= 0:
                break
            if best.L < mark_L - step or lb > mark_lb + step:
                mark_L, mark_lb, mark_it = best.L, lb, it
            elif it - mark_it >= STALL_ITERATIONS:
                break
            q = alpha * center + (1 - alpha) * lam_m
            o = self.oracle(cs, q, cap)
            it += 1
            master.add_cut(o)
            if o.L < best.L:
                best, center = o, q
            elif o.L + o.s @ (lam_m - q) <= eta + 1e-12 * scale:
                # mispricing: the smoothed point does not cut off the master's point; evaluate that point itself
                o2 = self.oracle(cs, lam_m, cap)
                it += 1
                master.add_cut(o2)
                if o2.L < best.L:
                    best, center = o2, lam_m
        return best, lb, it

    def lp_prices(self) -> np.ndarray | None:
        """The minimising prices from one solve of the LP relaxation (``max v.y``, ``sum_class y <= mult``,
        ``W y <= cap``, ``y >= 0``: its dual is ``min_lam L(lam)``): the knapsack rows' duals, clipped at 0 (any
        prices give a valid bound; the bound reported is ``L`` evaluated here at these prices, never the LP's own
        value). None when HiGHS does not report the LP optimal (the caller falls back to Kelley's method). The
        LP's optimal counts are kept in ``y_lp``."""
        out = self.solve_lp(np.arange(self.n))
        if out is None:
            return None
        self.y_lp, duals = out
        return duals

    def lp_counts(self, rc: np.ndarray, gmax: np.ndarray) -> np.ndarray | None:
        """LP-optimal counts from prices found by Kelley's method: the LP restricted to every class's columns
        within a small tolerance of its best reduced value there (complementary slackness: an LP optimum uses no
        other column at optimal prices), a much smaller LP. A start for the repair only (never a bound)."""
        tol = 1e-7 * (1.0 + np.abs(self.v))
        idx = (rc >= np.maximum(gmax, 0.0)[self.st.group] - tol).nonzero()[0]
        out = self.solve_lp(idx, singleton_bounds=True)
        if out is None:
            return None
        y = np.zeros(self.n)
        y[idx] = out[0]
        return y

    def solve_lp(self, idx: np.ndarray, singleton_bounds: bool = False) -> tuple[np.ndarray, np.ndarray] | None:
        """The LP relaxation on the columns ``idx`` (sorted): (optimal counts of those columns, the knapsack rows'
        duals clipped at 0), or None when HiGHS does not report it optimal. Primal simplex without presolve:
        measured fastest on these LPs (about 2x at 1,000 columns). ``singleton_bounds``: a class with one column
        in ``idx`` gets no row, its column the upper bound ``mult`` instead (the same LP), solved by the dual
        simplex. :meth:`lp_counts` passes it: at Kelley's prices nearly every class has one candidate, and the
        primal simplex with one row per class took one iteration per class, each pricing every column (quadratic:
        0.06 s at 4,000 columns, 0.77 s at 16,000, 3.3 s at 32,000 on the 16,384- to 131,072-GPU Sia rounds);
        with a row only per class of several candidates (six there) the dual simplex takes 30-70 iterations,
        0.04 s at 32,000 columns."""
        import highspy

        st = self.st
        n, G, K = idx.size, self.G, self.K
        mult = np.ones(G) if self.mult is None else self.mult.astype(np.float64)
        inf = highspy.kHighsInf
        col_up = np.full(n, inf)
        # every column (idx is sorted, so then it is arange(n)): the structure's own arrays, not copies of them
        whole = n == st.n
        grp = st.group if whole else st.group[idx]
        ri, wt = (st.ri, st.wt) if whole else (st.ri[idx], st.wt[idx])
        if singleton_bounds and n:
            per = np.bincount(grp, minlength=G)
            one = per[grp] == 1
            col_up[one] = mult[grp[one]]
            kept = (per >= 2).nonzero()[0]  # the classes that keep their row, renumbered 0..R-1
            row_of = np.full(G, -1, dtype=np.int64)
            row_of[kept] = np.arange(kept.size)
            R, gub_up = int(kept.size), mult[kept]
            rows = np.concatenate([row_of[grp][:, None], R + ri], axis=1)
        else:
            R, gub_up = G, mult
            rows = None
            if ri.shape[1] == 1 and not _LP_GENERAL_ARRAYS and n and int(ri.max()) < K:
                # one (row, weight) slot per column and no padding (a Sia round): every column has its class row and
                # its knapsack row, two entries each; the arrays the general path below builds, written directly
                start = _two_per_column(n)
                index = np.empty(2 * n, dtype=np.int32)
                index[0::2] = grp
                index[1::2] = ri[:, 0] + G
                mvals = np.empty(2 * n)
                mvals[0::2] = 1.0
                mvals[1::2] = wt[:, 0]
            else:
                rows = np.concatenate([grp[:, None], G + ri], axis=1)
        if rows is not None:
            vals = np.concatenate([np.ones((n, 1)), wt], axis=1)
            keep = (rows >= 0) & (rows < R + K)  # the ELL padding (row K) is no row, nor a class without its row
            start = np.concatenate([_ZERO, keep.sum(axis=1).cumsum()]).astype(np.int32)
            index = rows[keep].astype(np.int32)
            mvals = vals[keep]
        h = _lp_highs()
        _lp_option(h, "simplex_strategy", 1 if singleton_bounds else 4)
        _lp_option(h, "time_limit", max(self.time_left(), 1e-3) if math.isfinite(self.deadline) else inf)
        # the LP's arrays passed directly (a HighsLp built attribute by attribute cost about 30-40 us more): columns
        # (costs, bounds 0..inf), rows (-inf..mult, -inf..cap), the column-wise matrix, every column continuous
        h.passModel(n, R + K, int(index.size), int(highspy.MatrixFormat.kColwise), int(highspy.ObjSense.kMaximize),
                    0.0, st.value if whole else st.value[idx], np.zeros(n), col_up, np.full(R + K, -inf),
                    np.concatenate([gub_up, st.cap]), start[:-1], index, mvals, np.zeros(n, dtype=np.int32))
        h.run()
        status = h.getModelStatus()
        self.lp_status = h.modelStatusToString(status)
        if status != highspy.HighsModelStatus.kOptimal:
            return None
        sol = h.getSolution()
        y = np.maximum(np.asarray(sol.col_value, dtype=np.float64), 0.0)
        rd = np.asarray(sol.row_dual, dtype=np.float64)[R:]
        return y, np.maximum(rd, 0.0)  # a maximisation's <= rows have nonnegative duals in HiGHS's convention

    @staticmethod
    def _box(lam_c: np.ndarray, width: float, lmax: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The box of prices ``lam_c`` +- ``width`` (relative, plus 1e-3 of the range), within [0, ``lmax``]."""
        r = width * lam_c + 1e-3 * lmax
        return np.maximum(lam_c - r, 0.0), np.minimum(lam_c + r, lmax)

    def sample_prices(self, lmax: np.ndarray, tol: float) -> np.ndarray:
        """Prices of a random sample of the groups with proportionally scaled capacities (a warm start)."""
        m = min(max(300, self.G // 20), self.G)
        rng = np.random.default_rng(self.seed)
        gs = np.sort(rng.choice(self.G, m, replace=False))
        cs = ColumnSet(self.st, columns_of_groups(self.st, gs))
        cap = self.st.cap * (m / self.G if self.mult is None else self.mult[gs].sum() / self.mult.sum())
        master = _Master(lmax)
        o = self.oracle(cs, np.zeros(self.K), cap)
        master.add_cut(o)
        best, _lb, it = self.kelley(cs, master, o, max(tol, 1e-7), 200, 0.0, cap)
        self.sample_iterations = it + 1
        return best.lam

    def solve(self) -> DualResult:
        """Minimise L over lam >= 0: the final exact oracle at the best prices (its L is the bound), the reduced
        values and group maxima there, and the number of oracle calls.

        Large instances (at least 600 groups and 20,000 columns) start from the prices of a random sample of groups
        (or from ``start`` when given); then Kelley's method runs on the columns that can win for prices in a box
        around the current prices (``screen``: exact there); the box grows (3x) until the cutting-plane model, which
        lies below ``L`` everywhere, shows no lower value in the next box than in this one (``boxes`` counts them).
        Whatever the prices, the bound is ``L`` evaluated over every column at them: a proven bound."""
        K = self.K
        tol = self.tolerance
        max_it = self.max_iterations
        o0, rc0, g0 = self.full_oracle(np.zeros(K))
        if self.pool.idx.size != self.st.n:  # a second solve starts from every column again
            self.pool = ColumnSet(self.st)
        if K == 0 or o0.s.min(initial=0.0) >= 0:
            self.used = "zero"
            return DualResult(o0, rc0, g0, 1)  # lam = 0 is optimal: its choice fits (complementary slackness holds)
        use_lp = self.method == "lp" or (self.method == "auto" and self.n <= LP_DUAL_COLUMNS)
        lam_lp = self.lp_prices() if use_lp else None
        if lam_lp is not None:
            final, rc, gmax = self.full_oracle(lam_lp)
            if final.L <= o0.L:
                self.used = "lp"
                return DualResult(final, rc, gmax, 2, self.y_lp)
        self.used = "kelley"
        lmax = self.lam_max()
        master = _Master(lmax)
        master.add_cut(o0)
        best = o0
        it = 1
        if self.start is not None and self.start.shape == (K,):
            lam_c, width = np.clip(self.start, 0.0, lmax), 0.25
        elif self.G >= 600 and self.n >= 20000:
            lam_c, width = self.sample_prices(lmax, tol), 0.25
        else:
            lam_c, width = None, math.inf
        step = tol * max(1.0, abs(o0.L) + abs(self.st.const))  # kelley's own stopping step, at most
        self.boxes = 0
        while True:
            self.boxes += 1
            if lam_c is None or math.isinf(width):
                lo, hi = np.zeros(K), lmax
                cs = self.pool
            else:
                lo, hi = self._box(lam_c, width, lmax)
                cs = ColumnSet(self.st, self.screen(lo, hi))
                o = self.oracle(cs, lam_c)
                it += 1
                master.add_cut(o)
                if o.L < best.L:
                    best = o
            master.set_box(lo, hi)
            if not (lo <= best.lam).all() or not (best.lam <= hi).all():
                best = self.oracle(cs, np.clip(best.lam, lo, hi))
                it += 1
                master.add_cut(best)
            best, lb_box, k = self.kelley(cs, master, best, tol, max(max_it - it, 1), 0.0)
            it += k
            self.pool = cs
            if ((lo <= 0).all() and (hi >= lmax).all()) or it >= max_it or self.time_left() <= 0:
                break
            # is the minimum outside the box? Every cut lies below L everywhere (a subgradient cut of L over a subset
            # of the columns), so the cutting-plane model's minimum over the next, larger box is below L's minimum
            # there: when it is no lower than the minimum in this box, the prices cannot improve by leaving it (L is
            # convex). This replaced a test of the best prices against the box's faces at 1e-9, which the smoothed
            # queries can miss (a 131,072-GPU Sia round: the best price 1e-8 inside a face, the bound 0.8 % weak)
            lam_c, width = best.lam, width * 3
            master.set_box(*self._box(lam_c, width, lmax))
            if master.solve()[1] >= lb_box - step:
                break
        final, rc, gmax = self.full_oracle(best.lam)
        return DualResult(final, rc, gmax, it + 1, self.lp_counts(rc, gmax) if self.primal else None)

    # ---- helpers on group choices
