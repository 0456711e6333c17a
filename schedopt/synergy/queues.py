"""The queue orders of the published Synergy scheduler (FIFO, SRTF, LAS, FTF, and Tetris and DRF, which in the
published code are orders too), and one round of Synergy as a simulator calls it.

* :func:`order_jobs` -- the jobs in a policy's order (a stable sort on the published keys, vectorised).
* :func:`allocate_round` -- order, then allocate (TUNE by default) -- the per-round call of a simulator.

The published schedulers sort every job by ``(-priority, key, arrival)`` and walk them in that order; a job not
run for :data:`STARVATION_SECONDS` gets priority 1 (``job_priority = 1`` in every published policy).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from .base import ideal_option, largest_server, prepare
from .methods import synergy_opt
from .spec import Server, SynergyAllocation, SynergyJob, runnable, validate
from .tune import proportional, synergy_greedy, synergy_tune

__all__ = [
    "QUEUE_POLICIES",
    "ROUND_METHODS",
    "STARVATION_SECONDS",
    "JobQueueInfo",
    "QueueState",
    "allocate_round",
    "order_jobs",
]

#: the published policies' names, lower case
QUEUE_POLICIES = ("fifo", "srtf", "las", "ftf", "tetris", "drf")
#: the allocation methods one round can use
ROUND_METHODS = ("tune", "greedy", "proportional", "opt")
#: a job not run for this long gets priority 1 (the published 1000 hours)
STARVATION_SECONDS = 1000.0 * 3600.0


@dataclass(frozen=True)
class JobQueueInfo:
    """What a queue order reads of one job (seconds throughout).

    ``attained_service``: seconds it has run (LAS multiplies by its GPUs, as the published
    ``get_attained_service_time``); ``remaining`` / ``total``: seconds of work left / in all at the GPU-proportional
    share (the published ``remaining_duration(fair=True)`` / ``ideal_duration``); ``speedup``: its throughput at its
    demand over the share's (SRTF, FTF and Tetris divide ``remaining`` by it when ``QueueState.use_speedup``, as the
    published TUNE and GREEDY runs do); ``last_run``: when it last ran (None: never, then its arrival counts).
    """

    arrival: float
    attained_service: float = 0.0
    remaining: float = 0.0
    total: float = math.nan
    speedup: float = 1.0
    priority: int = 0
    last_run: float | None = None


@dataclass(frozen=True)
class QueueState:
    """The round a queue order is computed for: the time and each job's :class:`JobQueueInfo` by job id."""

    time: float = 0.0
    info: Mapping[str, JobQueueInfo] = field(default_factory=dict)
    use_speedup: bool = False


