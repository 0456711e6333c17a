"""``schedopt reproduce sia -o out/ [--quick]``: the Sia paper's (SOSP'23) evaluation in one command (issue 31).

Sections (each a set of :func:`schedopt.sim.simulate_many` calls on Sia's 64-GPU cluster unless named):

* ``main`` -- average / p99 JCT, makespan and GPU-hours of ``sia``, ``sia:published`` (the published policy's batch
  cap) with its per-application gap to a run of the published simulator, ``pollux-unaware`` and ``gavel`` on the
  Saturn and Philly workloads.
* ``adaptivity`` -- a seeded fraction of the jobs rigid at their requested GPUs and batch
  (:func:`schedopt.sim.adaptivity.limit_adaptivity`: 0, 25, 50, 75, 100 %), ``sia-any-rigid`` (Sia with rigid jobs
  of any GPU count) against ``pollux`` and ``gavel`` (``pollux``: Pollux's search on Sia's per-type goodput; the
  section was designed when ``pollux-unaware`` left rigid jobs unscheduled, which its type-aware repair has fixed
  since, and keeps ``pollux`` so its records stay comparable).
* ``load`` -- arrival times divided by the load factor (0.5 ... 2: twice the jobs per hour at 2), ``sia`` against
  ``pollux-unaware``.
* ``sensitivity`` -- Sia's ``p`` in [-1, 1] at ``lambda`` = 1.1 and ``lambda`` in [1.0, 2.0] at ``p`` = -0.5.
* ``scale`` -- the policy's time per round (wall and CPU) on ``sia-<G>`` clusters (64 ... 2,048 GPUs) with the
  workload's jobs repeated G/64 times (the artifact's ``scale_<k>x`` construction), runs capped in simulated time.

Every simulation's record is written under ``out/raw/<section>/<group>.parts/`` the moment it finishes, and the
group's records to ``out/raw/<section>/*.jsonl`` when the group ends, each as the sweeps write theirs
(:mod:`schedopt.sim.records`: atomically, a header naming the run, an end marker with a checksum); a rerun reuses a
record only when it is whole and of the same run, and names and redoes any other (cut short, edited, of other
settings), so a stopped run loses at most the simulations that were running. ``out/report.md`` has one table per
section beside the paper's claim and a verdict on it (:func:`judge`: holds, does not hold, or too small to tell at
this size, with the reason), and ``out/*.png`` the figures. ``--quick``: the first 16 jobs of saturn/1 and two points per sweep
(about a minute on two cores); the full run is many hours on two cores (see docs/guides/reproduce-sia.md for the measured time).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import re
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .errors import InputError

__all__ = ["SECTIONS", "VERDICTS", "ClaimVerdict", "Plan", "add_parser", "judge", "plan", "reproduce_sia"]

#: The sections of ``schedopt reproduce sia``: the main table, adaptivity, load, sensitivity, scale.
SECTIONS = ("main", "adaptivity", "load", "sensitivity", "scale")

#: The paper's claims, as issue 31 summarises them (Sia, SOSP'23), one per section.
CLAIMS = {
    "main": "Sia's average JCT is 30-93 % below Pollux's and Gavel's on the Saturn / Philly / newTrace workloads of "
            "its 64-GPU heterogeneous cluster.",
    "adaptivity": "Sia helps when many jobs cannot change batch size or GPU count (rigid and strong-scaling jobs): "
                  "it keeps its lead over Pollux as the rigid fraction grows.",
    "load": "Sia widens its lead as load grows.",
    "sensitivity": "Sia is robust across its p and lambda settings.",
    "scale": "Sia's policy scales to 2,000 GPUs (seconds per round) where Pollux's search does not.",
}


@dataclass(frozen=True)
class Plan:
    """What :func:`reproduce_sia` runs (:func:`plan` gives the full and the quick one)."""

    quick: bool
    main_workloads: tuple[str, ...]
    main_policies: tuple[str, ...] = ("sia", "sia:published", "pollux-unaware", "gavel")
    adaptivity_workloads: tuple[str, ...] = ("saturn/1",)
    rigid_fractions: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
    strong_fractions: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)  #: strong-scaling jobs (the rest adaptive)
    adaptivity_policies: tuple[str, ...] = ("schedopt.sim.adaptivity:SiaAnyRigid", "pollux", "gavel")
    load_workloads: tuple[str, ...] = ("saturn/1",)
    loads: tuple[float, ...] = (0.5, 1.0, 1.5, 2.0)
    load_policies: tuple[str, ...] = ("sia", "pollux-unaware")
    sensitivity_workloads: tuple[str, ...] = ("saturn/1",)
    p_values: tuple[float, ...] = (-1.0, -0.5, 0.5, 1.0)
    lam_values: tuple[float, ...] = (1.0, 1.1, 1.5, 2.0)
    scale_workload: str = "saturn/1"
    scale_gpus: tuple[int, ...] = (64, 128, 256, 512, 1024, 2048)
    scale_policies: tuple[str, ...] = ("sia:backend=mckp", "sia:backend=highs", "pollux-unaware", "gavel", "shockwave")
    scale_max_time: float = 3600.0
    truncate: int | None = None  #: keep only the first jobs of every workload (quick runs)
    only_apps: tuple[str, ...] | None = None  #: with ``truncate``: keep only jobs of these applications
    estimator: str = "bootstrap"  #: what the policies see (``simulate(estimator=...)``)
    job_model: str = "sia-measured"  #: the jobs' truth (the Sia presets' default: the artifact's measured step times)
    seeds: tuple[int, ...] = (0,)
    extra: dict[str, Any] = field(default_factory=dict)


def plan(quick: bool = False) -> Plan:
    """The full evaluation, or ``quick``: the first 10 cifar10 jobs of saturn/1, two points per sweep, 64 and 128
    GPUs, the oracle estimator (no refits)."""
    if not quick:
        return Plan(False, tuple(f"saturn/{k}" for k in range(1, 11)) + tuple(f"philly/{k}" for k in range(1, 9)),
                    adaptivity_workloads=("saturn/1", "saturn/2", "saturn/3"),
                    load_workloads=("saturn/1", "saturn/2", "saturn/3"),
                    sensitivity_workloads=("saturn/1", "saturn/2", "saturn/3"))
    return Plan(True, ("saturn/1",), main_policies=("sia", "sia:published", "pollux-unaware"), rigid_fractions=(0.0, 1.0),
                strong_fractions=(1.0,),
                adaptivity_policies=("schedopt.sim.adaptivity:SiaAnyRigid", "pollux"),
                loads=(1.0, 2.0), p_values=(-1.0, 1.0), lam_values=(1.1, 2.0), scale_gpus=(64, 128),
                scale_policies=("sia:backend=mckp",), scale_max_time=900.0, truncate=10, only_apps=("cifar10",),
                estimator="oracle")


# ------------------------------------------------------------------------------------------------------ workloads
def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", s).strip("_")


class _Workloads:
    """Derived workload CSVs under ``out/workloads`` (truncated, load-scaled, repeated), by name."""

    def __init__(self, out: Path, truncate: int | None, only_apps: Sequence[str] | None = None) -> None:
        self.dir = out / "workloads"
        self.truncate = truncate
        self.only_apps = None if only_apps is None else tuple(only_apps)

    def _write(self, name: str, w: Any) -> str:
        self.dir.mkdir(parents=True, exist_ok=True)
        p = self.dir / f"{_slug(name)}.csv"
        text = w.to_csv()
        if not p.is_file() or p.read_text(errors="replace") != text:
            from .sim.records import atomic_write_text

            atomic_write_text(p, text, fsync=False)
        return str(p)

    def base(self, name: str) -> str:
        """``name`` itself, or a CSV of its first ``truncate`` jobs."""
        if self.truncate is None:
            return name
        from .sim import Workload, load_workload

        w = load_workload(name)
        jobs = [j for j in w.jobs if self.only_apps is None or j.application in self.only_apps][: self.truncate]
        tag = "" if self.only_apps is None else "-" + "-".join(self.only_apps)
        return self._write(f"{name}-first{self.truncate}{tag}", Workload(w.name, tuple(jobs)))

    def loaded(self, name: str, load: float) -> str:
        """Arrival times divided by ``load`` (load 2: the same jobs arrive twice as fast)."""
        from dataclasses import replace

        from .sim import Workload, load_workload

        if load == 1.0:
            return self.base(name)
        w = load_workload(self.base(name))
        jobs = tuple(replace(j, time=j.time / load) for j in w.jobs)
        return self._write(f"{name}-load{load:g}", Workload(w.name, jobs))

    def repeated(self, name: str, k: int) -> str:
        """Every job repeated ``k`` times at its arrival time (the artifact's ``scale_<k>x`` workloads)."""
        from dataclasses import replace

        from .sim import Workload, load_workload

        if k == 1:
            return self.base(name)
        w = load_workload(self.base(name))
        jobs = tuple(replace(j, name=f"{j.name}-r{c}") for j in w.jobs for c in range(k))
        return self._write(f"{name}-x{k}", Workload(w.name, jobs))


# ------------------------------------------------------------------------------------------------------ running
class _Runner:
    """simulate_many groups with their records on disk (skipped when already there)."""

    def __init__(self, out: Path, workers: int | None, executor: Any, progress: bool | None,
                 log: Callable[[str], None], estimator: str = "bootstrap", job_model: str | None = None) -> None:
        self.out, self.workers, self.executor, self.progress, self.log = out, workers, executor, progress, log
        self.estimator, self.job_model = estimator, job_model
        self.simulations = 0
        self.redone: list[str] = []  #: result files found damaged or stale and run again

    def run(self, section: str, key: str, policies: Sequence[str], workloads: Sequence[str],
            **kw: Any) -> dict[tuple[str, str], Any]:
        """(policy, workload) -> SimResult of one simulate_many group (read back when on disk). Each result is a
        simulation record (:mod:`schedopt.sim.records`: written atomically, a header naming what was run, an end
        marker with a checksum); a file on disk is trusted only when it is whole and its header names this run, else
        it is named in the log and redone."""
        from .sim import SimResult, simulate_many
        from .sim.records import check_record, read_record, record_task, task_key, write_record

        d = self.out / "raw" / section
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            from .sim.records import output_error

            raise output_error(d, exc) from None

        def path(p: str, w: str) -> Path:
            return d / f"{_slug(key)}__{_slug(p)}__{_slug(Path(w).stem if w.endswith('.csv') else w)}.jsonl"

        def task(p: str, w: str) -> dict[str, Any]:
            return task_key({"section": section, "group": key, "policy": p, "workload": w,
                             "estimator": self.estimator, "job_model": self.job_model, **kw})

        def whole(p: str, w: str) -> bool:
            f = path(p, w)
            if not f.exists():
                return False
            why = check_record(f)
            if why is None and record_task(f) != task(p, w):
                why = "was written for other settings (its header names another run)"
            if why is not None:
                self.log(f"{f}: {why}; redoing it")
                self.redone.append(str(f))
            return why is None

        ok = {(p, w): whole(p, w) for p in policies for w in workloads}
        out: dict[tuple[str, str], Any] = {}
        todo_pols = [p for p in policies if any(not ok[(p, w)] for w in workloads)]
        todo_wls = [w for w in workloads if any(not ok[(p, w)] for p in policies)]
        if todo_pols and todo_wls:
            t0 = time.perf_counter()
            parts = d / f"{_slug(key)}.parts"  # every simulation's record the moment it ends: a stopped group resumes
            res = simulate_many(todo_pols, todo_wls, executor=self.executor, workers=self.workers,
                                progress=self.progress, estimator=self.estimator, output_dir=parts, resume=True,
                                **({"job_model": self.job_model} | kw))
            k = 0
            for p in todo_pols:
                for w in todo_wls:
                    done = res[k]
                    if not isinstance(done, SimResult):  # on_error="raise" returns results only: a guard for mypy
                        raise RuntimeError(f"simulation {p} on {w} failed: {done.error}")
                    write_record(path(p, w), done, task(p, w))
                    k += 1
            shutil.rmtree(parts, ignore_errors=True)  # the group's files above hold every record now
            self.simulations += len(res)
            self.log(f"{section}/{key}: {len(res)} simulations in {time.perf_counter() - t0:.0f} s")
        for p in policies:
            for w in workloads:
                out[(p, w)] = read_record(path(p, w))
        return out


def _mean(xs: Sequence[float]) -> float:
    xs = [x for x in xs if x is not None and not math.isnan(x)]
    return float(np.mean(xs)) if xs else math.nan


def _fmt(x: float, nd: int = 0) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:,.{nd}f}"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" if i == 0 else "---:" for i in range(len(head))) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def _policy_label(p: str) -> str:
    return {"schedopt.sim.adaptivity:SiaAnyRigid": "sia (any rigid count)"}.get(p, p)


