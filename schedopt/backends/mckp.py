"""``mckp``: an exact solver for the one-configuration-per-job family (multiple-choice multi-knapsack).

The family (detected from the :class:`~schedopt.model.LinearModel` itself, never from ``meta`` alone)::

    max / min   sum_i v_i x_i + const
    s.t.        sum_{i in g} x_i <= 1          for every group g   (at-most-one rows: the GUB rows)
                sum_i W_ki x_i <= b_k          for k = 1..K        (knapsack rows, W >= 0, K <= 64)
                x_i in {0, 1}, some x_i fixed  (by bounds or single-column rows such as ``forced_config``)

Columns in no at-most-one row are free binaries (groups of one). The algorithm (``formulations/mckp.md``):

1. **presolve**: fixed columns are removed (their weight leaves the capacities, their value joins the constant);
   the other columns of a forced column's group, columns that cannot fit alone and columns whose value is not
   positive (in the maximisation form) are dropped: setting them to 0 never hurts.
2. **Lagrangian dual** over the K capacity prices ``lam >= 0``:
   ``L(lam) = lam.b + sum_g max(0, max_{i in g} v_i - lam.W_i)``, convex piecewise linear; for given prices every
   group picks its best column with numpy (``np.maximum.reduceat`` over the groups, stored contiguously). It is
   minimised exactly by Kelley's cutting-plane method with Wentges smoothing on a (K+1)-variable HiGHS LP. Every
   ``L(lam)`` is a valid bound; the minimum equals the LP relaxation's bound.
3. **repair**: the Lagrangian choice at the best prices is made feasible by switching, one over-used row at a
   time, the groups with the smallest loss per unit freed, then improved greedily with the remaining capacity;
   then a **local search** on the aggregated counts (:func:`local_search`: exchanges of up to three bundles of
   moves that keep every row within capacity), and when a gap is left, a few ms of iterated local search
   (:func:`kick_search`: random feasible moves to near-best options, then the local search again; the best kept):
   a feasible incumbent and a certificate (bound, gap).
4. **exact mode** (``exact=True``, the default, whenever the gap exceeds ``mip_rel_gap``): reduced-cost fixing
   removes every option whose Lagrangian reduced cost is worse than its group's best by more than the gap (it can
   be in no improving solution), fixes groups left with one option, and hands the residual problem to HiGHS
   through :func:`schedopt.solve` with the incumbent as warm start. OPTIMAL is returned only with a proof
   (bound within ``mip_rel_gap`` of the objective), FEASIBLE with the limit hit otherwise.

Identical groups (same multiset of (value, weights) columns) are first collapsed into classes with multiplicities
(:func:`aggregate`): the dual and the exact mode run on the classes (integer counts), the repair on the groups, and
the answer is disaggregated deterministically.

Backend options (``schedopt.solve(model, "mckp", exact=..., ...)``): ``exact`` (bool, default True),
``local_search`` (bool, default True), ``kick_seconds`` (0.03, 0.005 when ``mip_rel_gap < 1e-5``: time for
:func:`kick_search`, an iterated local search with random kicks run when the local search leaves a gap; 0 or ``local_search=False`` disables it), ``kicks`` (40), ``kick_size`` (3),
``residual_backend`` ("cpsat" when OR-Tools is installed, else "highs"), ``residual_form`` ("auto": "integer"
counts for CP-SAT, "binary" per-member variables otherwise), ``max_dual_iterations`` (500), ``dual_tolerance`` (1e-10, relative).
``mip_rel_gap=None`` means 1e-4 (HiGHS's default).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from ..errors import StructureError
from ..results import Limit, SolveResult, Termination, TerminationReason, Timings
from .base import Backend, Capabilities, SolveParams

if TYPE_CHECKING:
    from ..model import LinearModel

__all__ = ["MAX_KNAPSACK_ROWS", "Aggregate", "MckpBackend", "MckpStructure", "aggregate", "analyze", "detect_structure",
           "kick_search", "local_search"]

#: the largest number of knapsack rows the backend accepts (the dual has one price per row)
MAX_KNAPSACK_ROWS = 64
_TOL = 1e-9


# ---------------------------------------------------------------------------------------------- structure
@dataclass
class MckpStructure:
    """The model in multiple-choice knapsack form, presolved (internally always a maximisation).

    ``cols`` are the model columns that stay free, sorted by ``group`` (0..G-1, contiguous: ``starts``/``counts``);
    ``value`` their objective in the maximisation form; their knapsack weights are stored column-wise in ELL form:
    ``ri[i, j]`` / ``wt[i, j]`` is the j-th (row, weight) of column i (padding: row ``K``, weight 0); ``cap`` holds
    the capacities left after the forced columns; ``const`` the maximisation-form constant (forced values included).
    ``infeasible`` is a reason naming the row when the presolve proves the model infeasible.
    """

    maximize: bool
    n_cols: int
    gub_rows: np.ndarray
    knap_rows: np.ndarray
    knap_labels: list[str]
    forced: np.ndarray
    cols: np.ndarray
    group: np.ndarray
    starts: np.ndarray
    counts: np.ndarray
    value: np.ndarray
    ri: np.ndarray
    wt: np.ndarray
    cap: np.ndarray
    const: float
    infeasible: str | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    #: multiplicity of every group (an aggregated structure: a group stands for ``mult[g]`` identical groups)
    mult: np.ndarray | None = None

    @property
    def n(self) -> int:
        return int(self.cols.shape[0])

    @property
    def G(self) -> int:
        return int(self.starts.shape[0])

    @property
    def K(self) -> int:
        return int(self.cap.shape[0])

    def priced(self, lam_pad: np.ndarray, idx: np.ndarray | None = None) -> np.ndarray:
        """``lam . W_i`` for the columns ``idx`` (all when None); ``lam_pad`` has a trailing 0 for the padding."""
        ri = self.ri if idx is None else self.ri[idx]
        wt = self.wt if idx is None else self.wt[idx]
        out = lam_pad[ri[:, 0]] * wt[:, 0]
        for j in range(1, ri.shape[1]):
            out += lam_pad[ri[:, j]] * wt[:, j]
        return out

    def dense(self, idx: np.ndarray) -> np.ndarray:
        """Dense (len(idx) x K) weights of the columns ``idx`` (-1: the empty option, all zero)."""
        out = np.zeros((idx.size, self.K + 1))
        ok = np.flatnonzero(idx >= 0)
        if ok.size:
            out[ok[:, None], self.ri[idx[ok]]] = self.wt[idx[ok]]
        return out[:, : self.K]

    def usage(self, sel: np.ndarray, times: np.ndarray | None = None) -> np.ndarray:
        """Total weight per knapsack row of the columns ``sel`` (each taken ``times`` times when given)."""
        if not sel.size:
            return np.zeros(self.K)
        w = self.wt[sel] if times is None else self.wt[sel] * times[:, None]
        if w.shape[1] == 1:
            return np.bincount(self.ri[sel, 0], weights=w[:, 0], minlength=self.K + 1)[: self.K]
        return np.bincount(self.ri[sel].ravel(), weights=w.ravel(), minlength=self.K + 1)[: self.K]

    def weights_csr(self, idx: np.ndarray) -> sp.csr_matrix:
        """The (K x len(idx)) knapsack weights of the columns ``idx``."""
        ri, wt = self.ri[idx], self.wt[idx]
        cc = np.repeat(np.arange(idx.size), ri.shape[1])
        keep = ri.ravel() < self.K
        return sp.csr_matrix((wt.ravel()[keep], (ri.ravel()[keep], cc[keep])), shape=(self.K, idx.size))


def _row_label(model: LinearModel, r: int) -> str:
    for f in model.families.values():
        if f.start <= r < f.stop:
            return f.label_of(r - f.start)
    return f"row {r}"


def _col_label(model: LinearModel, j: int) -> str:
    b, flat = model.block_of(int(j))
    return b.label_of(flat)


@dataclass
class _Detected:
    lower: np.ndarray
    upper: np.ndarray
    col_gub: np.ndarray  # GUB index per column or -1
    gub_rows: np.ndarray
    knap_rows: np.ndarray
    infeasible: str | None
    row_of: np.ndarray  # row index of every nonzero of A (CSR order)


def _detect(model: LinearModel) -> _Detected:
    """Classify the rows and columns of ``model``; raise :class:`StructureError` when it is outside the family."""
    arr = model.to_arrays()
    n = arr.num_cols
    if n and not bool(np.all(arr.integrality == 1)):
        j = int(np.flatnonzero(arr.integrality != 1)[0])
        b, _ = model.block_of(j)
        raise StructureError(
            f"column {_col_label(model, j)} is continuous (block {b.name!r}); the mckp family needs every column binary"
        )
    lo = arr.col_lower.copy()
    up = arr.col_upper.copy()
    bad = (lo < -_TOL) | (up > 1 + _TOL)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise StructureError(
            f"column {_col_label(model, j)} is integer with bounds [{lo[j]:g}, {up[j]:g}]; the mckp family needs binaries"
        )
    A = arr.A
    rl, ru = arr.row_lower, arr.row_upper
    nnz = np.diff(A.indptr)
    row_of = np.repeat(np.arange(A.shape[0]), nnz)
    infeasible: str | None = None
    # empty rows: satisfied or infeasible
    empty = np.flatnonzero((nnz == 0) & ((rl > _TOL) | (ru < -_TOL)))
    if empty.size:
        infeasible = f"row {_row_label(model, int(empty[0]))} has no columns and bounds [{rl[empty[0]]:g}, {ru[empty[0]]:g}]"
    # single-column rows are bounds on a binary
    single = np.flatnonzero(nnz == 1)
    if single.size:
        a = A.data[A.indptr[single]]
        j = A.indices[A.indptr[single]]
        l_, u_ = rl[single], ru[single]
        tol = _TOL * np.maximum(1.0, np.abs(a))
        ok0 = (l_ <= tol) & (u_ >= -tol)
        ok1 = (l_ <= a + tol) & (u_ >= a - tol)
        np.maximum.at(lo, j, np.where(ok0, 0.0, 1.0))
        np.minimum.at(up, j, np.where(ok1, 1.0, 0.0))
        none = np.flatnonzero(~ok0 & ~ok1)
        if none.size and infeasible is None:
            infeasible = f"row {_row_label(model, int(single[none[0]]))} admits neither 0 nor 1 for its binary column"
    clash = np.flatnonzero(lo > up)
    if clash.size and infeasible is None:
        infeasible = f"column {_col_label(model, int(clash[0]))} is forced to 1 and to 0 (bounds and single-column rows)"
    multi = np.flatnonzero(nnz >= 2)
    gub_rows = np.zeros(0, dtype=np.int64)
    knap_rows = np.zeros(0, dtype=np.int64)
    col_gub = np.full(n, -1, dtype=np.int64)
    if multi.size:
        starts = A.indptr[multi]
        rmin = np.minimum.reduceat(A.data, A.indptr[:-1][nnz > 0])
        rmax = np.maximum.reduceat(A.data, A.indptr[:-1][nnz > 0])
        pos_of = np.cumsum(nnz > 0) - 1
        rmin, rmax = rmin[pos_of[multi]], rmax[pos_of[multi]]
        neg = np.flatnonzero(rmin < 0)
        if neg.size:
            r = int(multi[neg[0]])
            s, e = A.indptr[r], A.indptr[r + 1]
            k = int(np.argmin(A.data[s:e]))
            raise StructureError(
                f"row {_row_label(model, r)} has a negative coefficient ({A.data[s + k]:g} on column "
                f"{_col_label(model, int(A.indices[s + k]))}); knapsack rows need nonnegative coefficients"
            )
        l_, u_ = rl[multi], ru[multi]
        covering = np.flatnonzero(l_ > _TOL * np.maximum(1.0, np.abs(l_)))
        if covering.size:
            r = int(multi[covering[0]])
            kind = "an equality row" if ru[r] == rl[r] else "a covering row (lower bound > 0)"
            raise StructureError(
                f"row {_row_label(model, r)} is {kind} with bounds [{rl[r]:g}, {ru[r]:g}]; the mckp family allows only "
                "<= rows with nonnegative coefficients (at-most-one rows and knapsack rows)"
            )
        del starts
        finite = np.isfinite(u_)
        # a row whose total weight fits its capacity never binds
        tot = np.add.reduceat(A.data, A.indptr[:-1][nnz > 0])[pos_of[multi]]
        redundant = ~finite | (tot <= u_ + _TOL)
        if infeasible is None:
            below = np.flatnonzero(u_ < -_TOL)
            if below.size:
                r = int(multi[below[0]])
                infeasible = f"row {_row_label(model, r)} needs a nonnegative sum <= {ru[r]:g}"
        ratio = np.where(rmax > 0, u_ / np.where(rmax > 0, rmax, 1.0), np.inf)
        eligible = (~redundant) & (rmin == rmax) & (rmax > 0) & (ratio >= 1 - _TOL) & (ratio < 2 - _TOL)
        elig_rows = multi[eligible]
        # GUB rows: a maximal set of disjoint at-most-one rows, in row order
        is_elig = np.zeros(A.shape[0], dtype=bool)
        is_elig[elig_rows] = True
        ecols = A.indices[is_elig[row_of]]
        cnt = np.bincount(ecols, minlength=n) if ecols.size else np.zeros(n, dtype=np.int64)
        overlap_note = ""
        if ecols.size and cnt.max() > 1:
            sub = A[elig_rows]
            chosen = np.zeros(elig_rows.size, dtype=bool)
            covered = np.zeros(n, dtype=bool)
            first_clash: tuple[int, int, int] | None = None
            owner = np.full(n, -1, dtype=np.int64)
            for i in range(elig_rows.size):  # only when at-most-one rows overlap (rare)
                cols_i = sub.indices[sub.indptr[i] : sub.indptr[i + 1]]
                hit = covered[cols_i]
                if hit.any():
                    if first_clash is None:
                        c0 = int(cols_i[np.argmax(hit)])
                        first_clash = (c0, int(owner[c0]), int(elig_rows[i]))
                    continue
                chosen[i] = True
                covered[cols_i] = True
                owner[cols_i] = elig_rows[i]
            gub_rows = elig_rows[chosen]
            assert first_clash is not None
            c0, r1, r2 = first_clash
            overlap_note = (
                f"column {_col_label(model, c0)} lies in two at-most-one rows ({_row_label(model, r1)} and "
                f"{_row_label(model, r2)}); overlapping at-most-one rows are kept as knapsack rows"
            )
        else:
            gub_rows = elig_rows
        is_gub = np.zeros(A.shape[0], dtype=bool)
        is_gub[gub_rows] = True
        knap_rows = multi[(~redundant) & ~is_gub[multi]]
        if knap_rows.size > MAX_KNAPSACK_ROWS:
            why = f"{knap_rows.size} knapsack rows (more than MAX_KNAPSACK_ROWS={MAX_KNAPSACK_ROWS})"
            raise StructureError(f"{overlap_note}, which leaves {why}" if overlap_note else f"the model has {why}")
        if gub_rows.size:
            gidx = np.full(A.shape[0], -1, dtype=np.int64)
            gidx[gub_rows] = np.arange(gub_rows.size)
            gm = gidx[row_of]
            on = gm >= 0
            col_gub[A.indices[on]] = gm[on]
    return _Detected(lo, up, col_gub, gub_rows, knap_rows, infeasible, row_of)


def _presolve(model: LinearModel, d: _Detected) -> MckpStructure:
    arr = model.to_arrays()
    n = arr.num_cols
    sign = 1.0 if arr.maximize else -1.0
    A = arr.A
    K = int(d.knap_rows.size)
    kpos = np.full(A.shape[0], -1, dtype=np.int64)
    kpos[d.knap_rows] = np.arange(K)
    km = kpos[d.row_of]
    on = km >= 0
    er, ec, ew = km[on], A.indices[on].astype(np.int64), A.data[on]
    capfull = arr.row_upper[d.knap_rows].astype(np.float64)
    labels = [_row_label(model, int(r)) for r in d.knap_rows]
    infeasible = d.infeasible
    fixed1 = d.lower >= 0.5
    fixed0 = d.upper < 0.5
    forced = np.flatnonzero(fixed1)
    # two forced columns in one at-most-one row
    fg = d.col_gub[forced]
    fg = fg[fg >= 0]
    if fg.size and infeasible is None:
        c = np.bincount(fg)
        if c.max() > 1:
            g = int(np.argmax(c))
            infeasible = f"row {_row_label(model, int(d.gub_rows[g]))} has {int(c[g])} forced columns but allows one"
    if K and forced.size:
        use = np.bincount(er, weights=ew * fixed1[ec], minlength=K)[:K]
    else:
        use = np.zeros(K)
    cap = capfull - use
    over = np.flatnonzero(cap < -_TOL * np.maximum(1.0, np.abs(capfull)))
    if over.size and infeasible is None:
        k = int(over[0])
        infeasible = f"row {labels[k]}: the forced columns need {use[k]:g} but the capacity is {capfull[k]:g}"
    cap = np.maximum(cap, 0.0)
    val = sign * arr.c
    const = sign * (arr.constant + float(arr.c[forced].sum()))
    keep = ~fixed0 & ~fixed1 & (val > 0)
    fixed_groups = np.unique(fg)
    if fixed_groups.size:
        in_fixed = np.zeros(max(int(d.gub_rows.size), 1), dtype=bool)
        in_fixed[fixed_groups] = True
        keep &= ~((d.col_gub >= 0) & in_fixed[np.maximum(d.col_gub, 0)])
    n_nonpos = int(np.count_nonzero(val <= 0))
    if ew.size:
        # a column that does not fit alone can never be chosen
        tb = ew > cap[er] + _TOL * np.maximum(1.0, cap[er])
        keep[ec[tb]] = False
    cols = np.flatnonzero(keep)
    gkey = d.col_gub[cols].copy()
    free = gkey < 0
    gkey[free] = d.gub_rows.size + np.arange(int(free.sum()))
    if gkey.size and np.any(gkey[1:] < gkey[:-1]):
        order = np.argsort(gkey, kind="stable")
        cols, gkey = cols[order], gkey[order]
    if cols.size:
        newg = np.r_[True, gkey[1:] != gkey[:-1]]
        starts = np.flatnonzero(newg)
        group = np.cumsum(newg) - 1
    else:
        starts = np.zeros(0, dtype=np.int64)
        group = np.zeros(0, dtype=np.int64)
    counts = np.diff(np.r_[starts, cols.size]).astype(np.int64)
    # ELL weights of the kept columns
    pos = np.full(n, -1, dtype=np.int64)
    pos[cols] = np.arange(cols.size)
    ic = pos[ec]
    if cols.size < n:
        ok = ic >= 0
        er, ic, ew = er[ok], ic[ok], ew[ok]
    per = np.bincount(ic, minlength=cols.size) if ic.size else np.zeros(cols.size, dtype=np.int64)
    mm = max(1, int(per.max(initial=0)))
    ri = np.full((cols.size, mm), K, dtype=np.int64)
    wt = np.zeros((cols.size, mm))
    if ic.size:
        if mm == 1:
            ri[ic, 0] = er
            wt[ic, 0] = ew
        else:
            o = np.argsort(ic, kind="stable")
            ic_s = ic[o]
            first = np.searchsorted(ic_s, ic_s, side="left")
            slot = np.arange(ic_s.size) - first
            ri[ic_s, slot] = er[o]
            wt[ic_s, slot] = ew[o]
    st = MckpStructure(
        maximize=arr.maximize,
        n_cols=n,
        gub_rows=d.gub_rows,
        knap_rows=d.knap_rows,
        knap_labels=labels,
        forced=forced,
        cols=cols,
        group=np.asarray(group, dtype=np.int64),
        starts=np.asarray(starts, dtype=np.int64),
        counts=counts,
        value=val[cols],
        ri=ri,
        wt=wt,
        cap=cap,
        const=const,
        infeasible=infeasible,
        stats={
            "columns": n,
            "columns_forced": int(forced.size),
            "columns_presolved": int(cols.size),
            "columns_dropped_nonpositive": n_nonpos,
            "groups": int(starts.size),
            "knapsack_rows": K,
            "gub_rows": int(d.gub_rows.size),
        },
    )
    return st


def detect_structure(model: LinearModel) -> None:
    """Raise :class:`~schedopt.errors.StructureError` (with the family / row to blame) when ``model`` is outside
    the one-configuration-per-job family; return ``None`` when it is inside."""
    analyze(model)


def analyze(model: LinearModel) -> MckpStructure:
    """The presolved :class:`MckpStructure` of ``model`` (cached until the model changes); raises
    :class:`~schedopt.errors.StructureError` when the model is outside the family."""
    arr = model.to_arrays()
    cached = getattr(model, "_mckp_cache", None)
    if cached is not None and cached[0] is arr:
        if isinstance(cached[1], StructureError):
            raise cached[1]
        return cached[1]
    t0 = time.perf_counter()
    try:
        st = _presolve(model, _detect(model))
    except StructureError as exc:
        model._mckp_cache = (arr, exc)  # type: ignore[attr-defined]
        raise
    st.stats["detect_seconds"] = time.perf_counter() - t0
    model._mckp_cache = (arr, st)  # type: ignore[attr-defined]
    return st


# ---------------------------------------------------------------------------------------------- aggregation
@dataclass
class Aggregate:
    """Identical groups collapsed: ``st`` has one group per *class* (``st.mult[c]`` identical groups of the
    original structure), its columns those of the class's first group, sorted by their (value, weights) key.

    Original group ``g`` is the ``rank[g]``-th member of class ``cls[g]``; ``sorted_cols`` lists the original
    columns group by group, each group's columns in key order (so position ``p`` of any member is aggregated
    column ``st.starts[cls] + p``); ``col_map`` maps an original column to its aggregated column."""

    st: MckpStructure
    cls: np.ndarray
    rank: np.ndarray
    sorted_cols: np.ndarray
    col_map: np.ndarray
    ostarts: np.ndarray  #: start of every original group in ``sorted_cols``

    @property
    def classes(self) -> int:
        return self.st.G

    def expand(self, choice: np.ndarray) -> np.ndarray:
        """An aggregated choice (one column or -1 per class) given to every member: one column per group."""
        c = choice[self.cls]
        on = c >= 0
        out = np.full(self.cls.size, -1, dtype=np.int64)
        out[on] = self.sorted_cols[self.ostarts[on] + (c[on] - self.st.starts[self.cls[on]])]
        return out

    def counts(self, choice: np.ndarray) -> np.ndarray:
        """How many groups of each class take each aggregated column under the original ``choice``."""
        sel = choice[choice >= 0]
        return np.bincount(self.col_map[sel], minlength=self.st.n).astype(np.int64)

    def disaggregate(self, y: np.ndarray) -> np.ndarray:
        """Integer counts per aggregated column -> one column (or -1) per original group, deterministically: the
        members of a class, in group order, take the class's columns in column order, ``y[c]`` each."""
        a = self.st
        y = np.asarray(np.rint(y), dtype=np.int64)
        E = np.cumsum(y)
        base = np.r_[0, E][a.starts]  # counts before each class
        tot = np.add.reduceat(y, a.starts) if a.n else np.zeros(0, np.int64)
        c = self.cls
        target = base[c] + self.rank
        col = np.searchsorted(E, target, side="right")
        on = self.rank < tot[c]
        out = np.full(c.size, -1, dtype=np.int64)
        g = np.flatnonzero(on)
        out[g] = self.sorted_cols[self.ostarts[g] + (col[g] - a.starts[c[g]])]
        return out


