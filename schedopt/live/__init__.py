"""Scheduling decisions for a live cluster: the simulator's policies, placers and admission rules, run over the
cluster as it is now.

The API (a contract)::

    from schedopt.live import (ClusterState, NodeState, LiveJob, Measurement, Session, Plan, JobPlan, Action,
                               JobSubmitted, JobFinished, JobFailed, JobCancelled, JobProgress,
                               NodeDown, NodeUp, NodeDrained, NodeUpdated, ReplayExecutor)

    cluster = ClusterState((NodeState("gpu-a1", "a100", 8), NodeState("gpu-a2", "a100", 8, failed_gpus=(3,)),
                            NodeState("gpu-t1", "t4", 4)))
    session = Session(cluster, "sia", placer=None, admission=None, round_duration=60.0, state_path="sched.json")
    session.apply(JobSubmitted(0.0, LiveJob("j1", "cifar10", submitted=0.0, requested_gpus=4)))
    plan = session.decide(now=60.0)            # -> Plan
    plan.jobs["j1"]                            # JobPlan(action=Action.START, placement={"gpu-a1": (0, 1)}, ...)
    session.apply(JobProgress(90.0, "j1", progress=0.1, measurements=(Measurement("a100", 1, 2, 128, 0.21, 0.02),)))
    session = Session.restore("sched.json")    # a new process: the same decisions from here on

* **State**: :class:`ClusterState` (named :class:`NodeState` nodes of any size, health ``up`` / ``down`` /
  ``drained``, failed GPU indices) and :class:`LiveJob` (id, application or goodput profile, kind
  ``adaptive`` / ``strong`` / ``rigid``, requested GPUs and batch, submission time, current placement node ->
  GPU indices, measurements, progress). Each has ``to_dict`` / ``from_dict``.
* **Events** (:meth:`Session.apply`): :class:`JobSubmitted`, :class:`JobFinished`, :class:`JobFailed`,
  :class:`JobCancelled`, :class:`JobProgress` (progress, epoch, :class:`Measurement` s, the batch it trains at),
  :class:`NodeDown`, :class:`NodeUp`, :class:`NodeDrained`, :class:`NodeUpdated` (a node added or changed, e.g.
  failed GPUs); :func:`event_from_dict` / :func:`event_to_dict` for their JSON form. A bad event raises
  :class:`~schedopt.errors.InputError` naming the field and changes nothing.
* **Decisions**: :meth:`Session.decide` ``(now) ->`` :class:`Plan`: per job a :class:`JobPlan` (the
  :class:`Action` ``start`` / ``keep`` / ``resize`` / ``move`` / ``preempt`` / ``queue`` / ``reject``, node
  names and GPU indices, GPU type and count, the batch size of jobs that run, the restart delay charged). The
  policy's decision is checked as :func:`schedopt.sim.simulate` checks it (the same code:
  :func:`schedopt.sim.engine.decide_round`): a bad one raises naming the policy and the job, and the state is
  left as it was. Running jobs keep their GPUs unless the policy changes their allocation; a node's capacity is
  never exceeded; down nodes, failed GPUs and drained nodes' free GPUs are never allocated.
* **State that survives**: :meth:`Session.save` / :meth:`Session.restore` (versioned JSON, written atomically:
  a temporary file, fsync, rename; with ``state_path`` after every decision), :meth:`Session.to_document` /
  :meth:`Session.from_document`. See :mod:`schedopt.live.persist`.
* **Replay**: :class:`ReplayExecutor` drives a session from a :class:`~schedopt.sim.Workload` with the
  simulator's job model standing in for the cluster, so a trace runs both ways and the decisions can be
  compared round for round with :func:`schedopt.sim.simulate`.

What a policy sees: the cluster's usable GPUs (:attr:`Session.cluster`, a :class:`schedopt.sia.Cluster` with
nodes ``<type>-<k>`` mapped to the live names, GPUs renumbered past failed ones), each admitted job as a
:class:`~schedopt.sim.JobView` whose progress is the reported one and whose goodput estimate is its profile refitted
to what the job measured (``estimator="bootstrap"``; the simulator's own estimate, fed by the job instead of the
job model). A job submitted with a current placement counts it in its growth rule (``max_gpus`` = twice the most
GPUs it ran or was measured on): a running 8-GPU job is never capped at 1 GPU. The plan's batch size of an
adaptive job is the one its goodput profile gives at its reported training state (epoch) on its new GPUs, as
Pollux's agent chooses it (with the gradient statistics it reported, ``JobProgress.grad_sqr`` / ``grad_var``,
where it did); a job that reports the batch it trains at (``JobProgress.local_batch``) is taken at its word.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .client import (  # the client of the decision service (schedopt serve; added by the serve branch)
        ServiceBusy,
        ServiceClient,
        ServiceError,
        ServiceInputError,
        ServiceSession,
    )
    from .persist import read_document, write_document
    from .replay import ReplayExecutor
    from .session import Action, JobPlan, Plan, Session
    from .state import (
        HEALTH,
        JOB_KINDS,
        ClusterState,
        Event,
        JobCancelled,
        JobFailed,
        JobFinished,
        JobProgress,
        JobSubmitted,
        LiveJob,
        Measurement,
        NodeDown,
        NodeDrained,
        NodeHealth,
        NodeState,
        NodeUp,
        NodeUpdated,
        event_from_dict,
        event_to_dict,
    )

# The names load with their module when first used (PEP 562): ``python -m schedopt.live.trainer`` (the program a
# resource manager starts for every job, :mod:`schedopt.live.slurm`) then imports only what it runs.
_LAZY = {
    **dict.fromkeys(("ServiceBusy", "ServiceClient", "ServiceError", "ServiceInputError", "ServiceSession"), "client"),
    **dict.fromkeys(("read_document", "write_document"), "persist"),
    "ReplayExecutor": "replay",
    **dict.fromkeys(("Action", "JobPlan", "Plan", "Session"), "session"),
    **dict.fromkeys(("HEALTH", "JOB_KINDS", "ClusterState", "Event", "JobCancelled", "JobFailed", "JobFinished",
                     "JobProgress", "JobSubmitted", "LiveJob", "Measurement", "NodeDown", "NodeDrained",
                     "NodeHealth", "NodeState", "NodeUp", "NodeUpdated", "event_from_dict", "event_to_dict"),
                    "state"),
}


def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'schedopt.live' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "HEALTH",
    "JOB_KINDS",
    "Action",
    "ClusterState",
    "Event",
    "JobCancelled",
    "JobFailed",
    "JobFinished",
    "JobPlan",
    "JobProgress",
    "JobSubmitted",
    "LiveJob",
    "Measurement",
    "NodeDown",
    "NodeDrained",
    "NodeHealth",
    "NodeState",
    "NodeUp",
    "NodeUpdated",
    "Plan",
    "ReplayExecutor",
    # the decision service's client (schedopt serve)
    "ServiceBusy",
    "ServiceClient",
    "ServiceError",
    "ServiceInputError",
    "ServiceSession",
    "Session",
    "event_from_dict",
    "event_to_dict",
    "read_document",
    "write_document",
]
