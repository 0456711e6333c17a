"""Hypothesis strategies building valid Gandiva inputs directly (hypothesis is imported only here)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from .allocate import allocate
from .profiles import Profiles
from .state import ClusterState, GandivaJob, Node

__all__ = ["defrag_cases", "nodes", "op_sequences", "packing_cases", "profiles", "traces"]


@st.composite
def profiles(draw: Any, min_types: int = 1, max_types: int = 4) -> Profiles:
    """A random profile table: factors in [0, 1] (on a 0.05 grid), memory in [0.1, 0.9]."""
    n = draw(st.integers(min_types, max_types))
    grid = st.integers(0, 20).map(lambda v: v / 20)
    f = np.array([[draw(grid) for _ in range(n)] for _ in range(n)])
    mem = [draw(st.integers(1, 9)) / 10 for _ in range(n)]
    util = [draw(st.integers(1, 10)) / 10 for _ in range(n)]
    return Profiles.from_values(tuple(f"t{i}" for i in range(n)), [1.0] * n, util, mem, f)


@st.composite
def nodes(draw: Any, min_nodes: int = 1, max_nodes: int = 4, max_gpus: int = 4, memories: tuple = (1.0,)) -> list[Node]:
    """Hypothesis strategy: a list of Gandiva :class:`~schedopt.gandiva.Node` (GPUs per node and GPU memory drawn in
    range)."""
    n = draw(st.integers(min_nodes, max_nodes))
    return [Node(f"n{i}", draw(st.integers(1, max_gpus)), draw(st.sampled_from(memories))) for i in range(n)]


def _job(prof: Profiles, jid: str, t: int, gpus: int = 1, **kw: Any) -> GandivaJob:
    return prof.job(jid, prof.types[t], gpus=gpus, **kw)


@st.composite
def packing_cases(
    draw: Any, max_jobs: int = 6, max_nodes: int = 3, max_gpus: int = 2
) -> tuple[ClusterState, list[GandivaJob], Profiles]:
    """(state with some GPUs busy, 1-GPU jobs to pack, profiles); GPU memories 0.6 or 1.0."""
    prof = draw(profiles())
    state = ClusterState(draw(nodes(1, max_nodes, max_gpus, (0.6, 1.0))))
    busy = draw(st.integers(0, max(0, state.num_gpus - 1)))
    k = 0
    for n in range(len(state.nodes)):
        for g in range(state.nodes[n].gpus):
            if k < busy and draw(st.booleans()):
                state.place(GandivaJob(f"busy{k}", 1, memory=0.1), [(n, g)])
                k += 1
    n_jobs = draw(st.integers(0, max_jobs))
    jobs = [_job(prof, f"j{i}", draw(st.integers(0, len(prof.types) - 1))) for i in range(n_jobs)]
    return state, jobs, prof


@st.composite
def op_sequences(draw: Any, max_ops: int = 25) -> tuple[list[Node], list[tuple]]:
    """Nodes and a list of operations: ("arrive", gpus, elastic), ("finish", pick), ("defrag", gpus),
    ("grow",), ("shrink",), ("pack", pick)."""
    ns = draw(nodes(2, 4, 4))
    ops = draw(
        st.lists(
            st.one_of(
                st.tuples(st.just("arrive"), st.sampled_from([1, 1, 1, 2, 4]), st.booleans()),
                st.tuples(st.just("finish"), st.integers(0, 10**6)),
                st.tuples(st.just("defrag"), st.sampled_from([2, 4])),
                st.tuples(st.just("grow")),
                st.tuples(st.just("shrink")),
                st.tuples(st.just("pack"), st.integers(0, 10**6)),
            ),
            min_size=1,
            max_size=max_ops,
        )
    )
    return ns, ops


@st.composite
def defrag_cases(draw: Any, max_nodes: int = 4, max_gpus: int = 4) -> tuple[ClusterState, GandivaJob]:
    """A state filled by Algorithm 1 (no time-slicing), then thinned by random completions, and an incoming job."""
    ns = draw(nodes(2, max_nodes, max_gpus))
    state = ClusterState(ns)
    sizes = draw(st.lists(st.sampled_from([1, 1, 1, 2, 2, 4]), min_size=1, max_size=16))
    for i, s in enumerate(sizes):
        if s > max(n.gpus for n in ns):
            continue
        job = GandivaJob(f"j{i}", s)
        a = allocate(state, job)
        if a is not None and a.tier == "timeslice":
            state.remove(job.id)
    for jid in list(state.jobs):
        if draw(st.booleans()):
            state.remove(jid)
    k = draw(st.integers(1, state.num_gpus))
    return state, GandivaJob("incoming", k)


@st.composite
def traces(draw: Any, max_jobs: int = 12) -> tuple[list[Node], list[GandivaJob]]:
    """Hypothesis strategy: up to three nodes and up to ``max_jobs`` jobs that fit on the largest of them."""
    ns = draw(nodes(1, 3, 4))
    cap = max(n.gpus for n in ns)
    n = draw(st.integers(1, max_jobs))
    jobs = []
    for i in range(n):
        g = draw(st.sampled_from([k for k in (1, 1, 2, 4) if k <= cap]))
        jobs.append(
            GandivaJob(
                f"j{i}", g, job_type="ResNet-18 (batch size 32)" if i % 2 else "LM (batch size 20)",
                memory=0.3, duration=float(draw(st.integers(1, 20)) * 150), arrival=float(draw(st.integers(0, 3000))),
                elastic=draw(st.booleans()), max_gpus=2 * g,
            )
        )
    return ns, jobs
