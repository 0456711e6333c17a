"""Gandiva instances: a cluster (nodes, placed jobs, packed GPUs), pending jobs and the operation to run.

``data`` layout (inside the ``schedopt.instance`` envelope)::

    {"operation": "pack" | "defragment" | "allocate",
     "nodes":   [{"name": "n0", "gpus": 4, "gpu_memory": 1.0}, ...],
     "jobs":    [{<job fields>, "slots": [[node, gpu], ...]}, ...],       # already placed
     "packed":  [[node, gpu], ...],                                       # GPUs space-sharing two jobs
     "pending": [{<job fields>}, ...],   # pack: the 1-GPU jobs to pack; defragment: exactly one incoming job;
                                         # allocate: jobs placed by Algorithm 1 in this order
     "profiles": {"types": [...], "solo_throughput": [...], "utilization": [...], "memory": [...],
                  "factor": [[...]]}}                                      # interference table (the job types used)

Job fields: ``id, gpus, job_type, utilization, memory, throughput, duration, arrival, elastic, max_gpus``.

``solve``: ``pack`` runs :func:`pack_exact` (and reports the greedy's throughput and gap), ``defragment`` runs
:func:`defragment` with ``method="exact"`` (and the greedy's migration count), ``allocate`` runs Algorithm 1 (no
solver).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from ..instances import ProblemIO
from ..instances import field as _f
from .allocate import allocate
from .migration import defragment, fits
from .packing import pack_exact, pack_greedy, packing_gap
from .profiles import Profiles, load_profiles
from .replay import generate_trace, sample_philly, uniform_cluster
from .state import ClusterState, GandivaJob, Node, Slot, validate_job, validate_nodes

__all__ = ["PROBLEM_IO", "GandivaInstance", "explain_instance", "from_data", "generate", "solve_instance", "to_data"]

OPERATIONS = ("pack", "defragment", "allocate")


@dataclass
class GandivaInstance:
    operation: str
    nodes: list[Node]
    jobs: list[GandivaJob] = field(default_factory=list)
    slots: dict[str, list[Slot]] = field(default_factory=dict)
    packed: list[Slot] = field(default_factory=list)
    pending: list[GandivaJob] = field(default_factory=list)
    profiles: Profiles | None = None

    def state(self) -> ClusterState:
        st = ClusterState(self.nodes)
        for j in self.jobs:
            st.place(j, self.slots[j.id])
        for s in self.packed:
            st.pack(*s)
        return st

    def table(self) -> Profiles:
        return self.profiles if self.profiles is not None else load_profiles()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GandivaInstance) and to_data(self) == to_data(other)


def _job_to_data(j: GandivaJob) -> dict[str, Any]:
    return {
        "id": j.id, "gpus": j.gpus, "job_type": j.job_type, "utilization": j.utilization, "memory": j.memory,
        "throughput": j.throughput, "duration": j.duration, "arrival": j.arrival, "elastic": j.elastic,
        "max_gpus": j.max_gpus,
    }


def to_data(inst: GandivaInstance) -> dict[str, Any]:
    return {
        "operation": inst.operation,
        "nodes": [{"name": n.name, "gpus": n.gpus, "gpu_memory": n.gpu_memory} for n in inst.nodes],
        "jobs": [{**_job_to_data(j), "slots": [list(s) for s in inst.slots[j.id]]} for j in inst.jobs],
        "packed": [list(s) for s in inst.packed],
        "pending": [_job_to_data(j) for j in inst.pending],
        "profiles": inst.profiles.to_data() if inst.profiles is not None else None,
    }


def _job_from(d: Any, path: str) -> GandivaJob:
    if not isinstance(d, dict):
        raise InputError(path, type(d).__name__, "must be a JSON object")
    mg = _f(d, "max_gpus", path, (int, type(None)), None)
    job = GandivaJob(
        id=_f(d, "id", path, str),
        gpus=_f(d, "gpus", path, int),
        job_type=_f(d, "job_type", path, str, ""),
        utilization=_f(d, "utilization", path, float, 0.5),
        memory=_f(d, "memory", path, float, 0.5),
        throughput=_f(d, "throughput", path, float, 1.0),
        duration=_f(d, "duration", path, float, 3600.0),
        arrival=_f(d, "arrival", path, float, 0.0),
        elastic=_f(d, "elastic", path, bool, False),
        max_gpus=mg,
    )
    validate_job(job, path)
    return job


def _slot(v: Any, path: str) -> Slot:
    if (
        not isinstance(v, list) or len(v) != 2
        or any(isinstance(x, bool) or not isinstance(x, int) for x in v)
    ):
        raise InputError(path, v, "must be a [node, gpu] pair of integers")
    return (v[0], v[1])


def _list(d: dict, key: str, path: str, default: Any = ...) -> list:
    return _f(d, key, path, list, default)


def from_data(data: dict[str, Any]) -> GandivaInstance:
    p = "data"
    op = _f(data, "operation", p, str)
    if op not in OPERATIONS:
        raise InputError(f"{p}.operation", op, f"must be one of {list(OPERATIONS)}")
    raw_nodes = _list(data, "nodes", p)
    nodes = []
    for i, nd in enumerate(raw_nodes):
        q = f"{p}.nodes[{i}]"
        if not isinstance(nd, dict):
            raise InputError(q, type(nd).__name__, "must be a JSON object")
        nodes.append(Node(_f(nd, "name", q, str), _f(nd, "gpus", q, int), _f(nd, "gpu_memory", q, float, 1.0)))
    validate_nodes(nodes, f"{p}.nodes")
    jobs: list[GandivaJob] = []
    slots: dict[str, list[Slot]] = {}
    for i, jd in enumerate(_list(data, "jobs", p, [])):
        q = f"{p}.jobs[{i}]"
        job = _job_from(jd, q)
        if job.id in slots:
            raise InputError(f"{q}.id", job.id, "is used by an earlier job")
        sl = [_slot(v, f"{q}.slots[{k}]") for k, v in enumerate(_list(jd, "slots", q))]
        for k, (n, g) in enumerate(sl):
            if not (0 <= n < len(nodes)) or not (0 <= g < nodes[n].gpus):
                raise InputError(f"{q}.slots[{k}]", [n, g], "names no GPU of the cluster")
        if len(set(sl)) != len(sl) or len(sl) < job.gpus:
            raise InputError(f"{q}.slots", [list(s) for s in sl], f"needs {job.gpus} distinct GPUs")
        jobs.append(job)
        slots[job.id] = sl
    packed = [_slot(v, f"{p}.packed[{k}]") for k, v in enumerate(_list(data, "packed", p, []))]
    pending = [_job_from(jd, f"{p}.pending[{i}]") for i, jd in enumerate(_list(data, "pending", p, []))]
    seen = set(slots)
    for i, j in enumerate(pending):
        if j.id in seen:
            raise InputError(f"{p}.pending[{i}].id", j.id, "is used by an earlier job")
        seen.add(j.id)
    if op == "defragment" and len(pending) != 1:
        raise InputError(f"{p}.pending", len(pending), "defragment needs exactly one incoming job")
    prof_d = _f(data, "profiles", p, (dict, type(None)), None)
    profiles = None
    if prof_d is not None:
        q = f"{p}.profiles"
        try:
            profiles = Profiles(
                tuple(_list(prof_d, "types", q)),
                _list(prof_d, "solo_throughput", q),
                _list(prof_d, "utilization", q),
                _list(prof_d, "memory", q),
                _list(prof_d, "factor", q),
            )
        except InputError as exc:
            if exc.field.startswith(q):
                raise
            raise InputError(f"{p}.{exc.field}", exc.value, exc.message) from None
        except (TypeError, ValueError) as exc:
            raise InputError(q, "malformed", f"numeric arrays expected: {exc}") from None
    inst = GandivaInstance(op, nodes, jobs, slots, packed, pending, profiles)
    st = ClusterState(nodes)
    for i, j in enumerate(jobs):  # GPUs may hold several jobs (time-sliced) unless packed
        try:
            st.place(j, slots[j.id])
        except InputError as exc:
            raise InputError(f"{p}.jobs[{i}].slots", exc.value, exc.message) from None
    for k, s in enumerate(packed):
        if not (0 <= s[0] < len(nodes)) or not (0 <= s[1] < nodes[s[0]].gpus) or len(st.gpu_jobs(*s)) != 2:
            raise InputError(f"{p}.packed[{k}]", list(s), "must name a GPU holding exactly two jobs")
    if op == "pack":
        table = inst.table()
        for i, j in enumerate(pending):
            if j.gpus != 1:
                raise InputError(f"{p}.pending[{i}].gpus", j.gpus, "packing places 1-GPU jobs")
            if j.job_type not in table.types:
                raise InputError(f"{p}.pending[{i}].job_type", j.job_type, "is not in the profile table")
    return inst


def solve_instance(
    inst: GandivaInstance, backend: str | None = None, time_limit: float | None = None
) -> tuple[Any, list[dict], dict]:
    st = inst.state()
    if inst.operation == "pack":
        ex = pack_exact(st, inst.pending, backend=backend, profiles=inst.table(), time_limit=time_limit)
        gr = pack_greedy(st, inst.pending, profiles=inst.table())
        rows = []
        for j in inst.pending:
            s = ex.assignment.get(j.id)
            mates = [k for k, t in ex.assignment.items() if s is not None and t == s and k != j.id]
            rows.append({
                "job": j.id, "type": j.job_type, "node": inst.nodes[s[0]].name if s else "-",
                "gpu": s[1] if s else "-", "partner": mates[0] if mates else "-",
                "throughput": round(ex.job_throughput.get(j.id, 0.0), 4),
            })
        summary = {
            "termination": ex.termination, "objective": ex.throughput, "bound": ex.bound,
            "gap": ex.result.gap if ex.result is not None else float("nan"), "greedy_objective": gr.throughput,
            "greedy_gap": packing_gap(ex, gr) if ex.result is not None and ex.result.has_solution else float("nan"),
            "seconds": ex.seconds, "greedy_seconds": gr.seconds,
        }
        return ex, rows, summary
    if inst.operation == "defragment":
        job = inst.pending[0]
        ex = defragment(st, job, method="exact", backend=backend, time_limit=time_limit)
        gr = defragment(st, job, method="greedy")
        rows = [{"job": m.job_id, "from": inst.nodes[m.source].name, "to": inst.nodes[m.target].name} for m in ex.moves]
        summary = {
            "termination": ex.termination, "objective": ex.migrations if ex.freed else float("nan"),
            "bound": ex.result.bound if ex.result is not None else float("nan"),
            "gap": ex.result.gap if ex.result is not None else float("nan"), "freed": ex.freed,
            "target_nodes": [inst.nodes[n].name for n in ex.target_nodes], "greedy_migrations": gr.migrations,
            "greedy_freed": gr.freed, "seconds": ex.seconds, "explanation": ex.explanation,
        }
        return ex, rows, summary
    rows = []
    for j in inst.pending:
        a = allocate(st, j)
        rows.append({
            "job": j.id, "gpus": j.gpus, "tier": a.tier if a else "queued",
            "nodes": ",".join(inst.nodes[n].name for n in a.nodes) if a else "-",
        })
    summary = {
        "termination": "heuristic", "objective": float(st.cluster_height), "bound": float("nan"), "gap": float("nan"),
        "heights": st.heights().round(4).tolist(), "affinities": st.affinities().tolist(),
    }
    return st, rows, summary


def explain_instance(inst: GandivaInstance) -> str:
    st = inst.state()
    lines = [
        f"Gandiva {inst.operation}: {len(inst.nodes)} nodes / {st.num_gpus} GPUs, {len(inst.jobs)} placed jobs, "
        f"{len(inst.pending)} pending, cluster height {st.cluster_height:.2f}",
        f"heights {st.heights().round(3).tolist()}  affinities {st.affinities().tolist()}",
    ]
    if inst.operation == "pack":
        from .packing import build_packing_model

        m = build_packing_model(st, inst.pending, profiles=inst.table())
        lines.append(m.summary())
    elif inst.operation == "defragment":
        from .migration import build_defrag_model

        m = build_defrag_model(st, inst.pending[0])
        lines.append(m.summary())
    return "\n".join(lines)


def generate(gpus: int, seed: int = 0, *, operation: str = "pack", gpus_per_node: int = 4, **kw: Any) -> GandivaInstance:
    """A realistic instance on ``gpus`` GPUs (nodes of ``gpus_per_node``), from the shipped Philly and Gavel data.

    ``pack``: Philly-sized multi-GPU jobs fill about half the cluster by Algorithm 1; 1-GPU jobs numbering
    ``load`` (default 1.5) times the idle GPUs are to be packed. ``defragment``: jobs fill the cluster, a random
    third of them completes, and a job of ``incoming`` (default ``gpus_per_node``) GPUs arrives. ``allocate``: a Philly trace of
    ``jobs`` (default ``gpus``) jobs to place in arrival order.
    """
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < gpus_per_node or gpus % gpus_per_node:
        raise InputError("gpus", gpus, f"must be a positive multiple of gpus_per_node={gpus_per_node}")
    if operation not in OPERATIONS:
        raise InputError("operation", operation, f"must be one of {list(OPERATIONS)}")
    prof = load_profiles()
    rng = np.random.default_rng(seed)
    nodes = uniform_cluster(gpus // gpus_per_node, gpus_per_node)
    st = ClusterState(nodes)
    pending: list[GandivaJob] = []
    if operation == "allocate":
        pending = generate_trace(int(kw.get("jobs", gpus)), seed, max_gpus=gpus)
    else:
        fill = 0.5 if operation == "pack" else 1.0
        i = 0
        while st.num_gpus - int(st.free_counts().sum()) < fill * st.num_gpus:
            k, _ = sample_philly(1, rng, max_gpus=gpus_per_node)
            t = prof.types[int(rng.integers(len(prof.types)))]
            job = prof.job(f"r{i}", t, gpus=int(k[0]))
            i += 1
            if allocate(st, job) is None or st.cluster_height > 1:
                if job.id in st.jobs:
                    st.remove(job.id)
                break
        if operation == "pack":
            n_idle = int(st.free_counts().sum())
            n = round(float(kw.get("load", 1.5)) * n_idle)
            types = rng.integers(0, len(prof.types), size=n)
            pending = [prof.job(f"p{i}", prof.types[int(t)]) for i, t in enumerate(types)]
        else:
            # completions that leave the cluster fragmented: a job leaves unless that frees a whole node
            k_in = int(kw.get("incoming", gpus_per_node))
            for jid in rng.permutation(list(st.jobs)):
                keep = st.copy()
                st.remove(str(jid))
                if fits(st, k_in) is not None:
                    st = keep
            t = prof.types[int(rng.integers(len(prof.types)))]
            pending = [prof.job("incoming", t, gpus=k_in)]
    jobs = list(st.jobs.values())
    used = sorted({j.job_type for j in jobs + pending})
    return GandivaInstance(
        operation, list(nodes), jobs, {j.id: list(st.slots[j.id]) for j in jobs}, sorted(st.packed), pending,
        prof.subset(used) if used else None,
    )


PROBLEM_IO = ProblemIO(
    name="gandiva",
    cls=GandivaInstance,
    to_data=to_data,
    from_data=from_data,
    solve=solve_instance,
    explain=explain_instance,
    generate=generate,
)