def aggregate(st: MckpStructure) -> Aggregate:
    """Collapse identical groups of ``st`` (same multiset of (value, knapsack weights) columns; forced columns have
    already left the structure) into classes with multiplicities, vectorised: column keys by ``lexsort``, each
    group's sorted key sequence hashed, equal hashes verified element by element (a collision only splits)."""
    cached = getattr(st, "_aggregate", None)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    n, G = st.n, st.G
    if n == 0:
        z = np.zeros(0, np.int64)
        a = Aggregate(st, z, z, z, z, st.starts)
        st._aggregate = a  # type: ignore[attr-defined]
        return a
    # 1. a key id per distinct (value, ri, wt) column
    keys = [st.wt[:, j] for j in range(st.wt.shape[1] - 1, -1, -1)]
    keys += [st.ri[:, j] for j in range(st.ri.shape[1] - 1, -1, -1)]
    keys.append(st.value)
    o = np.lexsort(keys)
    new = np.ones(n, dtype=bool)
    if n > 1:
        diff = st.value[o[1:]] != st.value[o[:-1]]
        for j in range(st.ri.shape[1]):
            diff |= st.ri[o[1:], j] != st.ri[o[:-1], j]
            diff |= st.wt[o[1:], j] != st.wt[o[:-1], j]
        new[1:] = diff
    kid = np.empty(n, dtype=np.int64)
    kid[o] = np.cumsum(new) - 1
    # 2. each group's columns in key order; hash the key sequence
    sc = np.lexsort((kid, st.group))
    pos = np.arange(n) - st.starts[st.group[sc]]
    ks = kid[sc]
    M = int(st.counts.max())
    with np.errstate(over="ignore"):
        pw = np.cumprod(np.full(M, 0x9E3779B97F4A7C15, dtype=np.uint64), dtype=np.uint64)
        h = np.add.reduceat((ks.astype(np.uint64) + np.uint64(1)) * pw[pos], st.starts)
    og = np.lexsort((np.arange(G), h, st.counts))
    newc = np.r_[True, (h[og[1:]] != h[og[:-1]]) | (st.counts[og[1:]] != st.counts[og[:-1]])]
    cls = np.empty(G, dtype=np.int64)
    cls[og] = np.cumsum(newc) - 1
    rep = og[newc]  # first (lowest) group of each class
    # 3. verify (a hash collision makes its groups classes of their own)
    g_of = st.group[sc]
    mism = ks != ks[st.starts[rep[cls[g_of]]] + pos]
    if mism.any():
        bad = np.unique(g_of[mism])
        cls[bad] = cls.max() + 1 + np.arange(bad.size)
        _, cls = np.unique(cls, return_inverse=True)
        C = int(cls.max()) + 1
        rep = np.full(C, G, dtype=np.int64)
        np.minimum.at(rep, cls, np.arange(G))
    C = rep.size
    mult = np.bincount(cls, minlength=C).astype(np.int64)
    members = np.lexsort((np.arange(G), cls))
    cstart = np.r_[0, np.cumsum(mult)[:-1]]
    rank = np.empty(G, dtype=np.int64)
    rank[members] = np.arange(G) - cstart[cls[members]]
    # 4. the aggregated structure: the representative groups' columns, in key order
    cnt = st.counts[rep]
    astarts = np.r_[0, np.cumsum(cnt)[:-1]].astype(np.int64)
    tot = int(cnt.sum())
    sel = sc[np.repeat(st.starts[rep] - astarts, cnt) + np.arange(tot)]
    agroup = np.repeat(np.arange(C), cnt)
    col_map = np.empty(n, dtype=np.int64)
    col_map[sc] = astarts[cls[g_of]] + pos
    ast = MckpStructure(
        maximize=st.maximize, n_cols=st.n_cols, gub_rows=st.gub_rows, knap_rows=st.knap_rows,
        knap_labels=st.knap_labels, forced=st.forced, cols=st.cols[sel], group=agroup, starts=astarts,
        counts=cnt.astype(np.int64), value=st.value[sel], ri=st.ri[sel], wt=st.wt[sel], cap=st.cap, const=st.const,
        infeasible=st.infeasible, stats={}, mult=mult,
    )
    a = Aggregate(ast, cls, rank, sc, col_map, st.starts)
    st._aggregate = a  # type: ignore[attr-defined]
    return a


