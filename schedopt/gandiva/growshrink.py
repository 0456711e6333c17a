"""Grow-shrink: elastic jobs grow onto idle GPUs of their node after an idle period and shrink on arrivals.

A job with ``elastic=True`` on a single node, alone on its GPUs, may take idle GPUs of that node up to
``max_gpus`` once those GPUs have been idle for ``idle_period`` seconds; :func:`shrink` returns every grown job to
its requested GPU count (Gandiva shrinks as soon as new jobs arrive). Affinity keeps counting a grown job at its
requested size; height counts the GPUs it holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .state import ClusterState

__all__ = ["GrowShrink", "grow", "grown_jobs", "shrink"]


def grown_jobs(state: ClusterState) -> list[str]:
    """The jobs that hold more GPU slots than they requested (grown by :func:`grow`)."""
    return [j for j, sl in state.slots.items() if len(sl) > state.jobs[j].gpus]


def shrink(state: ClusterState, nodes: set[int] | None = None) -> list[str]:
    """Return grown jobs (on ``nodes``, default all) to their requested size; the names of the jobs shrunk."""
    out = []
    for j in grown_jobs(state):
        if nodes is None or set(state.nodes_of(j)) & nodes:
            state.move(j, state.slots[j][: state.jobs[j].gpus])
            out.append(j)
    return out


def grow(state: ClusterState, nodes: set[int] | None = None) -> dict[str, int]:
    """Let elastic single-node exclusive jobs take the idle GPUs of their node (on ``nodes``, default all), most
    recently requested-smallest first; returns job -> GPUs added."""
    out: dict[str, int] = {}
    for j in sorted(state.jobs, key=lambda j: (state.jobs[j].gpus, j)):
        job = state.jobs[j]
        if not job.elastic or job.grow_limit <= len(state.slots[j]):
            continue
        ns = state.nodes_of(j)
        if len(ns) != 1 or (nodes is not None and ns[0] not in nodes) or not state.is_exclusive(j):
            continue
        free = state.free_gpus(ns[0])
        add = min(len(free), job.grow_limit - len(state.slots[j]))
        if add > 0:
            state.move(j, state.slots[j] + [(ns[0], g) for g in free[:add]])
            out[j] = add
    return out


@dataclass
class GrowShrink:
    """Tracks how long each node has had idle GPUs and grows elastic jobs after ``idle_period`` seconds."""

    idle_period: float = 600.0
    idle_since: dict[int, float] = field(default_factory=dict)

    def observe(self, state: ClusterState, now: float) -> None:
        free = state.free_counts()
        for n in range(len(state.nodes)):
            if free[n] > 0:
                self.idle_since.setdefault(n, now)
            else:
                self.idle_since.pop(n, None)

    def step(self, state: ClusterState, now: float) -> dict[str, int]:
        """Observe idle GPUs at ``now`` and grow on nodes idle for at least ``idle_period``."""
        self.observe(state, now)
        ready = {n for n, t in self.idle_since.items() if now - t >= self.idle_period}
        grown = grow(state, ready) if ready else {}
        self.observe(state, now)
        return grown

    def on_arrival(self, state: ClusterState) -> list[str]:
        self.idle_since.clear()
        return shrink(state)
