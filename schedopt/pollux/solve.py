"""Solving a :class:`PolluxSpec`: the published genetic search (``method="ga"``, default) over node-level
allocation matrices, or the exact model over Sia's configurations (``method="exact"``); the answer,
:class:`PolluxAnswer` (card: ``formulations/pollux.md``)."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import InputError
from ..model import LinearModel
from ..problem import Answer, Formulation, SolveOptions, checked_options, heuristic_termination
from ..results import SolveResult, Termination, TerminationReason, Timings
from ..sia import Config, ConfigTable, Job, SiaProblem, generate_configs
from .objective import SpeedupTable, allocation_speedups, power_mean
from .search import GeneticSearch
from .spec import EPS, PolluxSpec

__all__ = ["METHODS", "PolluxAnswer", "PolluxIndex", "build", "current_configs", "decode", "evaluate",
           "genetic_search", "mean_of_sum", "solve_exact", "solve_spec"]

#: ``ga``: the published genetic search (heuristic); ``exact``: the same objective over Sia's configurations,
#: solved exactly by a MILP backend (default ``mckp``)
METHODS: tuple[str, ...] = ("ga", "exact")


@dataclass(kw_only=True, eq=False)
class PolluxAnswer(Answer):
    """One Pollux round: ``nodes`` (job id -> {column id: GPUs}) and ``matrix`` (jobs x columns) for ``ga`` (and
    for ``exact``, where ``matrix`` is empty: configurations are not placed on nodes), ``allocation`` (job id ->
    configuration or None) for ``exact``; ``speedups`` the scaled, restart-penalised speedup per job of the returned
    choice; ``objective_value`` the power mean ``M``; ``population`` the search's final population (best first),
    which a caller may pass back as ``init`` (the published warm start)."""

    nodes: dict[str, dict[str, int]] = field(default_factory=dict)
    allocation: dict[str, Config | None] = field(default_factory=dict)
    speedups: dict[str, float] = field(default_factory=dict)
    generations: int = 0
    matrix: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    population: np.ndarray | None = field(default=None, repr=False)

    def rows(self) -> list[dict[str, Any]]:
        out = []
        for jid, s in self.speedups.items():
            c = self.allocation.get(jid)
            nd = self.nodes.get(jid, {})
            out.append({"job": jid, "speedup": s, "config": c.label if c else "-",
                        "nodes": " ".join(f"{k}:{v}" for k, v in nd.items()) or "-"})
        return out

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["nodes"] = {j: dict(v) for j, v in self.nodes.items()}
        d["allocation"] = {j: (c.label if c else None) for j, c in self.allocation.items()}
        d["speedups"] = {j: float(s) for j, s in self.speedups.items()}
        d["generations"] = self.generations
        return d


def mean_of_sum(total: float, J: int, p: float) -> float:
    """``M = (total / J)^(1/p)`` from ``total = sum_j (s_j + EPS)^p`` (nan when not positive)."""
    if not (total > 0):
        return math.nan
    return float((total / J) ** (1.0 / p))


def evaluate(spec: PolluxSpec, matrix: np.ndarray) -> tuple[float, np.ndarray]:
    """(``M``, speedup per job) of one allocation matrix (jobs x columns)."""
    s = np.asarray(matrix, dtype=np.int64)
    if s.shape != (spec.num_jobs, len(spec.cols)):
        raise InputError("matrix", list(s.shape), f"must have shape ({spec.num_jobs}, {len(spec.cols)})")
    spd = allocation_speedups(spec, s[None])[0]
    return float(power_mean(spd, spec.p)) if spd.size else math.nan, spd


def allocation_nodes(job_ids: Sequence[str], col_ids: Sequence[str], matrix: np.ndarray) -> dict[str, dict[str, int]]:
    """A (jobs x columns) allocation matrix as job id -> {column (node) id: GPUs}, jobs without GPUs left out."""
    nodes: dict[str, dict[str, int]] = {}
    for j, jid in enumerate(job_ids):
        nz = np.flatnonzero(matrix[j])
        if nz.size:
            nodes[jid] = {col_ids[k]: int(matrix[j, k]) for k in nz.tolist()}
    return nodes


def genetic_search(spec: PolluxSpec, *, population: int = 100, generations: int = 100,
                   rng: np.random.Generator | int | None = None, init: np.ndarray | None = None) -> PolluxAnswer:
    """The published genetic search (:class:`~schedopt.pollux.search.GeneticSearch`): starts from the current
    allocation and ``init`` (more individuals, ``(P0, jobs, columns)``: e.g. the last round's population), runs
    ``generations`` generations of ``population`` individuals and returns the best allocation found."""
    for fname, val, lo in (("population", population, 2), ("generations", generations, 0)):
        if isinstance(val, bool) or not isinstance(val, (int, np.integer)) or val < lo:
            raise InputError(fname, val, f"must be an integer >= {lo}")
    t0 = time.perf_counter()
    J, N = spec.num_jobs, len(spec.cols)
    if J == 0:
        return PolluxAnswer(termination=Termination(TerminationReason.OPTIMAL, detail="no active jobs"),
                            objective_value=math.nan, method="ga",
                            timings=Timings(build=0.0, solve=time.perf_counter() - t0))
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    start = [spec.current_matrix[None]]
    if init is not None:
        a = np.asarray(init)
        if a.ndim != 3 or a.shape[1:] != (J, N) or (a.size and not np.issubdtype(a.dtype, np.integer)):
            raise InputError("init", list(a.shape), f"must be integer allocations of shape (P, {J}, {N})")
        start.append(a.astype(np.int64))
    search = GeneticSearch(spec, gen)
    pop, fit, spd, gens = search.run(np.concatenate(start), int(population), int(generations))
    t1 = time.perf_counter()
    return PolluxAnswer(
        termination=heuristic_termination("pollux genetic search: no optimality proof"),
        objective_value=float(fit[0]), method="ga", timings=Timings(solve=t1 - t0),
        nodes=allocation_nodes(spec.jobs, spec.cols.ids, pop[0]), speedups={jid: float(spd[0, j]) for j, jid in enumerate(spec.jobs)},
        generations=gens, matrix=pop[0], population=pop)


# ====================================================================================== the exact model
@dataclass(frozen=True, eq=False)
class PolluxIndex:
    """The inverse map of the exact model: column ``c`` of block ``x`` is job ``job[c]`` (position in
    ``spec.jobs``) in configuration ``config[c]`` of ``table``, with restart-penalised speedup ``speedup[c]``."""

    job: np.ndarray
    config: np.ndarray
    speedup: np.ndarray
    table: ConfigTable


def current_configs(spec: PolluxSpec, table: ConfigTable) -> np.ndarray:
    """Each job's current configuration (position in ``table``; -1: none or not a configuration): ``n_nodes`` the
    columns it holds GPUs on, ``n_gpus`` their sum, the type of those columns."""
    cur = spec.current_matrix
    out = np.full(spec.num_jobs, -1, dtype=np.int64)
    types = spec.types
    for j in np.flatnonzero(cur.sum(axis=1)).tolist():
        nz = np.flatnonzero(cur[j])
        ts = set(spec.cols.types[nz].tolist())
        if len(ts) == 1:
            out[j] = table.find(Config(int(nz.size), int(cur[j].sum()), types[ts.pop()]))
    return out


def build(spec: PolluxSpec) -> Formulation[PolluxIndex]:
    """The exact model: maximising ``M`` for ``p < 0`` is minimising ``sum_j (s_j + EPS)^p``, separable per job: one
    binary per valid (job, configuration) pair with value ``(s_jc + EPS)^p - EPS^p`` (a job left out scores
    ``EPS^p``); families ``one_config_per_job``, ``gpu_capacity`` and Sia's ``virtual_node_capacity`` (pairs and
    rows from :class:`schedopt.sia.SiaProblem`). For ``p > 0`` the same sum is maximised.

    Examples
    --------
    >>> import schedopt
    >>> from schedopt import pollux
    >>> spec = pollux.generate(64, 0)
    >>> f = pollux.build(spec)
    >>> f.model.name
    'pollux_exact'
    >>> schedopt.solve(f, backend="highs").termination.reason.value
    'optimal'
    """
    cluster = spec.cluster
    table = generate_configs(cluster)
    J, C = spec.num_jobs, len(table)
    tab = SpeedupTable(spec)
    cap, rig = spec.job_cap, spec.rigid_gpus
    S = np.zeros((J, C))
    for k in range(len(cluster.type_names)):
        cols = np.flatnonzero(table.type_index == k)
        if not cols.size:
            continue
        for j in range(J):
            ok = cols[table.n_gpus[cols] <= cap[j]]
            if rig[j]:
                ok = ok[table.n_gpus[ok] == rig[j]]
            if ok.size:
                S[j, ok] = tab(np.full(ok.size, j), np.full(ok.size, k), table.n_nodes[ok], table.n_gpus[ok])
    # a rigid count that is no configuration of the cluster cannot run: such a job keeps no pair (S row 0)
    counts = set(table.n_gpus.tolist())
    rigid = [bool(rig[j]) and int(rig[j]) in counts for j in range(J)]
    jobs = [Job(id=str(j), kind="rigid" if rigid[j] else "adaptive",
                max_gpus=None if rigid[j] else max(int(cap[j]), 1), max_profiled_gpus=max(int(cap[j]), 1),
                rigid_gpus=int(rig[j]) if rigid[j] else None) for j in range(J)]
    prob = SiaProblem(cluster, jobs, S, p=spec.p)
    pt = prob.valid_pairs()
    jj, cc = pt.job, pt.config
    cur = current_configs(spec, table)
    s = S[jj, cc] * np.where(cc != cur[jj], spec.restart[jj], 1.0)
    v0 = EPS ** spec.p
    coef = (s + EPS) ** spec.p - v0
    P = len(jj)
    m = LinearModel("pollux_exact", sense="minimize" if spec.p < 0 else "maximize")
    labels = [f"{spec.jobs[a]}@{table.labels[b]}" for a, b in zip(jj.tolist(), cc.tolist())]
    m.add_variables("x", P, kind="binary", labels=labels)
    col = np.arange(P)
    m.add_constraints("one_config_per_job", sp.csr_matrix((np.ones(P), (jj, col)), shape=(J, P)), upper=1,
                      labels=list(spec.jobs))
    tix = table.type_index[cc]
    m.add_constraints("gpu_capacity", sp.csr_matrix((table.n_gpus[cc].astype(float), (tix, col)),
                                                    shape=(len(cluster.type_names), P)),
                      upper=cluster.total_gpus.astype(float), labels=list(cluster.type_names))
    A3, up3, lab3 = prob.virtual_rows()
    if A3.shape[0]:
        m.add_constraints("virtual_node_capacity", A3, upper=up3, labels=lab3)
    m.set_objective({"x": coef}, constant=J * v0)
    return Formulation(m, PolluxIndex(jj, cc, s, table), problem="pollux")


def decode(spec: PolluxSpec, formulation: Formulation[PolluxIndex], result: SolveResult) -> PolluxAnswer:
    """The exact model's answer: a configuration per job (None: left out), ``M`` and the bound on ``M`` the solver
    proved."""
    inv = formulation.inverse
    alloc: dict[str, Config | None] = dict.fromkeys(spec.jobs)
    spd = dict.fromkeys(spec.jobs, 0.0)
    J = spec.num_jobs
    value, bound = math.nan, math.nan
    if result.has_solution:
        x = result.values["x"]
        for c in np.flatnonzero(x > 0.5).tolist():
            alloc[spec.jobs[int(inv.job[c])]] = inv.table[int(inv.config[c])]
            spd[spec.jobs[int(inv.job[c])]] = float(inv.speedup[c])
        value = mean_of_sum(result.objective, J, spec.p)
    if math.isfinite(result.bound):
        bound = mean_of_sum(result.bound, J, spec.p)
    return PolluxAnswer(termination=result.termination, objective_value=value, bound=bound, backend=result.backend,
                        method="exact", timings=result.timings, result=result, allocation=alloc, speedups=spd)


def solve_exact(spec: PolluxSpec, *, backend: str | None = "mckp", time_limit: float | None = None,
                mip_rel_gap: float = 1e-6) -> PolluxAnswer:
    """Build, solve (``backend``, default ``mckp``) and decode the exact model."""
    from ..solve import solve

    t0 = time.perf_counter()
    backend = backend or "mckp"
    if spec.num_jobs == 0:
        return PolluxAnswer(termination=Termination(TerminationReason.OPTIMAL, detail="no active jobs"),
                            method="exact", backend=backend)
    f = build(spec)
    m = f.model
    t1 = time.perf_counter()
    if m.num_cols == 0:
        res = SolveResult(Termination(TerminationReason.OPTIMAL, detail="no columns: no job fits anywhere"),
                          backend=backend, model=m, _x=np.zeros(0), _objective=m.constant, bound=m.constant)
    else:
        res = solve(m, backend, time_limit=time_limit, mip_rel_gap=mip_rel_gap)
    t2 = time.perf_counter()
    ans = decode(spec, f, res)
    ans.timings = Timings(build=t1 - t0, solve=t2 - t1, decode=time.perf_counter() - t2)
    return ans


def _ga_options(opts: Mapping[str, Any]) -> dict[str, Any]:
    known = {"population", "generations"}
    for k in opts:
        if k not in known:
            raise InputError(f"options.{k}", opts[k], f"is no option of the genetic search ({', '.join(sorted(known))})")
    return dict(opts)


def solve_spec(spec: PolluxSpec, options: SolveOptions | None = None) -> PolluxAnswer:
    """Solve ``spec``: ``options.method`` ``ga`` (default; ``options.seed``, ``options.options`` ``population`` and
    ``generations``) or ``exact`` (``options.backend``, default ``mckp``; ``time_limit``, ``mip_rel_gap``).

    Examples
    --------
    >>> from schedopt import pollux
    >>> from schedopt.problem import SolveOptions
    >>> spec = pollux.generate(64, 0)
    >>> ans = pollux.solve_spec(spec, SolveOptions(method="exact"))
    >>> ans.termination.reason.value, pollux.check_allocation(spec, ans)
    ('optimal', [])
    """
    if not isinstance(spec, PolluxSpec):
        raise InputError("spec", type(spec).__name__, "must be a schedopt.pollux.PolluxSpec")
    opts = checked_options(options, METHODS)
    if (opts.method or "ga") == "ga":
        if opts.backend is not None:
            raise InputError("backend", opts.backend, "is not used by the genetic search (method 'exact' takes one)")
        return genetic_search(spec, rng=opts.seed, **_ga_options(opts.options))
    return solve_exact(spec, backend=opts.backend, time_limit=opts.time_limit,
                       mip_rel_gap=opts.mip_rel_gap if opts.mip_rel_gap is not None else 1e-6)