# ------------------------------------------------------------------------------------------------------ sections
def _main(pl: Plan, wl: _Workloads, run: _Runner) -> tuple[str, dict[str, Any]]:
    from .sim import summarize

    wls = [wl.base(w) for w in pl.main_workloads]
    res = run.run("main", "main", pl.main_policies, wls, seeds=pl.seeds)
    rows, data = [], {}
    sia_avg = {w: summarize(res[("sia", w)])["avg_jct_s"] for w in wls} if "sia" in pl.main_policies else {}
    for p in pl.main_policies:
        s = [summarize(res[(p, w)]) for w in wls]
        avg = _mean([x["avg_jct_s"] for x in s])
        gaps = [1 - sia_avg[w] / x["avg_jct_s"] for w, x in zip(wls, s, strict=True)] if sia_avg else []
        data[p] = {"avg_jct_s": avg, "p99_jct_s": _mean([x["p99_jct_s"] for x in s]),
                   "makespan_s": _mean([x["makespan_s"] for x in s]), "gpu_hours": _mean([x["gpu_hours"] for x in s]),
                   "unfinished": sum(x["unfinished"] for x in s), "sia_below_pct": [100 * g for g in gaps]}
        below = "" if p == "sia" or not gaps else f"{100 * min(gaps):.0f} to {100 * max(gaps):.0f} %"
        rows.append([p, _fmt(avg / 3600, 3), _fmt(data[p]["p99_jct_s"] / 3600, 2), _fmt(data[p]["makespan_s"] / 3600, 2),
                     _fmt(data[p]["gpu_hours"], 1), str(data[p]["unfinished"]), below])
    md = _table(["policy", "avg JCT (h)", "p99 JCT (h)", "makespan (h)", "GPU-hours", "unfinished",
                 "Sia below it, per workload"], rows)
    md += f"\n\nMeans over {len(wls)} workload(s): {', '.join(pl.main_workloads)}."
    from .sim.published import vs_published  # issue 43: the Sia variants per application against the published run

    pub_md, data["vs_published"] = vs_published({w: {p: res[(p, w)] for p in pl.main_policies if p.startswith("sia")}
                                                 for w in wls})
    md += pub_md
    try:
        from .sim.plots import jct_cdf

        jct_cdf(list(res.values()), run.out / "main_jct_cdf.png")
        md += "\n\n![JCT CDF](main_jct_cdf.png)"
    except InputError:
        pass
    return md, data


