"""From a trace to a workload: the Pollux artifact's rule, the Sia artifact's rule, and a resampler for workloads.

Rules (card ``formulations/traces.md``, "Generating a workload"; re-implemented from the published generators'
description, no code copied):

* ``pollux`` (petuum/adaptdl ``simulator/workload.py``, which made ``pollux/1..8`` and the 0.5/1.5/2.0 sets from
  Philly): keep jobs with a duration >= 60 s and under 1000 GPU-hours; shift the clock back ``start_h`` hours and keep
  jobs whose *time of day* falls in the first ``window_h`` hours (all days pooled); sample ``round(jobs * load)`` of
  them without replacement; a job arrives at its time of day; its GPU-time class picks the application (< 1 GPU-h:
  cifar10 or ncf, even odds; < 10: deepspeech2, half of them turned into bert by a second coin; < 100: yolov3; else
  imagenet) and the submitter's ``(num_replicas, batch_size)`` is drawn evenly from that application's tuned
  configurations (:data:`CONFIGURATIONS`).
* ``sia`` (siasosp23/artifacts ``sia-simulator/utils/generate_workload.py``, which made Saturn, Philly and newTrace):
  the same filters and classes, but one contiguous window ``[first submission + start_h, + window_h)`` of the real
  calendar (arrivals keep their real spacing), small jobs are all cifar10, and the configurations are the ones the
  Sia workloads use (chosen there for 8-GPU RTX nodes, at most 16 GPUs).

* ``names`` (ours, for traces that name their models, e.g. Gavel's job types): the trace's model name picks the
  application through ``app_map`` (:data:`DEFAULT_APP_MAP`), the job keeps the trace's GPU count, its batch is the
  application's initial batch x GPUs (capped at its maximum: the alternative Pollux's generator left commented out),
  and the arrivals keep their real spacing in the window ``[first submission + start_h, + window_h)`` (Sia's).
  Durations are not needed.

Load scales the number of jobs in the same window (Pollux's 0.5/1.0/1.5/2.0 sets hold 80/160/240/320 jobs over 8 h).
Every draw comes from one seeded ``numpy.random.Generator``; the mapping of each job (trace row, class, GPU-time) is
kept in :class:`GeneratedWorkload` and written beside the workload.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError
from .trace import Trace

if TYPE_CHECKING:  # imported where used: schedopt.sim may re-export generate_workload, so no import cycle here
    from ..sim.workloads import Workload

__all__ = ["CLASSES", "CONFIGURATIONS", "DEFAULT_APP_MAP", "RULES", "GeneratedWorkload", "JobOrigin", "generate", "generate_workload",
           "resample_workload"]

#: GPU-time classes (GPU-hours, upper bounds) and the application(s) each maps to
CLASSES = (("small", 1.0), ("medium", 10.0), ("large", 100.0), ("xl", float("inf")))
#: How a trace's jobs become workload jobs: Pollux's rule, Sia's, or the trace's own model names.
RULES = ("pollux", "sia", "names")
#: rule ``names``: the trace's own model name (``TraceJob.application``, matched by prefix) -> zoo application. The
#: default covers Gavel's job types (same model and task where the zoo has one; Transformer and LM are the nearest
#: language / recurrent models, an assumption); A3C and CycleGAN have no counterpart and are left out unless mapped.
DEFAULT_APP_MAP = {"ResNet-18": "cifar10", "ResNet-50": "imagenet", "Recommendation": "ncf", "Transformer": "bert",
                   "LM": "deepspeech2"}
_APPS: dict[str, dict[str, tuple[str, ...]]] = {
    "pollux": {"small": ("cifar10", "ncf"), "medium": ("deepspeech2",), "large": ("yolov3",), "xl": ("imagenet",)},
    "sia": {"small": ("cifar10",), "medium": ("deepspeech2",), "large": ("yolov3",), "xl": ("imagenet",)},
}
_BERT_SHARE = 0.5  # both rules turn half of the medium (deepspeech2) jobs into bert with an independent coin


def _configurations() -> dict[str, dict[str, list[tuple[int, int]]]]:
    raw = json.loads(resources.files("schedopt.traces").joinpath("data/configurations.json").read_text())
    return {rule: {app: [(int(c[0]), int(c[1])) for c in cs] for app, cs in apps.items()}
            for rule, apps in raw["rules"].items()}


#: rule -> application -> the (num_replicas, batch_size) configurations a submitter picks from (evenly); derived
#: from the artifacts' shipped workloads by ``tools/derive_trace_data.py``
CONFIGURATIONS = _configurations()


@dataclass(frozen=True)
class JobOrigin:
    """Where a generated job came from: the trace row and job, its GPU-time class and the draws made."""

    name: str
    trace_job: str
    trace_row: int
    trace_gpus: int
    trace_gpu_hours: float | None
    size_class: str
    trace_application: str = ""


@dataclass(frozen=True)
class GeneratedWorkload:
    """A generated :class:`~schedopt.sim.Workload` with each job's origin and the generation's parameters."""

    workload: Workload
    origins: tuple[JobOrigin, ...]
    meta: dict[str, Any]

    def to_csv(self) -> str:
        """The workload CSV (the five standard columns first, read by :func:`schedopt.sim.read_workload`) plus
        provenance columns ``trace_job,trace_row,trace_gpus,trace_gpu_hours,size_class,trace_application``."""
        by = {o.name: o for o in self.origins}
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(["name", "time", "application", "num_replicas", "batch_size", "trace_job", "trace_row",
                    "trace_gpus", "trace_gpu_hours", "size_class", "trace_application"])
        for j in self.workload.jobs:
            o = by.get(j.name)
            gh = "" if o is None or o.trace_gpu_hours is None else f"{o.trace_gpu_hours:.6g}"
            extra = ([o.trace_job, o.trace_row, o.trace_gpus, gh, o.size_class, o.trace_application] if o
                     else ["", "", "", "", "", ""])
            w.writerow([j.name, repr(j.time), j.application, j.num_replicas, j.batch_size, *extra])
        return out.getvalue()

    def write(self, path: str | Path) -> Path:
        """Write the CSV and ``<path>.meta.json`` (rule, seed, load, window, source trace, the class -> application
        map and the configurations drawn from). Returns the CSV path."""
        p = Path(path)
        if p.is_dir():
            raise InputError("output", str(p), "is a folder; give the workload CSV's file name (the metadata goes "
                             "beside it as <output>.meta.json)")
        if not p.parent.is_dir():
            raise InputError("output", str(p), f"its folder {p.parent} does not exist")
        p.write_text(self.to_csv())
        Path(str(p) + ".meta.json").write_text(json.dumps(self.meta, indent=1, sort_keys=True) + "\n")
        return p


def size_class(gpu_hours: float) -> str:
    for name, hi in CLASSES:
        if gpu_hours < hi:
            return name
    return CLASSES[-1][0]


#: the most jobs a generated workload may hold: every job is simulated one by one (the published workloads hold 160
#: at load 1.0; a million is hours of simulation per policy)
MAX_JOBS = 1_000_000


def _real(name: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating):
        raise InputError(name, v, "must be a number")
    return float(v)


def check_params(jobs: int, load: float, window_h: float, rule: str, seed: Any = 0) -> int:
    """The job count :func:`generate` draws, after checking its knobs (each bounded with its reason)."""
    if rule not in RULES:
        raise InputError("rule", rule, f"must be one of {RULES}")
    if isinstance(jobs, bool) or not (isinstance(jobs, int | np.integer) and 1 <= jobs <= MAX_JOBS):
        raise InputError("jobs", jobs, f"must be a whole number in 1..{MAX_JOBS} (the job count at load 1.0; "
                         "every job is simulated one by one)")
    if not (np.isfinite(_real("load", load)) and load > 0):
        raise InputError("load", load, "must be a finite number > 0")
    if not (np.isfinite(_real("window_h", window_h)) and 0 < window_h <= 24 * 366 * 100):
        raise InputError("window_h", window_h, "must be a number of hours in (0, 876,816] (a century: no trace is "
                         "longer)")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= seed < 2**32:
        raise InputError("seed", seed, "must be an integer with 0 <= seed < 2**32 (the simulator's seeds: numpy's "
                         "generators take no negative seed)")
    n = round(jobs * load)
    if n < 1:
        raise InputError("load", load, f"gives {jobs} x {load:g} = {jobs * load:.3g} jobs, which rounds to none: "
                         "raise the load or the job count")
    if n > MAX_JOBS:
        raise InputError("load", load, f"gives {jobs} x {load:g} = {n:.3g} jobs, more than MAX_JOBS = {MAX_JOBS} "
                         "(every job is simulated one by one)")
    return n


def _map_name(app_map: dict[str, str], model: str) -> str | None:
    """The zoo application of a trace's model name: the longest key that ``model`` starts with."""
    hits = [k for k in app_map if model.startswith(k)]
    return app_map[max(hits, key=len)] if hits else None


