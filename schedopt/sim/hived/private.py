"""Could a tenant's private cluster of quota size host a job now? (the sharing-anomaly test)

A tenant's *private cluster* on a chain is its quota cells (outside pinned cells) as physical cells of their own:
a forest of ``quota[k]`` level-``k`` cells. A pod of ``g`` GPUs needs one cell of level ``L(g)``, the lowest level
holding ``g`` GPUs (pods never span nodes; a tenant's cells below ``L(g)`` cannot hold it, as HiveD's view of a VC
treats each cell below the node level as a node of its own). The tenant's running guaranteed pods plus the
waiting job's pods fit the private cluster iff the cell-mapping problem of ``schedopt.hived`` (VC cells onto
disjoint physical cells of the same level) is feasible, which the counting rule decides exactly
(``formulations/hived.md``, "Why counting = exact"): top down, ``left_k = left_{k+1} S_{k+1} + quota_k - D_k``
must stay ``>= 0``. :meth:`PrivateQuota.fits` computes that rule on the tenant's private quota;
``tests/test_sim_hived.py`` checks it against :func:`schedopt.hived.check_vc_assignment` (both methods) on private
clusters built as :class:`~schedopt.hived.PhysicalCluster` objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

import numpy as np

from ...hived import PhysicalCluster, VirtualCluster, demand_table


class TenantCells(Protocol):
    """What :class:`PrivateQuota` reads of a :class:`~schedopt.sim.hived.workload.HivedCluster` (which builds on this
    module): the physical cells and the tenants' virtual clusters."""

    @property
    def cluster(self) -> PhysicalCluster: ...

    @property
    def vcs(self) -> Sequence[VirtualCluster]: ...

__all__ = ["PrivateQuota", "TenantCells", "pod_level"]


def pod_level(gpus: tuple[int, ...], g: int) -> int:
    """The lowest level whose cells hold ``g`` GPUs (``gpus[k]``: GPUs of a level-``k`` cell)."""
    for k in range(1, len(gpus)):
        if gpus[k] >= g:
            return k
    raise ValueError(f"no cell holds {g} GPUs")  # pragma: no cover - jobs are validated against the node size


class PrivateQuota:
    """Per (tenant, chain): the quota cells per level (``quota[(tenant, chain)][k]``, pinned cells left out) and
    their GPUs (``gpus[(tenant, chain)]``)."""

    def __init__(self, cluster: TenantCells) -> None:
        cl = cluster.cluster
        table = demand_table(cl, cluster.vcs)
        self.chains = {name: cl.chains[name] for name in cl.chain_names}
        self.quota: dict[tuple[str, str], np.ndarray] = {}
        self.gpus: dict[tuple[str, str], int] = {}
        for vi, v in enumerate(cluster.vcs):
            for ci, chain in enumerate(cl.chain_names):
                q = table.total[vi, ci].copy()
                for cell in table.pinned[vi]:
                    if int(cl.chain_index[cell]) == ci:
                        q[int(cl.level[cell])] -= 1
                ch = self.chains[chain]
                q = q[: ch.levels + 1]
                self.quota[(v.name, chain)] = q
                self.gpus[(v.name, chain)] = int(sum(int(q[k]) * ch.gpus[k] for k in range(1, ch.levels + 1)))

    def demand(self, chain: str, pods: Iterable[tuple[int, int]]) -> np.ndarray:
        """Cells per level for ``pods`` given as (GPUs per pod, pods)."""
        ch = self.chains[chain]
        d = np.zeros(ch.levels + 1, dtype=np.int64)
        for g, n in pods:
            d[pod_level(ch.gpus, g)] += n
        return d

    def fits_demand(self, tenant: str, chain: str, d: np.ndarray) -> bool:
        """The counting rule on the tenant's private cluster: do ``d[k]`` level-``k`` cells map into its quota?"""
        ch = self.chains[chain]
        q = self.quota[(tenant, chain)]
        left = 0
        for k in range(ch.levels, 0, -1):
            if k < ch.levels:
                left *= ch.child_count[k + 1]
            left += int(q[k]) - int(d[k])
            if left < 0:
                return False
        return True

    def fits(self, tenant: str, chain: str, g: int, pods: int, running: Iterable[tuple[int, int]]) -> bool:
        """Do ``pods`` pods of ``g`` GPUs fit the tenant's private cluster next to its ``running`` pods ((GPUs per
        pod, pods) per running guaranteed job)?"""
        return self.fits_demand(tenant, chain, self.demand(chain, [*running, (g, pods)]))
