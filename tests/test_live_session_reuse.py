"""What the session keeps between rounds, against what it stands for (issue 38: sia at 2,048 GPUs under 10 ms of
service overhead): a plan entry equal to the last plan's is that object (reused), and the plans are the ones made
with fresh objects, document for document; :func:`~schedopt.live.plan.plan_changes` by identity finds what the
full comparison finds; the summary and the layout, kept until the placement or the cluster changes, equal the ones
of a session restored from the document (nothing kept), across jobs finishing and nodes going down, drained and
back up."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from schedopt.live import NodeDown, NodeDrained, NodeUp, Plan, ReplayExecutor, Session
from schedopt.live import session as session_module
from schedopt.live.plan import mark_reused, plan_changes
from schedopt.live.state import JobFinished
from schedopt.sim import Workload, WorkloadJob, cluster_preset, load_workload


def _burst(n: int) -> Workload:
    """n jobs of saturn/1, all at t = 0: more jobs than GPUs (started, queued, preempted, moved)."""
    base = load_workload("saturn/1").jobs
    return Workload("burst", tuple(WorkloadJob(f"{b.name}-{k}", 0.0, b.application, b.num_replicas, b.batch_size)
                                   for k, b in ((k, base[k % len(base)]) for k in range(n))))


def _doc(p: Plan) -> dict[str, Any]:
    return {k: v for k, v in p.to_dict().items() if k not in ("policy_seconds", "policy_cpu_seconds")}


def _run(check: bool) -> list[Plan]:
    """sia on sia-64 with 120 jobs at once, 14 rounds with a node down, drained, up, and a job finished between
    them; ``check``: each round, the summary and the layout against a session restored from the document."""
    s = Session(cluster_preset("sia-64"), "sia")
    ex = ReplayExecutor(s, _burst(120))
    plans: list[Plan] = []

    def rounds(k: int) -> None:
        for _ in range(k):
            plans.extend(ex.run(1))
            if check:
                fresh = Session.from_document(s.to_document())
                assert s.summary() == fresh.summary()
                assert s.layout() == fresh.layout()

    rounds(4)
    busy = sorted({n for slots in s.where.values() for n, _ in slots})
    t = s.time or 0.0
    s.apply(NodeDown(t, busy[0]))  # its jobs lose their placement in place (the kept summary must not stay)
    if check:
        assert s.summary() == Session.from_document(s.to_document()).summary()
    rounds(3)
    s.apply(NodeDrained(s.time or 0.0, busy[1]))
    rounds(3)
    running = next(j for j, slots in s.where.items() if slots)
    s.apply(JobFinished(s.time or 0.0, running))
    if check:
        assert s.summary() == Session.from_document(s.to_document()).summary()
    s.apply(NodeUp(s.time or 0.0, busy[0]))
    s.apply(NodeUp(s.time or 0.0, busy[1]))
    rounds(4)
    return plans


def test_reused_entries_give_the_plans_of_fresh_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as m:  # the reference: every entry a new object, as before the reuse
        m.setattr(session_module, "_same_plan", lambda a, b: False)
        m.setattr(session_module, "_KEEP_ENTRIES", False)
        m.setattr(session_module, "mark_reused", lambda *a: None)  # (nothing reused: no plan so marked)
        fresh = _run(check=False)
    kept = _run(check=True)
    assert len(kept) == len(fresh) == 14
    assert [_doc(p) for p in kept] == [_doc(p) for p in fresh]  # document for document
    reused = 0
    for (a, b), (fa, fb) in zip(itertools.pairwise(kept), itertools.pairwise(fresh)):
        assert not any(fa.jobs.get(j) is p for j, p in fb.jobs.items())  # the reference made new objects
        for j, p in b.jobs.items():  # reused exactly when equal to the last plan's entry
            q = a.jobs.get(j)
            assert (q is p) == (q is not None and vars(q) == vars(p)), j
            reused += q is p
        # plan_changes by identity (the session's marked plans) = the full comparison (copies, no mark)
        got, order = plan_changes(a, b)
        want, want_order = plan_changes(Plan.from_dict(a.to_dict()), Plan.from_dict(b.to_dict()))
        assert [p.to_dict() for p in got] == [p.to_dict() for p in want] and order == want_order
        again = Plan(b.time, b.round_index, b.policy, b.jobs)  # marked without the list: by identity, entry by entry
        mark_reused(again, a)
        assert plan_changes(a, again) == (got, order)
        assert [p.to_dict() for p in got] == [p.to_dict() for p in plan_changes(fa, fb)[0]]
    assert reused > 500 and sum(len(p.jobs) for p in kept) - reused > 300  # both kinds of entry, many


def test_the_state_document_is_written_as_before() -> None:
    """encode_document (no check for circular references) writes the session's document byte for byte as
    json.dumps with the check; a NaN is still refused (ValueError), a container inside itself too; the jobs' fields
    in the document are their attributes."""
    import json
    import math

    from schedopt.live.persist import encode_document
    from schedopt.live.session import _JOB_FIELDS

    s = Session(cluster_preset("sia-64"), "sia")
    ReplayExecutor(s, _burst(80)).run(3)
    doc = s.to_document()
    assert encode_document(doc) == json.dumps(doc, allow_nan=False, separators=(",", ":"))
    assert json.loads(encode_document(doc)) == json.loads(json.dumps(doc))
    jobs = [*s.jobs.values(), *s.pending]
    assert len(doc["jobs"]) == len(jobs) == 80
    assert all({k: d[k] for k in _JOB_FIELDS} == {k: getattr(j, k) for k in _JOB_FIELDS}
               for d, j in zip(doc["jobs"], jobs))
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError, match="not JSON compliant"):
            encode_document({**doc, "time": bad})
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises((ValueError, RecursionError)):
        encode_document({"a": loop})


def test_the_largest_gpu_type_is_counted_again_when_the_cluster_changes() -> None:
    """A rigid job asking more healthy GPUs than any GPU type has is refused; the count (kept per cluster state)
    follows a node's GPUs failing and coming back."""
    from schedopt.errors import InputError
    from schedopt.live import ClusterState, JobSubmitted, LiveJob, NodeState, NodeUpdated

    s = Session(ClusterState((NodeState("a", "t4", 8), NodeState("b", "t4", 8))), "tiresias")
    s.apply(JobSubmitted(0.0, LiveJob("j1", "cifar10", 0.0, requested_gpus=16, kind="rigid")))
    s.apply(NodeUpdated(1.0, NodeState("b", "t4", 8, failed_gpus=(3,))))
    with pytest.raises(InputError) as ei:
        s.apply(JobSubmitted(1.0, LiveJob("j2", "cifar10", 1.0, requested_gpus=16, kind="rigid")))
    assert (ei.value.field, ei.value.value) == ("job[j2].requested_gpus", 16) and "largest: 15" in ei.value.message
    s.apply(NodeUpdated(2.0, NodeState("b", "t4", 8)))
    s.apply(JobSubmitted(2.0, LiveJob("j2", "cifar10", 2.0, requested_gpus=16, kind="rigid")))
    assert [j.id for j in s.pending] == ["j1", "j2"]


