"""Independent checkers: plain Python / numpy over the spec, written without the model.

* :func:`check_allocation` -- each job at most one configuration, every configuration a legal (n, r, t) shape
  (within the caps; a rigid job's ``ceil(g / R)``-node shape when ``SiaSettings.rigid_any_count``), the job's own
  rules (GPU counts, scale unit, growth rule, allowed types, rigid count), forced jobs kept, GPUs per type within
  the free GPUs, and the virtual-node packing condition (GPUs of power-of-two blocks of at least s fit the
  virtual nodes of size at least s left on the nodes not taken whole, for every power of two s).
* :func:`check_placement` -- no GPU used twice, a partial configuration on one node inside one power-of-two
  virtual node, multi-node configurations on whole nodes of the right type, a rigid shape's whole nodes and
  aligned remainder blocks, GPU counts match the configuration.
* :func:`objective_value` -- the objective of an allocation, recomputed per job from the goodput input (its own
  normalisation, restart factor, coefficient rounding and change penalty), for brute-force comparisons.

The checkers return ``list[Violation]`` (a field path and a message each; empty when all is well);
:func:`assert_allocation` and :func:`assert_placement` raise :class:`~schedopt.problem.ViolationError`.
:func:`allocation_errors` / :func:`placement_errors` (deprecated) give the earlier list of strings.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from ..problem import Violation, assert_valid
from .configs import shape_error
from .round import SiaRound
from .spec import Cluster, Config, Job, JobId, config_parts, pow2_blocks, virtual_bins

if TYPE_CHECKING:
    from .placement import Placement

__all__ = ["allocation_errors", "assert_allocation", "assert_placement", "check_allocation", "check_placement",
           "config_shape_ok", "job_allows", "objective_value", "placement_errors"]

def config_shape_ok(cluster: Cluster, c: Config, max_gpus_per_job: int | None = None, *,
                    max_nodes: int | None = None, rigid_shape: bool = False) -> str | None:
    """Why ``c`` is not a Sia configuration of ``cluster`` (None when it is); ``rigid_shape``: a rigid job's shape
    (exempt from the caps, as in the published code)."""
    why = shape_error(cluster, c, rigid_shape=rigid_shape)
    if why or rigid_shape:
        return why
    if max_gpus_per_job is not None and c.n_gpus > max_gpus_per_job:
        return f"{c.label}: more than max_gpus_per_job={max_gpus_per_job} GPUs"
    if max_nodes is not None and c.n_nodes > max_nodes:
        return f"{c.label}: more than the node cap of {max_nodes} nodes"
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


def _shape_ok_for(problem: SiaRound, job: Job, c: Config) -> str | None:
    st = problem.settings
    if job.kind == "rigid" and st.rigid_any_count and c.gpu_type in problem.cluster.type_names:
        if config_shape_ok(problem.cluster, c, problem.max_gpus_per_job, max_nodes=st.node_cap(c.gpu_type)) is None:
            return None
        return config_shape_ok(problem.cluster, c, rigid_shape=True)
    cap = st.node_cap(c.gpu_type)
    return config_shape_ok(problem.cluster, c, problem.max_gpus_per_job, max_nodes=cap if c.n_nodes > 1 else None)


def check_allocation(problem: SiaRound, allocation: Mapping[JobId, Config | None]) -> list[Violation]:
    """Violations of ``allocation`` for ``problem`` (empty list: valid)."""
    out: list[Violation] = []
    cluster = problem.cluster
    jobs = {j.id: j for j in problem.jobs}
    for jid in allocation:
        if jid not in jobs:
            out.append(Violation(f"allocation[{jid}]", "names an unknown job"))
    used = dict.fromkeys(cluster.type_names, 0)
    partial: dict[str, list[int]] = {t: [] for t in cluster.type_names}
    whole_nodes = dict.fromkeys(cluster.type_names, 0)
    for jid, job in jobs.items():
        c = allocation.get(jid)
        path = f"allocation[{jid}]"
        if _forced(job) and c != job.current:
            out.append(Violation(path, f"non-preemptible, must keep {job.current} but got {c}"))
        if c is None:
            continue
        if not isinstance(c, Config):
            out.append(Violation(path, f"{c!r} is not a Config"))
            continue
        why = None if (_forced(job) and c == job.current and c.gpu_type in cluster.type_names) else _shape_ok_for(problem, job, c)
        if why:
            out.append(Violation(path, why))
            continue
        if not _forced(job):
            why = job_allows(job, c)
            if why:
                out.append(Violation(path, f"{c.label}: {why}"))
        used[c.gpu_type] += c.n_gpus
        whole, part = config_parts(cluster[c.gpu_type].gpus_per_node, c.n_nodes, c.n_gpus)
        partial[c.gpu_type].extend(pow2_blocks(part))
        whole_nodes[c.gpu_type] += whole
    for k, t in enumerate(cluster.type_names):
        have = int(problem.available[k])
        if used[t] > have:
            out.append(Violation(f"gpu_capacity[{t}]", f"{used[t]} GPUs allocated > {have} available"))
        gt = cluster[t]
        # virtual-node packing: for every power of two s, the GPUs of blocks >= s fit the virtual nodes of size >= s
        # left on the nodes not taken whole
        bins = virtual_bins(gt.gpus_per_node)
        free_nodes = gt.nodes - whole_nodes[t]
        if free_nodes < 0:
            out.append(Violation(f"gpu_capacity[{t}]", f"{whole_nodes[t]} whole nodes allocated > {gt.nodes}"))
            continue
        s = 1
        while s <= bins[0]:
            need = sum(r for r in partial[t] if r >= s)
            room = free_nodes * sum(b for b in bins if b >= s)
            if need > room:
                out.append(Violation(f"virtual_node_capacity[{t}]",
                                     f"partial configurations of >= {s} GPUs need {need} GPUs, virtual nodes hold {room}"))
                break
            s *= 2
    return out


def _aligned_blocks(gpus: list[int], gpus_per_node: int) -> list[int] | None:
    """The sizes of ``gpus`` (sorted GPU indices of one node) cut into maximal aligned power-of-two blocks inside
    the node's virtual nodes; None when some GPU lies outside the node."""
    left = set(gpus)
    sizes: list[int] = []
    off = 0
    for b in virtual_bins(gpus_per_node):
        g = off
        while g < off + b:
            if g not in left:
                g += 1
                continue
            size = 1
            while (g - off) % (size * 2) == 0 and g + size * 2 <= off + b and all(x in left for x in range(g, g + size * 2)):
                size *= 2
            sizes.append(size)
            left -= set(range(g, g + size))
            g += size
        off += b
    return None if left else sizes


