"""Exporters: a :class:`~schedopt.LinearModel` handed to other tools (HiGHS, pyomo, linopy, MPS / LP files), and
readers that take a model back.

Each imports its tool lazily, inside the function; ``LinearModel.to_pyomo()``, ``write_mps()`` and ``write_lp()``
are thin delegates to this module, so the model itself imports no solver and no backend. The readers
(:func:`read_model_parts`, :func:`linopy_parts`) return neutral arrays, a :class:`ModelParts`, that
:meth:`LinearModel.from_parts <schedopt.LinearModel.from_parts>` assembles: this module never imports the model
(one direction in the import graph; ``LinearModel.read_mps`` / ``read_lp`` / ``from_linopy`` are the readers users
call).
"""

from __future__ import annotations

import os
import re
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import InputError
from .model import MODEL_IO, BlockParts, FamilyParts, LazyModule, LinearModel, ModelParts

if TYPE_CHECKING:
    import scipy.sparse as sp
else:
    sp = LazyModule("scipy.sparse", globals(), "sp")  # imported on first use (issue 42)

__all__ = ["BlockParts", "FamilyParts", "ModelParts", "from_linopy", "linopy_parts", "read_model", "read_model_parts",
           "rest_point", "to_highs", "to_linopy", "to_pyomo", "write_lp", "write_mps"]




def to_highs(model: LinearModel, names: bool = False) -> Any:
    """A ``highspy.Highs`` instance holding ``model`` (silent), passed as one row-wise matrix."""
    import highspy

    arr = model.to_arrays()
    lp = highspy.HighsLp()
    lp.num_col_ = arr.num_cols
    lp.num_row_ = arr.num_rows
    lp.col_cost_ = arr.c
    lp.col_lower_ = arr.col_lower
    lp.col_upper_ = arr.col_upper
    lp.row_lower_ = arr.row_lower
    lp.row_upper_ = arr.row_upper
    lp.offset_ = arr.constant
    lp.sense_ = highspy.ObjSense.kMaximize if arr.maximize else highspy.ObjSense.kMinimize
    A = arr.A
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_ = arr.num_cols
    lp.a_matrix_.num_row_ = arr.num_rows
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data
    if arr.is_mip:
        lp.integrality_ = [highspy.HighsVarType(int(v)) for v in arr.integrality]
    if names:
        lp.col_names_ = model.column_names()
        lp.row_names_ = model.row_names()
        lp.model_name_ = model.name
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(lp)
    return h


def _write(model: LinearModel, path: str, suffix: str) -> None:
    h = to_highs(model, names=True)
    _base, ext = os.path.splitext(str(path))
    target = str(path) if ext.lower() == suffix else str(path) + suffix
    h.writeModel(target)
    if target != str(path):
        os.replace(target, str(path))


def write_lp(model: LinearModel, path: str) -> None:
    """Write ``model`` in CPLEX LP format with readable names (via HiGHS)."""
    _write(model, path, ".lp")


def write_mps(model: LinearModel, path: str) -> None:
    """Write ``model`` in (free) MPS format with readable names (via HiGHS)."""
    _write(model, path, ".mps")


# ------------------------------------------------------------------ reading MPS / LP files
_NAMED = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\((.*)\)$")


def _runs(keys: list[Any]) -> list[tuple[int, int]]:
    """(start, stop) of the maximal runs of equal consecutive keys."""
    out: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(keys) + 1):
        if i == len(keys) or keys[i] != keys[start]:
            out.append((start, i))
            start = i
    return out


def _unique_name(base: str, taken: set[str]) -> str:
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def _split(name: str, fallback: str) -> tuple[str, tuple[str, ...] | None]:
    m = _NAMED.match(name)
    if m is None:
        return fallback, None
    return m.group(1), tuple(m.group(2).split(","))


