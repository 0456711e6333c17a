"""The exact closure: reduced-cost fixing around the incumbent, then the residual problem handed to a MIP solver.

Every solution better than the incumbent uses only options whose Lagrangian loss (against their class's best) is
below the gap ``UB - LB``; :class:`ResidualClosure` keeps those, fixes classes left with one option and solves the
rest: a small residual by its own depth-first search (:meth:`ResidualClosure.search`: members of a class take their
options in a fixed order, so identical jobs are never permuted, pruned by the Lagrangian loss), a larger one, or one
the search gives up on, with the sub-solver it is given (integer counts per aggregated option, or binaries per
member; ``schedopt.solve`` when called through it: this module imports no dispatcher).
"""

from __future__ import annotations

import importlib.util
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..model import LazyModule, LinearModel
from ..results import SolveResult
from .aggregate import Aggregate

if TYPE_CHECKING:
    import scipy.sparse as sp
else:
    sp = LazyModule("scipy.sparse", globals(), "sp")  # imported when a residual model is first built (issue 42)

#: a one-element int64 zero, prepended to cumulative sums (no list converted a call)
_ZERO = np.zeros(1, dtype=np.int64)

__all__ = ["ResidualClosure", "RestrictedSolve", "default_residual_backend"]


#: residual problems with fewer columns go to HiGHS while CP-SAT is not loaded yet (``residual_backend=None``)
CPSAT_MIN_COLUMNS = 200

#: :meth:`ResidualClosure.search` runs on residuals of at most this many members (one search level each) ...
SEARCH_MAX_MEMBERS = 64
#: ... whose tree, before any pruning, has at most 10 ** SEARCH_MAX_LOG10_TREE leaves (the number of ways to give
#: each class's members a multiset of its choices; saturn/1's residuals: up to 10 ** 10.5, solved in <= 3,500
#: nodes; the generated 64-GPU ones with identical jobs: 10 ** 11-12, given up after 4,000 nodes, 20-30 ms) ...
SEARCH_MAX_LOG10_TREE = 9.0
#: ... and gives up (the table or the sub-solver takes the residual) after this many nodes (about 4-5 us each)
SEARCH_MAX_NODES = 1500
#: :meth:`ResidualClosure.table` runs when (capacity states) x (member choices) is at most this many cells (about
#: 1-3 ns a cell plus 10-20 us per member choice: a few ms, against about 8 ms CPU for the sub-solver's model build
#: and HiGHS's solve of a 35-column residual that it proves at its root node)
TABLE_MAX_CELLS = 4_000_000
#: the search's node budget when the table can take the residual after it
SEARCH_NODES_BEFORE_TABLE = 300

_HAS_ORTOOLS: bool | None = None


def default_residual_backend(columns: int | None = None) -> str:
    """CP-SAT when OR-Tools is installed (measured much faster on the aggregated residual), else HiGHS. With
    ``columns`` (the residual's size): HiGHS for a residual of fewer than ``CPSAT_MIN_COLUMNS`` columns while
    CP-SAT is not loaded in this process yet, so that a cold small solve does not pay OR-Tools' first load (about
    0.3-1 s; a 64-GPU ``schedopt solve`` took 1.3 s of which 0.08 s was the solve), and HiGHS solves such a residual
    in milliseconds too (saturn/1's 303 residuals of at most 67 columns: the same CPU time within noise)."""
    global _HAS_ORTOOLS
    if _HAS_ORTOOLS is None:  # find_spec reads the file system: about 0.25 ms a call, once per residual before
        _HAS_ORTOOLS = importlib.util.find_spec("ortools") is not None
    if not _HAS_ORTOOLS:
        return "highs"
    if columns is not None and columns < CPSAT_MIN_COLUMNS and "ortools.sat.python.cp_model" not in sys.modules:
        return "highs"
    return "cpsat"


