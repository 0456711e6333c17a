"""Reports built from the record table only: a Markdown table and matplotlib figures.

``report(records_or_path, out_dir)`` writes ``report.md`` (per problem / load: one row per GPU count and backend with
the whole path's median and [min, max] over repetitions, the phase medians, termination counts, gaps to the solver's
bound and to the LP bound, peak memory, and the ratio of the path's median to the reference backend's measured in the
same sweep) and

one set of PNG figures per problem (a panel per load; runs stopped by a limit drawn hollow):

* ``time_vs_gpus_<problem>.png`` — median whole-path time versus GPUs per backend (log-log, min/max as error bars);
* ``gap_vs_time_<problem>.png`` — optimality gap (to the solver's bound, and to the LP bound) versus time per run,
  drawn only where some run reports a gap;
* ``phase_share_<problem>.png`` — the share of each phase (goodput, build, hand-off, solve, decode, placement) in the
  median path per backend at the largest size.

matplotlib is imported only here, and only when figures are drawn.
"""

from __future__ import annotations

import math
import os
import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .records import PHASES, Record, as_records

__all__ = ["report", "summarize"]

_OK = ("optimal", "feasible")
_UNFINISHED = ("guard", "error")  #: runs killed by the guard or failed: no time of theirs is a measurement


def _med(vals: Sequence[float | None]) -> float | None:
    v = [x for x in vals if x is not None and math.isfinite(x)]
    return statistics.median(v) if v else None


