"""``pollux-unaware``: the Pollux baseline of the Sia paper (SOSP'23) on a heterogeneous cluster, as a thin layer over
:class:`~schedopt.sim.policies.pollux.PolluxPolicy` (the same genetic search and objective, a different view).

What the Sia artifact runs for "Pollux" (``run_experiment.sh``: ``multi_simulator_unaware.py --policy=pollux
--interval=60 --policy_p_val=-1``; ``pollux_unaware.py``, ``cluster_unaware.py``, ``job.py`` with ``h_unaware``),
and what this policy does (``formulations/sim_policies.md`` section 1c):

* **Virtual nodes.** The search sees the cluster as equal nodes of ``m`` GPUs, ``m`` the fewest GPUs per node of any
  type (4 on Sia's 64-GPU cluster: each 8-GPU node is two 4-GPU virtual nodes; 16 in all), with no GPU type: the
  fair share (``ceil(G / J)`` GPUs on one node), the ``N / G`` scale, the 16-node limit and "one distributed job
  per node" are over virtual nodes, and a job may span GPU types inside the search.
* **One throughput model per job, whatever the GPU type.** The artifact fits one model to the profiles the job
  measured wherever it ran (all types pooled). Here each job is evaluated, on every node, on one GPU type: the type
  it has trained on at the most distinct (nodes, GPUs) shapes so far (the dominant part of that pooled profile;
  ties: the type seen first); a job that has not trained yet has the published linear speedup ``r / fair_r``.
* **Cap** ``min(JobView.max_gpus, max_replicas)`` with ``max_replicas`` by default the fewest GPUs of any type (16
  on Sia's cluster: the artifact's cluster-wide ``max_num_replicas``).
* **Repair after the search** (``fix_allocations_by_dropping``): a job keeps only the GPUs of the type holding most
  of its GPUs (ties: the faster type, :data:`TIE_PRIORITY`); the others are left idle this round. Virtual nodes
  are then merged back onto their real nodes (two halves of one 8-GPU node are one node of the job's placement).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...errors import InputError
from ...sia import Cluster
from .base import Decision, RoundState
from .pollux import MAX_NODES, MAX_REPLICAS, P_FAIRNESS, RESTART_DELAY_S, PolluxObjective, PolluxPolicy

__all__ = ["TIE_PRIORITY", "PolluxUnawarePolicy", "virtual_nodes"]

#: the artifact's tie-break when a job holds as many GPUs of two types (``prio_order``: dgx-ext, azure, quad, rtx,
#: aws), in schedopt's type names; types not listed come after, in cluster order
TIE_PRIORITY = ("a100", "v100", "rtx6000", "rtx2080ti", "t4")


def virtual_nodes(cluster: Cluster) -> tuple[list[str], list[str], list[str], int]:
    """(virtual node ids ``<node>/<k>``, the real node of each, the GPU type of each, GPUs per virtual node): every
    node split into ``gpus_per_node // m`` virtual nodes of ``m`` GPUs, ``m`` the fewest GPUs per node of any type
    (the artifact's ``vnode_cluster_node_id_map``; GPUs beyond a multiple of ``m`` are not used, as published)."""
    m = min(t.gpus_per_node for t in cluster.gpu_types)
    ids: list[str] = []
    real: list[str] = []
    typ: list[str] = []
    for t in cluster.gpu_types:
        for nid in cluster.node_ids(t.name):
            for k in range(t.gpus_per_node // m):
                ids.append(f"{nid}/{k}")
                real.append(nid)
                typ.append(t.name)
    return ids, real, typ, m


class PolluxUnawarePolicy(PolluxPolicy):
    """``pollux-unaware``: Pollux as the Sia paper ran it on a heterogeneous cluster (module docstring).

    Parameters as :class:`PolluxPolicy` (``population``, ``generations``, ``seed``, ``p``, ``restart_delay``,
    ``max_nodes``); ``max_replicas`` caps GPUs per job (default: the fewest GPUs of any type, as the artifact).
    Returns ``Decision(nodes=...)`` on real nodes; ``info["dropped_gpus"]`` counts GPUs the repair left idle.
    """

    name = "pollux-unaware"
    adaptive = True  # jobs adapt GPUs and batch size (the engine reads this; rigid applications stay rigid)

    def __init__(self, *, population: int = 100, generations: int = 100, seed: int = 0, p: float = P_FAIRNESS,
                 restart_delay: float = RESTART_DELAY_S, max_replicas: int | None = None,
                 max_nodes: int = MAX_NODES) -> None:
        if max_replicas is not None and (isinstance(max_replicas, bool) or not isinstance(max_replicas, int)
                                         or max_replicas < 1):
            raise InputError("max_replicas", max_replicas, "must be an integer >= 1 or None")
        super().__init__(population=population, generations=generations, seed=seed, p=p,
                         restart_delay=restart_delay, max_replicas=max_replicas or MAX_REPLICAS, max_nodes=max_nodes)
        self.cluster_cap = max_replicas
        self._seen: dict[str, dict[str, set[tuple[int, int]]]] = {}
        self._progress: dict[str, float] = {}
        self._vprev: dict[str, dict[str, int]] = {}
        self._dropped = 0

    def on_reset(self) -> None:
        super().on_reset()
        self._seen.clear()
        self._progress.clear()
        self._vprev.clear()

    # ------------------------------------------------------------------ the unaware view
    def view_types(self, state: RoundState) -> dict[str, str | None]:
        """Job id -> the one GPU type its throughput model is read on (None: no model yet, linear speedup).
        Records, for every job that progressed since the last round, the (nodes, GPUs) shape it ran on."""
        ntype = {nid: t.name for t in state.cluster.gpu_types for nid in state.cluster.node_ids(t.name)}
        active = {v.id for v in state.jobs}
        for d in (self._seen, self._progress, self._vprev):
            for k in [k for k in d if k not in active]:
                del d[k]
        out: dict[str, str | None] = {}
        for v in state.jobs:
            cur = {n: int(c) for n, c in (v.current_nodes or {}).items() if c}
            if cur and v.progress > self._progress.get(v.id, 0.0):
                per: dict[str, int] = {}
                for n, c in cur.items():
                    if n not in ntype:
                        raise InputError(f"jobs[{v.id}].current_nodes", n, "names no node of the cluster")
                    per[ntype[n]] = per.get(ntype[n], 0) + c
                t = max(per, key=lambda x: per[x])
                self._seen.setdefault(v.id, {}).setdefault(t, set()).add((len(cur), sum(cur.values())))
            self._progress[v.id] = max(self._progress.get(v.id, 0.0), float(v.progress))
            seen = self._seen.get(v.id)
            out[v.id] = max(seen, key=lambda x: len(seen[x])) if seen else None  # ties: the type seen first
        return out

    def objective(self, state: RoundState) -> PolluxObjective:
        cap = self.cluster_cap if self.cluster_cap is not None else int(state.cluster.total_gpus.min())
        ids = virtual_nodes(state.cluster)[0]
        return PolluxObjective(state, p=self.p, restart_delay=self.restart_delay, max_replicas=cap,
                               max_nodes=self.max_nodes, cache=self.cache, num_nodes=len(ids),
                               job_types=self.view_types(state))

    def columns(self, cluster: Cluster) -> tuple[list[str], np.ndarray, np.ndarray]:
        ids, _, _, m = virtual_nodes(cluster)
        return ids, np.full(len(ids), m, dtype=np.int64), np.zeros(len(ids), dtype=np.int64)

    def current_matrix(self, obj: PolluxObjective, col_ids: list[str]) -> np.ndarray:
        """Current allocations on virtual nodes: the last decision's virtual layout where the job still holds what it
        mapped to, else its GPUs on each real node filled into that node's free virtual nodes in order."""
        ids, real, _, m = virtual_nodes(obj.cluster)
        pos = {n: i for i, n in enumerate(ids)}
        of_real: dict[str, list[int]] = {}
        for k, n in enumerate(real):
            of_real.setdefault(n, []).append(k)
        base = np.zeros((len(obj.jobs), len(ids)), dtype=np.int64)
        used = np.zeros(len(ids), dtype=np.int64)
        rest = []
        for j, v in enumerate(obj.jobs):
            cur = {n: int(c) for n, c in (v.current_nodes or {}).items() if c}
            for n in cur:
                if n not in of_real:
                    raise InputError(f"jobs[{v.id}].current_nodes", n, "names no node of the cluster")
            prev = self._vprev.get(v.id)
            merged: dict[str, int] = {}
            for vn, c in (prev or {}).items():
                merged[real[pos[vn]]] = merged.get(real[pos[vn]], 0) + c
            if prev and merged == cur:
                for vn, c in prev.items():
                    base[j, pos[vn]] += c
                    used[pos[vn]] += c
            elif cur:
                rest.append((j, cur))
        for j, cur in rest:
            for n, c in cur.items():
                for k in of_real[n]:
                    take = min(c, max(m - int(used[k]), 0))
                    base[j, k] += take
                    used[k] += take
                    c -= take
                if c > 0:  # more than the node's virtual capacity (GPUs beyond a multiple of m): the repair drops it
                    base[j, of_real[n][0]] += c
        return base

    def to_nodes(self, obj: PolluxObjective, col_ids: list[str], best: np.ndarray) -> dict[str, dict[str, int]]:
        """Keep each job's GPUs of its majority type (ties: :data:`TIE_PRIORITY`), merge virtual nodes onto real
        ones; remembers the kept virtual layout for the next round's base state."""
        _, real, typ, _ = virtual_nodes(obj.cluster)
        types = list(obj.cluster.type_names)
        rank = {t: (TIE_PRIORITY.index(t) if t in TIE_PRIORITY else len(TIE_PRIORITY) + types.index(t))
                for t in types}
        col_t = np.array([types.index(t) for t in typ], dtype=np.int64)
        nodes: dict[str, dict[str, int]] = {}
        self._vprev = {}
        dropped = 0
        for j, jid in enumerate(obj.ids):
            row = best[j]
            if not row.any():
                continue
            per = np.bincount(col_t, weights=row, minlength=len(types))
            top = per.max()
            keep_t = min((k for k in range(len(types)) if per[k] == top), key=lambda k: rank[types[k]])
            kept = np.where(col_t == keep_t, row, 0)
            if obj.rigid[j] and int(kept.sum()) != int(obj.rigid[j]):
                kept = np.zeros_like(row)
            dropped += int(row.sum() - kept.sum())
            nz = np.flatnonzero(kept)
            if not nz.size:
                continue
            self._vprev[jid] = {col_ids[k]: int(kept[k]) for k in nz.tolist()}
            out: dict[str, int] = {}
            for k in nz.tolist():
                out[real[k]] = out.get(real[k], 0) + int(kept[k])
            nodes[jid] = out
        self._dropped = dropped
        return nodes

    def decide(self, state: RoundState) -> Decision:
        self._dropped = 0
        d = super().decide(state)
        return dataclasses.replace(d, info={**d.info, "dropped_gpus": self._dropped})
