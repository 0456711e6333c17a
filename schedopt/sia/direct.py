"""The Sia round straight to the ``mckp`` solver: the model's array form and its presolved structure, built from the
pair table without the :class:`~schedopt.LinearModel` (built on demand).

The Sia model (``schedopt.sia.build``) is a multiple-choice knapsack by construction: one ``x`` binary per valid
(job, configuration) pair, at most one per job, GPU rows per type. Without the change auxiliaries (the default),
:func:`formulation` gives the :class:`~schedopt.problem.Formulation` of :func:`~schedopt.sia.build.build_formulation`
whose model is a :class:`DirectModel`: its array form (what every backend reads first, ``model.to_arrays()``) is
stacked straight from the constraint families (:func:`~schedopt.sia.build.family_rows`), and the named model (blocks,
families, labels) is built by :func:`~schedopt.sia.build.build_formulation` the first time anything else is asked of
it (``solution.model.blocks``, an export, a backend that reads labels). :func:`prepare` classifies the rows from the
families (the at-most-one rows are the jobs' rows; the knapsack rows the GPU and virtual-node rows that can bind)
instead of :func:`schedopt.mckp.detect` reading them back from the matrix, presolves them with
:func:`schedopt.mckp.presolve_arrays` (in one pass, column by column, where no GPU type has virtual-node rows) and
hands the structure to the ``mckp`` backend (:func:`schedopt.mckp.remember`). Where a round is outside what this route covers (a coefficient the
model would refuse or drop, a GPU row that is itself an at-most-one row, a single-column GPU row that fixes a
column, a proof of infeasibility), the model route runs instead: the answer is the same either way
(``tests/test_sia_direct.py`` compares the arrays, the classification, the presolved structure and the solves of
both routes on random rounds).
"""

from __future__ import annotations

import functools
import math
import threading
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from ..model import INF, MAX_MAGNITUDE, TINY_COEFFICIENT, LinearModel, ModelArrays, VarKind
from ..problem import Formulation, Structure
from .build import FamilyRows, SiaBuildCache, build_formulation, canonical_csr, family_rows, linear_objective
from .pairs import PairTable
from .round import SiaRound

if TYPE_CHECKING:
    from ..mckp.structure import Detected, MckpStructure

__all__ = ["DirectArrays", "DirectModel", "classify", "formulation", "model_arrays", "prepare", "structure"]

_LOCK = threading.RLock()  # one build of a DirectModel (or its matrix) at a time (the race backend's thread may ask)
_INT32_MAX = int(np.iinfo(np.int32).max)