def generate(trace: Trace, *, jobs: int = 160, load: float = 1.0, window_h: float = 8.0, seed: int = 0,
             rule: str = "pollux", start_h: float | None = None, name: str | None = None,
             app_map: dict[str, str] | None = None) -> GeneratedWorkload:
    """A workload of ``round(jobs * load)`` jobs drawn from ``trace`` by ``rule`` (see the module doc).

    ``start_h`` defaults to 2 h for ``pollux`` and ``sia`` (both generators' default) and 0 for ``names``.
    ``app_map`` (rule ``names`` only; default :data:`DEFAULT_APP_MAP`) maps the trace's model names to applications.
    """
    n = check_params(jobs, load, window_h, rule, seed)
    if start_h is None:
        start_h = 0.0 if rule == "names" else 2.0
    if not np.isfinite(_real("start_h", start_h)) or start_h < 0:
        raise InputError("start_h", start_h, "must be a finite number of hours >= 0")
    if app_map is not None and rule != "names":
        raise InputError("app_map", app_map, "applies to rule 'names' only (the other rules map by GPU-time class)")
    amap = dict(DEFAULT_APP_MAP if app_map is None else app_map)
    if rule == "names":
        from ..sim.jobs import applications

        bad = {k: v for k, v in amap.items() if v not in applications()}
        if bad:
            raise InputError("app_map", bad, f"maps to unknown applications; have {sorted(applications())}")
    pool, times, apps_of = [], [], []
    counts = {"no_duration": 0, "no_gpus": 0, "under_60s": 0, "over_1000_gpu_h": 0, "outside_window": 0}
    if rule == "names":
        counts = {"no_gpus": 0, "unmapped_application": 0, "outside_window": 0}
    t0 = trace.start_s + start_h * 3600.0
    for j in trace.jobs:
        if rule == "names":
            if j.gpus < 1:
                counts["no_gpus"] += 1
                continue
            mapped = _map_name(amap, j.application)
            if mapped is None:
                counts["unmapped_application"] += 1
                continue
        else:
            mapped = None
            if j.duration_s is None:
                counts["no_duration"] += 1
                continue
            if j.gpus < 1:
                counts["no_gpus"] += 1
                continue
            if j.duration_s < 60:
                counts["under_60s"] += 1
                continue
            if j.gpus * j.duration_s >= 1000 * 3600:
                counts["over_1000_gpu_h"] += 1
                continue
        if rule == "pollux":
            t = (trace.time_of_day_s(j) - start_h * 3600.0) % 86400.0
        else:
            t = j.submit_s - t0
        if not 0 <= t < window_h * 3600.0:
            counts["outside_window"] += 1
            continue
        pool.append(j)
        times.append(t)
        apps_of.append(mapped)
    if len(pool) < n:
        hint = ("; the trace gives no run times (Gavel's are in steps) and this rule classes jobs by GPU-hours: "
                "try rule 'names'" if counts.get("no_duration") == len(trace) else "")
        raise InputError("jobs", n, f"the trace has only {len(pool)} eligible jobs in the window ({counts} left out); "
                         f"lower jobs or load, or widen window_h{hint}")
    rng = np.random.default_rng(seed)
    bert_rng = np.random.default_rng([seed, 1])  # its own stream, as in both artifacts: bert draws move nothing else
    pick = rng.choice(len(pool), size=n, replace=False)
    recs = []
    for i in pick:
        j = pool[int(i)]
        if rule == "names":
            from ..sim.jobs import true_model

            app = str(apps_of[int(i)])
            m = true_model(app)
            cfg = (j.gpus, int(min(m.init_batch * j.gpus, m.max_batch)))
            recs.append((float(times[int(i)]), app, cfg, j, j.gpu_time_s and j.gpu_time_s / 3600.0, ""))
            continue
        gh = j.gpus * float(j.duration_s) / 3600.0  # type: ignore[arg-type]
        cls = size_class(gh)
        apps = _APPS[rule][cls]
        app = apps[int(rng.integers(len(apps)))]
        cfgs = CONFIGURATIONS[rule][app]
        cfg = cfgs[int(rng.integers(len(cfgs)))]
        if app == "deepspeech2" and bert_rng.random() < _BERT_SHARE:
            app = "bert"
            bcfg = CONFIGURATIONS[rule][app]
            cfg = bcfg[int(bert_rng.integers(len(bcfg)))]
        recs.append((float(times[int(i)]), app, cfg, j, gh, cls))
    recs.sort(key=lambda r: r[0])
    from ..sim.workloads import Workload, WorkloadJob

    wjobs, origins = [], []
    for k, (t, app, cfg, j, hours, cls) in enumerate(recs):
        nm = f"{app}-{k}"
        wjobs.append(WorkloadJob(nm, round(t, 3), app, int(cfg[0]), int(cfg[1])))
        origins.append(JobOrigin(nm, j.job_id, j.row, j.gpus, hours, cls, j.application))
    label = name or f"{trace.name}@{load:g}-seed{seed}"
    meta: dict[str, Any] = {"rule": rule, "seed": seed, "load": load, "jobs_at_load_1": jobs, "jobs": n,
                            "window_h": window_h, "start_h": start_h, "trace": trace.source,
                            "trace_format": trace.format, "trace_jobs": len(trace), "eligible": len(pool),
                            "left_out": counts}
    if rule == "names":
        meta.update({"app_map": amap, "configuration": "num_replicas = the trace's GPUs; batch_size = min(initial "
                     "batch x GPUs, max batch) (the alternative left commented out in Pollux's workload.py)"})
    else:
        meta.update({"classes_gpu_hours": [[c, h] for c, h in CLASSES[:-1]],
                     "class_to_application": {c: list(a) for c, a in _APPS[rule].items()},
                     "bert_share_of_medium": _BERT_SHARE,
                     "configurations": {a: [list(c) for c in cs] for a, cs in CONFIGURATIONS[rule].items()}})
    return GeneratedWorkload(Workload(label, tuple(wjobs)), tuple(origins), meta)


