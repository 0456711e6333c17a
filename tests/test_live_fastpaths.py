"""The decision path's kept objects (issue 38: per-job Python at 2,048 GPUs) against what they stand for: a live
session's views (kept per job, the round's fields set anew) equal the engine's ``job_view`` built from scratch, and
Sia's jobs (kept per job, the round's fields set anew) equal :class:`schedopt.sia.Job` built from scratch, field
by field, round after round of a replay in which jobs start, move, finish and report measurements; bad values in
the round's fields still raise as :class:`Job` raises."""

from __future__ import annotations

import math
from typing import Any

import pytest

from schedopt.errors import InputError
from schedopt.live import JobPlan, NodeDown, NodeUp, ReplayExecutor, Session
from schedopt.sia import Config, Job
from schedopt.sim import Workload, WorkloadJob, cluster_preset, load_workload, make_policy
from schedopt.sim.engine import job_view
from schedopt.sim.policies.base import RoundState


def _workload(n: int) -> Workload:
    base = load_workload("saturn/1").jobs
    return Workload(f"fast-{n}", tuple(WorkloadJob(f"{b.name}-{k}", 30.0 * k, b.application, b.num_replicas,
                                                   b.batch_size) for k, b in ((k, base[k % len(base)])
                                                                              for k in range(n))))


def _jobs_from_scratch(policy: Any, state: RoundState, pinned: dict[str, bool]) -> list[Job]:
    """SiaPolicy.jobs as it was: one Job built and checked per view."""
    out = []
    for v in state.jobs:
        common: dict[str, Any] = {"current": v.current, "age_s": v.age, "restarts": v.restarts,
                                  "restart_cost_s": policy.restart_penalty(v.application),
                                  "preemptible": not pinned[v.id]}
        if v.adaptive:
            unit = math.gcd(*v.scale_units.values()) if v.scale_units else 1
            out.append(Job(id=v.id, kind=v.kind or "adaptive", max_gpus=v.max_gpus, max_profiled_gpus=v.max_gpus,
                           scale_unit=unit, batch_size=v.batch_size if v.kind == "strong" else None, **common))
        else:
            out.append(Job(id=v.id, kind="rigid", rigid_gpus=v.requested_gpus, batch_size=v.batch_size, **common))
    return out


def test_kept_views_and_jobs_equal_the_ones_built_from_scratch(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = make_policy("sia")
    s = Session(cluster_preset("sia-64"), policy)
    ex = ReplayExecutor(s, _workload(48))
    checked = {"views": 0, "kept": 0, "jobs": 0, "moved": 0}
    real_views, real_jobs = s._views_of, type(policy).jobs

    def views_of(js: Any, t: float) -> Any:  # (Session.view and the round's views: one pass over the jobs)
        js = list(js)
        kept = [j.id in s._views for j in js]  # a view of the job from an earlier round: the kept path
        got = real_views(js, t)
        for j, v, k in zip(js, got, kept, strict=True):
            want = job_view(j, t, s._estimate(j), min(j.frac, 1.0 - 1e-12))
            assert v == want and dict(v.current_nodes) == dict(j.nodes)
            checked["views"] += 1
            checked["kept"] += k and v.current is not None
        return got

    def jobs(self: Any, state: RoundState) -> list[Job]:
        got = real_jobs(self, state)
        pinned = {j.id: not j.preemptible for j in got}
        assert got == _jobs_from_scratch(self, state, pinned)
        assert [type(j.age_s) for j in got] == [float] * len(got)
        checked["jobs"] += len(got)
        checked["moved"] += sum(1 for j in got if j.current is not None)
        return got

    monkeypatch.setattr(s, "_views_of", views_of)
    monkeypatch.setattr(type(policy), "jobs", jobs)
    ex.run(40)
    assert checked["views"] > 600 and checked["kept"] > 500 and checked["moved"] > 500


def test_kept_jobs_still_check_the_rounds_fields() -> None:
    """A kept job's round fields are checked as Job checks them (a NaN age, a negative restart count, a current
    configuration that is no Config raise; an int age becomes a float)."""
    from schedopt.sim.policies.sia import _with_round

    job = Job(id="a", max_gpus=4, max_profiled_gpus=4, age_s=1.0)
    c = Config(1, 2, "t4")
    assert _with_round(job, c, 7, 2, False) == Job(id="a", max_gpus=4, max_profiled_gpus=4, age_s=7.0, restarts=2,
                                                   current=c, preemptible=False)
    with pytest.raises(InputError, match="age_s"):
        _with_round(job, None, math.nan, 0, True)
    with pytest.raises(InputError, match="restarts"):
        _with_round(job, None, 1.0, -1, True)
    with pytest.raises(InputError, match="current"):
        _with_round(job, "1x2xt4", 1.0, 0, True)


def test_kept_node_maps_equal_the_ones_made_from_the_placement() -> None:
    """Session._sync_nodes remakes a job's node map only when its slots or its map are other objects: every
    admitted job's map equals the one made from its slots, round after round, across nodes going down (jobs lose
    their GPUs) and coming back (a new layout)."""
    s = Session(cluster_preset("sia-64"), "sia")
    base = _workload(160).jobs  # all submitted at once: more jobs than GPUs (some queued, some preempted)
    ex = ReplayExecutor(s, Workload("burst", tuple(WorkloadJob(b.name, 0.0, b.application, b.num_replicas,
                                                               b.batch_size) for b in base)))
    real = s._sync_nodes
    seen = {"checked": 0, "made": 0, "running": 0}

    def sync(lay: Any) -> None:
        before = {j.id: j.nodes for j in s.jobs.values()}
        real(lay)
        for j in s.jobs.values():
            slots = s.where.get(j.id)
            assert j.nodes == ({} if not slots else {n: len(g) for n, g in lay.to_policy(slots)})
            seen["checked"] += 1
            seen["made"] += j.nodes is not before[j.id]
            seen["running"] += bool(slots)

    s._sync_nodes = sync  # type: ignore[method-assign]
    plans = ex.run(6)
    busy = sorted({n for slots in s.where.values() for n, _ in slots})
    assert busy
    s.apply(NodeDown(s.time or 0.0, busy[0]))
    plans += ex.run(4)
    s.apply(NodeUp(s.time or 0.0, busy[0]))
    plans += ex.run(6)
    idle = [jp for p in plans for jp in p.jobs.values() if not jp.placement]  # (JobPlan filled at once)
    assert idle and all(vars(jp) == vars(JobPlan(jp.job_id, jp.action, {})) for jp in idle)
    assert seen["running"] > 100 and 0 < seen["made"] < seen["checked"] - 50  # (kept maps: most running jobs)
