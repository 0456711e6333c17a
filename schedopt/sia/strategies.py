"""Hypothesis strategies that build valid Sia specs directly (no filtering). Imports hypothesis: tests only."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from .configs import generate_configs
from .problem import SiaProblem
from .spec import Cluster, Config, GpuType, Job, virtual_bins

__all__ = ["allocations_that_fit", "clusters", "jobs", "problems"]

TYPE_NAMES = ("a", "b", "c")


@st.composite
def clusters(draw: Any, max_types: int = 2, max_nodes: int = 3, pow2_only: bool = False) -> Cluster:
    """1..max_types GPU types, 1..max_nodes nodes of 1..8 GPUs (powers of two only with ``pow2_only``)."""
    k = draw(st.integers(1, max_types))
    sizes = st.sampled_from([1, 2, 4, 8]) if pow2_only else st.integers(1, 8)
    return Cluster(tuple(GpuType(TYPE_NAMES[i], draw(sizes), draw(st.integers(1, max_nodes))) for i in range(k)))


def _fits(cluster: Cluster, chosen: list[Config]) -> bool:
    """Per-type GPU counts and the virtual-node packing condition (what the model's capacity rows say)."""
    for t in cluster.gpu_types:
        mine = [c for c in chosen if c.gpu_type == t.name]
        whole = sum(c.n_nodes for c in mine if c.n_nodes >= 2)
        partial = [c.n_gpus for c in mine if c.n_nodes == 1]
        if whole > t.nodes or sum(partial) + whole * t.gpus_per_node > t.total_gpus:
            return False
        bins = virtual_bins(t.gpus_per_node)
        s = 1
        while s <= bins[0]:
            if sum(r for r in partial if r >= s) > (t.nodes - whole) * sum(b for b in bins if b >= s):
                return False
            s *= 2
    return True


@st.composite
def allocations_that_fit(draw: Any, cluster: Cluster, max_jobs: int = 12) -> dict[str, Config]:
    """An allocation (job id -> Config) whose configurations fit the cluster's capacity rows: configurations are
    drawn from the table and kept while they fit."""
    table = generate_configs(cluster)
    picks = draw(st.lists(st.integers(0, len(table) - 1), max_size=max_jobs))
    chosen: list[Config] = []
    for i in picks:
        c = table[i]
        if _fits(cluster, [*chosen, c]):
            chosen.append(c)
    return {f"j{k}": c for k, c in enumerate(chosen)}


@st.composite
def jobs(draw: Any, cluster: Cluster, n: int, allow_rigid: bool = True) -> list[Job]:
    """``n`` valid jobs for ``cluster`` (current configurations drawn from the table; no forced jobs)."""
    table = generate_configs(cluster)
    out = []
    for i in range(n):
        kind = draw(st.sampled_from(["adaptive", "strong", "rigid"] if allow_rigid else ["adaptive", "strong"]))
        cur = draw(st.none() | st.integers(0, len(table) - 1))
        current = table[cur] if cur is not None else None
        if kind == "rigid":
            c = table[draw(st.integers(0, len(table) - 1))]
            out.append(Job(f"j{i}", kind="rigid", rigid_gpus=c.n_gpus, allowed_types=[c.gpu_type],
                           current=c if current is not None else None, age_s=draw(st.floats(0, 1e4)),
                           restarts=draw(st.integers(0, 3)), restart_cost_s=draw(st.floats(0, 300))))
            continue
        unit = draw(st.sampled_from([1, 1, 2]))
        prof = draw(st.sampled_from([0, 1, 2, 4, 8]))
        if current is not None:
            prof = max(prof, current.n_gpus)
        types = draw(st.none() | st.sets(st.sampled_from(cluster.type_names), min_size=1))
        out.append(Job(f"j{i}", kind=kind, min_gpus=unit, scale_unit=unit, max_profiled_gpus=prof,
                       allowed_types=sorted(types) if types else None, current=current,
                       age_s=draw(st.floats(0, 1e4)), restarts=draw(st.integers(0, 3)),
                       restart_cost_s=draw(st.floats(0, 300))))
    return out


@st.composite
def problems(draw: Any, max_jobs: int = 5, pow2_only: bool = False, p: float | None = None) -> SiaProblem:
    """A small problem with a random positive goodput matrix (some zeros: cannot run there)."""
    cl = draw(clusters(pow2_only=pow2_only))
    n = draw(st.integers(1, max_jobs))
    js = draw(jobs(cl, n))
    table = generate_configs(cl)
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    G = rng.uniform(0.5, 10.0, size=(n, len(table))) * (rng.random((n, len(table))) > 0.1)
    pw = draw(st.sampled_from([-1.0, -0.5, 0.5, 1.0])) if p is None else p
    lam = draw(st.sampled_from([0.0, 1.1, 5.0]))
    return SiaProblem(cl, js, G, p=pw, lam=lam)
