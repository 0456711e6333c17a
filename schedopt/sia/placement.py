"""Place an allocation on nodes and GPUs.

Rules: (a) a partial-node configuration (1, 2^k, t) takes an aligned block of 2^k GPUs inside one power-of-two
virtual node (a node of R GPUs is split into its binary digits: 6 -> 4 + 2); (b) a multi-node configuration takes
whole nodes; (b') a rigid job's shape of g GPUs (published code: ``ceil(g / R)`` nodes) takes ``g // R`` whole
nodes and places its remainder ``g % R`` as one aligned block per binary digit (12 on 8-GPU nodes: a whole node
and a 4-block; 6: a 4-block and a 2-block), each like a partial configuration, possibly on different nodes as in
the published placer (which puts the remainder's GPUs "anywhere"); (c) jobs whose configuration did not change keep their GPUs; where fragmentation blocks a
configuration, the placer evicts (moves) as few kept jobs as it can (greedy: the block or nodes whose occupants
are fewest) and reports them in ``Placement.evicted``.

Guarantee from an empty cluster: multi-node configurations first (whole nodes), then partial configurations largest
first into aligned blocks (a rigid shape's whole nodes among the multi-node ones, its blocks among the partial
ones). Every size is a power of two dividing every virtual node it may use, so each virtual
node's free space stays a multiple of the next (smaller or equal) size; a configuration therefore fails only when
the GPUs of virtual nodes at least its size are used up — which the model's ``gpu_capacity`` (and, for R not a
power of two, ``virtual_node_capacity``) rows exclude. So every allocation of the model places from empty.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, TypeVar

import numpy as np

from ..errors import InputError
from .configs import shape_error
from .spec import Cluster, Config, JobId, config_parts, is_pow2, pow2_blocks, virtual_bins

K = TypeVar("K", bound=Hashable)  #: a job's key while placing: its id, or an item's position

__all__ = ["Placement", "place"]

Slot = tuple[str, tuple[int, ...]]


@dataclass(frozen=True)
class Placement(Mapping[JobId, list[Slot]]):
    """job id -> list of ``(node_id, gpu_indices)``; ``configs`` the placed configuration per job; ``evicted``
    jobs whose configuration was unchanged but which had to move; ``unplaced`` jobs that could not be placed at
    all (never the case from empty for an allocation that fits the model's capacity rows)."""

    assignments: dict[JobId, list[Slot]]
    configs: dict[JobId, Config]
    evicted: tuple[JobId, ...] = ()
    unplaced: tuple[JobId, ...] = ()
    moved_from: dict[JobId, list[Slot]] = field(default_factory=dict)

    def __getitem__(self, job_id: JobId) -> list[Slot]:
        return self.assignments[job_id]

    def __iter__(self) -> Iterator[JobId]:
        return iter(self.assignments)

    def __len__(self) -> int:
        return len(self.assignments)

    def node_usage(self) -> dict[str, int]:
        """GPUs in use per node id."""
        out: dict[str, int] = {}
        for slots in self.assignments.values():
            for node, gpus in slots:
                out[node] = out.get(node, 0) + len(gpus)
        return out


def _split_node(node_id: str, cluster: Cluster) -> tuple[str, int]:
    got = _node_index(cluster).get(node_id) if isinstance(node_id, str) else None
    if got is None:
        raise InputError("previous.node_id", node_id, "names no node of the cluster")
    return got


_NODE_INDEX: dict[Cluster, dict[str, tuple[str, int]]] = {}


def _node_index(cluster: Cluster) -> dict[str, tuple[str, int]]:
    """node id -> (GPU type, index) of every node of ``cluster`` (kept per cluster: what :func:`_split_node`
    computes per call)."""
    got = _NODE_INDEX.get(cluster)
    if got is None:
        if len(_NODE_INDEX) > 64:
            _NODE_INDEX.clear()
        got = _NODE_INDEX[cluster] = {nid: (t.name, k) for t in cluster.gpu_types for k, nid in enumerate(t.ids)}
    return got


def _config_of_slots(slots: list[Slot], cluster: Cluster) -> Config | None:
    if not slots:
        return None
    nodes = {n for n, _ in slots}
    t = _split_node(next(iter(nodes)), cluster)[0]
    return Config(len(nodes), sum(len(g) for _, g in slots), t)


_UNSET: Any = object()  # no configuration given for a previous job (Placement.configs has none)
_NO_FIT = np.iinfo(np.int64).max  # a block's best-fit score where it does not fit
#: the slot number of the GPUs a node smaller than its type's nominal size does not have (never free, never moved)
_ABSENT = np.iinfo(np.int64).max - 1
#: :meth:`_Grid.slots_by_job` reads a GPU type of at most this many GPUs in Python (faster than its arrays there)
_FEW_CELLS = 1024


class _EvictCosts:
    """The eviction sums of one GPU type's nodes for one cost table: per partial size ``s`` (built at its first
    use) an (nodes x blocks) array of the summed cost of each aligned block's occupants, and under key 0 each
    node's; each entry the float a scan of every block computes (``sum`` over the same set built from the same
    GPUs in the same order), so comparisons between them are the scan's."""

    def __init__(self, occ: np.ndarray, cost: dict[int, float], starts_of: Callable[[int], list[int]]) -> None:
        self.occ = occ
        self.cost = cost
        self.starts_of = starts_of
        self.starts: dict[int, list[int]] = {}
        self.tables: dict[int, np.ndarray] = {}

    def _sum(self, cells: list[int]) -> float:
        who = {v for v in cells if v >= 0}
        get = self.cost.get
        return sum(get(v, np.inf) for v in who)  # a GPU the node does not have: never freed

    def _row(self, s: int, row: list[int]) -> list[float]:
        if s == 0:
            return [self._sum(row)]
        return [self._sum(row[st : st + s]) for st in self.starts[s]]

    def table(self, s: int) -> np.ndarray:
        """The sums for size ``s`` (0: whole nodes)."""
        got = self.tables.get(s)
        if got is None:
            if s:
                self.starts[s] = self.starts_of(s)
            rows = self.occ.tolist()
            width = 1 if s == 0 else len(self.starts[s])
            got = np.array([self._row(s, r) for r in rows], dtype=np.float64).reshape(len(rows), width)
            self.tables[s] = got[:, 0] if s == 0 else got
        return self.tables[s]

    def refresh(self, rows: Collection[int]) -> None:
        """Recompute the sums of nodes ``rows`` (changed since)."""
        for n in rows:
            row = self.occ[n].tolist()
            for s, tab in self.tables.items():
                if s == 0:
                    tab[n] = self._sum(row)
                else:
                    tab[n] = self._row(s, row)


_ALIGNED: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def _aligned_blocks(R: int, s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The aligned blocks of size ``s`` in a node of ``R`` GPUs: (start, start of its virtual node, virtual node
    size), read-only arrays kept per ``(R, s)`` (every grid of every round asked for them anew)."""
    kept = _ALIGNED.get((R, s))
    if kept is not None:
        return kept
    starts, bstart, bsize = [], [], []
    off = 0
    for b in virtual_bins(R):
        if b >= s:
            st = off + np.arange(0, b, s)
            starts.append(st)
            bstart.append(np.full(st.size, off))
            bsize.append(np.full(st.size, b))
        off += b

    def cat(parts: list[np.ndarray]) -> np.ndarray:
        a = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        a.setflags(write=False)
        return a

    got = (cat(starts), cat(bstart), cat(bsize))
    if len(_ALIGNED) > 256:
        _ALIGNED.clear()
    _ALIGNED[(R, s)] = got
    return got


class _Grid:
    """Occupancy per GPU type: an (nodes x gpus_per_node) array of job slot numbers (-1: free; :data:`_ABSENT`: a
    GPU a smaller node does not have, so its aligned blocks are the ones within its own GPUs)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.occ = {t.name: np.full((t.nodes, t.gpus_per_node), -1, dtype=np.int64) for t in cluster.gpu_types}
        for t in cluster.gpu_types:
            if not t.uniform:
                occ = self.occ[t.name]
                for k, g in enumerate(t.sizes):
                    occ[k, g:] = _ABSENT
        self.ids = {t.name: t.ids for t in cluster.gpu_types}
        self.shape = {t.name: (t.gpus_per_node, t.max_partial) for t in cluster.gpu_types}  # (R, largest partial)
        self._blocks: dict[tuple[str, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._score: dict[tuple[str, int], np.ndarray] = {}  # put_partial's best-fit scores per (type, size)
        self._block_list: dict[tuple[str, int], list[tuple[int, int, int]]] = {}  # blocks() as (start, its vnode's)
        self._stale: dict[str, list[set[int]]] = {t.name: [] for t in cluster.gpu_types}  # rows changed since, per score
        self._stale_of: dict[tuple[str, int], set[int]] = {}
        self._costs: dict[str, _EvictCosts] = {}  # per GPU type: eviction costs of the blocks and nodes
        self._dirty: dict[str, set[int]] = {t.name: set() for t in cluster.gpu_types}  # rows changed since

    def _touch(self, t: str, rows: Iterable[int]) -> None:
        """Rows ``rows`` of type ``t`` changed: the kept sums and scores recompute them when next used."""
        rows = list(rows)
        self._dirty[t].update(rows)
        for stale in self._stale[t]:
            stale.update(rows)

    def assign(self, t: str, k: int, gpus: Sequence[int], slot: int) -> None:
        """Give GPUs ``gpus`` of node ``k`` of type ``t`` to ``slot``."""
        self.occ[t][k, list(gpus)] = slot
        self._touch(t, (k,))

    def blocks(self, t: str, s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Aligned blocks of size s within a node: (start, start of its virtual node, virtual node size)."""
        key = (t, s)
        got = self._blocks.get(key)
        if got is None:
            got = self._blocks[key] = _aligned_blocks(self.cluster[t].gpus_per_node, s)
        return got

    def scores(self, t: str, s: int) -> np.ndarray:
        """(nodes x blocks of size ``s``) best-fit scores of type ``t``: the free GPUs of the block's virtual node
        where the block is free, else :data:`_NO_FIT` (kept, and recomputed for the rows changed since)."""
        key = (t, s)
        got = self._score.get(key)
        occ = self.occ[t]
        rows: np.ndarray | None = None
        if got is not None:
            stale = self._stale_of[key]
            if not stale:
                return got
            if len(stale) <= 8:  # a few rows (one per put): in Python, the same counts as the arrays below
                blocks = self._block_list.get(key)
                if blocks is None:
                    blocks = self._block_list[key] = list(zip(*(a.tolist() for a in self.blocks(t, s))))
                for n in stale:
                    free = [0]
                    c = 0
                    for v in occ[n].tolist():
                        c += v < 0
                        free.append(c)
                    got[n] = [free[b0 + bs] - free[b0] if free[st + s] - free[st] == s else _NO_FIT
                              for st, b0, bs in blocks]
                stale.clear()
                return got
            rows = np.fromiter(stale, np.int64, len(stale))
            stale.clear()
        starts, bstart, bsize = self.blocks(t, s)
        sub = occ if rows is None else occ[rows]
        cs = np.zeros((sub.shape[0], sub.shape[1] + 1), np.int64)  # free GPUs before each GPU of each node
        np.cumsum(sub < 0, axis=1, out=cs[:, 1:])
        ok = (cs[:, starts + s] - cs[:, starts]) == s
        sc = np.where(ok, cs[:, bstart + bsize] - cs[:, bstart], _NO_FIT)
        if got is None or rows is None:
            self._score[key] = sc
            self._stale_of[key] = stale = set()
            self._stale[t].append(stale)
            return sc
        got[rows] = sc
        return got

    def put_partial(self, t: str, s: int, slot: int) -> bool:
        occ = self.occ[t]
        if occ.shape[0] == 0:
            return False
        starts = self.blocks(t, s)[0]
        if starts.size == 0:
            return False
        score = self.scores(t, s)
        i = int(np.argmin(score))  # best fit: the fullest virtual node that fits (the first such block)
        if score.flat[i] == _NO_FIT:
            return False
        n, b = divmod(i, score.shape[1])
        st = int(starts[b])
        occ[n, st : st + s] = slot
        self._touch(t, (n,))
        return True

    def put_multi(self, t: str, n: int, slot: int) -> bool:
        occ = self.occ[t]
        whole = np.flatnonzero((occ < 0).all(axis=1))
        if whole.size < n:
            return False
        rows = whole[whole.size - n :]
        occ[rows] = slot  # take the last free nodes; partial configs fill the first ones
        self._touch(t, rows.tolist())
        return True

    def put(self, c: Config, slot: int) -> bool:
        shape = self.shape.get(c.gpu_type)
        if shape is None:
            return False
        R, max_partial = shape
        if c.n_nodes == 1 and c.n_gpus <= max_partial and is_pow2(c.n_gpus):  # (a 1-node rigid shape, 6 of 8
            return self.put_partial(c.gpu_type, c.n_gpus, slot)  # GPUs: its blocks below; it raised IndexError)
        whole, part = config_parts(R, c.n_nodes, c.n_gpus)
        if not part:
            return self.put_multi(c.gpu_type, c.n_nodes, slot)
        # a rigid shape: whole nodes, then one aligned block per binary digit of the remainder (all or nothing)
        ok = whole == 0 or self.put_multi(c.gpu_type, whole, slot)
        for b in pow2_blocks(part):
            ok = ok and self.put_partial(c.gpu_type, b, slot)
        if not ok:
            self.remove(slot, c.gpu_type)
        return ok

    def evict_for(self, c: Config, cost: dict[int, float]) -> list[int] | None:
        """Occupants to remove so that ``c`` fits (cheapest by ``cost`` per slot; inf cost slots are pinned).

        A partial configuration: the occupants of the first aligned block (node by node, block by block) whose
        occupants' summed cost is least; whole nodes: the occupants of the ``n`` nodes first by (summed cost of
        their occupants, node). The sums are kept per block and node (:class:`_EvictCosts`, refreshed for the
        nodes changed since the last call), each the float sum a scan of every block would make for it (``sum``
        over the same set built from the same GPUs in the same order), so the choice is the scan's (the scan:
        tests/test_sia_placer_fastpaths.py). ``cost`` (no NaN) must not change between calls of one grid with the
        same dict (the only caller, :func:`place`, builds it once per placement)."""
        R, max_partial = self.shape[c.gpu_type]
        partial = c.n_nodes == 1 and c.n_gpus <= max_partial and is_pow2(c.n_gpus)
        if config_parts(R, c.n_nodes, c.n_gpus)[1] and not partial:
            return None  # a rigid shape is not evicted for: the caller falls back to placing afresh
        tab = self._evict_costs(c.gpu_type, cost)
        occ = self.occ[c.gpu_type]
        if partial:
            s = c.n_gpus
            w = tab.table(s)
            if w.size == 0:
                return None
            i = int(np.argmin(w))  # the first least sum, as the scan's strict ``<`` keeps the first
            if not np.isfinite(w.flat[i]):
                return None
            n, b = divmod(i, w.shape[1])
            st = tab.starts[s][b]
            return sorted({v for v in occ[n, st : st + s].tolist() if v >= 0})
        if occ.shape[0] < c.n_nodes:
            return None
        first = np.argsort(tab.table(0), kind="stable")[: c.n_nodes]  # by (sum, node), as the scan's tuple sort
        who_all: set[int] = set().union(*({v for v in row if v >= 0} for row in occ[first].tolist()))
        if not np.isfinite(sum(cost.get(v, np.inf) for v in who_all)):  # a smaller node's GPUs: inf (was KeyError)
            return None
        return sorted(who_all)

    def _evict_costs(self, t: str, cost: dict[int, float]) -> _EvictCosts:
        """The kept eviction sums of type ``t`` for ``cost`` (built at the first call, then refreshed for the
        nodes changed since)."""
        tab = self._costs.get(t)
        dirty = self._dirty[t]
        if tab is None or tab.cost is not cost:
            tab = self._costs[t] = _EvictCosts(self.occ[t], cost, lambda s: self.blocks(t, s)[0].tolist())
        elif dirty:
            tab.refresh(dirty)
        dirty.clear()
        return tab

    def remove(self, slot: int, t: str) -> None:
        occ = self.occ[t]
        mask = occ == slot
        occ[mask] = -1
        self._touch(t, np.flatnonzero(mask.any(axis=1)).tolist())

    def slots_by_job(self) -> dict[int, list[Slot]]:
        """Job slot -> its ``(node id, GPUs)``: per GPU type in the grid's order, slots ascending, one per node by
        node index, GPUs ascending (a type of at most :data:`_FEW_CELLS` GPUs read in Python, a larger one as
        arrays: the same answer, tests/test_sia_placement_fast.py)."""
        out: dict[int, list[Slot]] = {}
        for t, occ in self.occ.items():
            ids = self.ids[t]
            if occ.size <= _FEW_CELLS:
                per: dict[int, list[Slot]] = {}
                for k, row in enumerate(occ.tolist()):
                    node: dict[int, list[int]] = {}
                    for x, v in enumerate(row):
                        if v >= 0 and v != _ABSENT:
                            got = node.get(v)
                            if got is None:
                                node[v] = [x]
                            else:
                                got.append(x)
                    for v, xs in node.items():
                        per.setdefault(v, []).append((ids[k], tuple(xs)))
                for v in sorted(per):
                    out.setdefault(v, []).extend(per[v])
                continue
            nodes, gpus = np.nonzero((occ >= 0) & (occ != _ABSENT))
            if not nodes.size:
                continue
            who = occ[nodes, gpus]
            order = np.lexsort((gpus, nodes, who))
            who, nodes, gpus = who[order], nodes[order], gpus[order]
            cuts = (np.flatnonzero((np.diff(who) != 0) | (np.diff(nodes) != 0)) + 1).tolist()
            who_l, nodes_l, gpus_l = who.tolist(), nodes.tolist(), gpus.tolist()
            for a, b in zip([0, *cuts], [*cuts, len(who_l)]):
                out.setdefault(who_l[a], []).append((ids[nodes_l[a]], tuple(gpus_l[a:b])))
        return out


class _CycleWatch:
    """Whether the eviction loop of :func:`place` has come back to a state it was in (Brent's cycle detection).

    At each eviction (a job ``jid`` that did not fit, before its victims are chosen) the loop's whole state is the
    grid's occupancy, ``jid`` and the queue after it: what follows depends on nothing else while the eviction
    budget lasts (the eviction sums are a function of the occupancy and the fixed costs). A state seen again
    repeats forever, each round evicting at least once, so the budget runs out inside the cycle and the job at the
    next eviction fails: the loop's result is decided (at least one failure) without playing the cycle out (the
    2,048-GPU live rounds spent 7,000 evictions, 0.4 s, going round a cycle of 2). One saved state, replaced at
    steps 1, 2, 4, 8, ...; compared exactly (job, queue length, then the occupancy arrays and the queue)."""

    def __init__(self, grid: _Grid) -> None:
        self.grid = grid
        self.power = 1
        self.steps = 0
        self.saved: tuple[Hashable, int, dict[str, np.ndarray], list[Hashable]] | None = None

    def seen(self, jid: Hashable, queue: list[Any], head: int) -> bool:
        """True when this state (``jid`` does not fit; ``queue[head:]`` waits) is the saved one."""
        occ = self.grid.occ
        sv = self.saved
        if (sv is not None and sv[0] == jid and sv[1] == len(queue) - head
                and all(np.array_equal(o, sv[2][t]) for t, o in occ.items()) and sv[3] == queue[head:]):
            return True
        self.steps += 1
        if self.steps == self.power:
            self.saved = (jid, len(queue) - head, {t: o.copy() for t, o in occ.items()}, queue[head:])
            self.power *= 2
            self.steps = 0
        return False


def _order_key(c: Config, cluster: Cluster) -> tuple[int, int]:
    multi = not (c.n_nodes == 1 and c.n_gpus <= cluster[c.gpu_type].max_partial)
    return (0 if multi else 1, -c.n_gpus)


def _check_jobs(cluster: Cluster, allocation: Mapping[JobId, Config | None],
                rigid: Collection[JobId] = ()) -> list[tuple[JobId, Config]]:
    """The placed jobs (configuration not None), validated against the configuration rules (a power of two on one
    node, or whole nodes; a rigid job's ``ceil(g / R)``-node shape only for the jobs named in ``rigid``)."""
    if not isinstance(allocation, Mapping):
        raise InputError("allocation", type(allocation).__name__, "must map job ids to a Config or None")
    by_name = {t.name: t for t in cluster.gpu_types}
    jobs = [(jid, c) for jid, c in allocation.items() if c is not None]
    ok: set[int] = set()  # ids of checked Config objects (the allocation holds them, so ids stay unique here)
    for jid, c in jobs:
        if id(c) in ok:
            continue
        if not isinstance(c, Config):
            raise InputError(f"allocation[{jid}]", c, "must be a Config or None")
        t = by_name.get(c.gpu_type)
        if t is None:
            raise InputError(f"allocation[{jid}].gpu_type", c.gpu_type, "is not a GPU type of the cluster")
        if shape_error(cluster, c) is None:
            ok.add(id(c))
            continue
        why = shape_error(cluster, c, rigid_shape=True)
        if why is not None:
            raise InputError(f"allocation[{jid}]", c.label,
                             "must be a power of two on one node, whole nodes "
                             f"({t.gpus_per_node} GPUs each), or a rigid shape of ceil(GPUs / {t.gpus_per_node}) nodes")
        if jid not in rigid:  # issue 25: no configuration of an elastic job has this shape
            raise InputError(f"allocation[{jid}]", c.label,
                             "is a rigid job's shape (not a power of two on one node, not whole nodes), and the job "
                             "is not named in rigid=")
    return jobs


def _is_rigid_shape(c: Config, gpus_per_node: int) -> bool:
    return c.n_gpus % gpus_per_node != 0 and not (c.n_nodes == 1 and is_pow2(c.n_gpus)
                                                   and c.n_gpus <= 1 << (gpus_per_node.bit_length() - 1))


def _place_empty(cluster: Cluster, jobs: list[tuple[JobId, Config]]) -> tuple[dict[JobId, list[Slot]], list[JobId]]:
    """Place ``jobs`` on an empty cluster: rigid shapes are split into their whole nodes and power-of-two blocks
    (items placed like multi-node and partial configurations), and merged back per job (a job is placed only when
    all its items are)."""
    R = {t.name: t.gpus_per_node for t in cluster.gpu_types}
    memo: dict[int, bool] = {}  # per Config object (an allocation shares the table's objects)
    split = False
    for _, c in jobs:
        v = memo.get(id(c))
        if v is None:
            v = memo[id(c)] = _is_rigid_shape(c, R[c.gpu_type])
        if v:
            split = True
            break
    if not split:
        return _place_items(cluster, jobs)
    items: list[tuple[JobId, Config]] = []
    owner: list[int] = []
    for k, (_jid, c) in enumerate(jobs):
        r = R[c.gpu_type]
        if not _is_rigid_shape(c, r):
            items.append((k, c))
            owner.append(k)
            continue
        whole, part = config_parts(r, c.n_nodes, c.n_gpus)
        if whole:
            items.append((k, Config(whole, whole * r, c.gpu_type)))
            owner.append(k)
        for b in pow2_blocks(part):
            items.append((k, Config(1, b, c.gpu_type)))
            owner.append(k)
    keyed = [(i, c) for i, (_, c) in enumerate(items)]
    got, failed_items = _place_items(cluster, keyed)
    bad = {owner[i] for i in failed_items}
    merged: dict[int, dict[str, set[int]]] = {}
    for i, slots in got.items():
        k = owner[i]
        if k in bad:
            continue
        per = merged.setdefault(k, {})
        for node, gpus in slots:
            per.setdefault(node, set()).update(gpus)
    assignments = {jobs[k][0]: [(n, tuple(sorted(g))) for n, g in per.items()] for k, per in sorted(merged.items())}
    failed = [jobs[k][0] for k in sorted(bad)]
    return assignments, failed


def _place_items(cluster: Cluster, jobs: Sequence[tuple[K, Config]]) -> tuple[dict[K, list[Slot]], list[K]]:
    """Place ``jobs`` on an empty cluster with array arithmetic; the same result as the greedy grid placer
    (:class:`_Grid`, multi-node configurations first taking the last whole nodes, then partial configurations
    largest first, best fit into the fullest virtual node, ties to the lowest node and then the earlier virtual
    node) without a per-job search.

    Why this is the same: partial sizes arrive in decreasing powers of two, so every virtual node's used GPUs stay
    a prefix whose length is a multiple of the current size ``s`` (the first free aligned block is at that
    offset), and its free GPUs are a multiple of ``s`` too. A virtual node chosen by best fit stays the fullest
    one that fits until it is full, so the jobs of one size fill the eligible virtual nodes one after the other in
    the order (free GPUs, node, virtual node): one ``argsort`` and one ``cumsum`` / ``searchsorted`` per size and
    GPU type. Multi-node jobs take the last whole nodes: a ``cumsum`` over their node counts.
    """
    if not cluster.uniform:
        return _place_items_grid(cluster, jobs)
    J = len(jobs)
    names = {t.name: k for k, t in enumerate(cluster.gpu_types)}
    confs = [c for _, c in jobs]
    tix = np.fromiter((names[c.gpu_type] for c in confs), np.int64, J)
    ng = np.fromiter((c.n_gpus for c in confs), np.int64, J)
    nn = np.fromiter((c.n_nodes for c in confs), np.int64, J)
    maxp = np.array([t.max_partial for t in cluster.gpu_types], dtype=np.int64)
    partial = (nn == 1) & (ng <= maxp[tix])  # a power of two here (rigid shapes were split by the caller)
    order = np.lexsort((-ng, partial))  # multi-node first, then GPUs descending; stable in allocation order
    node0 = np.full(J, -1, dtype=np.int64)  # first node (multi-node: nodes node0 .. node0 + n - 1)
    gpu0 = np.zeros(J, dtype=np.int64)  # first GPU of a partial configuration
    tix_o, part_o = tix[order], partial[order]
    for k, t in enumerate(cluster.gpu_types):
        of_t = tix_o == k
        if not of_t.any():
            continue
        rem = t.nodes
        multi = order[of_t & ~part_o]
        if multi.size:
            need = nn[multi]
            cum = np.cumsum(need)
            if cum[-1] <= rem:
                node0[multi] = rem - cum
                rem -= int(cum[-1])
            else:  # some do not fit: a failed job leaves the nodes to the (smaller) ones after it
                for i, n in zip(multi.tolist(), need.tolist()):
                    if n <= rem:
                        rem -= n
                        node0[i] = rem
        part = order[of_t & part_o]
        if not part.size or rem == 0:
            continue
        vb = np.array(virtual_bins(t.gpus_per_node), dtype=np.int64)
        nb = vb.size
        bsize = np.tile(vb, rem)
        bstart = np.tile(np.cumsum(vb) - vb, rem)
        bnode = np.repeat(np.arange(rem, dtype=np.int64), nb)
        used = np.zeros(rem * nb, dtype=np.int64)
        sizes = ng[part]
        cuts = np.flatnonzero(sizes[1:] != sizes[:-1]) + 1
        for a, b in zip(np.r_[0, cuts].tolist(), np.r_[cuts, sizes.size].tolist()):
            s = int(sizes[a])
            free = bsize - used
            elig = np.flatnonzero((bsize >= s) & (free > 0))
            if not elig.size:
                continue
            o = elig[np.argsort(free[elig], kind="stable")]  # (free, node, virtual node): the best-fit order
            cap = free[o] // s
            cum = np.cumsum(cap)
            m = min(b - a, int(cum[-1]))
            q = np.arange(m)
            pos = np.searchsorted(cum, q, side="right")
            bins = o[pos]
            who = part[a : a + m]
            node0[who] = bnode[bins]
            gpu0[who] = bstart[bins] + used[bins] + (q - (cum[pos] - cap[pos])) * s
            used[o] += s * np.clip(m - (cum - cap), 0, cap)
    placed = node0 >= 0
    failed = [jobs[i][0] for i in order[~placed[order]].tolist()]
    node_ids = {t.name: t.ids for t in cluster.gpu_types}
    spans: dict[tuple[int, int], tuple[int, ...]] = {}
    assignments: dict[K, list[Slot]] = {}
    for (jid, c), n0, g0, p in zip(jobs, node0.tolist(), gpu0.tolist(), partial.tolist()):
        if n0 < 0:
            continue
        ids = node_ids[c.gpu_type]
        if p:
            key = (g0, c.n_gpus)
            span = spans.get(key)
            if span is None:
                span = spans[key] = tuple(range(g0, g0 + c.n_gpus))
            assignments[jid] = [(ids[n0], span)]
        else:
            r = c.n_gpus // c.n_nodes
            span = spans.get((0, r))
            if span is None:
                span = spans[(0, r)] = tuple(range(r))
            assignments[jid] = [(ids[n], span) for n in range(n0, n0 + c.n_nodes)]
    return assignments, failed


def _place_items_grid(cluster: Cluster, jobs: Sequence[tuple[K, Config]]) -> tuple[dict[K, list[Slot]], list[K]]:
    """:func:`_place_items` on a cluster with nodes smaller than their type's nominal size: the same greedy order
    (multi-node configurations first on the last whole nodes, then partial ones largest first, best fit into the
    fullest virtual node), one configuration at a time on the grid, each node's missing GPUs never free."""
    grid = _Grid(cluster)
    order = sorted(range(len(jobs)), key=lambda i: _order_key(jobs[i][1], cluster))
    failed = [jobs[i][0] for i in order if not grid.put(jobs[i][1], i)]
    by_slot = grid.slots_by_job()
    return {jobs[i][0]: by_slot[i] for i in range(len(jobs)) if i in by_slot}, failed


def _kept_slots(cluster: Cluster, jobs: list[tuple[JobId, Config]], prev_slots: Mapping[JobId, list[Slot]],
                prev_conf: Mapping[JobId, Config | None], nodes_of: Mapping[str, tuple[str, int]],
                ) -> dict[JobId, list[Slot]] | None:
    """The assignments :func:`place` makes when every job keeps its configuration and the GPUs it held (each on
    a node of its type, within the node, no GPU held twice): each job's previous GPUs, ordered as
    :meth:`_Grid.slots_by_job` orders them (by node index, then GPU, one slot per node), in the allocation's order.
    ``None`` when any job changed or its previous GPUs are not all valid: the grid placer then decides (and
    raises for a node that is not one).

    The GPUs are checked as arrays (in range of their node, none held twice); a job whose slots are already in
    that order (nodes increasing, GPUs increasing within each, none empty: what the placer itself writes) keeps
    its slots as they are, any other is sorted and merged per node."""
    for jid, c in jobs:  # any change: the grid decides (checked first: most calls that fail, fail here)
        pc = prev_conf.get(jid)
        if not prev_slots.get(jid) or (pc is not c and pc != c):
            return None
    if len(jobs) <= _FEW_JOBS:
        return _kept_slots_few(cluster, jobs, prev_slots, nodes_of)
    return _kept_slots_arrays(cluster, jobs, prev_slots, nodes_of)


#: up to this many jobs, :func:`_kept_slots` checks the GPUs in Python (a 64-GPU round's few jobs: about 15 us
#: instead of the arrays' 50); above, as arrays (tests/test_sia_placement_fast.py compares the two)
_FEW_JOBS = 48


def _kept_slots_few(cluster: Cluster, jobs: list[tuple[JobId, Config]], prev_slots: Mapping[JobId, list[Slot]],
                    nodes_of: Mapping[str, tuple[str, int]]) -> dict[JobId, list[Slot]] | None:
    """:func:`_kept_slots_arrays` in Python, cell by cell (the same answer: ``None`` in the same cases, the same
    slots otherwise), for a call whose jobs all keep their configuration."""
    if not jobs:
        return None  # (no slot: the arrays' answer)
    by_name = {t.name: t for t in cluster.gpu_types}
    held: set[tuple[str, int, int]] = set()
    odd: list[bool] = []
    for jid, c in jobs:
        t = by_name.get(c.gpu_type)
        if t is None:
            return None
        name, sizes = t.name, t.sizes
        bad = False
        count = 0
        last_k = last_x = -1  # the job's previous slot's node and previous cell (node, GPU)
        last_cell_k = -1
        for node, gs in prev_slots[jid]:
            tk = nodes_of.get(node)
            if tk is None or tk[0] != name:
                return None
            k = tk[1]
            if not gs or (last_k >= 0 and k <= last_k):
                bad = True  # an empty slot, or nodes not increasing
            last_k = k
            size = sizes[k]
            for x in gs:
                if x < 0 or x >= size:
                    return None
                cell = (name, k, x)
                if cell in held:
                    return None  # a GPU held twice
                held.add(cell)
                if last_cell_k >= 0 and (k < last_cell_k or (k == last_cell_k and x <= last_x)):
                    bad = True  # cells not increasing
                last_cell_k, last_x = k, x
                count += 1
        if not count:
            return None  # a job whose slots hold no GPU
        odd.append(bad)
    return _kept_out(cluster, jobs, prev_slots, nodes_of, odd)


def _kept_slots_arrays(cluster: Cluster, jobs: list[tuple[JobId, Config]], prev_slots: Mapping[JobId, list[Slot]],
                       nodes_of: Mapping[str, tuple[str, int]]) -> dict[JobId, list[Slot]] | None:
    """:func:`_kept_slots`' checks as arrays, for a call whose jobs all keep their configuration."""
    types = cluster.gpu_types
    tpos = {t.name: i for i, t in enumerate(types)}
    first = np.cumsum([0] + [t.nodes for t in types])  # a node's number across types: first[type] + index
    sizes = np.fromiter((g for t in types for g in t.sizes), np.int64, int(first[-1]))
    first_of = first.tolist()
    node_no: list[int] = []  # per slot
    slot_job: list[int] = []
    gpus: list[tuple[int, ...]] = []
    for i, (jid, c) in enumerate(jobs):
        tp = tpos.get(c.gpu_type)
        for node, gs in prev_slots[jid]:
            tk = nodes_of.get(node)
            if tk is None or tk[0] != c.gpu_type or tp is None:
                return None
            node_no.append(first_of[tp] + tk[1])
            slot_job.append(i)
            gpus.append(gs)
    lens = np.fromiter(map(len, gpus), np.int64, len(gpus))
    if not lens.size or not lens.sum():
        return None
    g = np.fromiter(chain.from_iterable(gpus), np.int64, int(lens.sum()))
    slot_node = np.array(node_no, dtype=np.int64)
    cell_node = np.repeat(slot_node, lens)
    if g.min() < 0 or (g >= sizes[cell_node]).any():
        return None
    width = int(sizes.max()) if sizes.size else 1
    cell = cell_node * width + g
    if np.unique(cell).size != cell.size:
        return None  # a GPU held twice
    sj = np.array(slot_job, dtype=np.int64)
    cj = np.repeat(sj, lens)
    have = np.bincount(cj, minlength=len(jobs))
    if (have == 0).any():
        return None  # a job whose slots hold no GPU
    odd = np.zeros(len(jobs), dtype=bool)  # jobs whose slots are not in the grid's order
    odd[sj[lens == 0]] = True
    same = sj[1:] == sj[:-1]
    odd[sj[1:][same & (slot_node[1:] <= slot_node[:-1])]] = True
    same = cj[1:] == cj[:-1]
    odd[cj[1:][same & (cell[1:] <= cell[:-1])]] = True
    return _kept_out(cluster, jobs, prev_slots, nodes_of, odd.tolist())


def _kept_out(cluster: Cluster, jobs: list[tuple[JobId, Config]], prev_slots: Mapping[JobId, list[Slot]],
              nodes_of: Mapping[str, tuple[str, int]], odd: list[bool]) -> dict[JobId, list[Slot]]:
    """:func:`_kept_slots`' answer: each job's previous slots, as they are where they are in the grid's order
    (``odd`` False), else sorted and merged per node."""
    out: dict[JobId, list[Slot]] = {}
    for (jid, c), bad in zip(jobs, odd):
        slots = prev_slots[jid]
        if not bad:
            out[jid] = slots if all(type(gs) is tuple for _, gs in slots) else [(n, tuple(gs)) for n, gs in slots]
            continue
        ids = cluster[c.gpu_type].ids
        cells = sorted((nodes_of[n][1], x) for n, gs in slots for x in gs)
        per: list[tuple[int, list[int]]] = []
        for k, x in cells:
            if per and per[-1][0] == k:
                per[-1][1].append(x)
            else:
                per.append((k, [x]))
        out[jid] = [(ids[k], tuple(xs)) for k, xs in per]
    return out


def _keep_all(grid: _Grid, cluster: Cluster, prev_slots: Mapping[JobId, list[Slot]],
              prev_conf: Mapping[JobId, Config | None], conf: Mapping[JobId, Config], slot_of: Mapping[JobId, int],
              nodes_of: Mapping[str, tuple[str, int]]) -> set[JobId] | None:
    """The kept jobs of :func:`place`'s greedy run, put on the empty ``grid`` at once, when every job that keeps its
    configuration keeps all its previous GPUs (each on a known node of its type, within the node, no GPU held
    twice): then the one-job-at-a-time loop keeps them all, and the grid is the same (each cell the job's slot,
    each row of a kept slot touched). ``None``, the grid untouched, when any check fails: the loop decides."""
    cells: dict[str, tuple[list[int], list[int]]] = {}  # type -> (node per slot, job slot per slot)
    gpus: dict[str, list[tuple[int, ...]]] = {}
    kept: set[JobId] = set()
    for jid, slots in prev_slots.items():
        c = conf.get(jid)
        if c is None or prev_conf.get(jid) != c:
            continue
        t = c.gpu_type
        acc = cells.get(t)
        if acc is None:
            acc = cells[t] = ([], [])
            gpus[t] = []
        rows, sl = acc
        gl = gpus[t]
        s = slot_of[jid]
        for node, gs in slots:
            tk = nodes_of.get(node)
            if tk is None or tk[0] != t:
                return None
            rows.append(tk[1])
            gl.append(gs)
            sl.append(s)
        kept.add(jid)
    arrays: list[tuple[str, list[int], Any, Any, Any]] = []
    for t, (rows, sl) in cells.items():
        occ = grid.occ[t]
        if len(rows) <= _FEW_CELLS // 8:  # a few slots: the cells checked in Python (the same answer as below)
            width = occ.shape[1]
            sizes: Sequence[int] | None = None if cluster.uniform else cluster[t].sizes
            held: set[int] = set()
            ks: list[int] = []
            xs: list[int] = []
            owners: list[int] = []
            for row, gs, owner in zip(rows, gpus[t], sl):
                cap = width if sizes is None else sizes[row]
                for x in gs:
                    cell = row * width + x
                    if x < 0 or x >= cap or cell in held:  # out of its node, or a GPU held twice
                        _as_int64(gpus[t])  # (what the arrays below raise first for a GPU beyond int64)
                        return None
                    held.add(cell)
                    ks.append(row)
                    xs.append(x)
                    owners.append(owner)
            arrays.append((t, rows, np.array(ks, dtype=np.int64), np.array(xs, dtype=np.int64),
                           np.array(owners, dtype=np.int64)))
            continue
        lens = np.fromiter(map(len, gpus[t]), np.int64, len(rows))
        g = np.fromiter(chain.from_iterable(gpus[t]), np.int64, int(lens.sum()))
        k = np.repeat(np.array(rows, dtype=np.int64), lens)
        size: np.ndarray | int = occ.shape[1] if cluster.uniform else np.asarray(cluster[t].sizes, np.int64)[k]
        if g.size and (g.min() < 0 or (g >= size).any()):
            return None
        if np.unique(k * occ.shape[1] + g).size != g.size:
            return None  # a GPU held twice
        arrays.append((t, rows, k, g, np.repeat(np.array(sl, dtype=np.int64), lens)))
    for t, rows, k, g, owner in arrays:
        grid.occ[t][k, g] = owner
        grid._touch(t, rows)
    return kept


def _as_int64(gpus: list[tuple[int, ...]]) -> None:
    """Raise the OverflowError ``np.fromiter(..., np.int64)`` raises for a GPU index beyond int64 (the arrays'
    route meets it before any other check)."""
    np.fromiter(chain.from_iterable(gpus), np.int64)


def place(
    cluster: Cluster,
    allocation: Mapping[JobId, Config | None],
    previous: Placement | Mapping[JobId, list[Slot]] | None = None,
    *,
    pinned: Collection[JobId] = (),
    rigid: Collection[JobId] = (),
) -> Placement:
    """Map every chosen configuration onto node ids (``<type>-<k>``) and GPU indices.

    With ``previous`` (a :class:`Placement` or a mapping job id -> slots), jobs whose configuration is unchanged
    keep their GPUs; ``pinned`` jobs (e.g. non-preemptible ones) are never evicted. Every configuration must be a
    configuration of the cluster (:func:`~schedopt.sia.check.config_shape_ok`: a power of two on one node, or whole
    nodes) or, for the jobs named in ``rigid``, a rigid job's shape (``ceil(g / R)`` nodes, e.g. 3 GPUs on one 4-GPU
    node). A rigid shape given to a job not named there is an :class:`InputError` (issue 25: ``place`` accepted a
    3-GPU allocation on one node that no configuration of an elastic job allows; :meth:`SiaSolution.place` names
    the problem's rigid jobs itself).
    """
    if not isinstance(cluster, Cluster):
        raise InputError("cluster", type(cluster).__name__, "must be a Cluster")
    if isinstance(rigid, str) or not isinstance(rigid, Collection):
        raise InputError("rigid", rigid, "must be a collection of job ids")
    jobs = _check_jobs(cluster, allocation, frozenset(rigid))
    if previous is None:
        fresh, failed = _place_empty(cluster, jobs)
        return Placement(
            assignments=fresh,
            configs={jid: c for jid, c in jobs if jid in fresh},
            unplaced=tuple(failed),
        )
    conf = dict(jobs)
    slot_of = dict(zip(conf, range(len(jobs))))  # (the allocation's ids are distinct: its keys)
    prev_slots: dict[JobId, list[Slot]] = {}
    prev_conf: dict[JobId, Config | None] = {}
    given = previous.configs if isinstance(previous, Placement) else {}
    for jid, slots in (previous.assignments if isinstance(previous, Placement) else previous).items():
        ps = prev_slots[jid] = [(n if type(n) is str else str(n), tuple(map(int, gs))) for n, gs in slots]
        pc = given.get(jid, _UNSET)
        prev_conf[jid] = _config_of_slots(ps, cluster) if pc is _UNSET else pc

    nodes_of = _node_index(cluster)
    keys: dict[int, tuple[int, int]] = {}  # id of a Config of `conf` -> its _order_key (a few distinct ones)

    def order_of(jid: JobId) -> tuple[int, int]:
        """``_order_key(conf[jid], cluster)``, once per configuration object (asked only for the jobs queued)."""
        c = conf[jid]
        got = keys.get(id(c))
        if got is None:
            got = keys[id(c)] = _order_key(c, cluster)
        return got

    def run(stop: bool) -> tuple[_Grid, list[JobId], bool]:
        """The greedy placement with evictions; ``stop``: return as soon as some job is certain to fail (the
        third value True; the grid and the failed list are then partial)."""
        grid = _Grid(cluster)
        fast = _keep_all(grid, cluster, prev_slots, prev_conf, conf, slot_of, nodes_of)
        kept: set[JobId] = set() if fast is None else fast
        taken: set[tuple[str, int, int]] = set()  # (type, node, GPU) cells the kept jobs hold so far (the grid's, in Python)
        for jid, slots in prev_slots.items() if fast is None else ():  # (one at a time where _keep_all cannot tell)
            if jid not in conf or prev_conf.get(jid) != conf[jid]:
                continue
            cells = []
            okay = True
            for node, gpus in slots:
                tk = nodes_of.get(node)
                t, k = tk if tk is not None else _split_node(node, cluster)  # an unknown node raises there
                R = cluster[t].sizes[k] if not cluster.uniform else grid.occ[t].shape[1]
                if t != conf[jid].gpu_type or any(g < 0 or g >= R or (t, k, g) in taken for g in gpus):
                    okay = False
                    break
                cells.append((t, k, list(gpus)))
            if okay:
                for t, k, idx in cells:
                    grid.assign(t, k, idx, slot_of[jid])
                    taken.update((t, k, g) for g in idx)
                kept.add(jid)
        queue = sorted((jid for jid, _ in jobs if jid not in kept), key=order_of)
        head = 0  # queue[:head] is done; queue[head:] stays sorted by key (stable: equal keys in arrival order)
        cost: dict[int, float] | None = None  # made at the first eviction (most rounds evict nothing)
        failed: list[JobId] = []
        budget = 4 * len(jobs) + 8
        loop = _CycleWatch(grid) if stop else None
        while head < len(queue):
            jid = queue[head]
            head += 1
            c = conf[jid]
            if grid.put(c, slot_of[jid]):
                continue
            if loop is not None and budget > 0 and loop.seen(jid, queue, head):
                return grid, [jid], True  # the evictions go round in a cycle until the budget ends: a job fails
            if cost is None:
                cost = dict.fromkeys(range(len(jobs)), 1e-3)
                for j in kept:
                    cost[slot_of[j]] = 1.0
                for j in pinned:
                    if j in slot_of:
                        cost[slot_of[j]] = np.inf
            victims = grid.evict_for(c, cost) if budget > 0 else None
            if not victims:
                failed.append(jid)
                if stop:
                    return grid, failed, True
                continue
            budget -= 1
            for v in victims:
                grid.remove(v, c.gpu_type)
            if not grid.put(c, slot_of[jid]):  # pragma: no cover - eviction frees a block that fits by construction
                failed.append(jid)
            for v in victims:  # what extend + a stable sort gives: after every queued job of an equal key
                insort(queue, jobs[v][0], lo=head, key=order_of)  # (slot v is jobs[v]: slot_of enumerates them)
        return grid, failed, False

    kept_all = _kept_slots(cluster, jobs, prev_slots, prev_conf, nodes_of)
    if kept_all is not None:  # nothing to move: what run() gives then, without the grid
        assignments, failed = kept_all, []
    else:
        grid, failed, cut = run(True)
        afresh: tuple[dict[JobId, list[Slot]], list[JobId]] | None = None
        if cut:  # some job fails: placing afresh wins unless it fails too (then the whole run decides)
            afresh = _place_empty(cluster, jobs)
            if afresh[1]:
                grid, failed, _ = run(False)
        if afresh is not None and not afresh[1]:
            assignments, failed = afresh
        else:
            by_slot = grid.slots_by_job()
            assignments = {}
            for k, (jid, _) in enumerate(jobs):
                got = by_slot.get(k)
                if got is not None:
                    assignments[jid] = got
            if failed:  # greedy eviction got stuck: place everything afresh (always fits)
                assignments2, failed2 = afresh if afresh is not None else _place_empty(cluster, jobs)
                if len(failed2) <= len(failed):
                    assignments, failed = assignments2, failed2
    moved = []  # kept jobs (configuration unchanged) placed on other GPUs
    for jid, ps in prev_slots.items():
        c, pc, a = conf.get(jid), prev_conf.get(jid), assignments.get(jid)
        if c is not None and (pc is c or pc == c) and a is not None and a != ps and sorted(a) != sorted(ps):
            moved.append(jid)
    evicted = tuple(moved)
    moved_from = {jid: prev_slots[jid] for jid in evicted}
    return Placement(
        assignments=assignments,
        configs={jid: conf[jid] for jid in assignments},
        evicted=evicted,
        unplaced=tuple(failed),
        moved_from=moved_from,
    )
