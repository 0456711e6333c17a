"""Gavel's allocation LPs from arrays (card: ``formulations/gavel.md``).

Every model has the block ``x`` (runnable jobs x GPU types: time fractions) and the families ``type_capacity`` and
``time_budget``; each objective adds its own block and family:

====================== =====================  ==============================================================
objective              extra block            extra family
====================== =====================  ==============================================================
``max_min``            ``t``                  ``fairness``: ``t <= sum_k W[j, k] x[j, k]``
``max_min`` (stage 2)  ``t >= t*``            ``fairness``; objective ``sum W x`` (Gavel's tie-break)
``ftf`` (at ``r``)     ``z``                  ``ftf``: ``z <= sum_k X[j, k] x[j, k] / need_j(r)``
``makespan``           ``s``                  ``makespan``: ``s <= sum_k X[j, k] x[j, k] T0 / rem_j``
``max_sum_throughput`` --                     --
``cost_slo``           --                     ``slo``: ``sum_k X[j, k] x[j, k] >= rem_j / slo_j``
====================== =====================  ==============================================================
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import InputError
from ..model import LinearModel
from ..problem import Formulation
from .spec import GavelSpec

__all__ = ["GavelIndex", "build", "ftf_need", "isolated_allocation", "normalized_weights", "runnable"]


@dataclass(frozen=True, eq=False)
class GavelIndex:
    """The inverse map of a Gavel model: ``rows`` are the positions (in ``spec.jobs``) of the jobs that have a
    column row in ``x``; ``stage`` says which model (``"main"``, ``"efficient"``, ``"ftf"``); ``ref_time`` is
    ``T0`` of the makespan model (makespan = ``T0 / s``); ``rho`` the ftf level the model was built at."""

    rows: np.ndarray
    types: tuple[str, ...]
    stage: str = "main"
    ref_time: float = float("nan")
    rho: float = float("nan")


def runnable(spec: GavelSpec) -> np.ndarray:
    """Positions of the jobs with a positive throughput on some GPU type."""
    return np.flatnonzero((spec.throughputs > 0).any(axis=1))


def normalized_weights(spec: GavelSpec) -> np.ndarray:
    """``W[j, k] = X[j, k] s_j / (w_j prop_j)`` with ``prop_j = sum_k X[j, k] c_k / sum_k c_k`` (the job's
    throughput under an equal split of the cluster: Gavel's ``ProportionalPolicy``); 0 where ``prop_j = 0``."""
    cap = spec.capacity
    C = cap.sum()
    prop = spec.throughputs @ (cap / C) if C > 0 else np.zeros(spec.num_jobs)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(prop > 0, spec.scale_factors / (spec.weights * prop), 0.0)
    return spec.throughputs * f[:, None]


def isolated_allocation(spec: GavelSpec) -> np.ndarray:
    """The isolated allocation finish-time fairness compares with: ``1/N`` of the cluster per job, i.e. the
    heterogeneity-agnostic max-min split (Gavel's ``MaxMinFairnessPolicy`` with every throughput 1) made unique:
    each job runs a total time fraction ``f_j = min(1, L / s_j)``, ``L`` the water level with
    ``sum_j min(s_j, L) = sum_k c_k`` (``f = 1`` when everything fits), spread over the types in proportion to
    their GPUs: ``x_iso[j, k] = f_j c_k / sum c``."""
    s = spec.scale_factors
    cap = spec.capacity
    C = float(cap.sum())
    if s.sum() <= C:
        f = np.ones_like(s)
    else:
        order = np.sort(s)
        L, left, n = 0.0, C, s.size
        for i, v in enumerate(order):  # water-filling: the smallest scale factors are met in full first
            if v * (n - i) <= left:
                left -= v
                continue
            L = left / (n - i)
            break
        f = np.minimum(1.0, L / s)
    return f[:, None] * (cap / C)[None, :]


def ftf_need(spec: GavelSpec, rho: float) -> np.ndarray:
    """The throughput each job needs for a finish-time fairness of ``rho``: from Gavel's
    ``(tss + rem / thr) / (tss + rem / iso) <= rho``, ``thr >= rem / (rho E - tss)`` with
    ``E = tss + rem / iso`` (inf where ``rho E <= tss``)."""
    iso = (spec.throughputs * isolated_allocation(spec)).sum(axis=1)
    with np.errstate(divide="ignore"):
        E = spec.time_since_start + spec.steps_remaining / iso
        slack = rho * E - spec.time_since_start
        return np.where(slack > 0, spec.steps_remaining / np.where(slack > 0, slack, 1.0), np.inf)


def _base(m: LinearModel, spec: GavelSpec, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    X = spec.throughputs[rows]
    n, T = X.shape
    labels = [spec.jobs[r] for r in rows.tolist()]
    m.add_variables("x", (n, T), upper=np.where(X > 0, 1.0, 0.0), labels=[labels, list(spec.types)])
    idx = np.arange(n * T).reshape(n, T)
    jrow = np.repeat(np.arange(n), T)
    A_cap = sp.csr_matrix((np.repeat(spec.scale_factors[rows], T), (np.tile(np.arange(T), n), idx.ravel())),
                          shape=(T, n * T))
    m.add_constraints("type_capacity", {"x": A_cap}, upper=spec.capacity, labels=list(spec.types))
    A_one = sp.csr_matrix((np.ones(n * T), (jrow, idx.ravel())), shape=(n, n * T))
    m.add_constraints("time_budget", {"x": A_one}, upper=1.0, labels=labels)
    return idx, jrow


def _per_job(name: str, m: LinearModel, spec: GavelSpec, rows: np.ndarray, coef: np.ndarray, var: str,
             idx: np.ndarray, jrow: np.ndarray) -> None:
    """Rows ``var - sum_k coef[j, k] x[j, k] <= 0``, one per job."""
    n = len(rows)
    A = sp.csr_matrix((-coef.ravel(), (jrow, idx.ravel())), shape=(n, idx.size))
    m.add_constraints(name, {"x": A, var: sp.csr_matrix(np.ones((n, 1)))}, upper=0.0,
                      labels=[spec.jobs[r] for r in rows.tolist()])


def build(spec: GavelSpec, *, stage: str = "main", t_min: float | None = None,
          rho: float | None = None) -> Formulation[GavelIndex]:
    """The LP of ``spec.objective`` (``stage="efficient"`` with ``t_min``: max-min's tie-break LP; ``objective
    ftf`` needs ``rho``: the model at that finish-time fairness level, whose optimum ``z >= 1`` says the level is
    reachable).

    Examples
    --------
    >>> import schedopt
    >>> from schedopt import gavel
    >>> spec = gavel.generate(64, 0)
    >>> f = gavel.build(spec)
    >>> f.model.name, spec.num_jobs
    ('gavel_max_min', 32)
    >>> schedopt.solve(f, backend="highs").termination.reason.value
    'optimal'
    """
    if not isinstance(spec, GavelSpec):
        raise InputError("spec", type(spec).__name__, "must be a schedopt.gavel.GavelSpec")
    obj = spec.objective
    rows = runnable(spec)
    if obj in ("ftf", "makespan") or (obj == "cost_slo" and spec.slos is not None):
        need = np.isfinite(spec.slos) if (obj == "cost_slo" and spec.slos is not None) else np.ones(spec.num_jobs, bool)
        stuck = [spec.jobs[j] for j in np.flatnonzero(need & ~(spec.throughputs > 0).any(axis=1)).tolist()]
        if stuck:
            raise InputError(f"throughputs[{stuck[0]}]", 0.0, f"the job can run on no GPU type, so {obj} has no finite value")
    X = spec.throughputs[rows]
    m = LinearModel(f"gavel_{obj}" if stage == "main" else f"gavel_{obj}_{stage}", sense="maximize")
    idx, jrow = _base(m, spec, rows)
    ref, level = float("nan"), float("nan")
    if obj == "max_min":
        W = normalized_weights(spec)[rows]
        lower = 0.0
        if stage == "efficient":
            if t_min is None:
                raise InputError("t_min", t_min, "the efficient stage needs the max-min optimum t*")
            lower = float(t_min)
        elif stage != "main":
            raise InputError("stage", stage, "must be 'main' or 'efficient' for max_min")
        m.add_variables("t", 1, lower=lower)
        _per_job("fairness", m, spec, rows, W, "t", idx, jrow)
        m.set_objective({"t": [1.0]} if stage == "main" else {"x": W})
    elif obj == "ftf":
        if rho is None or not (rho > 0):
            raise InputError("rho", rho, "the ftf model is built at a fairness level rho > 0")
        need = ftf_need(spec, float(rho))[rows]
        coef = np.where(np.isfinite(need)[:, None], X / np.where(np.isfinite(need), need, 1.0)[:, None], 0.0)
        m.add_variables("z", 1, lower=0.0)
        _per_job("ftf", m, spec, rows, coef, "z", idx, jrow)
        m.set_objective({"z": [1.0]})
        stage, level = "ftf", float(rho)
    elif obj == "makespan":
        rem = spec.remaining[rows]
        ref = float(np.max(rem / X.max(axis=1)))  # the longest job alone on its best type: a makespan lower bound
        m.add_variables("s", 1, lower=0.0)
        _per_job("makespan", m, spec, rows, X * (ref / rem)[:, None], "s", idx, jrow)
        m.set_objective({"s": [1.0]})
    elif obj == "max_sum_throughput":
        m.set_objective({"x": X})
    else:  # cost_slo
        m.set_objective({"x": X / spec.unit_costs[None, :]})  # Gavel: throughputs / instance_costs
        if spec.slos is not None:
            fin = np.isfinite(spec.slos[rows])
            sel = rows[fin]
            if sel.size:
                need = spec.remaining[sel] / spec.slos[sel]
                k = np.flatnonzero(fin)
                coef = X[k] / need[:, None]
                n, T = len(rows), X.shape[1]
                A = sp.csr_matrix((coef.ravel(), (np.repeat(np.arange(k.size), T), idx[k].ravel())), shape=(k.size, n * T))
                m.add_constraints("slo", {"x": A}, lower=1.0, labels=[spec.jobs[r] for r in sel.tolist()])
    return Formulation(model=m, inverse=GavelIndex(rows, spec.types, stage, ref, level), problem="gavel")