# ---------------------------------------------------------------------------------------------- algorithm
@dataclass
class _Oracle:
    lam: np.ndarray
    L: float
    s: np.ndarray  # subgradient b - W x(lam)
    choice: np.ndarray  # chosen column per group, -1 for none


class _ColSet:
    """A subset of the columns (whole groups' worth or a screened part) laid out for fast group maxima: a padded
    (groups x slots) array and ``argmax(axis=1)`` when the groups are about equally long, ``reduceat`` otherwise."""

    def __init__(self, st: MckpStructure, idx: np.ndarray | None = None) -> None:
        idx = np.arange(st.n) if idx is None else idx
        self.idx = idx
        g = st.group[idx]
        if idx.size:
            newg = np.r_[True, g[1:] != g[:-1]]
            starts = np.flatnonzero(newg)
        else:
            starts = np.zeros(0, dtype=np.int64)
        counts = np.diff(np.r_[starts, idx.size]).astype(np.int64)
        self.gid = g[starts]
        self.starts, self.counts = starts, counts
        self.v = st.value[idx]
        self.ri, self.wt = st.ri[idx], st.wt[idx]
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
            gl = np.repeat(np.arange(Gs), counts)
            slot = np.arange(idx.size) - np.repeat(starts, counts)
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
        hit = np.flatnonzero(rc >= np.repeat(gmax, self.counts))
        gl = np.repeat(np.arange(self.starts.size), self.counts)[hit]
        first = hit[np.r_[True, gl[1:] != gl[:-1]]]
        return gmax, self.idx[first]


