"""Model builders: P1 (pooled or per server for a fixed GPU placement), the multi-node packing LP, the joint MILP.

Every builder works on whole arrays (numpy / scipy.sparse); nothing loops over single variables. Names of blocks
and families match ``formulations/synergy.md``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ..errors import InputError
from ..model import LinearModel
from .spec import JobOptions, Server, SynergyJob

__all__ = ["LevelIndex", "PointIndex", "assign_class_gpus", "build_integral_packing", "build_joint", "build_joint_points", "build_p1_placed", "build_packing_lp", "level_index", "point_index"]

P1_FAMILIES = ("cpu_capacity", "mem_capacity", "one_config_per_job", "at_least_proportional")


def _job_rows(opts: JobOptions, n_jobs: int, values: np.ndarray) -> sp.csr_matrix:
    """(jobs x options) matrix with ``values[o]`` at (job[o], o)."""
    n = opts.size
    return sp.csr_matrix((values, (opts.job, np.arange(n))), shape=(n_jobs, n))


def build_p1_placed(
    jobs: Sequence[SynergyJob],
    opts: JobOptions,
    gpu_on: np.ndarray,
    cpu_cap: np.ndarray,
    mem_cap: np.ndarray,
    *,
    weighted: bool = False,
    group_labels: Sequence[str] | None = None,
    name: str = "synergy_p1",
) -> LinearModel:
    """P1 for a fixed GPU placement ``gpu_on`` (groups x jobs: GPUs of each job in each capacity group).

    One group with ``gpu_on[0] = g`` is Synergy's P1 on the cluster as one pool; one group per server is "one P1
    per server" of Synergy-OPT, coupled only through jobs split over several servers (they keep one cell).
    Block ``y`` (binary) is flattened over every job's options (see :class:`~schedopt.synergy.spec.JobOptions`).
    """
    t0 = time.perf_counter()
    J = len(jobs)
    gpu_on = np.asarray(gpu_on, dtype=np.float64)
    R = gpu_on.shape[0]
    m = LinearModel(name, sense="maximize")
    m.add_variables("y", opts.size, kind="binary", labels=opts.labels(jobs))
    per_gpu = gpu_on[:, opts.job]  # groups x options: the job's GPUs in that group
    m.add_constraints(
        "cpu_capacity", {"y": sp.csr_matrix(per_gpu * opts.cpu[None, :])}, upper=cpu_cap, labels=group_labels
    )
    m.add_constraints(
        "mem_capacity", {"y": sp.csr_matrix(per_gpu * opts.mem[None, :])}, upper=mem_cap, labels=group_labels
    )
    ids = [j.id for j in jobs]
    m.add_constraints("one_config_per_job", {"y": _job_rows(opts, J, np.ones(opts.size))}, lower=1, upper=1, labels=ids)
    m.add_constraints("at_least_proportional", {"y": _job_rows(opts, J, opts.w)}, lower=opts.w_prop, labels=ids)
    g = np.fromiter((j.gpus for j in jobs), dtype=np.float64, count=J)
    m.set_objective({"y": opts.w * (g[opts.job] if weighted else 1.0)})
    m.meta.update(
        {
            "problem": "synergy",
            "model": "p1",
            "objective": "gpu_weighted_throughput" if weighted else "sum_normalized_throughput",
            "groups": R,
        }
    )
    m.build_seconds = time.perf_counter() - t0
    return m


def build_packing_lp(
    servers: Sequence[Server],
    jobs: Sequence[SynergyJob],
    gpus: np.ndarray,
    cpus: np.ndarray,
    mem: np.ndarray,
    *,
    span: str = "lp",
    name: str = "synergy_packing",
) -> LinearModel:
    """Synergy-OPT's multi-node model: share ``x[i, j]`` of job j's demand (g, CPUs, GB) on server i.

    The span count sum_ij [x_ij > 0] is not linear; its surrogate is ``z >= x`` with ``sum z`` minimised (plus a
    small server-order weight ``(1 + i / (10 S))`` so a vertex fills low-index servers first). ``span="lp"``: z
    continuous (the LP, as Synergy-OPT); ``span="milp"``: z binary, the exact span count of the fractional packing.
    """
    if span not in ("lp", "milp"):
        raise InputError("span", span, "must be 'lp' or 'milp'")
    t0 = time.perf_counter()
    S, J = len(servers), len(jobs)
    m = LinearModel(name, sense="minimize")
    snames = [f"server{i}" for i in range(S)]
    ids = [j.id for j in jobs]
    x = m.add_variables("x", (S, J), lower=0, upper=1, labels=(snames, ids))
    m.add_variables("z", (S, J), lower=0, upper=1, kind="binary" if span == "milp" else "continuous", labels=(snames, ids))
    ones_S = sp.csr_matrix(np.ones((1, S)))
    # gpu_demand: sum_i g_j x_ij = g_j
    m.add_constraints("gpu_demand", {"x": sp.kron(ones_S, sp.diags(gpus), format="csr")}, lower=gpus, upper=gpus, labels=ids)
    eye_S = sp.identity(S, format="csr")
    for fam, vec, cap in (
        ("server_gpu_capacity", gpus, [s.gpus for s in servers]),
        ("server_cpu_capacity", cpus, [s.cpus for s in servers]),
        ("server_mem_capacity", mem, [s.mem_gb for s in servers]),
    ):
        m.add_constraints(fam, {"x": sp.kron(eye_S, sp.csr_matrix(np.asarray(vec)[None, :]), format="csr")}, upper=cap, labels=snames)
    eye_x = sp.identity(x.size, format="csr")
    link_labels = [f"{s}:{j}" for s in snames for j in ids]
    m.add_constraints("span_link", {"x": eye_x, "z": -eye_x}, upper=0, labels=link_labels)
    w = 1.0 + np.arange(S)[:, None] / (10.0 * S) * np.ones((1, J))
    m.set_objective({"z": w})
    m.meta.update({"problem": "synergy", "model": "packing", "span": span})
    m.build_seconds = time.perf_counter() - t0
    return m


def build_integral_packing(
    servers: Sequence[Server],
    gpus: np.ndarray,
    cpu_per_gpu: np.ndarray,
    mem_per_gpu: np.ndarray,
    *,
    labels: Sequence[str] | None = None,
    symmetry: bool = True,
    name: str = "synergy_integral_packing",
) -> LinearModel:
    """Synergy-OPT's packing with integral GPUs (ours), over **point classes**: class ``k`` needs ``gpus[k]`` GPUs in
    all, each at (``cpu_per_gpu[k]``, ``mem_per_gpu[k]``) -- the pooled P1's choice, jobs grouped by their per-GPU
    point (GPUs of one class are interchangeable, so jobs are assigned to the packed GPUs afterwards). A
    feasibility model (zero objective): any solution realises the P1 optimum on the servers.

    Block ``n`` (integer, servers x classes); families ``gpu_demand``, ``server_gpu_capacity``,
    ``server_cpu_capacity``, ``server_mem_capacity``, and ``server_symmetry`` (GPU loads non-increasing over
    consecutive identical servers; any packing can be permuted to satisfy it).
    """
    t0 = time.perf_counter()
    S = len(servers)
    gk = np.asarray(gpus, dtype=np.float64)
    K = gk.size
    G = np.array([s.gpus for s in servers], dtype=np.float64)
    snames = [f"server{i}" for i in range(S)]
    ids = list(labels) if labels is not None else [f"class{k}" for k in range(K)]
    m = LinearModel(name, sense="minimize")
    m.add_variables("n", (S, K), kind="integer", lower=0, upper=np.minimum(G[:, None], gk[None, :]), labels=(snames, ids))
    ones_S = sp.csr_matrix(np.ones((1, S)))
    eye_S = sp.identity(S, format="csr")
    m.add_constraints("gpu_demand", {"n": sp.kron(ones_S, sp.identity(K), format="csr")}, lower=gk, upper=gk, labels=ids)
    for fam, per, cap in (
        ("server_gpu_capacity", np.ones(K), G),
        ("server_cpu_capacity", np.asarray(cpu_per_gpu, dtype=np.float64), [s.cpus for s in servers]),
        ("server_mem_capacity", np.asarray(mem_per_gpu, dtype=np.float64), [s.mem_gb for s in servers]),
    ):
        m.add_constraints(fam, {"n": sp.kron(eye_S, sp.csr_matrix(per[None, :]), format="csr")}, upper=cap, labels=snames)
    if symmetry and S > 1:
        _add_symmetry(m, "n", servers, K)
    m.set_objective({"n": np.zeros((S, K))})
    m.build_seconds = time.perf_counter() - t0
    return m


def assign_class_gpus(n: np.ndarray, job_class: np.ndarray, gpus: np.ndarray) -> np.ndarray:
    """Jobs onto a packing of point classes: ``n`` (servers x classes) GPUs per class per server, job ``j`` of class
    ``job_class[j]`` needs ``gpus[j]``. Per class, largest jobs first, each goes whole to the server with the fewest
    class GPUs left that holds all of it, else takes the servers with the most left. Returns servers x jobs."""
    left = np.asarray(n, dtype=np.int64).copy()
    out = np.zeros((left.shape[0], gpus.size), dtype=np.int64)
    for j in np.argsort(-gpus, kind="stable"):
        k, need = int(job_class[j]), int(gpus[j])
        col = left[:, k]
        whole = np.flatnonzero(col >= need)
        if whole.size:
            i = int(whole[np.argmin(col[whole])])
            out[i, j] = need
            col[i] -= need
            continue
        for i in np.argsort(-col, kind="stable"):
            t = int(min(col[i], need))
            out[i, j] += t
            col[i] -= t
            need -= t
            if need == 0:
                break
    return out


def _add_symmetry(m: LinearModel, block: str, servers: Sequence[Server], J: int) -> None:
    """``server_symmetry``: sum_j v[i, j] >= sum_j v[i+1, j] for consecutive identical servers i, i+1."""
    S = len(servers)
    key = np.array([[s.gpus, s.cpus, s.mem_gb] for s in servers], dtype=np.float64)
    pairs = np.flatnonzero(np.all(np.isclose(key[1:], key[:-1], rtol=1e-12), axis=1))
    if pairs.size:
        rowsum = sp.kron(sp.identity(S, format="csr"), sp.csr_matrix(np.ones((1, J))), format="csr")
        D = rowsum[pairs] - rowsum[pairs + 1]
        m.add_constraints("server_symmetry", {block: D}, lower=0, labels=[f"server{i}>=server{i + 1}" for i in pairs])


class PointIndex(NamedTuple):
    """Distinct per-GPU points (CPUs, GB) over every option: the point of each option and each point's values."""

    of_option: np.ndarray
    cpu: np.ndarray
    mem: np.ndarray


