"""``schedopt trace``: convert a public trace to a workload, and print a trace's statistics.

``add_parser(subparsers)`` registers::

    schedopt trace convert cluster_log.csv --format helios -o workload.csv [--load 1.5 --jobs 160 --seed 0 --rule sia]
    schedopt trace stats cluster_log.csv [--format helios] [--cluster sia-64] [--plot stats.png] [--skip-bad]

``convert`` writes the workload CSV (readable by ``schedopt simulate --workload``) and ``<output>.meta.json`` with the
rule, seed, load, window and the class -> application map; ``stats`` prints the arrival rate, size and duration
distributions, GPU-time classes and, with ``--cluster``, the offered load (a job asking for more GPUs than the cluster
has is an error unless ``--skip-bad``, which counts it as skipped).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..cli_support import EXIT_OK, document, emit, nonneg_int
from ..errors import InputError
from .generate import RULES, generate
from .readers import FORMATS, read_trace
from .stats import figure_formats, plot_stats, trace_stats
from .trace import Trace

__all__ = ["add_parser", "cmd_trace_convert", "cmd_trace_stats"]


def _read(args: argparse.Namespace) -> Trace:
    if args.cluster is not None and not args.cluster.strip():
        raise InputError("--cluster", args.cluster, "is empty: name a cluster preset (pollux, sia-64, sia-<64k>) or "
                         "leave the flag out")
    trace = read_trace(args.src, args.format, skip_bad=args.skip_bad)
    if args.cluster:
        from ..sim.workloads import cluster_preset

        c = cluster_preset(args.cluster)
        total = sum(t.gpus_per_node * t.nodes for t in c.gpu_types)
        trace = trace.check_cluster(total, skip_bad=args.skip_bad, cluster=args.cluster)
    return trace


def _cluster_gpus(name: str | None) -> int | None:
    if not name:
        return None
    from ..sim.workloads import cluster_preset

    return sum(t.gpus_per_node * t.nodes for t in cluster_preset(name).gpu_types)


def _seed(text: str) -> int:
    v = nonneg_int(text)
    if v >= 2**32:
        raise argparse.ArgumentTypeError(f"must be an integer with 0 <= seed < 2**32, got {text!r}")
    return v


def _check_plot(path: str | None) -> None:
    """A figure path matplotlib can write (its extension one of the formats it supports), checked before any work."""
    if path is None:
        return
    p = Path(path)
    if p.is_dir():
        raise InputError("--plot", path, "is a folder; give the figure's file name (e.g. stats.png)")
    if p.suffix:
        formats = figure_formats()
        if p.suffix[1:].lower() not in formats:
            raise InputError("--plot", path, f"has the extension {p.suffix!r}, which matplotlib cannot write; use "
                             f"one of {', '.join('.' + f for f in sorted(formats))}")


def _check_output(path: str) -> None:
    p = Path(path)
    if p.is_dir():
        raise InputError("--output", path, "is a folder; give the workload CSV's file name (the metadata goes beside "
                         "it as <output>.meta.json)")
    if not p.parent.is_dir():
        raise InputError("--output", path, f"its folder {p.parent} does not exist")


def cmd_trace_stats(args: argparse.Namespace) -> int:
    """``schedopt trace stats``: a trace's statistics (and figure); the exit code."""
    _check_plot(args.plot)
    trace = _read(args)
    st = trace_stats(trace, _cluster_gpus(args.cluster))
    if args.json:
        made = plot_stats(trace, st, args.plot) if args.plot else None
        emit(document("trace stats", EXIT_OK, **st.to_dict(),
                      skipped_rows=[{"row": r, "reason": m} for r, m in trace.skipped[:100]],
                      plot=None if made is None else str(made)))
        return EXIT_OK
    print(st.format_text())
    for row, reason in trace.skipped[:10]:
        print(f"  skipped row {row}: {reason}")
    if len(trace.skipped) > 10:
        print(f"  ... and {len(trace.skipped) - 10} more skipped rows")
    if args.plot:
        made = plot_stats(trace, st, args.plot)
        print(f"wrote {made}" if made else "matplotlib is not installed: no figure")
    return 0