def check_placement(cluster: Cluster, allocation: Mapping[JobId, Config | None], placement: Placement) -> list[Violation]:
    """Violations of ``placement`` of ``allocation`` on ``cluster`` (empty list: valid)."""
    out: list[Violation] = []
    seen: dict[tuple[str, int], JobId] = {}
    want = {j: c for j, c in allocation.items() if c is not None}
    for jid in placement:
        if jid not in want:
            out.append(Violation(f"placement[{jid}]", "is placed but has no configuration"))
    for jid, c in want.items():
        path = f"placement[{jid}]"
        if jid not in placement:
            if jid not in getattr(placement, "unplaced", ()):
                out.append(Violation(path, f"{c} is neither placed nor reported unplaced"))
            else:
                out.append(Violation(path, f"{c} is unplaced"))
            continue
        slots = placement[jid]
        nodes = [n for n, _ in slots]
        if len(set(nodes)) != len(nodes):
            out.append(Violation(path, "node listed twice"))
        total = 0
        t = cluster[c.gpu_type] if c.gpu_type in cluster.type_names else None
        for node, gpus in slots:
            if t is None or not isinstance(node, str) or not cluster.has_node(node) or cluster.node_type(node) != t.name:
                out.append(Violation(path, f"node {node} is not a {c.gpu_type} node of the cluster"))
                continue
            size = cluster.node_gpus(node)  # the node's own GPUs (a node may be smaller than its type's nominal size)
            for g in gpus:
                if not 0 <= g < size:
                    out.append(Violation(f"{path}.{node}", f"GPU {g} out of range"))
                key = (node, g)
                if key in seen:
                    out.append(Violation(f"gpu[{node}:{g}]", f"used by jobs {seen[key]} and {jid}"))
                seen[key] = jid
            total += len(gpus)
        if total != c.n_gpus:
            out.append(Violation(path, f"{total} GPUs placed for {c.label}"))
        if t is None:
            continue
        whole, part = config_parts(t.gpus_per_node, c.n_nodes, c.n_gpus)
        if part and whole + (1 if part else 0) == c.n_nodes and not (c.n_nodes == 1 and part == c.n_gpus
                                                                    and part & (part - 1) == 0):
            # a rigid shape: `whole` whole nodes, the remainder as aligned blocks of its binary digits
            full = [n for n, g in slots if sorted(g) == list(range(t.gpus_per_node))]
            if len(full) != whole:
                out.append(Violation(path, f"rigid shape {c.label} holds {len(full)} whole nodes, needs {whole}"))
            sizes: list[int] = []
            for node, gpus in slots:
                if node in full:
                    continue
                got = _aligned_blocks(sorted(gpus), t.gpus_per_node)
                sizes.extend(got or [])
            if sorted(sizes, reverse=True) != list(pow2_blocks(part)):
                out.append(Violation(path, f"rigid shape {c.label}: remainder blocks {sorted(sizes, reverse=True)} "
                                           f"are not the aligned blocks {list(pow2_blocks(part))}"))
            continue
        if len(set(nodes)) != c.n_nodes:
            out.append(Violation(path, f"on {len(set(nodes))} nodes for {c.label}"))
        if c.n_nodes >= 2 or c.n_gpus == t.gpus_per_node:
            for node, gpus in slots:
                if sorted(gpus) != list(range(t.gpus_per_node)):
                    out.append(Violation(path, f"multi-node configuration {c.label} does not use all of {node}"))
        elif len(slots) == 1:
            used = sorted(slots[0][1])
            # inside one virtual node: [off, off + b) for one of the node's binary digits
            off, inside = 0, False
            for b in virtual_bins(t.gpus_per_node):
                if off <= used[0] and used[-1] < off + b:
                    inside = True
                off += b
            if not inside:
                out.append(Violation(path, f"GPUs {used} of {slots[0][0]} cross a virtual-node boundary"))
            if used != list(range(used[0], used[0] + len(used))):
                out.append(Violation(path, f"GPUs {used} of {slots[0][0]} are not contiguous"))
    return out


