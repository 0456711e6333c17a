"""The independent checker of a Pollux answer: plain numpy and loops over the spec, no search and no model."""

from __future__ import annotations

import math

import numpy as np

from ..errors import InputError
from ..problem import Violation
from ..sia import generate_configs
from .solve import PolluxAnswer
from .spec import EPS, PolluxSpec

__all__ = ["TOL", "check_allocation"]

#: The checker's tolerance.
TOL = 1e-6


def _goodput(spec: PolluxSpec, j: int, t: int, n: int, r: int) -> float:
    if n > spec.max_nodes or r > spec.max_replicas or r < 1:
        return 0.0
    g = float(spec.goodput[j, t, n, r])
    if math.isnan(g):
        assert spec.fill is not None  # the spec checks: NaN entries need a fill
        g = float(np.asarray(spec.fill(j, t, np.array([n]), np.array([r])))[0])
    return g


def _speedup(spec: PolluxSpec, j: int, t: int, n: int, r: int) -> float:
    if r == 0:
        return 0.0
    if spec.view is not None:
        if spec.view[j] < 0:
            return r / spec.base[j] * spec.speedup_scale
        t = int(spec.view[j])
    return _goodput(spec, j, t, n, r) / spec.base[j] * spec.speedup_scale


def _mean(s: list[float], p: float) -> float:
    return float(sum((v + EPS) ** p for v in s) / len(s)) ** (1.0 / p) if s else math.nan


def _check_matrix(spec: PolluxSpec, answer: PolluxAnswer) -> list[Violation]:
    out: list[Violation] = []
    ids = spec.cols.ids
    pos = {c: k for k, c in enumerate(ids)}
    J, N = spec.num_jobs, len(ids)
    x = np.zeros((J, N), dtype=np.int64)
    jpos = {j: i for i, j in enumerate(spec.jobs)}
    for jid, row in answer.nodes.items():
        if jid not in jpos:
            out.append(Violation(f"nodes[{jid}]", "names no job of the spec"))
            continue
        for c, g in row.items():
            if c not in pos:
                out.append(Violation(f"nodes[{jid}][{c}]", "names no column of the spec"))
            elif not isinstance(g, (int, np.integer)) or g < 0:
                out.append(Violation(f"nodes[{jid}][{c}]", f"{g!r} is not a GPU count >= 0"))
            else:
                x[jpos[jid], pos[c]] = int(g)
    if out:
        return out
    gpus, types = spec.cols.gpus, spec.cols.types
    for k in range(N):
        used = int(x[:, k].sum())
        if used > gpus[k]:
            out.append(Violation(f"node_capacity[{ids[k]}]", f"{used} GPUs > {int(gpus[k])}"))
        spread = [spec.jobs[j] for j in range(J) if x[j, k] and np.count_nonzero(x[j]) > 1]
        if len(spread) > 1:
            out.append(Violation(f"one_distributed_job[{ids[k]}]", f"distributed jobs {spread} share the node"))
    spd: list[float] = []
    for j, jid in enumerate(spec.jobs):
        r, n = int(x[j].sum()), int(np.count_nonzero(x[j]))
        if r > spec.job_cap[j]:
            out.append(Violation(f"job_cap[{jid}]", f"{r} GPUs > {int(spec.job_cap[j])}"))
        if n > spec.max_nodes:
            out.append(Violation(f"max_nodes[{jid}]", f"{n} nodes > {spec.max_nodes}"))
        if spec.rigid_gpus[j] and r not in (0, int(spec.rigid_gpus[j])):
            out.append(Violation(f"rigid[{jid}]", f"{r} GPUs, neither 0 nor {int(spec.rigid_gpus[j])}"))
        held = sorted({int(types[k]) for k in range(N) if x[j, k]})
        if spec.view is None and len(held) > 1:
            out.append(Violation(f"one_gpu_type[{jid}]", f"GPUs of types {[spec.types[t] for t in held]}"))
        s = _speedup(spec, j, held[0] if held else 0, n, r)
        if any(x[j, k] != spec.current_matrix[j, k] for k in range(N)):
            s *= float(spec.restart[j])
        spd.append(s)
    _objective(out, answer, _mean(spd, spec.p))
    return out


def _objective(out: list[Violation], answer: PolluxAnswer, v: float) -> None:
    if not (math.isnan(v) and math.isnan(answer.objective_value)) and \
            not math.isclose(v, answer.objective_value, rel_tol=TOL, abs_tol=1e-9):
        out.append(Violation("objective", f"the answer says {answer.objective_value:.9g}, its allocation gives {v:.9g}"))


def _check_configs(spec: PolluxSpec, answer: PolluxAnswer) -> list[Violation]:
    out: list[Violation] = []
    cl = spec.cluster
    table = generate_configs(cl)
    per_type = dict.fromkeys(cl.type_names, 0)
    spd: list[float] = []
    for j, jid in enumerate(spec.jobs):
        c = answer.allocation.get(jid)
        if c is None:
            spd.append(0.0)
            continue
        if table.find(c) < 0:
            out.append(Violation(f"allocation[{jid}]", f"{c.label} is no configuration of the cluster"))
            spd.append(0.0)
            continue
        per_type[c.gpu_type] += c.n_gpus
        if c.n_gpus > spec.job_cap[j]:
            out.append(Violation(f"job_cap[{jid}]", f"{c.n_gpus} GPUs > {int(spec.job_cap[j])}"))
        if spec.rigid_gpus[j] and c.n_gpus != spec.rigid_gpus[j]:
            out.append(Violation(f"rigid[{jid}]", f"{c.n_gpus} GPUs, not {int(spec.rigid_gpus[j])}"))
        s = _speedup(spec, j, cl.type_index(c.gpu_type), c.n_nodes, c.n_gpus)
        row = spec.current_matrix[j]
        nz = np.flatnonzero(row)
        same = (nz.size == c.n_nodes and int(row.sum()) == c.n_gpus
                and {spec.types[int(t)] for t in spec.cols.types[nz]} == {c.gpu_type})
        spd.append(s if same else s * float(spec.restart[j]))
    for t, used in per_type.items():
        if used > cl[t].total_gpus:
            out.append(Violation(f"gpu_capacity[{t}]", f"{used} GPUs > {cl[t].total_gpus}"))
    _objective(out, answer, _mean(spd, spec.p))
    return out


def check_allocation(spec: PolluxSpec, answer: PolluxAnswer) -> list[Violation]:
    """Node capacity, at most one distributed job per node, ``cap`` GPUs and ``max_nodes`` nodes per job, one GPU type
    per job, rigid jobs exactly their count or nothing (``ga``); GPUs per type, ``cap`` and rigid counts
    (``exact``); and the answer's ``M`` recomputed from its allocation and the spec's goodput table."""
    if not isinstance(answer, PolluxAnswer):
        raise InputError("answer", type(answer).__name__, "must be a PolluxAnswer")
    if not answer.has_solution or spec.num_jobs == 0:
        return []
    if answer.method.endswith("exact"):
        return _check_configs(spec, answer)
    return _check_matrix(spec, answer)
