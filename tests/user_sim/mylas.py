"""A user's own simulator extensions, written as someone outside schedopt would (only public names imported).

* :class:`MyLAS`: least-attained-service, rigid jobs with their requested GPUs through ``Decision(requests=...)``;
* :class:`FirstFitPlacer`: a placer that takes the lowest-numbered free GPUs of the first type that fits;
* :class:`MaxActive`: an admission rule deferring arrivals while ``limit`` jobs are admitted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from schedopt.sia import Cluster, Config, Placement
from schedopt.sim import ACCEPT, DEFER, AdmissionState, Decision, GpuRequest, JobView, RoundState, Verdict


class MyLAS:
    """Least attained GPU-seconds first; a job keeps its GPUs while it stays within the budget."""

    name = "my-las"

    def __init__(self, max_jobs: int = 1000, gpu_type: str | None = None) -> None:
        self.max_jobs = max_jobs
        self.gpu_type = gpu_type

    def decide(self, state: RoundState) -> Decision:
        free = state.cluster.num_gpus
        want: dict[str, GpuRequest] = {}
        for v in sorted(state.jobs, key=lambda v: (v.attained_gpu_seconds, v.arrival, v.id))[: self.max_jobs]:
            if v.requested_gpus <= free:
                want[v.id] = GpuRequest(v.requested_gpus, self.gpu_type)
                free -= v.requested_gpus
        return Decision(requests=want)


class FirstFitPlacer:
    """The first GPU type with room, its lowest free GPUs; jobs with unchanged requests stay."""

    name = "first-fit"

    def place(self, cluster: Cluster, want: Mapping[str, Config | GpuRequest], previous: Placement | None,
              pinned: Sequence[str] = ()) -> Placement:
        free = {n: list(range(t.gpus_per_node)) for t in cluster.gpu_types for n in cluster.node_ids(t.name)}
        kind = {n: t.name for t in cluster.gpu_types for n in cluster.node_ids(t.name)}
        out: dict[str, list[tuple[str, tuple[int, ...]]]] = {}
        configs: dict[str, Config] = {}
        unplaced: list[str] = []
        for jid, w in want.items():
            g = w.n_gpus if isinstance(w, Config) else w.gpus
            types = [w.gpu_type] if w.gpu_type else list(cluster.type_names)
            for t in types:
                nodes = [n for n in free if kind[n] == t]
                if sum(len(free[n]) for n in nodes) < g:
                    continue
                slots, need = [], g
                for n in nodes:
                    take = free[n][:need]
                    if take:
                        slots.append((n, tuple(take)))
                        free[n] = free[n][len(take):]
                        need -= len(take)
                    if not need:
                        break
                out[jid] = slots
                configs[jid] = Config(len(slots), g, t)
                break
            else:
                unplaced.append(jid)
        return Placement(assignments=out, configs=configs, unplaced=tuple(unplaced))


class MaxActive:
    """Admit at most ``limit`` jobs at once; later arrivals wait outside the scheduler."""

    name = "max-active"

    def __init__(self, limit: int = 4) -> None:
        self.limit = limit

    def admit(self, job: JobView, state: AdmissionState) -> Verdict:
        return ACCEPT if len(state.admitted) < self.limit else DEFER
