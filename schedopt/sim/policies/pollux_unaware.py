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
  on Sia's cluster: the artifact's cluster-wide ``max_num_replicas``). A rigid job keeps its requested count even
  above it (the artifact's rigid variant shrinks such a job to the smallest type's GPUs; our engine runs a rigid
  job at its request).
* **Repair after the search** (``fix_allocations_by_dropping``): a job keeps only the GPUs of the type holding most
  of its GPUs (ties: the faster type, :data:`TIE_PRIORITY`); the others are left idle this round. Virtual nodes
  are then merged back onto their real nodes (two halves of one 8-GPU node are one node of the job's placement).
* **Rigid jobs** (issue 29): exactly their GPU count on one GPU type, or nothing this round. The search sees
  untyped virtual nodes, so the drop above leaves a rigid job short whenever its count spans two types; such a
  job is placed again on free GPUs of its majority type (its own GPUs there first; one virtual node if one has
  room, else virtual nodes no other distributed job holds), after every job the drop left whole, in the job
  order; if they do not fit, it gets nothing this round. The artifact's rigid variant (``PolluxPolicyUnawareFix``,
  ``repair_allocations_mip_fix``) also keeps the majority type and the exact count but re-places every rigid job
  from scratch each round (largest first, on the virtual nodes with the most free GPUs) whatever the search chose;
  this one keeps what the search chose where it is whole, so an unchanged job is not restarted.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...errors import InputError
from ...sia import Cluster
from .base import Decision, RoundState
from .pollux import MAX_NODES, MAX_REPLICAS, P_FAIRNESS, RESTART_DELAY_S, PolluxObjective, PolluxPolicy

__all__ = ["TIE_PRIORITY", "PolluxUnawarePolicy", "virtual_node_gpus", "virtual_nodes"]

#: the artifact's tie-break when a job holds as many GPUs of two types (``prio_order``: dgx-ext, azure, quad, rtx,
#: aws), in schedopt's type names; types not listed come after, in cluster order
TIE_PRIORITY = ("a100", "v100", "rtx6000", "rtx2080ti", "t4")