def _block_layout(parts: list[tuple[str, ...]]) -> tuple[tuple[int, ...], tuple[tuple[str, ...], ...]] | None:
    """Shape and per-axis labels when the labels enumerate a full grid in C order (as ``column_names`` writes)."""
    ndim = len(parts[0])
    if any(len(p) != ndim for p in parts):
        return None
    axes = [tuple(dict.fromkeys(p[a] for p in parts)) for a in range(ndim)]
    shape = tuple(len(ax) for ax in axes)
    if int(np.prod(shape)) != len(parts):
        return None
    grid = [tuple(axes[a][i] for a, i in enumerate(idx)) for idx in np.ndindex(*shape)]
    return (shape, tuple(axes)) if grid == parts else None


def read_model(path: str, name: str | None = None) -> LinearModel:
    """Deprecated: call ``LinearModel.read_mps(path)`` / ``LinearModel.read_lp(path)`` (or
    ``LinearModel.from_parts(read_model_parts(path))``)."""
    warnings.warn("schedopt.export.read_model is deprecated: use LinearModel.read_mps / read_lp (or "
                  "LinearModel.from_parts(schedopt.export.read_model_parts(path)))", DeprecationWarning, stacklevel=2)
    return LinearModel.from_parts(read_model_parts(path, name))