def point_index(opts: JobOptions) -> PointIndex:
    """The distinct (CPU, memory) points of the options and each option's point."""
    pts = np.stack([opts.cpu, opts.mem], axis=1)
    uniq, inv = np.unique(pts, axis=0, return_inverse=True) if opts.size else (np.zeros((0, 2)), np.zeros(0, np.int64))
    return PointIndex(np.asarray(inv).ravel().astype(np.int64), uniq[:, 0], uniq[:, 1])


def build_joint_points(
    servers: Sequence[Server],
    jobs: Sequence[SynergyJob],
    opts: JobOptions,
    *,
    weighted: bool = False,
    symmetry: bool = True,
    p1_bound: float | None = None,
    name: str = "synergy_joint_points",
) -> LinearModel:
    """The exact joint MILP over per-GPU **points** (ours; the default of ``solve_joint``): P1's option choice
    ``y`` plus ``n[i, k]``, the GPUs at point k (CPUs, GB per GPU) on server i.

    GPUs at one point are interchangeable, so a solution maps back to jobs by :func:`assign_class_gpus` (a job
    may span servers, as in the per-job model); conversely every allocation aggregates to a feasible point. The
    model is exact, has S x K integers (K distinct points, a few dozen) instead of S x J plus the level blocks,
    and none of the symmetry between jobs at the same point.
    Families: ``one_config_per_job``, ``at_least_proportional`` (as P1), ``point_link`` (labels: points):
    $\\sum_i n_{ik} = \\sum_{o: k(o) = k} g_{j(o)} y_o$, ``server_gpu_capacity``, ``server_cpu_capacity``,
    ``server_mem_capacity`` (sums of ``n`` weighted by 1, $c_k$, $m_k$), ``server_symmetry``, ``objective_cut``.
    """
    t0 = time.perf_counter()
    S, J = len(servers), len(jobs)
    pts = point_index(opts)
    K = pts.cpu.size
    G = np.array([s.gpus for s in servers], dtype=np.float64)
    gj = np.fromiter((j.gpus for j in jobs), dtype=np.float64, count=J)
    Nk = np.bincount(pts.of_option, weights=gj[opts.job], minlength=K) if opts.size else np.zeros(0)
    snames = [f"server{i}" for i in range(S)]
    ids = [j.id for j in jobs]
    plabels = [f"c{c:g},m{m:g}" for c, m in zip(pts.cpu, pts.mem)]
    m = LinearModel(name, sense="maximize")
    m.add_variables("y", opts.size, kind="binary", labels=opts.labels(jobs))
    m.add_variables("n", (S, K), kind="integer", lower=0, upper=np.minimum(G[:, None], Nk[None, :]), labels=(snames, plabels))
    m.add_constraints("one_config_per_job", {"y": _job_rows(opts, J, np.ones(opts.size))}, lower=1, upper=1, labels=ids)
    m.add_constraints("at_least_proportional", {"y": _job_rows(opts, J, opts.w)}, lower=opts.w_prop, labels=ids)
    Ay = sp.csr_matrix((-gj[opts.job], (pts.of_option, np.arange(opts.size))), shape=(K, opts.size))
    m.add_constraints(
        "point_link", {"n": sp.kron(sp.csr_matrix(np.ones((1, S))), sp.identity(K), format="csr"), "y": Ay}, lower=0, upper=0, labels=plabels
    )
    eye_S = sp.identity(S, format="csr")
    for fam, per, cap in (
        ("server_gpu_capacity", np.ones(K), G),
        ("server_cpu_capacity", pts.cpu, [s.cpus for s in servers]),
        ("server_mem_capacity", pts.mem, [s.mem_gb for s in servers]),
    ):
        m.add_constraints(fam, {"n": sp.kron(eye_S, sp.csr_matrix(per[None, :]), format="csr")}, upper=cap, labels=snames)
    if symmetry and S > 1:
        _add_symmetry(m, "n", servers, K)
    obj = opts.w * (gj[opts.job] if weighted else 1.0)
    if p1_bound is not None:
        m.add_constraints("objective_cut", {"y": sp.csr_matrix(obj[None, :])}, upper=float(p1_bound) + 1e-7 * max(1.0, abs(float(p1_bound))), labels=["p1_bound"])
    m.set_objective({"y": obj})
    m.build_seconds = time.perf_counter() - t0
    return m


