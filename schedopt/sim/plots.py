"""Figures of :mod:`schedopt.sim` results (matplotlib, imported only here and only when a figure is drawn).

* :func:`jct_cdf` -- the CDF of job completion times, one line per policy (JCTs pooled over workloads and seeds).
* :func:`utilization_plot` -- the fraction of GPUs held over time, one line per result.
* :func:`rho_cdf` -- the CDF of finish-time fairness rho, one line per policy (:mod:`schedopt.sim.fairness`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import InputError
from .metrics import SimResult, utilization

__all__ = ["jct_cdf", "rho_cdf", "utilization_plot"]


def _plt():  # type: ignore[no-untyped-def]
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - matplotlib is in the test extra
        raise InputError("plots", "matplotlib", "is not installed (pip install matplotlib)") from exc
    return plt


def jct_cdf(results: Sequence[SimResult], path: str | Path) -> Path:
    """Write the JCT CDF per policy to ``path`` (PNG/SVG/PDF by suffix)."""
    plt = _plt()
    by: dict[str, list[float]] = {}
    for r in results:
        by.setdefault(str(r.meta.get("policy")), []).extend(r.jcts().values())
    fig, ax = plt.subplots(figsize=(6, 4))
    for pol, xs in sorted(by.items()):
        a = np.sort(np.asarray(xs)) / 3600.0
        if a.size:
            ax.step(a, np.arange(1, a.size + 1) / a.size, where="post", label=f"{pol} (avg {a.mean():.2f} h)")
    ax.set_xscale("log")
    ax.set_xlabel("job completion time (hours, log scale)")
    ax.set_ylabel("fraction of jobs")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out)
    plt.close(fig)
    return out


def utilization_plot(results: Sequence[SimResult], path: str | Path) -> Path:
    """Write GPU utilization over time (one line per result) to ``path``."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4))
    for r in results:
        t, u = utilization(r)
        ax.plot(t / 3600.0, u, lw=0.8, label=f"{r.meta.get('policy')} / {r.meta.get('workload')} / {r.meta.get('seed', 0)}")
    ax.set_xlabel("time (hours)")
    ax.set_ylabel("GPUs held (fraction)")
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    if len(results) <= 12:
        ax.legend(fontsize=7)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out)
    plt.close(fig)
    return out


# --- finish-time fairness (issue 29) ---
def rho_cdf(results: Sequence[SimResult], path: str | Path, rule: str = "sia") -> Path:
    """Write the CDF of finish-time fairness rho per policy (rhos pooled over workloads and seeds; a line at
    rho = 1) to ``path``; ``rule``: the isolation rule of :func:`schedopt.sim.fairness.finish_time_fairness`."""
    from .fairness import finish_time_fairness

    plt = _plt()
    by: dict[str, list[float]] = {}
    for r in results:
        by.setdefault(str(r.meta.get("policy")), []).extend(finish_time_fairness(r, rule).rho.values())
    fig, ax = plt.subplots(figsize=(6, 4))
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
