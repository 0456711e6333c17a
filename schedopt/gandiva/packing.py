"""GPU packing: put 1-GPU jobs on a cluster's idle GPUs, at most two per GPU, within GPU memory.

Throughput is counted in *solo units*: a job alone on a GPU progresses at 1, a job packed with ``k`` at the
interference factor ``f[j, k]`` (the share of its solo throughput it keeps), a job left unplaced (queued or
time-sliced behind another) at 0. Two jobs time-sliced on one GPU make 1 together, so a pack pays only when
``f[j, k] + f[k, j] > 1``.

* :func:`pack_greedy` is Gandiva's heuristic: the busiest jobs take the idle GPUs alone; then the job with the
  lowest utilization is packed onto the GPU with the lowest utilization (where memory allows), the pack kept only
  if it beats time-slicing, and so on.
* :func:`pack_exact` solves a MILP on :class:`schedopt.LinearModel`. ``formulation="config"`` (default) chooses
  how many GPUs of each memory class run each job class alone or each pair of job classes together (jobs of one
  type and memory are interchangeable, and so are GPUs of one memory), which is exact, symmetry-free and at least
  as tight as ``formulation="assign"``, the textbook model with ``x[j, g]`` and linearized pair variables
  ``p[j, k, g]``. ``formulations/gandiva.md`` states both and proves the claim.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import InputError
from ..model import LinearModel
from ..problem import Answer, Formulation, Structure, heuristic_termination, to_jsonable
from ..results import SolveResult, Termination, TerminationReason, Timings
from ..solve import solve
from .profiles import Profiles, load_profiles
from .state import ClusterState, GandivaJob, Slot, validate_job

__all__ = [
    "Packing",
    "PackingInverse",
    "apply_packing",
    "build_packing",
    "build_packing_model",
    "decode_packing",
    "idle_gpus",
    "pack_exact",
    "pack_greedy",
    "packing_gap",
    "packing_throughput",
]

_EPS = 1e-9


@dataclass(kw_only=True, eq=False)
class Packing(Answer):
    """Where each job goes (``assignment``: job id -> (node, gpu)); ``throughput`` in solo units.

    An :class:`~schedopt.problem.Answer`: ``termination`` is the solver's for :func:`pack_exact` (OPTIMAL, FEASIBLE
    with the limit hit, NO_SOLUTION_FOUND, ...) and FEASIBLE with :attr:`~schedopt.Limit.HEURISTIC` for
    :func:`pack_greedy`; ``objective`` is the throughput; ``bound`` the best proven upper bound (``inf`` for the
    greedy, which proves none)."""

    assignment: dict[str, Slot] = field(default_factory=dict)
    unplaced: tuple[str, ...] = ()
    throughput: float = float("nan")
    job_throughput: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    model: LinearModel | None = None
    formulation: Formulation[PackingInverse] | None = None
    stats: dict[str, float] = field(default_factory=dict)

    @property
    def optimal(self) -> bool:
        return self.termination.reason is TerminationReason.OPTIMAL

    def gpus(self) -> dict[Slot, list[str]]:
        out: dict[Slot, list[str]] = defaultdict(list)
        for j, s in self.assignment.items():
            out[s].append(j)
        return dict(out)

    def rows(self) -> list[dict[str, Any]]:
        """One row per packed GPU: its node, GPU index, jobs and their throughputs."""
        return [{"node": s[0], "gpu": s[1], "jobs": ids, "throughput": [self.job_throughput.get(j, 0.0) for j in ids]}
                for s, ids in sorted(self.gpus().items())]

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        held = self.has_solution
        out.update(
            throughput=to_jsonable(self.throughput) if held else None,
            assignment={j: {"node": s[0], "gpu": s[1]} for j, s in self.assignment.items()},
            unplaced=list(self.unplaced),
            job_throughput=to_jsonable(self.job_throughput),
        )
        return out


@dataclass(frozen=True, eq=False)
class PackingInverse:
    """The typed inverse map of a packing model: how its columns map back to jobs and GPUs.

    ``formulation`` is ``"config"`` or ``"assign"``; ``jobs`` the 1-GPU jobs, ``gpus`` the idle GPUs (in column
    order); for ``config``, ``job_classes`` / ``gpu_classes`` list the job / GPU indices of each class and ``pairs``
    the (a, b) job-class pairs of the ``pair`` block; for ``assign``, ``pairs`` are the (j, k) job pairs of ``p``."""

    formulation: str
    jobs: tuple[GandivaJob, ...]
    gpus: tuple[Slot, ...]
    profiles: Profiles
    pairs: np.ndarray
    job_classes: tuple[tuple[int, ...], ...] = ()
    gpu_classes: tuple[tuple[int, ...], ...] = ()


def idle_gpus(state: ClusterState) -> list[Slot]:
    """GPUs holding no job, in (node, gpu) order."""
    return [(n, g) for n in range(len(state.nodes)) for g in state.free_gpus(n)]


def _validate(state: ClusterState, jobs: Sequence[GandivaJob], profiles: Profiles) -> np.ndarray:
    ids: set[str] = set()
    for i, j in enumerate(jobs):
        validate_job(j, f"jobs[{i}]")
        if j.gpus != 1:
            raise InputError(f"jobs[{i}].gpus", j.gpus, "packing places 1-GPU jobs")
        if j.id in ids:
            raise InputError(f"jobs[{i}].id", j.id, "is used by an earlier job")
        if j.id in state.jobs:
            raise InputError(f"jobs[{i}].id", j.id, "is already placed in the cluster")
        ids.add(j.id)
    return profiles.indices([j.job_type for j in jobs])


def _factors(jobs: Sequence[GandivaJob], state: ClusterState, profiles: Profiles | None) -> tuple[Profiles, np.ndarray]:
    prof = profiles if profiles is not None else load_profiles()
    t = _validate(state, jobs, prof)
    return prof, prof.factor[np.ix_(t, t)]


def packing_throughput(
    assignment: dict[str, Slot], jobs: Sequence[GandivaJob], profiles: Profiles | None = None
) -> tuple[float, dict[str, float]]:
    """Total and per-job throughput (solo units) of an assignment: 1 alone, ``f[j, k]`` packed with ``k``."""
    prof = profiles if profiles is not None else load_profiles()
    by_id = {j.id: j for j in jobs}
    on: dict[Slot, list[str]] = defaultdict(list)
    for j, s in assignment.items():
        on[s].append(j)
    per: dict[str, float] = {j.id: 0.0 for j in jobs}
    for ids in on.values():
        if len(ids) == 1:
            per[ids[0]] = 1.0
        else:
            a, b = ids
            ta, tb = prof.index(by_id[a].job_type), prof.index(by_id[b].job_type)
            per[a] = float(prof.factor[ta, tb])
            per[b] = float(prof.factor[tb, ta])
    return float(sum(per.values())), per


# ------------------------------------------------------------------------------------------------ greedy
def pack_greedy(state: ClusterState, jobs: Sequence[GandivaJob], *, profiles: Profiles | None = None) -> Packing:
    """Gandiva's greedy packing of 1-GPU ``jobs`` onto the idle GPUs of ``state`` (``state`` is not changed)."""
    t0 = time.perf_counter()
    prof, F = _factors(jobs, state, profiles)
    gpus = idle_gpus(state)
    cap = np.array([state.nodes[n].gpu_memory for n, _ in gpus], dtype=float)
    util = np.array([j.utilization for j in jobs], dtype=float)
    mem = np.array([j.memory for j in jobs], dtype=float)
    on: list[list[int]] = [[] for _ in gpus]
    gpu_util = np.zeros(len(gpus))
    placed: dict[int, int] = {}
    # 1. the busiest jobs take the idle GPUs alone
    busiest = sorted(range(len(jobs)), key=lambda i: (-util[i], jobs[i].id))
    empty = list(range(len(gpus)))
    for i in busiest:
        fit = [g for g in empty if mem[i] <= cap[g] + _EPS]
        if not empty:
            break
        if fit:
            g = fit[0]
            empty.remove(g)
            on[g].append(i)
            gpu_util[g] += util[i]
            placed[i] = g
    # 2. least utilized job onto least utilized GPU, kept only if it beats time-slicing
    rest = sorted((i for i in range(len(jobs)) if i not in placed), key=lambda i: (util[i], jobs[i].id))
    for i in rest:
        cands = [g for g in range(len(gpus)) if len(on[g]) == 1 and mem[i] + mem[on[g][0]] <= cap[g] + _EPS]
        if not cands:
            continue
        g = min(cands, key=lambda g: (gpu_util[g], g))
        k = on[g][0]
        if F[i, k] + F[k, i] > 1.0 + _EPS:
            on[g].append(i)
            gpu_util[g] += util[i]
            placed[i] = g
    assignment = {jobs[i].id: gpus[g] for i, g in placed.items()}
    total, per = packing_throughput(assignment, jobs, prof)
    unplaced = tuple(j.id for i, j in enumerate(jobs) if i not in placed)
    seconds = time.perf_counter() - t0
    return Packing(termination=heuristic_termination("Gandiva's greedy packing: no optimality proof"),
                   objective_value=total, bound=float("inf"), method="greedy", timings=Timings(solve=seconds),
                   assignment=assignment, unplaced=unplaced, throughput=total, job_throughput=per, seconds=seconds)