class LevelIndex(NamedTuple):
    """Distinct (job, value) levels of one resource: the job and value of each level, the level of each option."""

    job: np.ndarray
    value: np.ndarray
    of_option: np.ndarray


def level_index(opts: JobOptions, values: np.ndarray) -> LevelIndex:
    """Distinct (job, value) levels: (job of each level, value of each level, level of each option)."""
    keys = np.stack([opts.job.astype(np.float64), values], axis=1)
    uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    return LevelIndex(uniq[:, 0].astype(np.int64), uniq[:, 1], inv.ravel().astype(np.int64))


def build_joint(
    servers: Sequence[Server],
    jobs: Sequence[SynergyJob],
    opts: JobOptions,
    *,
    weighted: bool = False,
    symmetry: bool = True,
    p1_bound: float | None = None,
    name: str = "synergy_joint",
) -> LinearModel:
    """The exact joint MILP: integer GPUs ``g[i, j]``, one option per job (``y``), per-server CPU / GB through the
    disaggregated level variables ``wc`` / ``wm`` (see the formulation card for the proof of exactness).

    ``symmetry``: among servers identical in (GPUs, CPUs, GB), order the GPUs used non-increasingly
    (``server_symmetry``); any solution can be permuted to satisfy it, so the optimum is unchanged.
    ``p1_bound`` (a proven upper bound of the pooled P1, e.g. its optimum) adds ``objective_cut``: objective <=
    that bound, valid since P1 relaxes the joint model.
    """
    t0 = time.perf_counter()
    S, J = len(servers), len(jobs)
    n = opts.size
    G = np.array([s.gpus for s in servers], dtype=np.float64)
    C = np.array([s.cpus for s in servers], dtype=np.float64)
    M = np.array([s.mem_gb for s in servers], dtype=np.float64)
    gj = np.fromiter((j.gpus for j in jobs), dtype=np.float64, count=J)
    U = np.minimum(G[:, None], gj[None, :])  # S x J
    snames = [f"server{i}" for i in range(S)]
    ids = [j.id for j in jobs]
    m = LinearModel(name, sense="maximize")
    g = m.add_variables("g", (S, J), kind="integer", lower=0, upper=U, labels=(snames, ids))
    m.add_variables("y", n, kind="binary", labels=opts.labels(jobs))
    jc, vc, lc = level_index(opts, opts.cpu)
    jm, vm, lm = level_index(opts, opts.mem)
    Kc, Km = jc.size, jm.size
    lab_c = [f"{ids[j]}@c{v:g}" for j, v in zip(jc, vc)]
    lab_m = [f"{ids[j]}@m{v:g}" for j, v in zip(jm, vm)]
    m.add_variables("wc", (S, Kc), lower=0, upper=U[:, jc], labels=(snames, lab_c))
    m.add_variables("wm", (S, Km), lower=0, upper=U[:, jm], labels=(snames, lab_m))

    ones_S = sp.csr_matrix(np.ones((1, S)))
    eye_S = sp.identity(S, format="csr")
    m.add_constraints("gpu_demand", {"g": sp.kron(ones_S, sp.identity(J), format="csr")}, lower=gj, upper=gj, labels=ids)
    m.add_constraints(
        "server_gpu_capacity", {"g": sp.kron(eye_S, sp.csr_matrix(np.ones((1, J))), format="csr")}, upper=G, labels=snames
    )
    m.add_constraints("one_config_per_job", {"y": _job_rows(opts, J, np.ones(n))}, lower=1, upper=1, labels=ids)
    m.add_constraints("at_least_proportional", {"y": _job_rows(opts, J, opts.w)}, lower=opts.w_prop, labels=ids)

    # pool_{cpu,mem}_capacity: the servers' rows summed (valid, redundant for integers; tightens the relaxation
    # to at least P1's)
    m.add_constraints("pool_cpu_capacity", {"y": sp.csr_matrix((gj[opts.job] * opts.cpu)[None, :])}, upper=C.sum(), labels=["pool"])
    m.add_constraints("pool_mem_capacity", {"y": sp.csr_matrix((gj[opts.job] * opts.mem)[None, :])}, upper=M.sum(), labels=["pool"])
    pair_labels = [f"{s}:{j}" for s in snames for j in ids]
    for dim, blk, jl, vl, lev, K, lab, cap in (
        ("cpu", "wc", jc, vc, lc, Kc, lab_c, C),
        ("mem", "wm", jm, vm, lm, Km, lab_m, M),
    ):
        # {dim}_split: sum_{levels l of job j} w[i, l] = g[i, j]
        level_to_job = sp.csr_matrix((np.ones(K), (jl, np.arange(K))), shape=(J, K))
        m.add_constraints(
            f"{dim}_split",
            {blk: sp.kron(eye_S, level_to_job, format="csr"), "g": -sp.identity(S * J, format="csr")},
            lower=0,
            upper=0,
            labels=pair_labels,
        )
        # {dim}_level_link: w[i, l] <= U[i, job(l)] * sum_{o at level l} y[o]
        rows = (np.arange(S)[:, None] * K + lev[None, :]).ravel()
        cols = np.tile(np.arange(n), S)
        vals = -U[:, opts.job].ravel()
        Ay = sp.csr_matrix((vals, (rows, cols)), shape=(S * K, n))
        m.add_constraints(
            f"{dim}_level_link",
            {blk: sp.identity(S * K, format="csr"), "y": Ay},
            upper=0,
            labels=[f"{s}:{lv}" for s in snames for lv in lab],
        )
        m.add_constraints(
            f"server_{dim}_capacity", {blk: sp.kron(eye_S, sp.csr_matrix(vl[None, :]), format="csr")}, upper=cap, labels=snames
        )
    if symmetry and S > 1:
        _add_symmetry(m, "g", servers, J)
    if p1_bound is not None:
        # objective_cut: the pooled P1 optimum bounds the joint objective (P1 relaxes it); valid, and it lets the
        # solver stop as soon as an incumbent reaches it
        m.add_constraints("objective_cut", {"y": sp.csr_matrix((opts.w * (gj[opts.job] if weighted else 1.0))[None, :])}, upper=float(p1_bound) + 1e-7 * max(1.0, abs(float(p1_bound))), labels=["p1_bound"])
    m.set_objective({"y": opts.w * (gj[opts.job] if weighted else 1.0)})
    m.meta.update(
        {
            "problem": "synergy",
            "model": "joint",
            "objective": "gpu_weighted_throughput" if weighted else "sum_normalized_throughput",
        }
    )
    assert g.shape == (S, J)
    m.build_seconds = time.perf_counter() - t0
    return m
