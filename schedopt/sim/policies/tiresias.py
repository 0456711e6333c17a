"""Tiresias (NSDI'19) as the Pollux artifact's baseline runs it: discretized two-dimensional least-attained-service.

Two queues; a job enters queue 0 on arrival and is demoted to queue 1 once its attained service (GPUs x seconds
held) reaches ``threshold`` (16 GPU-hours, ``TiresiasPolicy._queue_threshold = 3600 * 16`` in
petuum/adaptdl@osdi21-artifact ``simulator/tiresias.py``); starvation promotion is off there (``_solve_starvation =
0``) and here. Each round jobs are taken queue 0 then queue 1, each queue in the order jobs entered it; a job runs
if its requested GPUs fit what is left (later smaller jobs may still run), otherwise it is preempted / stays queued.
Running jobs keep their nodes; newly started ones are packed onto the GPU type with the most unpromised GPUs, most-free
nodes first. Rigid: the workload's GPU count and batch size.
"""

from __future__ import annotations

import math

from ..policies.base import Decision, RoundState
from .rigid import TypeBudget, requested

__all__ = ["TiresiasPolicy"]


class TiresiasPolicy:
    """Discretized 2D-LAS with two queues (state: the queues, kept between rounds)."""

    name = "tiresias"
    adaptive = False
    seeded = False  #: takes a seed like every policy, draws no random numbers (schedopt.sim.seeds)
    checkpointable = True  #: a pickle of it resumes a run exactly (schedopt.sim.checkpoint; tests/test_sim_checkpoint.py)

    def __init__(self, threshold: float = 3600.0 * 16, seed: int | None = None) -> None:
        self.threshold = float(threshold)
        self.queues: tuple[list[str], list[str]] = ([], [])

    def decide(self, state: RoundState) -> Decision:
        views = {v.id: v for v in state.jobs}
        q0, q1 = ([j for j in q if j in views] for q in self.queues)
        known = set(q0) | set(q1)
        q0 += [v.id for v in state.jobs if v.id not in known]
        for jid in list(q0):
            if views[jid].attained_gpu_seconds >= self.threshold:
                q0.remove(jid)
                q1.append(jid)
        self.queues = (q0, q1)
        b = TypeBudget(state)
        run: list[str] = []
        start: list[tuple[str, str]] = []
        for jid in q0 + q1:
            v = views[jid]
            if v.current_nodes:
                t = b.type_of(v.current_nodes)
                if b.budget[t] >= requested(v):
                    b.promise(t, requested(v))
                    run.append(jid)
                continue
            t2 = b.pick_type(requested(v))
            if t2 is not None:
                b.promise(t2, requested(v))
                start.append((jid, t2))
        nodes: dict[str, dict[str, int]] = {}
        for jid in run:
            nodes[jid] = dict(views[jid].current_nodes)
            b.hold(views[jid].current_nodes)
        for jid, t in start:
            nodes[jid] = b.pack(t, requested(views[jid]))
        return Decision(nodes=nodes, info={"queue0": len(q0), "queue1": len(q1)})

    def stable_until(self, state: RoundState, decision: Decision) -> float:
        """The engine may reuse ``decision`` without asking, until a job arrives or finishes, in every round that
        starts before the returned time: the round before the first demotion of a job it runs from queue 0 (holding
        ``g`` GPUs it gains ``round_seconds x g`` of service a round). Between demotions, arrivals and finishes the
        queues do not change and repeating the decision starts and stops nobody -- unless it stopped a job: a job
        preempted on its GPU type may start on another in the next round (-inf: ask again)."""
        held = decision.nodes or {}
        if any(v.current_nodes and v.id not in held for v in state.jobs):
            return -math.inf
        q0 = set(self.queues[0])
        attained = {v.id: v.attained_gpu_seconds for v in state.jobs}
        R = state.round_seconds
        until = math.inf
        for jid, m in held.items():
            g = sum(m.values())
            if jid in q0 and g > 0:
                rounds = math.ceil((self.threshold - attained[jid]) / (R * g))  # the round it is demoted in
                until = min(until, state.time + (rounds - 1) * R)  # one round early: exact without float care
        return until