def test_measurements_reported_again_keep_the_fit_and_new_ones_refit() -> None:
    """A job reporting the measurements it reported before (as every round) keeps its observations (no refit); a
    changed value, a new configuration or a sync time of -0.0 after 0.0 is taken in and refitted."""
    from schedopt.live import ClusterState, JobProgress, JobSubmitted, LiveJob, Measurement, NodeState

    def session() -> Session:
        s = Session(ClusterState((NodeState("a", "t4", 8),)), "sia")
        s.apply(JobSubmitted(0.0, LiveJob("j", "cifar10", 0.0)))
        return s

    m1, m2 = Measurement("t4", 1, 1, 64, 0.1, 0.0), Measurement("t4", 1, 2, 64, 0.12, 0.01)
    reports = [(m1, m2), (m1, m2), (Measurement("t4", 1, 1, 64, 0.11, 0.0), m2), (m1, m2),
               (Measurement("t4", 1, 1, 64, 0.1, -0.0), m2), (m1, Measurement("t4", 1, 4, 64, 0.2, 0.02))]
    s = session()
    j = s.pending[0]
    refits = []
    for k, ms in enumerate(reports):
        before = j.observations
        s.apply(JobProgress(1.0 + k, "j", 0.01 * k, 0, ms))
        refits.append(j.observations is not before)
        assert j.observations == tuple(sorted(j.measured.items()))
        assert [str(j.measured[m.key][1]) for m in ms] == [str(m.sync_time) for m in ms]
    assert refits == [True, False, True, True, True, True] and j.max_profiled == 4


def test_a_job_id_is_taken_once_whatever_holds_the_job() -> None:
    """A submission with the id of a pending job (kept in a set while pending is only appended to), an admitted
    one, a closed one, or a pending one of a restored session is refused naming job.id; other ids go in."""
    from schedopt.errors import InputError
    from schedopt.live import ClusterState, JobSubmitted, LiveJob, NodeState

    def submit(s: Session, jid: str, t: float = 0.0) -> None:
        s.apply(JobSubmitted(t, LiveJob(jid, "cifar10", t)))

    def refused(s: Session, jid: str, t: float = 0.0) -> None:
        with pytest.raises(InputError) as ei:
            submit(s, jid, t)
        assert (ei.value.field, ei.value.value) == ("job.id", jid)

    s = Session(ClusterState((NodeState("a", "t4", 4),)), "tiresias")
    for k in range(5):
        submit(s, f"j{k}")
    refused(s, "j3")
    s.decide(60.0)  # admitted: pending is another list now
    submit(s, "late", 61.0)
    refused(s, "j0", 61.0)
    refused(s, "late", 61.0)
    s.apply(JobFinished(62.0, "j1"))
    refused(s, "j1", 62.0)
    r = Session.from_document(s.to_document())
    refused(r, "late", 62.0)
    submit(r, "new", 62.0)
    assert [j.id for j in r.pending] == ["late", "new"]
