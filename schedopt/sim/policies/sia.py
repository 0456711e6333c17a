"""Sia (SOSP'23) as a simulator policy: a thin layer over :class:`schedopt.sia.SiaProblem`.

Each round every active job becomes a :class:`schedopt.sia.Job` (adaptive, or rigid with its fixed GPU count and
batch; ``max_gpus`` the engine's cap; its current configuration, age, restarts and restart cost for the restart
factor), its goodput is the policy's estimate (``JobView.estimate``), and the ILP (``p = -0.5``, ``lambda = 1.1``,
at most 64 GPUs per job, as in ``siasosp23/artifacts`` ``run_experiment.sh`` / ``simulator_config.py``) is solved by
any backend (default: the one :func:`schedopt.default_backend` picks) within an optional time limit. As in Sia's
simulator (``preserve_ckpt_allocs``), a job still in its checkpoint-restore delay is non-preemptible: it keeps its
configuration (the policy tracks when it changed a job's configuration and the job model's restart delays).

``batch_cap``: the largest global batch the policy values an adaptive job at -- ``"application"`` (default: the
application's maximum, what the job itself may grow to) or ``"request"`` (the workload's requested batch, as the
published simulator values each adaptive job: ``sia-simulator/job.py`` ``get_speedup_fn``, ``max_batch_size =
target_batch_size``); :data:`PUBLISHED` is the option set of the published policy (``sia:batch_cap=request``).
"""

from __future__ import annotations

import dataclasses
import math
from operator import is_
from typing import Any

import numpy as np

from ...errors import InputError
from ...goodput import JobGoodputModel, goodput_matrix
from ...problem import Answer
from ...sia import Config, ConfigTable, Job, SiaBuildCache, SiaProblem, generate_configs
from ...sia.spec import MAX_GPUS, MAX_RESTARTS
from ..jobs import JobModel
from ..jobs import job_model as get_job_model
from .base import Decision, JobView, RoundState

__all__ = ["BATCH_CAPS", "PUBLISHED", "RESTART_PENALTY_S", "SiaPolicy"]

#: The restart factor's S per application in the published optimizer (``siasosp23/artifacts`` ``sia.py``
#: ``get_restart_penalty``: "restart penalties for each job measured on real physical cluster"); others 30 s. Not the
#: job model's restart delays (``Application.rescale_time``: cifar10 50, yolov3 80, ncf 15 s differ).
RESTART_PENALTY_S = {"deepspeech2": 25.0, "imagenet": 250.0, "cifar10": 30.0, "bert": 120.0, "yolov3": 45.0}

#: ``SiaPolicy(batch_cap=...)``: the application's maximum batch (default) or the workload's requested batch
BATCH_CAPS = ("application", "request")

#: The published Sia policy's options beyond the defaults (the ``sia:published`` preset)
PUBLISHED: dict[str, str] = {"batch_cap": "request"}


def _with_round(job: Job, current: Any, age: Any, restarts: Any, preemptible: bool) -> Job:
    """``dataclasses.replace(job, current=..., age_s=..., restarts=..., preemptible=...)`` for a validated ``job``
    whose other fields stay: a copy of its fields with these four, when they are what :class:`Job` accepts as they
    are (a Config or None, a finite float or int >= 0, an int in [0, MAX_RESTARTS], a bool); anything else goes
    through ``dataclasses.replace`` (Job's own checks and conversions). A frozen dataclass built field by field
    costs ~20 us; a round at 2,048 GPUs builds 4,096 jobs."""
    ta = type(age)
    if not ((current is None or type(current) is Config) and type(restarts) is int and 0 <= restarts <= MAX_RESTARTS
            and ((ta is float and 0.0 <= age < math.inf) or (ta is int and 0 <= age <= 2**53))
            and type(preemptible) is bool):
        return dataclasses.replace(job, current=current, age_s=age, restarts=restarts, preemptible=preemptible)
    out = object.__new__(Job)
    d = out.__dict__
    d.update(job.__dict__)
    d["current"], d["age_s"], d["restarts"], d["preemptible"] = current, float(age), restarts, preemptible
    return out


