"""Hypothesis strategies building valid Synergy instances directly (hypothesis is imported only here)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from .io import SynergyInstance
from .spec import Server, SynergyJob

__all__ = ["synergy_instances"]


@st.composite
def _grid(draw: Any, share: float, max_len: int, allow_offgrid: bool) -> np.ndarray:
    """An increasing grid bracketing ``share``: up to ``max_len`` multiples of it plus the share itself, or (off
    the grid) plus one point below and one above it."""
    mults = draw(st.lists(st.sampled_from([0.5, 1.5, 2.0, 3.0]), min_size=0, max_size=max_len, unique=True))
    if allow_offgrid and draw(st.booleans()):
        mults = [*mults, draw(st.sampled_from([0.5, 0.75])), draw(st.sampled_from([1.25, 2.0]))]
    else:
        mults = [*mults, 1.0]
    return np.array(sorted(set(mults))) * share


@st.composite
def synergy_instances(
    draw: Any,
    *,
    max_servers: int = 2,
    max_gpus_per_server: int = 2,
    max_jobs: int = 3,
    max_grid: int = 2,
    allow_offgrid: bool = True,
    allow_overflow: bool = False,
) -> SynergyInstance:
    """Tiny instances: identical servers, jobs with small grids (sometimes without the proportional point) and
    random or monotone matrices. ``allow_overflow``: jobs may ask for more GPUs than the cluster has."""
    n_s = draw(st.integers(1, max_servers))
    G = draw(st.integers(1, max_gpus_per_server))
    cpg = draw(st.sampled_from([2.0, 3.0, 4.0]))
    mpg = draw(st.sampled_from([10.0, 20.0]))
    servers = [Server(G, G * cpg, G * mpg) for _ in range(n_s)]
    total = n_s * G
    n_j = draw(st.integers(1, max_jobs))
    jobs = []
    used = 0
    for k in range(n_j):
        cap = total if allow_overflow else total - used
        if cap <= 0:
            break
        g = draw(st.integers(1, max(1, min(cap, 3))))
        used += g
        cg = draw(_grid(cpg, max_grid, allow_offgrid))
        mg = draw(_grid(mpg, max_grid, allow_offgrid))
        vals = draw(
            st.lists(st.integers(1, 30), min_size=cg.size * mg.size, max_size=cg.size * mg.size)
        )
        W = np.array(vals, dtype=float).reshape(cg.size, mg.size) / 10.0
        if draw(st.booleans()):  # monotone: more CPUs or memory never hurts
            W = np.maximum.accumulate(np.maximum.accumulate(W, axis=0), axis=1)
        jobs.append(SynergyJob(f"j{k}", g, cg, mg, W))
    return SynergyInstance(servers, jobs)
