"""``SiaProblem``: Sia's configuration ILP built from whole arrays, and ``SiaSolution``, its decoded answer.

Model (names as in ``formulations/sia.md``):

* ``x``: one binary per *valid* (job, configuration) pair, a 1-d block over the flat pair list (jobs in input
  order, configurations in table order within a job), labelled ``<job id>@<n_nodes>x<n_gpus>x<type>``.
* ``one_config_per_job`` (labels: job ids), ``gpu_capacity`` (labels: GPU type names),
  ``virtual_node_capacity`` (only GPU types whose per-node GPU count is not a power of two; labels
  ``<type>:><size>``), ``forced_config`` (labels: ids of non-preemptible running jobs).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from ..errors import InfeasibleError, InputError, SolveFailedError
from ..goodput import JobGoodputModel
from ..model import LinearModel
from ..results import SolveResult, TerminationReason
from .configs import ConfigTable, generate_configs
from .spec import Cluster, Config, Job, JobId, is_pow2, virtual_bins

if TYPE_CHECKING:
    from ..infeasibility import InfeasibilityReport
    from .placement import Placement

__all__ = ["GoodputInput", "PairTable", "SiaProblem", "SiaSolution"]

#: a (jobs x configs) array, a callable (job, config) -> goodput, or a mapping job id -> goodput model
GoodputInput = Any

_KIND_CODE = {"adaptive": 0, "strong": 1, "rigid": 2}
_BIG = np.iinfo(np.int64).max // 4


@dataclass(frozen=True, eq=False)
class PairTable:
    """The valid (job, configuration) pairs, one per model column, with their goodput and utility.

    ``goodput`` is the raw estimate; ``utility`` is it row-normalised (``G * u_i / min_c G``) and multiplied by
    the restart factor off the job's current configuration. ``forced`` marks the forced (non-preemptible) pairs.
    """

    job: np.ndarray
    config: np.ndarray
    goodput: np.ndarray
    utility: np.ndarray
    forced: np.ndarray
    n_jobs: int
    n_configs: int
    seconds: float = 0.0  #: time spent pruning and normalising (excluding goodput-model evaluation)
    goodput_seconds: float = 0.0  #: time spent evaluating the goodput input

    def __len__(self) -> int:
        return int(self.job.shape[0])

    @property
    def mask(self) -> np.ndarray:
        """(jobs x configs) boolean: which pairs are variables."""
        m = np.zeros((self.n_jobs, self.n_configs), dtype=bool)
        m[self.job, self.config] = True
        return m


def _indptr(rows: np.ndarray, n: int) -> np.ndarray:
    """CSR row pointers for entries whose row indices are ``rows`` (entries grouped by row in the stable order)."""
    out = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=out[1:])
    return out


class SiaProblem:
    """One Sia scheduling round: ``cluster``, ``jobs`` and their ``goodput``.

    ``goodput``: a (jobs x configs) array over ``generate_configs(cluster, max_gpus_per_job)`` (or over the
    uncapped table; entries of invalid pairs are ignored, 0 means "cannot run there"), a callable
    ``(job, config) -> goodput`` (called once per valid pair: use arrays or models for large instances), or a
    mapping ``job id -> model`` where a model has ``goodput(gpu_type, nodes, replicas)`` returning an object
    with a ``.goodput`` array (e.g. :class:`schedopt.goodput.JobGoodputModel`); strong-scaling and rigid jobs use
    the model's ``throughput(gpu_type, nodes, replicas, batch)`` at ``job.batch_size`` (default the model's
    ``init_batch``) when it has one. ``p`` (!= 0) is the fairness power, ``lam`` the no-allocation penalty,
    ``available`` the free GPUs per type (default: all).
    """

    def __init__(
        self,
        cluster: Cluster,
        jobs: Sequence[Job],
        goodput: GoodputInput,
        p: float = -0.5,
        lam: float = 1.1,
        max_gpus_per_job: int | None = None,
        available: Mapping[str, int] | Sequence[int] | None = None,
    ) -> None:
        if not isinstance(cluster, Cluster):
            raise InputError("cluster", type(cluster).__name__, "must be a Cluster")
        self.cluster = cluster
        if isinstance(jobs, (str, bytes)) or not isinstance(jobs, Sequence):
            raise InputError("jobs", type(jobs).__name__, "must be a sequence of Job")
        self.jobs: tuple[Job, ...] = tuple(jobs)
        if not isinstance(p, (int, float, np.integer, np.floating)) or isinstance(p, bool) or not math.isfinite(p):
            raise InputError("p", p, "must be a finite number")
        if p == 0:
            raise InputError("p", p, "p = 0 is not supported (G^0 = 1 makes every configuration equal); use p > 0 or p < 0")
        if not isinstance(lam, (int, float, np.integer, np.floating)) or isinstance(lam, bool) or not (
            math.isfinite(lam) and lam >= 0
        ):
            raise InputError("lam", lam, "must be a finite number >= 0")
        self.p = float(p)
        self.lam = float(lam)
        self.configs: ConfigTable = generate_configs(cluster, max_gpus_per_job)
        self.max_gpus_per_job = None if max_gpus_per_job is None else int(max_gpus_per_job)
        self.available = self._check_available(available)
        self.goodput = goodput
        self._check_jobs()
        self._check_goodput_input()

    # ------------------------------------------------------------------ validation
    def _check_available(self, available: Any) -> np.ndarray:
        total = self.cluster.total_gpus
        if available is None:
            return total.copy()
        names = self.cluster.type_names
        if isinstance(available, Mapping):
            out = total.copy()
            for k, v in available.items():
                if k not in names:
                    raise InputError(f"available[{k}]", v, f"names no GPU type of the cluster ({', '.join(names)})")
                if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                    raise InputError(f"available[{k}]", v, "must be a non-negative integer")
                out[names.index(k)] = int(v)
        else:
            arr = np.asarray(available)
            if arr.shape != total.shape or arr.dtype.kind not in "iu":
                raise InputError("available", available, f"must give {len(names)} integers (one per GPU type) or a mapping")
            out = arr.astype(np.int64)
        bad = np.flatnonzero((out < 0) | (out > total))
        if bad.size:
            k = int(bad[0])
            raise InputError(f"available[{names[k]}]", int(out[k]), f"must be in 0..{int(total[k])} (the type's GPUs)")
        return out

    def _check_jobs(self) -> None:
        """One pass over the jobs: types, duplicate ids, allowed types, current configurations (their table
        positions are kept for :attr:`_job_arrays`), rigid counts (checked once per distinct (count, types))."""
        seen: dict[JobId, int] = {}
        tnames = self.cluster.type_names
        tset = set(tnames)
        find = self.configs.find
        cur = [-1] * len(self.jobs)
        rigid_seen: set[tuple[Any, Any]] = set()
        for i, j in enumerate(self.jobs):
            if not isinstance(j, Job):
                raise InputError(f"jobs[{i}]", j, "must be a Job")
            jid = j.id
            if jid in seen:
                raise InputError(f"jobs[{i}].id", jid, f"duplicates jobs[{seen[jid]}].id")
            seen[jid] = i
            at = j.allowed_types
            if at is not None:
                for k, t in enumerate(at):
                    if t not in tset:
                        raise InputError(f"jobs[{i}].allowed_types[{k}]", t, f"is not a GPU type of the cluster ({', '.join(tnames)})")
            c = j.current
            if c is not None:
                f = find(c)
                if f < 0:
                    raise InputError(
                        f"jobs[{i}].current", c.label,
                        "is not a configuration of this cluster (power-of-two GPUs on one node or whole nodes"
                        + (f", at most {self.max_gpus_per_job} GPUs" if self.max_gpus_per_job else "") + ")",
                    )
                cur[i] = f
            if j.kind == "rigid":
                key = (j.rigid_gpus, at)  # the rigid check depends on these two only
                if key not in rigid_seen:
                    self._check_rigid(i, j)
                    rigid_seen.add(key)
        self._index = seen
        self._current_index = np.array(cur, dtype=np.int64)

    def _check_rigid(self, i: int, j: Job) -> None:
        cfg = self.configs
        assert j.rigid_gpus is not None
        types = j.allowed_types if j.allowed_types is not None else self.cluster.type_names
        ok = []
        for t in types:
            k = self.cluster.type_index(t)
            hit = np.any((cfg.type_index == k) & (cfg.n_gpus == j.rigid_gpus))
            if not hit and j.allowed_types is not None:
                gt = self.cluster.gpu_types[k]
                raise InputError(
                    f"jobs[{i}].rigid_gpus", j.rigid_gpus,
                    f"cannot run on allowed type {t!r} ({gt.nodes} nodes x {gt.gpus_per_node} GPUs): a rigid count must be "
                    f"a power of two <= {gt.max_partial} or a multiple of {gt.gpus_per_node} on at most {gt.nodes} whole nodes"
                    + (f" and <= max_gpus_per_job={self.max_gpus_per_job}" if self.max_gpus_per_job else ""),
                )
            ok.append(bool(hit))
        if not any(ok):
            raise InputError(
                f"jobs[{i}].rigid_gpus", j.rigid_gpus,
                "fits no GPU type as one configuration (a power of two on one node, or a multiple of the per-node GPU "
                "count on whole nodes)",
            )

    def _check_goodput_input(self) -> None:
        g = self.goodput
        if isinstance(g, Mapping):
            checked: set[int] = set()  # ids of model objects already checked (the mapping keeps them alive)
            for i, j in enumerate(self.jobs):
                if j.id not in g:
                    raise InputError(f"goodput[{j.id}]", None, f"no goodput model for jobs[{i}]")
                mdl = g[j.id]
                if id(mdl) in checked:
                    continue
                if not callable(getattr(mdl, "goodput", None)):
                    raise InputError(f"goodput[{j.id}]", type(mdl).__name__, "needs a goodput(gpu_type, nodes, replicas) method")
                checked.add(id(mdl))
        elif callable(g):
            return
        else:
            try:
                arr = np.asarray(g, dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise InputError("goodput", type(g).__name__, "must be an array, a callable or a mapping of models") from exc
            full = len(generate_configs(self.cluster)) if self.max_gpus_per_job is not None else len(self.configs)
            if arr.ndim != 2 or arr.shape[0] != len(self.jobs) or arr.shape[1] not in (len(self.configs), full):
                raise InputError(
                    "goodput", arr.shape, f"must be (jobs x configs) = ({len(self.jobs)}, {len(self.configs)})"
                )

    @property
    def job_ids(self) -> list[JobId]:
        return [j.id for j in self.jobs]

    def job_index(self, job_id: JobId) -> int:
        try:
            return self._index[job_id]
        except KeyError:
            raise InputError("job_id", job_id, "names no job of this problem") from None

    # ------------------------------------------------------------------ job arrays
    @cached_property
    def _job_arrays(self) -> dict[str, np.ndarray]:
        jobs = self.jobs
        J, T = len(jobs), len(self.cluster.type_names)
        tpos = {t: k for k, t in enumerate(self.cluster.type_names)}
        allowed = np.ones((J, T), dtype=bool)
        # one pass over jobs (not variables) to read the Python objects: integer and float fields as rows
        ints = np.array(
            [(_KIND_CODE[j.kind], j.min_gpus, -1 if j.max_gpus is None else j.max_gpus, j.scale_unit,
              j.max_profiled_gpus, j.rigid_gpus or 0, j.restarts, (not j.preemptible) and j.current is not None)
             for j in jobs],
            dtype=np.int64,
        ).reshape(J, 8)
        floats = np.array([(j.age_s, j.restart_cost_s) for j in jobs], dtype=np.float64).reshape(J, 2)
        for i, j in enumerate(jobs):
            if j.allowed_types is not None:
                allowed[i] = False
                allowed[i, [tpos[t] for t in j.allowed_types]] = True
        kind, mn, mx, unit, prof, rigid = (ints[:, k].copy() for k in range(6))
        # Job.growth_limit() vectorised: max(2 max_profiled_gpus, u), u = the rigid count or the least multiple of
        # scale_unit >= min_gpus (a Job guarantees u <= max_gpus)
        u = np.where(kind == _KIND_CODE["rigid"], rigid, -(-mn // unit) * unit)
        return {
            "kind": kind,
            "min": mn,
            "max": np.where(mx < 0, _BIG, mx),
            "unit": unit,
            "growth": np.maximum(2 * prof, u),
            "rigid": rigid,
            "allowed": allowed,
            "current": self._current_index,
            "forced": ints[:, 7].astype(bool),
            "age": floats[:, 0].copy(),
            "restarts": ints[:, 6].astype(np.float64),
            "rcost": floats[:, 1].copy(),
        }

    def restart_factors(self) -> np.ndarray:
        """``r_i = max(T_i - N_i S_i, 0) / (T_i + S_i)``, 1 while ``T_i < S_i`` (vectorised over jobs)."""
        a = self._job_arrays
        T, N, S = a["age"], a["restarts"], a["rcost"]
        den = T + S
        r = np.divide(np.maximum(T - N * S, 0.0), den, out=np.ones_like(T), where=den > 0)
        return np.where(T < S, 1.0, r)

    def _valid_sub(self) -> tuple[np.ndarray, np.ndarray]:
        """(configuration columns that any job may use, jobs x those columns boolean), by broadcasting. Columns with
        more GPUs than any job's upper bound (or fewer than every lower bound) are skipped up front, which keeps the
        mask small on large clusters."""
        a = self._job_arrays
        cfg = self.configs
        rig = a["kind"] == 2
        ub = np.where(rig, a["rigid"], np.minimum(a["max"], a["growth"]))
        lb = np.where(rig, a["rigid"], a["min"])
        keep = np.zeros(len(cfg), dtype=bool)
        if ub.size:
            keep = (cfg.n_gpus <= ub.max()) & (cfg.n_gpus >= lb.min())
        f = np.flatnonzero(a["forced"])
        keep[a["current"][f]] = True
        cols = np.flatnonzero(keep)
        g = cfg.n_gpus[cols][None, :]
        free = (g >= a["min"][:, None]) & (g <= ub[:, None]) & (g % a["unit"][:, None] == 0)
        rigid = g == a["rigid"][:, None]
        sub = np.where(rig[:, None], rigid, free)
        sub &= a["allowed"][:, cfg.type_index[cols]]
        sub[f, np.searchsorted(cols, a["current"][f])] = True
        return cols, sub

    def valid_mask(self) -> np.ndarray:
        """(jobs x configs) boolean from the spec rules alone (GPU counts, scale unit, growth, types, rigid),
        computed by broadcasting; forced (non-preemptible) current configurations are always valid."""
        cols, sub = self._valid_sub()
        out = np.zeros((len(self.jobs), len(self.configs)), dtype=bool)
        out[:, cols] = sub
        return out

    # ------------------------------------------------------------------ goodput
    def _goodput_of_pairs(self, jj: np.ndarray, cc: np.ndarray) -> np.ndarray:
        g = self.goodput
        cfg = self.configs
        if isinstance(g, Mapping):
            return self._goodput_from_models(jj, cc)
        if callable(g):
            jobs, confs = self.jobs, cfg.configs
            return np.array([float(g(jobs[a], confs[b])) for a, b in zip(jj.tolist(), cc.tolist())], dtype=np.float64)
        arr = np.asarray(g, dtype=np.float64)
        if arr.shape[1] != len(cfg):  # given over the uncapped table
            full = generate_configs(self.cluster)
            cols = np.flatnonzero(full.n_gpus <= (self.max_gpus_per_job or _BIG))
            return arr[jj, cols[cc]]
        return arr[jj, cc]

    def _goodput_from_models(self, jj: np.ndarray, cc: np.ndarray) -> np.ndarray:
        """Evaluate the per-job models vectorised: once per (distinct model, mode, GPU type) over the union of the
        configurations its jobs need (jobs sharing one model object share the evaluation)."""
        cfg = self.configs
        T = len(self.cluster.type_names)
        keys: dict[tuple, int] = {}
        kinfo: list[tuple[Any, str, float | None]] = []
        jkey = np.empty(len(self.jobs), dtype=np.int64)
        models = self.goodput
        has_xput: dict[int, bool] = {}  # per model object: does it have a throughput method
        for i, j in enumerate(self.jobs):  # one pass over jobs
            mdl = models[j.id]
            mode, batch = "goodput", None
            if j.kind != "adaptive":
                h = has_xput.get(id(mdl))
                if h is None:
                    h = has_xput[id(mdl)] = callable(getattr(mdl, "throughput", None))
                if h:
                    mode = "throughput"
                    batch = j.batch_size if j.batch_size is not None else float(mdl.init_batch)
            key = (id(mdl), mode, batch)
            k = keys.get(key)
            if k is None:
                k = keys[key] = len(kinfo)
                kinfo.append((mdl, mode, batch))
            jkey[i] = k
        out = np.zeros(jj.shape[0], dtype=np.float64)
        if not jj.size:
            return out
        group = jkey[jj] * T + cfg.type_index[cc]
        order = np.argsort(group, kind="stable")
        gs = group[order]
        cuts = np.flatnonzero(np.diff(gs)) + 1
        for sel in np.split(order, cuts):
            k, t = divmod(int(group[sel[0]]), T)
            mdl, mode, batch = kinfo[k]
            tname = self.cluster.type_names[t]
            types = getattr(mdl, "gpu_types", None)
            if types is not None and tname not in types:
                continue  # the model has no estimate on this type: the pairs are dropped (goodput 0)
            ucfg, inv = np.unique(cc[sel], return_inverse=True)
            nodes, reps = cfg.n_nodes[ucfg], cfg.n_gpus[ucfg]
            if type(mdl) is JobGoodputModel:  # table points are valid by construction: skip the model's input checks
                nf, rf = nodes.astype(np.float64), reps.astype(np.float64)
                if mode == "throughput":
                    vals = mdl._throughput_values(tname, nf, rf, float(batch))  # type: ignore[arg-type]
                else:
                    vals = mdl._goodput_values(tname, nf, rf)
            elif mode == "throughput":
                vals = np.asarray(mdl.throughput(tname, nodes, reps, batch), dtype=np.float64)
            else:
                res = mdl.goodput(tname, nodes, reps)
                vals = np.asarray(getattr(res, "goodput", res), dtype=np.float64)
            out[sel] = vals.reshape(-1)[inv]
        return out

    # ------------------------------------------------------------------ pairs
    def valid_pairs(self) -> PairTable:
        """The model's columns: valid (job, config) pairs with goodput > 0 and their utilities (cached)."""
        return self._pairs

    @cached_property
    def _pairs(self) -> PairTable:
        t0 = time.perf_counter()
        cols, sub = self._valid_sub()
        jj, kk = np.nonzero(sub)
        cc = cols[kk]
        t1 = time.perf_counter()
        G = self._goodput_of_pairs(jj, cc)
        t2 = time.perf_counter()
        a = self._job_arrays
        forced_pair = a["forced"][jj] & (cc == a["current"][jj])
        bad = ~np.isfinite(G) | (G < 0)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise InputError(
                f"goodput[{self.jobs[jj[k]].id}, {self.configs.labels[cc[k]]}]", float(G[k]),
                "must be a finite number >= 0 for a valid (job, configuration) pair (0: cannot run there)",
            )
        zero_forced = forced_pair & (G <= 0)
        if zero_forced.any():
            k = int(np.flatnonzero(zero_forced)[0])
            raise InputError(
                f"goodput[{self.jobs[jj[k]].id}, {self.configs.labels[cc[k]]}]", float(G[k]),
                "a non-preemptible job's current configuration needs a positive goodput",
            )
        keep = G > 0
        jj, cc, G, forced_pair = jj[keep], cc[keep], G[keep], forced_pair[keep]
        U = G.copy()
        if jj.size:
            starts = np.flatnonzero(np.r_[True, jj[1:] != jj[:-1]])
            gmin = np.minimum.reduceat(G, starts)
            umin = np.minimum.reduceat(self.configs.n_gpus[cc], starts)
            counts = np.diff(np.r_[starts, jj.size])
            U = G * np.repeat(umin / gmin, counts)
            cur = a["current"][jj]
            off = (cur >= 0) & (cc != cur)
            U = np.where(off, U * self.restart_factors()[jj], U)
            keep = (U > 0) | forced_pair
            jj, cc, G, U, forced_pair = jj[keep], cc[keep], G[keep], U[keep], forced_pair[keep]
        t3 = time.perf_counter()
        for arr in (jj, cc, G, U, forced_pair):
            arr.setflags(write=False)
        return PairTable(
            jj.astype(np.int64), cc.astype(np.int64), G, U, forced_pair, len(self.jobs), len(self.configs),
            seconds=(t1 - t0) + (t3 - t2), goodput_seconds=t2 - t1,
        )

    # ------------------------------------------------------------------ model
    def objective_coefficients(self) -> tuple[np.ndarray, float, str]:
        """(coefficient per column, constant, sense) exactly as in the issue's objective."""
        pt = self._pairs
        n = len(self.jobs)
        up = pt.utility ** self.p
        if self.p > 0:
            return up + self.lam, -self.lam * n, "maximize"
        return up - self.lam, self.lam * n, "minimize"

    def virtual_rows(self) -> tuple[sp.csr_matrix, np.ndarray, list[str]]:
        """The ``virtual_node_capacity`` rows over the columns: for a type whose nodes split into power-of-two
        virtual nodes d_1 > d_2 > ... (R not a power of two), for each j < m: GPUs of partial configs larger than
        d_{j+1} plus (d_1 + .. + d_j) per node of multi-node configs <= (d_1 + .. + d_j) N_t."""
        pt = self._pairs
        cfg = self.configs
        tix, ng, nn = cfg.type_index[pt.config], cfg.n_gpus[pt.config], cfg.n_nodes[pt.config]
        rows, cols, vals, upper, labels = [], [], [], [], []
        r = 0
        for k, t in enumerate(self.cluster.gpu_types):
            if is_pow2(t.gpus_per_node) or t.nodes == 0:
                continue
            bins = virtual_bins(t.gpus_per_node)
            of_t = tix == k
            for lvl in range(len(bins) - 1):
                D = sum(bins[: lvl + 1])
                s = bins[lvl + 1]
                coef = np.where(nn >= 2, D * nn, np.where(ng > s, ng, 0)) * of_t
                nz = np.flatnonzero(coef)
                rows.append(np.full(nz.size, r))
                cols.append(nz)
                vals.append(coef[nz].astype(np.float64))
                upper.append(D * t.nodes)
                labels.append(f"{t.name}:>{s}")
                r += 1
        if r == 0:
            return sp.csr_matrix((0, len(pt))), np.zeros(0), []
        A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(r, len(pt)))
        return A, np.asarray(upper, dtype=np.float64), labels

    def build(self) -> LinearModel:
        """The configuration ILP (see the module docstring); ``m.meta["mckp"]`` holds the arrays a multiple-choice
        knapsack solver needs; ``m.build_seconds`` covers pruning, normalisation and assembly (goodput-model
        evaluation is in ``m.meta["goodput_seconds"]``)."""
        pt = self._pairs
        t0 = time.perf_counter()
        cfg = self.configs
        J, P, T = len(self.jobs), len(pt), len(self.cluster.type_names)
        coef, const, sense = self.objective_coefficients()
        m = LinearModel("sia", sense=sense)
        ids = np.array([str(j.id) for j in self.jobs], dtype=object)
        labels = ids[pt.job] + "@" + cfg.labels[pt.config] if P else np.zeros(0, dtype=object)
        m.add_variables("x", P, kind="binary", labels=labels.tolist())
        # x is the model's only block (columns 0..P-1), so the families are given as whole-model CSR matrices built
        # straight from (data, indices, indptr): the pairs are sorted by job, so one_config_per_job's row pointers
        # are a cumsum of the pairs per job, and gpu_capacity's rows come from a stable sort by GPU type.
        col = np.arange(P)
        job_labels = self.job_ids
        A1 = sp.csr_matrix((np.ones(P), col, _indptr(pt.job, J)), shape=(J, P))
        m.add_constraints("one_config_per_job", A1, upper=1, labels=job_labels)
        gpus = cfg.n_gpus[pt.config].astype(np.float64)
        tix = cfg.type_index[pt.config]
        by_type = np.argsort(tix, kind="stable")
        A2 = sp.csr_matrix((gpus[by_type], by_type, _indptr(tix, T)), shape=(T, P))
        m.add_constraints("gpu_capacity", A2, upper=self.available.astype(np.float64), labels=self.cluster.type_names)
        A3, up3, lab3 = self.virtual_rows()
        m.add_constraints("virtual_node_capacity", A3, upper=up3, labels=lab3)
        fcols = np.flatnonzero(pt.forced)
        A4 = sp.csr_matrix((np.ones(fcols.size), fcols, np.arange(fcols.size + 1)), shape=(fcols.size, P))
        m.add_constraints("forced_config", A4, lower=1, labels=[self.jobs[i].id for i in pt.job[fcols].tolist()])
        m.set_objective({"x": coef}, constant=const)
        W = sp.vstack([A2, A3], format="csr").toarray() if P else np.zeros((T + A3.shape[0], 0))
        m.meta["structure"] = "mckp"
        m.meta["mckp"] = {
            "group": pt.job,  # job index per column
            "n_groups": J,
            "value": coef,  # objective coefficient per column, in the model's sense
            "sense": sense,
            "constant": const,
            "weights": W,  # (K x columns): rows = gpu_capacity (one per type) then virtual_node_capacity
            "capacity": np.concatenate([self.available.astype(np.float64), up3]),
            "row_labels": [f"gpu_capacity[{t}]" for t in self.cluster.type_names]
            + [f"virtual_node_capacity[{lb}]" for lb in lab3],
            "type_index": tix,
            "gpus": cfg.n_gpus[pt.config],
            "forced": fcols,  # columns that must be 1
        }
        m.meta["problem"] = "sia"
        m.meta["goodput_seconds"] = pt.goodput_seconds
        m.build_seconds = pt.seconds + (time.perf_counter() - t0)
        return m

    # ------------------------------------------------------------------ forced part
    def check_forced(self) -> None:
        """Raise :class:`InfeasibleError` (before any solve) when the forced configurations alone exceed the free
        GPUs of a type; the message names the type and the jobs."""
        forced = [j for j in self.jobs if not j.preemptible and j.current is not None]
        if not forced:
            return
        use: dict[str, list[Job]] = {}
        for j in forced:
            assert j.current is not None
            use.setdefault(j.current.gpu_type, []).append(j)
        problems = []
        for t, js in use.items():
            need = sum(j.current.n_gpus for j in js if j.current is not None)
            have = int(self.available[self.cluster.type_index(t)])
            if need > have:
                problems.append(
                    f"gpu_capacity[{t}]: non-preemptible jobs {', '.join(str(j.id) for j in js)} need {need} {t} GPUs "
                    f"but {have} are available"
                )
        if problems:
            raise InfeasibleError(
                "the forced configurations (forced_config) alone are infeasible: " + "; ".join(problems),
                explanation=problems,
            )

    # ------------------------------------------------------------------ solve
    def solve(self, backend: str | None = None, *, place: bool = False, previous: Placement | None = None,
              **params: Any) -> SiaSolution:
        """Build and solve (``backend=None``: :func:`schedopt.default_backend` for the model, named in
        ``solution.backend``). ``params`` go to :func:`schedopt.solve` (``time_limit``, ``mip_rel_gap``, ...).
        Raises :class:`InfeasibleError` before solving when the forced jobs alone exceed a type's GPUs. A
        time-limited solve returns the incumbent with ``solution.status`` FEASIBLE (or raises
        :class:`~schedopt.errors.NoSolutionError` on ``.allocation`` when there is none)."""
        from ..solve import default_backend, solve

        self.check_forced()
        m = self.build()
        name = backend or default_backend(m)
        # a model without columns (no job can run anywhere) is decided by schedopt.solve for every backend alike
        res = solve(m, name, **params)
        sol = SiaSolution(problem=self, model=m, result=res, backend=name)
        if place and res.has_solution:
            sol.place(previous)
        return sol

    def __repr__(self) -> str:
        return (f"SiaProblem({len(self.jobs)} jobs, {self.cluster.num_gpus} GPUs in {len(self.cluster.type_names)} types, "
                f"{len(self.configs)} configs, p={self.p}, lam={self.lam})")