def read_model_parts(path: str, name: str | None = None) -> ModelParts:
    """Read an MPS or LP file (through HiGHS) as the parts of a :class:`~schedopt.LinearModel`, rebuilding the named blocks
    and families from the names ``write_mps`` / ``write_lp`` give (``x(j3,c5)``, ``gpu_capacity(t4)``): consecutive
    columns (rows) with the same prefix and kind form one block (family), a full label grid an n-d block. Names
    of other tools become one block ``x`` / one family ``rows`` labelled by the names. Writing the model again
    gives the same column and row names."""
    import highspy

    if not os.path.isfile(str(path)):
        raise InputError("path", str(path), "is no file")
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    if h.readModel(str(path)) == highspy.HighsStatus.kError:
        raise InputError("path", str(path), "HiGHS could not read it as an MPS or LP model")
    lp = h.getLp()
    n, mrows = int(lp.num_col_), int(lp.num_row_)
    a = lp.a_matrix_
    start, index, value = np.asarray(a.start_), np.asarray(a.index_), np.asarray(a.value_)
    if a.format_ == highspy.MatrixFormat.kRowwise:
        A = sp.csr_matrix((value, index, start), shape=(mrows, n))
    else:
        A = sp.csc_matrix((value, index, start), shape=(mrows, n)).tocsr()
    integ = np.asarray(lp.integrality_, dtype=np.int64) if len(lp.integrality_) else np.zeros(n, dtype=np.int64)
    lo, up = np.asarray(lp.col_lower_, dtype=float), np.asarray(lp.col_upper_, dtype=float)
    lo[lo <= -highspy.kHighsInf] = -np.inf
    up[up >= highspy.kHighsInf] = np.inf
    rl, ru = np.asarray(lp.row_lower_, dtype=float), np.asarray(lp.row_upper_, dtype=float)
    rl[rl <= -highspy.kHighsInf] = -np.inf
    ru[ru >= highspy.kHighsInf] = np.inf
    cnames = list(lp.col_names_) if len(lp.col_names_) == n else [f"c{j}" for j in range(n)]
    rnames = list(lp.row_names_) if len(lp.row_names_) == mrows else [f"r{i}" for i in range(mrows)]
    sense = "maximize" if lp.sense_ == highspy.ObjSense.kMaximize else "minimize"
    model_name = name or (lp.model_name_ if getattr(lp, "model_name_", "") else os.path.splitext(os.path.basename(str(path)))[0])
    blocks: list[BlockParts] = []
    families: list[FamilyParts] = []
    kinds = np.where(integ == 1, np.where((lo >= 0) & (up <= 1), 2, 1), 0)
    split = [_split(c, "x") for c in cnames]
    # blocks: columns grouped by (prefix, kind) in order of first appearance (an LP file lists columns in the order
    # they first appear, not in the model's order); an n-d label grid is put back in C order
    keys = [(p, lab is None, int(k)) for (p, lab), k in zip(split, kinds, strict=True)]
    first: dict[Any, list[int]] = {}
    for j, key in enumerate(keys):
        first.setdefault(key, []).append(j)
    perm: list[int] = []
    specs: list[tuple[Any, list[int]]] = []
    for key, cols in first.items():
        labs0 = split[cols[0]][1]
        if not key[1] and labs0 is not None and len(labs0) > 1 and len({len(split[j][1] or ()) for j in cols}) == 1:
            parts = [split[j][1] or () for j in cols]
            ndim = len(labs0)
            axes = [list(dict.fromkeys(q[a] for q in parts)) for a in range(ndim)]
            pos = {q: j for q, j in zip(parts, cols, strict=True)}
            grid = [tuple(axes[a][i] for a, i in enumerate(idx)) for idx in np.ndindex(*[len(x) for x in axes])]
            if len(grid) == len(cols) and all(g in pos for g in grid):
                cols = [pos[g] for g in grid]
        specs.append((key, cols))
        perm.extend(cols)
    P = np.asarray(perm, dtype=np.int64)
    A = A[:, P] if n else A
    lo, up, kinds = lo[P], up[P], kinds[P]
    cost = np.asarray(lp.col_cost_, dtype=float)[P] if n else np.zeros(0)
    cnames = [cnames[j] for j in perm]
    split = [split[j] for j in perm]
    taken: set[str] = set()
    s0 = 0
    for (prefix, _plain, kcode), cols in specs:
        s1 = s0 + len(cols)
        labs = split[s0][1]
        kind = ("continuous", "integer", "binary")[kcode]
        bname = _unique_name(prefix, taken)
        if labs is None:
            blocks.append(BlockParts(bname, s1 - s0, kind, lo[s0:s1], up[s0:s1], cnames[s0:s1]))
        else:
            parts = [split[j][1] or () for j in range(s0, s1)]
            layout = _block_layout(parts)
            if layout is not None and len(layout[0]) > 1:
                shape, axes_t = layout
                blocks.append(BlockParts(bname, shape, kind, lo[s0:s1].reshape(shape), up[s0:s1].reshape(shape),
                                         axes_t))
            else:
                blocks.append(BlockParts(bname, s1 - s0, kind, lo[s0:s1], up[s0:s1], [",".join(q) for q in parts]))
        s0 = s1
    # HiGHS writes a ranged row to an LP file as two rows "<name>lo" (>=) and "<name>up" (<=): merge them back
    where = {r: i for i, r in enumerate(rnames)}
    keep = np.ones(mrows, dtype=bool)
    for i, r in enumerate(rnames):
        if r.endswith("lo") and r[:-2] + "up" in where and r[:-2] not in where:
            k = where[r[:-2] + "up"]
            if (A[i] != A[k]).nnz == 0 and np.isinf(ru[i]) and np.isinf(rl[k]):
                ru[i] = ru[k]
                rnames[i] = r[:-2]
                keep[k] = False
    if not keep.all():
        A = A[np.flatnonzero(keep)]
        rl, ru = rl[keep], ru[keep]
        rnames = [r for r, k in zip(rnames, keep, strict=True) if k]
    rsplit = [_split(r, "rows") for r in rnames]
    ftaken: set[str] = set(taken)  # names are unique across blocks and families
    for s0, s1 in _runs([(p, lab is None) for p, lab in rsplit]):
        prefix, labs = rsplit[s0]
        fname = _unique_name(prefix, ftaken)
        labels = rnames[s0:s1] if labs is None else [",".join(rsplit[i][1] or ()) for i in range(s0, s1)]
        families.append(FamilyParts(fname, sp.csr_matrix(A[s0:s1]), rl[s0:s1], ru[s0:s1], labels))
    return ModelParts(model_name, sense, blocks, families, cost, float(lp.offset_))


