"""Structure detection and presolve of the multiple-choice multi-knapsack family, from the model itself.

:func:`analyze` classifies the rows of a :class:`~schedopt.LinearModel` (at-most-one GUB rows, knapsack rows,
single-column rows that fix a binary) and presolves it into an :class:`MckpStructure` (always a maximisation);
a model outside the family raises :class:`~schedopt.errors.StructureError` naming the row or column to blame.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import StructureError
from ..model import LazyModule, LinearModel, ModelArrays

if TYPE_CHECKING:
    import scipy.sparse as sp
else:
    sp = LazyModule("scipy.sparse", globals(), "sp")  # imported on first use (issue 42)

__all__ = [
    "MAX_KNAPSACK_ROWS",
    "TOL",
    "Detected",
    "MckpStructure",
    "analyze",
    "detect",
    "detect_arrays",
    "detect_structure",
    "group_columns",
    "presolve",
    "presolve_arrays",
    "remember",
]

#: the largest number of knapsack rows the family admits (the dual has one price per row)
MAX_KNAPSACK_ROWS = 64
#: the absolute tolerance of the structure tests and capacity checks
TOL = 1e-9


@dataclass(eq=False)
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
    #: the structure's :func:`~schedopt.mckp.aggregate` once computed (an ``Aggregate``; typed there, so that this
    #: module does not import the one built on it; set only by ``aggregate``)
    aggregated: object | None = field(default=None, repr=False)

    # (the sizes and the one-slot weights are read in the solver's inner loops: computed once, the arrays of a
    # structure are never reassigned)
    @cached_property
    def n(self) -> int:
        return int(self.cols.shape[0])

    @cached_property
    def G(self) -> int:
        return int(self.starts.shape[0])

    @cached_property
    def K(self) -> int:
        return int(self.cap.shape[0])

    @cached_property
    def _slot0(self) -> tuple[np.ndarray, np.ndarray]:
        """The first (row, weight) slot of every column as contiguous 1-d arrays (the only one when
        ``wt.shape[1] == 1``)."""
        return np.ascontiguousarray(self.ri[:, 0]), np.ascontiguousarray(self.wt[:, 0])

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
        if self.wt.shape[1] == 1:  # one row per column: the first (only) slot, the same products
            r0, w0 = self._slot0
            w = w0[sel] if times is None else w0[sel] * times
            return np.bincount(r0[sel], weights=w, minlength=self.K + 1)[: self.K]
        w = self.wt[sel] if times is None else self.wt[sel] * times[:, None]
        return np.bincount(self.ri[sel].ravel(), weights=w.ravel(), minlength=self.K + 1)[: self.K]

    def weights_csr(self, idx: np.ndarray) -> sp.csr_matrix:
        """The (K x len(idx)) knapsack weights of the columns ``idx``."""
        ri, wt = self.ri[idx], self.wt[idx]
        cc = np.repeat(np.arange(idx.size), ri.shape[1])
        keep = ri.ravel() < self.K
        return sp.csr_matrix((wt.ravel()[keep], (ri.ravel()[keep], cc[keep])), shape=(self.K, idx.size))


    def value_of(self, choice: np.ndarray) -> float:
        """Objective (maximisation form, constant included) of a choice: one column or -1 per group."""
        sel = choice[choice >= 0]
        return float(self.value[sel].sum()) + self.const

    def usage_of(self, choice: np.ndarray) -> np.ndarray:
        """Knapsack usage of a choice (one column or -1 per group)."""
        return self.usage(choice[choice >= 0])

    def fits(self, choice: np.ndarray) -> bool:
        """Whether a choice keeps every knapsack row within capacity (relative tolerance 1e-6)."""
        return not (self.usage_of(choice) > self.cap + 1e-6 * np.maximum(1.0, self.cap)).any()

    def full_solution(self, choice: np.ndarray) -> np.ndarray:
        """The model's full 0/1 column vector of a choice (forced columns set)."""
        x = np.zeros(self.n_cols)
        x[self.forced] = 1.0
        sel = choice[choice >= 0]
        x[self.cols[sel]] = 1.0
        return x