def _time_unit(values: list[float | None]) -> str:
    """One unit for a whole table: ``ms`` when every time in it is under a second, ``s`` otherwise."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return "s" if finite and max(finite) >= 1.0 else "ms"


def _fmt_t(x: float | None, unit: str = "s") -> str:
    """A time (given in seconds) in ``unit`` (``s`` or ``ms``), the number only: the unit is in the header."""
    if x is None:
        return "–"
    v = x * 1000.0 if unit == "ms" else x
    if v >= 1000:
        return f"{v:.0f}"
    if v >= 100:
        return f"{v:.1f}"
    if v >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def _fmt_gap(x: float | None) -> str:
    if x is None:
        return "–"
    if not math.isfinite(x):
        return "∞"
    if x == 0:
        return "0"
    return f"{x:.2e}" if x < 1e-3 else f"{x:.2%}"


def _ref_for(recs: list[Record]) -> str:
    backends = [r.backend for r in recs]
    return "highs" if "highs" in backends else (backends[0] if backends else "")


def summarize(records: Sequence[Record], reference: str | None = None) -> list[dict[str, Any]]:
    """One row per (problem, load, GPUs, backend): medians, min/max, counts and the ratio to ``reference``
    (default ``highs``, else the first backend) measured in the same sweep."""
    groups: dict[tuple, list[Record]] = defaultdict(list)
    for r in records:
        groups[(r.problem, r.load, r.gpus, r.backend)].append(r)
    by_size: dict[tuple, dict[str, list[Record]]] = defaultdict(dict)
    for (prob, load, gpus, backend), rs in groups.items():
        by_size[(prob, load, gpus)][backend] = rs
    ref = reference or _ref_for(list(records))
    rows = []
    for (prob, load, gpus), per_backend in sorted(by_size.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        order = sorted(per_backend, key=lambda b: (b != ref, b))
        for b in order:
            rs = per_backend[b]
            ok = [r for r in rs if r.termination in _OK]
            ran = [r for r in rs if r.termination not in _UNFINISHED]
            paths = [r.t_path for r in ran if r.t_path is not None]
            ratio = None
            if ref in per_backend and b != ref:
                ratios = []
                for sweep in sorted({r.sweep for r in rs}):
                    mine = _med([r.t_path for r in ran if r.sweep == sweep])
                    theirs = _med([r.t_path for r in per_backend[ref]
                                   if r.sweep == sweep and r.termination not in _UNFINISHED])
                    if mine is not None and theirs:
                        ratios.append(mine / theirs)
                ratio = statistics.median(ratios) if ratios else None
            elif b == ref:
                ratio = 1.0
            rows.append({
                "problem": prob,
                "load": load,
                "gpus": gpus,
                "jobs": _med([r.jobs for r in rs if r.jobs is not None]),
                "backend": b,
                "runs": len(rs),
                "terminations": dict(Counter(r.termination for r in rs)),
                "path_median": _med(paths),
                "path_min": min(paths) if paths else None,
                "path_max": max(paths) if paths else None,
                **{f"{p}_median": _med([getattr(r, f"t_{p}") for r in ran]) for p in PHASES},
                "limited": sum(_limited(r) for r in rs),
                "gap_median": _med([r.gap for r in ok]) if ok else None,
                "lp_gap_median": _med([r.lp_gap for r in ok]) if ok else None,
                "objective_median": _med([r.objective for r in ok]) if ok else None,
                "peak_rss_median": _med([r.peak_rss_mb for r in rs]),
                "variables": _med([r.variables for r in rs if r.variables is not None]),
                "ratio": ratio,
                "reference": ref,
            })
    return rows


def _markdown(records: list[Record], rows: list[dict[str, Any]], figures: list[str]) -> str:
    out = ["# schedopt benchmark report", ""]
    sweeps = sorted({r.sweep for r in records})
    r0 = records[0] if records else Record()
    out += [
        f"{len(records)} runs in {len(sweeps)} sweep(s) ({', '.join(sweeps)}).  ",
        f"Machine: {r0.machine_cpu}, {r0.machine_cores} cores, {r0.machine_platform}, Python {r0.python}.  ",
        f"Packages: {r0.packages.replace(';', ', ')}.  ",
        f"Threads {sorted({r.threads for r in records})}, solver seeds {sorted({r.solver_seed for r in records})}, "
        f"time limits {sorted({str(r.time_limit) for r in records})}, requested gaps "
        f"{sorted({str(r.mip_rel_gap) for r in records})}.",
        "",
        "Times are medians over the repetitions that finished (every termination but the guard and errors), in "
        "the unit each table's header names (one per table); [min, max] follow the median; *limited* counts runs stopped by a limit (time, "
        "iterations, ...: drawn hollow in the figures); a heuristic's answer is FEASIBLE with the limit 'heuristic'. *path* is the whole path (goodput + build + hand-off + solve + decode + "
        "placement). The ratio column is the path median over the reference backend's "
        f"(**{rows[0]['reference'] if rows else '-'}**) measured in the same sweep (higher = slower). "
        "*gap* is to the solver's own bound (– when the route reports none), *LP gap* to the LP relaxation's optimum.",
        "",
    ]
    sections: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        sections[(row["problem"], row["load"])].append(row)
    for (prob, load), rs in sections.items():
        out.append(f"## {prob}" + (f" — {load} load" if load else ""))
        out.append("")
        ref = rs[0]["reference"]
        unit = _time_unit([r[k] for r in rs for k in ("path_median", "path_min", "path_max",
                                                        *(f"{p}_median" for p in PHASES))])
        out.append(
            f"| GPUs | jobs | backend | runs | termination | limited | path median [min, max] ({unit}) | ratio vs {ref} | "
            f"goodput ({unit}) | build ({unit}) | hand-off ({unit}) | solve ({unit}) | decode ({unit}) | place ({unit}) | "
            "gap | LP gap | objective | peak MB |"
        )
        out.append("|" + "---|" * 18)
        for r in rs:
            term = ", ".join(f"{k}×{v}" for k, v in sorted(r["terminations"].items()))
            rng = f"{_fmt_t(r['path_median'], unit)} [{_fmt_t(r['path_min'], unit)}, {_fmt_t(r['path_max'], unit)}]"
            ratio = "–" if r["ratio"] is None else f"{r['ratio']:.2f}×"
            obj = "–" if r["objective_median"] is None else f"{r['objective_median']:.6g}"
            mem = "–" if r["peak_rss_median"] is None else f"{r['peak_rss_median']:.0f}"
            jobs = "–" if r["jobs"] is None else f"{r['jobs']:.0f}"
            out.append(
                f"| {r['gpus']} | {jobs} | {r['backend']} | {r['runs']} | {term} | {r['limited']} | {rng} | {ratio} | "
                + " | ".join(_fmt_t(r[f"{p}_median"], unit) for p in PHASES)
                + f" | {_fmt_gap(r['gap_median'])} | {_fmt_gap(r['lp_gap_median'])} | {obj} | {mem} |"
            )
        out.append("")
    bad = [r for r in records if r.termination in ("guard", "error")]
    if bad:
        out += ["## Runs that did not finish", ""]
        for rec in bad:
            out.append(f"- {rec.instance_id} #{rec.repeat} {rec.backend}: {rec.outcome or rec.termination} — {rec.error}")
        out.append("")
    if figures:
        out += ["## Figures", ""]
        out += [f"![{Path(f).stem}]({Path(f).name})" for f in figures]
        out.append("")
    return "\n".join(out)


def _limited(r: Record) -> bool:
    """A run stopped by a limit other than a heuristic's own end (time, iterations, nodes, the guard)."""
    return bool(r.limit) and r.limit != "heuristic"


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def _figures(records: list[Record], rows: list[dict[str, Any]], out_dir: Path) -> list[str]:
    """One set of figures per problem (panels per load): time vs GPUs, gap vs time (when any run reports a gap),
    phase shares at the largest size. Runs stopped by a limit are drawn hollow ("limit hit")."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    files: list[str] = []
    backends = sorted({r["backend"] for r in rows})
    cmap = plt.get_cmap("tab10")
    color = {b: cmap(i % 10) for i, b in enumerate(backends)}
    pcolor = {p: plt.get_cmap("Set2")(i) for i, p in enumerate(PHASES)}

    def save(fig: Any, name: str) -> None:
        f = out_dir / name
        fig.savefig(f, dpi=110)
        plt.close(fig)
        files.append(str(f))

    for prob in sorted({r["problem"] for r in rows}):
        loads = sorted({r["load"] for r in rows if r["problem"] == prob})
        n = len(loads)
        # time versus GPUs (log-log); a hollow ring marks a point where some run hit a limit
        fig, axes = plt.subplots(1, n, figsize=(5.5 * n, 4.2), squeeze=False)
        for ax, load in zip(axes[0], loads):
            limited_any = False
            for b in backends:
                sel = [r for r in rows if r["problem"] == prob and r["load"] == load and r["backend"] == b
                       and r["path_median"]]
                if not sel:
                    continue
                pts = sorted((r["gpus"], r["path_median"], r["path_min"], r["path_max"], r["limited"]) for r in sel)
                x = [p[0] for p in pts]
                y = [p[1] for p in pts]
                err = [[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]]
                ax.errorbar(x, y, yerr=err, marker="o", ms=4, capsize=3, label=b, color=color[b])
                lim = [(p[0], p[1]) for p in pts if p[4]]
                if lim:
                    limited_any = True
                    ax.scatter([p[0] for p in lim], [p[1] for p in lim], s=110, facecolors="none",
                               edgecolors=color[b], linewidths=1.5)
            if limited_any:
                ax.scatter([], [], s=110, facecolors="none", edgecolors="black", label="limit hit (time, ...)")
            if len({r["gpus"] for r in rows if r["problem"] == prob}) > 1:
                ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("GPUs")
            ax.set_ylabel("whole path, median (s)")
            ax.set_title(f"{prob}" + (f" ({load})" if load else ""))
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        fig.tight_layout()
        save(fig, f"time_vs_gpus_{_slug(prob)}.png")

        # gap versus time (every run with a solution and a known gap); only the panels that have points
        panels = []
        for attr, title in (("gap", "gap to the solver's bound"), ("lp_gap", "gap to the LP bound")):
            hits = [r for r in records if r.problem == prob and r.termination in _OK and r.t_path
                    and getattr(r, attr) is not None and math.isfinite(getattr(r, attr))]
            if hits:
                panels.append((attr, title, hits))
        if panels:
            fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
            for ax, (attr, title, hits) in zip(axes[0], panels):
                top = max(getattr(r, attr) for r in hits)
                for b in backends:
                    for limited, marker in ((False, "o"), (True, "x")):
                        mine = [r for r in hits if r.backend == b and _limited(r) == limited]
                        if mine:
                            ax.scatter([r.t_path for r in mine], [getattr(r, attr) for r in mine], s=22, marker=marker,
                                       color=color[b], alpha=0.85,
                                       label=b + (" (limit hit)" if limited else ""))
                ax.set_xscale("log")
                ax.set_yscale("symlog", linthresh=1e-6)
                ax.set_ylim(-1e-7, max(top * 2.0, 1e-5))  # gaps are >= 0: no empty negative half
                ax.set_xlabel("whole path (s)")
                ax.set_ylabel("relative gap")
                ax.set_title(f"{prob}: {title}")
                ax.grid(True, which="both", alpha=0.3)
                ax.legend(fontsize=8)
            fig.tight_layout()
            save(fig, f"gap_vs_time_{_slug(prob)}.png")

        # phase shares at the largest size of each load
        nb = len({r["backend"] for r in rows if r["problem"] == prob})
        fig, axes = plt.subplots(1, n, figsize=(6 * n, 0.5 * nb + 2.8), squeeze=False)
        for ax, load in zip(axes[0], loads):
            sec = [r for r in rows if r["problem"] == prob and r["load"] == load and r["path_median"]]
            if not sec:
                ax.text(0.5, 0.5, "no finished run", ha="center", va="center", transform=ax.transAxes)
                ax.set_axis_off()
                continue
            top = max(r["gpus"] for r in sec)
            sec = sorted((r for r in sec if r["gpus"] == top), key=lambda r: r["backend"])
            labels = [r["backend"] for r in sec]
            left = [0.0] * len(sec)
            for p in PHASES:
                vals = [(r[f"{p}_median"] or 0.0) for r in sec]
                tot = [sum((r[f"{q}_median"] or 0.0) for q in PHASES) or 1.0 for r in sec]
                share = [v / t for v, t in zip(vals, tot)]
                ax.barh(labels, share, left=left, color=pcolor[p], label=p)
                left = [a + b for a, b in zip(left, share)]
            for i, r in enumerate(sec):
                ax.text(1.01, i, f"{_fmt_t(r['path_median'])} s", va="center", fontsize=8)
            ax.set_xlim(0, 1.18)
            ax.set_xlabel("share of the whole path (median); total at right")
            ax.set_title(f"{prob}" + (f" ({load})" if load else "") + f", {top} GPUs")
            ax.legend(fontsize=7, ncol=6, loc="upper center", bbox_to_anchor=(0.5, -0.22), frameon=False)
        fig.tight_layout()
        save(fig, f"phase_share_{_slug(prob)}.png")
    return files


def report(records_or_path: Sequence[Record] | str | os.PathLike[str], out_dir: str | os.PathLike[str],
           *, reference: str | None = None, figures: bool = True) -> Path:
    """Write ``report.md`` and the figures into ``out_dir`` (created); returns the Markdown file's path."""
    records = as_records(records_or_path)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = summarize(records, reference)
    figs = _figures(records, rows, out) if figures and rows else []
    md = out / "report.md"
    md.write_text(_markdown(records, rows, figs) + "\n", encoding="utf-8")
    return md