def _simple_unique(labels: Any) -> bool:
    """Labels usable as a pyomo index: unique strings or integers (not booleans)."""
    vals = list(labels)
    ok = all(isinstance(v, (str, int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in vals)
    return ok and len(set(vals)) == len(vals)


def _index(shape: tuple[int, ...], labels: Any = None) -> list[Any]:
    """The pyomo index of a block: its labels per axis when they are unique strings / integers (``x["j3", "c5"]``),
    positions otherwise (``x[3, 5]``)."""
    axes: list[list[Any]] = []
    for a, n in enumerate(shape):
        lab = labels[a] if labels is not None and labels[a] is not None else None
        if lab is not None and len(lab) == n and _simple_unique(lab):
            axes.append([v.item() if isinstance(v, np.integer) else v for v in lab])
        else:
            axes.append(list(range(n)))
    if len(shape) == 1:
        return axes[0]
    return [tuple(axes[a][i] for a, i in enumerate(idx)) for idx in np.ndindex(*shape)]


def rest_point(arr: Any) -> np.ndarray:
    """Values for variables that appear nowhere: 0 clipped into their bounds (rounded inward for integers)."""
    x = np.clip(0.0, arr.col_lower, arr.col_upper)
    return np.where(arr.integrality == 1, np.clip(np.round(x), np.ceil(arr.col_lower), np.floor(arr.col_upper)), x)


def to_pyomo(model: LinearModel) -> Any:
    """A pyomo ``ConcreteModel``: ``m.<block>[i, j]`` variables, ``m.<family>[row]`` constraints, ``m.objective``,
    indexed by the model's labels where they are unique strings or integers (``m.x["j3", "c5"]``,
    ``m.gpu_capacity["t4"]``), by positions otherwise.

    ``m._schedopt_vars`` lists every pyomo variable in the model's column order.
    """
    import pyomo.environ as pyo
    from pyomo.core.expr.numeric_expr import LinearExpression

    arr = model.to_arrays()
    pm = pyo.ConcreteModel(name=model.name)
    cols: list[Any] = []
    for b in model.blocks.values():
        lo = arr.col_lower[b.start : b.stop]
        up = arr.col_upper[b.start : b.stop]
        integ = bool(arr.integrality[b.start : b.stop].any())
        idx = _index(b.shape, b.labels) if b.shape else [None]
        pos = {k: i for i, k in enumerate(idx)}

        def bounds(_m, *key, lo=lo, up=up, pos=pos):
            i = pos[key[0] if len(key) == 1 else tuple(key)] if key else 0
            return (None if not np.isfinite(lo[i]) else float(lo[i]), None if not np.isfinite(up[i]) else float(up[i]))

        domain = pyo.Integers if integ else pyo.Reals
        if b.shape:
            var = pyo.Var(idx, domain=domain, bounds=bounds)
        else:
            var = pyo.Var(domain=domain, bounds=bounds)
        pm.add_component(b.name, var)
        cols.extend(var[k] for k in idx) if b.shape else cols.append(var)
    A = arr.A.tocsr()
    for f in model.families.values():
        if f.labels is not None and len(f.labels) == f.size and _simple_unique(f.labels):
            rows = [v.item() if isinstance(v, np.integer) else v for v in f.labels]
        else:
            rows = list(range(f.size))
        rpos = {k: i for i, k in enumerate(rows)}

        def rule(_m, key, f=f, rpos=rpos):
            g = f.start + rpos[key]
            s, e = A.indptr[g], A.indptr[g + 1]
            lo = arr.row_lower[g]
            up = arr.row_upper[g]
            if not (np.isfinite(lo) or np.isfinite(up)):
                return pyo.Constraint.Skip  # a free row constrains nothing (and pyomo refuses (None, expr, None))
            expr = LinearExpression(
                constant=0.0, linear_coefs=A.data[s:e].tolist(), linear_vars=[cols[j] for j in A.indices[s:e]]
            )
            return (None if not np.isfinite(lo) else float(lo), expr, None if not np.isfinite(up) else float(up))

        pm.add_component(f.name, pyo.Constraint(rows, rule=rule))
    nz = np.flatnonzero(arr.c)
    obj = LinearExpression(
        constant=float(arr.constant), linear_coefs=arr.c[nz].tolist(), linear_vars=[cols[j] for j in nz]
    )
    pm.objective = pyo.Objective(expr=obj, sense=pyo.maximize if arr.maximize else pyo.minimize)
    pm._schedopt_vars = cols
    return pm


# ------------------------------------------------------------------ linopy
#: the fixed variable that carries a nonzero objective constant through linopy (whose objective has no constant)
LINOPY_CONSTANT = "objective_constant"


def _coords(values: Any, n: int) -> list[Any]:
    if values is not None and len(values) == n and _simple_unique(values):
        return [v.item() if isinstance(v, np.integer) else v for v in values]
    return list(range(n))


def _linopy_expr(lm: Any, A: sp.csr_matrix, col_label: np.ndarray, dim: str | None, coords: list[Any] | None) -> Any:
    """A linopy LinearExpression holding the rows of ``A`` (one per coordinate of ``dim``; no dimension when None)."""
    import linopy
    import xarray as xr

    A = sp.csr_matrix(A)
    nnz = np.diff(A.indptr)
    k = max(1, int(nnz.max(initial=0)))
    m = A.shape[0]
    C = np.zeros((m, k))
    V = np.full((m, k), -1, dtype=np.int64)
    if A.nnz:
        r = np.repeat(np.arange(m), nnz)
        slot = np.arange(A.nnz) - np.repeat(A.indptr[:-1], nnz)
        C[r, slot] = A.data
        V[r, slot] = col_label[A.indices]
    if dim is None:
        ds = xr.Dataset({"coeffs": ("_term", C[0]), "vars": ("_term", V[0])})
    else:
        ds = xr.Dataset({"coeffs": ((dim, "_term"), C), "vars": ((dim, "_term"), V)}, coords={dim: coords})
    return linopy.LinearExpression(ds, lm)


def to_linopy(model: LinearModel) -> Any:
    """A ``linopy.Model``: one variable per block (dimensions ``<block>_<axis>``, coordinates the block's labels when
    unique, positions otherwise; an integer block with bounds other than [0, 1] stays integer), one constraint per
    family and sign (``<family>`` for a family of one sign, ``<family>_lower`` / ``<family>_upper`` for the two
    sides of ranged rows; dimension ``<family>_row``), the objective; a nonzero constant rides on a variable
    ``LINOPY_CONSTANT`` fixed at 1 (linopy's objective has no constant). Needs linopy (an optional extra)."""
    import linopy
    import pandas as pd
    import xarray as xr

    arr = model.to_arrays()
    lm = linopy.Model()
    col_label = np.full(arr.num_cols, -1, dtype=np.int64)
    for b in model.blocks.values():
        integ = arr.integrality[b.start : b.stop]
        if integ.size and integ.min() != integ.max():
            if len(b.shape) != 1:
                raise InputError(f"variables[{b.name}]", "mixed", "an n-d block mixing integer and continuous columns "
                                 "has no linopy form")
            parts: list[tuple[str, np.ndarray | None, bool]] = [
                (b.name, np.flatnonzero(integ == 1), True), (f"{b.name}_continuous", np.flatnonzero(integ == 0), False)]
        else:
            parts = [(b.name, None, bool(integ.size and integ[0] == 1))]
        for vname, sel, is_int in parts:
            if sel is None:
                shape = b.shape
                coords = [pd.Index(_coords(b.labels[a] if b.labels else None, n), name=f"{b.name}_{a}")
                          for a, n in enumerate(shape)]
                lo = arr.col_lower[b.start : b.stop].reshape(shape)
                up = arr.col_upper[b.start : b.stop].reshape(shape)
                cols = np.arange(b.start, b.stop)
            else:
                labs = _coords(b.labels[0] if b.labels else None, b.size)
                coords = [pd.Index([labs[i] for i in sel], name=f"{b.name}_0")]
                lo, up = arr.col_lower[b.start + sel], arr.col_upper[b.start + sel]
                cols = b.start + sel
            v = lm.add_variables(lower=xr.DataArray(lo, coords=coords), upper=xr.DataArray(up, coords=coords),
                                 name=vname, integer=is_int)
            col_label[cols] = np.asarray(v.labels.values).ravel()
    A = arr.A
    for f in model.families.values():
        rows = np.arange(f.start, f.stop)
        coords = _coords(f.labels, f.size)
        lo, up = arr.row_lower[rows], arr.row_upper[rows]
        eq = lo == up
        ge = np.isfinite(lo) & ~eq
        le = np.isfinite(up) & ~eq
        groups = [(eq, "="), (ge, ">="), (le, "<=")]
        used = [(mask, sign) for mask, sign in groups if mask.any()]
        for mask, sign in used:
            name = f.name if len(used) == 1 else f"{f.name}_{ {'=': 'equal', '>=': 'lower', '<=': 'upper'}[sign] }"
            idx = np.flatnonzero(mask)
            dim = f"{f.name}_row"
            cc = [coords[i] for i in idx]
            expr = _linopy_expr(lm, A[rows[idx]], col_label, dim, cc)
            rhs = xr.DataArray(lo[idx] if sign in ("=", ">=") else up[idx], coords={dim: cc}, dims=dim)
            lm.add_constraints(expr, sign, rhs, name=name)
    nz = np.flatnonzero(arr.c)
    c_cols, c_vals = nz, arr.c[nz]
    if arr.constant != 0.0:
        k = lm.add_variables(lower=1.0, upper=1.0, name=LINOPY_CONSTANT)
        c_lab = np.r_[col_label[c_cols], int(k.labels.values)]
        c_vals = np.r_[c_vals, arr.constant]
    else:
        c_lab = col_label[c_cols]
    ds = xr.Dataset({"coeffs": ("_term", c_vals if c_vals.size else np.zeros(1)),
                     "vars": ("_term", c_lab if c_lab.size else np.full(1, -1, dtype=np.int64))})
    lm.add_objective(linopy.LinearExpression(ds, lm), sense="max" if arr.maximize else "min")
    return lm


def from_linopy(lm: Any, name: str = "model") -> LinearModel:
    """Deprecated: call ``LinearModel.from_linopy(lm)`` (or ``LinearModel.from_parts(linopy_parts(lm))``)."""
    warnings.warn("schedopt.export.from_linopy is deprecated: use LinearModel.from_linopy (or "
                  "LinearModel.from_parts(schedopt.export.linopy_parts(lm)))", DeprecationWarning, stacklevel=2)
    return LinearModel.from_parts(linopy_parts(lm, name))


def linopy_parts(lm: Any, name: str = "model") -> ModelParts:
    """The parts of a :class:`~schedopt.LinearModel` from a linear ``linopy.Model``: one block per linopy variable (shape and
    labels from its coordinates; integer / binary kept), one family per linopy constraint (labels: its coordinates,
    joined by "," when it has several dimensions), the objective and its sense; the variable ``LINOPY_CONSTANT``
    written by :func:`to_linopy` becomes the objective constant again. Masked entries are an error."""
    M = lm.matrices
    vlabels = np.asarray(M.vlabels)
    clabels = np.asarray(M.clabels)
    vpos = {int(v): j for j, v in enumerate(vlabels)}
    cpos = {int(c): i for i, c in enumerate(clabels)}
    A = sp.csr_matrix(M.A)
    sense = str(lm.objective.sense)
    blocks: list[BlockParts] = []
    families: list[FamilyParts] = []
    names_taken: set[str] = set()  # names are unique across blocks and families
    perm: list[int] = []
    constant = 0.0
    c = np.asarray(M.c, dtype=float)
    vt = np.asarray(M.vtypes)
    lb, ub = np.asarray(M.lb, dtype=float), np.asarray(M.ub, dtype=float)
    for vname in lm.variables:
        var = lm.variables[vname]
        labs = np.asarray(var.labels.values)
        if (labs < 0).any():
            raise InputError(f"linopy.variables[{vname}]", "masked", "masked variables have no LinearModel form")
        flat = labs.ravel()
        cols = [vpos[int(v)] for v in flat if int(v) in vpos]
        if vname == LINOPY_CONSTANT and len(cols) == 1 and lb[cols[0]] == 1.0 == ub[cols[0]]:
            constant = float(c[cols[0]])
            continue
        if len(cols) != flat.size:
            continue  # a variable in no row and not in the objective: linopy leaves it out of its matrices
        cols_a = np.asarray(cols, dtype=np.int64)
        kinds = set(vt[cols_a].tolist())
        kind = "binary" if kinds == {"B"} else ("integer" if kinds <= {"I", "B"} else "continuous")
        shape = labs.shape
        labels: tuple[tuple[Any, ...], ...] | tuple[Any, ...] | None = None
        if shape:
            axes = tuple(tuple(var.indexes[d].tolist()) for d in var.labels.dims)
            labels = axes[0] if len(shape) == 1 else axes
        blocks.append(BlockParts(_unique_name(vname if vname.isidentifier() else "v", names_taken), shape if shape else 1, kind,
                                 lb[cols_a].reshape(shape) if shape else lb[cols_a],
                                 ub[cols_a].reshape(shape) if shape else ub[cols_a], labels))
        perm.extend(cols)
    perm_a = np.asarray(perm, dtype=np.int64)
    sign = np.asarray(M.sense)
    b = np.asarray(M.b, dtype=float)
    for cname in lm.constraints:
        con = lm.constraints[cname]
        labs = np.asarray(con.labels.values)
        flat = labs.ravel()
        rows = np.asarray([cpos[int(r)] for r in flat if int(r) >= 0 and int(r) in cpos], dtype=np.int64)
        if rows.size != flat.size:
            raise InputError(f"linopy.constraints[{cname}]", "masked", "masked constraints have no LinearModel form")
        lo = np.where(np.isin(sign[rows], (">", ">=", "=")), b[rows], -np.inf)
        up = np.where(np.isin(sign[rows], ("<", "<=", "=")), b[rows], np.inf)
        dims = con.labels.dims
        row_labels: list[str] | None = None
        if len(dims) == 1:
            row_labels = [str(v) for v in con.indexes[dims[0]].tolist()]
        elif dims:
            row_axes = [con.indexes[d].tolist() for d in dims]
            row_labels = [",".join(str(row_axes[a][i]) for a, i in enumerate(t)) for t in np.ndindex(*labs.shape)]
        fname = cname if cname.isidentifier() else "c"
        families.append(FamilyParts(_unique_name(fname, names_taken),
                                    sp.csr_matrix(A[rows][:, perm_a]) if perm_a.size else sp.csr_matrix((rows.size, 0)),
                                    lo, up, row_labels))
    return ModelParts(name, "maximize" if sense == "max" else "minimize", blocks, families,
                      c[perm_a] if perm_a.size else np.zeros(0), constant)


# LinearModel's conversions (write_lp, read_mps, to_linopy, ...) call these through the hook table the model
# defines: the exporters build on the model, the model imports none of them (schedopt/__init__ imports this module)
MODEL_IO.update(write_lp=write_lp, write_mps=write_mps, read_model_parts=read_model_parts, to_linopy=to_linopy,
                linopy_parts=linopy_parts, to_pyomo=to_pyomo)
