"""Bad-input fuzzing of schedopt's public entry points (issue 20).

Every public constructor, loader and :func:`schedopt.solve` parameter must, for any input, either work or raise a
:class:`~schedopt.errors.SchedoptError` subclass, within a few seconds. This package holds

* catalogs of bad values per kind of field (:data:`CATALOG`: wrong types, None, NaN, inf, negative, zero, empty,
  1e300, huge integers, duplicates, unknown names, mismatched shapes) and hypothesis strategies over them
  (:func:`bad_values`, :func:`cases`), with generated values for the longer run;
* the entry points (:func:`entry_points`), each a valid call plus its fields and their kinds; the call runs the path
  from the spec to a built (and, where cheap, solved) model, so a bad value accepted at the boundary and crashing
  later is found too;
* :func:`run_case`, which calls one entry point with one field replaced and classifies the outcome (:class:`Outcome`):
  ``ok`` (it worked), ``named`` (a SchedoptError), ``raw`` (any other exception), ``hang`` (over the time limit) or
  ``silent`` (a value no field of that kind can mean, such as NaN GPUs, was accepted: a meaningless answer);
* :func:`survey` and ``python -m schedopt.testing.fuzz``, which run every case and print the failures, one line of
  reproduction each.

Modules: ``catalog`` (bad values, strategies), ``runner`` (entry points, cases, outcomes, the time limit),
``entries`` (the public entry points and the honesty check of solve results), ``documents`` (instance documents and
files), ``sim`` (the simulator's entry points, the honesty check of its results and workload files; issue 25),
``commands`` (reproduce, the executor flags, the command line's silent choices, the engine's policy boundary and
the plug-ins, each case in its own process; issue 41).
``service`` (bad HTTP requests to every endpoint of ``schedopt serve``, sent to a real service process; issue 38). hypothesis is a test extra: import this package only where it is installed.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from dataclasses import dataclass, field

from .catalog import CATALOG, CORE, MISSING, Bad, bad_values, core
from .documents import (
    DOCUMENT_SOURCES,
    FILE_CASES,
    YAML_CASES,
    apply_document_case,
    document_cases,
    document_entry,
    run_document_case,
    run_file_case,
)
from .entries import KNAPSACK_OPTIMUM, CliExit, entry_points, lies
from .runner import Case, EntryPoint, FuzzTimeout, Outcome, all_cases, cases, run_case, time_limit
from .service import GUARDED, HttpCase, run_http_case, service_cases, service_survey, session_cases
from .sim import (
    WORKLOAD_FILE_CASES,
    honest_result,
    run_invariants,
    run_workload_file_case,
    sim_entries,
    small_workloads,
)

__all__ = [
    "CATALOG",
    "CORE",
    "DOCUMENT_SOURCES",
    "FILE_CASES",
    "GUARDED",
    "KNAPSACK_OPTIMUM",
    "MISSING",
    "WORKLOAD_FILE_CASES",
    "YAML_CASES",
    "Bad",
    "Case",
    "CliExit",
    "EntryPoint",
    "FuzzTimeout",
    "HttpCase",
    "Outcome",
    "Survey",
    "all_cases",
    "apply_document_case",
    "bad_values",
    "cases",
    "core",
    "document_cases",
    "document_entry",
    "entry_points",
    "honest_result",
    "lies",
    "main",
    "run_case",
    "run_document_case",
    "run_file_case",
    "run_http_case",
    "run_invariants",
    "run_workload_file_case",
    "service_cases",
    "service_survey",
    "session_cases",
    "sim_entries",
    "small_workloads",
    "survey",
    "time_limit",
]


@dataclass
class Survey:
    outcomes: list[Outcome] = field(default_factory=list)

    def counts(self) -> Counter[str]:
        return Counter(o.status for o in self.outcomes)

    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.failed]


def survey(timeout: float = 5.0, only: str | None = None, progress: bool = False) -> Survey:
    """Run every catalog case of every entry point, every loader mutation and every bad file."""
    s = Survey()

    def add(o: Outcome) -> None:
        s.outcomes.append(o)
        if progress and o.failed:
            print(o.repro(), flush=True)

    for e in entry_points():
        if only and only not in e.name:
            continue
        # the valid call also warms the entry point up (imports: pyomo's took over 5 s on a loaded machine, and the
        # entry's cases were then skipped): it gets a minute; every case then gets ``timeout``
        base = run_case(e, None, max(timeout, 60.0))
        if base.status != "ok":
            add(Outcome("raw", e.name, None, f"the valid input fails: {base.detail}"))
            continue
        for c in all_cases(e):
            add(run_case(e, c, timeout))
    for problem in DOCUMENT_SOURCES:
        name = f"instances.from_document[{problem}]"
        if only and only not in name:
            continue
        _, data = document_entry(problem)
        for family in ("types", "numbers", "keys"):
            for c in document_cases(data, family):
                add(run_document_case(problem, c, timeout))
    for loader, labels in (("instances.load", FILE_CASES), ("hived.load_hived_config", YAML_CASES)):
        if only and only not in loader:
            continue
        for label in labels:
            add(run_file_case(loader, label, timeout))
    if not only or only in "sim.load_workload":
        for label in WORKLOAD_FILE_CASES:
            add(run_workload_file_case(label, timeout))
    from .commands import run_command_cases  # issue 41: reproduce, executors, CLI choices, engine, plug-ins

    for o in run_command_cases(timeout, only):
        add(o)
    from .inputs import survey_inputs  # issue 41: traces, HiveD inputs, Gavel/Pollux/Shockwave; each case in a process

    survey_inputs(timeout, only, add=add)
    if (not only or only in "serve") and _can_serve():
        for o in service_survey(max(timeout, 10.0)):
            add(o)
    return s


def _can_serve() -> bool:
    """The service's extra is installed (``schedopt[serve]``)."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("starlette", "uvicorn"))


def main(argv: list[str] | None = None) -> int:
    """``python -m schedopt.testing.fuzz``: the survey of every entry point under bad input; exit 1 if one lied or
    crashed."""
    ap = argparse.ArgumentParser(prog="python -m schedopt.testing.fuzz", description=__doc__.splitlines()[0])
    ap.add_argument("--timeout", type=float, default=5.0, help="seconds per input (default 5)")
    ap.add_argument("--only", default=None, help="entry points whose name contains this text")
    ap.add_argument("--quiet", action="store_true", help="only the counts")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    s = survey(args.timeout, args.only, progress=not args.quiet)
    counts = s.counts()
    total = sum(counts.values())
    print(f"{total} inputs in {time.perf_counter() - t0:.0f} s: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 1 if s.failures() else 0
