"""Migration for locality: free GPUs for an incoming multi-GPU job by moving jobs (defragmentation).

The incoming job needing ``k`` GPUs *fits* when ``m(k)`` nodes (the fewest whose GPUs add up to ``k``: one node
when ``k`` fits in one) together hold ``k`` idle GPUs. Only *movable* jobs migrate: jobs on a single node that
are alone on each of their GPUs (packed or time-sliced jobs stay, as do jobs spanning nodes). A job moves onto idle
GPUs of another node, so no node is ever oversubscribed by a migration.

* ``method="exact"``: the MILP of ``formulations/gandiva.md`` -- fewest migrations such that the job fits.
* ``method="greedy"``: Gandiva's heuristic -- take the non-idle node with the most free GPUs (not yet used as a
  source), move its jobs (largest first) to the node with the fewest free GPUs that is still below the source's
  free count and can take the job, stop once the job fits; repeat with the next source while sources remain.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import InputError
from ..infeasibility import explain_infeasibility
from ..model import LinearModel
from ..problem import Answer, Formulation, Structure, heuristic_termination
from ..results import Limit, SolveResult, Termination, TerminationReason, Timings
from ..solve import solve
from .state import ClusterState, GandivaJob, nodes_needed, validate_job

__all__ = [
    "DefragInverse",
    "Defragmentation",
    "Move",
    "build_defrag",
    "build_defrag_model",
    "decode_defrag",
    "defragment",
    "fits",
    "movable_jobs",
]


@dataclass(frozen=True)
class Move:
    job_id: str
    source: int
    target: int


@dataclass(kw_only=True, eq=False)
class Defragmentation(Answer):
    """The outcome: ``moves`` applied to a copy of the state gives ``state``; ``freed`` says the job now fits.

    An :class:`~schedopt.problem.Answer` whose objective is the number of migrations: the solver's termination for
    ``method="exact"`` (INFEASIBLE when no set of migrations frees enough GPUs, with ``explanation`` naming the
    constraint families), FEASIBLE with :attr:`~schedopt.Limit.HEURISTIC` for the greedy when it freed the GPUs and
    NO_SOLUTION_FOUND with that limit when it did not (not a proof that no migration would)."""

    moves: list[Move] = field(default_factory=list)
    state: ClusterState | None = None
    freed: bool = False
    target_nodes: list[int] = field(default_factory=list)
    seconds: float = 0.0
    model: LinearModel | None = None
    formulation: Formulation[DefragInverse] | None = None
    explanation: str = ""
    stats: dict[str, float] = field(default_factory=dict)

    @property
    def migrations(self) -> int:
        return len(self.moves)

    def rows(self) -> list[dict[str, Any]]:
        return [{"job": m.job_id, "from": m.source, "to": m.target} for m in self.moves]

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.update(
            migrations=self.migrations if self.has_solution else None,
            moves=[{"job": m.job_id, "from": m.source, "to": m.target} for m in self.moves],
            freed=self.freed,
            target_nodes=list(self.target_nodes),
            explanation=self.explanation or None,
        )
        return out


@dataclass(frozen=True, eq=False)
class DefragInverse:
    """The typed inverse map of the defragmentation model: row ``i`` of ``y`` is movable job ``movable[i]``; the
    model was built for ``job`` arriving on ``state`` (kept as a copy, so decoding applies the moves to it)."""

    movable: tuple[str, ...]
    state: ClusterState
    job: GandivaJob


def fits(state: ClusterState, k: int) -> list[int] | None:
    """Nodes (at most ``m(k)``) that together hold ``k`` idle GPUs, or ``None``."""
    m = nodes_needed(state.node_gpus, k)
    if m == 0:
        return None
    free = state.free_counts()
    order = sorted(range(len(free)), key=lambda n: (-free[n], n))[:m]
    return sorted(order) if int(free[order].sum()) >= k else None


def movable_jobs(state: ClusterState) -> list[str]:
    """Jobs on one node, alone on each of their GPUs."""
    return [j for j in state.jobs if len(state.nodes_of(j)) == 1 and state.is_exclusive(j)]


def _move(state: ClusterState, job_id: str, target: int) -> Move:
    src = state.nodes_of(job_id)[0]
    need = len(state.slots[job_id])
    free = state.free_gpus(target)
    if len(free) < need:
        raise InputError("target", target, f"has {len(free)} idle GPUs; job {job_id} holds {need}")
    state.move(job_id, [(target, g) for g in free[:need]])
    return Move(job_id, src, target)


def _check_incoming(state: ClusterState, job: GandivaJob) -> int:
    validate_job(job)
    if job.id in state.jobs:
        raise InputError("job.id", job.id, "is already placed in the cluster")
    if job.gpus > state.num_gpus:
        raise InputError("job.gpus", job.gpus, f"exceeds the cluster's {state.num_gpus} GPUs")
    return job.gpus


def _greedy(state: ClusterState, k: int) -> tuple[ClusterState, list[Move]]:
    st = state.copy()
    moves: list[Move] = []
    used: set[int] = set()
    while fits(st, k) is None:
        movable = set(movable_jobs(st))
        free = st.free_counts()
        srcs = [
            n for n in range(len(st.nodes))
            if n not in used and free[n] < st.nodes[n].gpus and any(j in movable for j in st.jobs_on(n))
        ]
        if not srcs:
            break
        s = min(srcs, key=lambda n: (-free[n], n))
        used.add(s)
        jobs = sorted((j for j in st.jobs_on(s) if j in movable), key=lambda j: (-len(st.slots[j]), j))
        for j in jobs:
            free = st.free_counts()
            need = len(st.slots[j])
            dests = [n for n in range(len(st.nodes)) if n != s and n not in used and need <= free[n] <= free[s]]
            if not dests:
                continue
            moves.append(_move(st, j, min(dests, key=lambda n: (free[n], n))))
            if fits(st, k) is not None:
                break
    return st, moves


def build_defrag(state: ClusterState, job: GandivaJob) -> Formulation[DefragInverse]:
    """The fewest-migrations MILP: ``y[j, n]`` (movable job ``j`` ends on node ``n``), ``z[n]`` (node ``n`` hosts
    the incoming job), ``w[n]`` (GPUs the incoming job takes on ``n``), with its typed inverse map."""
    t0 = time.perf_counter()
    k = _check_incoming(state, job)
    N = len(state.nodes)
    names = [n.name for n in state.nodes]
    mov = movable_jobs(state)
    J = len(mov)
    home = np.array([state.nodes_of(j)[0] for j in mov], dtype=np.int64)
    size = np.array([len(state.slots[j]) for j in mov], dtype=float)
    occupied = state.node_gpus - state.free_counts()
    fixed = occupied.astype(float).copy()
    np.subtract.at(fixed, home, size)
    G = state.node_gpus.astype(float)
    m = LinearModel("gandiva_defrag", sense="minimize")
    m.add_variables("y", (J, N), kind="binary", labels=(mov, names))
    m.add_variables("z", N, kind="binary", labels=names)
    m.add_variables("w", N, kind="integer", lower=0, upper=np.minimum(G, k), labels=names)
    m.add_constraints("job_placed", {"y": sp.kron(sp.identity(J), np.ones((1, N)))}, lower=1, upper=1, labels=mov)
    m.add_constraints(
        "node_capacity",
        {"y": sp.kron(size[None, :], sp.identity(N)), "w": sp.identity(N)},
        upper=G - fixed,
        labels=names,
    )
    m.add_constraints(
        "reserve_on_target", {"w": sp.identity(N), "z": -sp.diags(np.minimum(G, k))}, upper=0, labels=names
    )
    m.add_constraints("incoming_demand", {"w": np.ones((1, N))}, lower=k, labels=[job.id])
    m.add_constraints("target_count", {"z": np.ones((1, N))}, upper=nodes_needed(state.node_gpus, k), labels=[job.id])
    stay = np.zeros((J, N))
    stay[np.arange(J), home] = 1.0
    m.set_objective({"y": 1.0 - stay})
    m.build_seconds = time.perf_counter() - t0
    return Formulation(m, DefragInverse(tuple(mov), state.copy(), job), Structure.GENERAL, "gandiva")


def build_defrag_model(state: ClusterState, job: GandivaJob) -> LinearModel:
    """The fewest-migrations MILP's :class:`~schedopt.LinearModel` (``build_defrag(state, job).model``)."""
    return build_defrag(state, job).model