def _row_label(model: LinearModel, r: int) -> str:
    for f in model.families.values():
        if f.start <= r < f.stop:
            return f.label_of(r - f.start)
    return f"row {r}"


def _col_label(model: LinearModel, j: int) -> str:
    b, flat = model.block_of(int(j))
    return b.label_of(flat)


@dataclass
class Detected:
    """The classification of a model's rows and columns (:func:`detect`)."""

    lower: np.ndarray
    upper: np.ndarray
    col_gub: np.ndarray  # GUB index per column or -1
    gub_rows: np.ndarray
    knap_rows: np.ndarray
    infeasible: str | None
    row_of: np.ndarray  # row index of every nonzero of A (CSR order)


def detect(model: LinearModel) -> Detected:
    """Classify the rows and columns of ``model`` (GUB rows, knapsack rows, fixed columns); raise :class:`StructureError` when it is outside the family."""
    arr = model.to_arrays()
    n = arr.num_cols
    if n and not bool((arr.integrality == 1).all()):
        j = int(np.flatnonzero(arr.integrality != 1)[0])
        b, _ = model.block_of(j)
        raise StructureError(
            f"column {_col_label(model, j)} is continuous (block {b.name!r}); the mckp family needs every column binary"
        )
    return detect_arrays(arr, lambda r: _row_label(model, r), lambda j: _col_label(model, j))


def detect_arrays(arr: ModelArrays, row_label: Callable[[int], str], col_label: Callable[[int], str]) -> Detected:
    """:func:`detect` on a model's array form ``arr`` whose columns are all integer, with ``row_label`` /
    ``col_label`` (index -> label) naming the rows and columns in the reasons and errors."""
    n = arr.num_cols
    lo = arr.col_lower.copy()
    up = arr.col_upper.copy()
    bad = (lo < -TOL) | (up > 1 + TOL)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise StructureError(
            f"column {col_label(j)} is integer with bounds [{lo[j]:g}, {up[j]:g}]; the mckp family needs binaries"
        )
    A = arr.A
    rl, ru = arr.row_lower, arr.row_upper
    nnz = A.indptr[1:] - A.indptr[:-1]  # np.diff(A.indptr)
    row_of = np.repeat(np.arange(A.shape[0]), nnz)
    infeasible: str | None = None
    # empty rows: satisfied or infeasible
    empty = np.flatnonzero((nnz == 0) & ((rl > TOL) | (ru < -TOL)))
    if empty.size:
        infeasible = f"row {row_label(int(empty[0]))} has no columns and bounds [{rl[empty[0]]:g}, {ru[empty[0]]:g}]"
    # single-column rows are bounds on a binary
    single = np.flatnonzero(nnz == 1)
    if single.size:
        a = A.data[A.indptr[single]]
        j = A.indices[A.indptr[single]]
        l_, u_ = rl[single], ru[single]
        tol = TOL * np.maximum(1.0, np.abs(a))
        ok0 = (l_ <= tol) & (u_ >= -tol)
        ok1 = (l_ <= a + tol) & (u_ >= a - tol)
        np.maximum.at(lo, j, np.where(ok0, 0.0, 1.0))
        np.minimum.at(up, j, np.where(ok1, 1.0, 0.0))
        none = np.flatnonzero(~ok0 & ~ok1)
        if none.size and infeasible is None:
            infeasible = f"row {row_label(int(single[none[0]]))} admits neither 0 nor 1 for its binary column"
    clash = np.flatnonzero(lo > up)
    if clash.size and infeasible is None:
        infeasible = f"column {col_label(int(clash[0]))} is forced to 1 and to 0 (bounds and single-column rows)"
    multi = np.flatnonzero(nnz >= 2)
    gub_rows = np.zeros(0, dtype=np.int64)
    knap_rows = np.zeros(0, dtype=np.int64)
    col_gub = np.full(n, -1, dtype=np.int64)
    if multi.size:
        nonempty = nnz > 0
        seg = A.indptr[:-1][nonempty]  # the nonempty rows' first entries (the reduceat segments)
        pm = (np.cumsum(nonempty) - 1)[multi]  # each multi row's segment
        rmin = np.minimum.reduceat(A.data, seg)[pm]
        rmax = np.maximum.reduceat(A.data, seg)[pm]
        neg = np.flatnonzero(rmin < 0)
        if neg.size:
            r = int(multi[neg[0]])
            s, e = A.indptr[r], A.indptr[r + 1]
            k = int(np.argmin(A.data[s:e]))
            raise StructureError(
                f"row {row_label(r)} has a negative coefficient ({A.data[s + k]:g} on column "
                f"{col_label(int(A.indices[s + k]))}); knapsack rows need nonnegative coefficients"
            )
        l_, u_ = rl[multi], ru[multi]
        covering = np.flatnonzero(l_ > TOL * np.maximum(1.0, np.abs(l_)))
        if covering.size:
            r = int(multi[covering[0]])
            kind = "an equality row" if ru[r] == rl[r] else "a covering row (lower bound > 0)"
            raise StructureError(
                f"row {row_label(r)} is {kind} with bounds [{rl[r]:g}, {ru[r]:g}]; the mckp family allows only "
                "<= rows with nonnegative coefficients (at-most-one rows and knapsack rows)"
            )
        finite = np.isfinite(u_)
        # a row whose total weight fits its capacity never binds
        tot = np.add.reduceat(A.data, seg)[pm]
        redundant = ~finite | (tot <= u_ + TOL)
        if infeasible is None:
            below = np.flatnonzero(u_ < -TOL)
            if below.size:
                r = int(multi[below[0]])
                infeasible = f"row {row_label(r)} needs a nonnegative sum <= {ru[r]:g}"
        ratio = np.where(rmax > 0, u_ / np.where(rmax > 0, rmax, 1.0), np.inf)
        eligible = (~redundant) & (rmin == rmax) & (rmax > 0) & (ratio >= 1 - TOL) & (ratio < 2 - TOL)
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
                f"column {col_label(c0)} lies in two at-most-one rows ({row_label(r1)} and "
                f"{row_label(r2)}); overlapping at-most-one rows are kept as knapsack rows"
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
    return Detected(lo, up, col_gub, gub_rows, knap_rows, infeasible, row_of)


