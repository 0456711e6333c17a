"""Plans as deltas (``since`` / ``plan_id`` / ``plan_delta`` of ``schedopt serve``, issue 38's overhead target):

* :func:`schedopt.live.plan.plan_delta` and :meth:`schedopt.live.Plan.updated` rebuild every round's plan of real
  replays (sia: half the jobs change a round; tiresias: the order changes; jobs arrive and finish) exactly, and
  :class:`~schedopt.live.plan.PlanDocuments` makes the same documents as ``Plan.to_dict``, reusing the entries of
  the jobs that did not change; a delta that does not fit the plan held is refused naming the field, never applied;
* a real service answers ``since`` naming the plan it answered (an empty delta) or the one before (the changes),
  and the whole plan for any other (unknown, too old, of another start of the process), whose rebuilt plan equals
  the whole plan it answers at ``GET /v1/plan``; bad ``since`` values are 400s naming ``since`` (and the fuzz of
  tests/test_serve.py covers them too).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schedopt.errors import InputError
from schedopt.live import ClusterState, Plan, ReplayExecutor, Session
from schedopt.live.client import ServiceInputError, ServiceSession
from schedopt.live.plan import PlanDocuments, plan_changes, plan_delta
from schedopt.serve.body import encode_json
from schedopt.sim import Workload, cluster_preset, load_workload
from schedopt.testing.serve import ServiceProcess, ServiceReplay

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")


def _plans(policy: str, jobs: int, rounds: int) -> list[Plan]:
    ex = ReplayExecutor(Session(cluster_preset("sia-64"), policy, round_duration=60.0),
                        Workload("prefix", load_workload("saturn/1").jobs[:jobs]))
    ex.run(rounds)
    return list(ex.plans)


@pytest.mark.parametrize("policy", ["sia", "tiresias"])
def test_deltas_rebuild_every_round_of_a_replay(policy: str) -> None:
    plans = _plans(policy, 40, 60)
    docs = PlanDocuments()
    made = [docs.document(p) for p in plans]
    assert made == [p.to_dict() for p in plans]  # the same documents as Plan.to_dict
    reused = changed = reordered = 0
    for k in range(1, len(plans)):
        old, new = made[k - 1], made[k]
        delta = plan_delta(old, new)
        back = Plan.from_dict(old).updated(delta)
        assert back == Plan.from_dict(new), f"round {k}"
        assert back.to_dict() == new
        # only the entries that changed travel; the others are the same dicts as the last plan's
        before = {d["job_id"]: d for d in old["jobs"]}
        for d in new["jobs"]:
            same = before.get(d["job_id"]) == d
            assert (d in delta["jobs"]) is not same
            reused += before.get(d["job_id"]) is d
            assert same == (before.get(d["job_id"]) is d)
        changed += len(delta["jobs"])
        reordered += delta["order"] is not None
        assert (delta["order"] is None) == ([d["job_id"] for d in new["jobs"]] == list(before))
        # from a plan to itself: nothing but its own fields
        assert plan_delta(new, new)["jobs"] == [] and plan_delta(new, new)["order"] is None
        # from the plans themselves (the service's route): the same entries, as objects, and the same order
        entries, order = plan_changes(plans[k - 1], plans[k])
        assert [p.to_dict() for p in entries] == delta["jobs"] and order == delta["order"]
        assert json.loads(encode_json({**plans[k].entries_document(entries), "order": order}, finite=True)) == {
            **{key: v for key, v in delta.items() if key != "jobs"}, "jobs": delta["jobs"]}
    assert reused > 0 and changed > 0 and reordered > 0  # the replay exercises all three


def test_a_delta_that_does_not_fit_is_refused() -> None:
    a, b = _plans("tiresias", 6, 3)[1:3]
    held = Plan.from_dict(a.to_dict())
    delta = plan_delta(a.to_dict(), b.to_dict())
    some = next(iter(b.jobs))
    for bad, field, value in (
            ({**delta, "order": [*b.jobs, "ghost"]}, "plan_delta.order", "ghost"),
            ({**delta, "order": [some, *b.jobs]}, "plan_delta.order", some),
            ({**delta, "jobs": [*delta["jobs"], {**b.jobs[some].to_dict(), "job_id": "stray"}]}, "plan_delta.jobs",
             "stray"),
            ({**delta, "jobs": [b.jobs[some].to_dict()] * 2}, "plan_delta.jobs", some)):
        with pytest.raises(InputError) as ei:
            held.updated(bad)
        assert (ei.value.field, ei.value.value) == (field, value)
    # against an empty plan (another plan than the one it was made from): the jobs it does not carry are unknown
    if delta["order"] is not None and len(delta["jobs"]) < len(b.jobs):
        with pytest.raises(InputError):
            Plan(0.0, 0, "tiresias", {}).updated(delta)


def test_the_service_answers_deltas_only_from_plans_it_holds(tmp_path: Path) -> None:
    """Through a real service (tiresias on sia-64, 12 jobs): a replay whose client asks for deltas gives the
    in-process plans; ``since`` naming the last plan: an empty delta; the one before: the last decision's changes;
    anything else (unknown, two plans back, the last plan of the process before a restart): the whole plan; a bad
    ``since``: 400 naming it."""
    wl = Workload("prefix", load_workload("saturn/1").jobs[:12])
    ref = ReplayExecutor(Session(cluster_preset("sia-64"), "tiresias", round_duration=60.0), wl)
    ref.run(25)
    init = tmp_path / "init.json"
    init.write_text(json.dumps({"schema": "schedopt.serve.init", "version": 1, "policy": "tiresias",
                                "cluster": ClusterState.from_cluster(cluster_preset("sia-64")).to_dict(),
                                "round_duration": 60.0}))
    sp = ServiceProcess(tmp_path, tmp_path / "state.json", init)
    with sp, sp.client() as c:
        remote = ServiceSession(c)
        ex = ServiceReplay(remote, wl, Session(cluster_preset("sia-64"), "tiresias", round_duration=60.0))
        ex.run(25)
        assert [p.to_dict()["jobs"] for p in ex.plans] == [p.to_dict()["jobs"] for p in ref.plans[:25]]
        answers = remote.answers
        assert answers[0]["plan"] is not None and answers[0]["plan_delta"] is None  # nothing held yet
        assert all(a["plan"] is None and a["plan_delta"]["since"] == b["plan_id"]
                   for a, b in zip(answers[1:], answers))
        assert sum(len(a["plan_delta"]["jobs"]) for a in answers[1:]) < sum(len(p.jobs) for p in ex.plans[1:]) / 2
        # the CPU of the events each request applied, beside the decision's: null exactly when none were applied
        assert any(a["applied"] for a in answers) and any(not a["applied"] for a in answers)
        assert all((a["events_cpu_seconds"] is None) == (a["applied"] == 0) for a in answers)
        assert all(a["events_cpu_seconds"] is None or 0 <= a["events_cpu_seconds"] < 5 for a in answers)
        assert all(a["cpu_seconds"] is not None and a["cpu_seconds"] >= 0 for a in answers)
        whole = c.plan()
        assert whole["plan_id"] == answers[-1]["plan_id"] and Plan.from_dict(whole["plan"]) == remote.plan
        now = answers[-1]["now"]
        same = c.decide(now, since=whole["plan_id"])  # repeated: the plan held, nothing changed
        assert same["repeated"] and same["plan"] is None
        assert same["plan_delta"]["jobs"] == [] and same["plan_delta"]["order"] is None
        back = c.decide(now, since=answers[-2]["plan_id"])  # the one before: the last decision's changes
        assert back["plan"] is None and ex.plans[-2].updated(back["plan_delta"]) == remote.plan
        for stale in (answers[-3]["plan_id"], answers[-1]["plan_id"] + 1, 0, 2**63 - 1):  # the whole plan
            got = c.decide(now, since=stale)
            assert got["plan_delta"] is None and Plan.from_dict(got["plan"]) == remote.plan, stale
        for bad in (-1, "1", 1.5, True, [1], 2**63):
            with pytest.raises(ServiceInputError) as ei:
                c.decide(now, since=bad)  # type: ignore[arg-type]
            assert ei.value.field == "since" and (ei.value.value == bad or bad in ([1], 2**63))
        last_id = answers[-1]["plan_id"]
        # a restart (SIGKILL, then from the state file): the same plan, named anew; the old name gets it whole
        assert sp.proc is not None
        port = sp.port
        sp.kill()
        sp.start(port)
        got = c.decide(now, since=last_id)
        assert got["plan_delta"] is None and got["plan_id"] != last_id
        assert Plan.from_dict(got["plan"]).jobs == remote.plan.jobs
