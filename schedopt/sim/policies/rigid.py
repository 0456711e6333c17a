"""Helpers for policies that run jobs rigidly on node-level placements (FIFO, Tiresias).

``TypeBudget`` tracks free GPUs per GPU type and node; :meth:`TypeBudget.pack` places a job on the nodes of one
type with the most free GPUs first (the Pollux artifact's Tiresias baseline: ``Counter.most_common``, ties by node
order), so a job may span nodes with partial counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from ...sia import Cluster
from .base import JobView, RoundState

__all__ = ["TypeBudget"]


class TypeBudget:
    """Free GPUs of a round, per node and per GPU type."""

    def __init__(self, state: RoundState) -> None:
        types, node_type, free, budget = _layout(state.cluster)
        self.types = list(types)
        self.node_type: dict[str, str] = node_type  # shared per cluster: read only
        self.free: dict[str, int] = dict(free)
        self.budget = dict(budget)  # GPUs not yet promised, per type

    def type_of(self, nodes: Mapping[str, int]) -> str:
        return self.node_type[next(iter(nodes))]

    def pick_type(self, gpus: int) -> str | None:
        """The type with the most unpromised GPUs that can take ``gpus`` (ties: cluster order), or None."""
        best = None
        for t in self.types:
            if self.budget[t] >= gpus and (best is None or self.budget[t] > self.budget[best]):
                best = t
        return best

    def promise(self, t: str, gpus: int) -> None:
        self.budget[t] -= gpus

    def hold(self, nodes: Mapping[str, int]) -> None:
        """Mark GPUs a kept job already holds as used."""
        for n, g in nodes.items():
            self.free[n] -= g

    def pack(self, t: str, gpus: int) -> dict[str, int]:
        """Take ``gpus`` GPUs of type ``t``, most-free nodes first."""
        out: dict[str, int] = {}
        while gpus > 0:
            best = None
            for n, f in self.free.items():
                if self.node_type[n] == t and f > 0 and (best is None or f > self.free[best]):
                    best = n
            if best is None:  # pragma: no cover - callers promise within the type's budget
                raise RuntimeError(f"no free {t} GPU left")
            k = min(self.free[best], gpus)
            out[best] = out.get(best, 0) + k
            self.free[best] -= k
            gpus -= k
        return out


@lru_cache(maxsize=16)
def _layout(cl: Cluster) -> tuple[tuple[str, ...], dict[str, str], dict[str, int], dict[str, int]]:
    """(types, node -> type, node -> GPUs, type -> GPUs) of a cluster, kept per cluster (a round copies the last two)."""
    node_type: dict[str, str] = {}
    free: dict[str, int] = {}
    for t in cl.gpu_types:
        for nid, g in zip(cl.node_ids(t.name), t.sizes, strict=True):
            node_type[nid] = t.name
            free[nid] = g  # each node's own GPUs (a node with failed GPUs, a smaller node of the type)
    return tuple(cl.type_names), node_type, free, {t.name: t.total_gpus for t in cl.gpu_types}


def requested(v: JobView) -> int:
    return int(v.requested_gpus)
