"""Issue 41: the engine hands a policy copies of what it keeps, checks the containers of a decision as it checks
their values, and names a policy given as a class."""

from __future__ import annotations

from typing import Any

import pytest
from sim_toy import TOY, TOY_CLUSTER

from schedopt.errors import InputError
from schedopt.sia import Config
from schedopt.sim import Decision, Workload, WorkloadJob, simulate, simulate_many
from schedopt.sim.policies.base import RoundState
from schedopt.sim.policies.fifo import FifoPolicy


def _toy() -> Workload:
    return Workload("toy", (WorkloadJob("A", 0.0, "short", 1, 8), WorkloadJob("B", 0.0, "long", 1, 8)))


class Vandal:
    """One GPU per job, which empties every job's slots in the previous placement it is handed (on the previous
    code this was the engine's own placement: B was restarted twice and finished at 290 s instead of 110 s)."""

    name = "vandal"

    def decide(self, state: RoundState) -> Decision:
        if state.placement is not None:
            for slots in state.placement.assignments.values():
                slots.clear()
        return Decision(allocation={j.id: Config(1, 1, "g") for j in state.jobs})


def test_a_policy_that_edits_its_previous_placement_changes_nothing() -> None:
    res = simulate(TOY_CLUSTER, _toy(), Vandal(), job_model=TOY)
    ref = simulate(TOY_CLUSTER, _toy(), Keep(), job_model=TOY)
    # the same jobs, at the same times, as a policy that only reads (A: 20 units at 1/s after a 30 s restart)
    assert [(j.id, j.finish) for j in res.jobs] == [(j.id, j.finish) for j in ref.jobs]
    assert res.jobs[0].finish == pytest.approx(50.0) and res.jobs[1].finish == pytest.approx(110.0)
    assert sum(j.restarts for j in res.jobs) == 0


class Keep(Vandal):
    def decide(self, state: RoundState) -> Decision:
        return Decision(allocation={j.id: Config(1, 1, "g") for j in state.jobs})


class Wrong:
    name = "wrong"

    def __init__(self, **fields: Any) -> None:
        self.fields = fields

    def decide(self, state: RoundState) -> Decision:
        ids = [j.id for j in state.jobs]
        f = {k: (v(ids) if callable(v) else v) for k, v in self.fields.items()}
        return Decision(**f)


@pytest.mark.parametrize("field, value, named", [
    ("nodes", lambda ids: [(i, {"g-0": 1}) for i in ids], "policy[wrong].nodes"),
    ("nodes", lambda ids: {i: [("g-0", 1)] for i in ids}, "policy[wrong].nodes[A]"),
    ("allocation", lambda ids: [Config(1, 1, "g")], "policy[wrong].allocation"),
    ("requests", lambda ids: ("A", 1), "policy[wrong].requests"),
    ("rate", lambda ids: [1.0], "policy[wrong].rate"),
    ("restart", lambda ids: 3.0, "policy[wrong].restart"),
    ("colocate", lambda ids: ["A"], "policy[wrong].colocate"),
])
def test_wrong_containers_name_the_policy_and_field(field: str, value: Any, named: str) -> None:
    with pytest.raises(InputError) as ei:
        simulate(TOY_CLUSTER, _toy(), Wrong(**{field: value}), job_model=TOY)
    assert ei.value.field == named


def test_a_policy_class_is_named() -> None:
    with pytest.raises(InputError, match="FifoPolicy.*is a class"):
        simulate(TOY_CLUSTER, _toy(), FifoPolicy, job_model=TOY)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="FifoPolicy.*is a class"):
        simulate_many([FifoPolicy], ["saturn/1"], workers=1, progress=False)  # type: ignore[list-item]
