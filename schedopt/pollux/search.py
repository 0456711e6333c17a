"""Pollux's published genetic search over node-level allocation matrices (``method="ga"``), vectorised over the
population (card: ``formulations/pollux.md``; petuum/adaptdl ``sched/adaptdl_sched/policy/pollux.py``)."""

from __future__ import annotations

import numpy as np

from .objective import SpeedupTable, power_mean
from .spec import PolluxSpec

__all__ = ["GeneticSearch", "first_unique"]


class GeneticSearch:
    """The published genetic search on (population x jobs x nodes) integer arrays (vectorised over the population).

    Operators as in ``simulator/pollux.py`` of the artifact: crossover = single point over jobs; mutation = (1)
    reset a job's row to the current allocation (prob. 0.1 per job), (2) zero a job's entries (prob. 0.1 each, for
    10% of jobs), (3) raise entries on nodes with free GPUs to a random count up to the node's capacity; repair =
    one GPU type per job (added for heterogeneous clusters: the type holding most of its GPUs), at most one
    distributed job per node (the first in job order keeps it), at most ``cap`` GPUs and ``max_nodes`` nodes per job
    (over a random node order), node capacity in job order, rigid jobs exactly their count or nothing.
    """

    def __init__(self, spec: PolluxSpec, rng: np.random.Generator) -> None:
        self.spec = spec
        self.table = SpeedupTable(spec)
        base = self.base = spec.current_matrix
        self.cap_node = spec.cols.gpus
        node_type = self.node_type = spec.cols.types
        self.rng = rng
        self.max_nodes = spec.max_nodes
        self.cap = spec.job_cap
        self.rigid = spec.rigid_gpus
        self.J, self.N = base.shape
        self.T = int(node_type.max()) + 1 if node_type.size else 0
        self.onehot = (node_type[:, None] == np.arange(self.T)[None, :]).astype(np.int64)  # (N, T)
        # nodes of each type contiguous, every type present (the node tables are built so): per-type sums by
        # np.add.reduceat, the same integers as ``s @ onehot`` without numpy's BLAS-less integer matmul
        counts = np.bincount(node_type, minlength=self.T) if node_type.size else np.zeros(0, np.int64)
        contiguous = node_type.size > 0 and bool(np.all(np.diff(node_type) >= 0)) and bool(np.all(counts > 0))
        self._type_starts = np.r_[0, np.cumsum(counts)[:-1]] if contiguous else None

    def per_type(self, s: np.ndarray) -> np.ndarray:
        """GPUs of each (individual, job) per GPU type: ``s @ onehot``."""
        if self._type_starts is not None:
            return np.add.reduceat(s, self._type_starts, axis=2)
        return s @ self.onehot

    def repair(self, s: np.ndarray) -> np.ndarray:
        s = s.copy()
        rng = self.rng
        # one GPU type per job: keep the type holding most of its GPUs (ties: the first type)
        if self.T > 1:
            keep = np.argmax(self.per_type(s), axis=2)  # (P, J): the type holding most of the job's GPUs
            s *= self.node_type[None, None, :] == keep[:, :, None]
        # at most one distributed job per node (the first in job order keeps the node)
        distributed = np.count_nonzero(s, axis=2) > 1
        mask = (s > 0) & distributed[:, :, None]
        s[np.cumsum(mask, axis=1) > 1] = 0
        # at most cap GPUs and max_nodes nodes per job, over a random node order
        shuffle = np.argsort(rng.random(s.shape), axis=2)
        flat = (shuffle + self._row_offsets(s.shape)).ravel()  # take_along_axis(s, shuffle, 2) as one gather
        s = s.ravel()[flat].reshape(s.shape)
        s = _diff0(np.minimum(np.cumsum(s, axis=2), self.cap[None, :, None]), axis=2)
        s[np.cumsum(s > 0, axis=2) > self.max_nodes] = 0  # nodes past the first max_nodes the job uses
        back = np.empty(s.size, dtype=s.dtype)  # undo the shuffle: scatter back instead of argsort + gather
        back[flat] = s.ravel()
        s = back.reshape(s.shape)
        # node capacity, in job order
        s = _diff0(np.minimum(np.cumsum(s, axis=1), self.cap_node[None, None, :]), axis=1)
        # rigid jobs: exactly their count or nothing
        rig = self.rigid
        if rig.any():
            bad = (rig[None, :] > 0) & (s.sum(axis=2) != rig[None, :])
            s[bad] = 0
        return s

    def _row_offsets(self, shape: tuple[int, ...]) -> np.ndarray:
        """``(p * J + j) * N`` for every (individual, job): row starts of the flattened population."""
        off = getattr(self, "_offsets", None)
        if off is None or off.shape[:2] != tuple(shape[:2]):
            off = self._offsets = (np.arange(shape[0] * shape[1], dtype=np.int64) * shape[2]).reshape(
                shape[0], shape[1], 1)
        return off

    def mutate(self, s: np.ndarray) -> np.ndarray:
        rng = self.rng
        P = s.shape[0]
        reset = rng.random((P, self.J)) < 0.1
        s = np.where(reset[:, :, None], self.base[None], s)
        prob = np.where(rng.random((P, self.J)) < 0.1, 0.1, 0.0)
        s = np.where(rng.random(s.shape) < prob[:, :, None], 0, s)
        free = (self.cap_node[None, :] - s.sum(axis=1) >= 1)[:, None, :]  # (P, 1, N): node has a free GPU
        # normalised over the jobs (axis 1) as published: each node with a free GPU gets about one raise
        prob1 = free / max(self.J, 1)
        mask2 = (s > 0) & free
        prob2 = mask2 / np.maximum(mask2.sum(axis=1, keepdims=True), 1)
        m = rng.random(s.shape) < prob1 + prob2 - prob1 * prob2
        lo = s[m]
        hi = np.broadcast_to(self.cap_node[None, None, :], s.shape)[m]
        lo = np.minimum(lo, hi)
        s = s.copy()
        s[m] = lo + np.floor(rng.random(lo.size) * (hi - lo + 1)).astype(np.int64)  # uniform in lo..hi
        return s

    def crossover(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        points = self.rng.integers(0, self.J, size=(a.shape[0], 1)) if self.J else np.zeros((a.shape[0], 1), int)
        first = (np.arange(self.J)[None, :] < points)[:, :, None]
        return np.concatenate([np.where(first, a, b), np.where(first, b, a)])

    def evaluate(self, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(power mean per individual, scaled restart-penalised speedups (P x J))."""
        P = s.shape[0]
        reps = s.sum(axis=2)
        nn = np.count_nonzero(s, axis=2)
        tix = np.argmax(self.per_type(s), axis=2) if self.T > 1 else np.zeros((P, self.J), dtype=np.int64)
        jj = np.broadcast_to(np.arange(self.J)[None, :], (P, self.J))
        sp_ = self.table(jj.ravel(), tix.ravel(), nn.ravel(), reps.ravel()).reshape(P, self.J)
        changed = np.any(s != self.base[None], axis=2)
        sp_ = sp_ * np.where(changed, self.spec.restart[None, :], 1.0)
        return power_mean(sp_, self.spec.p), sp_

    def run(self, init: np.ndarray, pop_size: int, generations: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """(population, fitness, speedups of the population, generations run), best first."""
        pop = self.repair(init)
        pop = pop[first_unique(pop)]
        fit, spd = self.evaluate(pop)
        rng = self.rng
        gens = 0
        for _ in range(generations):
            n_mat = max(pop_size // 2, 1)
            # binary tournaments on the fitness
            cand = rng.integers(0, pop.shape[0], size=(2 * n_mat, 2))
            win = np.where(fit[cand[:, 0]] >= fit[cand[:, 1]], cand[:, 0], cand[:, 1])
            kids = self.crossover(pop[win[:n_mat]], pop[win[n_mat:]])
            kids = self.repair(self.mutate(kids))
            kf, ks = self.evaluate(kids)
            allp = np.concatenate([pop, kids])
            allf = np.concatenate([fit, kf])
            alls = np.concatenate([spd, ks])
            first = first_unique(allp)
            order = first[np.argsort(-allf[first], kind="stable")][:pop_size]
            pop, fit, spd = allp[order], allf[order], alls[order]
            gens += 1
        return pop, fit, spd, gens


def _diff0(c: np.ndarray, axis: int) -> np.ndarray:
    """``np.diff(c, axis=axis, prepend=0)`` in place, without the concatenation (``c``: a fresh array)."""
    m = np.moveaxis(c, axis, -1)
    m[..., 1:] -= m[..., :-1].copy()
    return c


_HASH_W: dict[int, np.ndarray] = {}


def first_unique(pop: np.ndarray) -> np.ndarray:
    """Sorted indices of the first occurrence of every distinct individual (rows compared through a 64-bit hash
    with fixed random weights, then exactly within equal hashes)."""
    flat = pop.reshape(pop.shape[0], -1)
    w = _HASH_W.get(flat.shape[1])
    if w is None:
        w = _HASH_W[flat.shape[1]] = np.random.default_rng(0x5EED).integers(1, 2**62, size=flat.shape[1])
    h = flat.astype(np.int64) @ w
    order = np.argsort(h, kind="stable")
    hs = h[order]
    same = np.r_[False, hs[1:] == hs[:-1]]
    same[1:] &= np.all(flat[order[1:]] == flat[order[:-1]], axis=1)
    return np.sort(order[~same])