# ------------------------------------------------------------------------------------------------ exact
def _config_model(
    jobs: Sequence[GandivaJob], F: np.ndarray, gpus: list[Slot], cap: np.ndarray
) -> tuple[LinearModel, dict[str, Any]]:
    n = len(jobs)
    mem = np.array([j.memory for j in jobs], dtype=float)
    keys: dict[tuple[str, float], list[int]] = defaultdict(list)
    for i, j in enumerate(jobs):
        keys[(j.job_type, float(j.memory))].append(i)
    job_classes = list(keys.values())
    A = len(job_classes)
    rep = np.array([c[0] for c in job_classes], dtype=np.int64)
    count = np.array([len(c) for c in job_classes], dtype=float)
    cmem = mem[rep] if n else np.zeros(0)
    gkeys: dict[float, list[int]] = defaultdict(list)
    for gi in range(len(gpus)):
        gkeys[float(cap[gi])].append(gi)
    gmem = np.array(sorted(gkeys), dtype=float)
    gpu_classes = [gkeys[m] for m in gmem]
    B = len(gpu_classes)
    gcount = np.array([len(c) for c in gpu_classes], dtype=float)
    Fc = F[np.ix_(rep, rep)] if n else np.zeros((0, 0))
    V = Fc + Fc.T
    ia, ib = np.triu_indices(A)
    val = V[ia, ib]
    fits = (cmem[ia] + cmem[ib])[:, None] <= gmem[None, :] + _EPS  # (P, B)
    keep = (val > 1.0 + _EPS) & fits.any(axis=1) & ((ia != ib) | (count[ia] >= 2))
    ia, ib, val, fits = ia[keep], ib[keep], val[keep], fits[keep]
    P = ia.size
    pair_cap = np.where(ia == ib, np.floor(count[ia] / 2), np.minimum(count[ia], count[ib]))
    solo_fit = cmem[:, None] <= gmem[None, :] + _EPS

    m = LinearModel("gandiva_packing", sense="maximize")
    akeys = [f"{jobs[r].job_type}|{jobs[r].memory:g}" for r in rep]
    glab = [f"mem{g:g}" for g in gmem]
    m.add_variables(
        "solo", (A, B), kind="integer", lower=0, upper=np.where(solo_fit, count[:, None], 0.0), labels=(akeys, glab)
    )
    plab = [f"{akeys[a]}+{akeys[b]}" for a, b in zip(ia, ib)]
    m.add_variables(
        "pair", (P, B), kind="integer", lower=0, upper=np.where(fits, pair_cap[:, None], 0.0), labels=(plab, glab)
    )
    eyeB = sp.identity(B, format="csr")
    # job_supply: sum_b solo[a,b] + sum_{p,b} mult(a,p) pair[p,b] <= count[a]
    inc = sp.csr_matrix(
        (np.ones(2 * P), (np.concatenate([ia, ib]), np.tile(np.arange(P), 2))), shape=(A, P)
    )  # (a==b) sums to 2
    m.add_constraints(
        "job_supply",
        {"solo": sp.kron(sp.identity(A), np.ones((1, B))), "pair": sp.kron(inc, np.ones((1, B)))},
        upper=count,
        labels=akeys,
    )
    m.add_constraints(
        "gpu_count",
        {"solo": sp.kron(np.ones((1, A)), eyeB), "pair": sp.kron(np.ones((1, P)), eyeB)},
        upper=gcount,
        labels=glab,
    )
    m.set_objective({"solo": np.ones((A, B)), "pair": np.repeat(val[:, None], B, axis=1)})
    classes = {"job_classes": tuple(tuple(c) for c in job_classes), "gpu_classes": tuple(tuple(c) for c in gpu_classes),
               "pairs": np.stack([ia, ib], axis=1)}
    return m, classes