def _sweep_table(name: str, xs: Sequence[float], pols: Sequence[str], val: dict[tuple[str, float], float],
                 xlabel: str) -> str:
    """One row per x: each policy's average JCT, then how far the first policy is below each other one."""
    rows = []
    for x in xs:
        r = [xlabel.format(x)] + [_fmt(val[(p, x)], 0) for p in pols]
        r += [_fmt(100 * (1 - val[(pols[0], x)] / val[(q, x)]), 0) + " %" for q in pols[1:]]
        rows.append(r)
    head = [name] + [f"{_policy_label(p)} avg JCT (s)" for p in pols]
    head += [f"{_policy_label(pols[0])} below {_policy_label(q)}" for q in pols[1:]]
    return _table(head, rows)


def _line_figure(path: Path, xs: Sequence[float], series: dict[str, Sequence[float]], xlabel: str, ylabel: str,
                 log: bool = False) -> str:
    try:
        from .sim.plots import pyplot

        plt = pyplot()
    except InputError:
        return ""
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for name, ys in series.items():
        ax.plot(xs, ys, marker="o", label=_policy_label(name))
    if log:
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return f"\n\n![{path.stem}]({path.name})"


def _fraction_sweep(pl: Plan, wl: _Workloads, run: _Runner, fractions: Sequence[float], name: str,
                    kind: str) -> dict[tuple[str, float], float]:
    """Each adaptivity policy's average JCT (mean over the workloads) with a seeded fraction of jobs of ``kind``
    (``rigid`` or ``strong``), per fraction."""
    from .sim import summarize
    from .sim.adaptivity import limit_adaptivity

    val: dict[tuple[str, float], float] = {}
    for f in fractions:
        per: dict[str, list[float]] = {p: [] for p in pl.adaptivity_policies}
        for w in pl.adaptivity_workloads:
            base = wl.base(w)
            jm = (limit_adaptivity(base, rigid=f, seed=0, job_model=pl.job_model) if kind == "rigid" else
                  limit_adaptivity(base, strong=f, seed=0, job_model=pl.job_model))
            res = run.run("adaptivity", f"{name}{f:g}-{w}", pl.adaptivity_policies, [base], job_model=jm,
                          seeds=pl.seeds)
            for p in pl.adaptivity_policies:
                per[p].append(summarize(res[(p, base)])["avg_jct_s"])
        for p in pl.adaptivity_policies:
            val[(p, f)] = _mean(per[p])
    return val


