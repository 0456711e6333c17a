"""Independent checkers: plain Python / numpy over the spec, written without the model.

* :func:`check_allocation` -- each job at most one configuration, every configuration a legal (n, r, t) shape, the
  job's own rules (GPU counts, scale unit, growth rule, allowed types, rigid count), forced jobs kept, GPUs per type
  within the free GPUs, and the virtual-node packing condition (GPUs of partial configurations larger than s plus
  whole nodes fit the virtual nodes of size > s, for every power of two s).
* :func:`check_placement` -- no GPU used twice, a partial configuration on one node inside one power-of-two
  virtual node, multi-node configurations on whole nodes of the right type, GPU counts match the configuration.
* :func:`objective_value` -- the issue's objective for an allocation, recomputed per job from the goodput input
  (its own normalisation and restart factor), for brute-force comparisons.

Each checker returns a list of readable problems (empty when all is well).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from .spec import Cluster, Config, Job, JobId, is_pow2, virtual_bins

if TYPE_CHECKING:
    from .placement import Placement
    from .problem import SiaProblem

__all__ = ["check_allocation", "check_placement", "config_shape_ok", "job_allows", "objective_value"]


def config_shape_ok(cluster: Cluster, c: Config, max_gpus_per_job: int | None = None) -> str | None:
    """Why ``c`` is not a Sia configuration of ``cluster`` (None when it is)."""
    if c.gpu_type not in cluster.type_names:
        return f"{c.label}: unknown GPU type {c.gpu_type!r}"
    t = cluster[c.gpu_type]
    if max_gpus_per_job is not None and c.n_gpus > max_gpus_per_job:
        return f"{c.label}: more than max_gpus_per_job={max_gpus_per_job} GPUs"
    if c.n_nodes == 1:
        largest = 1 << (t.gpus_per_node.bit_length() - 1)
        if not (is_pow2(c.n_gpus) and c.n_gpus <= largest):
            return f"{c.label}: a single-node configuration needs a power of two <= {largest} GPUs"
        return None
    if not 2 <= c.n_nodes <= t.nodes:
        return f"{c.label}: needs 2..{t.nodes} nodes"
    if c.n_gpus != c.n_nodes * t.gpus_per_node:
        return f"{c.label}: a multi-node configuration uses whole nodes ({t.gpus_per_node} GPUs each)"
    return None


def job_allows(job: Job, c: Config) -> str | None:
    """Why ``job``'s own rules forbid ``c`` (None when they allow it)."""
    if job.allowed_types is not None and c.gpu_type not in job.allowed_types:
        return f"type {c.gpu_type} not in allowed_types {list(job.allowed_types)}"
    r = c.n_gpus
    if job.kind == "rigid":
        return None if r == job.rigid_gpus else f"rigid job needs exactly {job.rigid_gpus} GPUs, got {r}"
    if r < job.min_gpus:
        return f"{r} GPUs < min_gpus={job.min_gpus}"
    if job.max_gpus is not None and r > job.max_gpus:
        return f"{r} GPUs > max_gpus={job.max_gpus}"
    if r % job.scale_unit:
        return f"{r} GPUs is not a multiple of scale_unit={job.scale_unit}"
    first = -(-job.min_gpus // job.scale_unit) * job.scale_unit
    limit = max(2 * job.max_profiled_gpus, first)
    if r > limit:
        return f"{r} GPUs > growth limit {limit} (2 x max_profiled_gpus={job.max_profiled_gpus})"
    return None


def _forced(job: Job) -> bool:
    return (not job.preemptible) and job.current is not None


def check_allocation(problem: SiaProblem, allocation: Mapping[JobId, Config | None]) -> list[str]:
    """Problems with ``allocation`` for ``problem`` (empty list: valid)."""
    out: list[str] = []
    cluster = problem.cluster
    jobs = {j.id: j for j in problem.jobs}
    for jid in allocation:
        if jid not in jobs:
            out.append(f"allocation names unknown job {jid!r}")
    used = dict.fromkeys(cluster.type_names, 0)
    partial: dict[str, list[int]] = {t: [] for t in cluster.type_names}
    whole_nodes = dict.fromkeys(cluster.type_names, 0)
    for jid, job in jobs.items():
        c = allocation.get(jid)
        if _forced(job):
            if c != job.current:
                out.append(f"job {jid}: non-preemptible, must keep {job.current} but got {c}")
        if c is None:
            continue
        if not isinstance(c, Config):
            out.append(f"job {jid}: {c!r} is not a Config")
            continue
        why = config_shape_ok(cluster, c, problem.max_gpus_per_job)
        if why:
            out.append(f"job {jid}: {why}")
            continue
        if not _forced(job):
            why = job_allows(job, c)
            if why:
                out.append(f"job {jid}: {c.label}: {why}")
        used[c.gpu_type] += c.n_gpus
        if c.n_nodes == 1:
            partial[c.gpu_type].append(c.n_gpus)
        else:
            whole_nodes[c.gpu_type] += c.n_nodes
    for k, t in enumerate(cluster.type_names):
        have = int(problem.available[k])
        if used[t] > have:
            out.append(f"GPU type {t}: {used[t]} GPUs allocated > {have} available")
        gt = cluster[t]
        # virtual-node packing: for every power of two s, the GPUs of partial configs >= s fit the virtual nodes
        # of size >= s left on the nodes not taken whole
        bins = virtual_bins(gt.gpus_per_node)
        free_nodes = gt.nodes - whole_nodes[t]
        if free_nodes < 0:
            out.append(f"GPU type {t}: {whole_nodes[t]} whole nodes allocated > {gt.nodes}")
            continue
        s = 1
        while s <= bins[0]:
            need = sum(r for r in partial[t] if r >= s)
            room = free_nodes * sum(b for b in bins if b >= s)
            if need > room:
                out.append(f"GPU type {t}: partial configurations of >= {s} GPUs need {need} GPUs, virtual nodes hold {room}")
                break
            s *= 2
    return out


def check_placement(cluster: Cluster, allocation: Mapping[JobId, Config | None], placement: Placement) -> list[str]:
    """Problems with ``placement`` of ``allocation`` on ``cluster`` (empty list: valid)."""
    out: list[str] = []
    seen: dict[tuple[str, int], JobId] = {}
    want = {j: c for j, c in allocation.items() if c is not None}
    for jid in placement:
        if jid not in want:
            out.append(f"job {jid} is placed but has no configuration")
    for jid, c in want.items():
        if jid not in placement:
            if jid not in getattr(placement, "unplaced", ()):
                out.append(f"job {jid} ({c}) is neither placed nor reported unplaced")
            else:
                out.append(f"job {jid} ({c}) is unplaced")
            continue
        slots = placement[jid]
        nodes = [n for n, _ in slots]
        if len(set(nodes)) != len(nodes):
            out.append(f"job {jid}: node listed twice")
        total = 0
        t = cluster[c.gpu_type] if c.gpu_type in cluster.type_names else None
        for node, gpus in slots:
            typ, _, idx = node.rpartition("-")
            if typ != c.gpu_type or not idx.isdigit() or t is None or int(idx) >= t.nodes:
                out.append(f"job {jid}: node {node} is not a {c.gpu_type} node of the cluster")
                continue
            for g in gpus:
                if not 0 <= g < t.gpus_per_node:
                    out.append(f"job {jid}: GPU {g} out of range on {node}")
                key = (node, g)
                if key in seen:
                    out.append(f"GPU {g} of {node} used by jobs {seen[key]} and {jid}")
                seen[key] = jid
            total += len(gpus)
        if total != c.n_gpus:
            out.append(f"job {jid}: {total} GPUs placed for {c.label}")
        if len(set(nodes)) != c.n_nodes:
            out.append(f"job {jid}: on {len(set(nodes))} nodes for {c.label}")
        if t is None:
            continue
        if c.n_nodes >= 2 or c.n_gpus == t.gpus_per_node:
            for node, gpus in slots:
                if sorted(gpus) != list(range(t.gpus_per_node)):
                    out.append(f"job {jid}: multi-node configuration {c.label} does not use all of {node}")
        elif len(slots) == 1:
            gpus = sorted(slots[0][1])
            # inside one virtual node: [off, off + b) for one of the node's binary digits
            off, inside = 0, False
            for b in virtual_bins(t.gpus_per_node):
                if off <= gpus[0] and gpus[-1] < off + b:
                    inside = True
                off += b
            if not inside:
                out.append(f"job {jid}: GPUs {gpus} of {slots[0][0]} cross a virtual-node boundary")
            if gpus != list(range(gpus[0], gpus[0] + len(gpus))):
                out.append(f"job {jid}: GPUs {gpus} of {slots[0][0]} are not contiguous")
    return out


def _goodput_one(problem: SiaProblem, job: Job, c: Config) -> float:
    g = problem.goodput
    if isinstance(g, Mapping):
        mdl = g[job.id]
        types = getattr(mdl, "gpu_types", None)
        if types is not None and c.gpu_type not in types:
            return 0.0
        if job.kind != "adaptive" and callable(getattr(mdl, "throughput", None)):
            b = job.batch_size if job.batch_size is not None else float(mdl.init_batch)
            return float(np.asarray(mdl.throughput(c.gpu_type, np.array([c.n_nodes]), np.array([c.n_gpus]), b)).ravel()[0])
        res = mdl.goodput(c.gpu_type, np.array([c.n_nodes]), np.array([c.n_gpus]))
        return float(np.asarray(getattr(res, "goodput", res)).ravel()[0])
    if callable(g):
        return float(g(job, c))
    arr = np.asarray(g, dtype=float)
    from .configs import generate_configs

    table = problem.configs if arr.shape[1] == len(problem.configs) else generate_configs(problem.cluster)
    return float(arr[problem.job_index(job.id), table.index(c)])


def utilities_of_job(problem: SiaProblem, job: Job) -> dict[Config, float]:
    """Per-job utility of every allowed configuration (normalised, restart factor applied), computed per config."""
    cands = []
    for c in problem.configs.configs:
        ok = job_allows(job, c) is None
        if _forced(job) and c == job.current:
            ok = True
        if ok:
            g = _goodput_one(problem, job, c)
            if g > 0:
                cands.append((c, g))
    if not cands:
        return {}
    u = min(c.n_gpus for c, _ in cands)
    gmin = min(g for _, g in cands)
    r = job.restart_factor()
    out = {}
    for c, g in cands:
        v = g * u / gmin
        if job.current is not None and c != job.current:
            v *= r
        if v > 0:
            out[c] = v
    return out


def objective_value(problem: SiaProblem, allocation: Mapping[JobId, Config | None]) -> float:
    """The issue's objective of ``allocation`` (in the model's sense: maximised for p > 0, minimised for p < 0).

    Raises ``KeyError`` when a job gets a configuration that has no utility (not a model column)."""
    total = 0.0
    p, lam = problem.p, problem.lam
    for job in problem.jobs:
        c = allocation.get(job.id)
        if c is None:
            total += -lam if p > 0 else lam
            continue
        u = utilities_of_job(problem, job)[c]
        total += u**p
    return total

