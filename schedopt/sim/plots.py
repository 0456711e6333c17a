"""Figures of :mod:`schedopt.sim` results (matplotlib, imported only here and only when a figure is drawn).

* :func:`jct_cdf` -- the CDF of job completion times, one panel per (cluster, workload), one line per policy (JCTs
  pooled over seeds; the legend says which seeds).
* :func:`utilization_plot` -- the fraction of GPUs held over time, one panel per (cluster, workload), one line per
  policy and seed (identical runs of several seeds: one line, labelled so; :func:`distinct_runs`): a rolling mean (over ``window`` seconds, default 1 h) drawn over the faint raw line.
* :func:`rho_cdf` -- the CDF of finish-time fairness rho, one line per policy (:mod:`schedopt.sim.fairness`).

Each panel's title names the cluster and the workload; both figures end where the runs' records end.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from .metrics import SimResult, utilization

__all__ = ["cluster_label", "distinct_runs", "identical_note", "jct_cdf", "jct_cdf_figure", "rho_cdf",
           "utilization_figure", "utilization_plot"]


def pyplot() -> Any:  # matplotlib.pyplot (no type information)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - matplotlib is in the test extra
        raise InputError("plots", "matplotlib", "is not installed (pip install matplotlib)") from exc
    return plt


def _meta(r: SimResult, key: str, default: Any = None) -> Any:
    m = r.meta
    v = None if isinstance(m, dict) else getattr(m, key, None)  # a typed meta record: its attribute
    return v if v is not None else (m.get(key, default) if isinstance(m, dict) else default)


def cluster_label(r: SimResult) -> str:
    """The cluster a result ran on: its preset name with the GPU count (``pollux, 64 GPUs``), else its GPU types."""
    preset = _meta(r, "cluster_preset")
    gpus = _meta(r, "gpus")
    if not preset:
        c = _meta(r, "cluster") or {}
        preset = " + ".join(f"{n}x{g} {t}" for t, (n, g) in c.items()) if isinstance(c, Mapping) and c else "?"
    return f"{preset}, {gpus} GPUs" if gpus else str(preset)


def _groups(results: Sequence[SimResult]) -> list[tuple[str, str, list[SimResult]]]:
    by: dict[tuple[str, str], list[SimResult]] = {}
    for r in results:
        by.setdefault((cluster_label(r), str(_meta(r, "workload"))), []).append(r)
    return [(c, w, rs) for (c, w), rs in sorted(by.items())]


def _seeds(rs: Sequence[SimResult]) -> str:
    s = sorted({int(_meta(r, "seed", 0) or 0) for r in rs})
    if len(s) == 1:
        return f"seed {s[0]}"
    if s == list(range(s[0], s[-1] + 1)):
        return f"seeds {s[0]}-{s[-1]} pooled"
    return f"seeds {', '.join(map(str, s))} pooled"


def _fingerprint(r: SimResult) -> tuple[Any, ...]:
    """What two runs must share to be the same run: every job's arrival, start, finish, restarts and spells."""
    return tuple((j.id, j.arrival, j.start, j.finish, j.restarts, j.segments) for j in r.jobs)


def distinct_runs(rs: Sequence[SimResult]) -> list[tuple[SimResult, list[int]]]:
    """``rs`` (one policy's runs on one workload) with identical runs merged: (the first of them, their seeds), in
    seed order. Seeds that cannot change anything (:mod:`schedopt.sim.seeds`) give one entry."""
    out: dict[tuple[Any, ...], tuple[SimResult, list[int]]] = {}
    for r in sorted(rs, key=lambda x: int(_meta(x, "seed", 0) or 0)):
        out.setdefault(_fingerprint(r), (r, []))[1].append(int(_meta(r, "seed", 0) or 0))
    return list(out.values())


def identical_note(results: Sequence[SimResult]) -> list[str]:
    """One sentence per (cluster, workload, policy) whose runs of several seeds are identical (the figures draw
    them as one line)."""
    notes = []
    for cluster, workload, rs in _groups(results):
        by: dict[str, list[SimResult]] = {}
        for r in rs:
            by.setdefault(str(_meta(r, "policy")), []).append(r)
        for pol, prs in sorted(by.items()):
            for _, seeds in distinct_runs(prs):
                if len(seeds) > 1:
                    notes.append(f"{pol} on {workload} ({cluster}): seeds {_seed_text(seeds)} gave identical runs "
                                 "(drawn as one line)")
    return notes


def _seed_text(seeds: Sequence[int]) -> str:
    from .seeds import seed_list_text

    return seed_list_text(seeds)


def _panels(n: int, width: float = 7.0, height: float = 3.4) -> tuple[Any, list[Any]]:
    plt = pyplot()
    fig, axes = plt.subplots(n, 1, figsize=(width, height * n), squeeze=False)
    return fig, [a[0] for a in axes]