def _adaptivity(pl: Plan, wl: _Workloads, run: _Runner) -> tuple[str, dict[str, Any]]:
    val = _fraction_sweep(pl, wl, run, pl.rigid_fractions, "rigid", "rigid")
    md = _sweep_table("rigid jobs", pl.rigid_fractions, pl.adaptivity_policies, val, "{:.0%}")
    md += _line_figure(run.out / "adaptivity.png", [100 * f for f in pl.rigid_fractions],
                       {p: [val[(p, f)] for f in pl.rigid_fractions] for p in pl.adaptivity_policies},
                       "rigid jobs (%)", "average JCT (s)")
    data: dict[str, Any] = {f"{p}@{f:g}": v for (p, f), v in val.items()}
    # strong-scaling jobs (their requested batch on 1 .. their requested GPUs), the rest adaptive; 0 % is the rigid
    # sweep's first row when it has one
    strong = [f for f in pl.strong_fractions if f > 0]
    if strong:
        sval = {k: v for k, v in val.items() if k[1] == 0.0}
        sval.update(_fraction_sweep(pl, wl, run, strong, "strong", "strong"))
        xs = ([0.0] if all((p, 0.0) in sval for p in pl.adaptivity_policies) else []) + strong
        md += "\n\n" + _sweep_table("strong-scaling jobs", xs, pl.adaptivity_policies, sval, "{:.0%}")
        md += _line_figure(run.out / "adaptivity_strong.png", [100 * f for f in xs],
                           {p: [sval[(p, f)] for f in xs] for p in pl.adaptivity_policies},
                           "strong-scaling jobs (%)", "average JCT (s)")
        data.update({f"{p}@strong{f:g}": v for (p, f), v in sval.items() if f > 0})
    return md, data


def _load(pl: Plan, wl: _Workloads, run: _Runner) -> tuple[str, dict[str, Any]]:
    from .sim import summarize

    val: dict[tuple[str, float], float] = {}
    for x in pl.loads:
        wls = [wl.loaded(w, x) for w in pl.load_workloads]
        res = run.run("load", f"load{x:g}", pl.load_policies, wls, seeds=pl.seeds)
        for p in pl.load_policies:
            val[(p, x)] = _mean([summarize(res[(p, w)])["avg_jct_s"] for w in wls])
    md = _sweep_table("load (x arrival rate)", pl.loads, pl.load_policies, val, "{:g}")
    md += _line_figure(run.out / "load.png", list(pl.loads),
                       {p: [val[(p, x)] for x in pl.loads] for p in pl.load_policies}, "load (x arrival rate)",
                       "average JCT (s)")
    return md, {f"{p}@{x:g}": v for (p, x), v in val.items()}