def _assign_model(
    jobs: Sequence[GandivaJob], F: np.ndarray, gpus: list[Slot], cap: np.ndarray
) -> tuple[LinearModel, dict[str, Any]]:
    n, G = len(jobs), len(gpus)
    mem = np.array([j.memory for j in jobs], dtype=float)
    ij, ik = np.triu_indices(n, k=1)
    P = ij.size
    V = F + F.T
    m = LinearModel("gandiva_packing_assign", sense="maximize")
    ids = [j.id for j in jobs]
    glab = [f"{a}:{b}" for a, b in gpus]
    m.add_variables("x", (n, G), kind="binary", labels=(ids, glab))
    pfit = (mem[ij] + mem[ik])[:, None] <= cap[None, :] + _EPS
    m.add_variables(
        "p", (P, G), kind="binary", upper=pfit.astype(float), labels=([f"{ids[a]}+{ids[b]}" for a, b in zip(ij, ik)], glab)
    )
    eyeG = sp.identity(G, format="csr")
    m.add_constraints("job_once", {"x": sp.kron(sp.identity(n), np.ones((1, G)))}, upper=1, labels=ids)
    m.add_constraints("gpu_slots", {"x": sp.kron(np.ones((1, n)), eyeG)}, upper=2, labels=glab)
    m.add_constraints("gpu_memory", {"x": sp.kron(mem[None, :], eyeG)}, upper=cap, labels=glab)
    rows = np.arange(P * G)
    pg = np.repeat(np.arange(P), G), np.tile(np.arange(G), P)
    first = sp.csr_matrix((np.ones(P * G), (rows, ij[pg[0]] * G + pg[1])), shape=(P * G, n * G))
    second = sp.csr_matrix((np.ones(P * G), (rows, ik[pg[0]] * G + pg[1])), shape=(P * G, n * G))
    eyeP = sp.identity(P * G, format="csr")
    plabels = [f"{ids[ij[q]]}+{ids[ik[q]]}@{glab[g]}" for q, g in zip(*pg)]
    m.add_constraints("pair_le_first", {"p": eyeP, "x": -first}, upper=0, labels=plabels)
    m.add_constraints("pair_le_second", {"p": eyeP, "x": -second}, upper=0, labels=plabels)
    m.add_constraints("pair_ge_both", {"p": eyeP, "x": -first - second}, lower=-1, labels=plabels)
    m.set_objective({"x": np.ones((n, G)), "p": np.repeat((V[ij, ik] - 2.0)[:, None], G, axis=1)})
    return m, {"pairs": np.stack([ij, ik], axis=1)}


