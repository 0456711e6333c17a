"""Runs of the published Sia simulator, job by job, and our runs against them per application (issue 43).

:func:`published_run` gives the published simulator's JCT of every job of a workload it was run on (``saturn/1``:
``siasosp23/artifacts@aaf7a0de`` sia-simulator with ``run_experiment.sh``'s Sia flags, its MILP solver CBC -> HiGHS
at the same 1e-4 gap; derived by ``tools/derive_sia_published.py`` into ``data/sia_published.json``), and
:func:`compare_per_application` our runs' mean JCT per application over the jobs both finished, with the gap.
``schedopt reproduce sia`` prints :func:`comparison_table` under its main table.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from ..errors import InputError
from .metrics import SimResult

__all__ = ["AppComparison", "PublishedRun", "compare_per_application", "comparison_table", "published_run",
           "published_workloads"]


@dataclass(frozen=True)
class PublishedRun:
    """One run of the published simulator: ``jobs`` job id -> (application, JCT in s) of every job it finished."""

    workload: str
    source: str  #: how and where the run was made
    workload_jobs: int  #: jobs in the workload (``len(jobs)`` may be fewer: a run stopped early)
    jobs: Mapping[str, tuple[str, float]]

    @property
    def mean_jct_s(self) -> float:
        return sum(t for _, t in self.jobs.values()) / len(self.jobs)


@dataclass(frozen=True)
class AppComparison:
    """One application's row (``application == "all"``: every job): the mean JCT over the ``jobs`` both the
    published run and each of ours finished, and each of ours as a gap in % (negative: ours is shorter)."""

    application: str
    jobs: int
    published_mean_s: float
    ours_mean_s: Mapping[str, float]  #: variant (policy spec) -> mean JCT

    def gap_pct(self, variant: str) -> float:
        return 100.0 * (self.ours_mean_s[variant] / self.published_mean_s - 1.0)


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    text = resources.files("schedopt.sim").joinpath("data/sia_published.json").read_text()
    return dict(json.loads(text)["workloads"])


def published_workloads() -> list[str]:
    """The workloads the published simulator has a run of here."""
    return list(_data())


def published_run(workload: str) -> PublishedRun | None:
    """The published simulator's run of ``workload`` (a name such as ``saturn/1``), or None when there is none."""
    d = _data().get(workload)
    if d is None:
        return None
    return PublishedRun(workload, str(d["source"]), int(d["workload_jobs"]),
                        {str(j): (str(a), float(t)) for j, (a, t) in d["jobs"].items()})


def compare_per_application(run: PublishedRun, ours: Mapping[str, SimResult]) -> list[AppComparison]:
    """Per application (then ``"all"``), the mean JCT of the jobs the published ``run`` and every one of ``ours``
    (variant -> the same workload's records) finished, beside the published mean."""
    if not ours:
        raise InputError("ours", {}, "needs at least one run to compare")
    finished = [r.jcts() for r in ours.values()]
    common = [j for j in run.jobs if all(j in f for f in finished)]
    groups: dict[str, list[str]] = {}
    for j in common:
        groups.setdefault(run.jobs[j][0], []).append(j)
    rows = []
    for app, ids in [*sorted(groups.items()), ("all", common)]:
        if not ids:
            continue
        pub = sum(run.jobs[j][1] for j in ids) / len(ids)
        mean = {v: sum(f[j] for j in ids) / len(ids) for v, f in zip(ours, finished, strict=True)}
        rows.append(AppComparison(app, len(ids), pub, mean))
    return rows


def comparison_table(workload: str, ours: Mapping[str, SimResult]) -> str:
    """Markdown: :func:`compare_per_application` of ``ours`` on ``workload`` against the published run (a sentence
    saying so when there is no published run of it)."""
    run = published_run(workload)
    if run is None:
        return (f"No run of the published simulator on {workload} here (have {', '.join(published_workloads())}): "
                "no per-application comparison.")
    rows = compare_per_application(run, ours)
    head = ["application", "jobs", "published mean JCT (s)"]
    for v in ours:
        head += [f"{v} (s)", f"{v} vs published"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for r in rows:
        cells = [r.application, str(r.jobs), f"{r.published_mean_s:,.0f}"]
        for v in ours:
            g = r.gap_pct(v)
            cells += [f"{r.ours_mean_s[v]:,.0f}", "n/a" if math.isnan(g) else f"{g:+.1f} %"]
        lines.append("| " + " | ".join(cells) + " |")
    return ("\n".join(lines) + f"\n\nPer application on {workload}, over the jobs every run finished, against a run "
            f"of the published simulator ({run.source}; {len(run.jobs)} of {run.workload_jobs} jobs finished there, "
            f"mean {run.mean_jct_s:,.0f} s).")


def vs_published(runs: Mapping[str, Mapping[str, SimResult]]) -> tuple[str, dict[str, list[dict[str, Any]]]]:
    """For ``runs`` (workload -> variant -> records), the markdown of :func:`comparison_table` for every workload
    with a published run (empty when none has) and its rows as plain data (workload -> rows)."""
    md, data = "", {}
    for w, ours in runs.items():
        run = published_run(w)
        if run is None or not ours:
            continue
        md += "\n\n" + comparison_table(w, ours)
        data[w] = [{"application": r.application, "jobs": r.jobs, "published_mean_s": r.published_mean_s,
                    "ours_mean_s": dict(r.ours_mean_s)} for r in compare_per_application(run, ours)]
    return md, data