def _sensitivity(pl: Plan, wl: _Workloads, run: _Runner) -> tuple[str, dict[str, Any]]:
    from .sim import summarize

    wls = [wl.base(w) for w in pl.sensitivity_workloads]
    specs = [f"sia:p={p:g}:lam=1.1" for p in pl.p_values] + [f"sia:p=-0.5:lam={x:g}" for x in pl.lam_values]
    specs = list(dict.fromkeys(specs))
    res = run.run("sensitivity", "p-lam", specs, wls, seeds=pl.seeds)
    avg = {s: _mean([summarize(res[(s, w)])["avg_jct_s"] for w in wls]) for s in specs}
    p99 = {s: _mean([summarize(res[(s, w)])["p99_jct_s"] for w in wls]) for s in specs}
    ref = avg.get("sia:p=-0.5:lam=1.1", math.nan)
    rows = [[s.removeprefix("sia:"), _fmt(avg[s]), _fmt(p99[s]), _fmt(100 * (avg[s] / ref - 1), 1) + " %"]
            for s in specs]
    md = _table(["setting", "avg JCT (s)", "p99 JCT (s)", "vs p=-0.5, lambda=1.1"], rows)
    return md, {"avg_jct_s": avg, "p99_jct_s": p99}


def _scale(pl: Plan, wl: _Workloads, run: _Runner) -> tuple[str, dict[str, Any]]:
    import warnings

    med: dict[tuple[str, int], tuple[float, float, int]] = {}
    for g in pl.scale_gpus:
        w = wl.repeated(pl.scale_workload, g // 64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the runs are capped on purpose
            res = run.run("scale", f"gpus{g}", pl.scale_policies, [w], cluster=f"sia-{g}",
                          max_time=pl.scale_max_time, seeds=pl.seeds)
        for p in pl.scale_policies:
            r = res[(p, w)]
            wall = [x.policy_seconds for x in r.rounds if x.active]
            cpu = [x.policy_cpu_seconds for x in r.rounds if x.active]
            med[(p, g)] = (float(np.median(wall)) if wall else math.nan,
                           float(np.median(cpu)) if cpu else math.nan, len(wall))
    rows = []
    for g in pl.scale_gpus:
        rows.append([str(g)] + [f"{_fmt(1e3 * med[(p, g)][0], 1)} / {_fmt(1e3 * med[(p, g)][1], 1)}"
                                for p in pl.scale_policies])
    md = _table(["GPUs"] + [f"{p} ms wall / CPU" for p in pl.scale_policies], rows)
    md += (f"\n\nMedian policy time per round over the first {pl.scale_max_time / 60:.0f} simulated minutes "
           f"(rounds with jobs), {pl.scale_workload} with every job repeated GPUs/64 times.")
    md += _line_figure(run.out / "scale.png", list(pl.scale_gpus),
                       {p: [med[(p, g)][1] for g in pl.scale_gpus] for p in pl.scale_policies}, "GPUs",
                       "policy CPU s per round (median)", log=True)
    return md, {f"{p}@{g}": {"wall_s": v[0], "cpu_s": v[1], "rounds": v[2]} for (p, g), v in med.items()}


# ------------------------------------------------------------------------------------------------------ verdicts
HOLDS, FAILS, TOO_SMALL = "holds", "does not hold", "too small to tell at this size"
#: what :func:`judge` may answer, per claim
VERDICTS = (HOLDS, FAILS, TOO_SMALL)
#: ``main``: the paper's smallest gap (Sia's average JCT at least 30 % below the others')
MAIN_GAP = 0.30
#: ``sensitivity``: "robust" read as every setting's average JCT within 25 % of the reference setting's
ROBUST = 0.25
#: ``scale``: "seconds per round" read as a median policy CPU time of at most 10 s per round at the largest size
SCALE_SECONDS = 10.0
#: ``scale``: the paper's largest cluster (2,000 GPUs; the sweep's 2,048)
SCALE_GPUS = 2048


@dataclass(frozen=True)
class ClaimVerdict:
    """Whether a section's numbers support the paper's claim (``CLAIMS``): ``verdict`` is one of
    :data:`VERDICTS`; ``reason`` gives the numbers and the rule."""

    section: str
    verdict: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"section": self.section, "verdict": self.verdict, "reason": self.reason}


def _pct(x: float) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{100 * x:.0f} %"


def _lead(a: float, b: float) -> float:
    """How far ``a`` is below ``b`` (1 - a/b; NaN when either is missing)."""
    return 1 - a / b if b and not (math.isnan(a) or math.isnan(b)) else math.nan


