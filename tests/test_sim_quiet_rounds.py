"""Quiet rounds (issue 42 item 2): a policy's ``stable_until`` lets the engine reuse its last decision without asking
until a job arrives or finishes; the records are those of a run that asks the policy every round."""

from __future__ import annotations

import math

import pytest

from schedopt import sim
from schedopt.sim.policies.base import Decision, RoundState
from schedopt.sim.records import mask_wall_clock
from schedopt.traces.named import shipped_trace


class Asked:
    """``policy`` asked every round: its ``decide`` only (no ``stable_until``), counting the calls."""

    def __init__(self, policy: object) -> None:
        self.inner, self.name, self.adaptive, self.calls = policy, policy.name, False, 0  # type: ignore[attr-defined]

    def decide(self, state: RoundState) -> Decision:
        self.calls += 1
        return self.inner.decide(state)  # type: ignore[attr-defined, no-any-return]


class Counted(Asked):
    """``policy`` with its ``stable_until``, counting the ``decide`` calls."""

    def stable_until(self, state: RoundState, decision: Decision) -> float:
        return float(self.inner.stable_until(state, decision))  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def workload() -> sim.Workload:
    # 40 jobs in 2 hours at twice the load of sia-64: queues, demotions and preemptions under Tiresias
    wl = sim.generate_workload(shipped_trace("philly"), jobs=48, load=2.0, window_h=2, seed=3)
    return sim.Workload(wl.name, tuple(w for w in wl.jobs if w.num_replicas <= 16))  # each fits a GPU type


@pytest.mark.parametrize("spec", ["fifo", "fifo:backfill=true", "tiresias:threshold=3600"])
def test_quiet_rounds_give_the_records_of_asking_every_round(workload: sim.Workload, spec: str) -> None:
    cl = sim.cluster_preset("sia-64")
    name, _, opt = spec.partition(":")
    k, _, v = opt.partition("=")
    make = lambda: sim.get_policy(name, **({k: v} if k else {}))  # noqa: E731
    every, quiet = Asked(make()), Counted(make())
    a = sim.simulate(cl, workload, every, job_model="sia")  # type: ignore[arg-type]
    b = sim.simulate(cl, workload, quiet, job_model="sia")  # type: ignore[arg-type]
    assert mask_wall_clock(a.to_jsonl()) == mask_wall_clock(b.to_jsonl())
    assert every.calls == len(a.rounds) and quiet.calls < every.calls / 2  # most rounds were quiet
    if name == "tiresias":  # the run demoted and preempted jobs (what the quiet rule must not skip over)
        assert sum(j.restarts for j in a.jobs) > 0
        assert any(r.info["queue1"] > 0 for r in a.rounds)


def test_tiresias_is_asked_again_in_the_round_before_a_demotion() -> None:
    """A job of 4 GPUs with 1,000 GPU-s of a 3,600 GPU-s threshold gains 240 GPU-s a round: demoted in the 11th
    round from now (1000 + 11 x 240 >= 3600 > 1000 + 10 x 240); the decision stands until the 10th."""
    from schedopt.sim.policies.base import JobView
    from schedopt.sim.policies.fifo import FifoPolicy
    from schedopt.sim.policies.tiresias import TiresiasPolicy

    cl = sim.cluster_preset("sia-64")
    p = TiresiasPolicy(threshold=3600.0)
    v = JobView("j", "cifar10", 0.0, 0.0, 1000.0, 0, 4, 128, False, None, {}, sim.jobs.true_model("cifar10"), 0.0, 4)
    st = RoundState(600.0, 10, 60.0, cl, (v,), None)
    d = p.decide(st)
    assert sum(d.nodes["j"].values()) == 4  # type: ignore[index]
    assert p.stable_until(st, d) == 600.0 + 10 * 60.0
    p2 = TiresiasPolicy(threshold=3600.0)  # the same job preempted (held nodes, left out): ask again next round
    held = JobView("j", "cifar10", 0.0, 0.0, 1000.0, 0, 4, 128, False, None, {"t4-0": 4},
                   sim.jobs.true_model("cifar10"), 0.0, 4)
    assert p2.stable_until(RoundState(600.0, 10, 60.0, cl, (held,), None), Decision(nodes={})) == -math.inf
    assert FifoPolicy().stable_until(st, Decision(nodes={})) == math.inf
