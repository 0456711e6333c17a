"""Bring your own trace: readers for the public GPU-cluster traces, workloads generated from them at any load, and
trace statistics (card: ``formulations/traces.md``).

>>> from schedopt import traces
>>> t = traces.read_trace("cluster_log.csv", "helios")                           # doctest: +SKIP
>>> w = traces.generate_workload(t, jobs=160, load=1.5, window_h=8, seed=0)       # doctest: +SKIP

* :class:`Trace` / :class:`TraceJob`: the one typed form every reader yields.
* Readers (streamed, bad rows named by file, row and field): :func:`read_philly`, :func:`read_philly_csv`,
  :func:`read_helios`, :func:`read_pai2020`, :func:`read_pai2023`, :func:`read_acme`, :func:`read_gavel`,
  :func:`read_workload_trace`; :func:`read_trace` picks one by :data:`FORMATS` name or by the file's layout.
* :func:`generate_workload` (Pollux's and Sia's rules, or by model name), :func:`trace_stats`.
"""

from .generate import DEFAULT_APP_MAP, RULES, GeneratedWorkload, generate, generate_workload, resample_workload
from .readers import (
                      FORMATS,
                      detect_format,
                      read_acme,
                      read_gavel,
                      read_helios,
                      read_pai2020,
                      read_pai2023,
                      read_philly,
                      read_philly_csv,
                      read_trace,
                      read_workload_trace,
                      source_record,
)
from .stats import TraceStats, trace_stats
from .trace import Trace, TraceJob

__all__ = [
    "DEFAULT_APP_MAP",
    "FORMATS",
    "RULES",
    "GeneratedWorkload",
    "Trace",
    "TraceJob",
    "TraceStats",
    "detect_format",
    "generate",
    "generate_workload",
    "read_acme",
    "read_gavel",
    "read_helios",
    "read_pai2020",
    "read_pai2023",
    "read_philly",
    "read_philly_csv",
    "read_trace",
    "read_workload_trace",
    "resample_workload",
    "source_record",
    "trace_stats",
]