def search_tree_log10(groups: np.ndarray, og: np.ndarray, members: np.ndarray, none_ok: np.ndarray) -> float:
    """log10 of the number of leaves of :meth:`ResidualClosure.search`'s tree before pruning: class ``og[o]`` with
    ``members[o]`` members and ``c`` choices (its residual columns ``groups == og[o]``, plus nothing when
    ``none_ok[o]``) gives its members one of ``C(members + c - 1, c - 1)`` multisets."""
    c = np.bincount(og.searchsorted(groups), minlength=og.size) + none_ok.astype(np.int64)
    m = members.astype(np.float64)
    c = np.maximum(c, 1).astype(np.float64)
    ln = sum(math.lgamma(a + b) - math.lgamma(a + 1) - math.lgamma(b) for a, b in zip(m.tolist(), c.tolist()))
    return ln / math.log(10)


@dataclass(frozen=True)
class RestrictedSolve:
    """One restricted solve: the sub-solver's result (None when nothing was left open), the counts per aggregated
    column it found (None without a solution), how many columns it had and how many were fixed out."""

    result: SolveResult | None
    counts: np.ndarray | None
    columns: int
    fixed: int
    #: the search's proof when it solved the residual (``result`` is then None): every solution of the residual
    #: has a value (maximisation form, constant included) of at most ``bound``; NaN otherwise
    bound: float = math.nan
    #: the search's node count, or the table's cells (0: neither ran to the end)
    nodes: int = 0
    #: which proved the residual: "search" (:meth:`ResidualClosure.search`) or "table" (:meth:`ResidualClosure.table`)
    method: str = ""