def jct_cdf_figure(results: Sequence[SimResult]) -> Any:
    """The JCT CDF figure (a matplotlib ``Figure``; see :func:`jct_cdf`)."""
    groups = _groups(results)
    fig, axes = _panels(max(len(groups), 1), 6.5)
    for ax, (cluster, workload, rs) in zip(axes, groups, strict=False):
        by: dict[str, list[SimResult]] = {}
        for r in rs:
            by.setdefault(str(_meta(r, "policy")), []).append(r)
        every = [x for r in rs for x in r.jcts().values() if x > 0]
        log = bool(every) and max(every) > 20 * min(every)  # a log axis only over more than a decade or so
        for pol, prs in sorted(by.items()):
            runs = distinct_runs(prs)  # identical runs (seeds that change nothing) pooled once, and said
            a = np.sort(np.asarray([x for r, _ in runs for x in r.jcts().values()], dtype=float)) / 3600.0
            same = f"; {len(prs)} identical runs" if len(runs) == 1 and len(prs) > 1 else ""
            if a.size:
                ax.step(a, np.arange(1, a.size + 1) / a.size, where="post",
                        label=f"{pol}, {_seeds(prs)}{same} (avg {a.mean():.2f} h)")
        if log:
            ax.set_xscale("log")
        ax.set_title(f"JCT CDF: workload {workload} on cluster {cluster}")
        ax.set_xlabel("job completion time (hours, log scale)" if log else "job completion time (hours)")
        ax.set_ylabel("fraction of jobs")
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def jct_cdf(results: Sequence[SimResult], path: str | Path) -> Path:
    """Write the JCT CDF per policy, one panel per (cluster, workload), to ``path`` (PNG/SVG/PDF by suffix)."""
    return _save(jct_cdf_figure(results), path)


def _rolling(u: np.ndarray, k: int) -> np.ndarray:
    """The mean of the last ``k`` samples (fewer at the start)."""
    if k <= 1 or u.size == 0:
        return u
    c = np.cumsum(np.insert(u.astype(float), 0, 0.0))
    n = np.minimum(np.arange(1, u.size + 1), k)
    return (c[1:] - c[np.arange(1, u.size + 1) - n]) / n


def utilization_figure(results: Sequence[SimResult], window: float = 3600.0) -> Any:
    """The utilization figure (a matplotlib ``Figure``; see :func:`utilization_plot`)."""
    groups = _groups(results)
    fig, axes = _panels(max(len(groups), 1))
    for ax, (cluster, workload, rs) in zip(axes, groups, strict=False):
        by: dict[str, list[SimResult]] = {}
        for r in rs:
            by.setdefault(str(_meta(r, "policy")), []).append(r)
        lines = [(pol, r, seeds) for pol, prs in sorted(by.items()) for r, seeds in distinct_runs(prs)]
        for pol, r, seeds in lines:  # identical runs of several seeds: one line, said in its label
            t, u = utilization(r)
            step = float(_meta(r, "round_seconds", 60.0) or 60.0)
            smooth = _rolling(u, max(1, round(window / step)))
            label = (f"{pol}, seed {seeds[0]}" if len(seeds) == 1 else
                     f"{pol}, seeds {_seed_text(seeds)} (identical runs)")
            line, = ax.plot(t / 3600.0, smooth, lw=1.2, label=label)
            ax.plot(t / 3600.0, u, lw=0.5, alpha=0.25, color=line.get_color())
        ax.set_title(f"GPU utilization: workload {workload} on cluster {cluster}")
        ax.set_xlabel(f"time (hours); lines: rolling mean over {window / 3600:g} h, faint: per round")
        ax.set_ylabel("GPUs held (fraction)")
        ax.set_ylim(0, 1.05)
        ax.grid(alpha=0.3)
        if 0 < len(lines) <= 12:
            ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def utilization_plot(results: Sequence[SimResult], path: str | Path, window: float = 3600.0) -> Path:
    """Write GPU utilization over time (one panel per (cluster, workload), one line per policy and seed) to
    ``path``."""
    return _save(utilization_figure(results, window), path)


def _save(fig: Any, path: str | Path) -> Path:
    plt = pyplot()
    out = Path(path)
    try:
        fig.savefig(out)
    except OSError as exc:  # a full disk, a read-only folder: a named input error, not a traceback
        from .records import output_error

        raise output_error(out, exc) from None
    finally:
        plt.close(fig)
    return out


# --- finish-time fairness (issue 29) ---
def rho_cdf(results: Sequence[SimResult], path: str | Path, rule: str = "sia") -> Path:
    """Write the CDF of finish-time fairness rho per policy (rhos pooled over workloads and seeds; a line at
    rho = 1) to ``path``; ``rule``: the isolation rule of :func:`schedopt.sim.fairness.finish_time_fairness`."""
    from ..errors import InputError
    from .fairness import RULES, finish_time_fairness

    if rule not in RULES:
        raise InputError("rule", rule, f"must be one of {', '.join(RULES)}")
    plt = pyplot()
    by: dict[str, list[float]] = {}
    skipped: list[str] = []
    for r in results:
        try:
            rho = finish_time_fairness(r, rule).rho
        except InputError:  # no isolation from these records (a Gandiva or Synergy job model, no cluster in meta)
            skipped.append(str(_meta(r, "job_model")))
            continue
        by.setdefault(str(_meta(r, "policy")), []).extend(rho.values())
    fig, ax = plt.subplots(figsize=(6, 4))
    if skipped:
        ax.text(0.02, 0.98, f"{len(skipped)} record(s) without isolation left out (job model "
                f"{', '.join(sorted(set(skipped)))})", transform=ax.transAxes, va="top", fontsize=8)
    for pol, xs in sorted(by.items()):
        a = np.sort(np.asarray(xs))
        if a.size:
            ax.step(a, np.arange(1, a.size + 1) / a.size, where="post",
                    label=f"{pol} (worst {a.max():.2f}, {np.mean(a > 1):.0%} > 1)")
    ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_xlabel(f"finish-time fairness rho ({rule} isolation, log scale)")
    ax.set_ylabel("fraction of jobs")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out)
    plt.close(fig)
    return out
