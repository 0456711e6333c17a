"""Identical groups collapsed into classes with multiplicities (:func:`aggregate`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .structure import MckpStructure

__all__ = ["Aggregate", "aggregate"]

#: a one-element int64 zero, prepended to cumulative sums (no list converted a call)
_ZERO = np.zeros(1, dtype=np.int64)


@dataclass
class Aggregate:
    """Identical groups collapsed: ``st`` has one group per *class* (``st.mult[c]`` identical groups of the
    original structure), its columns those of the class's first group, sorted by their (value, weights) key.

    Original group ``g`` is the ``rank[g]``-th member of class ``cls[g]``; ``sorted_cols`` lists the original
    columns group by group, each group's columns in key order (so position ``p`` of any member is aggregated
    column ``st.starts[cls] + p``); ``col_map`` maps an original column to its aggregated column."""

    st: MckpStructure
    cls: np.ndarray
    rank: np.ndarray
    sorted_cols: np.ndarray
    col_map: np.ndarray
    ostarts: np.ndarray  #: start of every original group in ``sorted_cols``

    @property
    def classes(self) -> int:
        return self.st.G

    @cached_property
    def dense_pad(self) -> np.ndarray:
        """The aggregated columns' dense (n + 1) x K weights with a last row of zeros (index -1: nothing chosen),
        made once for the local search and the residual search (read only). Row ``i`` is what ``st.dense`` gives
        for column ``i`` alone: a column's dense row depends on its own weights only."""
        a = self.st
        out = np.zeros((a.n + 1, a.K))
        out[:-1] = a.dense(np.arange(a.n))
        return out

    def expand(self, choice: np.ndarray) -> np.ndarray:
        """An aggregated choice (one column or -1 per class) given to every member: one column per group."""
        c = choice[self.cls]
        on = c >= 0
        out = np.full(self.cls.size, -1, dtype=np.int64)
        out[on] = self.sorted_cols[self.ostarts[on] + (c[on] - self.st.starts[self.cls[on]])]
        return out

    def counts(self, choice: np.ndarray) -> np.ndarray:
        """How many groups of each class take each aggregated column under the original ``choice``."""
        sel = choice[choice >= 0]
        return np.bincount(self.col_map[sel], minlength=self.st.n).astype(np.int64)

    def disaggregate(self, y: np.ndarray) -> np.ndarray:
        """Integer counts per aggregated column -> one column (or -1) per original group, deterministically: the
        members of a class, in group order, take the class's columns in column order, ``y[c]`` each."""
        a = self.st
        y = np.asarray(np.rint(y), dtype=np.int64)
        E = y.cumsum()
        base = np.concatenate((_ZERO, E))[a.starts]  # counts before each class
        tot = np.add.reduceat(y, a.starts) if a.n else np.zeros(0, np.int64)
        c = self.cls
        target = base[c] + self.rank
        col = np.searchsorted(E, target, side="right")
        on = self.rank < tot[c]
        out = np.full(c.size, -1, dtype=np.int64)
        g = np.flatnonzero(on)
        out[g] = self.sorted_cols[self.ostarts[g] + (col[g] - a.starts[c[g]])]
        return out


_POWERS = np.zeros(0, dtype=np.uint64)

#: :func:`aggregate` takes its general path (hash verification, class ranks) even when every group is a class of its
#: own (tests compare the two)
_GENERAL_PATH = False


def _powers(m: int) -> np.ndarray:
    """The first ``m`` powers (1st to m-th) of the hash multiplier modulo 2**64, from a table kept across calls
    (a prefix of the cumulative product is the cumulative product of the prefix: the same values)."""
    global _POWERS
    if _POWERS.size < m:
        with np.errstate(over="ignore"):
            _POWERS = np.cumprod(np.full(max(m, 64), 0x9E3779B97F4A7C15, dtype=np.uint64), dtype=np.uint64)
    return _POWERS[:m]


