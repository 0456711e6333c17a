"""Round-based simulation of GPU-cluster scheduling policies over job traces (card: ``formulations/sim.md``).

>>> from schedopt import sim
>>> res = sim.simulate(sim.cluster_preset("sia-64"), sim.load_workload("saturn/1"), sim.get_policy("sia"),
...                    job_model="sia")                                               # doctest: +SKIP
>>> res.summary()["avg_jct_s"]                                                        # doctest: +SKIP

* :func:`simulate` (the engine), :class:`SimResult` with per-job / per-round records, :func:`summarize`.
* :func:`get_policy`: ``fifo``, ``tiresias``, ``sia``, ``pollux``, ``pollux-exact``, ``pollux-unaware``, ``gavel``,
  a spec (``sia:backend=highs``) or a user's ``module:Class``; :func:`register_policy` adds one (or the entry-point
  group ``schedopt.policies``).
* Roles (:mod:`schedopt.sim.roles`): a :class:`Placer` (``sia``, ``packing``) and an :class:`Admission` rule
  (``accept-all``, ``queue-cap``, ``gpu-cap``), registered like policies; families (:class:`SimSystem`:
  elastic, Synergy, Gandiva, HiveD) in :mod:`schedopt.sim.families`.
* Workloads (:func:`load_workload`, :func:`list_workloads`) and clusters (:func:`cluster_preset`).
* :func:`simulate_many`: sweeps over policies x workloads x seeds on a process pool or a Dask client.
"""

from typing import Any as _Any

from . import fairness as fairness  # registers the finish-time fairness columns of every summary
from .engine import DEFAULT_ROUND_SECONDS, simulate
from .families import SimSystem, register_system, system_for, systems
from .jobs import POLLUX, SIA, JobModel, goodput_estimate
from .metrics import JobRecord, RoundRecord, SimMeta, SimResult, queue_length, read_jsonl, summarize, utilization
from .metrics import summaries as summaries  # one row per simulation (pandas); see also SimResult.to_dataframe
from .policies import Decision, JobView, Policy, RoundState, get_policy, make_policy
from .registry import parse_spec, policies, register_admission, register_placer, register_policy
from .roles import (
    ACCEPT,
    DEFER,
    REJECT,
    AcceptAll,
    Admission,
    AdmissionState,
    GpuCap,
    GpuRequest,
    PackingPlacer,
    Placer,
    QueueCap,
    SiaPlacer,
    Verdict,
)
from .sweep import SimTask, run_task, simulate_many
from .workloads import Workload, WorkloadJob, cluster_preset, list_workloads, load_workload, read_workload

__all__ = [
    "ACCEPT",
    "DEFAULT_ROUND_SECONDS",
    "DEFER",
    "POLLUX",
    "REJECT",
    "SIA",
    "AcceptAll",
    "Admission",
    "AdmissionState",
    "Decision",
    "GpuCap",
    "GpuRequest",
    "JobModel",
    "JobRecord",
    "JobView",
    "PackingPlacer",
    "Placer",
    "Policy",
    "QueueCap",
    "RoundRecord",
    "RoundState",
    "SiaPlacer",
    "SimMeta",
    "SimResult",
    "SimSystem",
    "SimTask",
    "Verdict",
    "Workload",
    "WorkloadJob",
    "cluster_preset",
    "generate_workload",
    "get_policy",
    "goodput_estimate",
    "list_workloads",
    "load_workload",
    "make_policy",
    "parse_spec",
    "policies",
    "queue_length",
    "read_jsonl",
    "read_workload",
    "register_admission",
    "register_placer",
    "register_policy",
    "register_system",
    "run_task",
    "simulate",
    "simulate_many",
    "summarize",
    "system_for",
    "systems",
    "utilization",
]


def generate_workload(trace: _Any, **options: _Any) -> Workload:
    """A workload generated from a job trace (``jobs``, ``load``, ``window_h``, ``seed``, ``rule``, ...): the
    generator an installed package registers in the entry-point group ``schedopt.workload_generators`` under the
    name ``generate`` (``schedopt.traces.generate_workload``, its card ``formulations/traces.md``). The simulator
    does not import the trace readers; they build on it."""
    from importlib import metadata

    from ..errors import InputError

    found = [ep for ep in metadata.entry_points(group="schedopt.workload_generators") if ep.name == "generate"]
    if not found:
        raise InputError("generate_workload", "schedopt.workload_generators", "no generator is installed "
                         "(pip install schedopt registers schedopt.traces)")
    result: Workload = found[0].load()(trace, **options)
    return result


def __getattr__(name: str) -> _Any:
    if name == "ADAPTIVE_POLICIES":
        from . import engine

        return engine.ADAPTIVE_POLICIES
    raise AttributeError(name)