class _Master:
    """Kelley's master LP: min eta s.t. eta >= L_j + s_j.(lam - lam_j), lo <= lam <= hi."""

    def __init__(self, lam_max: np.ndarray) -> None:
        import highspy

        self.K = int(lam_max.size)
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("presolve", "off")
        inf = highspy.kHighsInf
        cost = np.r_[np.zeros(self.K), 1.0]
        lower = np.r_[np.zeros(self.K), -inf]
        upper = np.r_[lam_max, inf]
        h.addCols(self.K + 1, cost, lower, upper, 0, np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0))
        self.h = h
        self.inf = inf
        self.idx = np.arange(self.K + 1, dtype=np.int32)
        self.kidx = np.arange(self.K, dtype=np.int32)

    def set_box(self, lo: np.ndarray, hi: np.ndarray) -> None:
        self.h.changeColsBounds(self.K, self.kidx, lo, hi)

    def add_cut(self, o: _Oracle) -> None:
        vals = np.r_[-o.s, 1.0]
        self.h.addRow(float(o.L - o.s @ o.lam), self.inf, self.K + 1, self.idx, vals)

    def solve(self) -> tuple[np.ndarray, float]:
        self.h.run()
        x = np.asarray(self.h.getSolution().col_value, dtype=np.float64)
        return np.maximum(x[: self.K], 0.0), float(x[self.K])