def cmd_trace_convert(args: argparse.Namespace) -> int:
    """``schedopt trace convert``: a trace to a simulator workload CSV; the exit code."""
    _check_output(args.output)
    trace = _read(args)
    app_map = None
    if args.app_map:
        try:
            app_map = dict(kv.split("=", 1) for kv in args.app_map.split(","))
        except ValueError:
            raise InputError("--app-map", args.app_map, "must look like 'ResNet-18=cifar10,LM=deepspeech2'") from None
    g = generate(trace, jobs=args.jobs, load=args.load, window_h=args.window_h, seed=args.seed, rule=args.rule,
                 start_h=args.start_h, name=Path(args.output).stem, app_map=app_map)
    g.meta["skipped_rows"] = len(trace.skipped)
    too_big: list[str] = []
    if args.cluster:  # the rule's requests, not only the trace's own counts (checked by _read)
        from ..sim.workloads import cluster_preset

        biggest = max(t.total_gpus for t in cluster_preset(args.cluster).gpu_types)
        too_big = [j.name for j in g.workload.jobs if j.num_replicas > biggest]
        g.meta["cluster"] = args.cluster
        g.meta["too_big_for_rigid"] = too_big
    out = g.write(args.output)
    if too_big:
        print(f"warning: {len(too_big)} generated jobs ask for more GPUs than any GPU type of {args.cluster} has "
              f"(largest {biggest}): {', '.join(too_big[:5])}{' ...' if len(too_big) > 5 else ''}. Adaptive policies "
              "(sia, pollux) shrink them; rigid ones (fifo, tiresias, gavel, ...) refuse this workload on "
              f"{args.cluster} (listed in {out}.meta.json as too_big_for_rigid)", file=sys.stderr)
    apps: dict[str, int] = {}
    for j in g.workload.jobs:
        apps[j.application] = apps.get(j.application, 0) + 1
    print(f"wrote {out} ({len(g.workload)} jobs: {', '.join(f'{a} {n}' for a, n in sorted(apps.items()))}) and "
          f"{out}.meta.json; {g.meta['eligible']} eligible trace jobs, left out {g.meta['left_out']}, "
          f"{len(trace.skipped)} rows skipped")
    return 0


def add_parser(subparsers: Any) -> None:
    """Register ``trace`` (``convert`` and ``stats``) on the main parser's subparsers."""
    t = subparsers.add_parser("trace", help="read public GPU-cluster traces: convert to a workload, statistics",
                              description="Read a public trace (Philly, Helios, Alibaba PAI 2020/2023, Acme, Gavel, "
                              "Pollux/Sia workloads); see formulations/traces.md for the column maps.")
    sub = t.add_subparsers(dest="trace_action", required=True, metavar="{convert,stats}")

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("src", help="the trace file (pai2020: the folder holding pai_job_table.csv, pai_task_table.csv)")
        p.add_argument("--format", choices=FORMATS, default=None, help="default: guessed from the file")
        p.add_argument("--cluster", default=None, help="a cluster preset (pollux, sia-64, sia-<64k>): jobs asking for "
                       "more GPUs than it has are an error (or skipped with --skip-bad)")
        p.add_argument("--skip-bad", action="store_true", help="skip bad rows and report how many, instead of failing")

    c = sub.add_parser("convert", help="make a simulator workload from a trace",
                       description="Sample a workload from a trace by Pollux's or Sia's rule (formulations/traces.md).")
    common(c)
    c.add_argument("-o", "--output", required=True, help="the workload CSV to write (and <output>.meta.json)")
    c.add_argument("--jobs", type=int, default=160, help="jobs at load 1.0 (default 160)")
    c.add_argument("--load", type=float, default=1.0, help="job-count multiplier over the same window (default 1.0)")
    c.add_argument("--window-h", type=float, default=8.0, help="arrival window in hours (default 8)")
    c.add_argument("--start-h", type=float, default=None, help="window start: hour of day (pollux) or hours after "
                   "the first submission (sia, names); default 2 (pollux, sia) or 0 (names)")
    c.add_argument("--seed", type=_seed, default=0, help="the seed of the draws (0 <= seed < 2**32; default 0)")
    c.add_argument("--rule", choices=RULES, default="pollux", help="pollux or sia (map by GPU-time class, the "
                   "artifacts' generators) or names (map the trace's model names; default pollux)")
    c.add_argument("--app-map", default=None, help="rule names: model-name prefix=application pairs, e.g. "
                   "'ResNet-18=cifar10,LM=deepspeech2' (default: Gavel's job types, formulations/traces.md)")
    c.set_defaults(func=cmd_trace_convert)
    s = sub.add_parser("stats", help="arrival rate, size and duration distributions, offered load",
                       description="Statistics of a trace, and a figure with --plot.")
    common(s)
    s.add_argument("--plot", default=None, help="write a figure here (PNG, or another format matplotlib writes: "
                   ".pdf, .svg, ...)")
    s.add_argument("--json", action="store_true", help="print one JSON object (schema schedopt.cli.trace_stats)")
    s.set_defaults(func=cmd_trace_stats)