def aggregate(st: MckpStructure) -> Aggregate:
    """Collapse identical groups of ``st`` (same multiset of (value, knapsack weights) columns; forced columns have
    already left the structure) into classes with multiplicities, vectorised: column keys by ``lexsort``, each
    group's sorted key sequence hashed, equal hashes verified element by element (a collision only splits)."""
    if isinstance(st.aggregated, Aggregate):
        return st.aggregated
    n, G = st.n, st.G
    if n == 0:
        z = np.zeros(0, np.int64)
        a = Aggregate(st, z, z, z, z, st.starts)
        st.aggregated = a
        return a
    # 1. a key id per distinct (value, ri, wt) column
    m = st.ri.shape[1]
    if m == 1:  # one (row, weight) slot per column: the keys are the columns themselves (no slicing loop)
        wt0, ri0 = st.wt[:, 0], st.ri[:, 0]
        o = np.lexsort((wt0, ri0, st.value))
    else:
        keys = [st.wt[:, j] for j in range(m - 1, -1, -1)]
        keys += [st.ri[:, j] for j in range(m - 1, -1, -1)]
        keys.append(st.value)
        o = np.lexsort(keys)
    new = np.ones(n, dtype=bool)
    if n > 1:
        # each key sorted once, then compared with its neighbour (the same tests as value[o[1:]] != value[o[:-1]])
        vs = st.value[o]
        diff = vs[1:] != vs[:-1]
        ro, wo = st.ri[o], st.wt[o]
        for j in range(m):
            diff |= ro[1:, j] != ro[:-1, j]
            diff |= wo[1:, j] != wo[:-1, j]
        new[1:] = diff
    kid = np.empty(n, dtype=np.int64)
    kid[o] = new.cumsum() - 1
    # 2. each group's columns in key order; hash the key sequence. The columns are sorted by group (``starts``), so
    # the group of sorted position i is ``group[i]`` itself (``group[sc] == group``)
    sc = np.lexsort((kid, st.group))
    g_of = st.group
    pos = np.arange(n) - st.starts[g_of]
    ks = kid[sc]
    pw = _powers(int(st.counts.max()))
    with np.errstate(over="ignore"):
        h = np.add.reduceat((ks.astype(np.uint64) + np.uint64(1)) * pw[pos], st.starts)
    og = np.lexsort((np.arange(G), h, st.counts))
    newc = np.empty(G, dtype=bool)
    newc[0] = True
    if G > 1:
        np.not_equal(h[og[1:]], h[og[:-1]], out=newc[1:])
        newc[1:] |= st.counts[og[1:]] != st.counts[og[:-1]]
    cls = np.empty(G, dtype=np.int64)
    rep = og[newc]  # first (lowest) group of each class
    if rep.size == G and not _GENERAL_PATH:
        # every group a class of its own: no hash to verify (each group is compared with itself), one member each
        # (rank 0), and class c is group og[c]
        cls[og] = np.arange(G)
        C = G
        mult = np.ones(G, dtype=np.int64)
        rank = np.zeros(G, dtype=np.int64)
    else:
        cls[og] = newc.cumsum() - 1
        # 3. verify (a hash collision makes its groups classes of their own)
        mism = ks != ks[st.starts[rep[cls[g_of]]] + pos]
        if mism.any():
            bad = np.unique(g_of[mism])
            cls[bad] = cls.max() + 1 + np.arange(bad.size)
            _, cls = np.unique(cls, return_inverse=True)
            C = int(cls.max()) + 1
            rep = np.full(C, G, dtype=np.int64)
            np.minimum.at(rep, cls, np.arange(G))
        C = rep.size
        mult = np.bincount(cls, minlength=C).astype(np.int64)
        members = np.lexsort((np.arange(G), cls))
        cstart = np.concatenate((_ZERO, mult.cumsum()[:-1]))
        rank = np.empty(G, dtype=np.int64)
        rank[members] = np.arange(G) - cstart[cls[members]]
    # 4. the aggregated structure: the representative groups' columns, in key order
    cnt = st.counts[rep]
    astarts = np.concatenate((_ZERO, cnt.cumsum()[:-1])).astype(np.int64)
    tot = int(cnt.sum())
    sel = sc[np.repeat(st.starts[rep] - astarts, cnt) + np.arange(tot)]
    agroup = np.repeat(np.arange(C), cnt)
    col_map = np.empty(n, dtype=np.int64)
    col_map[sc] = astarts[cls[g_of]] + pos
    ast = MckpStructure(
        maximize=st.maximize, n_cols=st.n_cols, gub_rows=st.gub_rows, knap_rows=st.knap_rows,
        knap_labels=st.knap_labels, forced=st.forced, cols=st.cols[sel], group=agroup, starts=astarts,
        counts=cnt.astype(np.int64), value=st.value[sel], ri=st.ri[sel], wt=st.wt[sel], cap=st.cap, const=st.const,
        infeasible=st.infeasible, stats={}, mult=mult,
    )
    a = Aggregate(ast, cls, rank, sc, col_map, st.starts)
    st.aggregated = a
    return a

