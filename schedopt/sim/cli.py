"""``schedopt simulate``: run simulations and build reports from the command line.

``add_parser(subparsers)`` registers::

    schedopt simulate --cluster sia-64 --workload saturn/1,saturn/2 --policy sia,pollux-unaware --seeds 0-3 -o runs/
    schedopt simulate --workload saturn --policy sia --seeds 0-9 -o runs/ --resume      # after a kill or Ctrl-C
    schedopt simulate --workload trace:philly:as-is --policy sia -o runs/ --checkpoint-every 10min  # then --resume
    schedopt simulate report runs/ -o report/

Each simulation's records are streamed to the output folder as it runs (a job's when it finishes: a run holds its
active jobs, not the trace) and its record is whole the moment it finishes (atomically, with a checksummed end
marker: see :mod:`schedopt.sim.records`) as ``<output>/<policy>__<workload>__seed<k>.jsonl``, and
``<output>/summary.csv`` grows by a row with each. ``--resume`` skips the simulations whose record is there and
whole, goes on from the last checkpoint of a run killed with ``--checkpoint-every`` (:mod:`schedopt.sim.checkpoint`),
and redoes the rest (cut-short files included). Ctrl-C keeps what finished and exits 130. The report writes ``summary.csv``,
``report.md``, ``jct_cdf.png`` and ``utilization.png``; a record that is empty, cut short or torn is named and the
report refused (exit 2). ``--json`` prints one document (schemas ``schedopt.cli.simulate`` and
``schedopt.cli.simulate_report``). A workload is a shipped name (``saturn/1``), a whole shipped set (``saturn``) or
a CSV path.

**Seeds** (:mod:`schedopt.sim.seeds`): a seed varies a policy's random draws (Pollux's search; ``sia``, ``fifo``,
``tiresias`` and ``optimus`` draw none) and generated workloads (``gandiva/synthetic``, ``hived/synthetic``,
``synergy/philly``). Shipped workloads and CSV files are fixed: seeds that can change nothing are named in a warning
before the sweep runs, and the report's figures draw identical runs as one line with a note.
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
from pathlib import Path
from typing import Any

from ..cli_support import (
    EXIT_INTERRUPTED,
    EXIT_NO_SOLUTION,
    EXIT_OK,
    add_executor_arguments,
    document,
    emit,
    positive_float,
    positive_int,
)
from ..errors import InputError
from .runs import SimFailure, SweepInterrupted, record_name, summary_csv

__all__ = ["MAX_SEEDS", "add_parser", "cmd_simulate", "cmd_simulate_report", "parse_seeds", "parse_workers",
           "parse_workloads"]

log = logging.getLogger(__name__)

#: the most seeds one ``--seeds`` may name (a typo such as 0-100000000 is refused, not materialized)
MAX_SEEDS = 100_000

def parse_workers(text: str) -> int:
    """``--workers``: an integer in 1..MAX_WORKERS (schedopt.sim.limits; issue 25)."""
    from .limits import check_workers

    w = check_workers(positive_int(text), "--workers", allow_none=False)
    assert w is not None
    return w


def parse_seeds(text: str) -> list[int]:
    """``"0-3"`` -> [0, 1, 2, 3]; ``"0,2,5"`` -> [0, 2, 5]; at most :data:`MAX_SEEDS` seeds, each in 0..2**32-1."""
    spans: list[tuple[int, int]] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        a, dash, b = part.partition("-")
        try:
            lo = int(a)
            hi = int(b) if dash else lo
        except ValueError:
            raise InputError("--seeds", text, "must look like 0-3 or 0,1,2 (seeds >= 0)") from None
        if hi < lo:
            raise InputError("--seeds", text, f"the range {part} is empty (write low-high)")
        from .limits import MAX_SEED

        if hi >= MAX_SEED:
            raise InputError("--seeds", text, "seeds are integers with 0 <= seed < 2**32")
        spans.append((lo, hi))
    if not spans:
        raise InputError("--seeds", text, "names no seed")
    if sum(hi - lo + 1 for lo, hi in spans) > MAX_SEEDS:
        raise InputError("--seeds", text, f"names more than {MAX_SEEDS} seeds")
    return [s for lo, hi in spans for s in range(lo, hi + 1)]


def parse_workloads(text: str) -> list[str]:
    """``--workload``: comma-separated workload names; a set name such as ``saturn`` expands to its members (the
    names are resolved when the workloads load)."""
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


def _num(v: Any, scale: float = 1.0, fmt: str = ".2f") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    pct = fmt.endswith("%")
    return format(v * scale, fmt.rstrip("%")) + ("%" if pct else "")


def _table(rows: list[dict[str, Any]]) -> str:
    """Two tables, one time unit each: the results (hours) and the policy's time per round (milliseconds)."""
    head = ["policy", "workload", "seed", "finished", "avg JCT", "p99 JCT", "makespan", "GPU-hours", "worst rho",
            "unfair"]
    lines = ["results (times in hours)", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    h = 1 / 3600
    for r in rows:
        lines.append("| " + " | ".join([
            str(r["policy"]), str(r["workload"]), str(r["seed"]),
            f"{r['finished']}/{r['jobs']}" + (" (capped)" if r.get("capped") else ""),
            _num(r["avg_jct_s"], h, ".3f"), _num(r["p99_jct_s"], h), _num(r["makespan_s"], h),
            _num(r["gpu_hours"], 1.0, ".1f"), _num(r.get("worst_rho"), 1.0, ".2f"),
            _num(r.get("unfair_fraction"), 100.0, ".0f%"),
        ]) + " |")
    head2 = ["policy", "workload", "seed", "rounds", "median", "p95", "max"]
    lines += ["", "worst rho: the largest finish-time fairness rho (shared JCT / isolated JCT, Sia's rule); unfair: the "
              "jobs with rho > 1", "", "policy time per round (milliseconds)", "", "| " + " | ".join(head2) + " |",
              "|" + "---|" * len(head2)]
    for r in rows:
        lines.append("| " + " | ".join([
            str(r["policy"]), str(r["workload"]), str(r["seed"]), str(r["rounds"]),
            _num(r["policy_s_median"], 1e3, ".1f"), _num(r["policy_s_p95"], 1e3, ".1f"),
            _num(r["policy_s_max"], 1e3, ".1f"),
        ]) + " |")
    return "\n".join(lines)


def _progress(args: argparse.Namespace) -> bool | None:
    if getattr(args, "json", False) and args.progress == "auto":
        return None
    return {"auto": None, "on": True, "off": False}[args.progress]


def _tasks(args: argparse.Namespace) -> list[Any]:
    from .families import system_for
    from .sweep import tasks

    params: dict[str, Any] = {}
    if args.backend:
        params["backend"] = args.backend
    if args.time_limit is not None:
        params["time_limit"] = args.time_limit
    pols = [p.strip() for p in args.policy.split(",") if p.strip()]
    if not pols:
        raise InputError("--policy", args.policy, "names no policy")
    _check_choices(args, pols)
    per_policy = {p: (params if params and system_for(p).takes_solver_options(p) else {}) for p in pols}
    return tasks(pols, parse_workloads(args.workload), parse_seeds(args.seeds), cluster=args.cluster,
                 job_model=args.job_model, round_seconds=args.round_seconds, policy_params=per_policy,
                 charge_policy_time=args.charge_policy_time, estimator=args.estimator, placer=args.placer,
                 admission=args.admission)


def _check_backend(flag: str, name: object) -> None:
    """An unknown or missing backend is an error (exit 3, with the closest name) before anything runs."""
    from ..backends import get_backend
    from ..errors import BackendError

    try:
        get_backend(str(name))
    except BackendError as exc:
        raise BackendError(f"{flag}: {exc}") from None


def _check_choices(args: argparse.Namespace, pols: list[str]) -> None:
    """The options a sweep would otherwise drop or replace without a word (issue 41): an empty ``--cluster``, an
    unknown cluster preset (all presets listed, the closest named), an unknown ``--backend`` (also when no policy
    solves a model; a known one that no policy takes is said), and a policy spec's own ``backend=``."""
    from .families import system_for
    from .registry import parse_spec

    if args.cluster is not None and not args.cluster.strip():
        raise InputError("--cluster", args.cluster, "names no cluster (leave the flag out for each family's default)")
    fams = {p: system_for(p) for p in pols}
    if args.cluster is not None and any(f.name == "elastic" for f in fams.values()):
        from .workloads import cluster_preset

        try:
            cluster_preset(args.cluster)
        except InputError as exc:
            from .families import systems

            owner = [f.name for f in systems() if f.name != "elastic" and args.cluster in f.cluster_presets()]
            other = (f"; {args.cluster} is a cluster of the {owner[0]} family: run it with {owner[0]} policies"
                     if owner else "; other families' clusters: " + "; ".join(
                         f"{f.name}: {', '.join(f.cluster_presets())}" for f in systems() if f.name != "elastic"))
            raise InputError("--cluster", args.cluster, exc.message + other) from None
    for p in pols:
        b = parse_spec(p, "--policy").options.get("backend")
        if b is not None:
            _check_backend(f"--policy {p}", b)
    if args.backend is not None:
        _check_backend("--backend", args.backend)
        idle = [p for p, f in fams.items() if not f.takes_solver_options(p)]
        if len(idle) == len(pols):
            log.warning("--backend %s changes nothing: no policy of this sweep solves a model (%s)", args.backend,
                        ", ".join(idle))


def _where(tb: str) -> str | None:
    """``file:line in function`` of the innermost frame of a formatted traceback (None when it names none)."""
    import re

    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', tb)
    return f"{frames[-1][0]}:{frames[-1][1]} in {frames[-1][2]}" if frames else None


def _failure_doc(f: SimFailure) -> dict[str, Any]:
    from .runs import task_label

    return {"simulation": task_label(f.task), "error": f.error}


def _record_file(out: Path, r: Any) -> str:
    """The file name of ``r``'s record in ``out`` (``<name>.jsonl``, or ``<name>__<hash>.jsonl`` when two tasks of
    the sweep shared a name)."""
    base = record_name(r)
    if (out / f"{base}.jsonl").exists():
        return f"{base}.jsonl"
    return next((p.name for p in sorted(out.glob(f"{base}__*.jsonl"))), f"{base}.jsonl")


def cmd_simulate(args: argparse.Namespace) -> int:
    """``schedopt simulate``: run the sweep the arguments name and print (or write) its summary; the exit code."""
    from ..executors import open_executor, spec_from_flags
    from .metrics import summary_row
    from .runs import run_tasks

    if args.resume and not args.output:
        raise InputError("--resume", True, "needs -o/--output: the folder to resume")
    every = getattr(args, "checkpoint_every", None)
    if every is not None:
        from .checkpoint import parse_every

        every = parse_every(every)
        if not args.output:
            raise InputError("--checkpoint-every", args.checkpoint_every, "needs -o/--output: checkpoints are kept "
                             "beside the records")
        if spec_from_flags(args.executor, args.dask, args.ray) is not None:
            raise InputError("--checkpoint-every", args.checkpoint_every, "is written by schedopt's own worker "
                             "processes: drop --executor / --dask / --ray")
    out = args.output
    if out is not None and (not out.strip() or (Path(out).exists() and not Path(out).is_dir())):
        raise InputError("-o/--output", out, "is a file, not a folder" if out.strip() else "names no folder")
    items = _tasks(args)
    from .seeds import inert_seeds

    for msg in inert_seeds(items):
        log.warning("%s", msg)
    try:
        # in_process=False: simulations run in worker processes (one with --workers 1) that Ctrl-C stops at once,
        # even inside a solver, and that die with this command
        spec = spec_from_flags(args.executor, args.dask, args.ray)
        if spec is None:
            results = run_tasks(items, workers=args.workers, progress=_progress(args), output_dir=out,
                                resume=args.resume, on_error=args.on_error, heartbeat=args.progress_every,
                                in_process=False, summaries=True, stream=out is not None, checkpoint_every=every)
        else:  # threads, processes, a Dask or a Ray cluster: the executor layer owns what it opens
            with open_executor(spec, workers=args.workers) as ex:
                results = run_tasks(items, executor=ex, workers=args.workers, progress=_progress(args),
                                    output_dir=out, resume=args.resume, on_error=args.on_error,
                                    heartbeat=args.progress_every)
        interrupted = False
    except SweepInterrupted as exc:
        results, interrupted = exc.results, True
    except Exception as exc:  # a failing simulation: say what was kept, then the error (exit code by its kind)
        kept = [r for r in getattr(exc, "results", []) if r is not None and not isinstance(r, SimFailure)]
        if out and kept:
            print(f"schedopt simulate: {len(kept)} of {len(items)} simulations finished before the failure; their "
                  f"records are in {out}", file=sys.stderr)
        tb = getattr(exc, "traceback", "")
        if args.verbose and isinstance(tb, str) and tb:  # a user's policy that raised: where, and the worker's trace
            where = _where(tb)
            if where:
                print(f"schedopt simulate: raised at {where}", file=sys.stderr)
            print(tb.rstrip(), file=sys.stderr)
        raise
    done = [r for r in results if r is not None and not isinstance(r, SimFailure)]
    failed = [r for r in results if isinstance(r, SimFailure)]
    rows = [summary_row(r) for r in done]
    code = EXIT_INTERRUPTED if interrupted else (EXIT_NO_SOLUTION if failed else EXIT_OK)
    if args.json:
        emit(document("simulate", code, output=out, interrupted=interrupted, simulations=len(done),
                      total=len(items), failed=[_failure_doc(f) for f in failed],
                      records=[_record_file(Path(out), r) for r in done] if out else [], summaries=rows))
        return code
    if rows:
        print(_table(rows))
    for f in failed:
        print(f"schedopt simulate: {_failure_doc(f)['simulation']} failed: {f.error}", file=sys.stderr)
    if interrupted:
        where = f"; their records are in {out}" if out else " (no -o: nothing written)"
        print(f"schedopt simulate: interrupted: {len(done)} of {len(items)} simulations finished{where}",
              file=sys.stderr)
    elif out:
        print(f"wrote {len(done)} simulations to {out}" + (f" ({len(failed)} failed: see *.failed.json)"
                                                          if failed else ""))
    return code


def cmd_simulate_report(args: argparse.Namespace) -> int:
    """``schedopt simulate report``: the summary table and figures of a folder of records; the exit code."""
    from .metrics import summary_row
    from .plots import jct_cdf, rho_cdf, utilization_plot
    from .records import atomic_write_text, read_record

    src = Path(args.runs)
    if not src.is_dir():
        raise InputError("runs", str(src), "is not a folder" if src.exists() else "does not exist")
    files = sorted(src.glob("*.jsonl"))
    failed = sorted(src.glob("*.failed.json"))
    if not files:
        raise InputError("runs", str(src), "holds no .jsonl simulation records" +
                         (f" ({len(failed)} failed simulations: *.failed.json)" if failed else ""))
    results = [read_record(f) for f in files]  # a bad file: RecordError naming it (exit 2)
    rows = [summary_row(r) for r in results]
    from .records import output_folder

    out = output_folder(args.output, "--output", probe=False)
    atomic_write_text(out / "summary.csv", summary_csv(rows), fsync=False)
    jct_cdf(results, out / "jct_cdf.png")
    utilization_plot(results, out / "utilization.png")
    rho_cdf(results, out / "rho_cdf.png")
    note = f"\n\n{len(failed)} simulations failed: " + ", ".join(f.name for f in failed) if failed else ""
    from .plots import identical_note

    same = identical_note(results)
    if same:  # seeds that changed nothing (docs/reference/seeds.md): said, and drawn as one line
        note += "\n\nIdentical runs (a seed varies only a policy's random draws and generated workloads):\n\n" + \
            "\n".join(f"- {x}" for x in same)
    atomic_write_text(out / "report.md", f"# Simulation report\n\n{len(results)} simulations from `{src}`.{note}\n\n"
                      f"{_table(rows)}\n\n![JCT CDF](jct_cdf.png)\n\n![Utilization](utilization.png)\n\n"
                      "![Finish-time fairness](rho_cdf.png)\n", fsync=False)
    if args.json:
        emit(document("simulate report", EXIT_OK, runs=str(src), output=str(out), simulations=len(results),
                      failed=[f.name for f in failed], summaries=rows))
        return EXIT_OK
    print(_table(rows))
    print(f"wrote the report to {out}")
    return EXIT_OK


def add_parser(subparsers: Any) -> None:
    """Register ``simulate`` (and its ``report`` action) on the main parser's subparsers."""
    s = subparsers.add_parser(
        "simulate", help="replay job traces under scheduling policies (see also: simulate report)",
        description="Simulate policies x workloads x seeds; 'schedopt simulate report RUNS -o DIR' builds the report. "
                    "Exit codes: 0 every simulation ran, 1 some failed (--on-error record), 2 bad input, "
                    "130 interrupted (the finished records stay).")
    s.add_argument("--cluster", default=None,
                   help="pollux, sia-64 or sia-<64k> (default sia-64); gandiva-100 (default of gandiva policies), "
                        "gandiva-100-homogeneous, ...; hived: three-tenant (default), tiny, example; synergy policies "
                        "run on their workload's cluster by default")
    s.add_argument("--workload", default="saturn/1", help="comma-separated: saturn/1, a whole set (pollux), or CSV paths; "
                   "synergy/static|dynamic|test|philly[:jobs=N][:jph=X]; gandiva/synthetic[:jobs=N:interarrival=S]; "
                   "hived/synthetic[:jobs=N...]")
    s.add_argument("--policy", default="sia", help="comma-separated: sia (sia:published: the published simulator's "
                   "batch cap, = sia:batch_cap=request), tiresias, fifo, pollux, pollux-exact, "
                   "pollux-unaware, gavel; synergy[:queue/method] (e.g. synergy:las/opt); gandiva[:variant] (e.g. "
                   "gandiva:off); hived[:variant] (e.g. hived:quota); a registered name; or your own module:Class[:key=value]")
    s.add_argument("--placer", default=None, metavar="SPEC",
                   help="where jobs go on the cluster: sia (default), packing, or module:Class[:key=value]")
    s.add_argument("--admission", default=None, metavar="SPEC",
                   help="which arriving jobs are let in: accept-all (default), queue-cap:limit=N, gpu-cap:max_gpus=N, or "
                        "module:Class[:key=value]")
    s.add_argument("--seeds", default="0",
                   help="e.g. 0-3 or 0,1. A seed varies a policy's random draws (pollux, pollux-unaware; sia, fifo, "
                        "tiresias and optimus draw none) and generated workloads (gandiva/synthetic, hived/synthetic, "
                        "synergy/philly); shipped workloads (saturn/1, philly/3, ...) and CSV files are fixed, so "
                        "their seeds give identical runs with such policies (said as a warning; docs/reference/seeds.md)")
    s.add_argument("--round-seconds", type=positive_float, default=None, help="default: 60 (synergy policies: 300)")
    s.add_argument("--job-model", default=None, choices=["pollux", "sia", "sia-measured"],
                   help="default: pollux on the pollux cluster, sia-measured (the published step times) on the sia-* "
                        "presets, else sia (the fitted model)")
    s.add_argument("--backend", default=None, help="solver backend of model-based policies (sia: mckp, highs, cpsat, ...)")
    s.add_argument("--time-limit", type=positive_float, default=None, help="solver time limit per round (seconds)")
    s.add_argument("--charge-policy-time", action="store_true", help="delay re-allocated jobs by the policy's wall time")
    s.add_argument("--estimator", choices=("bootstrap", "oracle"), default="bootstrap",
                   help="what the policy sees of a job's throughput: Sia's online estimate (bootstrap from 1-GPU "
                        "profiles, refitted as the job runs; default) or the true model (oracle)")
    s.add_argument("--workers", type=parse_workers, default=1,
                   help="simulations at once (processes; default 1; with --executor/--dask/--ray the worker count "
                        "of a local pool or cluster it opens)")
    add_executor_arguments(s, "simulations")
    s.add_argument("--progress", choices=("auto", "on", "off"), default="auto",
                   help="progress on stderr: on forces the bar, off silences it, auto draws the bar on a terminal and "
                        "otherwise writes a block every --progress-every seconds (each running simulation with its "
                        "rounds, simulated time and jobs finished) and one at the end")
    s.add_argument("--progress-every", type=positive_float, default=30.0, metavar="SECONDS",
                   help="seconds between progress blocks when stderr is not a terminal (default 30)")
    s.add_argument("-o", "--output", default=None,
                   help="folder for the records (.jsonl, each written as it finishes) and summary.csv")
    s.add_argument("--resume", action="store_true",
                   help="skip the simulations whose record in -o is whole; go on from the last checkpoint of a "
                        "run killed with --checkpoint-every (at its interval); redo the others (cut-short ones "
                        "included)")
    s.add_argument("--checkpoint-every", default=None, metavar="EVERY",
                   help="save each run's whole state beside its record every EVERY seconds of CPU (600, 600s, "
                        "10min, 1h) or rounds (5000r), so that --resume goes on from there after a kill (a whole "
                        "trace's run); policies that cannot be restored exactly, and the synergy, gandiva and hived "
                        "families, are refused")
    s.add_argument("--on-error", choices=("raise", "record"), default="raise",
                   help="a failing simulation: stop the sweep at once (raise, default) or write <name>.failed.json "
                        "and go on (record; exit code 1 at the end)")
    s.add_argument("--json", action="store_true", help="print one JSON object (schema schedopt.cli.simulate)")
    s.add_argument("--verbose", action="store_true", help="log lines of schedopt at INFO, and of Dask / Ray")
    s.set_defaults(func=cmd_simulate)
    sub = s.add_subparsers(dest="simulate_action", required=False, metavar="{report}")
    r = sub.add_parser("report", help="summary table and figures from a folder of records",
                       description="Build summary.csv, report.md, jct_cdf.png and utilization.png. A record that is "
                                   "empty, cut short or torn is named and refused (exit 2).")
    r.add_argument("runs", help="folder written by schedopt simulate -o")
    r.add_argument("-o", "--output", required=True, help="output folder")
    r.add_argument("--json", action="store_true", help="print one JSON object (schema schedopt.cli.simulate_report)")
    r.add_argument("--verbose", action="store_true", help="log lines of schedopt at INFO")
    r.set_defaults(func=cmd_simulate_report)
