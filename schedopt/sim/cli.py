"""``schedopt simulate``: run simulations and build reports from the command line.

``add_parser(subparsers)`` registers::

    schedopt simulate --cluster sia-64 --workload saturn/1,saturn/2 --policy sia,tiresias --seeds 0-3 -o runs/
    schedopt simulate report runs/ -o report/

Each simulation is written to ``<output>/<policy>__<workload>__seed<k>.jsonl`` (records) and a summary row to
``<output>/summary.csv``; the report writes ``summary.csv``, ``report.md``, ``jct_cdf.png`` and
``utilization.png``. A workload is a shipped name (``saturn/1``), a whole shipped set (``saturn``) or a CSV path.
"""

from __future__ import annotations

import argparse
import csv
import io
import math
from pathlib import Path
from typing import Any

from ..errors import InputError

__all__ = ["add_parser", "cmd_simulate", "cmd_simulate_report", "parse_seeds"]

_SUMMARY_COLS = ["policy", "workload", "seed", "jobs", "finished", "avg_jct_s", "median_jct_s", "p99_jct_s",
                 "makespan_s", "gpu_hours", "avg_restarts", "mean_utilization", "mean_queue_length", "rounds",
                 "policy_s_median", "policy_s_p95", "policy_s_max"]


def parse_seeds(text: str) -> list[int]:
    """``"0-3"`` -> [0, 1, 2, 3]; ``"0,2,5"`` -> [0, 2, 5]."""
    out: list[int] = []
    try:
        for part in text.split(","):
            part = part.strip()
            if "-" in part:
                a, b = part.split("-")
                out.extend(range(int(a), int(b) + 1))
            elif part:
                out.append(int(part))
    except ValueError:
        raise InputError("--seeds", text, "must look like 0-3 or 0,1,2") from None
    if not out:
        raise InputError("--seeds", text, "names no seed")
    return out


def _workloads(text: str) -> list[str]:
    from .workloads import list_workloads

    known = list_workloads()
    out: list[str] = []
    for w in (x.strip() for x in text.split(",")):
        if not w:
            continue
        members = [k for k in known if k.split("/")[0] == w]
        out.extend(members if members and w not in known else [w])
    if not out:
        raise InputError("--workload", text, "names no workload")
    return out


def _safe(name: Any) -> str:
    """A file-name-safe form of a policy or workload name (``synergy:fifo/tune`` -> ``synergy-fifo-tune``)."""
    return "".join(c if c.isalnum() or c in "._-" else "-" for c in str(name))


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.6g}"
    return str(v)


def _summary_csv(rows: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(_SUMMARY_COLS)
    for r in rows:
        w.writerow([_fmt(r.get(c, "")) for c in _SUMMARY_COLS])
    return out.getvalue()


def _row(res: Any) -> dict[str, Any]:
    s = res.summary()
    s["seed"] = res.meta.get("seed", 0)
    return s


def _table(rows: list[dict[str, Any]]) -> str:
    head = ["policy", "workload", "seed", "finished", "avg JCT (h)", "p99 JCT (h)", "makespan (h)", "GPU-h",
            "policy ms (median / p95)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append("| " + " | ".join([
            str(r["policy"]), str(r["workload"]), str(r["seed"]), f"{r['finished']}/{r['jobs']}",
            f"{r['avg_jct_s'] / 3600:.3f}", f"{r['p99_jct_s'] / 3600:.2f}", f"{r['makespan_s'] / 3600:.2f}",
            f"{r['gpu_hours']:.1f}", f"{r['policy_s_median'] * 1e3:.1f} / {r['policy_s_p95'] * 1e3:.1f}",
        ]) + " |")
    return "\n".join(lines)


def cmd_simulate(args: argparse.Namespace) -> int:
    from .sweep import simulate_many

    params: dict[str, Any] = {}
    if args.backend:
        params["backend"] = args.backend
    if args.time_limit is not None:
        params["time_limit"] = args.time_limit
    pols = [p.strip() for p in args.policy.split(",") if p.strip()]
    per_policy = {p: (params if p in ("sia", "pollux-exact", "gavel") else {}) for p in pols}
    results = simulate_many(pols, _workloads(args.workload), parse_seeds(args.seeds), cluster=args.cluster,
                            job_model=args.job_model, round_seconds=args.round_seconds, policy_params=per_policy,
                            charge_policy_time=args.charge_policy_time, estimator=args.estimator,
                            workers=args.workers,
                            progress={"auto": None, "on": True, "off": False}[args.progress])
    rows = [_row(r) for r in results]
    if args.output:
        out = Path(args.output)
        out.mkdir(parents=True, exist_ok=True)
        for r in results:
            name = "__".join(_safe(x) for x in (r.meta["policy"], r.meta["workload"])) + f"__seed{r.meta.get('seed', 0)}"
            (out / f"{name}.jsonl").write_text(r.to_jsonl())
        (out / "summary.csv").write_text(_summary_csv(rows))
    print(_table(rows))
    if args.output:
        print(f"wrote {len(results)} simulations to {args.output}")
    return 0