_TRUE = np.ones(1, dtype=bool)


def group_columns(keep: np.ndarray, col_gub: np.ndarray, n_gub: int) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                                              np.ndarray]:
    """The kept columns (``keep``: a mask over the model's columns) grouped contiguously: ``(cols, group, starts,
    counts)``, the columns of one at-most-one row (``col_gub``: its index per column, -1 none, ``n_gub`` of them)
    together in row order, each other column a group of its own after them, columns in model order within a group
    (as :class:`MckpStructure` holds them)."""
    cols = keep.nonzero()[0]  # (np.flatnonzero of a 1-d mask, without its ravel)
    gkey = col_gub[cols]  # (a copy: fancy indexing)
    free = gkey < 0
    nfree = int(np.count_nonzero(free))
    if nfree:
        gkey[free] = n_gub + np.arange(nfree)
    if gkey.size and (gkey[1:] < gkey[:-1]).any():
        order = np.argsort(gkey, kind="stable")
        cols, gkey = cols[order], gkey[order]
    if cols.size:
        newg = np.concatenate((_TRUE, gkey[1:] != gkey[:-1]))
        starts = newg.nonzero()[0]
        group = np.cumsum(newg) - 1
    else:
        starts = np.zeros(0, dtype=np.int64)
        group = np.zeros(0, dtype=np.int64)
    counts = (np.concatenate((starts[1:], [cols.size])) - starts).astype(np.int64)  # np.diff of the bounds
    return cols, np.asarray(group, dtype=np.int64), np.asarray(starts, dtype=np.int64), counts


def presolve(model: LinearModel, d: Detected) -> MckpStructure:
    """Remove fixed columns, drop columns that can never help, group the rest contiguously (ELL weights)."""
    return presolve_arrays(model.to_arrays(), d, lambda r: _row_label(model, r))