def generate_workload(trace: Trace, *, jobs: int = 160, load: float = 1.0, window_h: float = 8.0, seed: int = 0,
                      rule: str = "pollux", start_h: float | None = None, name: str | None = None,
                      app_map: dict[str, str] | None = None) -> Workload:
    """:func:`generate`'s workload alone (for :func:`schedopt.sim.simulate`).

    Examples
    --------
    An 8-hour window of the shipped Philly trace, 160 jobs at its own load scaled to 1.5x (so 240 jobs), applications
    by Pollux's rule:

    >>> from schedopt import traces
    >>> from schedopt.traces.named import shipped_trace
    >>> w = traces.generate_workload(shipped_trace("philly"), jobs=160, load=1.5, window_h=8, seed=0)
    >>> len(w.jobs), w.jobs[0]
    (240, WorkloadJob(name='deepspeech2-0', time=38.0, application='deepspeech2', num_replicas=8, batch_size=320))
    """
    return generate(trace, jobs=jobs, load=load, window_h=window_h, seed=seed, rule=rule, start_h=start_h,
                    name=name, app_map=app_map).workload


def resample_workload(workload: Workload, *, load: float, seed: int = 0, name: str | None = None) -> Workload:
    """A workload at ``load`` x the job count of ``workload`` over the same span, for workloads whose source trace is
    not available: ``round(len * load)`` jobs drawn with replacement (application and configuration kept together)
    and as many arrival times drawn with replacement from the original arrivals, both seeded. Not either artifact's
    rule: it keeps the application mix and the arrival-time profile, not the trace's durations."""
    n = check_params(max(1, len(workload)), load, 1.0, "pollux", seed)
    if not workload.jobs:
        raise InputError("workload", workload.name, "has no jobs to resample")
    from ..sim.workloads import Workload, WorkloadJob

    rng = np.random.default_rng(seed)
    src = workload.jobs
    pick = rng.integers(len(src), size=n)
    ts = np.sort(np.array([j.time for j in src])[rng.integers(len(src), size=n)])
    out = []
    for k, (i, t) in enumerate(zip(pick, ts, strict=True)):
        j = src[int(i)]
        out.append(WorkloadJob(f"{j.application}-{k}", float(t), j.application, j.num_replicas, j.batch_size))
    return Workload(name or f"{workload.name}@{load:g}", tuple(out))
