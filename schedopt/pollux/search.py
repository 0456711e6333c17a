"""Pollux's published genetic search over node-level allocation matrices (``method="ga"``), vectorised over the
population (card: ``formulations/pollux.md``; operators from petuum/adaptdl ``osdi21-artifact``
``simulator/pollux.py``).

The population is held as one ``(columns, jobs, individuals)`` integer array (int16 while every prefix sum fits:
a quarter of the bytes each operation reads): every per-job sum, count and prefix sum the operators need runs over
the two outer axes with the individuals contiguous, so each numpy call is a few long vector operations instead of
hundreds of 11-element rows. A generation is ~90 numpy calls whatever the population (about 0.35 ms on saturn/1's
11 nodes x 1-10 jobs x 100 individuals): on small instances the cost is call overhead, not arithmetic, so the
operators are written to make few calls (the tournament's candidates and the crossover masks of several generations
at once, the raise's probabilities read from a table by node occupancy, the GPU type of each job kept from the
repair for the evaluation, duplicates told apart by hash alone). The random stream differs from the (individuals,
jobs, columns) implementation it replaced (random draws of several generations are made at once); the operators and
their probabilities do not."""

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
        self._set_dtype(max(int(spec.current_matrix.max(initial=0)), int(spec.cols.gpus.max(initial=0))))
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
        self._pon: dict[int, np.ndarray] = {}
        self._tril: dict[int, np.ndarray] = {}
        # flat offsets of the (job, type) blocks: of each job's type where it is fixed (a view, or one type), and of
        # each job's first type
        self._jt_off = (self._jidx * Tt + (0 if self._view_t is None else self._view_t)) * Nn * R
        self._j_off = self._jidx * (Tt * Nn * R)
        self._w = np.random.default_rng(0x5EED).integers(1, 2**62, size=N * J)  # the duplicate hash

    def _set_dtype(self, vmax: int) -> None:
        """The population's integer type: int16 (a quarter of the memory each vector operation reads) while every
        sum over jobs or nodes of entries up to ``vmax`` fits, else int64; the constant arrays the operators combine
        with it are of the same type (a mixed operation would convert)."""
        self._vmax = vmax
        self.dtype: type[np.signedinteger] = np.int16 if vmax * (max(self.J, self.N) + 1) < 2**15 else np.int64
        self.base = np.ascontiguousarray(self.spec.current_matrix.T[:, :, None], dtype=self.dtype)  # (N, J, 1)
        self.cap_node = self.spec.cols.gpus[:, None, None].astype(self.dtype)  # (N, 1, 1)
        self._capn: dict[int, np.ndarray] = {}

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

    def _lookup(self, t: np.ndarray | None, n: np.ndarray, r: np.ndarray) -> np.ndarray:
        """Scaled speedups at (job, type, nodes, replicas) for (J, P) arrays (``t`` None: each job's one type, its
        view's or the only one), filling missing table entries."""
        Tt, Nn, R = self._dims
        rr = np.minimum(r, self._R) if self._rigid_over else r
        idx = n * R
        idx += rr
        if t is None:
            idx += self._jt_off  # (job, type) block offsets (J, 1)
        else:
            idx += self._j_off
            idx += t * (Nn * R)
        vals = self._S[idx]
        tot = float(np.add.reduce(vals, axis=None))
        if tot != tot:  # NaN: some point not computed yet
            miss = np.isnan(vals)
            if t is None:  # each job's fixed type: its view's, or the only one (0)
                t = self._view_t if self._view_t is not None else np.zeros((1, 1), np.int64)
            tt = np.broadcast_to(t, r.shape)
            jj = np.broadcast_to(self._jidx, r.shape)[miss]
            self.table(jj, tt[miss], n[miss], r[miss])  # fills spec.goodput there (and the rest of each job's type)
            for jt in np.unique(jj * Tt + tt[miss]).tolist():
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
        """Prefix sums over the jobs axis, in the population's type. numpy's accumulate on this middle axis is the
        slowest way; on small blocks one product with a lower-triangular matrix of ones in float64 (exact: sums of
        small integers; a few BLAS calls) beats a loop of J vector adds 1.5-2x, and the loop wins on large blocks,
        where BLAS would also start threads (a block of J * J * P multiply-adds under 2^15 stays on one thread)."""
        if self._small(s.shape[2]):
            return np.matmul(self._tri(0), s.astype(np.float64)).astype(s.dtype)
        c = s.copy()
        for j in range(1, self.J):
            c[:, j] += c[:, j - 1]
        return c

    def _small(self, P: int) -> bool:
        """Whether a product over the jobs axis of an (N, J, P) block is one BLAS thread's small work (J * J * P
        multiply-adds under 2^15, where OpenBLAS stays on one thread and the product beats J vector adds)."""
        return 2 <= self.J and self.J * self.J * P <= 1 << 15

    def _tri(self, k: int) -> np.ndarray:
        """The (J, J) lower-triangular matrix of ones from diagonal ``k`` (0: inclusive prefix sums; -1: strict)."""
        got = self._tril.get(k)
        if got is None:
            got = self._tril[k] = np.tril(np.ones((self.J, self.J)), k)
        return got

    def repair(self, s: np.ndarray) -> np.ndarray:
        """Repair ``s`` (N, J, P, C-contiguous) in place and return it."""
        return self._repair(s)[0]

    def _repair(self, s: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """:meth:`repair`, and the GPU type index each (job, individual) keeps, (J, P) (None on one type): the type
        of every column the job still holds after the repair (the later steps only lower entries)."""
        N, J, P = s.shape
        assert s.flags.c_contiguous  # the steps below write through reshaped views
        dt = self.dtype  # sums over nodes or jobs in the population's type (they fit: _set_dtype)
        keep = None
        # one GPU type per job: keep the type holding most of its GPUs (ties: the first type)
        if self.T > 1:
            per_type = self._onehot_t @ s.reshape(N, J * P).astype(np.float64)  # (T, J*P), exact small integers
            if self.T <= 4:  # argmax over the first axis, as a few comparisons (numpy's is slow on that axis)
                keep = np.zeros(J * P, dtype=np.int64)
                best = per_type[0]
                for k in range(1, self.T):
                    keep[per_type[k] > best] = k
                    if k < self.T - 1:
                        best = np.maximum(best, per_type[k])
            else:
                keep = np.argmax(per_type, axis=0)
            s *= (self.node_type[:, None] == keep[None, :]).reshape(N, J, P)
        # at most one distributed job per node (the first in job order keeps it)
        on = s > 0
        mask = on & (on.sum(axis=0, dtype=dt) > 1)[None]
        if mask.any():
            # every distributed job after the first on its node: a count of the ones before it (a product with a
            # strictly lower-triangular matrix, exact in float64, on small blocks; else the first by argmax)
            if self._small(P):
                s[mask & (np.matmul(self._tri(-1), mask.astype(np.float64)) > 0)] = 0
            else:
                first = mask.argmax(axis=1)  # (N, P): the first distributed job on each node
                s[mask & (self._jcol != first[:, None, :])] = 0
        # at most cap GPUs and max_nodes nodes per job, over a random node order (only job rows over a limit change)
        flat = s.reshape(N, J * P)
        capr = self._cap_cols(J * P)
        over = flat.sum(axis=0, dtype=dt) > capr
        if self.max_nodes < N:
            over |= (flat > 0).sum(axis=0, dtype=dt) > self.max_nodes
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
        if (s.sum(axis=1, keepdims=True, dtype=dt) > self.cap_node).any():
            c = np.minimum(self._cumsum_jobs(s), self.cap_node)
            np.subtract(c[:, 1:], c[:, :-1], out=s[:, 1:])
            s[:, 0] = c[:, 0]
        # rigid jobs: exactly their count or nothing
        if self._any_rigid:
            s *= ~((self.rigid > 0) & (s.sum(axis=0, keepdims=True, dtype=dt) != self.rigid))
        return s, (None if keep is None else keep.reshape(J, P))

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
        cols = np.flatnonzero(zero_rows)  # (job, individual) columns of the (N, J * P) view, in (job, individual) order
        if cols.size:
            flat2 = s.reshape(s.shape[0], -1)
            sub = flat2[:, cols]
            sub[rng.random(sub.shape) < 0.1] = 0
            flat2[:, cols] = sub
        # the raise: on a node with a free GPU, each entry with probability p1 + p2 - p1 p2 (p1 = 1 / J, p2 = 1 / the
        # jobs already on the node, for them), to a count uniform in its value .. the node's capacity
        dt = self.dtype
        free = s.sum(axis=1, keepdims=True, dtype=dt) < self.cap_node  # (N, 1, P)
        on = s > 0
        p1 = free * (1.0 / max(J, 1))  # (N, 1, P)
        # per (node, individual): p1 + p2 - p1 p2 for the jobs on a free node (0 on a full one), read from a table
        # by the count of jobs on the node; p1 for the others
        p_on = self._p_on(J)[free * (on.sum(axis=1, keepdims=True, dtype=dt) + 1)]
        prob = np.where(on, p_on, p1)
        hit = np.flatnonzero(u < prob)
        if hit.size:
            # given u < prob, u / prob is uniform in [0, 1): one draw decides both whether and to what
            flat = s.reshape(-1)
            lo = flat[hit]
            flat[hit] = lo + (u.reshape(-1)[hit] / prob.reshape(-1)[hit]
                              * (self._cap_flat(s.size)[hit] - lo)).astype(self.dtype)
        return s

    def _p_on(self, J: int) -> np.ndarray:
        """``[0, q(0), q(1), .., q(J)]`` with ``q(c) = p1 + (1 - p1) / max(c, 1)``, ``p1 = 1 / J``: the raise's
        probability for a job on a free node holding ``c`` jobs (index ``c + 1``; index 0: a full node). Python
        floats are IEEE doubles: the entries are the numbers numpy computed per entry before."""
        got = self._pon.get(J)
        if got is None:
            p1 = 1.0 / max(J, 1)
            got = self._pon[J] = np.array([0.0] + [p1 + (1.0 - p1) / max(c, 1) for c in range(J + 1)])
        return got

    def _cap_flat(self, size: int) -> np.ndarray:
        """Each entry's node capacity plus one, for a flat (N, J, P) array of ``size`` entries."""
        got = self._capn.get(size)
        if got is None:
            got = self._capn[size] = np.repeat(self.cap_node.reshape(-1) + 1, size // max(self.N, 1))
        return got

    def evaluate(self, s: np.ndarray, t: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(power mean per individual (P,), scaled restart-penalised speedups (J, P)) of a repaired ``s``; ``t``: the
        GPU type of each (job, individual) as :meth:`_repair` returns it (found here when None). The sums over jobs
        run on C-ordered arrays, so a fitness is the same number whatever the memory layout of ``s``."""
        s = np.ascontiguousarray(s)
        on = s > 0
        reps = s.sum(axis=0)
        nn = on.sum(axis=0)
        if self.T <= 1 or self._view_t is not None:
            t = None
        elif t is None:
            t = self.node_type[on.argmax(axis=0)]
        sp_ = self._lookup(t, nn, reps)
        changed = (s != self.base).any(axis=0)
        sp_ = np.where(changed, sp_ * self.restart, sp_)
        # np.mean's sum and division without its Python wrapper (the same numbers)
        if self.p == -1.0:  # the published p: reciprocals, the same numbers as the powers without pow()
            fit = 1.0 / (np.add.reduce(1.0 / (sp_ + EPS), axis=0) / sp_.shape[0])
        else:
            fit = (np.add.reduce((sp_ + EPS) ** self.p, axis=0) / sp_.shape[0]) ** (1.0 / self.p)
        return fit, sp_

    def _hash(self, s: np.ndarray) -> np.ndarray:
        return self._w @ s.reshape(-1, s.shape[2])

    def _unique(self, s: np.ndarray, h: np.ndarray | None = None) -> np.ndarray:
        """Sorted positions of the first occurrence of every distinct individual (by hash ``h``)."""
        return np.flatnonzero(self._first(h if h is not None else self._hash(s)))

    @staticmethod
    def _first(h: np.ndarray) -> np.ndarray:
        """Mask of the first occurrence of every distinct hash in ``h``.

        Individuals are told apart by their hash alone, ``w . s`` over 64-bit integers with fixed random weights
        ``w`` in ``[1, 2^62)``: two distinct individuals share a hash when ``w . (s - s') = 0 mod 2^64``, which for
        the weights' spread happens for about one pair in ``2^60``; a simulation compares ~10^9 pairs. Such a
        collision would only drop one distinct individual from the population (every individual is a repaired,
        valid allocation either way)."""
        oh = np.argsort(h, kind="stable")
        hs = h[oh]
        first = np.ones(h.size, dtype=bool)
        first[oh[1:][hs[1:] == hs[:-1]]] = False
        return first

    #: generations whose random draws are made at once (bounded by memory: the uniforms are (G, N, J, P) floats)
    CHUNK = 10

    def run(self, init: np.ndarray, pop_size: int, generations: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """(population (P, J, N), fitness, speedups (P, J), generations run), best first."""
        rng = self.rng
        init = np.asarray(init, dtype=np.int64)
        if init.size and int(init.max()) > self._vmax:
            self._set_dtype(int(init.max()))
        pop = self.repair(np.ascontiguousarray(init.transpose(2, 1, 0), dtype=self.dtype))
        h = self._hash(pop)
        keep = np.flatnonzero(self._first(h))
        pop, h = np.take(pop, keep, axis=2), h[keep]
        fit = self.evaluate(pop)[0]
        n_mat = max(pop_size // 2, 1)
        K = 2 * n_mat
        N, J = self.N, self.J
        rows = self._jidx  # (J, 1)
        chunk = max(1, min(self.CHUNK, (1 << 22) // max(N * J * K, 1)))
        gens = 0
        partner = np.roll(np.arange(K), n_mat)  # kid k's other parent: pairs (k, k + n_mat)
        rows_p: dict[int, np.ndarray] = {}
        while gens < generations:
            g = min(chunk, generations - gens)
            cand = rng.random((g, 2, K))  # tournament candidates, as fractions of the population size
            points = rng.integers(0, J, size=(g, 1, n_mat))
            resets = rng.random((g, 2, J, K)) < 0.1  # the reset and the zero-row masks
            uniforms = rng.random((g, N, J, K))
            # single-point crossover over jobs: both kids of a pair take rows above the point from their own parent
            own = np.concatenate([rows < points] * 2, axis=2)  # (g, J, K)
            P0 = pop.shape[2]
            cand_p = (cand * P0).astype(np.int64)
            for i in range(g):
                P = pop.shape[2]
                c = cand_p[i] if P == P0 else (cand[i] * P).astype(np.int64)
                # binary tournaments on the fitness
                win = np.where(fit[c[0]] >= fit[c[1]], c[0], c[1])
                src = np.where(own[i], win, win[partner])  # (J, K): the parent of each kid's job row
                rp = rows_p.get(P)
                if rp is None:
                    rp = rows_p[P] = rows * P
                kids = np.take(pop.reshape(N, -1), rp + src, axis=1)  # (N, J, K): one gather
                kids, kt = self._repair(self.mutate(kids, (resets[i, 0], resets[i, 1], uniforms[i])))
                kf = self.evaluate(kids, kt)[0]
                allp = np.concatenate([pop, kids], axis=2)
                allf = np.concatenate([fit, kf])
                allh = np.concatenate([h, self._hash(kids)])
                # the best distinct individuals: by fitness, ties by position (the stable sort), duplicates out
                order = np.argsort(-allf, kind="stable")
                order = order[self._first(allh)[order]][:pop_size]
                pop, fit, h = np.take(allp, order, axis=2), allf[order], allh[order]
            gens += g
        spd = self.evaluate(pop)[1]
        return np.ascontiguousarray(pop.transpose(2, 1, 0)).astype(np.int64), fit, np.ascontiguousarray(spd.T), gens


def first_unique(pop: np.ndarray) -> np.ndarray:
    """Sorted indices of the first occurrence of every distinct individual of ``pop`` (individuals first)."""
    flat = pop.reshape(pop.shape[0], -1)
    _, first = np.unique(flat, axis=0, return_index=True)
    return np.sort(first)