def virtual_nodes(cluster: Cluster) -> tuple[list[str], list[str], list[str], int]:
    """(virtual node ids ``<node>/<k>``, the real node of each, the GPU type of each, GPUs per virtual node): every
    node split into ``gpus_per_node // m`` virtual nodes of ``m`` GPUs, ``m`` the fewest GPUs per node of any type
    (the artifact's ``vnode_cluster_node_id_map``; GPUs beyond a multiple of ``m`` are not used, as published).
    On nodes of unequal sizes each node is split by its own GPUs ``g``: ``max(g // m, 1)`` virtual nodes, so a node
    smaller than ``m`` is one smaller virtual node (:func:`virtual_node_gpus` gives each one's GPUs)."""
    m = min(t.gpus_per_node for t in cluster.gpu_types)
    ids: list[str] = []
    real: list[str] = []
    typ: list[str] = []
    for t in cluster.gpu_types:
        for nid, g in zip(cluster.node_ids(t.name), t.sizes, strict=True):
            for k in range(max(g // m, 1)):
                ids.append(f"{nid}/{k}")
                real.append(nid)
                typ.append(t.name)
    return ids, real, typ, m


def virtual_node_gpus(cluster: Cluster) -> np.ndarray:
    """GPUs of each virtual node of :func:`virtual_nodes`, in its order: ``m`` each, but ``g`` for a node of ``g < m``
    GPUs (a node with failed GPUs, a smaller node of a type); on nodes of one size per type all are ``m``."""
    m = min(t.gpus_per_node for t in cluster.gpu_types)
    return np.array([min(m, g) for t in cluster.gpu_types for g in t.sizes for _ in range(max(g // m, 1))],
                    dtype=np.int64)


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
        # a rigid job asking more than the cap keeps its count (the goodput tables reach it), adaptive ones the cap
        rigid_max = max((int(v.requested_gpus) for v in state.jobs if not v.adaptive), default=0)
        obj = PolluxObjective(state, p=self.p, restart_delay=self.restart_delay, max_replicas=max(cap, rigid_max),
                              max_nodes=self.max_nodes, cache=self.cache, num_nodes=len(ids),
                              job_types=self.view_types(state))
        obj.cap = np.where(obj.rigid > 0, obj.rigid, np.minimum(obj.cap, cap))
        return obj

    def columns(self, cluster: Cluster) -> tuple[list[str], np.ndarray, np.ndarray]:
        ids = virtual_nodes(cluster)[0]
        return ids, virtual_node_gpus(cluster), np.zeros(len(ids), dtype=np.int64)

    def current_matrix(self, obj: PolluxObjective, col_ids: list[str]) -> np.ndarray:
        """Current allocations on virtual nodes: the last decision's virtual layout where the job still holds what it
        mapped to, else its GPUs on each real node filled into that node's free virtual nodes in order."""
        ids, real, _, _ = virtual_nodes(obj.cluster)
        cap = virtual_node_gpus(obj.cluster)
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
            if prev and any(vn not in pos for vn in prev):  # a virtual node gone since (a node down or smaller)
                prev = None
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
                    take = min(c, max(int(cap[k]) - int(used[k]), 0))
                    base[j, k] += take
                    used[k] += take
                    c -= take
                if c > 0:  # more than the node's virtual capacity (GPUs beyond a multiple of m): the repair drops it
                    base[j, of_real[n][0]] += c
        return base

    def to_nodes(self, obj: PolluxObjective, col_ids: list[str], best: np.ndarray) -> dict[str, dict[str, int]]:
        """Keep each job's GPUs of its majority type (ties: :data:`TIE_PRIORITY`), merge virtual nodes onto real
        ones; remembers the kept virtual layout for the next round's base state.

        A rigid job runs on exactly its GPU count or not at all: one left short by the drop is placed again on its
        majority type (:meth:`_place_rigid`, in the job order, after every job the drop left whole), or gets nothing
        this round."""
        _, real, typ, _ = virtual_nodes(obj.cluster)
        cap = virtual_node_gpus(obj.cluster)
        types = list(obj.cluster.type_names)
        rank = {t: (TIE_PRIORITY.index(t) if t in TIE_PRIORITY else len(TIE_PRIORITY) + types.index(t))
                for t in types}
        col_t = np.array([types.index(t) for t in typ], dtype=np.int64)
        keep: dict[int, np.ndarray] = {}
        short: list[tuple[int, int, np.ndarray]] = []
        for j in range(len(obj.ids)):
            row = best[j]
            if not row.any():
                continue
            per = np.bincount(col_t, weights=row, minlength=len(types))
            top = per.max()
            keep_t = min((k for k in range(len(types)) if per[k] == top), key=lambda k: rank[types[k]])
            kept = np.where(col_t == keep_t, row, 0)
            if obj.rigid[j] and int(kept.sum()) != int(obj.rigid[j]):
                short.append((j, keep_t, kept))
            else:
                keep[j] = kept
        used = sum(keep.values(), np.zeros(len(col_ids), dtype=np.int64))
        dist = np.zeros(len(col_ids), dtype=bool)  # virtual nodes holding a distributed job
        for kept in keep.values():
            if np.count_nonzero(kept) > 1:
                dist |= kept > 0
        for j, keep_t, kept in short:
            got = self._place_rigid(int(obj.rigid[j]), np.where(col_t == keep_t, cap - used, 0), kept, dist)
            if got is not None:
                keep[j] = got
                used += got
                if np.count_nonzero(got) > 1:
                    dist |= got > 0
        nodes: dict[str, dict[str, int]] = {}
        self._vprev = {}
        for j in sorted(keep):
            nz = np.flatnonzero(keep[j])
            if not nz.size:
                continue
            jid = obj.ids[j]
            self._vprev[jid] = {col_ids[k]: int(keep[j][k]) for k in nz.tolist()}
            out: dict[str, int] = {}
            for k in nz.tolist():
                out[real[k]] = out.get(real[k], 0) + int(keep[j][k])
            nodes[jid] = out
        self._dropped = int(best.sum()) - sum(int(v.sum()) for v in keep.values())
        return nodes

    @staticmethod
    def _place_rigid(need: int, free: np.ndarray, kept: np.ndarray, dist: np.ndarray) -> np.ndarray | None:
        """``need`` GPUs on the virtual nodes with ``free`` GPUs (0 off the job's type), or None when they do not
        fit: on one virtual node if one has room (the one holding most of ``kept``, the job's GPUs the search gave
        it there, else the fullest that fits: the fewest free GPUs left idle beside it), else spread over the virtual
        nodes no other distributed job holds, those of ``kept`` first, then the most free (the published "at most
        one distributed job per node")."""
        out = np.zeros_like(free)
        fits = np.flatnonzero(free >= need)
        if fits.size:
            own = fits[kept[fits] > 0]
            k = int(own[np.argmax(kept[own])]) if own.size else int(fits[np.argmin(free[fits])])
            out[k] = need
            return out
        ok = free * ~dist
        if int(ok.sum()) < need:
            return None
        for k in np.lexsort((-ok, -(kept > 0).astype(np.int64))).tolist():  # kept first, then most free; ties in node order
            out[k] = min(int(ok[k]), need - int(out.sum()))
            if out.sum() == need:
                break
        return out

    def decide(self, state: RoundState) -> Decision:
        self._dropped = 0
        d = super().decide(state)
        return dataclasses.replace(d, info={**d.info, "dropped_gpus": self._dropped})
