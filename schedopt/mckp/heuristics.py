"""Heuristics that give the dual bound an incumbent: a greedy repair of the Lagrangian choice
(:class:`GreedyRepair`), a local search on the aggregated counts (:func:`local_search`) and an iterated local
search with random kicks (:func:`kick_search`). Every answer keeps every knapsack row within capacity."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from functools import cached_property

import numpy as np

from .dual import ColumnSet, columns_of_groups
from .structure import MAX_KNAPSACK_ROWS, TOL, MckpStructure

#: one-element constants for the run-start masks and offsets (no list converted a call)
_TRUE = np.ones(1, dtype=bool)
_ZERO = np.zeros(1, dtype=np.int64)

__all__ = ["GreedyRepair", "kick_search", "local_search"]


def _rows_all(b: np.ndarray) -> np.ndarray:
    """``b.all(axis=1)`` of a 2-d boolean array; column by column when it has a few columns (the knapsack rows:
    about 1 us against 3-4 us a call on these small arrays; the same values)."""
    m = b.shape[1]
    if not 1 <= m <= 8:
        return np.asarray(b.all(axis=1))
    out = b[:, 0].copy()
    for j in range(1, m):
        out &= b[:, j]
    return out


def _rows_any(b: np.ndarray) -> np.ndarray:
    """``b.any(axis=1)`` of a 2-d boolean array, column by column as :func:`_rows_all`."""
    m = b.shape[1]
    if not 1 <= m <= 8:
        return np.asarray(b.any(axis=1))
    out = b[:, 0].copy()
    for j in range(1, m):
        out |= b[:, j]
    return out


#: :class:`GreedyRepair` takes its general paths (``st.usage`` for the usage, candidates indexed on the first pass of
#: :meth:`GreedyRepair.improve`) instead of the one-slot and whole-pool shortcuts (tests compare the two)
_GENERAL_PATHS = False

#: :attr:`GreedyRepair._others` per number of knapsack rows
_OTHERS: dict[int, list[np.ndarray]] = {}


class GreedyRepair:
    """Makes a group choice feasible (:meth:`GreedyRepair.repair`) and improves it greedily (:meth:`GreedyRepair.improve`) on ``st``.

    ``pool`` restricts the upgrade candidates to a screened part of the columns (all columns when None);
    ``deadline`` (a ``time.perf_counter()`` value) bounds :meth:`improve`."""

    def __init__(self, st: MckpStructure, pool: ColumnSet | None = None, deadline: float = math.inf) -> None:
        self.st = st
        self.pool = pool if pool is not None else ColumnSet(st)
        self.deadline = deadline
        self.v = st.value
        self.n, self.G, self.K = st.n, st.G, st.K
        self._fit_dense: bool | None = None

    def _dense_fit(self) -> bool:
        """Whether :meth:`improve`'s capacity test may run on the dense weight changes ``D = dense(c) - Wcur[g]``
        (``D <= slack + captol`` on every row) instead of on each (row, weight) entry of the column: the same
        answer when no column lists a row twice (an entry's test is then its row's ``D``; a row the column does not
        use has ``D = -Wcur <= 0 < slack + captol``, since the weights are nonnegative, and padding entries always
        pass)."""
        if self._fit_dense is None:
            ri = self.st.ri
            if ri.shape[1] <= 1:
                self._fit_dense = True
            else:
                srt = np.sort(ri, axis=1)
                self._fit_dense = not bool(((srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] < self.K)).any())
        return self._fit_dense

    @cached_property
    def _dense_pad(self) -> np.ndarray:
        """The dense weights of every column and a last row of zeros (index -1: the empty option, as ``st.dense``
        gives it), built once per repairer: :meth:`improve` and :meth:`repair` asked ``st.dense`` for the same
        columns several times a call (the same values: a column's dense row depends on its own weights only)."""
        out = np.zeros((self.n + 1, self.K))
        out[:-1] = self.st.dense(np.arange(self.n))
        return out

    @cached_property
    def _dense(self) -> np.ndarray:
        """The dense weights of every column (:attr:`_dense_pad` without its last row)."""
        return self._dense_pad[:-1]

    @property
    def _others(self) -> list[np.ndarray]:
        """Per knapsack row ``k``, the other rows (``np.delete(np.arange(K), k)``), kept per ``K`` across repairers
        (read only: they index)."""
        got = _OTHERS.get(self.K)
        if got is None:
            got = _OTHERS[self.K] = [np.delete(np.arange(self.K), k) for k in range(self.K)]
        return got

    @cached_property
    def _vtol(self) -> np.ndarray:
        """:meth:`improve`'s gain tolerance per column (the same values as computed per candidate)."""
        return TOL * np.maximum(1.0, np.abs(self.v))

    @cached_property
    def _pool_all(self) -> bool:
        """Whether the pool is every column, in order (``pool.idx`` is ``arange(n)``)."""
        idx = self.pool.idx
        if self.pool.whole:  # built from every column of this structure: idx is arange(n) by construction
            return idx.size == self.n
        return bool(idx.size == self.n and np.array_equal(idx, np.arange(self.n)))

    @cached_property
    def _pool_group(self) -> np.ndarray:
        """The group of every pool column."""
        return self.st.group[self.pool.idx]

    def time_left(self) -> float:
        return self.deadline - time.perf_counter()

    @cached_property
    def _slot0(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The row and weight of every column as contiguous vectors when each column has one (row, weight) slot
        (a Sia round: a configuration lives on one GPU type), else None."""
        st = self.st
        if st.ri.shape[1] != 1:
            return None
        return np.ascontiguousarray(st.ri[:, 0]), np.ascontiguousarray(st.wt[:, 0])

    def _usage(self, sel: np.ndarray) -> np.ndarray:
        """``st.usage(sel)``: the same sums in the same order (one ``bincount`` over the columns ``sel``), read from
        :attr:`_slot0`'s vectors when the columns have one slot (a fancy index of a 1-d array, not of a column)."""
        s0 = self._slot0
        if s0 is None or not sel.size or _GENERAL_PATHS:
            return self.st.usage(sel)
        return np.bincount(s0[0][sel], weights=s0[1][sel], minlength=self.K + 1)[: self.K]

    def _weight_on(self, idx: np.ndarray, k: int) -> np.ndarray:
        return ((self.st.ri[idx] == k) * self.st.wt[idx]).sum(axis=1)

    def repair(self, choice: np.ndarray, lam: np.ndarray) -> np.ndarray:
        """A feasible choice near ``choice``: switch groups off the over-used rows (least loss per unit freed,
        other rows priced at ``lam``), then upgrade groups greedily with the capacity left."""
        st = self.st
        choice = choice.copy()
        K = self.K
        if K == 0:
            return self.improve(choice)
        cap = st.cap
        captol = self._captol
        usage = self._usage(choice[choice >= 0])  # st.usage_of(choice)
        # with no column listing a row twice, a column's weight on row k is its dense weight there (the one entry
        # on row k, or none: 0), and the dense rows are read from the repairer's table (-1: the zero row)
        dense_pad = self._dense_pad if self._dense_fit() else None
        for it in range(200):
            over = usage - cap
            viol = over > captol
            if not viol.any():
                break
            pure = it >= 8  # after a few rounds only moves that raise no row at all
            k = int(np.argmax(np.where(viol, over / np.maximum(cap, 1.0), -np.inf)))
            chosen = (choice >= 0).nonzero()[0]
            if dense_pad is not None:
                gs = chosen[dense_pad[choice[chosen], k] > 0]
                cur = choice[gs]
                Dcur = dense_pad[cur]
            else:
                gs = chosen[self._weight_on(choice[chosen], k) > 0]
                cur = choice[gs]
                Dcur = st.dense(cur)
            cc = columns_of_groups(self.st, gs, self.pool)
            gi = gs.searchsorted(st.group[cc])
            f = (dense_pad[cc, k] if dense_pad is not None else self._weight_on(cc, k)) < Dcur[gi, k] - captol[k]
            cc, gi = cc[f], gi[f]
            cand_g = np.concatenate((gi, np.arange(gs.size)))
            cand_c = np.concatenate((cc, np.full(gs.size, -1)))
            D = (dense_pad[cand_c] if dense_pad is not None else st.dense(cand_c)) - Dcur[cand_g]
            slack = np.maximum(cap - usage, 0.0)
            lim = np.where(viol | pure, 0.0, slack) + captol
            other = self._others[k]
            ok = _rows_all(D[:, other] <= lim[other]) if other.size else np.ones(D.shape[0], dtype=bool)
            cand_g, cand_c, D = cand_g[ok], cand_c[ok], D[ok]
            vcur = self.v[cur[cand_g]]
            valt = np.where(cand_c >= 0, self.v[np.maximum(cand_c, 0)], 0.0)
            lam_o = lam.copy()
            lam_o[k] = 0.0
            score = ((vcur - valt) + D @ lam_o) / (-D[:, k])
            o = np.lexsort((score, cand_g))
            firsts = o[np.concatenate((_TRUE, cand_g[o][1:] != cand_g[o][:-1]))]
            o2 = firsts[score[firsts].argsort(kind="stable")]
            freed = (-D[o2, k]).cumsum()
            p = int(freed.searchsorted(over[k] - captol[k])) + 1
            if not pure:
                inc = np.maximum(D[o2], 0.0).cumsum(axis=0)
                bad = _rows_any(inc > slack + captol)
                if bad.any():
                    p = min(p, max(1, int(np.argmax(bad))))
            take = o2[:p]
            choice[gs[cand_g[take]]] = cand_c[take]
            usage = self._usage(choice[choice >= 0])  # st.usage_of(choice)
        return self.improve(choice)

    @cached_property
    def _captol(self) -> np.ndarray:
        """The capacity tolerance per row (``TOL`` relative, at least ``TOL``)."""
        return TOL * np.maximum(1.0, self.st.cap)

    def improve(self, choice: np.ndarray) -> np.ndarray:
        """Greedy upgrades with the capacity left (each accepted batch keeps every row within capacity)."""
        st = self.st
        choice = choice.copy()
        K = self.K
        cap = st.cap
        captol = self._captol
        on = (choice >= 0).nonzero()[0]
        cur = choice[on]
        usage = self._usage(cur)  # st.usage_of(choice): the same columns in the same order
        dense = self._dense if K else None
        Wcur = np.zeros((self.G, K))
        if dense is not None:
            Wcur[on] = dense[cur]
        vcur = np.zeros(self.G)
        vcur[on] = self.v[cur]
        group, v = st.group, self.v
        mark = np.zeros(self.n, dtype=bool)
        # every column is a candidate (what the marks give): the first pass reads the columns' arrays whole (the
        # same values as indexing them with arange(n))
        whole = self._pool_all
        if whole:
            whole = not _GENERAL_PATHS
            cand = self.pool.idx
        else:
            mark[self.pool.idx] = True
            mark[cur] = True
            cand = mark.nonzero()[0]
        vtol = self._vtol
        dense_fit = bool(K) and self._dense_fit()
        pidx = self.pool.idx
        pgroup = self._pool_group
        for _ in range(100):
            if not cand.size or self.time_left() <= 0:
                break
            if whole:
                whole = False
                gain = v - vcur[group]
                keep = (gain > vtol).nonzero()[0]
                cand, gc, gain = keep, group[keep], gain[keep]
            else:
                gc = group[cand]
                gain = v[cand] - vcur[gc]
                keep = (gain > vtol[cand]).nonzero()[0]
                cand, gc, gain = cand[keep], gc[keep], gain[keep]
            slack = np.maximum(cap - usage, 0.0)
            D = None
            if dense is not None:
                room = slack + captol
                if dense_fit:
                    # the same test on the dense weight changes (see _dense_fit), kept for the scores below
                    D = dense[cand] - Wcur[gc]
                    fit = _rows_all(D <= room).nonzero()[0]
                    D = D[fit]
                else:
                    slack_pad = np.concatenate((room, [np.inf]))
                    ri, wt = st.ri[cand], st.wt[cand]
                    Wpad = np.concatenate((Wcur[gc], np.zeros((gc.size, 1))), axis=1)
                    fit = _rows_all(wt - np.take_along_axis(Wpad, ri, axis=1) <= slack_pad[ri]).nonzero()[0]
                cand, gc, gain = cand[fit], gc[fit], gain[fit]
            if not cand.size:
                break
            if dense is not None:
                if D is None:
                    D = dense[cand] - Wcur[gc]
                Dp = np.maximum(D, 0.0)
                use = (Dp / np.maximum(slack, captol)).sum(axis=1)
                score = gain / (use + 1e-12)
            else:
                Dp = np.zeros((cand.size, 0))
                score = gain / (np.zeros(cand.size) + 1e-12)
            o = np.lexsort((-score, gc))
            go = gc[o]
            firsts = o[np.concatenate((_TRUE, go[1:] != go[:-1]))]
            o2 = firsts[(-score[firsts]).argsort(kind="stable")]
            if dense is not None:
                inc = Dp[o2].cumsum(axis=0)
                bad = _rows_any(inc > room).nonzero()[0]
                p = max(int(bad[0]) if bad.size else o2.size, 1)
            else:
                p = o2.size
            took = o2[:p]
            take = cand[took]
            gt = group[take]
            choice[gt] = take
            vcur[gt] = v[take]
            if dense is None:
                break
            Wcur[gt] = dense[take]
            usage = self._usage(choice[choice >= 0])  # st.usage_of(choice)
            # the sorted union (what np.unique of the concatenation gives), by marks: cheaper on these small arrays
            mark[:] = False
            mark[cand] = True
            mark[take] = False
            # the pool's columns of the groups just upgraded (the set columns_of_groups(st, sort(gt), pool) gives)
            gmark = np.zeros(self.G, dtype=bool)
            gmark[gt] = True
            mark[pidx[gmark[pgroup]]] = True
            cand = mark.nonzero()[0]
        return choice


#: a fixed generic vector: ``D @ _KEY`` is a scalar key per weight-change vector (a collision only merges groups of
#: moves in the local search, whose exchanges are checked on the counts before they are applied)
_KEY = np.random.default_rng(12345).uniform(1.0, 2.0, MAX_KNAPSACK_ROWS)


#: :func:`local_search` checks every count and class of a candidate exchange, as before the checks were narrowed to
#: what its moves touch (the general path: tests compare the two)
_FULL_EXCHANGE_CHECKS = False


def _partner_pairs(Bq: np.ndarray, bt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The partner pairs ``(qa, qb)`` of :func:`local_search` (bundles ``Bq``, sorted, of groups ``bt[Bq]``; -1: no
    bundle), in this order: two bundles of different groups (``qa < qb``, row by row), then one bundle alone
    ``(-1, b)``, then none ``(-1, -1)``. These are the pairs of ``[Bq, -1] x [Bq, -1]`` with ``qa < qb`` or both -1,
    of different groups or ``qb = -1``, in the grid's row order, without building the grid."""
    iu, ju = _upper_pairs(Bq.size)
    pa, pb = Bq[iu], Bq[ju]
    diff = (bt[pa] != bt[pb]).nonzero()[0]
    none = np.full(Bq.size + 1, -1, dtype=Bq.dtype)
    return np.concatenate((pa[diff], none)), np.concatenate((pb[diff], Bq, none[:1]))


_UPPER_PAIRS: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def _upper_pairs(m: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.triu_indices(m, 1)``: the pairs ``i < j`` of ``range(m)`` row by row, kept for ``m <= 256``."""
    got = _UPPER_PAIRS.get(m)
    if got is None:
        got = np.triu_indices(m, 1)
        if m <= 256:
            _UPPER_PAIRS[m] = got
    return got


def _unique_inverse(keys: np.ndarray) -> np.ndarray:
    """``np.unique(keys, return_inverse=True)[1]`` for a 1-d float array without NaN (the index of every key among
    the sorted distinct keys), without np.unique's overhead (these arrays have tens to hundreds of entries)."""
    perm = keys.argsort()
    aux = keys[perm]
    new = np.empty(aux.size, dtype=bool)
    new[:1] = True
    np.not_equal(aux[1:], aux[:-1], out=new[1:])
    inv = np.empty(aux.size, dtype=np.intp)
    inv[perm] = new.cumsum() - 1
    return inv


def local_search(a: MckpStructure, y: np.ndarray, lam: np.ndarray, delta: np.ndarray, bestg: np.ndarray, gam: float,
                 deadline: float = math.inf, max_rounds: int = 500, kmax: int = 2,
                 stop: Callable[[], bool] | None = None, target: float = math.inf,
                 dense_pad: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """Improve the integer counts ``y`` of the aggregated structure ``a`` (``a.mult`` members per class) by compound
    exchanges that keep every knapsack row within capacity; returns (counts, exchanges applied).

    A *move* switches one member of a class from a used option (or from choosing nothing) to another option; only
    options that can appear in a solution better than the incumbent are targets (``delta <= gam``: the reduced-cost
    fixing argument; ``delta`` / ``bestg`` are the Lagrangian losses of the options / of choosing nothing). Moves are
    grouped by their weight change ``D`` (a few distinct small vectors on these instances); a *bundle* is the ``k``
    best moves of one group (``k <= kmax``, a source used ``n`` times gives up to ``n`` copies), with weight change
    ``k D``. An exchange is one bundle, or a bundle with a positive gain plus any other bundle, whose total weight
    change fits the slack: e.g. a job leaving an 8-GPU option (``D = (-8, 0, 4)``) paid by two ``(4, 0, -2)`` moves.
    The best exchange (largest value gain) is applied, until none gains, ``deadline`` passes, ``stop()`` is true or
    the value reaches ``target`` (the caller's bound less its gap: nothing left to prove). ``dense_pad``: ``a``'s
    dense weights with a last row of zeros when the caller has them (``Aggregate.dense_pad``; read only)."""
    K = a.K
    mult = a.mult if a.mult is not None else np.ones(a.G, dtype=np.int64)
    y = y.astype(np.int64)  # a copy
    vpad = np.concatenate((a.value, [0.0]))
    Dpad = np.concatenate((a.dense(np.arange(a.n)), np.zeros((1, K)))) if dense_pad is None else dense_pad
    cap = a.cap
    tol = TOL * np.maximum(1.0, cap)
    captop = cap + tol
    DpT = Dpad[:-1].T
    gtol = 1e-12 * max(1.0, float(np.abs(a.value).sum()))
    tgt_cols = (delta <= gam).nonzero()[0]
    tgt_g = np.concatenate((a.group[tgt_cols], (bestg <= gam).nonzero()[0]))
    tgt_o = np.concatenate((tgt_cols, np.full(tgt_g.size - tgt_cols.size, -1)))
    o = tgt_g.argsort(kind="stable")
    tgt_g, tgt_o = tgt_g[o], tgt_o[o]
    tcnt = np.bincount(tgt_g, minlength=a.G)
    tstart = np.concatenate((_ZERO, tcnt.cumsum()[:-1]))
    done = 0
    for _ in range(max_rounds):
        if time.perf_counter() > deadline or (stop is not None and stop()) or float(a.value @ y) >= target:
            break
        used = (y > 0).nonzero()[0]
        none_cnt = mult - (np.add.reduceat(y, a.starts) if a.n else 0)
        ng = (none_cnt > 0).nonzero()[0]
        src_g = np.concatenate((a.group[used], ng))
        src_o = np.concatenate((used, np.full(ng.size, -1)))
        src_n = np.concatenate((y[used], none_cnt[ng]))
        rep = tcnt[src_g]
        tot = int(rep.sum())
        if not tot:
            break
        ti = (tstart[src_g] - rep.cumsum() + rep).repeat(rep) + np.arange(tot)
        ms = src_o.repeat(rep)
        mn = np.minimum(src_n, kmax).repeat(rep)
        mt = tgt_o[ti]
        ok = ms != mt
        ms, mn, mt = ms[ok], mn[ok], mt[ok]
        gain = vpad[mt] - vpad[ms]
        D = Dpad[mt] - Dpad[ms]
        slack = cap - (Dpad[used].T @ y[used] if used.size else np.zeros(K)) + tol
        if K:
            inv = _unique_inverse(D @ _KEY[:K])
        else:
            inv = np.zeros(gain.size, dtype=np.int64)
        # copies: a move whose source is used n times can be made min(n, kmax) times
        cp = np.arange(gain.size).repeat(mn)
        order = cp[np.lexsort((-gain[cp], inv[cp]))]
        si = inv[order]
        first = np.concatenate((_TRUE, si[1:] != si[:-1]))
        rank = np.arange(si.size) - np.maximum.accumulate(np.where(first, np.arange(si.size), 0))
        top = rank < kmax
        order, si, rank = order[top], si[top], rank[top]
        T = int(si.max()) + 1 if si.size else 0
        cg = np.full((T, kmax + 1), -np.inf)
        cg[:, 0] = 0.0
        csum = gain[order].cumsum()
        start = np.maximum.accumulate(np.where(rank == 0, np.arange(si.size), 0))
        cg[si, rank + 1] = csum - csum[start] + gain[order][start]
        Dt = np.zeros((T, K))
        Dt[si] = D[order]
        bt, bk = np.isfinite(cg[:, 1:]).nonzero()
        bk = bk + 1
        bg = cg[bt, bk]
        bD = Dt[bt] * bk[:, None]
        # exchanges: a gaining bundle alone or with up to two partner bundles of other groups. The value gain is
        # the sum of the reduced gains plus lam . (total weight change) <= lam . slack, so a partner's reduced
        # loss must stay below the best reduced gain plus lam . slack.
        brg = bg - bD @ lam
        P = ((bg > gtol) | (brg > gtol)).nonzero()[0]
        if not P.size:
            break
        room = float(brg[P].max()) + float(lam @ np.maximum(slack, 0.0)) + gtol
        Bq = (brg > -room).nonzero()[0]
        qa, qb = _partner_pairs(Bq, bt)
        bt_pad = np.concatenate((bt, [-1]))
        bg_pad = np.concatenate((bg, [0.0]))
        bD_pad = np.concatenate((bD, np.zeros((1, K))))
        qg = bg_pad[qa] + bg_pad[qb]
        qD = bD_pad[qa] + bD_pad[qb]
        if K and qa.size > 64:
            # partners with the same weight change: only the 3 best matter (the gaining bundle's group can clash
            # with at most two of them)
            qinv = _unique_inverse(qD @ _KEY[:K])
            qo = np.lexsort((-qg, qinv))
            qs = qinv[qo]
            qf = np.concatenate((_TRUE, qs[1:] != qs[:-1]))
            qr = np.arange(qs.size) - np.maximum.accumulate(np.where(qf, np.arange(qs.size), 0))
            qk = qo[qr < 3]
            qa, qb, qg, qD = qa[qk], qb[qk], qg[qk], qD[qk]
        live = qg > gtol - float(bg[P].max())
        qa, qb, qg, qD = qa[live], qb[live], qg[live], qD[live]
        tgain = bg[P][:, None] + qg[None, :]
        fit = tgain > gtol
        bDP = bD[P]
        for k in range(K):  # row by row: much faster than an (P x Q x K) temporary and all(axis=2)
            fit &= bDP[:, k][:, None] + qD[:, k][None, :] <= slack[k]
        tp = bt[P][:, None]
        fit &= (tp != bt_pad[qa][None, :]) & (tp != bt_pad[qb][None, :])
        if not fit.any():
            break
        cand = fit.ravel().nonzero()[0]
        cand = cand[(-tgain.ravel()[cand]).argsort(kind="stable")]
        # apply the best exchange, then every further candidate that still fits and still gains (checked on the
        # counts themselves: members available, capacities, true value)
        applied = 0
        val = float(a.value @ y)
        # each bundle's moves as plain lists (source, target; -1: nothing), built once per round: a bundle takes
        # part in many candidate exchanges, and scalar updates beat np.subtract.at / np.add.at on 1-2 moves
        # (and whether one of its moves adds a member to a class: from nothing to an option)
        moves: dict[int, tuple[list[int], list[int], bool]] = {}
        # the counts are valid (no negative count, no class over its members) at the start of the round, and stay
        # so (only valid counts are taken): a count can then go negative only where a move takes a member away, and
        # a class can exceed its members only when a move adds one, so only those are checked (the same answers as
        # checking every count and class; counts that are not valid get the whole checks)
        valid = not _FULL_EXCHANGE_CHECKS and bool(none_cnt.min(initial=0) >= 0) and bool(y.min(initial=0) >= 0)
        Pl, qal, qbl = P.tolist(), qa.tolist(), qb.tolist()
        for flat in cand[:64].tolist():
            i, j = divmod(flat, len(qal))
            yy = y.copy()
            grows = False
            taken: list[int] = []
            for b in (Pl[i], qal[j], qbl[j]):
                if b < 0:
                    continue
                mb = moves.get(b)
                if mb is None:
                    mv = order[si == bt[b]][: bk[b]]
                    src, dst = ms[mv].tolist(), mt[mv].tolist()
                    mb = moves[b] = (src, dst, any(c < 0 <= d for c, d in zip(src, dst)))
                for c in mb[0]:
                    if c >= 0:
                        yy[c] -= 1
                        taken.append(c)
                for c in mb[1]:
                    if c >= 0:
                        yy[c] += 1
                grows = grows or mb[2]
            if valid:
                if any(yy[c] < 0 for c in taken):
                    continue
                if grows and a.n and (np.add.reduceat(yy, a.starts) > mult).any():
                    continue
            else:
                if yy.min(initial=0) < 0:
                    continue
                if a.n and (np.add.reduceat(yy, a.starts) > mult).any():
                    continue
            if (DpT @ yy > captop).any():
                continue
            v2 = float(a.value @ yy)
            if v2 <= val + gtol:
                continue
            y, val = yy, v2
            applied += 1
        if not applied:
            break
        done += applied
    return y, done


def kick_search(a: MckpStructure, y: np.ndarray, lam: np.ndarray, delta: np.ndarray, bestg: np.ndarray, gam: float,
                deadline: float, seed: int | None = None, kicks: int = 40, size: int = 3,
                target: float = math.inf, stop: Callable[[], bool] | None = None) -> tuple[np.ndarray, int]:
    """Iterated local search on the counts ``y`` (a local optimum of :func:`local_search`): up to ``kicks`` times,
    apply ``size`` random feasible moves to options within ``gam`` of their class's best (Lagrangian losses
    ``delta`` / ``bestg`` as in :func:`local_search`: only such options can be in a better solution), run the local
    search from there and keep the result when its value is higher. Stops at ``deadline``, when ``stop()`` is true or
    once the value ``a.value @ y`` reaches ``target``; returns (counts, kicks that improved)."""
    K = a.K
    mult = a.mult if a.mult is not None else np.ones(a.G, dtype=np.int64)
    rng = np.random.default_rng(0 if seed is None else seed)
    Dall = a.dense(np.arange(a.n)) if K else np.zeros((a.n, 0))
    cap = a.cap
    tol = TOL * np.maximum(1.0, cap)
    gtol = 1e-12 * max(1.0, float(np.abs(a.value).sum()))
    tgt = (delta <= gam).nonzero()[0]
    y = y.astype(np.int64).copy()
    val = float(a.value @ y)
    wins = 0
    if not tgt.size:
        return y, 0
    for _ in range(kicks):
        if time.perf_counter() > deadline or val >= target or (stop is not None and stop()):
            break
        yk = y.copy()
        use = Dall.T @ yk
        moved = 0
        for t in rng.permutation(tgt)[: 8 * size]:
            c = a.group[t]
            cols = np.arange(a.starts[c], a.starts[c] + a.counts[c])
            src = cols[(yk[cols] > 0) & (cols != t)]
            free = int(mult[c] - yk[cols].sum())
            opts = np.concatenate((src, [-1] if free > 0 else [])).astype(np.int64)
            if not opts.size:
                continue
            s_ = int(opts[rng.integers(opts.size)])
            D = Dall[t] - (Dall[s_] if s_ >= 0 else 0.0)
            if np.any(use + D > cap + tol):
                continue
            yk[t] += 1
            if s_ >= 0:
                yk[s_] -= 1
            use = use + D
            moved += 1
            if moved >= size:
                break
        if not moved:
            continue
        y2, _ = local_search(a, yk, lam, delta, bestg, gam, deadline, stop=stop)
        v2 = float(a.value @ y2)
        if v2 > val + gtol and not np.any(Dall.T @ y2 > cap + tol):
            y, val = y2, v2
            wins += 1
    return y, wins
