"""Pollux's published genetic search over node-level allocation matrices (``method="ga"``), vectorised over the
population (card: ``formulations/pollux.md``; operators from petuum/adaptdl ``osdi21-artifact``
``simulator/pollux.py``).

The population is held as one ``(columns, jobs, individuals)`` integer array: every per-job sum, count and
prefix sum the operators need runs over the two outer axes with the individuals contiguous, so each numpy call is
a few long vector operations instead of hundreds of 11-element rows. A generation is still ~100 numpy calls whatever
the population (about 0.5 ms on saturn/1's 11 nodes x 1-10 jobs x 100 individuals): on small instances the cost is
call overhead, not arithmetic. The random stream differs from the (individuals, jobs, columns) implementation it
replaced (random draws of several generations are made at once); the operators and their probabilities do not."""

from __future__ import annotations

import numpy as np

from .objective import SpeedupTable
from .spec import EPS, PolluxSpec

__all__ = ["GeneticSearch", "first_unique"]


class GeneticSearch:
    """The published genetic search (vectorised over the population).

    Operators as in ``simulator/pollux.py`` of the artifact: crossover = single point over jobs; mutation = (1)
    reset a job's row to the current allocation (prob. 0.1 per job), (2) zero a job's entries (prob. 0.1 each, for
    10% of jobs), (3) raise entries on nodes with free GPUs to a random count up to the node's capacity; repair =
    one GPU type per job (added for heterogeneous clusters: the type holding most of its GPUs), at most one
    distributed job per node (the first in job order keeps it), at most ``cap`` GPUs and ``max_nodes`` nodes per job
    (over a random node order), node capacity in job order, rigid jobs exactly their count or nothing; survival of
    the best distinct individuals.

    Public arrays are ``(individuals, jobs, columns)``, as :meth:`run` takes and returns them.
    """

    def __init__(self, spec: PolluxSpec, rng: np.random.Generator) -> None:
        self.spec = spec
        self.table = SpeedupTable(spec, expand=True)
        self.rng = rng
        self.J, self.N = spec.current_matrix.shape
        J, N = self.J, self.N
        self.base = spec.current_matrix.T[:, :, None].copy()  # (N, J, 1)
        self.cap_node = spec.cols.gpus[:, None, None]  # (N, 1, 1)
        node_type = spec.cols.types
        self.node_type = node_type
        self.T = int(node_type.max()) + 1 if node_type.size else 0
        self._onehot_t = (np.arange(self.T)[:, None] == node_type[None, :]).astype(np.float64)  # (T, N)
        self.max_nodes = spec.max_nodes
        self.cap = spec.job_cap[None, :, None]  # (1, J, 1)
        self.rigid = spec.rigid_gpus[None, :, None]
        self._any_rigid = bool(spec.rigid_gpus.any())
        self._jidx = np.arange(J)[:, None]
        self._jcol = np.arange(J)[None, :, None]
        self.p = float(spec.p)
        self.restart = spec.restart[:, None]  # (J, 1)
        # speedups ``goodput / base * scale`` as one flat table indexed by (job, type, nodes, replicas); NaN: to fill
        Tt, Nn, R = spec.goodput.shape[1:]
        self._dims = (Tt, Nn, R)
        self._R = R - 1
        self._S = self._speedup_table()
        self._rigid_over = bool((spec.rigid_gpus > self._R).any())
        self._view_t = None if spec.view is None else np.where(spec.view >= 0, spec.view, 0)[:, None]
        self._capc: dict[int, np.ndarray] = {}
        self._capn: dict[int, np.ndarray] = {}
        # (job, type) block offsets in nodes units where the type is fixed per job (a view, or one type)
        self._jt_view = (self._jidx * Tt + (0 if self._view_t is None else self._view_t)) * Nn
        self._w = np.random.default_rng(0x5EED).integers(1, 2**62, size=N * J)  # the duplicate hash

    # ------------------------------------------------------------------ speedups
    def _speedup_table(self) -> np.ndarray:
        spec = self.spec
        S = spec.goodput / spec.base[:, None, None, None] * spec.speedup_scale
        S[..., 0] = 0.0
        if spec.view is not None:
            lin = np.flatnonzero(spec.view < 0)
            r = np.arange(S.shape[3], dtype=np.float64)
            for j in lin.tolist():
                S[j] = r[None, None, :] / spec.base[j] * spec.speedup_scale
        return S.reshape(-1)

    def _S_job(self, j: int, t: int) -> None:
        """Refresh the speedups of job ``j`` on type ``t`` from the spec's goodput table."""
        Tt, Nn, R = self._dims
        lo = (j * Tt + t) * Nn * R
        blk = self.spec.goodput[j, t] / self.spec.base[j] * self.spec.speedup_scale
        blk[:, 0] = 0.0
        self._S[lo:lo + Nn * R] = blk.reshape(-1)

    def _lookup(self, t: np.ndarray, n: np.ndarray, r: np.ndarray) -> np.ndarray:
        """Scaled speedups at (job, type, nodes, replicas) for (J, P) arrays, filling missing table entries."""
        Tt, Nn, R = self._dims
        rr = np.minimum(r, self._R) if self._rigid_over else r
        if self._view_t is not None:
            t = np.broadcast_to(self._view_t, r.shape)
            idx = (self._jt_view + n) * R + rr
        elif Tt == 1:
            idx = (self._jt_view + n) * R + rr
        else:
            idx = ((self._jidx * Tt + t) * Nn + n) * R + rr
        vals = self._S[idx]
        miss = np.isnan(vals)
        if miss.any():
            jj = np.broadcast_to(self._jidx, r.shape)[miss]
            self.table(jj, t[miss], n[miss], r[miss])  # fills spec.goodput there (and the rest of each job's type)
            for jt in np.unique(jj * Tt + t[miss]).tolist():
                j4, t4 = divmod(jt, Tt)
                self._S_job(j4, t4)
            vals = self._S[idx]
        if self._rigid_over:
            vals = np.where(r > self._R, 0.0, vals)
        return vals

    # ------------------------------------------------------------------ operators on (N, J, P) arrays
    def _cap_cols(self, m: int) -> np.ndarray:
        """``cap_j`` for each of ``m`` (job, individual) columns of an (N, J * P) view."""
        got = self._capc.get(m)
        if got is None:
            got = self._capc[m] = np.repeat(self.spec.job_cap, m // max(self.J, 1))
        return got

    def _cumsum_jobs(self, s: np.ndarray) -> np.ndarray:
        """Prefix sums over the jobs axis (a loop of J vector adds: faster than numpy's accumulate on this axis)."""
        if self.J > 24:
            return np.cumsum(s, axis=1)
        c = s.copy()
        for j in range(1, self.J):
            c[:, j] += c[:, j - 1]
        return c

    def repair(self, s: np.ndarray) -> np.ndarray:
        """Repair ``s`` (N, J, P, C-contiguous) in place and return it."""
        N, J, P = s.shape
        assert s.flags.c_contiguous  # the steps below write through reshaped views
        # one GPU type per job: keep the type holding most of its GPUs (ties: the first type)
        if self.T > 1:
            per_type = self._onehot_t @ s.reshape(N, J * P).astype(np.float64)  # (T, J*P), exact small integers
            keep = np.argmax(per_type, axis=0)
            s *= (self.node_type[:, None] == keep[None, :]).reshape(N, J, P)
        # at most one distributed job per node (the first in job order keeps it)
        on = s > 0
        mask = on & (on.sum(axis=0) > 1)[None]
        if mask.any():
            first = mask.argmax(axis=1)  # (N, P): the first distributed job on each node
            s[mask & (self._jcol != first[:, None, :])] = 0
        # at most cap GPUs and max_nodes nodes per job, over a random node order (only job rows over a limit change)
        flat = s.reshape(N, J * P)
        capr = self._cap_cols(J * P)
        over = flat.sum(axis=0) > capr
        if self.max_nodes < N:
            over |= (flat > 0).sum(axis=0) > self.max_nodes
        cols = np.flatnonzero(over)
        k = cols.size
        if k:
            v = np.ascontiguousarray(flat[:, cols]).reshape(-1)
            fi = (np.argsort(self.rng.random((N, k)), axis=0) * k + np.arange(k)).reshape(-1)
            c = v[fi].reshape(N, k)  # each row's entries in its random node order
            c = np.minimum(np.cumsum(c, axis=0), capr[cols])
            c[1:] -= c[:-1].copy()
            if self.max_nodes < N:
                c[np.cumsum(c > 0, axis=0) > self.max_nodes] = 0
            v[fi] = c.reshape(-1)
            flat[:, cols] = v.reshape(N, k)
        # node capacity, in job order (only when some node is over)
        if (s.sum(axis=1, keepdims=True) > self.cap_node).any():
            c = np.minimum(self._cumsum_jobs(s), self.cap_node)
            s[:, 1:] = c[:, 1:] - c[:, :-1]
            s[:, 0] = c[:, 0]
        # rigid jobs: exactly their count or nothing
        if self._any_rigid:
            s *= ~((self.rigid > 0) & (s.sum(axis=0, keepdims=True) != self.rigid))
        return s

    def mutate(self, s: np.ndarray, draws: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """Mutate ``s`` (N, J, P, C-contiguous) in place and return it. ``draws``: the generation's pre-drawn
        (reset mask (J, P), zero-row mask (J, P), uniforms (N, J, P)); drawn here when None."""
        rng = self.rng
        _, J, P = s.shape
        assert s.flags.c_contiguous  # the raise writes through a flat view
        if draws is None:
            draws = (rng.random((J, P)) < 0.1, rng.random((J, P)) < 0.1, rng.random(s.shape))
        reset, zero_rows, u = draws
        np.copyto(s, self.base, where=reset[None])
        # the zero mutation: 10 % of job rows, each of their entries with probability 0.1
        jj, pp = np.nonzero(zero_rows)
        if jj.size:
            sub = s[:, jj, pp]
            sub[rng.random(sub.shape) < 0.1] = 0
            s[:, jj, pp] = sub
        # the raise: on a node with a free GPU, each entry with probability p1 + p2 - p1 p2 (p1 = 1 / J, p2 = 1 / the
        # jobs already on the node, for them), to a count uniform in its value .. the node's capacity
        free = s.sum(axis=1, keepdims=True) < self.cap_node  # (N, 1, P)
        on = (s > 0) & free
        p1 = free * (1.0 / max(J, 1))  # (N, 1, P)
        prob = on * ((1.0 - p1) / np.maximum(on.sum(axis=1, keepdims=True), 1)) + p1  # p1 + p2 - p1 p2
        hit = np.flatnonzero(u < prob)
        if hit.size:
            # given u < prob, u / prob is uniform in [0, 1): one draw decides both whether and to what
            flat = s.reshape(-1)
            lo = flat[hit]
            hi = self._cap_flat(s.size)[hit]
            flat[hit] = lo + (u.reshape(-1)[hit] / prob.reshape(-1)[hit] * (hi - lo + 1)).astype(np.int64)
        return s

    def _cap_flat(self, size: int) -> np.ndarray:
        """Each entry's node capacity, for a flat (N, J, P) array of ``size`` entries."""
        got = self._capn.get(size)
        if got is None:
            got = self._capn[size] = np.repeat(self.spec.cols.gpus, size // max(self.N, 1))
        return got

    def evaluate(self, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(power mean per individual (P,), scaled restart-penalised speedups (J, P)) of a repaired ``s``."""
        on = s > 0
        reps = s.sum(axis=0)
        nn = on.sum(axis=0)
        t = self.node_type[on.argmax(axis=0)] if self.T > 1 else np.zeros_like(reps)
        sp_ = self._lookup(t, nn, reps)
        changed = (s != self.base).any(axis=0)
        sp_ = np.where(changed, sp_ * self.restart, sp_)
        if self.p == -1.0:  # the published p: reciprocals, the same numbers as the powers without pow()
            fit = 1.0 / np.mean(1.0 / (sp_ + EPS), axis=0)
        else:
            fit = np.mean((sp_ + EPS) ** self.p, axis=0) ** (1.0 / self.p)
        return fit, sp_

    def _hash(self, s: np.ndarray) -> np.ndarray:
        return self._w @ s.reshape(-1, s.shape[2])

    def _unique(self, s: np.ndarray, h: np.ndarray | None = None) -> np.ndarray:
        """Sorted positions of the first occurrence of every distinct individual (hash ``h``, then exact)."""
        flat = s.reshape(-1, s.shape[2])
        if h is None:
            h = self._w @ flat
        order = np.argsort(h, kind="stable")
        hs = h[order]
        same = np.empty(order.size, dtype=bool)
        same[0] = False
        same[1:] = hs[1:] == hs[:-1]
        if same.any():
            k = np.flatnonzero(same)
            same[k] = (flat[:, order[k]] == flat[:, order[k - 1]]).all(axis=0)
        return np.sort(order[~same])

    #: generations whose random draws are made at once (bounded by memory: the uniforms are (G, N, J, P) floats)
    CHUNK = 10

    def run(self, init: np.ndarray, pop_size: int, generations: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """(population (P, J, N), fitness, speedups (P, J), generations run), best first."""
        rng = self.rng
        pop = self.repair(np.ascontiguousarray(np.asarray(init, dtype=np.int64).transpose(2, 1, 0)))
        h = self._hash(pop)
        keep = self._unique(pop, h)
        pop, h = pop[:, :, keep], h[keep]
        fit = self.evaluate(pop)[0]
        n_mat = max(pop_size // 2, 1)
        K = 2 * n_mat
        N, J = self.N, self.J
        rows = self._jidx  # (J, 1)
        chunk = max(1, min(self.CHUNK, (1 << 22) // max(N * J * K, 1)))
        gens = 0
        while gens < generations:
            g = min(chunk, generations - gens)
            cand = rng.random((g, 2, K))  # tournament candidates, as fractions of the population size
            points = rng.integers(0, J, size=(g, 1, n_mat))
            resets = rng.random((g, 2, J, K)) < 0.1  # the reset and the zero-row masks
            uniforms = rng.random((g, N, J, K))
            for i in range(g):
                # binary tournaments on the fitness
                c = (cand[i] * pop.shape[2]).astype(np.int64)
                win = np.where(fit[c[0]] >= fit[c[1]], c[0], c[1])
                wa, wb = win[:n_mat], win[n_mat:]
                # single-point crossover over jobs, two children per pair: one gather of (job, parent) columns
                first = rows < points[i]  # (J, n_mat)
                src = np.concatenate([np.where(first, wa, wb), np.where(first, wb, wa)], axis=1)  # (J, K)
                kids = np.ascontiguousarray(pop[:, rows, src])  # (N, J, K)
                kids = self.repair(self.mutate(kids, (resets[i, 0], resets[i, 1], uniforms[i])))
                kf = self.evaluate(kids)[0]
                allp = np.concatenate([pop, kids], axis=2)
                allf = np.concatenate([fit, kf])
                allh = np.concatenate([h, self._hash(kids)])
                keep = self._unique(allp, allh)
                order = keep[np.argsort(-allf[keep], kind="stable")][:pop_size]
                pop, fit, h = allp[:, :, order], allf[order], allh[order]
            gens += g
        spd = self.evaluate(pop)[1]
        return np.ascontiguousarray(pop.transpose(2, 1, 0)), fit, np.ascontiguousarray(spd.T), gens


def first_unique(pop: np.ndarray) -> np.ndarray:
    """Sorted indices of the first occurrence of every distinct individual of ``pop`` (individuals first)."""
    flat = pop.reshape(pop.shape[0], -1)
    _, first = np.unique(flat, axis=0, return_index=True)
    return np.sort(first)