def build_packing(
    state: ClusterState,
    jobs: Sequence[GandivaJob],
    *,
    profiles: Profiles | None = None,
    formulation: str = "config",
) -> Formulation[PackingInverse]:
    """The exact packing MILP (``formulation`` ``"config"`` or ``"assign"``) over the idle GPUs of ``state``, with
    its typed inverse map (:class:`PackingInverse`).

    Examples
    --------
    >>> import schedopt
    >>> from schedopt import gandiva
    >>> gi = gandiva.io.generate(64, seed=1, operation="pack")
    >>> f = gandiva.build_packing(gi.state(), gi.pending)
    >>> res = schedopt.solve(f, backend="highs")
    >>> res.termination.reason.value, round(res.objective, 2)
    ('optimal', 44.36)
    """
    t0 = time.perf_counter()
    if formulation not in ("config", "assign"):
        raise InputError("formulation", formulation, "must be 'config' or 'assign'")
    prof, F = _factors(jobs, state, profiles)
    gpus = idle_gpus(state)
    cap = np.array([state.nodes[n].gpu_memory for n, _ in gpus], dtype=float)
    if formulation == "config":
        m, data = _config_model(jobs, F, gpus, cap)
    else:
        m, data = _assign_model(jobs, F, gpus, cap)
    m.build_seconds = time.perf_counter() - t0
    inverse = PackingInverse(formulation, tuple(jobs), tuple(gpus), prof, **data)
    return Formulation(m, inverse, Structure.GENERAL, "gandiva")


def build_packing_model(
    state: ClusterState,
    jobs: Sequence[GandivaJob],
    *,
    profiles: Profiles | None = None,
    formulation: str = "config",
) -> LinearModel:
    """The exact packing MILP's :class:`~schedopt.LinearModel` (``build_packing(...).model``)."""
    return build_packing(state, jobs, profiles=profiles, formulation=formulation).model


def _assignment(form: Formulation[PackingInverse], res: SolveResult) -> dict[str, Slot]:
    inv = form.inverse
    jobs, gpus = inv.jobs, inv.gpus
    vals = res.values
    out: dict[str, Slot] = {}
    if inv.formulation == "assign":
        x = np.round(vals["x"]).astype(int)
        for j, g in zip(*np.nonzero(x)):
            out[jobs[j].id] = gpus[g]
        return out
    pools = [list(c) for c in inv.job_classes]
    solo = np.round(vals["solo"]).astype(int)
    pair = np.round(vals["pair"]).astype(int)
    for b, gidx in enumerate(inv.gpu_classes):
        free = list(gidx)
        for p in range(pair.shape[0]):
            a, c = inv.pairs[p]
            for _ in range(pair[p, b]):
                g = gpus[free.pop(0)]
                out[jobs[pools[a].pop(0)].id] = g
                out[jobs[pools[c].pop(0)].id] = g
        for a in range(solo.shape[0]):
            for _ in range(solo[a, b]):
                out[jobs[pools[a].pop(0)].id] = gpus[free.pop(0)]
    return out