def _apply(form: Formulation[DefragInverse], res: SolveResult) -> tuple[ClusterState, list[Move]]:
    inv = form.inverse
    st = inv.state.copy()
    moves: list[Move] = []
    y = np.round(res.values["y"]).astype(int)
    mov = inv.movable
    dest = {mov[i]: int(np.argmax(y[i])) for i in range(len(mov))}
    # leave first, then arrive: moves whose targets are busy wait until others have left
    pending = [(j, n) for j, n in dest.items() if n != st.nodes_of(j)[0]]
    while pending:
        progressed = False
        for j, n in list(pending):
            if len(st.free_gpus(n)) >= len(st.slots[j]):
                moves.append(_move(st, j, n))
                pending.remove((j, n))
                progressed = True
        if not progressed:
            # a cycle of full nodes: migration is checkpoint-restore, so suspend all of them, then restore
            parked = {j: (st.jobs[j], st.nodes_of(j)[0], len(st.slots[j])) for j, _ in pending}
            for j in parked:
                st.remove(j)
            for j, n in pending:
                jb, src, need = parked[j]
                st.place(jb, [(n, g) for g in st.free_gpus(n)[:need]])
                moves.append(Move(j, src, n))
            pending = []
    return st, moves


def decode_defrag(form: Formulation[DefragInverse], res: SolveResult, seconds: float = 0.0) -> Defragmentation:
    """The :class:`Defragmentation` a solve of ``form`` gives (no moves when no solution is held; when the model
    is infeasible, ``explanation`` names the constraint families that conflict)."""
    inv = form.inverse
    m = form.model
    t = time.perf_counter()
    why = ""
    if res.has_solution:
        st, moves = _apply(form, res)
    else:
        st, moves = inv.state.copy(), []
        if res.termination.reason is TerminationReason.INFEASIBLE:
            why = str(explain_infeasibility(m))
    tgt = fits(st, inv.job.gpus)
    if res.has_solution and tgt is None:
        raise AssertionError("the defragmentation model's solution does not free enough GPUs")
    timings = Timings(build=m.build_seconds or math.nan, handoff=res.timings.handoff, solve=res.timings.solve,
                      decode=res.timings.decode + time.perf_counter() - t)
    return Defragmentation(
        termination=res.termination, objective_value=float(len(moves)) if res.has_solution else math.nan,
        bound=float(res.bound), backend=res.backend, method="exact", timings=timings, result=res, moves=moves,
        state=st, freed=tgt is not None, target_nodes=tgt or [], seconds=seconds, model=m, formulation=form,
        explanation=why, stats={"columns": m.num_cols, "rows": m.num_rows, "solve": res.timings.solve},
    )


