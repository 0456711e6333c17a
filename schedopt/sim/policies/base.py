"""The policy interface of :mod:`schedopt.sim` (fixed; every policy codes against it).

A policy sees one round's state (:class:`RoundState`: the cluster, the active jobs as :class:`JobView`, the previous
placement) and returns a :class:`Decision`: either a configuration per job (the engine places it with
:func:`schedopt.sia.place`, keeping unchanged jobs where they are) or an explicit node-level placement. It never
touches the engine's internals; the engine validates every decision and raises ``InputError`` naming the policy and
the job on a bad one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from schedopt.errors import InputError
from schedopt.goodput import JobGoodputModel
from schedopt.problem import Answer
from schedopt.sia import Cluster, Config, Placement

__all__ = ["JOB_KINDS", "Decision", "GpuRequest", "JobView", "Policy", "RoundState"]

#: What a :class:`JobView`'s ``kind`` may be (the Sia ILP's job kinds, ``schedopt.sia.spec.KINDS``).
JOB_KINDS = ("adaptive", "strong", "rigid")


@dataclass(frozen=True)
class JobView:
    """What a policy sees of one active (arrived, unfinished) job."""

    id: str
    application: str                # bert, cifar10, deepspeech2, imagenet, ncf, yolov3, ...
    arrival: float                  # seconds since the trace start
    age: float                      # now - arrival
    attained_gpu_seconds: float     # service received so far (Tiresias' LAS)
    restarts: int
    requested_gpus: int             # the workload's num_replicas (rigid baselines use it)
    batch_size: int                 # the workload's batch_size (rigid baselines use it)
    adaptive: bool                  # Pollux/Sia adapt GPUs and batch size; rigid jobs keep requested_gpus
    current: Config | None          # the configuration it runs in now (None: queued)
    current_nodes: Mapping[str, int]   # node id -> GPUs it holds now (empty when queued)
    estimate: JobGoodputModel       # the policy's goodput estimate (bootstrapped/refined; not the truth)
    progress: float                 # fraction of its target done, in [0, 1)
    max_gpus: int                   # cap (application's max replicas)
    # -- sia-eval (issue 31): the job's kind and scale units; defaults keep views made without them valid --
    kind: str | None = None         # "adaptive" | "strong" (fixed batch, GPUs adapt) | "rigid"; None: from `adaptive`
    scale_units: Mapping[str, int] = field(default_factory=dict)  # GPU type -> GPUs per replica (pipeline depth P)

    def __post_init__(self) -> None:
        if self.kind is None:
            object.__setattr__(self, "kind", "adaptive" if self.adaptive else "rigid")
        elif self.kind not in JOB_KINDS:
            raise InputError(f"JobView({self.id!r}).kind", self.kind, f"must be one of {list(JOB_KINDS)}")
        elif (self.kind == "rigid") == self.adaptive:
            raise InputError(f"JobView({self.id!r}).kind", self.kind, f"contradicts adaptive={self.adaptive}")

    def scale_unit(self, gpu_type: str) -> int:
        """GPUs per replica on ``gpu_type`` (1 unless the application is pipeline-parallel)."""
        return int(self.scale_units.get(gpu_type, 1))
    # -- end sia-eval --


@dataclass(frozen=True)
class RoundState:
    """One round as a policy sees it."""

    time: float
    round_index: int
    round_seconds: float
    cluster: Cluster                # schedopt.sia.Cluster: GPU types, nodes, GPUs per node
    jobs: tuple[JobView, ...]
    placement: Placement | None     # the previous round's placement


@dataclass(frozen=True)
class GpuRequest:
    """``gpus`` GPUs of ``gpu_type`` (None: the placer picks the type) on whatever nodes the placer chooses: the
    route for a rigid request of any size (``Decision(requests={"j3": GpuRequest(12, "a100")})``)."""

    gpus: int
    gpu_type: str | None = None


@dataclass(frozen=True)
class Decision:
    """A policy's answer for one round: ``allocation`` (a configuration per job) and/or ``requests`` (a
    :class:`~schedopt.sim.roles.GpuRequest` or a GPU count per job: a rigid request of any size), which the
    simulation's placer maps onto GPUs; or ``nodes`` (job id -> {node id: GPUs}; policies with their own placer).
    Jobs missing from all are queued."""

    # either a configuration per job (the engine places it with schedopt.sia.place, keeping unchanged jobs),
    allocation: Mapping[str, Config | None] | None = None
    # or an explicit node-level placement: job id -> {node id: GPUs} (Pollux, Gavel place themselves)
    nodes: Mapping[str, Mapping[str, int]] | None = None
    # or a GPU count (and optionally a type) per job, placed by the placer: any size the cluster can host
    requests: Mapping[str, GpuRequest | int] | None = None
    answer: Answer | None = None     # the solver's answer (termination, objective, bound, timings) when a model was solved
    info: Mapping[str, Any] = field(default_factory=dict)
    # optional GPU-sharing hooks (Gandiva; default: none): with ``nodes``, guest job id -> host job id, the guest runs
    # on the host's GPUs (packing; not counted against capacity); job id -> factor on its true rate this round
    # (co-location interference, growth); job id -> checkpoint-restore seconds charged if its placement changes now
    colocate: Mapping[str, str] | None = None
    rate: Mapping[str, float] | None = None
    restart: Mapping[str, float] | None = None


class Policy(Protocol):
    """A scheduling policy: ``decide`` is called once per round. A policy whose jobs adapt their GPU count and batch
    size says so with a class attribute ``adaptive = True`` (default False: jobs run rigidly as the workload asks);
    its constructor's keyword parameters are its options (``--policy name:key=value``)."""

    name: str

    def decide(self, state: RoundState) -> Decision: ...