class DirectArrays(ModelArrays):
    """The array form of a Sia round's model whose constraint matrix ``A`` is made the first time it is read:
    ``c``, the bounds, the integrality, the sense and the constant are arrays at once, and the rows' activities
    (:meth:`row_activity`, what :func:`schedopt.results.solution_violation` asks), ``num_rows`` and
    :meth:`csr_arrays` come from the constraint families' arrays (:class:`~schedopt.sia.build.FamilyRows`) without
    the matrix; ``A`` (the CSR ``schedopt.model.stack_csr`` makes of the families, array for array) is made for
    whatever reads it (another backend, an export). A pickle or copy of it is a plain
    :class:`~schedopt.model.ModelArrays`.

    Parameters
    ----------
    c, A, row_lower, row_upper, col_lower, col_upper, integrality, maximize, constant
        The fields of :class:`~schedopt.model.ModelArrays`; ``A`` may be ``None`` (made from ``rows`` when read).
    rows : FamilyRows or None
        The constraint families the matrix stacks (row order: jobs, GPU types, virtual nodes, forced pairs);
        ``None`` (a ``dataclasses.replace`` of one): ``A`` is given and everything is read from it.
    """

    def __init__(self, c: np.ndarray, A: Any, row_lower: np.ndarray, row_upper: np.ndarray, col_lower: np.ndarray,
                 col_upper: np.ndarray, integrality: np.ndarray, maximize: bool, constant: float, *,
                 rows: FamilyRows | None = None) -> None:
        if A is None and rows is None:
            raise TypeError("DirectArrays needs its matrix A or the families it stacks (rows)")
        d = self.__dict__  # (a frozen dataclass: its fields set once, here)
        d.update(c=c, row_lower=row_lower, row_upper=row_upper, col_lower=col_lower, col_upper=col_upper,
                 integrality=integrality, maximize=maximize, constant=constant, _rows=rows)
        if A is not None:
            d["A"] = A

    def __getattr__(self, name: str) -> Any:
        # only for attributes the instance does not hold yet: the matrix, made once
        rows: FamilyRows | None = self.__dict__.get("_rows")
        if name != "A" or rows is None:
            raise AttributeError(name)
        with _LOCK:
            A = self.__dict__.get("A")
            if A is None:
                data, indices, indptr = rows.csr_arrays()
                A = self.__dict__["A"] = canonical_csr(data, indices, indptr, (rows.n_rows, rows.n_cols))
            return A

    @property
    def num_rows(self) -> int:
        rows = self.rows
        return int(self.A.shape[0]) if rows is None else rows.n_rows

    @property
    def rows(self) -> FamilyRows | None:
        """The constraint families (their arrays; ``None``: read from ``A``)."""
        return self.__dict__.get("_rows")

    def csr_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        A, rows = self.__dict__.get("A"), self.rows
        return rows.csr_arrays() if A is None and rows is not None else super().csr_arrays()

    def row_activity(self, x: np.ndarray) -> np.ndarray:
        rows = self.rows
        return super().row_activity(x) if rows is None else rows.activity(np.asarray(x, dtype=np.float64))

    def row_magnitude(self, ax: np.ndarray) -> np.ndarray:
        rows = self.rows  # (every coefficient is positive: |A| @ ax is A @ ax)
        return super().row_magnitude(ax) if rows is None else rows.activity(np.asarray(ax, dtype=np.float64))

    def __reduce__(self) -> tuple[Any, ...]:
        return (ModelArrays, (self.c, self.A, self.row_lower, self.row_upper, self.col_lower, self.col_upper,
                              self.integrality, self.maximize, self.constant))

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        return self.__reduce__()


