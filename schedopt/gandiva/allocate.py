"""Gandiva's node allocation (the paper's Algorithm 1, as the issue states it).

For a job needing ``k`` GPUs, candidate node sets are tried in order:

1. ``affinity``: nodes whose affinity is ``k`` with height below 1, least loaded (lowest height) first;
2. ``unaffinitized``: empty nodes (affinity 0), which then take affinity ``k``;
3. ``fragmented``: any node with free GPUs, ignoring affinity (a single node that holds the job if there is one,
   else free GPUs gathered over several nodes, least loaded first; migration fixes this later);
4. ``timeslice``: nodes with affinity ``k`` (height 1 and above), least loaded first, on their least-loaded GPUs
   (suspend-resume time-slicing, so oversubscription spreads evenly);
5. otherwise the job queues (``None``).

Only nodes whose GPU memory holds the job's are candidates; a job no GPU (or too few GPUs) can hold is an
:class:`~schedopt.errors.InputError`, not a placement the state checker then rejects.

In tiers 1, 2 and 4 a job is kept on as few nodes as its size allows (one node when it fits in one).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from .state import ClusterState, GandivaJob, Slot, nodes_needed, validate_job

__all__ = ["TIERS", "Allocation", "allocate", "find_nodes"]

#: Gandiva's placement tiers, best first: affinity, unaffinitized, fragmented, time-sliced.
TIERS = ("affinity", "unaffinitized", "fragmented", "timeslice")


@dataclass(frozen=True)
class Allocation:
    job_id: str
    slots: tuple[Slot, ...]
    tier: str  #: which of :data:`TIERS` placed it

    @property
    def nodes(self) -> list[int]:
        return sorted({n for n, _ in self.slots})


def _order(state: ClusterState, cands: np.ndarray) -> list[int]:
    h = state.heights()
    return [int(n) for n in sorted(cands.tolist(), key=lambda n: (h[n], n))]


def _take_free(state: ClusterState, order: list[int], k: int, max_nodes: int) -> list[Slot] | None:
    """Free GPUs on at most ``max_nodes`` nodes of ``order``; each node supplies all it is asked for."""
    slots: list[Slot] = []
    remaining = k
    for n in order:
        free = state.free_gpus(n)
        want = min(remaining, state.nodes[n].gpus)
        if len(free) < want:
            continue
        slots.extend((n, g) for g in free[:want])
        remaining -= want
        if remaining == 0:
            break
    if remaining or len({n for n, _ in slots}) > max_nodes:
        return None
    return slots


def _take_any_free(state: ClusterState, order: list[int], k: int) -> list[Slot] | None:
    for n in order:  # one node if any holds it
        free = state.free_gpus(n)
        if len(free) >= k:
            return [(n, g) for g in free[:k]]
    slots: list[Slot] = []
    for n in order:
        for g in state.free_gpus(n):
            slots.append((n, g))
            if len(slots) == k:
                return slots
    return None


def _take_shared(
    state: ClusterState, order: list[int], k: int, max_nodes: int, max_height: float | None
) -> list[Slot] | None:
    slots: list[Slot] = []
    remaining = k
    for n in order:
        want = min(remaining, state.nodes[n].gpus)
        if max_height is not None and (state.load()[n] + want) / state.nodes[n].gpus > max_height + 1e-12:
            continue
        load = state.gpu_load(n)
        gpus = sorted(range(len(load)), key=lambda g: (load[g], g))[:want]
        slots.extend((n, g) for g in gpus)
        remaining -= want
        if remaining == 0:
            break
    if remaining or len({n for n, _ in slots}) > max_nodes:
        return None
    return slots


def find_nodes(state: ClusterState, job: GandivaJob, *, max_height: float | None = None) -> Allocation | None:
    """Algorithm 1 without placing: where ``job`` would go and by which tier, or ``None`` (queue)."""
    validate_job(job)
    k = job.gpus
    if k > state.num_gpus:
        raise InputError("job.gpus", k, f"exceeds the cluster's {state.num_gpus} GPUs")
    fits = state.node_memory + 1e-9 >= job.memory  # only GPUs with the job's memory are candidates
    if not fits.any():
        raise InputError("job.memory", job.memory, f"exceeds every GPU's memory (largest {state.node_memory.max():g})")
    if k > int(state.node_gpus[fits].sum()):
        raise InputError("job.gpus", k, f"exceeds the {int(state.node_gpus[fits].sum())} GPUs with memory >= {job.memory:g}")
    m = nodes_needed(state.node_gpus[fits], k)
    aff = state.affinities()
    h = state.heights()
    free = state.free_counts()
    idx = np.arange(len(state.nodes))
    tier1 = _take_free(state, _order(state, idx[fits & (aff == k) & (h < 1) & (free > 0)]), k, m)
    if tier1 is not None:
        return Allocation(job.id, tuple(tier1), "affinity")
    tier2 = _take_free(state, _order(state, idx[fits & (aff == 0)]), k, m)
    if tier2 is not None:
        return Allocation(job.id, tuple(tier2), "unaffinitized")
    tier3 = _take_any_free(state, _order(state, idx[fits & (free > 0)]), k)
    if tier3 is not None:
        return Allocation(job.id, tuple(tier3), "fragmented")
    tier4 = _take_shared(state, _order(state, idx[fits & (aff == k)]), k, m, max_height)
    if tier4 is not None:
        return Allocation(job.id, tuple(tier4), "timeslice")
    return None


def allocate(state: ClusterState, job: GandivaJob, *, max_height: float | None = None) -> Allocation | None:
    """Place ``job`` by Algorithm 1 (mutates ``state``); ``None`` when it must queue.

    ``max_height`` (default: no cap) bounds how far time-slicing may oversubscribe a node.
    """
    a = find_nodes(state, job, max_height=max_height)
    if a is not None:
        state.place(job, a.slots)
    return a
