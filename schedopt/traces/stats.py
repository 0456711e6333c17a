"""Trace statistics: arrival rate, size and duration distributions, GPU-time classes, offered load on a cluster."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from .generate import CLASSES, size_class
from .trace import Trace

__all__ = ["FIGURE_FORMATS", "TraceStats", "figure_formats", "plot_stats", "trace_stats"]

_SIZE_BINS = ((1, 1), (2, 2), (3, 4), (5, 8), (9, 16), (17, 32), (33, 64), (65, 10**9))


@dataclass(frozen=True)
class TraceStats:
    """What :func:`trace_stats` measured. Rates and loads count GPU jobs (``gpus >= 1``) only.

    ``span_h``: first to last GPU-job submission. ``arrival_rate_per_h``: GPU jobs / span. ``size_mix``: GPU-job
    counts by requested GPUs (``"3-4"``-style bins). ``duration_s``: quantiles of known run times.
    ``class_mix``: GPU jobs by Pollux's GPU-time classes (small < 1 GPU-h <= medium < 10 <= large < 100 <= xl).
    ``gpu_hours``: over jobs with a known run time (None when none has one). ``offered_load``: GPU-hours asked /
    (cluster GPUs x span), when a cluster was given and run times are known. ``pollux_pool``: the jobs
    Pollux's generator samples from (60 s <= duration, < 1000 GPU-h, time of day in ``[2 h, 10 h)``) by class.
    """

    name: str
    format: str
    jobs: int
    gpu_jobs: int
    skipped: int
    span_h: float
    arrival_rate_per_h: float
    arrivals_by_hour_of_day: tuple[int, ...]
    size_mix: dict[str, int]
    duration_s: dict[str, float]
    class_mix: dict[str, int]
    gpu_hours: float | None
    cluster_gpus: int | None
    offered_load: float | None
    pollux_pool: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def format_text(self) -> str:
        lines = [f"trace {self.name} ({self.format}): {self.jobs} jobs, {self.gpu_jobs} with GPUs, "
                 f"{self.skipped} rows skipped",
                 f"span {self.span_h:.1f} h; arrival rate {self.arrival_rate_per_h:.2f} GPU jobs/h "
                 f"({self.arrival_rate_per_h * 24:.0f}/day)"]
        g = max(self.gpu_jobs, 1)
        lines.append("size mix (GPUs: jobs, share): " + ", ".join(
            f"{k}: {v} ({100 * v / g:.1f}%)" for k, v in self.size_mix.items() if v))
        known = sum(self.class_mix.values())
        if known:
            lines.append("GPU-time classes (Pollux: small <1, medium <10, large <100, xl >=100 GPU-h): " + ", ".join(
                f"{k}: {v} ({100 * v / known:.1f}%)" for k, v in self.class_mix.items()))
        else:
            lines.append("no run times in this trace: GPU-hours, classes and offered load are unknown")
        if self.duration_s:
            d = self.duration_s
            lines.append("duration s: " + ", ".join(f"{k} {v:.0f}" for k, v in d.items()))
        if self.gpu_hours is not None:
            lines.append(f"GPU-hours {self.gpu_hours:.1f}")
        if self.cluster_gpus is not None and self.offered_load is not None:
            lines.append(f"offered load on {self.cluster_gpus} GPUs: {self.offered_load:.3f} "
                         "(GPU-hours asked / (GPUs x span))")
        pool = sum(self.pollux_pool.values())
        if pool:
            lines.append(f"Pollux's sampling pool (60 s <= duration, < 1000 GPU-h, 02:00-10:00 of every day): {pool} "
                         "jobs; classes " + ", ".join(f"{k} {100 * v / pool:.1f}%" for k, v in self.pollux_pool.items())
                         + "; at load 1.0 Pollux draws 160 of them over 8 h = 20 jobs/h")
        busy = max(range(24), key=lambda h: self.arrivals_by_hour_of_day[h]) if self.gpu_jobs else 0
        lines.append("arrivals by hour of day: " + " ".join(str(v) for v in self.arrivals_by_hour_of_day)
                     + f" (busiest hour {busy:02d}:00)")
        return "\n".join(lines)


def trace_stats(trace: Trace, cluster_gpus: int | None = None) -> TraceStats:
    """The statistics of ``trace`` (and its offered load on ``cluster_gpus`` GPUs, when given)."""
    gj = [j for j in trace.jobs if j.gpus >= 1]
    sub = np.array([j.submit_s for j in gj], dtype=float)
    span_h = float(sub.max() - sub.min()) / 3600.0 if len(sub) > 1 else 0.0
    rate = len(gj) / span_h if span_h > 0 else float("nan")
    hours = Counter(int(trace.time_of_day_s(j) // 3600) % 24 for j in gj)
    size: dict[str, int] = {}
    for lo, hi in _SIZE_BINS:
        key = str(lo) if lo == hi else (f"{lo}-{hi}" if hi < 10**9 else f">={lo}")
        size[key] = sum(1 for j in gj if lo <= j.gpus <= hi)
    durs = np.array([j.duration_s for j in gj if j.duration_s is not None], dtype=float)
    dq = ({"mean": float(durs.mean()), **{f"p{q}": float(np.percentile(durs, q)) for q in (10, 50, 90, 99)},
           "max": float(durs.max())} if len(durs) else {})
    classes = Counter(size_class(j.gpus * j.duration_s / 3600.0) for j in gj if j.duration_s is not None)
    gpu_h = (float(sum(j.gpus * j.duration_s for j in gj if j.duration_s is not None) / 3600.0) if len(durs)
             else None)
    load = gpu_h / (cluster_gpus * span_h) if gpu_h is not None and cluster_gpus and span_h > 0 else None
    pool = Counter(size_class(j.gpus * j.duration_s / 3600.0) for j in gj
                   if j.duration_s is not None and j.duration_s >= 60 and j.gpus * j.duration_s < 1000 * 3600
                   and 2 * 3600 <= trace.time_of_day_s(j) < 10 * 3600)
    return TraceStats(trace.name, trace.format, len(trace), len(gj), len(trace.skipped), span_h, rate,
                      tuple(hours.get(h, 0) for h in range(24)), size, dq,
                      {c: classes.get(c, 0) for c, _ in CLASSES}, gpu_h, cluster_gpus, load,
                      {c: pool.get(c, 0) for c, _ in CLASSES})


#: the file extensions matplotlib's Agg canvas writes (``FigureCanvasAgg.get_supported_filetypes``), kept here so that
#: an option is checked without importing matplotlib (a second); :func:`plot_stats` still names a refusal by its own
FIGURE_FORMATS = frozenset({"avif", "eps", "gif", "jpeg", "jpg", "pdf", "pgf", "png", "ps", "raw", "rgba", "svg", "svgz", "tif",
                            "tiff", "webp"})


def figure_formats() -> frozenset[str]:
    """The file extensions a figure may have (:data:`FIGURE_FORMATS`)."""
    return FIGURE_FORMATS


def plot_stats(trace: Trace, stats: TraceStats, path: str | Path) -> Path | None:
    """A four-panel figure (arrivals by hour, size mix, duration CDF, GPU-time classes); None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(2, 2, figsize=(10, 7))
    ax[0, 0].bar(range(24), stats.arrivals_by_hour_of_day)
    ax[0, 0].set(title="GPU-job arrivals by hour of day", xlabel="hour", ylabel="jobs")
    keys = [k for k, v in stats.size_mix.items() if v]
    ax[0, 1].bar(keys, [stats.size_mix[k] for k in keys])
    ax[0, 1].set(title="requested GPUs", xlabel="GPUs", ylabel="jobs")
    ax[0, 1].set_yscale("log")
    d = np.sort([j.duration_s for j in trace.jobs if j.gpus >= 1 and j.duration_s is not None and j.duration_s > 0])
    if len(d):
        ax[1, 0].plot(d, np.arange(1, len(d) + 1) / len(d))
        ax[1, 0].set_xscale("log")
    ax[1, 0].set(title="duration CDF", xlabel="seconds", ylabel="fraction of jobs")
    ax[1, 1].bar(list(stats.class_mix), list(stats.class_mix.values()))
    ax[1, 1].set(title="GPU-time class (Pollux)", ylabel="jobs")
    fig.suptitle(f"{stats.name} ({stats.format})")
    fig.tight_layout()
    p = Path(path)
    try:
        fig.savefig(p, dpi=90)
    except ValueError as exc:  # an extension this matplotlib does not write
        raise InputError("plot", str(path), f"matplotlib cannot write this figure: {exc}") from None
    finally:
        plt.close(fig)
    return p
