"""Cluster state for Gandiva: nodes of GPUs, the jobs on them, heights, affinities and time shares.

A job occupies a list of *slots* ``(node, gpu)``, one per GPU it holds (more than it requested once grown). A GPU
holding several jobs either time-slices them (suspend-resume: each gets ``1 / jobs on the GPU`` of the time) or,
when marked *packed*, space-shares exactly two jobs that both run all the time, slowed by their interference.

Definitions (the issue's, kept incrementally and recomputed from scratch by :mod:`schedopt.gandiva.check`):

* a node's **height** is the number of GPU slots its jobs hold divided by its GPUs; the cluster's height is the
  maximum; above 1 the node is oversubscribed (time-sliced or packed);
* a node's **affinity** is the requested GPU count of the jobs it hosts: 0 when empty, :data:`MIXED` (-1) when it
  hosts jobs of different sizes (fragmented, a migration target).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError

__all__ = ["MAX_GPUS", "MAX_NODES", "MIXED", "ClusterState", "GandivaJob", "Node", "nodes_needed", "validate_job", "validate_nodes"]

MIXED = -1  #: affinity of a node hosting jobs of different sizes

#: The most GPUs a cluster (and so one node, one job) may have: a bigger size is an :class:`InputError`, not a
#: per-GPU table of 10**18 entries that hangs or runs out of memory.
MAX_GPUS = 2**20
#: The most nodes a cluster may have: nodes are Python objects with per-node state (about 13 us each to build), so
#: 2**20 one-GPU nodes took 14 s (issue 20's long fuzz run); 2**16 nodes take under a second.
MAX_NODES = 2**16

Slot = tuple[int, int]


@dataclass(frozen=True)
class Node:
    """A server with ``gpus`` GPUs of ``gpu_memory`` memory each (units: fraction of the profiled GPU's memory)."""

    name: str
    gpus: int
    gpu_memory: float = 1.0

    def __post_init__(self) -> None:
        _check_node(self, "node")


@dataclass(frozen=True)
class GandivaJob:
    """A training job.

    ``utilization`` (0..1) and ``memory`` (per GPU) are its profiled GPU utilization and memory, ``throughput`` its
    solo throughput (steps/s); ``duration`` the seconds it needs running alone on ``gpus`` GPUs; ``elastic`` jobs
    may grow up to ``max_gpus`` on idle GPUs of their node.
    """

    id: str
    gpus: int
    job_type: str = ""
    utilization: float = 0.5
    memory: float = 0.5
    throughput: float = 1.0
    duration: float = 3600.0
    arrival: float = 0.0
    elastic: bool = False
    max_gpus: int | None = None

    @property
    def grow_limit(self) -> int:
        return (self.max_gpus or self.gpus) if self.elastic else self.gpus


def _num(path: str, v: object, *, lo: float = 0.0, lo_open: bool = False, hi: float = math.inf) -> float:
    ok = not isinstance(v, bool) and isinstance(v, (int, float, np.integer, np.floating))
    if not ok or not math.isfinite(float(v) if abs(v) < 1e300 else math.inf):  # type: ignore[arg-type]
        raise InputError(path, v, "must be a finite number")
    f = float(v)
    if f < lo or (lo_open and f <= lo) or f > hi:
        rng = f"{'(' if lo_open else '['}{lo}, {hi}]"
        raise InputError(path, v, f"must be in {rng}")
    return f


def _int(path: str, v: object, lo: int = 1, hi: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or int(v) < lo:
        raise InputError(path, v, f"must be an integer >= {lo}")
    if hi is not None and int(v) > hi:
        raise InputError(path, v, f"must be at most {hi} (gandiva.MAX_GPUS)" if hi == MAX_GPUS else f"must be <= {hi}")
    return int(v)


def _check_node(n: Node, p: str) -> None:
    if not isinstance(n.name, str) or not n.name:
        raise InputError(f"{p}.name", n.name, "must be a non-empty string")
    _int(f"{p}.gpus", n.gpus, hi=MAX_GPUS)
    _num(f"{p}.gpu_memory", n.gpu_memory, lo_open=True)


def validate_job(job: GandivaJob, path: str = "job") -> None:
    """Raise :class:`InputError` naming ``path.field`` for a malformed job."""
    if not isinstance(job, GandivaJob):
        raise InputError(path, type(job).__name__, "must be a GandivaJob")
    if not isinstance(job.id, str) or not job.id:
        raise InputError(f"{path}.id", job.id, "must be a non-empty string")
    _int(f"{path}.gpus", job.gpus, hi=MAX_GPUS)
    if not isinstance(job.job_type, str):
        raise InputError(f"{path}.job_type", job.job_type, "must be a string")
    _num(f"{path}.utilization", job.utilization, hi=1.0)
    _num(f"{path}.memory", job.memory)
    _num(f"{path}.throughput", job.throughput, lo_open=True)
    _num(f"{path}.duration", job.duration, lo_open=True)
    _num(f"{path}.arrival", job.arrival)
    if not isinstance(job.elastic, bool):
        raise InputError(f"{path}.elastic", job.elastic, "must be true or false")
    if job.max_gpus is not None and _int(f"{path}.max_gpus", job.max_gpus, hi=MAX_GPUS) < job.gpus:
        raise InputError(f"{path}.max_gpus", job.max_gpus, f"must be >= gpus ({job.gpus})")


def validate_nodes(nodes: Sequence[Node], path: str = "nodes") -> None:
    """Raise :class:`InputError` naming ``path[i].field`` for a malformed node list (at most :data:`MAX_GPUS` GPUs
    in all)."""
    if isinstance(nodes, str | bytes | Mapping) or not isinstance(nodes, Sequence):
        raise InputError(path, nodes, "must be a list of Node")
    if len(nodes) == 0:
        raise InputError(path, [], "needs at least one node")
    if len(nodes) > MAX_NODES:
        raise InputError(path, f"{len(nodes)} nodes", f"exceed gandiva.MAX_NODES = {MAX_NODES}")
    seen: set[str] = set()
    total = 0
    for i, n in enumerate(nodes):
        p = f"{path}[{i}]"
        if not isinstance(n, Node):
            raise InputError(p, type(n).__name__, "must be a Node")
        _check_node(n, p)
        if n.name in seen:
            raise InputError(f"{p}.name", n.name, "is used by an earlier node")
        seen.add(n.name)
        total += int(n.gpus)
        if total > MAX_GPUS:
            raise InputError(path, f"{total} GPUs in nodes[:{i + 1}]", f"exceed gandiva.MAX_GPUS = {MAX_GPUS}")


def nodes_needed(node_gpus: Sequence[int] | np.ndarray, k: int) -> int:
    """Fewest nodes whose GPUs add up to ``k`` (0 when even all nodes do not)."""
    cum = np.cumsum(np.sort(np.asarray(node_gpus, dtype=np.int64))[::-1])
    hit = np.flatnonzero(cum >= k)
    return int(hit[0]) + 1 if hit.size else 0


class ClusterState:
    """Where every job runs; heights, affinities and per-GPU loads are kept incrementally."""

    def __init__(self, nodes: Sequence[Node]) -> None:
        if isinstance(nodes, str | bytes | Mapping) or not isinstance(nodes, Iterable):
            raise InputError("nodes", nodes, "must be a list of Node")
        nodes = tuple(nodes)
        validate_nodes(nodes)
        self.nodes: tuple[Node, ...] = nodes
        self.node_gpus = np.array([n.gpus for n in nodes], dtype=np.int64)
        self.node_memory = np.array([n.gpu_memory for n in nodes], dtype=float)
        self.jobs: dict[str, GandivaJob] = {}
        self.slots: dict[str, list[Slot]] = {}
        self.packed: set[Slot] = set()  #: GPUs space-sharing two jobs
        self._gpu_jobs: list[list[list[str]]] = [[[] for _ in range(n.gpus)] for n in nodes]
        self._load = np.zeros(len(nodes), dtype=np.int64)  # GPU slots held on each node
        self._sizes: list[Counter[int]] = [Counter() for _ in nodes]  # requested sizes of the jobs on each node

    # ------------------------------------------------------------ queries
    @property
    def num_gpus(self) -> int:
        return int(self.node_gpus.sum())

    def gpu_jobs(self, node: int, gpu: int) -> list[str]:
        return list(self._gpu_jobs[node][gpu])

    def gpu_load(self, node: int) -> np.ndarray:
        """Number of jobs on each GPU of ``node``."""
        return np.array([len(g) for g in self._gpu_jobs[node]], dtype=np.int64)

    def free_gpus(self, node: int) -> list[int]:
        """GPUs of ``node`` holding no job."""
        return [g for g, js in enumerate(self._gpu_jobs[node]) if not js]

    def free_counts(self) -> np.ndarray:
        return np.array([sum(1 for g in gs if not g) for gs in self._gpu_jobs], dtype=np.int64)

    def load(self) -> np.ndarray:
        return self._load.copy()

    def heights(self) -> np.ndarray:
        return self._load / self.node_gpus

    def height(self, node: int) -> float:
        return float(self._load[node] / self.node_gpus[node])

    @property
    def cluster_height(self) -> float:
        return float(self.heights().max())

    def affinity(self, node: int) -> int:
        c = self._sizes[node]
        if not c:
            return 0
        return next(iter(c)) if len(c) == 1 else MIXED

    def affinities(self) -> np.ndarray:
        return np.array([self.affinity(n) for n in range(len(self.nodes))], dtype=np.int64)

    def nodes_of(self, job_id: str) -> list[int]:
        return sorted({n for n, _ in self.slots[job_id]})

    def jobs_on(self, node: int) -> list[str]:
        seen: dict[str, None] = {}
        for g in self._gpu_jobs[node]:
            for j in g:
                seen[j] = None
        return list(seen)

    def time_share(self, job_id: str) -> float:
        """Fraction of time the job runs: 1 on packed GPUs, else 1 / (most jobs on any of its GPUs)."""
        worst = 1
        for n, g in self.slots[job_id]:
            if (n, g) in self.packed:
                continue
            worst = max(worst, len(self._gpu_jobs[n][g]))
        return 1.0 / worst

    def partner(self, job_id: str) -> str | None:
        """The job sharing a packed GPU with ``job_id`` (1-GPU jobs), else None."""
        sl = self.slots[job_id]
        if len(sl) == 1 and sl[0] in self.packed:
            n, g = sl[0]
            others = [j for j in self._gpu_jobs[n][g] if j != job_id]
            return others[0] if others else None
        return None

    def is_exclusive(self, job_id: str) -> bool:
        """Every GPU of the job holds only this job."""
        return all(len(self._gpu_jobs[n][g]) == 1 for n, g in self.slots[job_id])

    # ----------------------------------------------------------- updates
    def slot(self, s: Any, field: str = "slot") -> Slot:
        """``s`` as a (node, gpu) pair of this cluster: two integers (numpy's too; not bools, not fractions such
        as 1.5, which ``int()`` would have truncated to another GPU) naming an existing GPU; else an
        :class:`InputError` naming ``field`` (issue 25)."""
        try:
            pair = tuple(s)
        except TypeError:
            raise InputError(field, s, "must be a (node, gpu) pair of integers") from None
        if len(pair) != 2 or any(isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer))
                                 for v in pair):
            raise InputError(field, s, "must be a (node, gpu) pair of integers")
        n, g = int(pair[0]), int(pair[1])
        if not (0 <= n < len(self.nodes)) or not (0 <= g < self.nodes[n].gpus):
            raise InputError(field, s, f"names no GPU of this cluster ({len(self.nodes)} nodes)")
        return n, g

    def _check_slots(self, job_id: str, slots: Sequence[Slot]) -> list[Slot]:
        out = []
        for i, s in enumerate(slots):
            try:
                out.append(self.slot(s, f"slots[{i}]"))
            except InputError as exc:
                raise InputError(exc.field, exc.value, f"{exc.message} (job {job_id})") from None
        if len(set(out)) != len(out):
            raise InputError("slots", list(slots), f"lists a GPU twice (job {job_id})")
        if not out:
            raise InputError("slots", [], f"job {job_id} needs at least one GPU")
        return out

    def _attach(self, job: GandivaJob, slots: list[Slot]) -> None:
        self.slots[job.id] = slots
        per_node: Counter[int] = Counter(n for n, _ in slots)
        for n, g in slots:
            self._gpu_jobs[n][g].append(job.id)
        for n, c in per_node.items():
            self._load[n] += c
            self._sizes[n][job.gpus] += 1

    def _detach(self, job_id: str) -> list[Slot]:
        job = self.jobs[job_id]
        slots = self.slots.pop(job_id)
        per_node: Counter[int] = Counter(n for n, _ in slots)
        for n, g in slots:
            self._gpu_jobs[n][g].remove(job_id)
            if len(self._gpu_jobs[n][g]) < 2:
                self.packed.discard((n, g))
        for n, c in per_node.items():
            self._load[n] -= c
            self._sizes[n][job.gpus] -= 1
            if self._sizes[n][job.gpus] == 0:
                del self._sizes[n][job.gpus]
        return slots

    def _check_memory(self, job: GandivaJob, slots: list[Slot]) -> None:
        """Raise :class:`InputError` naming the job and the slots whose GPU memory is below the job's."""
        short = [(n, g) for n, g in slots if job.memory > self.nodes[n].gpu_memory + 1e-9]
        if short:
            raise InputError("slots", short, f"job {job.id} needs GPU memory {job.memory} > these GPUs' memory")

    def place(self, job: GandivaJob, slots: Iterable[Slot]) -> None:
        """Put ``job`` (not yet in the cluster) on ``slots``."""
        validate_job(job)
        if job.id in self.jobs:
            raise InputError("job.id", job.id, "is already placed")
        sl = self._check_slots(job.id, list(slots))
        if len(sl) < job.gpus:
            raise InputError("slots", sl, f"job {job.id} requested {job.gpus} GPUs")
        self._check_memory(job, sl)
        self.jobs[job.id] = job
        self._attach(job, sl)

    def remove(self, job_id: str) -> list[Slot]:
        if job_id not in self.jobs:
            raise InputError("job_id", job_id, "is not in the cluster")
        slots = self._detach(job_id)
        del self.jobs[job_id]
        return slots

    def move(self, job_id: str, slots: Iterable[Slot]) -> None:
        """Re-place a job (migration, grow or shrink)."""
        if job_id not in self.jobs:
            raise InputError("job_id", job_id, "is not in the cluster")
        job = self.jobs[job_id]
        sl = self._check_slots(job_id, list(slots))
        if len(sl) < job.gpus:
            raise InputError("slots", sl, f"job {job_id} requested {job.gpus} GPUs")
        self._check_memory(job, sl)  # checked before the job leaves its GPUs: a refused move changes nothing
        self._detach(job_id)
        self._attach(job, sl)

    def pack(self, node: int, gpu: int) -> None:
        """Mark a GPU holding exactly two jobs as space-shared (both run, with interference)."""
        node, gpu = self.slot((node, gpu), "gpu")
        if len(self._gpu_jobs[node][gpu]) != 2:
            raise InputError("gpu", (node, gpu), f"holds {len(self._gpu_jobs[node][gpu])} jobs; packing needs two")
        self.packed.add((node, gpu))

    def unpack(self, node: int, gpu: int) -> None:
        self.packed.discard(self.slot((node, gpu), "gpu"))

    def copy(self) -> ClusterState:
        other = ClusterState.__new__(ClusterState)
        other.nodes = self.nodes
        other.node_gpus = self.node_gpus
        other.node_memory = self.node_memory
        other.jobs = dict(self.jobs)
        other.slots = {k: list(v) for k, v in self.slots.items()}
        other.packed = set(self.packed)
        other._gpu_jobs = [[list(g) for g in gs] for gs in self._gpu_jobs]
        other._load = self._load.copy()
        other._sizes = [Counter(c) for c in self._sizes]
        return other

    def __repr__(self) -> str:
        return (
            f"<ClusterState {len(self.nodes)} nodes / {self.num_gpus} GPUs, {len(self.jobs)} jobs, "
            f"height {self.cluster_height:.2f}>"
        )
