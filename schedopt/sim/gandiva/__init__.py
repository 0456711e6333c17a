"""Gandiva (Xiao et al., OSDI 2018) in closed loop on the :mod:`schedopt.sim` engine (card:
``formulations/sim_gandiva.md``).

Gandiva's mechanisms as one policy, :class:`GandivaPolicy`, each switchable (:class:`Mechanisms`):

* ``time_slicing``: Algorithm 1's tier 4 oversubscribes GPUs (:func:`schedopt.gandiva.find_nodes`); the jobs
  sharing a GPU run in turn, one round (= one slice, 60 s as in the paper) each, in weighted round-robin; a job
  that resumes pays ``suspend_resume_seconds``. Off: jobs queue when no GPU is free (FIFO).
* ``priority``: the round-robin and the queue follow job priorities (weights), and a job's weight decays with the
  GPU-hours it has received (dynamic priority, ``priority_halflife_gpu_hours``). Off: plain round-robin and FIFO.
* ``packing``: while jobs wait, a 1-GPU job (time-sliced, or exclusive to free its GPU) is packed onto the
  least-utilized GPU holding one 1-GPU job (profiled utilization, memory fits, combined utilization <= 1).
  Introspection: after a packed round the policy *measures* both jobs' progress against their solo rates on that
  GPU type; if the pack's normalized throughput is below time-slicing's (< 1), it is undone, the pair is never
  retried, and the job goes to the next-least-utilized GPU. ``"exact"``: :func:`schedopt.gandiva.pack_exact`.
* ``migration``: time-sliced jobs move onto freed GPUs; a multi-GPU job that would be fragmented, time-sliced or
  queued triggers :func:`schedopt.gandiva.defragment` (``"greedy"`` or ``"exact"``); an unpacked job moves apart
  to a free GPU; on a heterogeneous cluster an exclusive job moves to free GPUs of a type where it runs
  ``better_fit`` (1.25) times faster. A move costs ``migration_seconds``.
* ``grow_shrink``: elastic jobs grow onto GPUs idle for ``idle_period`` s and shrink back on any arrival.

Heterogeneous clusters (default :func:`gandiva_preset` ``("gandiva-100")``: the paper's P100 + P40 halves): the
policy keeps one :class:`schedopt.gandiva.ClusterState` per GPU type (a job never spans types); every job has a
relative speed per type (:func:`load_type_speeds`, derived from Gavel's measurements), which is the engine's truth
and what the policy's profiling knows; Algorithm 1 picks the type with the best tier, the job's fastest among equals.

The truth of a shared GPU (the co-location factors, the speed-up of a grown job, the fragmentation penalty) is
computed apart from the decision logic (:func:`true_rates`) and handed to the engine as ``Decision.rate``; the
decision logic only sees progress. The records count physical GPU time (:func:`share_packed_gpus`).
:func:`run_task` runs a :class:`schedopt.sim.sweep.SimTask` named ``gandiva`` or ``gandiva:<variant>``.
"""

from .policy import MECHANISMS, GandivaPolicy, Mechanisms, true_rates
from .run import POLICY_PARAMS, VARIANTS, ablation, run_task, share_packed_gpus, simulate_gandiva
from .workload import (
    CLUSTER_PRESETS,
    SYNTHETIC_PARAMS,
    GandivaTrace,
    TypeSpeeds,
    gandiva_cluster,
    gandiva_preset,
    gandiva_trace,
    gandiva_workload,
    load_type_speeds,
    parse_synthetic,
    synthetic_trace,
)

__all__ = [
    "CLUSTER_PRESETS",
    "MECHANISMS",
    "POLICY_PARAMS",
    "SYNTHETIC_PARAMS",
    "VARIANTS",
    "GandivaPolicy",
    "GandivaTrace",
    "Mechanisms",
    "TypeSpeeds",
    "ablation",
    "gandiva_cluster",
    "gandiva_preset",
    "gandiva_trace",
    "gandiva_workload",
    "load_type_speeds",
    "parse_synthetic",
    "run_task",
    "share_packed_gpus",
    "simulate_gandiva",
    "synthetic_trace",
    "true_rates",
]
