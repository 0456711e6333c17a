"""Users' own policies for the checkpoint tests (tests/test_sim_checkpoint.py), written with public names only.

:class:`RandomFirst`: rigid jobs started in an order drawn from its own random generator each round (its state
moves every round: a resumed run decides as the uninterrupted one only if the generator's state is restored);
it says it can be checkpointed. :class:`Unsaid`: the same, without saying so (refused). :class:`Unpicklable`: says
so but holds a lambda (refused: it does not pickle).
"""

from __future__ import annotations

import numpy as np

from schedopt.sim import Decision, GpuRequest, RoundState


class RandomFirst:
    name = "random-first"
    checkpointable = True

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.rounds = 0

    def decide(self, state: RoundState) -> Decision:
        self.rounds += 1
        free = {t.name: t.total_gpus for t in state.cluster.gpu_types}
        want: dict[str, GpuRequest] = {}
        for v in state.jobs:  # running jobs keep their type
            if v.current is not None:
                want[v.id] = GpuRequest(v.requested_gpus, v.current.gpu_type)
                free[v.current.gpu_type] -= v.requested_gpus
        waiting = [v for v in state.jobs if v.current is None]
        for k in self.rng.permutation(len(waiting)):
            v = waiting[int(k)]
            t = max(free, key=lambda x: (free[x], x))
            if free[t] >= v.requested_gpus:
                want[v.id] = GpuRequest(v.requested_gpus, t)
                free[t] -= v.requested_gpus
        return Decision(requests=want)


class Unsaid(RandomFirst):
    name = "unsaid"
    checkpointable = False


class Unpicklable(RandomFirst):
    name = "unpicklable"

    def __init__(self, seed: int = 0) -> None:
        super().__init__(seed)
        self.key = lambda v: v.arrival
