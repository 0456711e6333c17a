"""A user's own policy, written as someone outside schedopt would (only public names imported), run unchanged by
``schedopt.sim.simulate`` and by ``schedopt.live.Session``.

:class:`SmallestFirst`: rigid jobs, fewest requested GPUs first (ties: earliest arrival); a running job keeps its
GPUs while it stays within the first ``max_running`` jobs of that order; GPU requests through ``Decision(requests=)``
on the type with the most free GPUs, so the placer decides the nodes.
"""

from __future__ import annotations

from schedopt.sim import Decision, GpuRequest, RoundState


class SmallestFirst:
    name = "smallest-first"

    def __init__(self, max_running: int = 64) -> None:
        self.max_running = max_running

    def decide(self, state: RoundState) -> Decision:
        free = {t.name: t.total_gpus for t in state.cluster.gpu_types}
        want: dict[str, GpuRequest] = {}
        order = sorted(state.jobs, key=lambda v: (v.requested_gpus, v.arrival, v.id))[: self.max_running]
        for v in order:  # running jobs first keep their type
            if v.current is not None and free[v.current.gpu_type] >= v.requested_gpus:
                want[v.id] = GpuRequest(v.requested_gpus, v.current.gpu_type)
                free[v.current.gpu_type] -= v.requested_gpus
        for v in order:
            if v.id in want:
                continue
            t = max(free, key=lambda k: (free[k], k))
            if free[t] >= v.requested_gpus:
                want[v.id] = GpuRequest(v.requested_gpus, t)
                free[t] -= v.requested_gpus
        return Decision(requests=want)
