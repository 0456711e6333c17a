"""Running Gandiva on the engine: one simulation, the ablation, GPU-time accounting and the sweep's ``run_task``."""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ...errors import InputError
from ...sia import Cluster
from ..metrics import JobRecord, SimResult
from .policy import MECHANISMS, GandivaPolicy, Mechanisms
from .workload import CLUSTER_PRESETS, DEFAULT_CLUSTER, GandivaTrace, gandiva_preset, synthetic_trace

if TYPE_CHECKING:
    from ..engine import Observer

__all__ = ["POLICY_PARAMS", "VARIANTS", "ablation", "run_task", "share_packed_gpus", "simulate_gandiva"]

#: ``gandiva:<variant>`` -> mechanisms (``gandiva`` alone = ``gandiva:on``)
VARIANTS: dict[str, Mechanisms] = {
    "on": Mechanisms(),
    "off": Mechanisms.all_off(),
    **{f"no-{m.replace('_', '-')}": Mechanisms().without(m) for m in MECHANISMS},
    "exact": Mechanisms(packing="exact", migration="exact"),
}
#: GandivaPolicy parameters a task's ``policy_params`` may set
POLICY_PARAMS = ("suspend_resume_seconds", "migration_seconds", "idle_period", "fragmentation_penalty",
                 "priority_halflife_gpu_hours", "pack_utilization", "backend", "time_limit", "better_fit")


def share_packed_gpus(jobs: Sequence[JobRecord], shared: Iterable[tuple[float, float, str, str]]) -> tuple[JobRecord, ...]:
    """The job records with physical GPU time: while two jobs space-share a GPU (``shared``: round start, round
    end, job a, job b, for every round both ran packed) each is charged half of it, so the run's GPU-seconds sum
    to the time GPUs were held. A spell ends where either job finished; the rest of that round is one job's."""
    fin = {j.id: (math.inf if j.finish is None else j.finish) for j in jobs}
    spans: dict[str, list[tuple[float, float]]] = {}
    for t0, t1, a, b in shared:
        end = min(t1, fin.get(a, math.inf), fin.get(b, math.inf))
        if end > t0:
            spans.setdefault(a, []).append((t0, end))
            spans.setdefault(b, []).append((t0, end))
    out = []
    for j in jobs:
        sp = sorted(spans.get(j.id, ()))
        if not sp:
            out.append(j)
            continue
        segs: list[tuple[float, float, str, Any]] = []
        for s, e, t, g in j.segments:
            cuts = sorted({s, e, *(x for a, b in sp for x in (a, b) if s < x < e)})
            for x, y in itertools.pairwise(cuts):
                mid = 0.5 * (x + y)
                gg = g * 0.5 if any(a <= mid < b for a, b in sp) else g
                if segs and segs[-1][1] == x and segs[-1][2] == t and segs[-1][3] == gg:
                    segs[-1] = (segs[-1][0], y, t, gg)
                else:
                    segs.append((x, y, t, gg))
        out.append(dataclasses.replace(j, segments=tuple(segs)))
    return tuple(out)


def simulate_gandiva(trace: GandivaTrace, cluster: Cluster | None = None, mechanisms: Mechanisms | None = None,
                     *, round_seconds: float = 60.0, progress: bool | None = False, charge_policy_time: bool = False,
                     max_time: float | None = None, label: str = "", observer: Observer | None = None,
                     **policy_kw: Any) -> SimResult:
    """Run ``trace`` on ``cluster`` (default :func:`~schedopt.sim.gandiva.gandiva_preset` ``()``: 50 P100 + 50
    P40) under :class:`GandivaPolicy` with ``mechanisms`` (default: all on) on the :mod:`schedopt.sim` engine; 60 s
    rounds = Gandiva's time slice. The records count physical GPU time (:func:`share_packed_gpus`)."""
    from ..engine import simulate

    cl = cluster if cluster is not None else gandiva_preset()
    mech = mechanisms if mechanisms is not None else Mechanisms()
    pol = GandivaPolicy(trace.jobs, mech, trace.priorities, speeds=trace.speeds, **policy_kw)
    res = simulate(cl, trace.workload, pol, round_seconds=round_seconds, job_model=trace.job_model,
                   adaptive=False, progress=progress, charge_policy_time=charge_policy_time, max_time=max_time,
                   label=label or f"gandiva on {trace.workload.name}", observer=observer)
    meta = res.meta.replace(mechanisms={k: getattr(mech, k) for k in MECHANISMS}, counts=dict(pol.counts),
                            gpu_accounting="physical: a packed GPU's time is split equally between its two jobs")
    return SimResult(meta=meta, jobs=share_packed_gpus(res.jobs, pol.shared), rounds=res.rounds,
                     hopeless=res.hopeless)