def _f(v: float, path: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or math.isnan(float(v)):
        raise InputError(path, v, "must be a number")
    return float(v)


def order_jobs(
    jobs: Sequence[SynergyJob],
    policy: str,
    state: QueueState | None = None,
    *,
    servers: Sequence[Server] | None = None,
) -> list[SynergyJob]:
    """``jobs`` in the order the published ``policy`` walks them (a new list; ties keep the input order).

    Keys (after ``-priority``, before ``arrival``), as in the published schedulers:

    * ``fifo``: none (arrival only);
    * ``srtf``: remaining seconds (``/ speedup`` when ``state.use_speedup``);
    * ``las``: attained service x GPUs;
    * ``ftf``: finish-time fairness ``(time - arrival + remaining) / total``;
    * ``tetris``: remaining seconds x the job's demand summed over GPUs, CPUs and GB, each as a share of the
      cluster's (``servers`` required; the demand is the best-case point TUNE asks for);
    * ``drf``: the dominant share of that demand (``servers`` required).

    A job without an entry in ``state.info`` counts as arrived at 0 with nothing run (FIFO then keeps the input
    order). Priority is ``max(info.priority, 1 if not run for STARVATION_SECONDS)``.
    """
    if policy not in QUEUE_POLICIES:
        raise InputError("policy", policy, f"must be one of {QUEUE_POLICIES}")
    st = state if state is not None else QueueState()
    if not isinstance(st, QueueState):
        raise InputError("state", type(st).__name__, "must be a QueueState")
    n = len(jobs)
    if n == 0:
        return []
    now = _f(st.time, "state.time")
    infos = [st.info.get(j.id) or JobQueueInfo(arrival=0.0) for j in jobs]
    arrival = np.array([_f(i.arrival, f"state.info[{j.id}].arrival") for i, j in zip(infos, jobs)])
    last = np.array([arrival[k] if i.last_run is None else _f(i.last_run, f"state.info[{j.id}].last_run") for k, (i, j) in enumerate(zip(infos, jobs))])
    prio = np.array([max(int(i.priority), 1 if now - lr > STARVATION_SECONDS else 0) for i, lr in zip(infos, last)])
    g = np.array([j.gpus for j in jobs], dtype=np.float64)
    speed = np.array([i.speedup for i in infos], dtype=np.float64) if st.use_speedup else np.ones(n)
    if (speed <= 0).any():
        k = int(np.flatnonzero(speed <= 0)[0])
        raise InputError(f"state.info[{jobs[k].id}].speedup", float(speed[k]), "must be positive")
    remaining = np.array([i.remaining for i in infos], dtype=np.float64) / speed
    if policy == "fifo":
        key = np.zeros(n)
    elif policy == "srtf":
        key = remaining
    elif policy == "las":
        key = np.array([i.attained_service for i in infos], dtype=np.float64) * g
    elif policy == "ftf":
        total = np.array([i.total for i in infos], dtype=np.float64)
        if not (np.isfinite(total) & (total > 0)).all():
            k = int(np.flatnonzero(~(np.isfinite(total) & (total > 0)))[0])
            raise InputError(f"state.info[{jobs[k].id}].total", float(total[k]), "FTF needs a positive total duration")
        key = (now - arrival + remaining) / total
    else:
        if servers is None:
            raise InputError("servers", None, f"the {policy} order needs the cluster (servers=...)")
        key = _demand_key(jobs, servers, policy, remaining)
    order = np.lexsort((np.arange(n), arrival, key, -prio))
    return [jobs[int(k)] for k in order]


def _demand_key(jobs: Sequence[SynergyJob], servers: Sequence[Server], policy: str, remaining: np.ndarray) -> np.ndarray:
    """Tetris's remaining-weighted demand or DRF's dominant share, from each job's best-case demand."""
    _, _, opts = prepare(servers, jobs, all_jobs=True)
    g = np.array([j.gpus for j in jobs], dtype=np.float64)
    big = largest_server(servers)
    ideal = np.array([ideal_option(opts, r, int(g[r]), servers, 0.0, jobs[r], big) for r in range(len(jobs))], dtype=np.int64)
    tot = np.array([sum(s.gpus for s in servers), sum(s.cpus for s in servers), sum(s.mem_gb for s in servers)], dtype=np.float64)
    share = np.stack([g, g * opts.cpu[ideal], g * opts.mem[ideal]], axis=1) / tot[None, :]
    return share.sum(axis=1) * remaining if policy == "tetris" else share.max(axis=1)


def allocate_round(
    servers: Sequence[Server],
    jobs: Sequence[SynergyJob],
    *,
    policy: str = "fifo",
    method: str = "tune",
    state: QueueState | None = None,
    weighted: bool = False,
    promote: bool = True,
) -> SynergyAllocation:
    """One scheduling round: ``jobs`` ordered by ``policy`` (:func:`order_jobs`), then allocated by ``method``
    (``tune`` -- queue order, the default; ``greedy``; ``proportional``; ``opt``). As in the published LAS with
    TUNE, ``policy="las"`` walks the runnable jobs largest-GPU-first. ``per_job`` of the answer follows the
    policy order. Cost: the ordering and the greedy pass are O(jobs x options) numpy work plus one Python step per
    job (no model is built unless ``method="opt"``)."""
    if method not in ROUND_METHODS:
        raise InputError("method", method, f"must be one of {ROUND_METHODS}")
    validate(servers, jobs)
    ordered = order_jobs(jobs, policy, state, servers=servers)
    if policy == "las" and method == "tune":
        mask = runnable(servers, ordered)
        run = [j for j, k in zip(ordered, mask) if k]
        run = [run[int(k)] for k in np.argsort([-j.gpus for j in run], kind="stable")]
        ordered = run + [j for j, k in zip(ordered, mask) if not k]
    if method == "tune":
        return synergy_tune(servers, ordered, weighted=weighted, promote=promote)
    if method == "greedy":
        return synergy_greedy(servers, ordered, weighted=weighted)
    if method == "proportional":
        return proportional(servers, ordered, weighted=weighted)
    return synergy_opt(servers, ordered, weighted=weighted)
