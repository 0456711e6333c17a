"""JSON reading and writing of :class:`PolluxSpec` (registered as problem ``"pollux"``), its seeded generator, and
the :class:`~schedopt.problem.ProblemIO` hooks.

``data`` layout (columns: the cluster's nodes ``<type>-<k>``)::

    {"types": [{"name": "t4", "gpus_per_node": 4, "nodes": 2}, ...], "p": -1.0, "scale": null,
     "max_nodes": 2, "max_replicas": 8,
     "jobs": [{"id": "a", "base": 1.0, "restart_factor": 1.0, "cap": 8, "rigid": 0, "current": {"t4-0": 2},
               "goodput": {"t4": [[0, ...], ...]}}, ...]}

``goodput[type][n][r]``: the job's goodput on ``n`` nodes holding ``r`` GPUs of the type (``n`` in
``0..max_nodes``, ``r`` in ``0..max_replicas``; 0: infeasible; a type left out: the job cannot run there).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import InputError
from ..instances import check_keys, field
from ..problem import SolveOptions, Violation
from ..sia import Cluster, GpuType
from .check import check_allocation
from .solve import PolluxAnswer, build, solve_spec
from .spec import MAX_NODES, MAX_REPLICAS, P_FAIRNESS, PolluxSpec, node_columns, restart_factor

__all__ = ["check_instance", "explain_instance", "from_data", "generate", "size", "solve_instance", "to_data"]

_DATA = ("types", "p", "scale", "max_nodes", "max_replicas", "jobs")
_TYPE = ("name", "gpus_per_node", "nodes")
_JOB = ("id", "base", "restart_factor", "cap", "rigid", "current", "goodput")


def to_data(spec: PolluxSpec) -> dict[str, Any]:
    """The JSON ``data`` object of a :class:`~schedopt.pollux.PolluxSpec` (one without a per-job view or own
    columns)."""
    if not isinstance(spec, PolluxSpec):
        raise InputError("instance", type(spec).__name__, "must be a PolluxSpec")
    if spec.view is not None or spec.cols.ids != node_columns(spec.cluster).ids:
        raise InputError("instance", "view/columns", "a spec with a per-job view or its own columns has no JSON form")
    named = [t.name for t in spec.cluster.gpu_types if t.node_names is not None or not t.uniform]
    if named:
        raise InputError("instance.cluster", named, "has named nodes or nodes of unequal sizes, which the pollux "
                         "format (GPU types x nodes x GPUs per node) cannot hold")
    if np.isnan(spec.goodput).any():
        raise InputError("instance.goodput", "NaN", "has entries not computed (fill them before writing)")
    ids = spec.cols.ids
    jobs = []
    for j, jid in enumerate(spec.jobs):
        cur = {ids[k]: int(spec.current_matrix[j, k]) for k in np.flatnonzero(spec.current_matrix[j]).tolist()}
        gp = {t: spec.goodput[j, k].tolist() for k, t in enumerate(spec.types) if spec.goodput[j, k].any()}
        jobs.append({"id": jid, "base": float(spec.base[j]), "restart_factor": float(spec.restart[j]),
                     "cap": int(spec.job_cap[j]), "rigid": int(spec.rigid_gpus[j]), "current": cur, "goodput": gp})
    default_scale = len(ids) / spec.cluster.num_gpus
    return {"types": [{"name": t.name, "gpus_per_node": t.gpus_per_node, "nodes": t.nodes}
                      for t in spec.cluster.gpu_types],
            "p": spec.p, "scale": None if math.isclose(spec.speedup_scale, default_scale) else spec.speedup_scale,
            "max_nodes": spec.max_nodes, "max_replicas": spec.max_replicas, "jobs": jobs}


#: the goodput table's axes in a document: nodes and GPUs per job (the published caps are MAX_NODES and MAX_REPLICAS)
MAX_TABLE_NODES = 1024
MAX_TABLE_GPUS = 2**16


def _gpu_count(v: int, path: str) -> int:
    if v > MAX_TABLE_GPUS:
        raise InputError(path, v, f"must be <= {MAX_TABLE_GPUS} GPUs (no cluster preset has more)")
    return v


def from_data(data: dict[str, Any]) -> PolluxSpec:
    """Validate ``data`` and build the spec; errors name the field (``data.jobs[3].goodput.t4``) and value."""
    if not isinstance(data, dict):
        raise InputError("data", type(data).__name__, "must be an object")
    check_keys(data, _DATA, "data")
    types = []
    for i, d in enumerate(field(data, "types", "data", list)):
        p = f"data.types[{i}]"
        if not isinstance(d, dict):
            raise InputError(p, d, "must be an object")
        check_keys(d, _TYPE, p)
        types.append(GpuType(field(d, "name", p, str), field(d, "gpus_per_node", p, int), field(d, "nodes", p, int)))
    cluster = Cluster(tuple(types))
    names = cluster.type_names
    nmax = field(data, "max_nodes", "data", int)
    rmax = field(data, "max_replicas", "data", int)
    if nmax < 1 or rmax < 1:
        raise InputError("data.max_nodes" if nmax < 1 else "data.max_replicas", min(nmax, rmax), "must be >= 1")
    if nmax > MAX_TABLE_NODES or rmax > MAX_TABLE_GPUS:
        big, v, hi = ("max_nodes", nmax, MAX_TABLE_NODES) if nmax > MAX_TABLE_NODES else ("max_replicas", rmax,
                                                                                             MAX_TABLE_GPUS)
        raise InputError(f"data.{big}", v, f"must be <= {hi} (an axis of the goodput table: {MAX_TABLE_NODES} nodes "
                         f"and {MAX_TABLE_GPUS} GPUs per job at most; Pollux caps them at 16 and 64)")
    cols = node_columns(cluster)
    pos = {c: k for k, c in enumerate(cols.ids)}
    rows = field(data, "jobs", "data", list)
    J = len(rows)
    ids: list[str] = []
    G = np.zeros((J, len(names), nmax + 1, rmax + 1))
    base, rf, cap, rig = np.zeros(J), np.ones(J), np.zeros(J, np.int64), np.zeros(J, np.int64)
    cur = np.zeros((J, len(cols)), np.int64)
    for j, d in enumerate(rows):
        p = f"data.jobs[{j}]"
        if not isinstance(d, dict):
            raise InputError(p, d, "must be an object")
        check_keys(d, _JOB, p)
        ids.append(str(field(d, "id", p, (str, int))))
        base[j] = field(d, "base", p, float)
        rf[j] = field(d, "restart_factor", p, float, 1.0)
        cap[j] = _gpu_count(field(d, "cap", p, int, rmax), f"{p}.cap")
        rig[j] = _gpu_count(field(d, "rigid", p, int, 0), f"{p}.rigid")
        for c, g in field(d, "current", p, dict, {}).items():
            if c not in pos:
                raise InputError(f"{p}.current.{c}", g, f"names no node (nodes: {', '.join(cols.ids[:6])}, ...)")
            if isinstance(g, bool) or not isinstance(g, int) or g < 0:
                raise InputError(f"{p}.current.{c}", g, "must be a GPU count >= 0")
            _gpu_count(g, f"{p}.current.{c}")
            cur[j, pos[c]] = g
        for t, tab in field(d, "goodput", p, dict).items():
            if t not in names:
                raise InputError(f"{p}.goodput.{t}", "...", f"is no GPU type ({', '.join(names)})")
            try:
                a = np.asarray(tab, dtype=np.float64)
            except (TypeError, ValueError):
                raise InputError(f"{p}.goodput.{t}", "...", "must be a table of numbers") from None
            if a.shape != (nmax + 1, rmax + 1):
                raise InputError(f"{p}.goodput.{t}", list(a.shape), f"must be {nmax + 1} rows of {rmax + 1} numbers")
            G[j, names.index(t)] = a
    try:
        return PolluxSpec(cluster, tuple(ids), G, base, current=cur, restart_factor=rf, cap=cap, rigid=rig,
                          p=field(data, "p", "data", float, P_FAIRNESS), scale=field(data, "scale", "data",
                                                                                   (float, type(None)), None))
    except InputError as e:
        raise InputError(f"data.{e.field}", e.value, e.message) from None


#: the cluster shape generated instances scale (Sia's 64-GPU cluster: 6 x 4 T4, 2 x 8 A100, 3 x 8 RTX 2080Ti)
_SHAPE = (("t4", 4, 6), ("a100", 8, 2), ("rtx2080ti", 8, 3))


def generate(gpus: int, seed: int, jobs_per_gpu: float = 0.25, **unknown: Any) -> PolluxSpec:
    """A seeded round on ``gpus`` GPUs (a multiple of 64: Sia's 64-GPU cluster shape, scaled). Jobs: a zoo
    application each (its goodput model at its published parameters, every (type, nodes, GPUs) point up to
    ``min(16, nodes)`` nodes and ``min(64, GPUs)`` GPUs), ``base`` its goodput at the fair share (``ceil(G / J)``
    GPUs on ``ceil(N / G)`` nodes of the type with the most GPUs), 20 % rigid (1, 2 or 4 GPUs), caps from
    {4, 8, 16, 64}, ages U(0, 3600) s with 0-3 restarts (the published restart factor), and half of the jobs
    holding a current allocation (GPUs on one node of a type, where they fit)."""
    if unknown:
        bad = sorted(unknown)[0]
        raise InputError(f"generate.{bad}", unknown[bad], "is not a parameter (jobs_per_gpu)")
    from .. import zoo

    if not (isinstance(gpus, int) and gpus >= 64 and gpus % 64 == 0):
        raise InputError("gpus", gpus, "must be a multiple of 64 (Sia's cluster shape, scaled)")
    if not (isinstance(jobs_per_gpu, (int, float)) and 0 < jobs_per_gpu <= 4):
        raise InputError("jobs_per_gpu", jobs_per_gpu, "must be in (0, 4]")
    k = gpus // 64
    cluster = Cluster(tuple(GpuType(n, g, c * k) for n, g, c in _SHAPE))
    cols = node_columns(cluster)
    N, G_ = len(cols), cluster.num_gpus
    nmax, rmax = min(MAX_NODES, N), min(MAX_REPLICAS, G_)
    rng = np.random.default_rng(seed)
    J = max(2, round(gpus * jobs_per_gpu))
    apps = [a for a in zoo.list_models() if a != "ncf"]
    models = {a: zoo.load_model(a) for a in apps}
    n_ax = np.arange(nmax + 1)[:, None]
    r_ax = np.arange(rmax + 1)[None, :]
    tables: dict[str, np.ndarray] = {}
    for a, m in models.items():
        tab = np.zeros((len(cluster.gpu_types), nmax + 1, rmax + 1))
        for t_i, t in enumerate(cluster.gpu_types):
            if t.name not in m.params:
                continue
            ok = (n_ax >= 1) & (r_ax >= n_ax) & (r_ax <= n_ax * t.gpus_per_node) & (n_ax <= t.nodes)
            nn, rr = np.nonzero(ok)
            vals = np.asarray(m.goodput(t.name, nodes=nn, replicas=rr).goodput, dtype=np.float64)
            tab[t_i, nn, rr] = np.where(np.isfinite(vals) & (vals > 0), vals, 0.0)
        tables[a] = tab
    ref = int(np.argmax(cluster.total_gpus))
    fair_r, fair_n = max(math.ceil(G_ / J), 1), max(math.ceil(N / G_), 1)
    ids, goodput, base = [], np.zeros((J, len(cluster.gpu_types), nmax + 1, rmax + 1)), np.zeros(J)
    rig = np.zeros(J, np.int64)
    cap = rng.choice([4, 8, 16, 64], size=J).astype(np.int64)
    for j in range(J):
        a = apps[int(rng.integers(len(apps)))]
        ids.append(f"{a}-{j}")
        goodput[j] = tables[a]
        m = models[a]
        b = float(np.asarray(m.goodput(cluster.type_names[ref], nodes=np.array([fair_n]),
                                       replicas=np.array([max(fair_r, fair_n)])).goodput)[0])
        base[j] = b if np.isfinite(b) and b > 0 else max(float(tables[a][:, 1, 1].max()), 1.0)
        if rng.random() < 0.2:
            rig[j] = int(rng.choice([1, 2, 4]))
    age = rng.uniform(0, 3600, size=J)
    restarts = rng.integers(0, 4, size=J)
    cur = np.zeros((J, N), np.int64)
    free = cols.gpus.copy()
    for j in range(J):
        if rng.random() < 0.5:
            want = int(rig[j]) if rig[j] else int(rng.choice([1, 2, 4]))
            fits = np.flatnonzero(free >= min(want, cap[j]))
            if fits.size:
                kk = int(rng.choice(fits))
                cur[j, kk] = min(want, int(cap[j]))
                free[kk] -= cur[j, kk]
    return PolluxSpec(cluster, tuple(ids), goodput, base, current=cur, restart_factor=restart_factor(age, restarts),
                      cap=cap, rigid=rig, meta={"generator": "schedopt.pollux.generate", "gpus": gpus, "seed": seed})


def check_instance(spec: PolluxSpec, answer: Any) -> list[Violation]:
    """The violations of ``answer`` on ``spec`` (:func:`~schedopt.pollux.check_allocation`)."""
    return check_allocation(spec, answer)


def explain_instance(spec: PolluxSpec) -> str:
    """Which constraint families of the exact model (``one_config_per_job``, ``gpu_capacity``,
    ``virtual_node_capacity``) make the instance infeasible, or that it is feasible."""
    from ..infeasibility import explain_infeasibility

    return str(explain_infeasibility(build(spec).model))


def size(spec: PolluxSpec) -> tuple[int, int]:
    """(GPUs, jobs)."""
    return int(spec.cluster.num_gpus), spec.num_jobs


def solve_instance(spec: PolluxSpec, options: Any = None) -> PolluxAnswer:
    """Solve ``spec`` (:func:`~schedopt.pollux.solve_spec`) with ``options`` (a
    :class:`~schedopt.problem.SolveOptions` or None)."""
    return solve_spec(spec, options if isinstance(options, SolveOptions) or options is None else None)