def assert_allocation(problem: SiaRound, allocation: Mapping[JobId, Config | None]) -> None:
    """Raise :class:`~schedopt.problem.ViolationError` listing every violation of ``allocation``."""
    assert_valid(check_allocation(problem, allocation), "sia allocation")


def assert_placement(cluster: Cluster, allocation: Mapping[JobId, Config | None], placement: Placement) -> None:
    """Raise :class:`~schedopt.problem.ViolationError` listing every violation of ``placement``."""
    assert_valid(check_placement(cluster, allocation, placement), "sia placement")


def allocation_errors(problem: SiaRound, allocation: Mapping[JobId, Config | None]) -> list[str]:
    """Deprecated: ``[str(v) for v in check_allocation(...)]`` (check_allocation returned strings before)."""
    warnings.warn("allocation_errors is deprecated; check_allocation returns list[Violation]", DeprecationWarning,
                  stacklevel=2)
    return [str(v) for v in check_allocation(problem, allocation)]


def placement_errors(cluster: Cluster, allocation: Mapping[JobId, Config | None], placement: Placement) -> list[str]:
    """Deprecated: ``[str(v) for v in check_placement(...)]`` (check_placement returned strings before)."""
    warnings.warn("placement_errors is deprecated; check_placement returns list[Violation]", DeprecationWarning,
                  stacklevel=2)
    return [str(v) for v in check_placement(cluster, allocation, placement)]


def _goodput_one(problem: SiaRound, job: Job, c: Config) -> float:
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
    k = table.find(c)
    return 0.0 if k < 0 else float(arr[problem.job_index(job.id), k])


def utilities_of_job(problem: SiaRound, job: Job) -> dict[Config, float]:
    """Per-job utility of every allowed configuration (normalised, restart factor applied), computed per config."""
    cands = []
    for c in problem.configs.configs:
        ok = job_allows(job, c) is None and _shape_ok_for(problem, job, c) is None
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
    r = job.restart_factor(by_attained=problem.settings.rigid_restart_by_attained and job.kind == "rigid")
    out = {}
    for c, g in cands:
        v = g * u / gmin
        if job.current is not None and c != job.current:
            v *= r
        if v > 0:
            out[c] = v
    return out


def objective_value(problem: SiaRound, allocation: Mapping[JobId, Config | None]) -> float:
    """The objective of ``allocation`` (in the model's sense: maximised for p > 0, minimised for p < 0), with the
    settings' coefficient rounding and clip and change penalty (``lambda_a`` per changed entry of the job's
    allocation vector: 2 for a move, 1 for a stop, in the objective's worse direction).

    Raises ``KeyError`` when a job gets a configuration that has no utility (not a model column)."""
    total = 0.0
    p, lam = problem.p, problem.lam
    st = problem.settings
    worse = 1.0 if p < 0 else -1.0
    for job in problem.jobs:
        c = allocation.get(job.id)
        if job.current is not None and c != job.current:
            total += worse * st.change_penalty * (1 if c is None else 2)
        if c is None:
            total += -lam if p > 0 else lam
            continue
        u = utilities_of_job(problem, job)[c]
        total += float(st.round_coefficients(np.array(u**p)))
    return total

