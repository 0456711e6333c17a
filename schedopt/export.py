"""Exporters: a :class:`~schedopt.LinearModel` handed to other tools (HiGHS, pyomo, MPS / LP files).

Each imports its tool lazily, inside the function; ``LinearModel.to_pyomo()``, ``write_mps()`` and ``write_lp()``
are thin delegates to this module, so the model itself imports no solver and no backend.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .model import LinearModel

__all__ = ["rest_point", "to_highs", "to_pyomo", "write_lp", "write_mps"]


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
