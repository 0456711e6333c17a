"""Virtual clusters: each tenant's quota of cells per chain and level, plus pinned physical cells."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validate import check_named_items
from ..errors import InputError
from .cells import MAX_GPUS, PhysicalCluster

__all__ = ["DemandTable", "VirtualCluster", "demand_table", "generate_vcs"]


@dataclass(frozen=True)
class VirtualCluster:
    """A tenant's VC: ``cells`` maps a cell key to a count; ``pinned`` lists pinned cell ids it owns.

    Cell keys (resolved against a cluster by :meth:`PhysicalCluster.resolve_cell`): hivedscheduler's fully qualified
    ``"CHAIN.TYPE.TYPE"``, ``(chain, level)`` or ``(chain, type name)``. ``weight`` is the tenant's weight in the
    weighted max-min share of opportunistic GPUs.
    """

    name: str
    cells: Mapping[Any, int] = field(default_factory=dict)
    pinned: Sequence[str] = ()
    weight: float = 1.0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InputError("virtualCluster.name", self.name, "must be a non-empty string")
        if not isinstance(self.cells, Mapping):
            raise InputError(f"virtualClusters.{self.name}.virtualCells", self.cells, "must be a mapping cell -> count")
        for k, v in self.cells.items():
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 0:
                raise InputError(f"virtualClusters.{self.name}.virtualCells[{k}].cellNumber", v, "must be a non-negative integer")
            if v > MAX_GPUS:
                raise InputError(f"virtualClusters.{self.name}.virtualCells[{k}].cellNumber", v,
                                 f"exceeds hived.MAX_GPUS = {MAX_GPUS} (no cluster has that many cells)")
        if isinstance(self.pinned, str) or not all(isinstance(p, str) for p in self.pinned):
            raise InputError(f"virtualClusters.{self.name}.pinnedCells", self.pinned, "must be a list of pinnedCellId strings")
        object.__setattr__(self, "pinned", tuple(self.pinned))
        object.__setattr__(self, "cells", dict(self.cells))
        w = self.weight
        ok = not isinstance(w, bool) and isinstance(w, int | float | np.integer | np.floating)
        if not ok or not math.isfinite(float(w) if abs(w) < 1e300 else math.inf) or w <= 0:
            raise InputError(f"virtualClusters.{self.name}.weight", w, "must be a positive number")


@dataclass
class DemandTable:
    """Resolved quotas. ``total[v, c, k]`` VC ``v``'s level-``k`` cells of chain ``c`` (pinned included);
    ``pinned[v]`` the physical cell ids pinned to VC ``v``; ``vc_names``, ``chain_names`` the axes."""

    vc_names: list[str]
    chain_names: list[str]
    total: np.ndarray
    pinned: list[list[int]]
    pinned_ids: list[list[str]]

    def chain_total(self, ci: int) -> np.ndarray:
        """Per-level total demand of chain ``ci`` (index ``k`` = level)."""
        return self.total[:, ci, :].sum(axis=0)


def demand_table(cluster: PhysicalCluster, vcs: Iterable[VirtualCluster]) -> DemandTable:
    """Resolve every VC's cell keys and pinned ids against ``cluster`` (errors name the VC field)."""
    vcs = list(vcs)
    names = check_named_items(vcs, VirtualCluster, "vcs", "two VCs have the same name")
    cn = cluster.chain_names
    total = np.zeros((len(vcs), len(cn), cluster.max_levels + 1), dtype=np.int64)
    pinned: list[list[int]] = []
    pinned_ids: list[list[str]] = []
    owner: dict[str, str] = {}
    for vi, v in enumerate(vcs):
        for key, cnt in v.cells.items():
            chain, level = cluster.resolve_cell(key, f"virtualClusters.{v.name}.virtualCells[{key}].cellType")
            total[vi, cn.index(chain), level] += int(cnt)
        pl: list[int] = []
        for pid in v.pinned:
            if pid not in cluster.pinned:
                raise InputError(f"virtualClusters.{v.name}.pinnedCells", pid, "names no pinnedCellId of physicalCells")
            if pid in owner:
                raise InputError(f"virtualClusters.{v.name}.pinnedCells", pid, f"is already pinned to VC {owner[pid]!r}")
            owner[pid] = v.name
            cell = cluster.pinned[pid]
            pl.append(cell)
            total[vi, int(cluster.chain_index[cell]), int(cluster.level[cell])] += 1
        pinned.append(pl)
        pinned_ids.append(list(v.pinned))
    return DemandTable(names, list(cn), total, pinned, pinned_ids)


def generate_vcs(cluster: PhysicalCluster, n_vcs: int = 4, seed: int = 0, fill: float = 0.9) -> list[VirtualCluster]:
    """A random **valid** VC assignment built top down with the counting rule: at each level of each chain a random
    part (about ``fill``) of what is left becomes VC demand, spread over ``n_vcs`` VCs."""
    if isinstance(n_vcs, bool) or not isinstance(n_vcs, int) or n_vcs < 1:
        raise InputError("n_vcs", n_vcs, "must be a positive integer")
    if not 0 <= fill <= 1:
        raise InputError("fill", fill, "must be in [0, 1]")
    rng = np.random.default_rng(seed)
    cells: list[dict[Any, int]] = [{} for _ in range(n_vcs)]
    for cname, ch in cluster.chains.items():
        left = cluster.num_cells(cname, ch.levels)
        for k in range(ch.levels, 0, -1):
            if k < ch.levels:
                left *= ch.child_count[k + 1]
            take = int(rng.binomial(left, fill * (0.5 if k > 1 else 1.0)))
            split = rng.multinomial(take, np.ones(n_vcs) / n_vcs)
            for v in range(n_vcs):
                if split[v]:
                    cells[v][(cname, k)] = int(split[v])
            left -= take
    return [VirtualCluster(f"vc{v}", cells[v]) for v in range(n_vcs)]