def judge(section: str, data: dict[str, Any], pl: Plan) -> ClaimVerdict:
    """The verdict on ``section``'s claim from its data (what :func:`reproduce_sia` stores in ``results.json``)
    and the plan that produced it. A plan of truncated workloads (``--quick``) is too small to tell: the claims are
    about whole workloads (saturn/1: 160 jobs) contending for 64 GPUs, where a few jobs on an idle cluster show
    noise; what its numbers say is given in the reason all the same."""
    if section not in SECTIONS:
        raise InputError("section", section, f"unknown; have {', '.join(SECTIONS)}")
    here, ok = _JUDGE[section](data, pl)
    small = (f"{pl.truncate} jobs per workload" + (f" ({', '.join(pl.only_apps)} only)" if pl.only_apps else "")
             if pl.truncate is not None else None)
    if ok is None:  # the section itself cannot tell (too few points, a size below the claim's)
        return ClaimVerdict(section, TOO_SMALL, here)
    if small is not None:
        return ClaimVerdict(section, TOO_SMALL, f"{small}: the claim is about whole workloads contending for the "
                                                f"cluster; here {here}")
    return ClaimVerdict(section, HOLDS if ok else FAILS, here)


def _judge_main(data: dict[str, Any], pl: Plan) -> tuple[str, bool | None]:
    others = [p for p in pl.main_policies if p != "sia" and p in data]
    if "sia" not in data or not others:
        return "no other policy ran beside sia", None
    gaps = {q: _mean([g / 100 for g in data[q]["sia_below_pct"]]) for q in others}
    here = "; ".join(f"Sia's average JCT is {_pct(g)} below {q}'s (mean over workloads)" for q, g in gaps.items())
    return here + f" (the claim: at least {_pct(MAIN_GAP)})", all(g >= MAIN_GAP for g in gaps.values())


def _sweep_leads(data: dict[str, Any], pols: Sequence[str], xs: Sequence[float], fmt: str,
                 key: str = "{p}@{x:g}") -> tuple[dict[str, list[float]], str]:
    leads = {q: [_lead(data.get(key.format(p=pols[0], x=x), math.nan), data.get(key.format(p=q, x=x), math.nan))
                 for x in xs] for q in pols[1:]}
    here = "; ".join(f"{_policy_label(pols[0])} below {_policy_label(q)}: " +
                     ", ".join(f"{_pct(v)} at {fmt.format(x)}" for v, x in zip(ls, xs, strict=True))
                     for q, ls in leads.items())
    return leads, here


def _judge_adaptivity(data: dict[str, Any], pl: Plan) -> tuple[str, bool | None]:
    pols, xs = pl.adaptivity_policies, pl.rigid_fractions
    if len(pols) < 2 or len(xs) < 2:
        return "the sweep has fewer than two policies or two rigid fractions", None
    leads, here = _sweep_leads(data, pols, xs, "{:.0%} rigid")
    return here + " (the claim: ahead at every fraction)", all(v > 0 for ls in leads.values() for v in ls)


def _judge_load(data: dict[str, Any], pl: Plan) -> tuple[str, bool | None]:
    pols, xs = pl.load_policies, sorted(pl.loads)
    if len(pols) < 2 or len(xs) < 2:
        return "the sweep has fewer than two policies or two loads", None
    leads, here = _sweep_leads(data, pols, xs, "load {:g}")
    ok = all(ls[-1] > ls[0] and ls[-1] > 0 for ls in leads.values())
    return here + " (the claim: the lead at the highest load above the lead at the lowest)", ok


def _judge_sensitivity(data: dict[str, Any], pl: Plan) -> tuple[str, bool | None]:
    avg = data.get("avg_jct_s", {})
    ref = avg.get("sia:p=-0.5:lam=1.1", math.nan)
    devs = {k: avg[k] / ref - 1 for k in avg if k != "sia:p=-0.5:lam=1.1"} if ref and not math.isnan(ref) else {}
    if not devs:
        return "the reference setting p=-0.5, lambda=1.1 or the others did not run", None
    worst = max(devs, key=lambda k: abs(devs[k]))
    here = (f"the farthest setting, {worst.removeprefix('sia:')}, is {100 * devs[worst]:+.0f} % from p=-0.5, "
            f"lambda=1.1 (the claim read as: every setting within {_pct(ROBUST)})")
    return here, all(abs(v) <= ROBUST for v in devs.values())


def _judge_scale(data: dict[str, Any], pl: Plan) -> tuple[str, bool | None]:
    g = max(pl.scale_gpus)
    sias = [p for p in pl.scale_policies if p.split(":")[0] == "sia"]
    if g < SCALE_GPUS or not sias:
        return f"the largest cluster run is {g} GPUs; the claim is about {SCALE_GPUS:,}", None
    cpu = {p: data.get(f"{p}@{g}", {}).get("cpu_s", math.nan) for p in pl.scale_policies}
    best = min(cpu[p] for p in sias)
    pollux = [p for p in pl.scale_policies if p.startswith("pollux")]
    here = f"at {g} GPUs the median policy CPU time per round is " + ", ".join(
        f"{_fmt(cpu[p], 2)} s for {p}" for p in pl.scale_policies) + f" (the claim: Sia within {SCALE_SECONDS:g} s" + (
        ", Pollux slower)" if pollux else "; no Pollux run to compare)")
    return here, best <= SCALE_SECONDS and all(cpu[p] > best for p in pollux)