class ResidualClosure:
    """The aggregated problem restricted around an incumbent, solved by ``sub_solve(model, backend, ...)``.

    ``delta`` / ``bestg``: the Lagrangian losses of every aggregated option / of choosing nothing, against the
    class's best (>= 0). ``backend``: the residual solver (``default_residual_backend()`` when None); ``form``:
    ``"integer"``, ``"binary"`` or ``"auto"`` (integer for CP-SAT, binary otherwise)."""

    def __init__(self, agg: Aggregate, delta: np.ndarray, bestg: np.ndarray, sub_solve: Callable[..., SolveResult], *,
                 backend: str | None = None, form: str = "auto", gap_tol: float = 1e-6, threads: int = 1,
                 seed: int = 0, lam: np.ndarray | None = None, search_nodes: int = SEARCH_MAX_NODES,
                 table: bool = True) -> None:
        self.agg = agg
        self.use_table = table  # whether :meth:`table` may take a residual the search leaves
        self.lam = lam  # the prices delta and bestg were computed at (the search needs them; None: no search)
        self.search_nodes = search_nodes
        self.delta = delta
        self.bestg = bestg
        self.sub_solve = sub_solve
        self.auto = backend is None  # chosen per residual by its size (default_residual_backend(columns))
        self.form_option = form
        self._choose(backend or default_residual_backend())
        self.gap_tol = gap_tol
        self.threads = threads
        self.seed = seed

    def _choose(self, backend: str) -> None:
        self.backend = backend
        form = self.form_option
        self.form = ("integer" if self.backend == "cpsat" else "binary") if form == "auto" else form

    def restricted(self, y_inc: np.ndarray, gam: float, tau: float, time_limit: float | None,
                   search: bool = False) -> RestrictedSolve:
        """Solve the aggregated problem restricted to the options within ``tau`` of their class's best (the
        incumbent's counts ``y_inc`` always kept; classes left with one option keep the incumbent's), each option
        used by at most ``floor(gam / delta)`` members (any improving solution has total loss < ``gam`` = UB - LB);
        returns the counts of every aggregated column (fixed ones included) when a solution was found. With
        ``search``: by :meth:`search` only (its proof in ``bound``; NaN when it cannot run or gives up)."""
        agg, ast, delta, bestg = self.agg, self.agg.st, self.delta, self.bestg
        mult = ast.mult if ast.mult is not None else np.ones(ast.G, dtype=np.int64)
        none_inc = mult - np.add.reduceat(y_inc, ast.starts)
        alive = (delta <= tau) | (y_inc > 0)
        none_alive = (bestg <= tau) | (none_inc > 0)
        n_alive = np.add.reduceat(alive.astype(np.int64), ast.starts)
        open_g = (n_alive + none_alive) >= 2
        res_cols = (alive & open_g[ast.group]).nonzero()[0]
        fixed = int(ast.n - alive.sum())
        if res_cols.size == 0:
            return RestrictedSolve(None, None, 0, fixed)
        y_fixed = np.where(open_g[ast.group], 0, y_inc)
        # (each gather and test made once: res_cols is not empty here)
        d = delta[res_cols]
        dpos = d > 0
        mult_r = mult[ast.group[res_cols]]
        ub = np.minimum(mult_r, np.floor(gam / np.where(dpos, d, 1.0)).astype(np.int64))
        ub = np.where(dpos, ub, mult_r)
        ub = np.maximum(ub, y_inc[res_cols])
        og = open_g.nonzero()[0]
        bestg_o, mult_o = bestg[og], mult[og]
        bpos = bestg_o > 0
        none_max = np.where(bpos, np.floor(gam / np.where(bpos, bestg_o, 1.0)), mult_o)
        none_max = np.where(none_alive[og], np.maximum(none_max, none_inc[og]), 0)
        lo_rows = np.maximum(mult_o - none_max, 0).astype(np.float64)
        cap = ast.cap - ast.usage(y_fixed.nonzero()[0], y_fixed[y_fixed > 0])
        const = float(ast.value @ y_fixed) + ast.const
        del agg
        if search:  # the search or the table only: a proof, or nothing (the caller then goes on with the sub-solver)
            found, how = self.prove(res_cols, ub, og, lo_rows, mult_o, cap, const, y_inc[res_cols], none_alive[og])
            if found is None:
                return RestrictedSolve(None, None, int(res_cols.size), fixed)
            ys, bound, nodes = found
            found_counts = y_fixed.copy()
            found_counts[res_cols] = ys
            return RestrictedSolve(None, found_counts, int(res_cols.size), fixed, bound, nodes, how)
        if self.auto:
            self._choose(default_residual_backend(int(res_cols.size)))
        r, y = self.residual(res_cols, ub, og, lo_rows, mult_o, cap, const, y_inc[res_cols], time_limit)
        counts = None
        if y is not None:
            counts = y_fixed.copy()
            counts[res_cols] = y
        return RestrictedSolve(r, counts, int(res_cols.size), fixed)

    def prove(self, res_cols: np.ndarray, ub: np.ndarray, og: np.ndarray, lo_rows: np.ndarray, members: np.ndarray,
              cap: np.ndarray, const: float, ws: np.ndarray, none_alive: np.ndarray
              ) -> tuple[tuple[np.ndarray, float, int] | None, str]:
        """The residual problem of :meth:`residual` (classes ``og`` with ``members``, ``none_alive`` per class) by
        :meth:`search` (on at most ``SEARCH_MAX_MEMBERS`` members and ``SEARCH_MAX_LOG10_TREE``), then by
        :meth:`table` when the search cannot run or gives up: ((counts per residual column, proven bound, nodes or
        cells), "search" or "table"), or (None, ...) when neither proves it.

        The search gets ``SEARCH_NODES_BEFORE_TABLE`` nodes when the table can take the residual after it, the
        whole ``search_nodes`` otherwise. The table's plan (:meth:`table_plan`) is made only when that short search
        gives up (or cannot run): a search that ends within the short budget ends the same way under the long one
        (the budget only stops it), so on the simulator's rounds, where nearly every search ends within a hundred
        nodes, the plan is not made at all; without a plan the search runs again with the whole budget."""
        found: tuple[np.ndarray, float, int] | None = None
        how = ""
        plan: tuple[np.ndarray, np.ndarray, np.ndarray, int] | None = None
        planned = False
        if self.search_nodes > 0 and self.lam is not None and int(members.sum()) <= SEARCH_MAX_MEMBERS and \
                search_tree_log10(self.agg.st.group[res_cols], og, members, none_alive) <= SEARCH_MAX_LOG10_TREE:
            short = min(self.search_nodes, SEARCH_NODES_BEFORE_TABLE)
            found = self.search(res_cols, ub, og, lo_rows, members, cap, const, ws, short)
            if found is None:
                plan = self.table_plan(res_cols, og, members, cap) if self.use_table else None
                planned = True
                if plan is None and self.search_nodes > short:  # no table to take over: the whole budget
                    found = self.search(res_cols, ub, og, lo_rows, members, cap, const, ws, self.search_nodes)
            how = "search"
        if found is None and self.use_table:
            if not planned:
                plan = self.table_plan(res_cols, og, members, cap)
            if plan is not None:
                found, how = self.table(res_cols, og, members, const, plan), "table"
        return found, how

    def table_plan(self, res_cols: np.ndarray, og: np.ndarray, members: np.ndarray, cap: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int] | None:
        """What :meth:`table` needs (the integer weights on the rows the residual uses, each row's limit, the
        class of every column, the cells), or None when the weights are not integers or the table would exceed
        ``TABLE_MAX_CELLS`` cells."""
        ast = self.agg.st
        K = ast.K
        m = res_cols.size
        if not m:
            return None
        D = self.agg.dense_pad[res_cols] if K else np.zeros((m, 0))  # ast.dense(res_cols)
        if not np.array_equal(D, np.rint(D)):
            return None
        rows = (D.max(axis=0, initial=0.0) > 0).nonzero()[0] if K else np.zeros(0, dtype=np.int64)
        if not rows.size:
            return None  # no capacity binds the residual: the search (or the sub-solver) takes it
        Dr = np.rint(D[:, rows]).astype(np.int64)
        gi = og.searchsorted(ast.group[res_cols])
        heaviest = np.zeros((og.size, rows.size), dtype=np.int64)
        np.maximum.at(heaviest, gi, Dr)
        lim = np.maximum(np.minimum(np.floor(cap[rows] + 1e-9).astype(np.int64), members.astype(np.int64) @ heaviest), 0)
        states = float(np.prod(lim + 1.0))
        choices = int(members.astype(np.int64) @ np.bincount(gi, minlength=og.size))
        cells = states * max(choices, 1)
        if cells > TABLE_MAX_CELLS:
            return None
        return Dr, lim, gi, int(cells)

    def table(self, res_cols: np.ndarray, og: np.ndarray, members: np.ndarray, const: float,
              plan: tuple[np.ndarray, np.ndarray, np.ndarray, int]) -> tuple[np.ndarray, float, int]:
        """Solve the residual problem exactly by dynamic programming over the capacities (``plan`` from
        :meth:`table_plan`). Returns (counts per residual column, the optimum as the proven bound, cells).

        It solves a relaxation that is still a restriction of the whole problem: every member of an open class may
        take any of its class's residual options or nothing (the per-option and per-class count limits of
        :meth:`residual` only cut away solutions no better than the incumbent), so its optimum, a feasible choice of
        the whole problem, is the best of every improving solution. ``f[u]`` is the best value of the members so far
        using at most ``u`` of each capacity row (rows no residual option uses are left out, the others capped at
        what all members could use); one member at a time, ``f'[u] = max(f[u], max_c f[u - w_c] + v_c)``, the choice
        kept per cell and read back from the full capacity. Independent of ties: on the generated 64-GPU Sia
        instances with identical jobs, where the search gives up, about 1-3 ms."""
        ast = self.agg.st
        Dr, lim, gi, cells = plan
        m = res_cols.size
        shape = tuple(int(x) + 1 for x in lim)
        val = ast.value[res_cols]
        f = np.zeros(shape)
        picks: list[np.ndarray] = []
        cols_of = [(gi == o).nonzero()[0].tolist() for o in range(og.size)]
        Drl, liml, vall = Dr.tolist(), lim.tolist(), val.tolist()
        for o in range(og.size):
            # the options that fit alone, each with its source and destination slices (the same for every member)
            opts = [(c, tuple(slice(0, n - wk) for n, wk in zip(shape, Drl[c])),
                     tuple(slice(wk, None) for wk in Drl[c]), vall[c])
                    for c in cols_of[o] if all(wk <= lk for wk, lk in zip(Drl[c], liml))]
            for _ in range(int(members[o])):
                g = f.copy()
                arg = np.full(shape, -1, dtype=np.int32)
                for c, src_sl, dst_sl, v in opts:
                    src = f[src_sl] + v
                    dst = g[dst_sl]
                    better = src > dst
                    np.copyto(dst, src, where=better)  # dst[better] = src[better]
                    np.copyto(arg[dst_sl], c, where=better)
                f = g
                picks.append(arg)
        u = lim.copy()
        y = np.zeros(m, dtype=np.int64)
        for arg in reversed(picks):
            c = int(arg[tuple(u)])
            if c >= 0:
                y[c] += 1
                u -= Dr[c]
        best = const + float(f[tuple(lim)])
        return y, max(best, const + float(val @ y)), cells

    def search(self, res_cols: np.ndarray, ub: np.ndarray, og: np.ndarray, lo_rows: np.ndarray,
               up_rows: np.ndarray, cap: np.ndarray, const: float, ws: np.ndarray, budget: int | None = None
               ) -> tuple[np.ndarray, float, int] | None:
        """Solve the residual problem of :meth:`residual` by depth-first search, or give up (None) after
        ``budget`` nodes (default ``search_nodes``). Returns (counts per residual column, proven bound, nodes).

        Every member of an open class takes one *choice*: one of the class's residual options (at most ``ub`` members
        each) or nothing (at most ``up_rows - lo_rows`` members); the choices of a class are sorted by their
        Lagrangian loss ``delta`` (nothing: ``bestg``) and its members take them in non-decreasing order, so no two
        nodes differ only by a permutation of identical members. With ``lam`` the prices of ``delta``, every
        solution's value is ``R - (its total loss) - lam . (capacity it leaves)``, ``R = const + sum_o up_o bestg_o
        + lam . cap``, so a node whose loss (plus the least loss its members still to place must take) leaves at most
        the best value found plus half the gap is pruned; the proven bound is the largest pruned node bound (or the
        best value). Starts from the incumbent ``ws`` (its value is the first best)."""
        ast = self.agg.st
        lam = self.lam
        assert lam is not None
        K = ast.K
        gi = og.searchsorted(ast.group[res_cols])
        bestg = self.bestg[og]
        R = const + float(up_rows @ bestg) + float(lam @ cap)
        D = self.agg.dense_pad[res_cols] if K else np.zeros((res_cols.size, 0))  # ast.dense(res_cols)
        # per open class: its choices sorted by loss, as plain lists (the search is scalar Python)
        order = np.lexsort((np.arange(res_cols.size), self.delta[res_cols], gi))
        classes: list[tuple[int, list[_Choice]]] = []
        # the same values as plain Python numbers (tolist), read per class from its contiguous run of ``order``
        # (sorted by class first)
        dl, vl, Dl, ubl = self.delta[res_cols].tolist(), ast.value[res_cols].tolist(), D.tolist(), ub.tolist()
        ol = order.tolist()
        ends = gi[order].searchsorted(np.arange(og.size), side="right").tolist()
        upl, lol, bgl = up_rows.tolist(), lo_rows.tolist(), bestg.tolist()
        at = 0
        for o in range(og.size):
            sel = ol[at:ends[o]]
            at = ends[o]
            ch = [(dl[i], vl[i], tuple(Dl[i]), ubl[i], i) for i in sel if ubl[i] > 0]
            none_max = int(upl[o] - lol[o])
            if none_max > 0:
                ch.append((bgl[o], 0.0, (0.0,) * K, none_max, -1))
                ch.sort(key=lambda c: c[0])
            classes.append((int(upl[o]), ch))
        # the least loss still to come after class o (every member takes at least its class's least loss)
        rest = [0.0] * (len(classes) + 1)
        for o in range(len(classes) - 1, -1, -1):
            m_o, ch = classes[o]
            rest[o] = rest[o + 1] + (m_o * ch[0][0] if ch else math.inf)
        if math.isinf(rest[0]):
            return None  # a class with members and no choice: leave it to the sub-solver (it proves infeasibility)
        # the most weight per row a member can still take from choice p of class o on (mw), and all the members of
        # the classes after o together (restw): capacity no one can use any more is value lost at its price
        mw: list[list[tuple[float, ...]]] = []
        for _m_o, ch in classes:
            suf: list[tuple[float, ...]] = [(0.0,) * K] * (len(ch) + 1)
            for p in range(len(ch) - 1, -1, -1):
                suf[p] = tuple(map(max, suf[p + 1], ch[p][2]))
            mw.append(suf)
        restw = [[0.0] * K for _ in range(len(classes) + 1)]
        for o in range(len(classes) - 1, -1, -1):
            restw[o] = [restw[o + 1][k] + classes[o][0] * mw[o][0][k] for k in range(K)]
        tree = _SearchTree(classes, rest, mw, restw, [float(v) for v in lam], R, self.gap_tol / 2,
                           const + float(ast.value[res_cols] @ ws), [int(v) for v in ws], [float(c) for c in cap],
                           self.search_nodes if budget is None else budget)
        try:
            tree.place(0, classes[0][0] if classes else 0, 0, 0, 0.0, const)
        except _SearchBudgetExceeded:
            return None
        return np.asarray(tree.best_y, dtype=np.int64), max(tree.best_val, tree.pruned), tree.nodes

    def residual(self, res_cols: np.ndarray, ub: np.ndarray, og: np.ndarray, lo_rows: np.ndarray,
                 up_rows: np.ndarray, cap: np.ndarray, const: float, ws: np.ndarray, time_limit: float | None
                 ) -> tuple[SolveResult, np.ndarray | None]:
        """The residual problem over the aggregated columns ``res_cols`` (classes ``og``): counts ``y <= ub``,
        ``lo_rows <= sum_c y[class, c] <= up_rows``, capacities ``cap``; solved by ``rb`` with the warm start ``ws``.

        ``form="integer"``: one integer count per aggregated column (symmetry-free; CP-SAT is fast on it);
        ``form="binary"``: one binary per (member group, option), the per-option bounds as ``option_count`` rows
        and the class lower bounds as ``class_count`` rows (HiGHS is much faster on this form, measured).
        Returns (result, counts per residual column or None)."""
        ast = self.agg.st
        agg = self.agg
        form = self.form
        m = res_cols.size
        gi = og.searchsorted(ast.group[res_cols])
        sub = LinearModel("mckp_residual", sense="maximize")
        if form == "integer":
            binary = bool(np.all(ub <= 1))
            sub.add_variables("x", m, kind="binary" if binary else "integer", lower=0.0, upper=ub.astype(np.float64))
            A1 = sp.csr_matrix((np.ones(m), (gi, np.arange(m))), shape=(og.size, m))
            sub.add_constraints("one_option", {"x": A1}, lower=np.where(lo_rows > 0, lo_rows, -np.inf),
                                upper=up_rows.astype(np.float64))
            W = ast.weights_csr(res_cols)
            val = ast.value[res_cols]
            start = ws.astype(np.float64)
            var_rc = np.arange(m)
        else:
            is_open = np.zeros(ast.G, dtype=bool)
            is_open[og] = True
            mem = is_open[agg.cls].nonzero()[0]
            mem = mem[np.lexsort((agg.rank[mem], agg.cls[mem]))]
            mpos = og.searchsorted(agg.cls[mem])  # open-class position of each member
            rcnt = np.bincount(gi, minlength=og.size)
            rstart = np.concatenate((_ZERO, rcnt.cumsum()[:-1]))
            mcnt = rcnt[mpos]
            tot = int(mcnt.sum())
            var_mem = np.arange(mem.size).repeat(mcnt)
            var_rc = (rstart[mpos] - mcnt.cumsum() + mcnt).repeat(mcnt) + np.arange(tot)
            sub.add_variables("x", tot, kind="binary")
            none_ok = lo_rows < up_rows - 0.5  # some member may choose nothing
            A1 = sp.csr_matrix((np.ones(tot), (var_mem, np.arange(tot))), shape=(mem.size, tot))
            sub.add_constraints("one_option", {"x": A1}, lower=np.where(none_ok[mpos], -np.inf, 1.0), upper=1.0)
            part = (none_ok & (lo_rows > 0)).nonzero()[0]
            if part.size:
                ppos = np.full(og.size, -1, dtype=np.int64)
                ppos[part] = np.arange(part.size)
                on = ppos[gi[var_rc]] >= 0
                Ac = sp.csr_matrix((np.ones(int(on.sum())), (ppos[gi[var_rc]][on], on.nonzero()[0])),
                                   shape=(part.size, tot))
                sub.add_constraints("class_count", {"x": Ac}, lower=lo_rows[part])
            lim = (ub < up_rows[gi]).nonzero()[0]
            if lim.size:
                lpos = np.full(m, -1, dtype=np.int64)
                lpos[lim] = np.arange(lim.size)
                on = lpos[var_rc] >= 0
                Ao = sp.csr_matrix((np.ones(int(on.sum())), (lpos[var_rc][on], on.nonzero()[0])),
                                   shape=(lim.size, tot))
                sub.add_constraints("option_count", {"x": Ao}, upper=ub[lim].astype(np.float64))
            W = ast.weights_csr(res_cols)[:, var_rc]
            val = ast.value[res_cols][var_rc]
            # warm start: the members of a class take the incumbent's counts in column order
            before = ws.cumsum() - ws - np.concatenate((_ZERO, ws.cumsum()))[rstart][gi]
            rk = agg.rank[mem][var_mem]
            start = ((rk >= before[var_rc]) & (rk < before[var_rc] + ws[var_rc])).astype(np.float64)
        if ast.K:
            sub.add_constraints("capacity", {"x": W}, upper=np.maximum(cap, 0.0), labels=ast.knap_labels)
        sub.set_objective({"x": val}, constant=const)
        extra: dict[str, Any] = {}
        if self.backend == "cpsat":
            # CP-SAT also stops at an absolute gap (default 1e-4 in objective units): make it match ours
            extra["absolute_gap_limit"] = 1e-9 * max(1.0, abs(const))
        # half our gap: the sub-solver measures its gap its own way (CP-SAT on a scaled integer objective), and its
        # proof at the full gap sometimes left ours just outside (FEASIBLE where HiGHS proves OPTIMAL)
        r = self.sub_solve(sub, self.backend, time_limit=time_limit, mip_rel_gap=self.gap_tol / 2, threads=self.threads,
                           seed=self.seed, warm_start=start, **extra)
        if not r.has_solution:
            return r, None
        return r, np.bincount(var_rc, weights=np.rint(r.x), minlength=m).astype(np.int64)