class SiaPolicy:
    """Sia's configuration ILP each round. ``restart_cost_s``: the restart factor's S -- ``None`` (default): per
    application as the published optimizer (:data:`RESTART_PENALTY_S`, 30 s otherwise); a number: that for every
    job (30.0 reproduces the runs before per-application penalties); ``job_model``: where the restart delays for the
    non-preemptible window come from (``"sia"``)."""

    name = "sia"
    adaptive = True
    seeded = False  #: takes a seed like every policy, draws no random numbers (its solves are deterministic) (schedopt.sim.seeds)
    checkpointable = True  #: a pickle of it resumes a run exactly (schedopt.sim.checkpoint; tests/test_sim_checkpoint.py)

    def __init__(self, backend: str | None = None, time_limit: float | None = None, p: float = -0.5,
                 lam: float = 1.1, restart_cost_s: float | None = None, max_gpus_per_job: int | None = 64,
                 job_model: str | JobModel = "sia", mip_rel_gap: float | None = 1e-4, seed: int | None = None,
                 batch_cap: str = "application") -> None:
        if time_limit is not None and not time_limit > 0:
            raise InputError("time_limit", time_limit, "must be > 0 or None")
        if batch_cap not in BATCH_CAPS:
            raise InputError("batch_cap", batch_cap, "must be 'application' (the application's maximum batch) or "
                                                     "'request' (the workload's requested batch, as the published "
                                                     "simulator)")
        self.batch_cap = batch_cap
        self._capped: dict[tuple[int, float], tuple[JobGoodputModel, JobGoodputModel]] = {}
        self.backend, self.time_limit, self.p, self.lam = backend, time_limit, float(p), float(lam)
        self.restart_cost_s = None if restart_cost_s is None else float(restart_cost_s)
        self.max_gpus_per_job = max_gpus_per_job
        self.jm = get_job_model(job_model)
        self.mip_rel_gap = mip_rel_gap
        self._changed: dict[str, tuple[Any, float]] = {}  # job -> (configuration, time it took it)
        self._table: tuple[Any, ConfigTable, list[str]] | None = None
        self._cache: dict[tuple[int, float | None, tuple[tuple[str, int], ...]], tuple[Any, np.ndarray]] = {}
        self._build = SiaBuildCache()  # the model built incrementally across rounds (the same model)
        #: job id -> (what its Job is built from apart from the round's own fields, the last Job built)
        self._jobs: dict[str, tuple[tuple[Any, ...], Job]] = {}

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the jobs kept from the last round (a cache: rebuilt at the next round)."""
        return {**self.__dict__, "_jobs": {}}

    def _pinned(self, state: RoundState, jid: str, app: str, current: Any) -> bool:
        seen = self._changed.get(jid)
        if seen is None or seen[0] != current:
            # first seen in this configuration: it was (re)started at the previous round
            self._changed[jid] = (current, state.time - state.round_seconds)
            seen = self._changed[jid]
        return current is not None and state.time - seen[1] < self.jm.restart(app)

    def restart_penalty(self, app: str) -> float:
        """The restart factor's S for a job of ``app``."""
        return RESTART_PENALTY_S.get(app, 30.0) if self.restart_cost_s is None else self.restart_cost_s

    def jobs(self, state: RoundState) -> list[Job]:
        """The round's :class:`schedopt.sia.Job` list (one per active job, in the state's order)."""
        out: list[Job] = []
        append = out.append
        made = self._jobs
        now: dict[str, tuple[tuple[Any, ...], Job]] = {}
        changed, restart, t = self._changed, self.jm.restart, state.time
        kept: dict[str, tuple[Any, float]] = {}  # self._changed of the active jobs (the others are gone)
        back = t - state.round_seconds
        per_app: dict[str, tuple[float, float]] = {}  # application -> (restart delay, restart penalty), this round
        new, replace, inf, cfg_type = object.__new__, _with_round, math.inf, Config
        for v in state.jobs:
            jid, current = v.id, v.current  # (self._pinned, inline: a round at 2,048 GPUs asks it 4,096 times)
            seen = changed.get(jid)
            if seen is None or (seen[0] is not current and seen[0] != current):
                seen = changed[jid] = (current, back)
            kept[jid] = seen
            app = per_app.get(v.application)
            if app is None:
                app = per_app[v.application] = (restart(v.application), self.restart_penalty(v.application))
            pinned = current is not None and t - seen[1] < app[0]
            # -- sia-eval (issue 31): strong-scaling jobs and pipeline scale units (GPU counts in multiples of P) --
            if v.adaptive:
                units = v.scale_units
                kind = v.kind
                fixed: tuple[Any, ...] = (kind or "adaptive", v.max_gpus, math.gcd(*units.values()) if units else 1,
                                          v.batch_size if kind == "strong" else None, None, app[1])
            # -- end sia-eval --
            else:
                fixed = ("rigid", None, 1, v.batch_size, v.requested_gpus, app[1])
            got = made.get(jid)
            cap = None  # a new cap (Job.max_gpus = max_profiled_gpus) of a job otherwise as it was, valid as it is
            if got is not None and not all(map(is_, got[0], fixed)):
                was, m, j0 = got[0], fixed[1], got[1]
                if (type(m) is int and fixed[0] != "rigid" and was[0] is fixed[0]
                        and all(map(is_, was[2:], fixed[2:]))  # (what Job checks of the two fields: u <= m)
                        and -(-j0.min_gpus // j0.scale_unit) * j0.scale_unit <= m <= MAX_GPUS):
                    cap = m
                else:
                    got = None
            if got is not None:  # the same objects (or a valid new cap): the same checks pass
                age, restarts = v.age, v.restarts
                if ((current is None or type(current) is cfg_type) and type(age) is float and 0.0 <= age < inf
                        and type(restarts) is int and 0 <= restarts <= MAX_RESTARTS):
                    # (_with_round's own fast path, inline: a frozen Job copied with the round's four fields)
                    job = new(Job)
                    d = job.__dict__
                    d.update(got[1].__dict__)
                    d["current"], d["age_s"], d["restarts"], d["preemptible"] = current, age, restarts, not pinned
                    if cap is not None:
                        d["max_gpus"] = d["max_profiled_gpus"] = cap
                elif cap is None:
                    job = replace(got[1], current, age, restarts, not pinned)
                else:
                    job = dataclasses.replace(got[1], current=current, age_s=age, restarts=restarts,
                                              preemptible=not pinned, max_gpus=cap, max_profiled_gpus=cap)
            else:
                kind, max_gpus, unit, batch, rigid_gpus, cost = fixed
                common: dict[str, Any] = {"current": v.current, "age_s": v.age, "restarts": v.restarts,
                                          "restart_cost_s": cost, "preemptible": not pinned}
                if kind == "rigid":
                    job = Job(id=v.id, kind="rigid", rigid_gpus=rigid_gpus, batch_size=batch, **common)
                else:
                    job = Job(id=v.id, kind=kind, max_gpus=max_gpus, max_profiled_gpus=max_gpus, scale_unit=unit,
                              batch_size=batch, **common)
            now[jid] = (fixed, job)
            append(job)
        self._jobs = now
        self._changed = kept
        return out

    def estimate(self, v: JobView) -> JobGoodputModel:
        """What the policy values job ``v`` by: its estimate, with ``batch_cap="request"`` an adaptive job's global
        batch capped at its requested batch (one capped object per (estimate, request), kept across rounds)."""
        est = v.estimate
        if self.batch_cap == "application" or not (v.kind == "adaptive" or v.scale_units):
            return est
        key = (id(est), float(v.batch_size))
        hit = self._capped.get(key)
        if hit is None or hit[0] is not est:
            if len(self._capped) > 4096:
                self._capped.clear()
            hit = self._capped[key] = (est, est.with_batch_cap(float(v.batch_size)))
        return hit[1]

    def _rows(self, state: RoundState) -> np.ndarray:
        """The (jobs x configurations) goodput of the estimates over ``generate_configs(cluster, 64)``: one row per
        distinct (estimate, mode) computed once and kept across rounds (estimates are shared objects), so a round
        costs an index instead of a goodput search per model (the values are what SiaProblem would compute). The
        round's new adaptive rows are computed together, one candidate search over (new estimates x
        configurations) (:func:`schedopt.goodput.goodput_matrix`, the same values as a search per model)."""
        cl = state.cluster
        if self._table is None or self._table[0] is not cl:
            table = generate_configs(cl, self.max_gpus_per_job)
            self._table = (cl, table, [cl.type_names[k] for k in table.type_index.tolist()])
            self._cache.clear()
        cfg, point_types = self._table[1], self._table[2]
        K = len(cfg)
        rows: list[np.ndarray | None] = [None] * len(state.jobs)
        new: dict[tuple[int, float | None, tuple[tuple[str, int], ...]], tuple[Any, list[int]]] = {}  # adaptive misses
        cache = self._cache
        plain = self.batch_cap == "application"  # (self.estimate(v) is v.estimate)
        key: tuple[int, float | None, tuple[tuple[str, int], ...]]
        for i, v in enumerate(state.jobs):
            su = v.scale_units
            if plain and not su and v.kind == "adaptive":  # (the common case, its key without the general steps)
                est = v.estimate
                key = (id(est), None, ())
                hit = cache.get(key)
                if hit is not None and hit[0] is est:
                    rows[i] = hit[1]
                    continue
            est = self.estimate(v)
            by_goodput = v.kind == "adaptive" or bool(su)  # sia-eval: a pipeline's batch is its own
            units = tuple(sorted(su.items()))
            key = (id(est), None if by_goodput else float(v.batch_size), units)
            hit = cache.get(key)
            if hit is not None and hit[0] is est:
                rows[i] = hit[1]
            elif by_goodput and not units:
                got = new.get(key)
                if got is None:
                    new[key] = (est, [i])
                else:
                    got[1].append(i)
            else:
                row = np.zeros(K)
                for t in cl.type_names:
                    if t not in est.gpu_types:
                        continue
                    sel = np.flatnonzero(cfg.type_index == cl.type_index(t))
                    n, r = cfg.n_nodes[sel], cfg.n_gpus[sel]
                    u = v.scale_unit(t)  # sia-eval: replicas are pipelines of u GPUs; other counts cannot run
                    if u > 1:
                        sel, n, r = sel[r % u == 0], n[r % u == 0], r[r % u == 0] // u
                    if by_goodput:
                        row[sel] = est.goodput(t, n, r).goodput
                    else:
                        row[sel] = est.throughput(t, n, r, float(v.batch_size))
                if len(cache) > 4096:
                    cache.clear()
                cache[key] = (est, row)
                rows[i] = row
        if new:
            if len(cache) + len(new) > 4096:
                cache.clear()
            mat = goodput_matrix([e for e, _ in new.values()], point_types, cfg.n_nodes, cfg.n_gpus)
            for m, (key, (est, idx)) in enumerate(new.items()):
                row = mat[m]
                cache[key] = (est, row)
                for i in idx:
                    rows[i] = row
        return np.array(rows) if rows else np.zeros((0, K))

    def problem(self, state: RoundState) -> SiaProblem:
        """The round's :class:`schedopt.sia.SiaProblem` (goodput from the jobs' estimates)."""
        return SiaProblem(state.cluster, self.jobs(state), self._rows(state), p=self.p, lam=self.lam,
                          max_gpus_per_job=self.max_gpus_per_job, build_cache=self._build)

    def decide(self, state: RoundState) -> Decision:
        prob = self.problem(state)
        kw: dict[str, Any] = {}
        if self.time_limit is not None:
            kw["time_limit"] = self.time_limit
        if self.mip_rel_gap is not None:
            kw["mip_rel_gap"] = self.mip_rel_gap
        sol = prob.solve(self.backend, **kw)
        r, model = sol.result, sol.model
        if r is None or model is None:  # a solve always holds both; an older SiaSolution form may not
            raise RuntimeError("the Sia round's solution holds no solver result or model")
        ans = Answer(termination=r.termination, objective_value=r.objective_or_nan, bound=r.bound,
                     backend=sol.backend, method="sia", timings=r.timings, result=r)
        ans.raise_for_status()
        alloc = sol.allocation
        return Decision(allocation=dict(zip(map(str, alloc), alloc.values())), answer=ans,
                        info={"columns": int(model.num_cols)})