_JUDGE: dict[str, Callable[[dict[str, Any], Plan], tuple[str, bool | None]]] = {
    "main": _judge_main, "adaptivity": _judge_adaptivity, "load": _judge_load, "sensitivity": _judge_sensitivity,
    "scale": _judge_scale}


_RUN = {"main": _main, "adaptivity": _adaptivity, "load": _load, "sensitivity": _sensitivity, "scale": _scale}
_TITLES = {"main": "Main comparison", "adaptivity": "Limited adaptivity (rigid and strong-scaling jobs)",
           "load": "Load", "sensitivity": "Sensitivity to p and lambda", "scale": "Policy time per round vs cluster size"}


def _sections(sections: Sequence[str] | str | None) -> tuple[str, ...]:
    """The sections to run (all when None); a comma-separated text or a sequence of names, none empty or unknown."""
    if sections is None:
        return SECTIONS
    if not isinstance(sections, (str, list, tuple)):
        raise InputError("sections", sections, f"must be names of sections ({', '.join(SECTIONS)}), or None: all")
    items = sections.split(",") if isinstance(sections, str) else list(sections)
    if not all(isinstance(x, str) for x in items):
        raise InputError("sections", sections, f"must be names of sections ({', '.join(SECTIONS)})")
    names = [x.strip() for x in items]
    if not any(names):
        raise InputError("sections", sections, f"names no section; have {', '.join(SECTIONS)}")
    if not all(names):
        raise InputError("sections", sections, "has an empty item")
    bad = [x for x in names if x not in SECTIONS]
    if bad:
        raise InputError("sections", bad, f"unknown; have {', '.join(SECTIONS)}")
    return tuple(dict.fromkeys(names))


def _output_folder(out: str | Path) -> Path:
    """``out`` made a folder (created if missing); a file there, or a folder that cannot be written, is an
    InputError naming it, before any simulation runs."""
    from .sim.records import output_folder

    if not isinstance(out, (str, Path)) or not str(out).strip():
        raise InputError("output", out, "must be a folder path")
    return output_folder(out)


def reproduce_sia(out: str | Path, *, quick: bool = False, sections: Sequence[str] | str | None = None,
                  workers: int | None = None, executor: Any = None, progress: bool | None = None,
                  the_plan: Plan | None = None, log: Callable[[str], None] | None = None) -> Path:
    """Run the evaluation into ``out`` and write ``out/report.md`` (returned) and ``out/results.json``, each section
    with the paper's claim and a verdict on it (:func:`judge`).
    ``sections``: a subset of :data:`SECTIONS`; ``workers`` / ``executor``: as :func:`schedopt.sim.simulate_many`
    (a process pool, a Dask client, a Ray pool, or a spec string of :func:`schedopt.executors.open_executor`);
    ``the_plan``: override :func:`plan`. Every option is checked before anything runs, with the rules of
    ``simulate`` (:mod:`schedopt.sim.limits`). Every result is a simulation record (written atomically, with a
    checksummed end marker); a rerun reuses a result only when it is whole and was written for the same run, and
    names and redoes any other. Seeds: the plan's ``seeds`` go to the policies (only Pollux's search draws random
    numbers); the shipped workloads are fixed, so a seed changes no job."""
    from .executors import kind_of, open_executor
    from .sim.limits import check_flag, check_seeds, check_workers

    quick = bool(check_flag(quick, "quick"))
    progress = check_flag(progress, "progress", allow_none=True)
    workers = check_workers(workers)
    if the_plan is not None and not isinstance(the_plan, Plan):
        raise InputError("the_plan", type(the_plan).__name__, "must be a schedopt.reproduce.Plan")
    pl = the_plan if the_plan is not None else plan(quick)
    check_seeds(pl.seeds, "the_plan.seeds")
    secs = _sections(sections)
    if executor is not None and not isinstance(executor, str):
        kind_of(executor)
    if log is not None and not callable(log):
        raise InputError("log", type(log).__name__, "must be a callable taking a line of text")
    o = _output_folder(out)
    with open_executor(executor, workers) if isinstance(executor, str) else contextlib.nullcontext(executor) as ex:
        return _reproduce(o, pl, secs, workers, ex, progress, log)


