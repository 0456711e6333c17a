"""POP partitioning (Narayanan et al., "Solving Large-Scale Granular Resource Allocation Problems Efficiently with
POP", SOSP'21) for the one-configuration-per-job family, and for any allocation problem given as a callable.

POP splits the jobs at random into ``k`` groups and every capacity into ``k`` slices, solves the ``k``
sub-problems independently (in parallel) and takes the union of their answers. Because the job groups are
disjoint and the slices of each capacity add up to the capacity, the union is feasible for the full problem.

What this module does, exactly:

* **partition** (:func:`partition`): a seeded random permutation of the jobs dealt into ``k`` groups of equal
  size (±1). Integral capacities (GPU counts) are split as ``floor(b / k)`` plus one unit for the first
  ``b mod k`` slices, so the slices are integers that add up to ``b`` exactly; fractional ones as ``b / k``.
* **large jobs** (``split_large=True``): POP assumes *granular* jobs, each small against a sub-problem. A job is
  *large* when its largest useful configuration needs more than one slice of some capacity (``size > 1/k`` with
  ``size = max_c max_r W[r, c] / b_r``). A configuration cannot be cut into pieces, so large jobs are not split
  into sub-jobs (their value is not additive); instead they are *spread across the groups*: dealt round-robin,
  largest first, so that every group gets the same number of them (±1) before the rest are dealt at random, and
  after the union a **reconciliation pass** on the pooled leftover capacity (``refine=True``: the unused part of
  every slice, summed over the slices) upgrades jobs greedily -- a large job whose best configuration did not fit
  one slice can get it there. The pass only accepts moves that fit the leftover, so the answer stays feasible.
* **parallel sub-problems** (:func:`map_parallel`): on a ``concurrent.futures.ProcessPoolExecutor`` by default,
  in-process with ``executor="serial"``, or on any executor object the caller passes: one with ``.submit`` (a
  ``concurrent.futures`` executor, a Dask ``distributed.Client``) or ``.map`` (a
  ``ray.util.multiprocessing.Pool``, a ``multiprocessing.Pool``). Results that are futures are resolved with
  ``.result()``. Ray and Dask are optional: install them yourself (``pip install "ray[default]"`` or
  ``pip install "dask[distributed]"``); schedopt does not depend on them.
* **loss** (:func:`pop_solve`, ``reference=``): against the exact optimum (``"exact"``: the ``mckp`` backend)
  or the Lagrangian dual bound of the full problem (``"bound"``, the default: an upper bound on the optimum
  for maximisation, so the reported loss is an over-estimate of the true loss).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from .errors import InfeasibleError, InputError
from .mckp import GreedyRepair, MckpStructure, analyze
from .model import LinearModel
from .problem import Answer, Structure, heuristic_termination
from .results import Termination, TerminationReason, Timings

__all__ = ["PopPart", "PopResult", "map_parallel", "partition", "pop", "pop_solve"]


# ---------------------------------------------------------------------------------------------- executors
def map_parallel(fn: Callable[[Any], Any], items: Iterable[Any], executor: Any = None,
                 max_workers: int | None = None) -> list[Any]:
    """``[fn(item) for item in items]`` computed in parallel, results in input order.

    ``executor``: ``None`` (a fresh process pool with ``max_workers`` workers, default: the CPU count), or anything
    :func:`schedopt.executors.open_executor` takes: a spec string (``"serial"``, ``"threads:N"``, ``"processes:N"``,
    ``"dask"``, ``"dask://HOST:PORT"``, ``"ray"``), a ``concurrent.futures`` executor, a Dask ``Client`` or a Ray /
    multiprocessing pool. Closures are sent with cloudpickle where it is installed.
    """
    from .executors import map_ordered, open_executor

    items = list(items)
    if executor is None:
        workers = max(1, min(len(items), max_workers or os.cpu_count() or 1))
        if workers == 1:
            return [fn(it) for it in items]
        executor = f"processes:{workers}"
    with open_executor(executor, max_workers) as ex:
        return map_ordered(fn, items, ex)


# ---------------------------------------------------------------------------------------------- partition
def _slices(capacity: np.ndarray, k: int, integral: bool) -> np.ndarray:
    """(k x R) capacity slices adding up to ``capacity`` exactly."""
    if integral:
        c = np.floor(capacity + 1e-9)
        base = np.floor(c / k)
        rem = c - base * k
        return base[None, :] + (np.arange(k)[:, None] < rem[None, :]).astype(np.float64)
    return np.repeat((capacity / k)[None, :], k, axis=0)


def partition(n_jobs: int, capacity: Sequence[float] | np.ndarray, k: int, *, seed: int = 0,
              sizes: np.ndarray | None = None, integral: bool | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """POP's split: ``k`` pairs (job indices, capacity slice). ``sizes`` (one per job, the job's largest demand
    as a fraction of a capacity) marks the large jobs (``size > 1/k``), which are dealt round-robin, largest
    first; the others at random. ``integral`` (default: every capacity is an integer) splits into integers."""
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
        raise InputError("k", k, "must be a positive integer")
    if not isinstance(n_jobs, (int, np.integer)) or n_jobs < 0:
        raise InputError("n_jobs", n_jobs, "must be a non-negative integer")
    cap = np.atleast_1d(np.asarray(capacity, dtype=np.float64))
    if cap.ndim != 1 or not np.isfinite(cap).all() or (cap < 0).any():
        raise InputError("capacity", capacity, "must be finite non-negative numbers")
    if integral is None:
        integral = bool(np.all(cap == np.round(cap)))
    rng = np.random.default_rng(seed)
    order = rng.permutation(n_jobs)
    owner = np.empty(n_jobs, dtype=np.int64)
    if sizes is not None:
        sz = np.asarray(sizes, dtype=np.float64)
        if sz.shape != (n_jobs,):
            raise InputError("sizes", sz.shape, f"needs one size per job ({n_jobs})")
        large = np.flatnonzero(sz > 1.0 / k)
        large = large[np.argsort(-sz[large], kind="stable")]
        owner[large] = np.arange(large.size) % k
        small = order[~np.isin(order, large)]
        start = large.size % k
        owner[small] = (start + np.arange(small.size)) % k
    else:
        owner[order] = np.arange(n_jobs) % k
    sl = _slices(cap, k, integral)
    return [(np.flatnonzero(owner == p), sl[p]) for p in range(k)]


def pop(fn: Callable[[tuple[np.ndarray, np.ndarray]], Any], n_jobs: int, capacity: Sequence[float] | np.ndarray,
        k: int, *, executor: Any = None, seed: int = 0, sizes: np.ndarray | None = None,
        integral: bool | None = None, max_workers: int | None = None) -> list[tuple[np.ndarray, np.ndarray, Any]]:
    """POP for any allocation problem given as a callable: ``fn((job_indices, capacity_slice))`` solves the
    sub-problem of those jobs on that slice; returns ``[(job_indices, capacity_slice, fn's answer)]`` per part.
    The caller unions the answers (feasible for the full problem when each answer respects its slice)."""
    parts = partition(n_jobs, capacity, k, seed=seed, sizes=sizes, integral=integral)
    res = map_parallel(fn, parts, executor=executor, max_workers=max_workers)
    return [(j, c, r) for (j, c), r in zip(parts, res, strict=True)]


# ---------------------------------------------------------------------------------------------- models
@dataclass(frozen=True)
class PopPart:
    """One POP sub-problem and how its solve ended (the core :class:`~schedopt.Termination`, never a string)."""

    jobs: int
    columns: int
    capacity: tuple[float, ...]
    termination: Termination
    objective: float  #: NaN when the part holds no solution
    bound: float
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        t = self.termination
        return {"jobs": self.jobs, "columns": self.columns, "capacity": list(self.capacity),
                "termination": {"reason": t.reason.value, "limit": t.limit.value if t.limit else None,
                                "detail": t.detail},
                "objective": self.objective if math.isfinite(self.objective) else None,
                "bound": self.bound if math.isfinite(self.bound) else None, "seconds": self.seconds}


@dataclass(kw_only=True, eq=False)
class PopResult(Answer):
    """The union of the POP sub-problems' answers for a model (always feasible for the full problem).

    An :class:`~schedopt.problem.Answer`: ``termination`` is FEASIBLE with :attr:`~schedopt.Limit.HEURISTIC` (POP
    proves no optimality), or OPTIMAL when ``k == 1`` and the single part was solved to optimality; ``bound`` is
    the full problem's bound where one was computed (the reference), NaN otherwise; ``objective`` is the union's."""

    x: np.ndarray
    k: int
    feasible: bool
    violations: dict[str, float]
    parts: list[PopPart]
    reference: str | None = None
    reference_value: float = math.nan  #: the optimum ("exact") or the dual bound ("bound") of the full problem
    #: relative objective loss against the reference, ``sense * (reference - objective) / |reference|``; an
    #: over-estimate of the true loss for "bound"; slightly negative only when the "exact" reference is itself
    #: within its gap of the optimum and POP found better
    loss: float = math.nan
    seconds: dict[str, float] = field(default_factory=dict)
    large_jobs: int = 0
    refined_gain: float = 0.0  #: objective gained by the reconciliation pass (in the model's sense: >= 0 is better)

    @property
    def all_parts_optimal(self) -> bool:
        return all(p.termination.reason is TerminationReason.OPTIMAL for p in self.parts)

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.update({"k": self.k, "feasible": self.feasible, "large_jobs": self.large_jobs,
                    "refined_gain": self.refined_gain, "reference": self.reference,
                    "reference_value": self.reference_value if math.isfinite(self.reference_value) else None,
                    "loss": self.loss if math.isfinite(self.loss) else None,
                    "parts": [p.to_dict() for p in self.parts], "x": self.x.tolist()})
        return out


def _part_model(st: MckpStructure, groups: np.ndarray, cap: np.ndarray) -> tuple[LinearModel, np.ndarray]:
    """The sub-problem of the (internal) groups on the capacity slice ``cap``: columns and model."""
    cnt = st.counts[groups]
    tot = int(cnt.sum())
    idx = (np.repeat(st.starts[groups] - np.cumsum(cnt) + cnt, cnt) + np.arange(tot)) if tot else np.zeros(0, np.int64)
    m = LinearModel("pop_part", sense="maximize", structure=Structure.MCKP)
    m.add_variables("x", tot, kind="binary")
    _, gi = np.unique(st.group[idx], return_inverse=True)
    m.add_constraints("one_option", {"x": sp.csr_matrix((np.ones(tot), (gi, np.arange(tot))), shape=(groups.size, tot))},
                      upper=1.0)
    if st.K:
        m.add_constraints("capacity", {"x": st.weights_csr(idx)}, upper=cap)
    m.set_objective({"x": st.value[idx]})
    return m, idx


@dataclass(frozen=True)
class _PartOutcome:
    x: np.ndarray | None
    termination: Termination
    objective: float
    bound: float
    seconds: float


def _solve_part(args: tuple[LinearModel, str, float | None, float | None]) -> _PartOutcome:
    from .solve import solve

    model, backend, time_limit, gap = args
    t = time.perf_counter()
    r = solve(model, backend, time_limit=time_limit, mip_rel_gap=gap)
    return _PartOutcome(np.array(r.x) if r.has_solution else None, r.termination, r.objective_or_nan, r.bound,
                        time.perf_counter() - t)


def pop_solve(model: LinearModel, k: int, *, backend: str = "mckp", executor: Any = None, seed: int = 0,
              time_limit: float | None = None, mip_rel_gap: float | None = 1e-6, split_large: bool = True,
              refine: bool = True, reference: str | None = "bound", max_workers: int | None = None) -> PopResult:
    """POP on a model of the one-configuration-per-job family (any schedopt builder's model the ``mckp``
    backend accepts): ``k`` sub-problems solved by ``backend`` in parallel on ``executor`` (see
    :func:`map_parallel`), unioned, reconciled (``refine``), checked against the full model and compared with
    ``reference`` (``"bound"``, ``"exact"`` or ``None``). Raises :class:`~schedopt.errors.StructureError`
    when the model is outside the family and :class:`~schedopt.errors.InfeasibleError` when its forced part
    is infeasible."""
    from .solve import solve

    if not isinstance(model, LinearModel):
        raise InputError("model", type(model).__name__, "must be a schedopt.LinearModel")
    if reference not in (None, "bound", "exact"):
        raise InputError("reference", reference, "must be 'bound', 'exact' or None")
    t0 = time.perf_counter()
    st = analyze(model)
    if st.infeasible:
        raise InfeasibleError(f"the model is infeasible: {st.infeasible}")
    sign = 1.0 if st.maximize else -1.0
    # job sizes: the largest demand of a job's columns as a fraction of a capacity
    if st.K and st.n:
        capp = np.r_[np.maximum(st.cap, 1e-12), np.inf]
        frac = (st.wt / capp[st.ri]).max(axis=1)
        sizes = np.maximum.reduceat(frac, st.starts)
    else:
        sizes = np.zeros(st.G)
    parts = partition(st.G, st.cap, k, seed=seed, sizes=sizes if split_large else None,
                      integral=bool(np.all(st.cap == np.round(st.cap))))
    built = [_part_model(st, g, c) for g, c in parts]
    t1 = time.perf_counter()
    outs = map_parallel(_solve_part, [(m, backend, time_limit, mip_rel_gap) for m, _ in built], executor=executor,
                        max_workers=max_workers)
    t2 = time.perf_counter()
    choice = np.full(st.G, -1, dtype=np.int64)
    info: list[PopPart] = []
    for (_m, idx), out, (g, c) in zip(built, outs, parts, strict=True):
        if out.x is not None:
            on = idx[np.asarray(out.x) > 0.5]
            choice[st.group[on]] = on
        info.append(PopPart(jobs=int(g.size), columns=int(idx.size), capacity=tuple(float(v) for v in c),
                            termination=out.termination, objective=out.objective, bound=out.bound,
                            seconds=out.seconds))
    before = st.value_of(choice)
    if refine:
        choice = GreedyRepair(st).improve(choice)
    gained = st.value_of(choice) - before
    t3 = time.perf_counter()
    x = st.full_solution(choice)
    viol = model.violations(x)
    obj = model.evaluate(x)
    ref_val = math.nan
    loss = math.nan
    bound = math.nan
    if reference is not None:
        if reference == "exact":
            r = solve(model, "mckp", mip_rel_gap=mip_rel_gap)
            ref_val = r.objective_or_nan
        else:
            r = solve(model, "mckp", mip_rel_gap=None, exact=False)
            ref_val = r.bound
        bound = r.bound
        if math.isfinite(ref_val):
            loss = sign * (ref_val - obj) / max(abs(ref_val), 1e-10)
    t4 = time.perf_counter()
    n_sol = sum(p.termination.reason in (TerminationReason.OPTIMAL, TerminationReason.FEASIBLE) for p in info)
    if k == 1 and info[0].termination.reason is TerminationReason.OPTIMAL:
        # one part is the whole presolved problem: its proof carries over (the reconciliation can only gain)
        termination = Termination(TerminationReason.OPTIMAL, None, "POP with one part: the part was solved to optimality")
        if not math.isfinite(bound):
            bound = sign * (info[0].bound + st.const)
    else:
        termination = heuristic_termination(f"POP with k={k}: union of {n_sol}/{len(info)} part solutions"
                                            + (" and the reconciliation pass" if refine else ""))
    if math.isfinite(bound) and (sign * (bound - obj) < 0):
        bound = obj  # a reference within its gap of the optimum, beaten by the union: the union's value bounds
    return PopResult(
        termination=termination, objective_value=obj, bound=bound, backend=backend, method=f"pop(k={int(k)})",
        timings=Timings(build=t1 - t0, solve=t2 - t1, decode=t3 - t2),
        x=x, k=int(k), feasible=not viol, violations=viol, parts=info, reference=reference,
        reference_value=ref_val, loss=loss,
        seconds={"split": t1 - t0, "parts": t2 - t1, "union": t3 - t2, "reference": t4 - t3, "total": t4 - t0},
        large_jobs=int((sizes > 1.0 / k).sum()), refined_gain=sign * gained,
    )