class _SearchBudgetExceeded(Exception):
    """Raised by :meth:`_SearchTree.place` past its node budget (the search gives up)."""


#: a choice of a class in the search: (loss, value, weights per row, most members, residual column or -1 for none)
_Choice = tuple[float, float, tuple[float, ...], int, int]


class _SearchTree:
    """The state of one :meth:`ResidualClosure.search`: the classes' sorted choices, the bounds' precomputed parts,
    the best value and counts found, the largest pruned bound, the capacity left and the counts on the path."""

    def __init__(self, classes: list[tuple[int, list[_Choice]]], rest: list[float], mw: list[list[tuple[float, ...]]],
                 restw: list[list[float]], lam: list[float], R: float, tol_rel: float, best_val: float,
                 best_y: list[int], capl: list[float], limit: int) -> None:
        self.classes, self.rest, self.mw, self.restw, self.lam, self.R = classes, rest, mw, restw, lam, R
        self.tol_rel, self.best_val, self.best_y, self.capl, self.limit = tol_rel, best_val, best_y, capl, limit
        self.K = len(capl)
        self.priced = [k for k in range(self.K) if lam[k] > 0]
        self.ctol = [1e-9 * max(1.0, abs(c)) for c in capl]
        self.y = [0] * len(best_y)
        self.pruned = -math.inf
        self.nodes = 0

    def _beaten(self, bound: float) -> bool:
        return bound <= self.best_val + self.tol_rel * max(abs(self.best_val), 1e-10)

    def place(self, o: int, left: int, pos: int, used: int, loss: float, val: float) -> None:
        """Place the ``left`` members of class ``o`` still to place, taking choices from position ``pos`` on
        (``used`` members already take the choice at ``pos``), then the next classes; ``loss`` / ``val`` so far.

        The hot loop of the search (tens of thousands of calls a simulation): :meth:`_beaten` is inlined and the
        loop invariants are bound to locals; the arithmetic is the same, in the same order."""
        classes = self.classes
        if o == len(classes):
            if val > self.best_val:
                self.best_val, self.best_y = val, self.y.copy()
            return
        if left == 0:
            self.place(o + 1, classes[o + 1][0] if o + 1 < len(classes) else 0, 0, 0, loss, val)
            return
        ch = classes[o][1]
        capl, y, ctol, priced, lam, tol_rel = self.capl, self.y, self.ctol, self.priced, self.lam, self.tol_rel
        base = self.R
        rest_next = self.rest[o + 1]
        krange = range(self.K)
        mwo, rw = self.mw[o], self.restw[o + 1]
        place = self.place
        # the last member of the class: go on with the next class directly (what place(o, 0, ...) does), or, after
        # the last class, compare with the best (what place(len(classes), ...) does)
        last = left == 1
        leaf = last and o + 1 == len(classes)
        m_next = classes[o + 1][0] if o + 1 < len(classes) else 0
        best = self.best_val
        thr = best + tol_rel * max(abs(best), 1e-10)  # _beaten's threshold, recomputed whenever best_val may move
        for p in range(pos, len(ch)):
            d, v, w, lim, col = ch[p]
            if p == pos and used >= lim:
                continue
            bound = base - (loss + left * d + rest_next)
            if bound <= thr:
                self.pruned = max(self.pruned, bound)
                break  # the later choices lose at least as much
            over = False
            for k in krange:
                if w[k] > capl[k] + ctol[k]:
                    over = True
                    break
            if over:
                continue
            if priced:
                waste = 0.0
                mwp = mwo[p]
                for k in priced:
                    unused = capl[k] - w[k] - (left - 1) * mwp[k] - rw[k]
                    if unused > 0:
                        waste += lam[k] * unused
                if waste > 0:
                    b2 = bound - waste
                    if b2 <= thr:
                        self.pruned = max(self.pruned, b2)
                        continue
            self.nodes += 1
            if self.nodes > self.limit:
                raise _SearchBudgetExceeded
            for k in krange:
                capl[k] -= w[k]
            if col >= 0:
                y[col] += 1
            if leaf:
                if val + v > self.best_val:
                    self.best_val, self.best_y = val + v, y.copy()
            elif last:
                if m_next:
                    place(o + 1, m_next, 0, 0, loss + d, val + v)
                else:
                    place(o + 2, classes[o + 2][0] if o + 2 < len(classes) else 0, 0, 0, loss + d, val + v)
            else:
                place(o, left - 1, p, used + 1 if p == pos else 1, loss + d, val + v)
            if col >= 0:
                y[col] -= 1
            for k in krange:
                capl[k] += w[k]
            if self.best_val != best:
                best = self.best_val
                thr = best + tol_rel * max(abs(best), 1e-10)