def _reproduce(o: Path, pl: Plan, secs: Sequence[str], workers: int | None, executor: Any, progress: bool | None,
               log: Callable[[str], None] | None) -> Path:
    from .sim.records import atomic_write_text

    say = log or (lambda m: print(m, file=sys.stderr))
    run = _Runner(o, workers, executor, progress, say, pl.estimator, pl.job_model)
    wl = _Workloads(o, pl.truncate, pl.only_apps)
    t0 = time.perf_counter()
    parts = [f"# Sia (SOSP'23): the evaluation reproduced with schedopt{' (quick subset)' if pl.quick else ''}\n",
             f"Command: `schedopt reproduce sia -o {o}{' --quick' if pl.quick else ''}`. Sia's 64-GPU cluster "
             "(6 x 4 T4, 2 x 8 A100, 3 x 8 RTX 2080Ti), 60 s rounds, "
             f"the `{pl.job_model}` job model, the {pl.estimator} estimator. Each section gives the paper's claim, "
             "a verdict on it from the numbers below (holds, does not hold, or too small to tell at this size) "
             "and the reason."]
    if pl.truncate is not None:
        parts.append(f"**These sizes cannot test the paper's claims.** Every workload is cut to its first "
                     f"{pl.truncate} jobs" + (f" of {', '.join(pl.only_apps)}" if pl.only_apps else "") +
                     f" and the largest cluster has {max(pl.scale_gpus)} GPUs: the tables show that the pipeline "
                     "runs end to end, not who wins. Run without --quick to test the claims.")
    results: dict[str, Any] = {}
    verdicts: dict[str, dict[str, str]] = {}
    for s in secs:
        t = time.perf_counter()
        md, data = _RUN[s](pl, wl, run)
        results[s] = data
        v = judge(s, data, pl)
        verdicts[s] = v.to_dict()
        parts.append(f"## {_TITLES[s]}\n\n**Paper:** {CLAIMS[s]}\n\n**Verdict: {v.verdict}.** {v.reason}.\n\n{md}"
                     f"\n\n_{time.perf_counter() - t:.0f} s wall for this section._")
    wall = time.perf_counter() - t0
    redone = f" {len(run.redone)} result files were damaged or stale and redone." if run.redone else ""
    parts.append(f"Total: {run.simulations} simulations run now, {wall:.0f} s wall.{redone}")
    atomic_write_text(o / "results.json", json.dumps({"quick": pl.quick, "sections": results, "verdicts": verdicts,
                                                      "redone": run.redone, "wall_s": wall},
                                                     indent=1, default=float) + "\n")
    return atomic_write_text(o / "report.md", "\n\n".join(parts) + "\n")


# ------------------------------------------------------------------------------------------------------ CLI
def _cmd(args: argparse.Namespace) -> int:
    from .executors import spec_from_flags
    from .sim.cli import parse_workloads as workload_list
    from .sim.workloads import load_workload

    try:
        secs = None if args.sections is None else _sections(args.sections)
    except InputError as exc:
        raise InputError("--sections", exc.value, exc.message) from None
    spec = spec_from_flags(args.executor, args.dask, args.ray)
    prog = {"on": True, "off": False}.get(args.progress)
    pl = plan(args.quick)
    if args.workloads is not None:
        from dataclasses import replace

        try:
            ws = tuple(workload_list(args.workloads))
        except InputError as exc:
            raise InputError("--workloads", exc.value, exc.message) from None
        for w in ws:
            try:
                load_workload(w)  # a name that does not resolve is refused before any simulation
            except InputError as exc:
                raise InputError("--workloads", w, exc.message) from None
        pl = replace(pl, main_workloads=ws, adaptivity_workloads=ws, load_workloads=ws, sensitivity_workloads=ws)
    try:
        rep = reproduce_sia(args.output, quick=args.quick, sections=secs, workers=args.workers, executor=spec,
                            progress=prog, the_plan=pl)
    except InputError as exc:
        flag = {"output": "-o/--output", "sections": "--sections", "workers": "--workers"}.get(exc.field, exc.field)
        raise InputError(flag, exc.value, exc.message) from None
    print(rep)
    return 0


def add_parser(subparsers: Any) -> None:
    """Register ``reproduce`` (``schedopt reproduce sia -o out/ [--quick]``)."""
    from .cli_support import add_executor_arguments
    from .sim.cli import parse_workers

    r = subparsers.add_parser(
        "reproduce", help="reproduce a paper's evaluation (sia)",
        description="Run a paper's whole evaluation and write a report beside its claims, with a verdict on each "
                    "(holds, does not hold, or too small to tell at this size). Every result is written atomically "
                    "with a checksummed end marker; a rerun reuses only whole results of the same run and redoes "
                    "the rest. Seeds: the runs use seed 0; the shipped workloads are fixed, and a seed varies only "
                    "the random draws of Pollux's search (see docs/reference/seeds.md).")
    r.add_argument("paper", choices=["sia"], help="which paper")
    r.add_argument("-o", "--output", required=True, help="output folder (rerun to resume)")
    r.add_argument("--quick", action="store_true",
                   help="a small subset (about a minute): shows the pipeline runs; its sizes cannot test the claims")
    r.add_argument("--sections", default=None, help=f"comma-separated subset of {','.join(SECTIONS)}")
    r.add_argument("--workloads", default=None,
                   help="comma-separated workloads replacing those of the main, adaptivity, load and sensitivity "
                        "sections (e.g. saturn/1)")
    r.add_argument("--workers", type=parse_workers, default=None, help="processes (default: CPU count)")
    add_executor_arguments(r, "simulations")
    r.add_argument("--progress", choices=("auto", "on", "off"), default="auto")
    r.add_argument("--verbose", action="store_true", help="log lines of schedopt at INFO, and of Dask / Ray")
    r.set_defaults(func=_cmd)