def defragment(
    state: ClusterState,
    job: GandivaJob,
    method: str = "greedy",
    backend: str | None = None,
    *,
    time_limit: float | None = None,
    **solve_kw: Any,
) -> Defragmentation:
    """Migrate jobs so that ``job`` fits on ``m(k)`` nodes; ``state`` is not changed (the result holds a copy).

    ``method="exact"`` returns the fewest migrations (or, when no set of migrations frees enough GPUs, an
    INFEASIBLE answer with ``freed=False``, no moves, and ``explanation`` naming the constraint families that
    conflict); on a time limit the best incumbent found is returned, FEASIBLE with the time limit. ``solve_kw``
    (``threads``, ``seed``, ``mip_rel_gap``, ...) go to :func:`schedopt.solve`.
    """
    t0 = time.perf_counter()
    k = _check_incoming(state, job)
    if method == "greedy":
        st, moves = _greedy(state, k)
        tgt = fits(st, k)
        seconds = time.perf_counter() - t0
        term = (heuristic_termination("Gandiva's greedy migration: no optimality proof") if tgt is not None else
                Termination(TerminationReason.NO_SOLUTION_FOUND, Limit.HEURISTIC,
                            "the greedy freed too few GPUs (not a proof that no migration would)"))
        return Defragmentation(
            termination=term, objective_value=float(len(moves)) if tgt is not None else math.nan,
            method="greedy", timings=Timings(solve=seconds), moves=moves, state=st, freed=tgt is not None,
            target_nodes=tgt or [], seconds=seconds,
        )
    if method != "exact":
        raise InputError("method", method, "must be 'greedy' or 'exact'")
    form = build_defrag(state, job)
    res = solve(form.model, backend=backend, time_limit=time_limit, **solve_kw)
    out = decode_defrag(form, res)
    out.seconds = time.perf_counter() - t0
    return out
