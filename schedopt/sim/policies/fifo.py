"""FIFO: rigid jobs start in arrival order with their requested GPUs and run to completion (never preempted).

``backfill=False`` (default) is strict FIFO: the first job that does not fit blocks the ones behind it;
``backfill=True`` lets later jobs that fit start. Placement: the GPU type with the most free GPUs, then the nodes
with the most free GPUs (:class:`~schedopt.sim.policies.rigid.TypeBudget`).
"""

from __future__ import annotations

import math

from ..policies.base import Decision, RoundState
from ..registry import parse_bool
from .rigid import TypeBudget, requested

__all__ = ["FifoPolicy"]


class FifoPolicy:
    """First in, first out, non-preemptive."""

    name = "fifo"
    adaptive = False
    seeded = False  #: takes a seed like every policy, draws no random numbers (schedopt.sim.seeds)
    checkpointable = True  #: a pickle of it resumes a run exactly (schedopt.sim.checkpoint; tests/test_sim_checkpoint.py)

    def __init__(self, backfill: bool = False, seed: int | None = None) -> None:
        self.backfill = parse_bool(backfill, "policy[fifo].backfill")

    def decide(self, state: RoundState) -> Decision:
        b = TypeBudget(state)
        nodes: dict[str, dict[str, int]] = {}
        for v in state.jobs:  # running jobs keep their GPUs
            if v.current_nodes:
                nodes[v.id] = dict(v.current_nodes)
                b.hold(v.current_nodes)
                b.promise(b.type_of(v.current_nodes), sum(v.current_nodes.values()))
        for v in sorted((v for v in state.jobs if not v.current_nodes), key=lambda v: (v.arrival, v.id)):
            t = b.pick_type(requested(v))
            if t is None:
                if self.backfill:
                    continue
                break
            b.promise(t, requested(v))
            nodes[v.id] = b.pack(t, requested(v))
        return Decision(nodes=nodes)

    def stable_until(self, state: RoundState, decision: Decision) -> float:
        """The engine may reuse ``decision`` without asking until a job arrives or finishes: FIFO's decision is a
        function of the active jobs (arrival, request, nodes held) alone, and repeating it starts nobody new (the
        first job that did not fit still does not; with backfill, none of the skipped ones does)."""
        return math.inf
