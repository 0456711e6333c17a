"""Round-based simulation of GPU-cluster scheduling policies over job traces (card: ``formulations/sim.md``).

>>> from schedopt import sim
>>> res = sim.simulate(sim.cluster_preset("sia-64"), sim.load_workload("saturn/1"), sim.get_policy("sia"),
...                    job_model="sia")                                               # doctest: +SKIP
>>> res.summary()["avg_jct_s"]                                                        # doctest: +SKIP

* :func:`simulate` (the engine), :class:`SimResult` with per-job / per-round records, :func:`summarize`.
* :func:`get_policy`: ``fifo``, ``tiresias``, ``sia``, ``pollux``, ``pollux-exact``, ``gavel``.
* Workloads (:func:`load_workload`, :func:`list_workloads`) and clusters (:func:`cluster_preset`).
* :func:`simulate_many`: sweeps over policies x workloads x seeds on a process pool or a Dask client.
"""

from .engine import ADAPTIVE_POLICIES, simulate
from .jobs import POLLUX, SIA, JobModel, goodput_estimate
from .metrics import JobRecord, RoundRecord, SimResult, queue_length, read_jsonl, summarize, utilization
from .metrics import summaries as summaries  # one row per simulation (pandas); see also SimResult.to_dataframe
from .policies import Decision, JobView, Policy, RoundState, get_policy
from .sweep import SimTask, simulate_many
from .workloads import Workload, WorkloadJob, cluster_preset, list_workloads, load_workload, read_workload

__all__ = [
    "ADAPTIVE_POLICIES",
    "POLLUX",
    "SIA",
    "Decision",
    "JobModel",
    "JobRecord",
    "JobView",
    "Policy",
    "RoundRecord",
    "RoundState",
    "SimResult",
    "SimTask",
    "Workload",
    "WorkloadJob",
    "cluster_preset",
    "get_policy",
    "goodput_estimate",
    "list_workloads",
    "load_workload",
    "queue_length",
    "read_jsonl",
    "read_workload",
    "simulate",
    "simulate_many",
    "summarize",
    "utilization",
]
