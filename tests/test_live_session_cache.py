"""What the session keeps between rounds for its own per-round work (issue 38: sia at 2,048 GPUs), against a session
that keeps nothing: each job's estimate (``LiveJobState.fit``) and scale units, its last view, and what its plan
entry was made from. Both sessions run the same replay through the events that invalidate what is kept (progress
with new measurements and epochs, reported gradient statistics, a node down, drained and up, jobs finished, a restore
from the state file); their plans and state documents are equal round for round, and the cached one refits less."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_live_session_reuse import _burst, _doc

from schedopt.live import JobProgress, NodeDown, NodeDrained, NodeUp, Plan, ReplayExecutor, Session
from schedopt.live import session as session_module
from schedopt.live.jobstate import online_estimate
from schedopt.live.state import JobFinished
from schedopt.sim import cluster_preset


class _Forgetful(Session):
    """A session that forgets everything it keeps between rounds before each one."""

    def _round(self, now: float) -> Plan:
        self._views.clear()
        self._plan_inputs.clear()
        for j in [*self.jobs.values(), *self.pending]:
            j.fit = None
            j._units = None
        return super()._round(now)


def _state(s: Session) -> dict[str, Any]:
    """The state document without the pickled roles (the policy object with its own caches: two runs of one
    session differ there too) and the plan's timings."""
    d = {k: v for k, v in s.to_document().items() if k not in ("roles", "roles_sha256")}
    d["plan"] = None if s.plan is None else _doc(s.plan)
    return d


def _run(cls: type[Session], path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    s = cls(cluster_preset("sia-64"), "sia", state_path=str(path))
    ex = ReplayExecutor(s, _burst(96))
    plans: list[dict[str, Any]] = []
    states: list[dict[str, Any]] = []

    def rounds(k: int) -> None:
        for p in ex.run(k):
            plans.append(_doc(p))
            states.append(_state(ex.session))

    rounds(3)
    t = s.time or 0.0
    running = sorted(j for j, slots in s.where.items() if slots)
    s.apply(JobProgress(t, running[0], grad_sqr=0.5, grad_var=2e3))  # reported statistics: a new estimate
    busy = sorted({n for slots in s.where.values() for n, _ in slots})
    s.apply(NodeDown(t, busy[0]))
    rounds(2)
    s.apply(NodeDrained(s.time or 0.0, busy[1]))
    s.apply(JobFinished(s.time or 0.0, running[-1]))
    rounds(2)
    r = cls.restore(str(path))  # a new session from the file: nothing kept
    ex.session = r
    r.apply(NodeUp(r.time or 0.0, busy[0]))
    r.apply(NodeUp(r.time or 0.0, busy[1]))
    rounds(3)
    return plans, states


def test_kept_estimates_views_and_entries_give_the_plans_of_a_session_that_keeps_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fits = {"n": 0}
    real = session_module.fitted_estimate

    def counted(*a: Any) -> Any:
        fits["n"] += 1
        return real(*a)

    monkeypatch.setattr(session_module, "fitted_estimate", counted)
    with monkeypatch.context() as m:  # the reference: every estimate by its observations (online_estimate)
        m.setattr(session_module, "estimate_at_epoch",
                  lambda jm, app, obs, fitted, epoch: online_estimate(jm, app, obs, epoch))
        plans0, states0 = _run(_Forgetful, tmp_path / "forgetful.json")
    forgetful = fits["n"]
    fits["n"] = 0
    plans1, states1 = _run(Session, tmp_path / "kept.json")
    assert len(plans1) == len(plans0) == 10
    assert plans1 == plans0  # plan for plan
    assert states1 == states0  # and the state documents
    assert {a["action"] for p in plans1 for a in p["jobs"]} >= {"start", "keep", "preempt", "queue"}
    # the kept fits were used: 534 against 1,298 (both count the refits when measurements arrive)
    assert 0 < fits["n"] < 0.5 * forgetful