class DirectModel(LinearModel):
    """A Sia round's :class:`~schedopt.LinearModel` whose array form is known before the model is built: ``name``,
    ``structure``, ``sense``, ``num_cols``, ``num_rows``, ``build_seconds`` and ``to_arrays()`` answer at once;
    any other use (blocks, families, labels, a change) first builds the model with
    :func:`~schedopt.sia.build.build_formulation`, after which it is that model (its array form the same arrays,
    value for value). A pickle or copy of it is a plain :class:`~schedopt.LinearModel`."""

    def __init__(self, problem: SiaRound, cache: SiaBuildCache | None, rows: FamilyRows, arrays: ModelArrays,
                 build_seconds: float) -> None:
        # (no LinearModel.__init__: the fields it sets come from the built model, on demand)
        d = self.__dict__
        d["_direct"] = (problem, cache, rows)
        d["name"] = "sia"
        d["_structure"] = Structure.MCKP
        d["_sense"] = "maximize" if arrays.maximize else "minimize"
        d["num_cols"] = arrays.num_cols
        d["num_rows"] = arrays.num_rows
        d["build_seconds"] = build_seconds
        d["_cache"] = arrays

    @property
    def built(self) -> bool:
        """Whether the named model has been built (the first use beyond the array form builds it)."""
        return "_direct" not in self.__dict__

    def build_now(self) -> None:
        """Build the named model now (what any use beyond the array form does first)."""
        with _LOCK:
            d = self.__dict__
            got = d.get("_direct")
            if got is None:
                return
            problem, cache, _ = got
            m = build_formulation(problem, cache).model
            keep = {"build_seconds": d["build_seconds"], "_cache": d["_cache"]}
            d.update(m.__dict__)
            d.update(keep)  # the arrays already handed out (the same values: tests/test_sia_direct.py)
            del d["_direct"]

    def __getattr__(self, name: str) -> Any:
        # only for attributes the instance does not hold yet: build the model, then answer from it
        if name.startswith("__") or "_direct" not in self.__dict__:
            raise AttributeError(name)
        self.build_now()
        return getattr(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        self.build_now()
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        self.build_now()
        super().__delattr__(name)

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        self.build_now()
        return (_plain_model, (dict(self.__dict__),))


def _plain_model(state: dict[str, Any]) -> LinearModel:
    """A :class:`~schedopt.LinearModel` holding ``state`` (a built :class:`DirectModel`'s, unpickled or copied)."""
    m = LinearModel.__new__(LinearModel)
    m.__dict__.update(state)
    return m


def _clean(values: np.ndarray) -> bool:
    """Whether the model keeps ``values`` as they are: finite, below ``MAX_MAGNITUDE``, no nonzero below
    ``TINY_COEFFICIENT`` (a NaN fails the first test)."""
    a = np.abs(values)
    return bool((a < MAX_MAGNITUDE).all()) and not bool(((a < TINY_COEFFICIENT) & (a != 0)).any())


@functools.cache
def _binary_bounds() -> tuple[np.float64, np.float64]:
    """The column bounds the model gives a binary block added with ``lower=0, upper=inf`` (as ``build_formulation``
    adds ``x``): its own scalar arithmetic, done once."""
    got = LinearModel._scalar_column_bounds(0.0, INF, VarKind.BINARY, 1)
    assert got is not None  # (plain scalars that pass its checks)
    return got[0][0], got[1][0]


def model_arrays(problem: SiaRound) -> tuple[DirectArrays, FamilyRows] | None:
    """The array form of ``problem``'s model without the change auxiliaries (``build_formulation(problem).model
    .to_arrays()``, array for array, its matrix made when first read: :class:`DirectArrays`) and its constraint
    families, without building the model; ``None`` when the model would refuse, drop or copy something (a
    non-finite, huge or tiny objective coefficient, a repeated column label, a family matrix it would not keep as
    it is): the model route then runs and says why."""
    pt = problem.valid_pairs()
    P = len(pt)
    c, const, sense = linear_objective(problem)
    if c.dtype != np.float64 or c.shape != (P,) or not _clean(c):
        return None
    const = float(const)
    if not (math.isfinite(const) and abs(const) < MAX_MAGNITUDE):
        return None
    if P and len({str(j) for j in pt.job_ids}) != len(pt.job_ids):  # the column labels would repeat
        return None
    rows = family_rows(problem)
    # the model keeps each family's matrix as it is when it is a canonical float64 / int32 CSR with clean data:
    # the jobs' and the forced rows' (ones) and the GPU rows' (GPU counts) are, by construction, where the sizes
    # keep scipy's int32 indices; the virtual-node rows' data is checked as the model checks it (their indices are
    # sorted within each row, without repeats, by construction)
    if max(P, rows.n_rows, 2 * P + int(rows.virtual_ptr[-1]) + rows.n_forced) > _INT32_MAX \
            or (rows.n_virtual and not _clean(rows.virtual_data)):
        return None
    J, T, V, F = rows.n_jobs, rows.n_types, rows.n_virtual, rows.n_forced
    lo, up = _binary_bounds()
    arrays = DirectArrays(
        c=c.copy(),
        A=None,
        row_lower=np.concatenate((np.full(J + T + V, -INF), np.full(F, 1.0))),
        row_upper=np.concatenate((np.full(J, 1.0), rows.gpu_upper, rows.virtual_upper, np.full(F, INF))),
        col_lower=np.full(P, lo),
        col_upper=np.full(P, up),
        integrality=np.full(P, 1, dtype=np.uint8),
        maximize=sense == "maximize",
        constant=const,
        rows=rows,
    )
    return arrays, rows


def formulation(problem: SiaRound, cache: SiaBuildCache | None = None) -> Formulation[PairTable]:
    """:func:`~schedopt.sia.build.build_formulation` with its model a :class:`DirectModel` (built on demand) where
    the round is in this route's reach (no change auxiliaries, :func:`model_arrays` answers); the built model
    otherwise."""
    s = problem.settings
    if s.change_penalty > 0 and s.change_form == "auxiliary":
        return build_formulation(problem, cache)
    pt = problem.valid_pairs()
    t0 = time.perf_counter()
    got = model_arrays(problem)
    if got is None:
        return build_formulation(problem, cache)
    arrays, rows = got
    model = DirectModel(problem, cache, rows, arrays, pt.seconds + (time.perf_counter() - t0))
    return Formulation(model=model, inverse=pt, structure=Structure.MCKP, problem="sia")


class _Labels:
    """The row labels of a Sia model (``<family>[<row label>]``), from the pair table, as the model names its rows
    (``ConstraintFamily.label_of``) for :func:`schedopt.mckp.presolve_arrays`' knapsack labels and reasons."""

    def __init__(self, problem: SiaRound, rows: FamilyRows) -> None:
        self.problem, self.rows = problem, rows

    def row(self, r: int) -> str:
        pt, rows = self.problem.valid_pairs(), self.rows
        J, T, V = rows.n_jobs, rows.n_types, rows.n_virtual
        if r < J:
            return f"one_config_per_job[{pt.job_ids[r]}]"
        if r < J + T:
            return f"gpu_capacity[{self.problem.cluster.type_names[r - J]}]"
        if r < J + T + V:
            return f"virtual_node_capacity[{rows.virtual_labels[r - J - T]}]"
        k = r - J - T - V
        if k < rows.forced_cols.size:
            return f"forced_config[{pt.job_ids[int(pt.job[rows.forced_cols[k]])]}]"
        return f"row {r}"


def classify(problem: SiaRound, rows: FamilyRows, arrays: ModelArrays) -> Detected | None:
    """:func:`schedopt.mckp.detect` of the model from its families: the at-most-one rows are the rows of the jobs
    with two pairs or more (in job order), the knapsack rows the GPU and virtual-node rows with two columns or
    more whose columns can exceed the capacity, the columns fixed to 1 the forced pairs. ``None`` where detect would
    decide otherwise or more (a knapsack-candidate row that is itself an at-most-one row, a single-column capacity
    row that fixes its column, an infeasible row, more than ``MAX_KNAPSACK_ROWS`` knapsack rows)."""
    from ..mckp.structure import MAX_KNAPSACK_ROWS, TOL, Detected

    data, _, indptr = arrays.csr_arrays()
    J, T, V = rows.n_jobs, rows.n_types, rows.n_virtual
    P = arrays.num_cols
    nnz = indptr[1:] - indptr[:-1]
    # the capacity rows (GPU types, virtual nodes): J .. J+T+V-1
    cap_lo, cap_hi = J, J + T + V
    cn = nnz[cap_lo:cap_hi]
    u = arrays.row_upper[cap_lo:cap_hi]
    if (u < -TOL).any():  # an empty or any capacity row below 0 proves infeasibility (detect names it)
        return None
    ptr = indptr[cap_lo : cap_hi + 1]
    dc = data[ptr[0] : ptr[-1]]  # the capacity rows' entries (contiguous rows: reduceat over their starts)
    single = np.flatnonzero(cn == 1)
    if single.size:
        a = dc[ptr[single] - ptr[0]]
        # detect fixes the column to 0 when 1 does not fit: left to the model route (rare)
        if not (u[single] >= a - TOL * np.maximum(1.0, np.abs(a))).all():
            return None
    knap = np.flatnonzero(cn >= 2)
    if knap.size:
        nonempty = np.flatnonzero(cn > 0)
        starts = ptr[nonempty] - ptr[0]
        pm = np.searchsorted(nonempty, knap)  # each multi row's segment among the nonempty rows
        tot = np.add.reduceat(dc, starts)[pm]
        rmin = np.minimum.reduceat(dc, starts)[pm]
        rmax = np.maximum.reduceat(dc, starts)[pm]
        um = u[knap]
        redundant = ~np.isfinite(um) | (tot <= um + TOL)
        ratio = np.where(rmax > 0, um / np.where(rmax > 0, rmax, 1.0), np.inf)
        eligible = (~redundant) & (rmin == rmax) & (rmax > 0) & (ratio >= 1 - TOL) & (ratio < 2 - TOL)
        if eligible.any() or (rmin < 0).any():
            return None
        knap = knap[~redundant]
    if knap.size > MAX_KNAPSACK_ROWS:
        return None
    pt = problem.valid_pairs()
    counts = nnz[:J]
    gub_rows = np.flatnonzero(counts >= 2)
    gidx = np.full(J, -1, dtype=np.int64)
    gidx[gub_rows] = np.arange(gub_rows.size)
    col_gub = gidx[pt.job] if P else np.full(0, -1, dtype=np.int64)
    lower = arrays.col_lower.copy()
    lower[rows.forced_cols] = 1.0
    return Detected(lower, arrays.col_upper.copy(), col_gub, gub_rows.astype(np.int64),
                    (knap + cap_lo).astype(np.int64), None, np.repeat(np.arange(nnz.size), nnz))


def structure(model: DirectModel) -> MckpStructure | None:
    """The presolved :class:`~schedopt.mckp.MckpStructure` of an unbuilt :class:`DirectModel` (what
    :func:`schedopt.mckp.analyze` gives for the built model, field for field), or ``None`` where the model route
    must decide (see :func:`classify`)."""
    from ..mckp.structure import presolve_arrays

    got = model.__dict__.get("_direct")
    if got is None:
        return None
    problem, _, rows = got
    t0 = time.perf_counter()
    arrays = model.to_arrays()
    if rows.n_virtual == 0:
        st = _gpu_rows_structure(problem, rows, arrays)
    else:
        d = classify(problem, rows, arrays)
        st = None if d is None else presolve_arrays(arrays, d, _Labels(problem, rows).row)
    if st is None or st.infeasible is not None:  # the model route names it (and proves it) the same way
        return None
    st.stats["detect_seconds"] = time.perf_counter() - t0
    return st


def _gpu_rows_structure(problem: SiaRound, rows: FamilyRows, arrays: ModelArrays) -> MckpStructure | None:
    """:func:`classify` and :func:`schedopt.mckp.presolve_arrays` in one pass for a model without virtual-node
    rows (every type's nodes a power of two), column by column: each column lies in one capacity row, its GPU type's,
    with its GPU count as weight (so the knapsack weights are one slot per column). The same structure, field for
    field (``tests/test_sia_direct.py`` compares the two paths); ``None`` where :func:`classify` answers ``None``,
    or where the presolve proves the round infeasible (the model route names why)."""
    from ..mckp.structure import MAX_KNAPSACK_ROWS, TOL, MckpStructure, group_columns

    n = arrays.num_cols
    J = rows.n_jobs
    u, tix, w = rows.gpu_upper, rows.pair_type, rows.pair_gpus
    T = int(u.size)
    ul = u.tolist()
    if any(x < -TOL for x in ul):
        return None
    # detect: the GPU rows' classes, type by type (a few types: Python floats, the same float64 arithmetic as
    # classify's arrays); one column: a bound, left to the model route when it fixes the column to 0. The totals are
    # sums of GPU counts (whole numbers: exact in any order), the extremes need no order.
    cn = np.bincount(tix, minlength=T).tolist()
    tot = np.bincount(tix, weights=w, minlength=T).tolist()
    lo = np.full(T, np.inf)
    hi = np.full(T, -np.inf)
    np.minimum.at(lo, tix, w)
    np.maximum.at(hi, tix, w)
    rmin, rmax = lo.tolist(), hi.tolist()
    knap: list[int] = []
    for t in range(T):
        if cn[t] == 0:
            continue
        un, top = ul[t], rmax[t]
        if cn[t] == 1:
            if not un >= top - TOL * max(1.0, abs(top)):
                return None
            continue
        if rmin[t] < 0:
            return None
        if not math.isfinite(un) or tot[t] <= un + TOL:  # never binds
            continue
        ratio = un / top if top > 0 else math.inf
        if rmin[t] == top and top > 0 and ratio >= 1 - TOL and ratio < 2 - TOL:
            return None  # an at-most-one row itself: left to detect
        knap.append(t)
    knap_t = np.array(knap, dtype=np.int64)
    K = len(knap)
    if K > MAX_KNAPSACK_ROWS:
        return None
    pt = problem.valid_pairs()
    per_job = rows.job_ptr[1:] - rows.job_ptr[:-1]
    gub_rows = (per_job >= 2).nonzero()[0]  # (np.flatnonzero, without its ravel)
    G = int(gub_rows.size)
    gidx = np.full(J, -1, dtype=np.int64)
    gidx[gub_rows] = np.arange(G)
    col_gub = gidx[pt.job]
    every = K == T and tix.dtype == np.int64  # every GPU row binds: each column's knapsack row is its type
    if every:
        col_k = tix
    else:
        kpos = np.full(T, -1, dtype=np.int64)
        kpos[knap_t] = np.arange(K)
        col_k = kpos[tix]  # each column's knapsack row (-1: its GPU row never binds)
    # presolve
    capfull = u[knap_t]
    forced = rows.forced_cols
    nf = int(forced.size)
    fg = col_gub[forced] if nf else forced
    if nf:
        fg = fg[fg >= 0]
    if fg.size and np.bincount(fg).max() > 1:
        return None  # two forced columns in one group: infeasible
    cap = capfull
    if K and nf:
        fk = col_k[forced]
        on = fk >= 0
        use = np.bincount(fk[on], weights=w[forced][on], minlength=K)[:K]
        cap = capfull - use
        if (cap < -TOL * np.maximum(1.0, np.abs(capfull))).any():
            return None  # the forced columns exceed a capacity: infeasible
    cap = np.maximum(cap, 0.0)
    c = arrays.c
    sign = 1.0 if arrays.maximize else -1.0
    val = sign * c
    const = sign * (arrays.constant + (float(c[forced].sum()) if nf else 0.0))
    keep = val > 0
    if nf:
        keep[forced] = False
    if fg.size:
        in_fixed = np.zeros(max(G, 1), dtype=bool)
        in_fixed[fg] = True
        keep &= ~((col_gub >= 0) & in_fixed[np.maximum(col_gub, 0)])
    n_nonpos = int(np.count_nonzero(val <= 0))
    # a column that does not fit alone can never be chosen
    if every:
        ck = cap[col_k]
        keep[w > ck + TOL * np.maximum(1.0, ck)] = False
    else:
        inK = (col_k >= 0).nonzero()[0]
        if inK.size:
            ck = cap[col_k[inK]]
            keep[inK[w[inK] > ck + TOL * np.maximum(1.0, ck)]] = False
    cols, group, starts, counts = group_columns(keep, col_gub, G)
    kc = col_k[cols]
    if every:  # (every column in a knapsack row: no padding slot)
        ri, wt = kc.reshape(-1, 1), w[cols].reshape(-1, 1)
    else:
        inc = kc >= 0
        ri, wt = np.where(inc, kc, K).reshape(-1, 1), np.where(inc, w[cols], 0.0).reshape(-1, 1)
    names = problem.cluster.type_names
    return MckpStructure(
        maximize=arrays.maximize, n_cols=n, gub_rows=gub_rows, knap_rows=knap_t + J,
        knap_labels=[f"gpu_capacity[{names[t]}]" for t in knap], forced=forced, cols=cols,
        group=group, starts=starts, counts=counts, value=val[cols], ri=ri, wt=wt,
        cap=cap, const=const, infeasible=None,
        stats={"columns": n, "columns_forced": nf, "columns_presolved": int(cols.size),
               "columns_dropped_nonpositive": n_nonpos, "groups": int(starts.size), "knapsack_rows": K,
               "gub_rows": G},
    )


def prepare(model: LinearModel) -> bool:
    """Hand the directly built structure of an unbuilt :class:`DirectModel` to :func:`schedopt.mckp.analyze` (so
    the ``mckp`` backend skips the detection); whether it did."""
    if not isinstance(model, DirectModel) or model.built:
        return False
    st = structure(model)
    if st is None:
        return False
    from ..mckp.structure import remember

    remember(model, st)
    return True
