"""``schedopt.bench``: compare solvers and formulations on generated instances, with honest records and reports.

>>> from schedopt import bench                                     # doctest: +SKIP
>>> recs = bench.run("sia", sizes=[64, 512], backends=["highs", "cvxpy-glpk"], repeat=3, out="results.csv")
>>> bench.report("results.csv", "report/")                          # report/report.md + PNG figures

Every run happens in a process of its own (forked from the caller, or a fresh interpreter: ``run(start=)``) with a
wall-clock guard; every phase (instance generation, goodput / model build, hand-off, solve, decode, placement) is
timed apart, with peak memory, the LP relaxation bound and the machine
recorded in one :class:`Record` per run (CSV or JSON Lines). Two pipelines (:mod:`schedopt.bench.pipelines`): a
problem's typed ProblemIO (``generate`` + ``solve(spec, SolveOptions) -> Answer``; entries are backends, methods or
``method@backend``) and a :class:`ModelPipeline` (phase by phase; Sia's spec lives in :mod:`schedopt.sia.bench`).
Sweeps run serially, on a local pool (``workers``) or on any engine of :mod:`schedopt.executors` (``executor``:
Dask, Ray, ...); Ctrl-C raises :class:`SweepInterrupted` with the finished records.
"""

from __future__ import annotations

from .records import PHASES, Record, machine_info, read_records, write_records
from .registry import (
    DEFAULT_SIZES,
    LARGE_SIZES,
    BenchSpec,
    ModelPipeline,
    ProblemIOPipeline,
    get_spec,
    register_spec,
    specs,
)
from .report import report, summarize
from .runner import Progress, SweepInterrupted, default_output, run

__all__ = [
    "DEFAULT_SIZES",
    "LARGE_SIZES",
    "PHASES",
    "BenchSpec",
    "ModelPipeline",
    "ProblemIOPipeline",
    "Progress",
    "Record",
    "SweepInterrupted",
    "default_output",
    "get_spec",
    "machine_info",
    "read_records",
    "register_spec",
    "report",
    "run",
    "specs",
    "summarize",
    "write_records",
]