def decode_packing(form: Formulation[PackingInverse], res: SolveResult, seconds: float = 0.0) -> Packing:
    """The :class:`Packing` a solve of ``form`` gives: the decoded assignment when a solution is held, otherwise an
    empty assignment with the solver's termination (nothing is rounded into an answer)."""
    inv = form.inverse
    jobs = inv.jobs
    m = form.model
    common: dict[str, Any] = {"termination": res.termination, "bound": float(res.bound), "backend": res.backend,
              "method": f"exact-{inv.formulation}", "result": res, "model": m, "formulation": form,
              "seconds": seconds}
    if not res.has_solution:
        return Packing(**common, timings=Timings(build=m.build_seconds or math.nan, handoff=res.timings.handoff,
                                                  solve=res.timings.solve), unplaced=tuple(j.id for j in jobs))
    t = time.perf_counter()
    assignment = _assignment(form, res)
    total, per = packing_throughput(assignment, jobs, inv.profiles)
    if abs(total - res.objective) > 1e-6 * max(1.0, abs(total)):
        raise AssertionError(f"decoded packing throughput {total} differs from the model objective {res.objective}")
    unplaced = tuple(j.id for j in jobs if j.id not in assignment)
    timings = Timings(build=m.build_seconds or math.nan, handoff=res.timings.handoff, solve=res.timings.solve,
                      decode=res.timings.decode + time.perf_counter() - t)
    return Packing(**common, objective_value=total, timings=timings, assignment=assignment, unplaced=unplaced,
                   throughput=total, job_throughput=per,
                   stats={"columns": m.num_cols, "rows": m.num_rows, "solve": res.timings.solve})


def pack_exact(
    state: ClusterState,
    jobs: Sequence[GandivaJob],
    backend: str | None = None,
    *,
    profiles: Profiles | None = None,
    formulation: str = "config",
    time_limit: float | None = None,
    mip_rel_gap: float | None = 1e-6,
    **solve_kw: Any,
) -> Packing:
    """Optimal packing of 1-GPU ``jobs`` on the idle GPUs of ``state`` (``state`` is not changed).

    On a time limit the best incumbent is returned, FEASIBLE with the time limit and the solver's bound; when no
    incumbent exists, ``assignment`` is empty and ``termination`` says so (nothing is rounded into an answer).
    ``solve_kw`` (``threads``, ``seed``, ...) go to :func:`schedopt.solve`.
    """
    t0 = time.perf_counter()
    prof = profiles if profiles is not None else load_profiles()
    form = build_packing(state, jobs, profiles=prof, formulation=formulation)
    m = form.model
    if m.num_cols == 0:  # no job or no idle GPU: nothing to decide, the empty packing is optimal
        return Packing(
            termination=Termination(TerminationReason.OPTIMAL, detail="nothing to pack"), objective_value=0.0,
            bound=0.0, method=f"exact-{formulation}", timings=Timings(build=m.build_seconds or math.nan),
            unplaced=tuple(j.id for j in jobs), throughput=0.0, job_throughput={j.id: 0.0 for j in jobs},
            seconds=time.perf_counter() - t0, model=m, formulation=form,
        )
    res = solve(m, backend=backend, time_limit=time_limit, mip_rel_gap=mip_rel_gap, **solve_kw)
    out = decode_packing(form, res)
    out.seconds = time.perf_counter() - t0
    return out


def packing_gap(exact: Packing, greedy: Packing) -> float:
    """Relative throughput the greedy gives up: ``(exact - greedy) / exact`` (0 when exact is 0)."""
    if exact.throughput <= 0:
        return 0.0
    return (exact.throughput - greedy.throughput) / exact.throughput


def apply_packing(state: ClusterState, jobs: Sequence[GandivaJob], packing: Packing) -> ClusterState:
    """A copy of ``state`` with the packed jobs placed and their shared GPUs marked as packed."""
    out = state.copy()
    by_id = {j.id: j for j in jobs}
    for jid, s in packing.assignment.items():
        out.place(by_id[jid], [s])
    for s, ids in packing.gpus().items():
        if len(ids) == 2:
            out.pack(*s)
    return out