def ablation(trace: GandivaTrace, cluster: Cluster | None = None, *, base: Mechanisms | None = None,
             **kw: Any) -> list[dict[str, Any]]:
    """Rows (configuration, average JCT, makespan, GPU-hours, counts, change versus all off) for: all on, each
    mechanism off in turn, all off."""
    on = base if base is not None else Mechanisms()
    configs = [("all on", on)] + [(f"no {n.replace('_', '-')}", on.without(n)) for n in MECHANISMS]
    configs.append(("all off", Mechanisms.all_off()))
    rows = []
    for label, mech in configs:
        res = simulate_gandiva(trace, cluster, mech, **kw)
        s = res.summary()
        rows.append({"config": label, "avg_jct_s": s["avg_jct_s"], "makespan_s": s["makespan_s"],
                     "gpu_hours": s["gpu_hours"], "finished": s["finished"], "jobs": s["jobs"],
                     **res.meta.details["counts"]})
    off = rows[-1]
    for r in rows:
        r["jct_vs_off_pct"] = 100.0 * (r["avg_jct_s"] / off["avg_jct_s"] - 1.0)
        r["makespan_vs_off_pct"] = 100.0 * (r["makespan_s"] / off["makespan_s"] - 1.0)
    return rows


def run_task(task: Any, observer: Observer | None = None) -> SimResult:
    """Run one :class:`schedopt.sim.sweep.SimTask` whose policy is ``gandiva`` or ``gandiva:<variant>``
    (:data:`VARIANTS`): ``cluster`` a name of :data:`~schedopt.sim.gandiva.CLUSTER_PRESETS` (None:
    ``gandiva-100``), ``workload`` ``gandiva/synthetic[:key=value...]`` drawn with ``seed``
    (:func:`~schedopt.sim.gandiva.parse_synthetic`), ``round_seconds`` None = 60, ``policy_params`` any of
    :data:`POLICY_PARAMS`; ``job_model`` must be None (Gandiva's jobs carry their own)."""
    head, _, variant = task.policy.partition(":")
    if head != "gandiva":
        raise InputError("policy", task.policy, "must be gandiva or gandiva:<variant>")
    key = variant or "on"
    if key not in VARIANTS:
        raise InputError("policy", task.policy, f"unknown Gandiva variant; have gandiva, "
                                                f"{', '.join('gandiva:' + v for v in VARIANTS)}")
    cname = task.cluster or DEFAULT_CLUSTER
    if cname not in CLUSTER_PRESETS:
        raise InputError("cluster", cname, f"unknown Gandiva cluster; have {', '.join(CLUSTER_PRESETS)}")
    if task.job_model is not None:
        raise InputError("job_model", task.job_model, "must be unset for gandiva (its jobs carry their own model)")
    params = dict(task.policy_params)
    bad = [k for k in params if k not in POLICY_PARAMS]
    if bad:
        raise InputError("policy_params", bad[0], f"not a Gandiva parameter; have {', '.join(POLICY_PARAMS)}")
    R = 60.0 if task.round_seconds is None else task.round_seconds
    cluster = gandiva_preset(cname)
    trace = synthetic_trace(task.workload, task.seed, cluster)
    res = simulate_gandiva(trace, cluster, VARIANTS[key], round_seconds=R,
                           charge_policy_time=task.charge_policy_time, max_time=task.max_time,
                           label=f"{task.policy} on {task.workload}", observer=observer, **params)
    meta = res.meta.replace(policy=task.policy, workload=task.workload, seed=task.seed, cluster_preset=cname,
                            policy_params=params)
    return SimResult(meta, res.jobs, res.rounds, res.hopeless)