@dataclass
class SiaSolution:
    """A solved round. ``allocation`` (job id -> Config or None) raises
    :class:`~schedopt.errors.NoSolutionError` when the solve holds no solution; with a time limit it is the
    incumbent and ``status`` says FEASIBLE. ``placement`` is set by :meth:`place` (or ``solve(place=True)``)."""

    problem: SiaProblem
    model: LinearModel
    result: SolveResult
    backend: str
    placement: Placement | None = field(default=None)

    @property
    def status(self) -> TerminationReason:
        return self.result.termination.reason

    @property
    def is_optimal(self) -> bool:
        return self.status is TerminationReason.OPTIMAL

    @property
    def objective(self) -> float:
        return self.result.objective

    @cached_property
    def chosen_columns(self) -> np.ndarray:
        x = self.result.values["x"]
        frac = (x > 1e-6) & (x < 1 - 1e-6)
        if frac.any():
            raise SolveFailedError(f"{self.backend}: non-integral x in the returned solution ({int(frac.sum())} columns)",
                                   self.result)
        return np.flatnonzero(x > 0.5)

    @cached_property
    def allocation(self) -> dict[JobId, Config | None]:
        pt = self.problem.valid_pairs()
        cols = self.chosen_columns
        ids = self.problem.job_ids
        out: dict[JobId, Config | None] = dict.fromkeys(ids)
        confs = self.problem.configs.configs
        out.update(zip([ids[j] for j in pt.job[cols].tolist()], [confs[c] for c in pt.config[cols].tolist()]))
        return out

    def place(self, previous: Placement | None = None) -> Placement:
        """Place the allocation on nodes and GPUs (keeping unchanged jobs of ``previous`` where they are)."""
        from .placement import place

        self.placement = place(self.problem.cluster, self.allocation, previous)
        return self.placement

    def check(self) -> list[str]:
        """Problems found by the independent checker (empty when the allocation is valid)."""
        from .check import check_allocation

        return check_allocation(self.problem, self.allocation)

    def explain(self) -> InfeasibilityReport:
        from ..infeasibility import explain_infeasibility

        return explain_infeasibility(self.model)

    def rows(self) -> list[dict[str, Any]]:
        """One flat dict per job (for the command line's table)."""
        alloc = self.allocation
        pl = self.placement
        out = []
        for j in self.problem.jobs:
            c = alloc[j.id]
            row: dict[str, Any] = {
                "job": j.id,
                "kind": j.kind,
                "config": c.label if c else "-",
                "gpus": c.n_gpus if c else 0,
                "type": c.gpu_type if c else "-",
                "current": j.current.label if j.current else "-",
            }
            if pl is not None:
                row["nodes"] = " ".join(sorted({n for n, _ in pl.get(j.id, [])})) or "-"
            out.append(row)
        return out

    def summary(self) -> dict[str, Any]:
        r = self.result
        return {
            "termination": str(r.termination),
            "backend": self.backend,
            "objective": r.objective_or_nan,
            "bound": r.bound,
            "gap": r.gap,
            "build_s": self.model.build_seconds,
            "goodput_s": self.model.meta.get("goodput_seconds"),
            "timings": r.timings.as_dict(),
        }