def presolve_arrays(arr: ModelArrays, d: Detected, row_label: Callable[[int], str]) -> MckpStructure:
    """:func:`presolve` on a model's array form ``arr`` and its classification ``d`` (from :func:`detect`, or built
    by a problem that knows its model's structure by construction: ``schedopt.sia.direct``), with ``row_label``
    (row index -> label) naming the knapsack rows and the rows of an infeasible model's reason."""
    n = arr.num_cols
    sign = 1.0 if arr.maximize else -1.0
    data, indices, _ = arr.csr_arrays()  # (the Sia round's array form gives them without making its matrix)
    K = int(d.knap_rows.size)
    kpos = np.full(arr.num_rows, -1, dtype=np.int64)
    kpos[d.knap_rows] = np.arange(K)
    km = kpos[d.row_of]
    on = km >= 0
    er, ec, ew = km[on], indices[on].astype(np.int64), data[on]
    labels = [row_label(r) for r in d.knap_rows.tolist()]
    capfull = arr.row_upper[d.knap_rows].astype(np.float64)
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
            infeasible = f"row {row_label(int(d.gub_rows[g]))} has {int(c[g])} forced columns but allows one"
    use: np.ndarray
    if K and forced.size:
        use = np.bincount(er, weights=ew * fixed1[ec], minlength=K)[:K]
    else:
        use = np.zeros(K)
    cap = capfull - use
    over = np.flatnonzero(cap < -TOL * np.maximum(1.0, np.abs(capfull)))
    if over.size and infeasible is None:
        k = int(over[0])
        infeasible = f"row {labels[k]}: the forced columns need {use[k]:g} but the capacity is {capfull[k]:g}"
    cap = np.maximum(cap, 0.0)
    val = sign * arr.c
    const = sign * (arr.constant + float(arr.c[forced].sum()))
    keep = ~fixed0 & ~fixed1 & (val > 0)
    fixed_groups = np.unique(fg) if fg.size else fg  # usually no forced column in a group: skip np.unique
    if fixed_groups.size:
        in_fixed = np.zeros(max(int(d.gub_rows.size), 1), dtype=bool)
        in_fixed[fixed_groups] = True
        keep &= ~((d.col_gub >= 0) & in_fixed[np.maximum(d.col_gub, 0)])
    n_nonpos = int(np.count_nonzero(val <= 0))
    if ew.size:
        # a column that does not fit alone can never be chosen
        tb = ew > cap[er] + TOL * np.maximum(1.0, cap[er])
        keep[ec[tb]] = False
    cols, group, starts, counts = group_columns(keep, d.col_gub, int(d.gub_rows.size))
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
        group=group,
        starts=starts,
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


_CACHE: weakref.WeakKeyDictionary[LinearModel, tuple[object, MckpStructure | StructureError]] = (
    weakref.WeakKeyDictionary()
)


def analyze(model: LinearModel) -> MckpStructure:
    """The presolved :class:`MckpStructure` of ``model`` (cached, keyed weakly by the model, until the model
    changes); raises :class:`~schedopt.errors.StructureError` when the model is outside the family."""
    arr = model.to_arrays()
    cached = _CACHE.get(model)
    if cached is not None and cached[0] is arr:
        if isinstance(cached[1], StructureError):
            raise cached[1]
        return cached[1]
    t0 = time.perf_counter()
    try:
        st = presolve(model, detect(model))
    except StructureError as exc:
        _CACHE[model] = (arr, exc)
        raise
    st.stats["detect_seconds"] = time.perf_counter() - t0
    _CACHE[model] = (arr, st)
    return st



def remember(model: LinearModel, st: MckpStructure) -> None:
    """Record ``st`` as :func:`analyze`'s answer for ``model`` in its present state (until the model changes): for
    a problem that builds the presolved structure of its own model directly (``schedopt.sia.direct``), so that the
    ``mckp`` backend skips the detection. ``st`` must be exactly what :func:`analyze` would give
    (``tests/test_sia_direct.py`` compares them field by field)."""
    _CACHE[model] = (model.to_arrays(), st)
