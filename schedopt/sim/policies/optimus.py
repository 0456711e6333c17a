"""Optimus (EuroSys'18) as the Pollux artifact runs it: "Optimus+Oracle", greedy marginal-gain GPU allocation.

petuum/adaptdl@osdi21-artifact ``simulator/optimus.py`` (read, never copied), every round:

1. each job's remaining work: the optimizer steps at its submitted batch size from the start of its current epoch
   to completion (``get_iteration(target_batch, completion_epoch) - get_iteration(target_batch, epoch)``; the
   *oracle*: the application's own training curve);
2. in arrival order, every job gets one GPU while GPUs last;
3. GPUs are then added one at a time to the job with the largest marginal gain
   ``(step_time(n) - step_time(n + 1)) x remaining``, while a gain is positive and GPUs are left, up to the job's
   cap (``target_batch // min_local_bsz``; ncf: 1); ``step_time(n)``: the true step time at the fixed batch on
   ``n`` GPUs packed on the fewest nodes (the oracle throughput);
4. placement: jobs whose GPU count is unchanged keep their nodes; the others, fewest GPUs first, take GPUs from the
   node with the most free GPUs.

Optimus trains at the submitted batch size while its GPU count changes. The engine's adaptive jobs pick a
goodput-optimal batch instead, so the policy corrects each job's true rate with ``Decision.rate`` = rate at the
fixed batch / rate at the batch the engine picks (both from the job model at the job's current epoch). Where we
differ from the artifact (``formulations/sim_baselines.md``): the engine caps an adaptive job at
``2 x`` the most GPUs it has held (both published simulators' Pollux/Sia cap), so Optimus ramps 1, 2, 4, ... GPUs
where the artifact may jump; the rate correction is held over a round even when an epoch boundary inside it changes
the engine's batch.

**Heterogeneous clusters** (issue 41): Optimus is heterogeneity-unaware, and runs so, as the Sia artifact runs its
baselines: the greedy allocation sees one pool of all the cluster's GPUs and one step-time model per job, on its
*reference type* (the type it runs on now; a queued job: the type with the most GPUs, ties in cluster order); the
placement then puts each job on one GPU type (the engine's rule), its reference type when the GPUs are free there,
else the type with the most free GPUs; a count no single type can hold is cut to the most free GPUs of one type
(the rest stay idle this round). ``job_model`` None (default): ``pollux`` on a one-type cluster (the Pollux setup),
``sia-measured`` on a heterogeneous one (the Sia presets' job model). On one GPU type nothing changes.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from ...errors import InputError
from ...sia import Config
from ..jobs import JobModel, JobState, application
from ..jobs import job_model as get_job_model
from .base import Decision, JobView, RoundState

__all__ = ["OptimusPolicy"]


def _packed(n: int, per_node: int) -> dict[str, int]:
    out, k = {}, 0
    while n > 0:
        out[f"n{k}"] = min(per_node, n)
        n -= out[f"n{k}"]
        k += 1
    return out


class OptimusPolicy:
    """``optimus``: greedy marginal-gain allocation with oracle step times at the submitted batch size (see the
    module). ``job_model``: the job model the engine runs (its restart and local-batch caps give the true step
    times; default ``"pollux"``, the Pollux setup)."""

    name = "optimus"
    adaptive = True
    seeded = False  #: takes a seed like every policy, draws no random numbers (schedopt.sim.seeds)

    def __init__(self, job_model: str | JobModel | None = None, seed: int | None = None, **_: Any) -> None:
        self._jm = None if job_model is None else get_job_model(job_model)
        # pure functions of (application, batch, shape[, epoch]): kept for the simulation
        self._st: dict[tuple[Any, ...], float] = {}
        self._rf: dict[tuple[Any, ...], float] = {}

    @property
    def jm(self) -> JobModel:
        """The job model of the oracle (``pollux`` until a heterogeneous cluster says otherwise, when not given)."""
        return self._jm if self._jm is not None else get_job_model("pollux")

    def _resolve_model(self, cluster: Any) -> None:
        if self._jm is None:
            self._jm = get_job_model("pollux" if len(cluster.gpu_types) == 1 else "sia-measured")

    @staticmethod
    def reference_type(v: JobView, cluster: Any) -> Any:
        """The GPU type whose step times the heterogeneity-unaware allocation uses for ``v``: the one it runs on,
        else the cluster's type with the most GPUs (ties: cluster order)."""
        if v.current is not None:
            return cluster[v.current.gpu_type]
        return max(cluster.gpu_types, key=lambda t: (t.total_gpus, -cluster.type_names.index(t.name)))

    # ------------------------------------------------------------------ the oracle
    def _epoch(self, v: JobView) -> tuple[int, float]:
        app = application(v.application)
        done = float(v.progress) * app.target
        e = int(np.searchsorted(app.progress, done, side="right"))
        return min(e, app.epochs - 1), done

    def remaining(self, v: JobView) -> float:
        """Steps at the job's batch size from the start of its current epoch to completion."""
        app = application(v.application)
        e, _ = self._epoch(v)
        B = float(v.batch_size)
        scale = B / float(self.jm.truth(v.application).init_batch)
        total, prev = 0.0, float(app.progress[e - 1]) if e > 0 else 0.0
        for k in range(e, app.epochs):
            sqr, var = app.grad_stats(B, k)
            den = var / scale + sqr
            gain = (var + sqr) / den if den > 0 else 1.0
            total += (float(app.progress[k]) - prev) / max(gain, 1e-12)
            prev = float(app.progress[k])
        return max(total, 1.0)

    def _fixed(self, v: JobView, nodes: dict[str, int], gpu_type: str) -> JobState:
        n = sum(nodes.values())
        j = JobState(v.id, v.application, 0.0, n, int(v.batch_size), False, self.jm)
        j.epoch, _ = self._epoch(v)
        j.nodes, j.config = dict(nodes), Config(len(nodes), n, gpu_type)
        j.rebatch()
        return j

    def step_time(self, v: JobView, n: int, gpu_type: str, per_node: int) -> float:
        """True seconds per step at the job's batch on ``n`` GPUs packed on the fewest nodes."""
        key = (v.application, int(v.batch_size), n, gpu_type, per_node)
        if key not in self._st:
            j = self._fixed(v, _packed(n, per_node), gpu_type)
            p = self.jm.truth(v.application).params[gpu_type]
            self._st[key] = float(p.step_time(len(j.nodes), n, j.local_bsz, j.accum))
        return self._st[key]

    def rate_factor(self, v: JobView, nodes: dict[str, int], gpu_type: str) -> float:
        """True rate at the fixed batch / true rate at the batch the engine picks for an adaptive job."""
        key = (v.application, int(v.batch_size), tuple(sorted(nodes.values())), gpu_type, self._epoch(v)[0])
        if key not in self._rf:
            self._rf[key] = self._rate_factor(v, nodes, gpu_type)
        return self._rf[key]

    def _rate_factor(self, v: JobView, nodes: dict[str, int], gpu_type: str) -> float:
        fixed = self._fixed(v, nodes, gpu_type).rate()
        n = sum(nodes.values())
        a = JobState(v.id, v.application, 0.0, n, int(v.batch_size), True, self.jm)
        a.epoch = self._epoch(v)[0]
        a.nodes, a.config = dict(nodes), Config(len(nodes), n, gpu_type)
        a.rebatch()
        ada = a.rate()
        return fixed / ada if ada > 0 else 1.0

    # ------------------------------------------------------------------ one round
    def decide(self, state: RoundState) -> Decision:
        if not isinstance(state, RoundState):
            raise InputError("state", type(state).__name__, "must be a schedopt.sim.policies.RoundState")
        cl = state.cluster
        self._resolve_model(cl)
        ref = {v.id: self.reference_type(v, cl) for v in state.jobs}  # one type per job: heterogeneity-unaware
        jobs = list(state.jobs)
        left = int(cl.num_gpus)
        count: dict[str, int] = {}
        cap: dict[str, int] = {}
        rem: dict[str, float] = {}
        for v in jobs:
            if not v.adaptive:  # rigid jobs (ncf under adaptive policies): their own GPU count, never more
                cap[v.id] = int(v.requested_gpus)
            else:
                lo = self.jm.truth(v.application).local_bsz_limits[ref[v.id].name][0]
                cap[v.id] = max(1, min(int(v.max_gpus), int(v.batch_size) // int(lo)))
            rem[v.id] = self.remaining(v)
        gain: dict[str, float] = {}
        st: dict[tuple[str, int], float] = {}

        def stime(v: JobView, n: int) -> float:
            if (v.id, n) not in st:
                rt = ref[v.id]
                st[v.id, n] = self.step_time(v, n, rt.name, rt.gpus_per_node)
            return st[v.id, n]

        def marginal(v: JobView) -> float:
            n = count[v.id]
            if not v.adaptive or n + 1 > cap[v.id] or left < 1:
                return 0.0
            return (stime(v, n) - stime(v, n + 1)) * rem[v.id]

        for v in jobs:  # one GPU each, in arrival order (rigid jobs their count)
            need = cap[v.id] if not v.adaptive else 1
            if need > left:
                count[v.id], gain[v.id] = 0, 0.0
                continue
            count[v.id] = need
            left -= need
        views = {v.id: v for v in jobs}
        for v in jobs:
            gain[v.id] = marginal(v) if count[v.id] else 0.0
        while left > 0 and gain and max(gain.values()) > 0:
            k = max(gain, key=lambda x: gain[x])
            count[k] += 1
            left -= 1
            gain[k] = marginal(views[k])
        nodes = self.place(state, count, {j: r.name for j, r in ref.items()})
        type_of = {n: tp.name for tp in cl.gpu_types for n in cl.node_ids(tp.name)}
        rate = {}
        for jid, m in nodes.items():
            v = views[jid]
            if v.adaptive:
                rate[jid] = self.rate_factor(v, m, type_of[next(iter(m))])
        return Decision(nodes=nodes, rate=rate, info={"gpus": dict(count)})

    @staticmethod
    def place(state: RoundState, count: dict[str, int],
              prefer: dict[str, str] | None = None) -> dict[str, dict[str, int]]:
        """Unchanged counts keep their nodes; the others, fewest GPUs first, on one GPU type (``prefer[job]`` when
        its free GPUs hold the count, else the type with the most free GPUs; a count no type holds is cut to that
        type's free GPUs), from the node with the most free GPUs of that type."""
        cl = state.cluster
        order = [n for tp in cl.gpu_types for n in cl.node_ids(tp.name)]
        type_of = {n: tp.name for tp in cl.gpu_types for n in cl.node_ids(tp.name)}
        free = Counter({n: cl.node_gpus(n) for n in order})  # each node's own GPUs (AdaptDL's Optimus: node.resources)
        out: dict[str, dict[str, int]] = {}
        views = {v.id: v for v in state.jobs}
        for jid, n in count.items():
            cur = dict(views[jid].current_nodes)
            if n > 0 and sum(cur.values()) == n:
                out[jid] = cur
                free.subtract(cur)
        for jid in sorted((j for j in count if count[j] > 0 and j not in out), key=lambda j: count[j]):
            room = {tp: sum(free[n] for n in order if type_of[n] == tp) for tp in cl.type_names}
            want = (prefer or {}).get(jid)
            if want in room and room[want] >= count[jid]:
                tp = want
            else:
                tp = max(cl.type_names, key=lambda x: (room[x] >= count[jid], room[x], -cl.type_names.index(x)))
            if not views[jid].adaptive and room[tp] < count[jid]:
                continue  # a rigid job runs at its count on one type, or waits
            need = min(count[jid], room[tp])  # unaware counts may not fit one type: the rest stay idle
            got: dict[str, int] = {}
            while need > 0:
                node, avail = max(((n, free[n]) for n in order if type_of[n] == tp),
                                  key=lambda kv: (kv[1], -order.index(kv[0])))
                if avail <= 0:  # cannot happen: need is at most the type's free GPUs
                    raise InputError(f"optimus.nodes[{jid}]", count[jid], "does not fit the free GPUs")
                take = min(avail, need)
                got[node] = got.get(node, 0) + take
                free[node] -= take
                need -= take
            if got:
                out[jid] = got
        return out
