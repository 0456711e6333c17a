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

``solve`` (typed: ``solve_instance(inst, SolveOptions) -> Answer``): ``pack`` gives a :class:`Packing` (exact by
default, ``method="greedy"`` for Gandiva's rule), ``defragment`` a :class:`Defragmentation`, ``allocate`` an
:class:`AllocationRun` of Algorithm 1 (no solver). ``build`` / ``decode`` give the model with its typed inverse map.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from ..instances import field as _f
from ..problem import Answer, Formulation, ProblemIO, SolveOptions, heuristic_termination, to_jsonable
from ..results import SolveResult, Timings
from ..solve import solve as schedopt_solve
from .allocate import Allocation, allocate
from .check import check_answer
from .migration import DefragInverse, build_defrag, decode_defrag, defragment, fits
from .packing import PackingInverse, build_packing, decode_packing, pack_exact, pack_greedy
from .profiles import Profiles, load_profiles
from .replay import generate_trace, sample_philly, uniform_cluster
from .state import ClusterState, GandivaJob, Node, Slot, validate_job, validate_nodes

__all__ = [
    "METHODS",
    "PROBLEM_IO",
    "AllocationRun",
    "GandivaInstance",
    "build",
    "decode",
    "explain_instance",
    "from_data",
    "generate",
    "run_allocation",
    "size",
    "solve_instance",
    "to_data",
]

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
    """The JSON ``data`` object of an instance (the inverse of :func:`from_data`)."""
    return {
        "operation": inst.operation,
        "nodes": [{"name": n.name, "gpus": n.gpus, "gpu_memory": n.gpu_memory} for n in inst.nodes],
        "jobs": [{**_job_to_data(j), "slots": [list(s) for s in inst.slots[j.id]]} for j in inst.jobs],
        "packed": [list(s) for s in inst.packed],
        "pending": [_job_to_data(j) for j in inst.pending],
        "profiles": inst.profiles.to_data() if inst.profiles is not None else None,
    }


DATA_KEYS = ("operation", "nodes", "jobs", "packed", "pending", "profiles")
NODE_KEYS = ("name", "gpus", "gpu_memory")
JOB_KEYS = ("id", "gpus", "job_type", "utilization", "memory", "throughput", "duration", "arrival", "elastic",
            "max_gpus")
PROFILE_KEYS = ("types", "solo_throughput", "utilization", "memory", "factor")


def _no_unknown_keys(d: dict, allowed: tuple[str, ...], path: str) -> None:
    for k in d:
        if k not in allowed:
            raise InputError(f"{path}.{k}", d[k], f"is no known key (expected one of {list(allowed)})")


def _job_from(d: Any, path: str, placed: bool = False) -> GandivaJob:
    if not isinstance(d, dict):
        raise InputError(path, type(d).__name__, "must be a JSON object")
    _no_unknown_keys(d, (*JOB_KEYS, "slots") if placed else JOB_KEYS, path)
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
    """The :class:`~schedopt.gandiva.GandivaInstance` of a JSON ``data`` object; bad input is an ``InputError``
    naming the field."""
    p = "data"
    if not isinstance(data, dict):
        raise InputError(p, type(data).__name__, "must be a JSON object")
    _no_unknown_keys(data, DATA_KEYS, p)
    op = _f(data, "operation", p, str)
    if op not in OPERATIONS:
        raise InputError(f"{p}.operation", op, f"must be one of {list(OPERATIONS)}")
    raw_nodes = _list(data, "nodes", p)
    nodes = []
    for i, nd in enumerate(raw_nodes):
        q = f"{p}.nodes[{i}]"
        if not isinstance(nd, dict):
            raise InputError(q, type(nd).__name__, "must be a JSON object")
        _no_unknown_keys(nd, NODE_KEYS, q)
        try:
            nodes.append(Node(_f(nd, "name", q, str), _f(nd, "gpus", q, int), _f(nd, "gpu_memory", q, float, 1.0)))
        except InputError as exc:
            if exc.field.startswith(q):
                raise
            raise InputError(q + exc.field.removeprefix("node"), exc.value, exc.message) from None
    validate_nodes(nodes, f"{p}.nodes")
    jobs: list[GandivaJob] = []
    slots: dict[str, list[Slot]] = {}
    for i, jd in enumerate(_list(data, "jobs", p, [])):
        q = f"{p}.jobs[{i}]"
        job = _job_from(jd, q, placed=True)
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
        _no_unknown_keys(prof_d, PROFILE_KEYS, q)
        try:
            profiles = Profiles.from_values(
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


@dataclass(kw_only=True, eq=False)
class AllocationRun(Answer):
    """The outcome of Algorithm 1 over an ``allocate`` instance's pending jobs, in order: an
    :class:`~schedopt.problem.Answer` that ends FEASIBLE with :attr:`~schedopt.Limit.HEURISTIC` (a rule, no
    objective optimized); ``objective`` is the number of jobs placed (the others queue)."""

    allocations: dict[str, Allocation | None] = field(default_factory=dict)  #: job id -> its allocation or None
    state: ClusterState | None = None  #: the cluster after the placements

    @property
    def placed(self) -> int:
        return sum(a is not None for a in self.allocations.values())

    def rows(self) -> list[dict[str, Any]]:
        """One row per pending job: its tier (None: queued) and GPUs as ``node:gpu``."""
        return [{"job": j, "tier": a.tier if a else None, "gpus": [f"{n}:{g}" for n, g in a.slots] if a else []}
                for j, a in self.allocations.items()]

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        st = self.state
        out.update(
            allocations=[{"job": j, "tier": a.tier if a else None, "slots": [list(s) for s in a.slots] if a else []}
                         for j, a in self.allocations.items()],
            queued=[j for j, a in self.allocations.items() if a is None],
            heights=to_jsonable(st.heights()) if st is not None else None,
            affinities=to_jsonable(st.affinities()) if st is not None else None,
            cluster_height=to_jsonable(st.cluster_height) if st is not None else None,
        )
        return out


#: the methods :func:`solve_instance` accepts (``exact`` is the default for ``pack`` and ``defragment``;
#: ``allocate`` runs Algorithm 1 whatever the method)
METHODS = ("exact", "greedy")


def run_allocation(inst: GandivaInstance) -> AllocationRun:
    """Algorithm 1 over ``inst.pending`` in order, on a copy of the instance's cluster."""
    t0 = time.perf_counter()
    st = inst.state()
    allocs = {j.id: allocate(st, j) for j in inst.pending}
    seconds = time.perf_counter() - t0
    return AllocationRun(termination=heuristic_termination("Gandiva's Algorithm 1: a placement rule"),
                         objective_value=float(sum(a is not None for a in allocs.values())), method="algorithm1",
                         timings=Timings(solve=seconds), allocations=allocs, state=st)


def solve_instance(inst: GandivaInstance, options: SolveOptions | str | None = None, *args: Any) -> Any:
    """Run the instance's operation: ``pack`` -> :class:`Packing`, ``defragment`` -> :class:`Defragmentation`,
    ``allocate`` -> :class:`AllocationRun`. ``options.method`` is ``exact`` (default) or ``greedy``. Never raises
    for infeasibility: the answer's termination says it.

    The old call ``solve_instance(inst, backend, time_limit)`` still returns the old ``(answer, rows, summary)``
    triple, with a DeprecationWarning."""
    if isinstance(options, str) or args:
        warnings.warn("solve_instance(inst, backend, time_limit) -> (answer, rows, summary) is deprecated: call "
                      "solve_instance(inst, SolveOptions(...)) -> Answer", DeprecationWarning, stacklevel=2)
        backend = options.backend if isinstance(options, SolveOptions) else options
        ans = _solve(inst, SolveOptions(backend=backend, time_limit=args[0] if args else None))
        d = ans.to_dict()
        summary = {"termination": d["termination"]["reason"], "objective": d["objective"], "bound": d["bound"],
                   "gap": d["gap"]}
        return ans, ans.rows(), summary
    return _solve(inst, options if options is not None else SolveOptions())


def _solve(inst: GandivaInstance, options: SolveOptions) -> Answer:
    method = options.method or "exact"
    if method not in METHODS:
        raise InputError("method", method, f"must be one of {list(METHODS)}")
    if inst.operation == "allocate":
        if options.backend is not None:
            raise InputError("backend", options.backend, "allocate runs Algorithm 1 and uses no solver backend")
        return run_allocation(inst)
    if method == "greedy":
        if options.backend is not None:
            raise InputError("backend", options.backend, "the greedy method uses no solver backend")
        st = inst.state()
        if inst.operation == "pack":
            return pack_greedy(st, inst.pending, profiles=inst.table())
        return defragment(st, inst.pending[0], method="greedy")
    form = build(inst)
    t0 = time.perf_counter()
    if form.model.num_cols == 0:  # nothing to decide
        return pack_exact(inst.state(), inst.pending, profiles=inst.table())
    res = schedopt_solve(form.model, options=options)  # the options' validated SolveParams, as they are
    return decode(inst, form, res, time.perf_counter() - t0)


def build(inst: GandivaInstance) -> Formulation:
    """The instance's model with its typed inverse map: the packing MILP (``config``) or the fewest-migrations
    MILP; ``allocate`` has none (Algorithm 1 is a rule)."""
    if inst.operation == "pack":
        return build_packing(inst.state(), inst.pending, profiles=inst.table())
    if inst.operation == "defragment":
        return build_defrag(inst.state(), inst.pending[0])
    raise InputError("operation", inst.operation, "has no model: allocate runs Algorithm 1, a placement rule")


def decode(inst: GandivaInstance, form: Formulation, result: SolveResult, seconds: float = 0.0) -> Answer:
    """The answer a solve of :func:`build`'s formulation gives."""
    if isinstance(form.inverse, PackingInverse):
        return decode_packing(form, result, seconds)
    if isinstance(form.inverse, DefragInverse):
        return decode_defrag(form, result, seconds)
    raise InputError("formulation", type(form.inverse).__name__, "is no Gandiva formulation")


def size(inst: GandivaInstance) -> tuple[int, int]:
    """(GPUs, jobs placed or pending)."""
    return int(sum(n.gpus for n in inst.nodes)), len(inst.jobs) + len(inst.pending)


def explain_instance(inst: GandivaInstance) -> str:
    """A few lines on the instance: its operation, nodes, jobs, heights and affinities (``schedopt explain``)."""
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


#: Gandiva's registration: file format, generator, builder, decoder and checker (``schedopt solve``, the benchmark).
PROBLEM_IO = ProblemIO(
    name="gandiva",
    cls=GandivaInstance,
    to_data=to_data,
    from_data=from_data,
    solve=solve_instance,
    explain=explain_instance,
    generate=generate,
    build=build,
    decode=decode,
    check=check_answer,
    size=size,
    methods=METHODS,
    backend_methods=("exact",),
)
