"""Pollux's objective on a :class:`PolluxSpec`: scaled speedups of (job, type, nodes, replicas) points, the
restart factor of changed allocations, and the power mean ``M`` (card: ``formulations/pollux.md``)."""

from __future__ import annotations

import numpy as np

from .spec import EPS, PolluxSpec

__all__ = ["SpeedupTable", "allocation_speedups", "power_mean"]


def power_mean(s: np.ndarray, p: float, axis: int = -1) -> np.ndarray:
    """``(mean (s + EPS)^p)^(1/p)`` along ``axis`` (the published form, ``EPS = 1e-3``)."""
    return np.asarray(np.mean((s + EPS) ** p, axis=axis) ** (1.0 / p))


class SpeedupTable:
    """Scaled speedups ``goodput[j, t, n, r] / base_j * scale`` of a spec, filling NaN entries of its goodput table
    through ``spec.fill`` the first time they are read (the spec's table is written in place). With ``expand``
    (the genetic search) the first miss of a (job, type) fills every point an allocation of the spec can reach
    (:meth:`reachable`) in one call: the search visits most of them within a few generations, and an estimator call
    costs mostly its fixed overhead."""

    def __init__(self, spec: PolluxSpec, *, expand: bool = False) -> None:
        self.spec = spec
        self.expand = expand
        self._expanded: set[tuple[int, int]] = set()
        self.G = spec.goodput
        self.base = spec.base
        self.scale = spec.speedup_scale
        self.view = spec.view
        self._nmax, self._rmax = spec.max_nodes, spec.max_replicas

    def __call__(self, jidx: np.ndarray, tidx: np.ndarray, nodes: np.ndarray, replicas: np.ndarray) -> np.ndarray:
        """Scaled speedups (before the restart factor) for flat arrays of (job, type index, nodes, replicas); 0 where
        replicas is 0 or the point is outside the table (more nodes or GPUs than a job may hold). With a view
        (``spec.view``) the type index is ignored: each job is read on its view type, or linearly (``r / base``)
        where the view is -1."""
        out = np.zeros(jidx.shape, dtype=np.float64)
        on = (replicas > 0) & (nodes <= self._nmax) & (replicas <= self._rmax)
        if self.view is not None:
            lin = on & (self.view[jidx] < 0)
            out[lin] = replicas[lin] / self.base[jidx[lin]] * self.scale
            on &= ~lin
            tidx = np.where(on, self.view[jidx], 0)
        if not on.any():
            return out
        j, t, n, r = jidx[on], tidx[on], nodes[on], replicas[on]
        G = self.G
        vals = G[j, t, n, r]
        miss = np.isnan(vals)
        if miss.any():
            self._fill(j[miss], t[miss], n[miss], r[miss])
            vals = G[j, t, n, r]
        out[on] = vals / self.base[j] * self.scale
        return out

    def _fill(self, j: np.ndarray, t: np.ndarray, n: np.ndarray, r: np.ndarray) -> None:
        fill = self.spec.fill
        assert fill is not None  # the spec checks: NaN entries need a fill
        T = self.G.shape[1]
        grp = j * T + t
        for g in np.unique(grp).tolist():
            sel = grp == g
            jj, tt = divmod(g, T)
            flat = np.unique(n[sel] * (self._rmax + 1) + r[sel])
            if self.expand and (jj, tt) not in self._expanded:
                self._expanded.add((jj, tt))
                nr, rr = self.reachable(jj, tt)
                todo = np.isnan(self.G[jj, tt, nr, rr])
                flat = np.union1d(flat, nr[todo] * (self._rmax + 1) + rr[todo])
            nm, rm = np.divmod(flat, self._rmax + 1)
            self.G[jj, tt, nm, rm] = np.asarray(fill(jj, tt, nm, rm), dtype=np.float64)

    def reachable(self, j: int, t: int) -> tuple[np.ndarray, np.ndarray]:
        """(nodes, replicas) of every point an allocation can ask of job ``j`` on type ``t``: ``n`` columns (of the
        type, without a view) up to ``max_nodes``, ``n <= r <= cap_j`` (exactly a rigid job's count), ``r`` at most
        ``n`` times the most GPUs such a column holds."""
        spec = self.spec
        cols = spec.cols
        of_t = cols.gpus if spec.view is not None else cols.gpus[cols.types == t]
        if not of_t.size:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        n = np.arange(self._nmax + 1)[:, None]
        r = np.arange(self._rmax + 1)[None, :]
        ok = (n >= 1) & (n <= of_t.size) & (r >= n) & (r <= n * int(of_t.max())) & (r <= int(spec.job_cap[j]))
        if spec.rigid_gpus[j]:
            ok &= r == int(spec.rigid_gpus[j])
        nn, rr = np.nonzero(ok)
        return nn.astype(np.int64), rr.astype(np.int64)


def allocation_speedups(spec: PolluxSpec, s: np.ndarray, table: SpeedupTable | None = None) -> np.ndarray:
    """Scaled, restart-penalised speedups (P x J) of allocation matrices ``s`` (P x jobs x columns): a job's GPU
    type is the one holding most of its GPUs (ties: the first), its nodes the columns it uses."""
    tab = table if table is not None else SpeedupTable(spec)
    s = np.asarray(s, dtype=np.int64)
    P, J, _ = s.shape
    reps = s.sum(axis=2)
    nn = np.count_nonzero(s, axis=2)
    T = len(spec.types)
    onehot = (spec.cols.types[:, None] == np.arange(T)[None, :]).astype(np.int64)
    tix = np.argmax(s @ onehot, axis=2) if T > 1 else np.zeros((P, J), dtype=np.int64)
    jj = np.broadcast_to(np.arange(J)[None, :], (P, J))
    sp_ = tab(jj.ravel(), tix.ravel(), nn.ravel(), reps.ravel()).reshape(P, J)
    changed = np.any(s != spec.current_matrix[None], axis=2)
    return np.asarray(sp_ * np.where(changed, spec.restart[None, :], 1.0))