def cmd_simulate_report(args: argparse.Namespace) -> int:
    from .metrics import read_jsonl
    from .plots import jct_cdf, utilization_plot

    src = Path(args.runs)
    files = sorted(src.glob("*.jsonl"))
    if not files:
        raise InputError("runs", str(src), "holds no .jsonl simulation records")
    results = [read_jsonl(f.read_text()) for f in files]
    rows = [_row(r) for r in results]
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.csv").write_text(_summary_csv(rows))
    jct_cdf(results, out / "jct_cdf.png")
    utilization_plot(results, out / "utilization.png")
    (out / "report.md").write_text(f"# Simulation report\n\n{len(results)} simulations from `{src}`.\n\n{_table(rows)}\n\n"
                                   "![JCT CDF](jct_cdf.png)\n\n![Utilization](utilization.png)\n")
    print(_table(rows))
    print(f"wrote the report to {out}")
    return 0


def add_parser(subparsers: Any) -> None:
    """Register ``simulate`` (and its ``report`` action) on the main parser's subparsers."""
    s = subparsers.add_parser(
        "simulate", help="replay job traces under scheduling policies (see also: simulate report)",
        description="Simulate policies x workloads x seeds; 'schedopt simulate report RUNS -o DIR' builds the report.")
    s.add_argument("--cluster", default=None,
                   help="pollux, sia-64 or sia-<64k> (default sia-64); gandiva-100 (default of gandiva policies), "
                        "gandiva-100-homogeneous, ...; synergy policies run on their workload's cluster by default")
    s.add_argument("--workload", default="saturn/1", help="comma-separated: saturn/1, a whole set (pollux), or CSV paths; "
                   "synergy/static|dynamic|test|philly[:jobs=N][:jph=X]; gandiva/synthetic[:jobs=N:interarrival=S]")
    s.add_argument("--policy", default="sia", help="comma-separated: sia, tiresias, fifo, pollux, pollux-exact, "
                   "pollux-unaware, gavel; synergy[:queue/method] (e.g. synergy:las/opt); gandiva[:variant] (e.g. gandiva:off)")
    s.add_argument("--seeds", default="0", help="e.g. 0-3 or 0,1")
    s.add_argument("--round-seconds", type=float, default=None, help="default: 60 (synergy policies: 300)")
    s.add_argument("--job-model", default=None, choices=["pollux", "sia"], help="default: pollux on the pollux cluster, else sia")
    s.add_argument("--backend", default=None, help="solver backend of model-based policies (sia: mckp, highs, cpsat, ...)")
    s.add_argument("--time-limit", type=float, default=None, help="solver time limit per round (seconds)")
    s.add_argument("--charge-policy-time", action="store_true", help="delay re-allocated jobs by the policy's wall time")
    s.add_argument("--estimator", choices=("bootstrap", "oracle"), default="bootstrap",
                   help="what the policy sees of a job's throughput: Sia's online estimate (bootstrap from 1-GPU "
                        "profiles, refitted as the job runs; default) or the true model (oracle)")
    s.add_argument("--workers", type=int, default=1, help="simulations at once (processes)")
    s.add_argument("--progress", choices=("auto", "on", "off"), default="auto",
                   help="progress on stderr: on forces the bar, off silences it, auto draws the bar on a terminal and "
                        "otherwise writes a plain line every 30 s and at the end")
    s.add_argument("-o", "--output", default=None, help="folder for the records (.jsonl) and summary.csv")
    s.set_defaults(func=cmd_simulate)
    sub = s.add_subparsers(dest="simulate_action", required=False, metavar="{report}")
    r = sub.add_parser("report", help="summary table and figures from a folder of records",
                       description="Build summary.csv, report.md, jct_cdf.png and utilization.png.")
    r.add_argument("runs", help="folder written by schedopt simulate -o")
    r.add_argument("-o", "--output", required=True, help="output folder")
    r.set_defaults(func=cmd_simulate_report)