class _Solver:
    def __init__(self, st: MckpStructure, params: SolveParams, t_start: float) -> None:
        self.st = st
        self.params = params
        self.deadline = t_start + params.time_limit_or_inf
        self.v = st.value
        self.n, self.G, self.K = st.n, st.G, st.K
        self.mult = st.mult
        self.oracle_calls = 0
        self.oracle_columns = 0

    def time_left(self) -> float:
        return self.deadline - time.perf_counter()

    # ---- Lagrangian oracle
    def oracle(self, cs: _ColSet, lam: np.ndarray, cap: np.ndarray | None = None) -> _Oracle:
        st = self.st
        cap = st.cap if cap is None else cap
        self.oracle_calls += 1
        self.oracle_columns += cs.idx.size
        gmax, best = cs.evaluate(np.r_[lam, 0.0])
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
        return _Oracle(lam, L, s, choice)

    def full_oracle(self, lam: np.ndarray) -> tuple[_Oracle, np.ndarray, np.ndarray]:
        """The exact oracle over every column, with the reduced values and the group maxima (for the fixing)."""
        st = self.st
        self.oracle_calls += 1
        self.oracle_columns += st.n
        rc = self.v - st.priced(np.r_[lam, 0.0])
        if not st.n:
            return _Oracle(lam, float(lam @ st.cap), st.cap.copy(), np.zeros(0, np.int64)), rc, np.zeros(0)
        gmax = np.maximum.reduceat(rc, st.starts)
        hit = np.flatnonzero(rc >= gmax[st.group])
        gh = st.group[hit]
        first = hit[np.r_[True, gh[1:] != gh[:-1]]]
        pos = gmax > 0
        choice = np.where(pos, first, -1)
        if self.mult is None:
            L = float(lam @ st.cap + gmax[pos].sum())
            s = st.cap - st.usage(first[pos])
        else:
            L = float(lam @ st.cap + gmax[pos] @ self.mult[pos])
            s = st.cap - st.usage(first[pos], self.mult[pos])
        return _Oracle(lam, L, s, choice), rc, gmax

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
        ub = self.v - st.priced(np.r_[lo, 0.0])
        rc_hi = self.v - st.priced(np.r_[hi, 0.0])
        lbg = np.maximum(np.maximum.reduceat(rc_hi, st.starts), 0.0)
        tol = 1e-9 * (np.abs(self.v) + 1.0)
        return np.flatnonzero(ub >= lbg[st.group] - tol)

    def _kelley(self, cs: _ColSet, master: _Master, best: _Oracle, tol: float, max_it: int,
                stop_gap: float, cap: np.ndarray | None = None) -> tuple[_Oracle, float, int]:
        """Kelley's method with Wentges smoothing (queries stay within the master's box)."""
        center = best.lam
        alpha = 0.5
        lb = -math.inf
        it = 0
        scale = max(1.0, abs(best.L) + abs(self.st.const))
        while it < max_it:
            lam_m, eta = master.solve()
            lb = eta
            if best.L - lb <= max(tol, stop_gap) * scale or self.time_left() <= 0:
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

    def _sample_prices(self, lmax: np.ndarray, tol: float) -> np.ndarray:
        """Prices of a random sample of the groups with proportionally scaled capacities (a warm start)."""
        m = min(max(300, self.G // 20), self.G)
        rng = np.random.default_rng(self.params.seed)
        gs = np.sort(rng.choice(self.G, m, replace=False))
        cs = _ColSet(self.st, self._cols_of_groups(gs, full=True))
        cap = self.st.cap * (m / self.G if self.mult is None else self.mult[gs].sum() / self.mult.sum())
        master = _Master(lmax)
        o = self.oracle(cs, np.zeros(self.K), cap)
        master.add_cut(o)
        best, _lb, it = self._kelley(cs, master, o, max(tol, 1e-7), 200, 0.0, cap)
        self.sample_iterations = it + 1
        return best.lam

    def dual(self) -> tuple[_Oracle, np.ndarray, np.ndarray, int]:
        """Minimise L over lam >= 0: the final exact oracle at the best prices (its L is the bound), the reduced
        values and group maxima there, and the number of oracle calls.

        Large instances start from the prices of a random sample of groups; then Kelley's method runs on the
        columns that can win for prices in a box around the current prices (``screen``: exact there); the box
        grows until the best prices lie inside it, not on a face."""
        K = self.K
        opts = self.params.options
        tol = float(opts.get("dual_tolerance", 1e-10))
        max_it = int(opts.get("max_dual_iterations", 500))
        o0, rc0, g0 = self.full_oracle(np.zeros(K))
        self.pool = _ColSet(self.st)
        if K == 0 or o0.s.min(initial=0.0) >= 0:
            return o0, rc0, g0, 1  # lam = 0 is optimal: its choice fits (complementary slackness holds)
        lmax = self.lam_max()
        master = _Master(lmax)
        master.add_cut(o0)
        best = o0
        it = 1
        if self.G >= 600 and self.n >= 20000:
            lam_c = self._sample_prices(lmax, tol)
            width = 0.25
        else:
            lam_c = None
            width = math.inf
        while True:
            if lam_c is None or math.isinf(width):
                lo, hi = np.zeros(K), lmax
                cs = self.pool
            else:
                r = width * lam_c + 1e-3 * lmax
                lo, hi = np.maximum(lam_c - r, 0.0), np.minimum(lam_c + r, lmax)
                cs = _ColSet(self.st, self.screen(lo, hi))
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
            best, _lb, k = self._kelley(cs, master, best, tol, max(max_it - it, 1), 0.0)
            it += k
            lam = best.lam
            eps = 1e-9 * (lmax + 1.0)
            on_face = ((lam <= lo + eps) & (lo > 0)) | ((lam >= hi - eps) & (hi < lmax))
            self.pool = cs
            if not on_face.any() or it >= max_it or self.time_left() <= 0:
                break
            lam_c = lam
            width *= 3
        final, rc, gmax = self.full_oracle(best.lam)
        return final, rc, gmax, it + 1

    # ---- helpers on group choices
    def value_of(self, choice: np.ndarray) -> float:
        sel = choice[choice >= 0]
        return float(self.v[sel].sum()) + self.st.const

    def usage_of(self, choice: np.ndarray) -> np.ndarray:
        return self.st.usage(choice[choice >= 0])

    def _cols_of_groups(self, gs: np.ndarray, full: bool = False) -> np.ndarray:
        """The columns of the groups ``gs`` (sorted): all of them, or those in the working pool."""
        if full or self.pool.idx.size == self.n:
            starts, cnt = self.st.starts[gs], self.st.counts[gs]
            base_idx = None
        else:
            p = self.pool
            loc = np.minimum(np.searchsorted(p.gid, gs), max(p.gid.size - 1, 0))
            here = p.gid[loc] == gs if p.gid.size else np.zeros(gs.size, dtype=bool)
            starts = p.starts[loc]
            cnt = np.where(here, p.counts[loc], 0)
            base_idx = p.idx
        tot = int(cnt.sum())
        if tot == 0:
            return np.zeros(0, dtype=np.int64)
        out = np.repeat(starts - np.cumsum(cnt) + cnt, cnt) + np.arange(tot)
        return out if base_idx is None else base_idx[out]

    def _weight_on(self, idx: np.ndarray, k: int) -> np.ndarray:
        return ((self.st.ri[idx] == k) * self.st.wt[idx]).sum(axis=1)

    def repair(self, choice: np.ndarray, lam: np.ndarray) -> np.ndarray:
        """A feasible choice near ``choice``: switch groups off the over-used rows (least loss per unit freed,
        other rows priced at ``lam``), then upgrade groups greedily with the capacity left."""
        st = self.st
        choice = choice.copy()
        K = self.K
        if K == 0:
            return self.improve(choice)
        cap = st.cap
        captol = _TOL * np.maximum(1.0, cap)
        usage = self.usage_of(choice)
        for it in range(200):
            over = usage - cap
            viol = over > captol
            if not viol.any():
                break
            pure = it >= 8  # after a few rounds only moves that raise no row at all
            k = int(np.argmax(np.where(viol, over / np.maximum(cap, 1.0), -np.inf)))
            chosen = np.flatnonzero(choice >= 0)
            gs = chosen[self._weight_on(choice[chosen], k) > 0]
            cur = choice[gs]
            Dcur = st.dense(cur)
            cc = self._cols_of_groups(gs)
            gi = np.searchsorted(gs, st.group[cc])
            f = self._weight_on(cc, k) < Dcur[gi, k] - captol[k]
            cc, gi = cc[f], gi[f]
            cand_g = np.r_[gi, np.arange(gs.size)]
            cand_c = np.r_[cc, np.full(gs.size, -1)]
            D = st.dense(cand_c) - Dcur[cand_g]
            slack = np.maximum(cap - usage, 0.0)
            lim = np.where(viol | pure, 0.0, slack) + captol
            other = np.delete(np.arange(K), k)
            ok = np.all(D[:, other] <= lim[other], axis=1) if other.size else np.ones(D.shape[0], dtype=bool)
            cand_g, cand_c, D = cand_g[ok], cand_c[ok], D[ok]
            vcur = self.v[cur[cand_g]]
            valt = np.where(cand_c >= 0, self.v[np.maximum(cand_c, 0)], 0.0)
            lam_o = lam.copy()
            lam_o[k] = 0.0
            score = ((vcur - valt) + D @ lam_o) / (-D[:, k])
            o = np.lexsort((score, cand_g))
            firsts = o[np.r_[True, cand_g[o][1:] != cand_g[o][:-1]]]
            o2 = firsts[np.argsort(score[firsts], kind="stable")]
            freed = np.cumsum(-D[o2, k])
            p = int(np.searchsorted(freed, over[k] - captol[k])) + 1
            if not pure:
                inc = np.cumsum(np.maximum(D[o2], 0.0), axis=0)
                bad = np.any(inc > slack + captol, axis=1)
                if bad.any():
                    p = min(p, max(1, int(np.argmax(bad))))
            take = o2[:p]
            choice[gs[cand_g[take]]] = cand_c[take]
            usage = self.usage_of(choice)
        return self.improve(choice)

    def improve(self, choice: np.ndarray) -> np.ndarray:
        """Greedy upgrades with the capacity left (each accepted batch keeps every row within capacity)."""
        st = self.st
        choice = choice.copy()
        K = self.K
        cap = st.cap
        captol = _TOL * np.maximum(1.0, cap)
        usage = self.usage_of(choice)
        Wcur = np.zeros((self.G, K + 1))
        on = np.flatnonzero(choice >= 0)
        Wcur[on, :K] = st.dense(choice[on])
        vcur = np.where(choice >= 0, self.v[np.maximum(choice, 0)], 0.0)
        mark = np.zeros(self.n, dtype=bool)
        mark[self.pool.idx] = True
        mark[choice[choice >= 0]] = True
        cand = np.flatnonzero(mark)
        for _ in range(100):
            if not cand.size or self.time_left() <= 0:
                break
            gc = st.group[cand]
            gain = self.v[cand] - vcur[gc]
            keep = gain > _TOL * np.maximum(1.0, np.abs(self.v[cand]))
            cand, gc, gain = cand[keep], gc[keep], gain[keep]
            slack = np.maximum(cap - usage, 0.0)
            if K:
                slack_pad = np.r_[slack + captol, np.inf]
                ri, wt = st.ri[cand], st.wt[cand]
                fit = np.all(wt - Wcur[gc[:, None], ri] <= slack_pad[ri], axis=1)
                cand, gc, gain = cand[fit], gc[fit], gain[fit]
            if not cand.size:
                break
            if K:
                D = st.dense(cand) - Wcur[gc, :K]
                Dp = np.maximum(D, 0.0)
                use = (Dp / np.maximum(slack, captol)).sum(axis=1)
            else:
                Dp = np.zeros((cand.size, 0))
                use = np.zeros(cand.size)
            score = gain / (use + 1e-12)
            o = np.lexsort((-score, gc))
            firsts = o[np.r_[True, gc[o][1:] != gc[o][:-1]]]
            o2 = firsts[np.argsort(-score[firsts], kind="stable")]
            if K:
                inc = np.cumsum(Dp[o2], axis=0)
                bad = np.any(inc > slack + captol, axis=1)
                p = max(int(np.argmax(bad)) if bad.any() else o2.size, 1)
            else:
                p = o2.size
            take = cand[o2[:p]]
            gt = st.group[take]
            choice[gt] = take
            vcur[gt] = self.v[take]
            if K:
                Wcur[gt, :K] = st.dense(take)
            usage = self.usage_of(choice)
            if not K:
                break
            rest = np.ones(cand.size, dtype=bool)
            rest[o2[:p]] = False
            cand = np.unique(np.concatenate([cand[rest], self._cols_of_groups(np.sort(gt))]))
        return choice


#: a fixed generic vector: ``D @ _KEY`` is a scalar key per weight-change vector (a collision only merges groups of
#: moves in the local search, whose exchanges are checked on the counts before they are applied)
_KEY = np.random.default_rng(12345).uniform(1.0, 2.0, MAX_KNAPSACK_ROWS)


def local_search(a: MckpStructure, y: np.ndarray, lam: np.ndarray, delta: np.ndarray, bestg: np.ndarray, gam: float,
                 deadline: float = math.inf, max_rounds: int = 500, kmax: int = 2) -> tuple[np.ndarray, int]:
    """Improve the integer counts ``y`` of the aggregated structure ``a`` (``a.mult`` members per class) by compound
    exchanges that keep every knapsack row within capacity; returns (counts, exchanges applied).

    A *move* switches one member of a class from a used option (or from choosing nothing) to another option; only
    options that can appear in a solution better than the incumbent are targets (``delta <= gam``: the reduced-cost
    fixing argument; ``delta`` / ``bestg`` are the Lagrangian losses of the options / of choosing nothing). Moves are
    grouped by their weight change ``D`` (a few distinct small vectors on these instances); a *bundle* is the ``k``
    best moves of one group (``k <= kmax``, a source used ``n`` times gives up to ``n`` copies), with weight change
    ``k D``. An exchange is one bundle, or a bundle with a positive gain plus any other bundle, whose total weight
    change fits the slack: e.g. a job leaving an 8-GPU option (``D = (-8, 0, 4)``) paid by two ``(4, 0, -2)`` moves.
    The best exchange (largest value gain) is applied, until none gains."""
    K = a.K
    mult = a.mult if a.mult is not None else np.ones(a.G, dtype=np.int64)
    y = y.astype(np.int64).copy()
    vpad = np.r_[a.value, 0.0]
    Dpad = np.vstack([a.dense(np.arange(a.n)), np.zeros((1, K))])
    cap = a.cap
    tol = _TOL * np.maximum(1.0, cap)
    gtol = 1e-12 * max(1.0, float(np.abs(a.value).sum()))
    tgt_cols = np.flatnonzero(delta <= gam)
    tgt_g = np.r_[a.group[tgt_cols], np.flatnonzero(bestg <= gam)]
    tgt_o = np.r_[tgt_cols, np.full(tgt_g.size - tgt_cols.size, -1)]
    o = np.argsort(tgt_g, kind="stable")
    tgt_g, tgt_o = tgt_g[o], tgt_o[o]
    tcnt = np.bincount(tgt_g, minlength=a.G)
    tstart = np.r_[0, np.cumsum(tcnt)[:-1]]
    done = 0
    for _ in range(max_rounds):
        if time.perf_counter() > deadline:
            break
        used = np.flatnonzero(y > 0)
        none_cnt = mult - (np.add.reduceat(y, a.starts) if a.n else 0)
        ng = np.flatnonzero(none_cnt > 0)
        src_g = np.r_[a.group[used], ng]
        src_o = np.r_[used, np.full(ng.size, -1)]
        src_n = np.r_[y[used], none_cnt[ng]]
        rep = tcnt[src_g]
        tot = int(rep.sum())
        if not tot:
            break
        ti = np.repeat(tstart[src_g] - np.cumsum(rep) + rep, rep) + np.arange(tot)
        ms = np.repeat(src_o, rep)
        mn = np.repeat(np.minimum(src_n, kmax), rep)
        mt = tgt_o[ti]
        ok = ms != mt
        ms, mn, mt = ms[ok], mn[ok], mt[ok]
        gain = vpad[mt] - vpad[ms]
        D = Dpad[mt] - Dpad[ms]
        slack = cap - (Dpad[used].T @ y[used] if used.size else np.zeros(K)) + tol
        if K:
            _, inv = np.unique(D @ _KEY[:K], return_inverse=True)
        else:
            inv = np.zeros(gain.size, dtype=np.int64)
        # copies: a move whose source is used n times can be made min(n, kmax) times
        cp = np.repeat(np.arange(gain.size), mn)
        order = cp[np.lexsort((-gain[cp], inv[cp]))]
        si = inv[order]
        first = np.r_[True, si[1:] != si[:-1]]
        rank = np.arange(si.size) - np.maximum.accumulate(np.where(first, np.arange(si.size), 0))
        top = rank < kmax
        order, si, rank = order[top], si[top], rank[top]
        T = int(si.max()) + 1 if si.size else 0
        cg = np.full((T, kmax + 1), -np.inf)
        cg[:, 0] = 0.0
        csum = np.cumsum(gain[order])
        start = np.maximum.accumulate(np.where(rank == 0, np.arange(si.size), 0))
        cg[si, rank + 1] = csum - csum[start] + gain[order][start]
        Dt = np.zeros((T, K))
        Dt[si] = D[order]
        bt, bk = np.nonzero(np.isfinite(cg[:, 1:]))
        bk = bk + 1
        bg = cg[bt, bk]
        bD = Dt[bt] * bk[:, None]
        # exchanges: a gaining bundle alone or with up to two partner bundles of other groups. The value gain is
        # the sum of the reduced gains plus lam . (total weight change) <= lam . slack, so a partner's reduced
        # loss must stay below the best reduced gain plus lam . slack.
        brg = bg - bD @ lam
        P = np.flatnonzero((bg > gtol) | (brg > gtol))
        if not P.size:
            break
        room = float(brg[P].max()) + float(lam @ np.maximum(slack, 0.0)) + gtol
        Bq = np.flatnonzero(brg > -room)
        q1 = np.r_[Bq, -1]
        qa = np.repeat(q1, q1.size)
        qb = np.tile(q1, q1.size)
        bt_pad = np.r_[bt, -1]
        okq = ((qa < qb) | ((qa == -1) & (qb == -1))) & ((bt_pad[qa] != bt_pad[qb]) | (qb == -1))
        qa, qb = qa[okq], qb[okq]
        bg_pad = np.r_[bg, 0.0]
        bD_pad = np.vstack([bD, np.zeros((1, K))])
        qg = bg_pad[qa] + bg_pad[qb]
        qD = bD_pad[qa] + bD_pad[qb]
        if K and qa.size > 64:
            # partners with the same weight change: only the 3 best matter (the gaining bundle's group can clash
            # with at most two of them)
            _, qinv = np.unique(qD @ _KEY[:K], return_inverse=True)
            qo = np.lexsort((-qg, qinv))
            qs = qinv[qo]
            qf = np.r_[True, qs[1:] != qs[:-1]]
            qr = np.arange(qs.size) - np.maximum.accumulate(np.where(qf, np.arange(qs.size), 0))
            qk = qo[qr < 3]
            qa, qb, qg, qD = qa[qk], qb[qk], qg[qk], qD[qk]
        live = qg > gtol - float(bg[P].max())
        qa, qb, qg, qD = qa[live], qb[live], qg[live], qD[live]
        tgain = bg[P][:, None] + qg[None, :]
        fit = tgain > gtol
        for k in range(K):  # row by row: much faster than an (P x Q x K) temporary and all(axis=2)
            fit &= bD[P, k][:, None] + qD[:, k][None, :] <= slack[k]
        tp = bt[P][:, None]
        fit &= (tp != bt_pad[qa][None, :]) & (tp != bt_pad[qb][None, :])
        if not fit.any():
            break
        cand = np.flatnonzero(fit.ravel())
        cand = cand[np.argsort(-tgain.ravel()[cand], kind="stable")]
        # apply the best exchange, then every further candidate that still fits and still gains (checked on the
        # counts themselves: members available, capacities, true value)
        applied = 0
        val = float(a.value @ y)
        for flat in cand[:64]:
            i, j = divmod(int(flat), qa.size)
            yy = y.copy()
            for b in (P[i], qa[j], qb[j]):
                if b < 0:
                    continue
                mv = order[si == bt[b]][: bk[b]]
                np.subtract.at(yy, ms[mv][ms[mv] >= 0], 1)
                np.add.at(yy, mt[mv][mt[mv] >= 0], 1)
            if yy.min(initial=0) < 0:
                continue
            if a.n and np.any(np.add.reduceat(yy, a.starts) > mult):
                continue
            if np.any(Dpad[:-1].T @ yy > cap + tol):
                continue
            v2 = float(a.value @ yy)
            if v2 <= val + gtol:
                continue
            y, val = yy, v2
            applied += 1
        if not applied:
            break
        done += applied
    return y, done


def kick_search(a: MckpStructure, y: np.ndarray, lam: np.ndarray, delta: np.ndarray, bestg: np.ndarray, gam: float,
                deadline: float, seed: int | None = None, kicks: int = 40, size: int = 3,
                target: float = math.inf) -> tuple[np.ndarray, int]:
    """Iterated local search on the counts ``y`` (a local optimum of :func:`local_search`): up to ``kicks`` times,
    apply ``size`` random feasible moves to options within ``gam`` of their class's best (Lagrangian losses
    ``delta`` / ``bestg`` as in :func:`local_search`: only such options can be in a better solution), run the local
    search from there and keep the result when its value is higher. Stops at ``deadline`` or once the value
    ``a.value @ y`` reaches ``target``; returns (counts, kicks that improved)."""
    K = a.K
    mult = a.mult if a.mult is not None else np.ones(a.G, dtype=np.int64)
    rng = np.random.default_rng(0 if seed is None else seed)
    Dall = a.dense(np.arange(a.n)) if K else np.zeros((a.n, 0))
    cap = a.cap
    tol = _TOL * np.maximum(1.0, cap)
    gtol = 1e-12 * max(1.0, float(np.abs(a.value).sum()))
    tgt = np.flatnonzero(delta <= gam)
    y = y.astype(np.int64).copy()
    val = float(a.value @ y)
    wins = 0
    if not tgt.size:
        return y, 0
    for _ in range(kicks):
        if time.perf_counter() > deadline or val >= target:
            break
        yk = y.copy()
        use = Dall.T @ yk
        moved = 0
        for t in rng.permutation(tgt)[: 8 * size]:
            c = a.group[t]
            cols = np.arange(a.starts[c], a.starts[c] + a.counts[c])
            src = cols[(yk[cols] > 0) & (cols != t)]
            free = int(mult[c] - yk[cols].sum())
            opts = np.r_[src, [-1] if free > 0 else []].astype(np.int64)
            if not opts.size:
                continue
            s_ = int(opts[rng.integers(opts.size)])
            D = Dall[t] - (Dall[s_] if s_ >= 0 else 0.0)
            if np.any(use + D > cap + tol):
                continue
            yk[t] += 1
            if s_ >= 0:
                yk[s_] -= 1
            use = use + D
            moved += 1
            if moved >= size:
                break
        if not moved:
            continue
        y2, _ = local_search(a, yk, lam, delta, bestg, gam, deadline)
        v2 = float(a.value @ y2)
        if v2 > val + gtol and not np.any(Dall.T @ y2 > cap + tol):
            y, val = y2, v2
            wins += 1
    return y, wins


def _full_x(st: MckpStructure, choice: np.ndarray) -> np.ndarray:
    x = np.zeros(st.n_cols)
    x[st.forced] = 1.0
    sel = choice[choice >= 0]
    x[st.cols[sel]] = 1.0
    return x


_OPTIONS = {"exact", "local_search", "kick_seconds", "kicks", "kick_size", "residual_backend", "residual_form", "max_dual_iterations", "dual_tolerance", "core_columns"}


def _default_residual_backend() -> str:
    """CP-SAT when OR-Tools is installed (measured much faster on the aggregated residual), else HiGHS."""
    import importlib.util

    return "cpsat" if importlib.util.find_spec("ortools") is not None else "highs"


class MckpBackend(Backend):
    """The structure-exploiting exact solver for the one-configuration-per-job family (see the module doc)."""

    name = "mckp"
    capabilities = Capabilities(lp=False, mip=True, duals=False, iis=False, warm_start=True, structure="mckp")
    requires = ("highspy",)

    def warm_up(self) -> None:
        """Also load and run the residual solver once (CP-SAT when installed): its first call costs ~0.3 s."""
        super().warm_up()
        if _default_residual_backend() == "cpsat":
            from ortools.sat.python import cp_model

            m = cp_model.CpModel()
            v = m.new_int_var(0, 1, "v")
            m.maximize(v)
            cp_model.CpSolver().solve(m)
    install_hint = "pip install highspy==1.12.0"

    def version(self) -> str:
        return "1.0"

    def check_model(self, model: LinearModel) -> str | None:
        arr = model.to_arrays()
        if not arr.is_mip:
            return "the model is a pure LP (the mckp family is binary)"
        try:
            analyze(model)
        except StructureError as exc:
            return f"outside the mckp family: {exc}"
        return None

    def solve(self, model: LinearModel, params: SolveParams) -> SolveResult:
        t0 = time.perf_counter()
        opts = params.options
        unknown = set(opts) - _OPTIONS
        if unknown:
            from ..errors import InputError

            raise InputError("options", sorted(unknown), f"unknown mckp option(s); known: {', '.join(sorted(_OPTIONS))}")
        st = analyze(model)
        arr = model.to_arrays()
        sign = 1.0 if st.maximize else -1.0
        gap_tol = 1e-4 if params.mip_rel_gap is None else float(params.mip_rel_gap)
        exact = bool(opts.get("exact", True))
        stats: dict[str, Any] = dict(st.stats)
        phases: dict[str, float] = {"detect": st.stats.get("detect_seconds", 0.0)}
        t1 = time.perf_counter()

        def result(reason: TerminationReason, limit: Limit | None, detail: str, choice: np.ndarray | None,
                   bound_int: float) -> SolveResult:
            x = _full_x(st, choice) if choice is not None else None
            obj = float(arr.c @ x + arr.constant) if x is not None else math.nan
            stats["phase_seconds"] = phases
            return SolveResult(
                termination=Termination(reason, limit, detail),
                backend=self.name,
                model=model,
                _x=x,
                _objective=obj,
                bound=sign * bound_int,
                timings=Timings(handoff=t1 - t0, solve=time.perf_counter() - t1),
                backend_version=self.version(),
                stats=stats,
            )

        if st.infeasible:
            return result(TerminationReason.INFEASIBLE, None, st.infeasible, None, -math.inf)
        agg = aggregate(st)
        ast = agg.st
        stats["classes"] = agg.classes
        stats["aggregated_columns"] = ast.n
        phases["aggregate"] = time.perf_counter() - t1
        asolver = _Solver(ast, params, t0)
        # ---- dual (on the aggregated structure: the same function L, fewer columns)
        ta = time.perf_counter()
        best, rc, gmax, iters = asolver.dual()
        UB = best.L + st.const
        phases["dual"] = time.perf_counter() - ta
        stats["dual_iterations"] = iters
        stats["oracle_columns"] = asolver.oracle_columns
        stats["sample_iterations"] = getattr(asolver, "sample_iterations", 0)
        stats["pool_columns"] = int(asolver.pool.idx.size)
        stats["prices"] = dict(zip(st.knap_labels, best.lam.tolist()))
        stats["lagrangian_bound"] = sign * UB
        # ---- repair (on the original groups: members of a class may end up with different columns)
        ta = time.perf_counter()
        solver = _Solver(st, params, t0)
        if asolver.pool.idx.size == ast.n:
            solver.pool = _ColSet(st)
        else:
            inpool = np.zeros(ast.n, dtype=bool)
            inpool[asolver.pool.idx] = True
            solver.pool = _ColSet(st, np.flatnonzero(inpool[agg.col_map]))
        choice = solver.repair(agg.expand(best.choice), best.lam)
        LB = solver.value_of(choice)
        if params.warm_start is not None:
            ws = np.asarray(params.warm_start, dtype=float)
            if not model.violations(ws):
                pos = np.full(st.n_cols, -1, dtype=np.int64)
                pos[st.cols] = np.arange(st.n)
                on = pos[np.flatnonzero(ws > 0.5)]
                on = on[on >= 0]
                ch = np.full(st.G, -1, dtype=np.int64)
                ch[st.group[on]] = on
                ch = solver.improve(ch)
                if solver.value_of(ch) > LB:
                    choice, LB = ch, solver.value_of(ch)
        phases["repair"] = time.perf_counter() - ta
        stats["repair_objective"] = sign * LB
        # ---- local search on the aggregated counts (1- and 2-exchanges at the final prices)
        ta = time.perf_counter()
        bestg = np.maximum(gmax, 0.0)  # per class
        delta = bestg[ast.group] - rc  # reduced-cost loss of each aggregated column against its class's best (>= 0)
        if ast.n and UB - LB > 0 and bool(opts.get("local_search", True)):
            y0 = agg.counts(choice)
            y1, nmoves = local_search(ast, y0, best.lam, delta, bestg, UB - LB + 1e-9 * max(1.0, abs(UB)), solver.deadline)
            stats["local_search_moves"] = nmoves
            if nmoves:
                ch = agg.disaggregate(y1)
                fits = not np.any(solver.usage_of(ch) > st.cap + 1e-6 * np.maximum(1.0, st.cap))
                if fits and solver.value_of(ch) > LB:
                    choice, LB = ch, solver.value_of(ch)
            # below ~1e-5 the kicks can seldom give a proof (the Lagrangian bound is ~5e-5 from the optimum on Sia):
            # they then only shrink the residual problem, so they get less time
            kb = float(opts.get("kick_seconds", 0.03 if gap_tol >= 1e-5 else 0.005))
            if kb > 0 and not (UB - LB <= max(gap_tol * max(abs(LB), 1e-10), 1e-9 * max(1.0, abs(LB)))):
                y2, wins = kick_search(ast, agg.counts(choice), best.lam, delta, bestg,
                                       UB - LB + 1e-9 * max(1.0, abs(UB)), min(solver.deadline, time.perf_counter() + kb),
                                       0 if params.seed is None else params.seed, int(opts.get("kicks", 40)), int(opts.get("kick_size", 3)),
                                       UB - st.const - gap_tol * max(abs(UB), 1e-10))
                stats["kick_improvements"] = wins
                if wins:
                    ch = agg.disaggregate(y2)
                    fits = not np.any(solver.usage_of(ch) > st.cap + 1e-6 * np.maximum(1.0, st.cap))
                    if fits and solver.value_of(ch) > LB:
                        choice, LB = ch, solver.value_of(ch)
        phases["local_search"] = time.perf_counter() - ta
        stats["local_search_objective"] = sign * LB
        gap_abs = max(UB - LB, 0.0)
        stats["gap_after_repair"] = gap_abs / max(abs(LB), 1e-10)

        def within(ub: float, lb: float) -> bool:
            return ub - lb <= max(gap_tol * max(abs(lb), 1e-10), 1e-9 * max(1.0, abs(lb)))

        if within(UB, LB):
            return result(TerminationReason.OPTIMAL, None, "Lagrangian bound met by the repaired and locally improved solution", choice,
                          max(UB, LB))
        if solver.time_left() <= 0:
            return result(TerminationReason.FEASIBLE, Limit.TIME, "time limit after the repair", choice, UB)
        if not exact:
            return result(TerminationReason.FEASIBLE, Limit.OTHER, "exact=False: repaired solution with its bound",
                          choice, UB)
        # ---- exact mode on the aggregated problem: reduced-cost fixing, then the residual problem (integer counts)
        rb = str(opts.get("residual_backend") or _default_residual_backend())
        form = str(opts.get("residual_form", "auto"))
        if form == "auto":
            form = "integer" if rb == "cpsat" else "binary"
        stats["residual_backend"] = rb
        stats["residual_form"] = form
        mult = ast.mult if ast.mult is not None else np.ones(ast.G, dtype=np.int64)
        eps = 1e-9 * max(1.0, abs(UB))

        def restricted(tau: float, time_limit: float | None) -> tuple[Any, int, int]:
            """Solve the aggregated problem restricted to the options within ``tau`` of their class's best (the
            incumbent's options always kept; classes left with one option keep the incumbent's), each option used
            by at most ``floor((UB - LB) / delta)`` members (any improving solution has total loss < UB - LB);
            adopt a better answer."""
            nonlocal choice, LB
            gam = max(UB - LB, 0.0) + eps
            y_inc = agg.counts(choice)
            none_inc = mult - np.add.reduceat(y_inc, ast.starts)
            alive = (delta <= tau) | (y_inc > 0)
            none_alive = (bestg <= tau) | (none_inc > 0)
            n_alive = np.add.reduceat(alive.astype(np.int64), ast.starts)
            open_g = (n_alive + none_alive) >= 2
            res_cols = np.flatnonzero(alive & open_g[ast.group])
            if res_cols.size == 0:
                return None, 0, int(ast.n - alive.sum())
            y_fixed = np.where(open_g[ast.group], 0, y_inc)
            d = delta[res_cols]
            ub = np.minimum(mult[ast.group[res_cols]],
                            np.floor(gam / np.where(d > 0, d, 1.0)).astype(np.int64) if d.size else 0)
            ub = np.where(d > 0, ub, mult[ast.group[res_cols]])
            ub = np.maximum(ub, y_inc[res_cols])
            og = np.flatnonzero(open_g)
            none_max = np.where(bestg[og] > 0, np.floor(gam / np.where(bestg[og] > 0, bestg[og], 1.0)), mult[og])
            none_max = np.where(none_alive[og], np.maximum(none_max, none_inc[og]), 0)
            lo_rows = np.maximum(mult[og] - none_max, 0).astype(np.float64)
            cap = st.cap - ast.usage(np.flatnonzero(y_fixed), y_fixed[y_fixed > 0])
            const = float(ast.value @ y_fixed) + st.const
            r, y = self._residual(asolver, res_cols, ub, og, lo_rows, mult[og], cap, const, y_inc[res_cols], rb,
                                  form, agg, time_limit, gap_tol, params)
            if y is not None:
                yy = y_fixed.copy()
                yy[res_cols] = y
                ch = agg.disaggregate(yy)
                fits = not np.any(solver.usage_of(ch) > st.cap + 1e-6 * np.maximum(1.0, st.cap))
                if fits and solver.value_of(ch) > LB:
                    choice, LB = ch, solver.value_of(ch)
            return r, int(res_cols.size), int(ast.n - alive.sum())

        core_max = int(opts.get("core_columns", 2000))
        n_close = int(np.count_nonzero(delta <= gap_abs + eps))
        if n_close > core_max:
            # core step: the options closest to their class's best first (a large-neighbourhood search around
            # the incumbent); a better incumbent shrinks the gap and with it the residual problem
            ta = time.perf_counter()
            tau = float(np.partition(delta, core_max - 1)[core_max - 1]) + eps
            left = solver.time_left()
            r_core, ncore, _ = restricted(tau, None if math.isinf(left) else max(left, 0.0) / 2)
            phases["core"] = time.perf_counter() - ta
            stats["core_columns"] = ncore
            stats["core_objective"] = sign * LB
            if r_core is not None:
                stats["core_status"] = str(r_core.termination)
            gap_abs = max(UB - LB, 0.0)
            if within(UB, LB):
                return result(TerminationReason.OPTIMAL, None, "Lagrangian bound met by the core solution", choice,
                              max(UB, LB))
            if solver.time_left() <= 0:
                return result(TerminationReason.FEASIBLE, Limit.TIME, "time limit after the core step", choice, UB)
        ta = time.perf_counter()
        left = solver.time_left()
        r, nres, nfixed = restricted(gap_abs + eps, None if math.isinf(left) else max(left, 0.0))
        phases["residual"] = time.perf_counter() - ta
        stats["columns_fixed"] = nfixed
        stats["residual_columns"] = nres
        if r is None:
            return result(TerminationReason.OPTIMAL, None, "reduced-cost fixing left nothing to improve", choice, LB)
        stats["residual_status"] = str(r.termination)
        stats["residual_stats"] = dict(r.stats)
        if r.termination.reason is TerminationReason.INFEASIBLE:
            # no choice among the options left improves on the incumbent: it is optimal
            return result(TerminationReason.OPTIMAL, None, "the residual problem has no improving solution", choice, LB)
        # every solution better than the incumbent at the time of the fixing lies in the residual problem
        res_bound = r.bound if not math.isnan(r.bound) else math.inf
        bound = min(UB, max(LB, res_bound))
        if within(bound, LB):
            return result(TerminationReason.OPTIMAL, None, "residual problem solved", choice, max(bound, LB))
        # the residual solver's own OPTIMAL is not trusted on its word: without the bound it is not a proof
        limit = r.termination.limit or Limit.OTHER
        return result(TerminationReason.FEASIBLE, limit, f"residual problem: {r.termination}", choice, bound)

    def _residual(self, asolver: _Solver, res_cols: np.ndarray, ub: np.ndarray, og: np.ndarray, lo_rows: np.ndarray,
                  up_rows: np.ndarray, cap: np.ndarray, const: float, ws: np.ndarray, rb: str, form: str,
                  agg: Aggregate, time_limit: float | None, gap_tol: float, params: SolveParams
                  ) -> tuple[Any, np.ndarray | None]:
        """The residual problem over the aggregated columns ``res_cols`` (classes ``og``): counts ``y <= ub``,
        ``lo_rows <= sum_c y[class, c] <= up_rows``, capacities ``cap``; solved by ``rb`` with the warm start ``ws``.

        ``form="integer"``: one integer count per aggregated column (symmetry-free; CP-SAT is fast on it);
        ``form="binary"``: one binary per (member group, option), the per-option bounds as ``option_count`` rows
        and the class lower bounds as ``class_count`` rows (HiGHS is much faster on this form, measured).
        Returns (result, counts per residual column or None)."""
        from ..model import LinearModel
        from ..solve import solve as _solve

        ast = asolver.st
        m = res_cols.size
        gi = np.searchsorted(og, ast.group[res_cols])
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
            mem = np.flatnonzero(is_open[agg.cls])
            mem = mem[np.lexsort((agg.rank[mem], agg.cls[mem]))]
            mpos = np.searchsorted(og, agg.cls[mem])  # open-class position of each member
            rcnt = np.bincount(gi, minlength=og.size)
            rstart = np.r_[0, np.cumsum(rcnt)[:-1]]
            mcnt = rcnt[mpos]
            tot = int(mcnt.sum())
            var_mem = np.repeat(np.arange(mem.size), mcnt)
            var_rc = np.repeat(rstart[mpos] - np.cumsum(mcnt) + mcnt, mcnt) + np.arange(tot)
            sub.add_variables("x", tot, kind="binary")
            none_ok = lo_rows < up_rows - 0.5  # some member may choose nothing
            A1 = sp.csr_matrix((np.ones(tot), (var_mem, np.arange(tot))), shape=(mem.size, tot))
            sub.add_constraints("one_option", {"x": A1}, lower=np.where(none_ok[mpos], -np.inf, 1.0), upper=1.0)
            part = np.flatnonzero(none_ok & (lo_rows > 0))
            if part.size:
                ppos = np.full(og.size, -1, dtype=np.int64)
                ppos[part] = np.arange(part.size)
                on = ppos[gi[var_rc]] >= 0
                Ac = sp.csr_matrix((np.ones(int(on.sum())), (ppos[gi[var_rc]][on], np.flatnonzero(on))),
                                   shape=(part.size, tot))
                sub.add_constraints("class_count", {"x": Ac}, lower=lo_rows[part])
            lim = np.flatnonzero(ub < up_rows[gi])
            if lim.size:
                lpos = np.full(m, -1, dtype=np.int64)
                lpos[lim] = np.arange(lim.size)
                on = lpos[var_rc] >= 0
                Ao = sp.csr_matrix((np.ones(int(on.sum())), (lpos[var_rc][on], np.flatnonzero(on))),
                                   shape=(lim.size, tot))
                sub.add_constraints("option_count", {"x": Ao}, upper=ub[lim].astype(np.float64))
            W = ast.weights_csr(res_cols)[:, var_rc]
            val = ast.value[res_cols][var_rc]
            # warm start: the members of a class take the incumbent's counts in column order
            before = np.cumsum(ws) - ws - np.r_[0, np.cumsum(ws)][rstart][gi]
            rk = agg.rank[mem][var_mem]
            start = ((rk >= before[var_rc]) & (rk < before[var_rc] + ws[var_rc])).astype(np.float64)
        if asolver.K:
            sub.add_constraints("capacity", {"x": W}, upper=np.maximum(cap, 0.0), labels=ast.knap_labels)
        sub.set_objective({"x": val}, constant=const)
        extra: dict[str, Any] = {}
        if rb == "cpsat":
            # CP-SAT also stops at an absolute gap (default 1e-4 in objective units): make it match ours
            extra["absolute_gap_limit"] = 1e-9 * max(1.0, abs(const))
        r = _solve(sub, rb, time_limit=time_limit, mip_rel_gap=gap_tol, threads=params.threads, seed=params.seed,
                   warm_start=start, **extra)
        if not r.has_solution:
            return r, None
        return r, np.bincount(var_rc, weights=np.rint(r.x), minlength=m).astype(np.int64)
