"""The ``schedopt`` command line.

Every problem is reached through its typed :class:`~schedopt.problem.ProblemIO` (``solve(spec, SolveOptions) ->
Answer``, ``generate``, ``explain``, ``size``); the harness through :mod:`schedopt.bench`. The exit-code rule and
the ``--json`` envelope are :mod:`schedopt.cli_support`'s (shared with plug-in subcommands such as
``schedopt.sim.cli``, which registers ``simulate`` through ``add_parser(subparsers)``).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from . import __version__
from .cli_support import (
    EXIT_BACKEND,
    EXIT_CODES,
    EXIT_INPUT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_NO_SOLUTION,
    EXIT_OK,
    add_executor_arguments,
    csv_ints,
    csv_names,
    document,
    emit,
    error_document,
    exit_code_for,
    format_timings,
    nonneg_int,
    positive_float,
    positive_int,
    seed_int,
    unit_interval,
)
from .errors import BackendError, InputError, SchedoptError
from .problem import Answer, ProblemIO, SolveOptions

__all__ = ["EXIT_BACKEND", "EXIT_INPUT", "EXIT_NO_SOLUTION", "EXIT_OK", "build_parser", "format_table", "main"]


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "n/a"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return f"{v:.6g}"
    if v is None:
        return "-"
    if isinstance(v, dict):
        return ", ".join(f"{k}={_fmt(x)}" for k, x in v.items()) or "-"
    if isinstance(v, (list, tuple)):
        return ", ".join(_fmt(x) for x in v) or "-"
    return str(v)


def format_table(rows: Sequence[dict[str, Any]], limit: int | None = 40) -> str:
    """A plain-text table of dict rows (the columns of the first row, in order)."""
    if not rows:
        return "(no rows)"
    cols = list(rows[0])
    for r in rows[1:]:
        cols.extend(k for k in r if k not in cols)
    shown = list(rows if limit is None else rows[:limit])
    cells = [[_fmt(r.get(c)) for c in cols] for r in shown]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    line = "  ".join(c.ljust(w) for c, w in zip(cols, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
    if limit is not None and len(rows) > limit:
        out.append(f"... {len(rows) - limit} more rows (--all shows every row, --json gives machines all of it)")
    return "\n".join(out)


def _print_summary(summary: dict[str, Any]) -> None:
    width = max(len(k) for k in summary) if summary else 0
    for k, v in summary.items():
        print(f"{k.rjust(width)}: {_fmt(v)}")


def _answer_summary(answer: Answer) -> dict[str, Any]:
    """The scalar fields of ``answer.to_dict()``, the termination as one line."""
    d = answer.to_dict()
    out: dict[str, Any] = {"termination": str(answer.termination)}
    for k, v in d.items():
        if k in ("method", "backend", "objective", "bound", "gap") or (
                k != "termination" and v is not None and not isinstance(v, (dict, list))):
            out[k] = v
    out["timings"] = format_timings(d.get("timings", {}))
    return out


def _load(path: str) -> tuple[Any, ProblemIO]:
    from .examples import resolve
    from .instances import load
    from .problem import problem_of

    spec = load(resolve(path))
    return spec, problem_of(spec)


def _check_backend(name: str | None) -> None:
    """An unknown or missing backend is an error (exit 3) before anything is loaded or solved."""
    if name is None:
        return
    from .backends import get_backend

    get_backend(name)


def _options(args: argparse.Namespace) -> SolveOptions:
    return SolveOptions(backend=args.backend, time_limit=args.time_limit, mip_rel_gap=args.gap, threads=args.threads,
                        seed=args.seed, verbose=args.verbose, method=args.method)


# ----------------------------------------------------------------------------------------------- commands
def cmd_solve(args: argparse.Namespace) -> int:
    _check_backend(args.backend)
    spec, io = _load(args.instance)
    if io.solve is None:
        raise InputError("problem", io.name, "has no solve")
    if args.method is not None and io.methods and args.method not in io.methods:
        raise InputError("--method", args.method, f"must be one of {list(io.methods)} for {io.name}")
    answer = io.solve(spec, _options(args))
    code = exit_code_for(answer)
    if args.json:
        emit(document("solve", code, problem=io.name, instance=args.instance, answer=answer.to_dict()))
        return code
    print(f"schedopt {__version__}: {io.name} instance {args.instance}")
    _print_summary(_answer_summary(answer))
    if answer.has_solution:  # an answer that holds nothing has no rows to show (rows() would raise)
        print()
        print(format_table(answer.rows(), None if args.all else 40))
    if code != EXIT_OK:
        print(f"schedopt: no solution: {answer.termination}", file=sys.stderr)
        why = answer.to_dict().get("explanation")
        if why:
            print(str(why), file=sys.stderr)
    return code


def _generator_params(pairs: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in pairs:
        key, eq, value = p.partition("=")
        if not eq or not key:
            raise InputError("--param", p, "must be KEY=VALUE (VALUE read as JSON when it parses, else as text)")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def cmd_generate(args: argparse.Namespace) -> int:
    from .instances import save
    from .problem import get_problem

    try:
        io = get_problem(args.problem)
    except InputError as exc:
        raise InputError("PROBLEM", args.problem, exc.message) from None
    if io.generate is None:
        raise InputError("PROBLEM", args.problem, "has no generator")
    params = _generator_params(args.param)
    try:
        spec = io.generate(args.gpus, args.seed, **params)
    except InputError as exc:
        flag = {"gpus": "--gpus", "seed": "--seed"}.get(exc.field, f"--param {exc.field}" if exc.field in params
                                                        else exc.field)
        raise InputError(flag, exc.value, exc.message) from None
    except TypeError as exc:  # a generator parameter it does not take
        raise InputError("--param", sorted(params), f"not accepted by the {args.problem} generator: {exc}") from None
    gen = {"problem": args.problem, "gpus": args.gpus, "seed": args.seed, **params}
    save(spec, args.output, generator=gen)
    size = io.size(spec) if io.size is not None else None
    if args.json:
        emit(document("generate", EXIT_OK, problem=args.problem, output=args.output, gpus=args.gpus, seed=args.seed,
                      params=params, size={"gpus": size[0], "jobs": size[1]} if size else None))
    else:
        print(f"wrote {args.problem} instance ({args.gpus} GPUs, seed {args.seed}) to {args.output}")
    return EXIT_OK


def cmd_explain(args: argparse.Namespace) -> int:
    _check_backend(args.backend)
    spec, io = _load(args.instance)
    if io.explain is None:
        raise InputError("problem", io.name, "has no explanation")
    answer = io.solve(spec, _options(args)) if io.solve is not None else None
    text = io.explain(spec)
    code = exit_code_for(answer) if answer is not None else EXIT_OK
    if args.json:
        emit(document("explain", code, problem=io.name, instance=args.instance,
                      feasible=None if answer is None else (True if answer.has_solution else (
                          False if answer.termination.reason.value.startswith("infeasible") else None)),
                      answer=answer.to_dict() if answer is not None else None, explanation=text))
        return code
    if answer is not None:
        print(f"termination: {answer.termination}")
    print(text)
    return code


def cmd_backends(args: argparse.Namespace) -> int:
    from .backends import available_backends, get_backend

    info = available_backends(include_missing=True)
    if args.json:
        emit(document("backends", EXIT_OK, backends=[
            {**b.as_dict(), "version": get_backend(name).version() if b.available else None}
            for name, b in info.items()]))
        return EXIT_OK
    rows = []
    for name, b in info.items():
        caps = b.capabilities
        rows.append(
            {
                "backend": name,
                "installed": "yes" if b.available else "no",
                "version": get_backend(name).version() if b.available else "-",
                "LP": "yes" if caps.lp else "-",
                "MIP": "yes" if caps.mip else "-",
                "duals": "yes" if caps.duals else "-",
                "IIS": "yes" if caps.iis else "-",
                "warm start": "yes" if caps.warm_start else "-",
                "notes": b.reason or ("integer models only" if caps.integer_only else (f"{caps.structure} structure only" if caps.structure else "")),
            }
        )
    print(format_table(rows, None))
    return EXIT_OK


def _executor_spec(args: argparse.Namespace) -> str | None:
    from .executors import spec_from_flags

    return spec_from_flags(args.executor, args.dask, args.ray)


def _bench_flag(field: str) -> str:
    root = field.split("[", 1)[0].split(".", 1)[0]
    return {"sizes": "--sizes", "seeds": "--seeds", "backends": "--backends", "repeat": "--repeat",
            "time_limit": "--time-limit", "guard_seconds": "--guard", "threads": "--threads", "workers": "--workers",
            "executor": "--executor", "problem": "--problem", "loads": "--loads", "warm": "--warm"}.get(root, field)


def cmd_bench(args: argparse.Namespace) -> int:
    from . import bench
    from .bench.runner import SweepInterrupted, default_output

    try:
        bench.get_spec(args.problem)
    except InputError as exc:
        raise InputError("--problem", exc.value, exc.message) from None
    out = Path(args.output) if args.output else default_output(args.problem)
    sizes: Any = args.sizes
    if isinstance(sizes, str):
        if sizes not in ("default", "large", "all"):
            try:
                sizes = csv_ints(sizes)
            except argparse.ArgumentTypeError as exc:
                raise InputError("--sizes", sizes, f"{exc}, or default/large/all") from None
    progress = {"auto": None, "on": True, "off": False}[args.progress]
    executor = _executor_spec(args)
    if not args.output and not args.json:
        print(f"schedopt bench: no -o given: writing the records to {out}", file=sys.stderr)
    try:
        records = bench.run(
            args.problem, sizes=sizes, seeds=args.seeds, backends=args.backends, repeat=args.repeat,
            time_limit=args.time_limit, guard_seconds=args.guard, threads=args.threads, out=out, workers=args.workers,
            executor=executor, progress=progress, loads=args.loads, progress_interval=args.progress_every,
            warm=args.warm,
            start=args.start,
        )
    except SweepInterrupted as exc:
        print(f"schedopt bench: interrupted: kept {len(exc.records)} of {exc.total} runs in {out}", file=sys.stderr)
        if args.json:
            emit(document("bench", EXIT_INTERRUPTED, spec=args.problem, output=str(out), interrupted=True,
                          runs=len(exc.records), total=exc.total, records=[r.as_dict() for r in exc.records]))
        return EXIT_INTERRUPTED
    except InputError as exc:
        flag = _bench_flag(exc.field)
        if flag == "--backends":  # the exit-code rule: an unknown or missing backend is 3
            raise BackendError(f"--backends: {exc.value!r}: {exc.message}") from None
        raise InputError(flag, exc.value, exc.message) from None
    if args.json:
        emit(document("bench", EXIT_OK, spec=args.problem, output=str(out), interrupted=False, runs=len(records),
                      total=len(records), records=[r.as_dict() for r in records]))
    else:
        failed = sum(r.termination in ("error", "guard") for r in records)
        print(f"wrote {len(records)} records to {out}" + (f" ({failed} ended in error or at the guard)" if failed
                                                          else ""))
    return EXIT_OK


def cmd_bench_report(args: argparse.Namespace) -> int:
    from . import bench

    path = bench.report(args.results, args.output)
    if args.json:
        emit(document("bench report", EXIT_OK, results=args.results, output=str(path)))
    else:
        print(f"wrote the report to {path}")
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    """Solve Sia on a heterogeneous cluster with jobs from the model zoo, place it, and print it."""
    from . import sia
    from .problem import get_problem

    _check_backend(args.backend)
    io = get_problem("sia")
    assert io.generate is not None and io.solve is not None
    spec = io.generate(args.gpus, args.seed)
    answer = io.solve(spec, SolveOptions(backend=args.backend, time_limit=args.time_limit))
    assert isinstance(answer, sia.SiaSolution)
    code = exit_code_for(answer)
    placement = sia.place(spec.cluster, answer.allocation) if answer.has_solution else None
    rows = []
    if placement is not None:
        for job in spec.jobs:
            cfg = answer.allocation.get(job.id)
            where = placement.assignments.get(job.id) if cfg is not None else None
            rows.append({"job": job.id, "kind": job.kind, "gpus": cfg.n_gpus if cfg else 0,
                         "type": cfg.gpu_type if cfg else None,
                         "nodes": [{"node": n, "gpus": list(g)} for n, g in where] if where else []})
    used = {t.name: 0 for t in spec.cluster.gpu_types}
    if placement is not None:
        for cfg in answer.allocation.values():
            if cfg is not None:
                used[cfg.gpu_type] += cfg.n_gpus
    if args.json:
        emit(document("demo", code, problem="sia", gpus=args.gpus, seed=args.seed, answer=answer.to_dict(),
                      placement=rows, gpus_used=used))
        return code
    print(
        f"schedopt {__version__} demo: Sia on a {args.gpus}-GPU heterogeneous cluster "
        f"({', '.join(f'{t.nodes} x {t.gpus_per_node} {t.name}' for t in spec.cluster.gpu_types)}), "
        f"{len(spec.jobs)} jobs"
    )
    print(f"backend: {answer.backend}   termination: {answer.termination}")
    if not answer.has_solution:
        return code
    t = answer.timings
    print(
        f"objective: {answer.objective:.6g}   bound: {answer.bound:.6g}   gap: {answer.gap:.2e}   "
        + format_timings({"build": t.build, "handoff": t.handoff, "solve": t.solve})
    )
    table = [{**r, "type": r["type"] or "-",
              "nodes": ", ".join(f"{w['node']}:{','.join(map(str, w['gpus']))}" for w in r["nodes"]) or "-"}
             for r in rows]
    print()
    print(format_table(table, None if args.all else 40))
    print()
    print("GPUs used per type: " + ", ".join(f"{k} {v}/{t.nodes * t.gpus_per_node}"
                                             for (k, v), t in zip(used.items(), spec.cluster.gpu_types)))
    return code


# ----------------------------------------------------------------------------------------------- parser
def _schema_dir() -> str:
    from importlib import resources

    return str(resources.files("schedopt.schemas"))


_EPILOG = "exit codes:\n" + "\n".join(f"  {k:<4d}{v}" for k, v in EXIT_CODES.items()) + (
    "\n\n--json prints one JSON object on stdout (also on failure). JSON Schemas: cli.schema.json (the output) and\n"
    f"instance.schema.json (instance files), in {_schema_dir()}\n"
    "An instance path may be example:NAME, a file shipped with schedopt: example:heterps_unreachable.json and\n"
    "example:hived_bad_node.json are bad instances for explain.")


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors naming the flag (exit 2), as a JSON error object under --json."""

    json_errors = False

    def error(self, message: str) -> NoReturn:
        line = f"{self.prog}: error: {message}"
        if _Parser.json_errors:
            flag = message.split(":", 1)[0].removeprefix("argument ") if message.startswith("argument ") else None
            doc = error_document(self.prog.removeprefix("schedopt").strip() or "schedopt", EXIT_INPUT, None, message)
            doc["error"]["field"] = flag
            emit(doc)
        print(line, file=sys.stderr)
        raise SystemExit(EXIT_INPUT)


def _add_solve_options(p: argparse.ArgumentParser, time_limit: float | None = None) -> None:
    p.add_argument("--backend", default=None, help="solver backend (default: the problem's choice; "
                   "'schedopt backends' lists them)")
    p.add_argument("--method", default=None, help="the problem's method (heterps: dp, milp, greedy, ...; "
                   "gandiva: exact, greedy); default: its first")
    p.add_argument("--time-limit", type=positive_float, default=time_limit, help="seconds")
    p.add_argument("--gap", type=unit_interval, default=1e-6, help="relative MIP gap (default 1e-6)")
    p.add_argument("--threads", type=nonneg_int, default=1, help="solver threads (0: the solver's choice)")
    p.add_argument("--seed", type=int, default=0,
                   help="the solver's random seed (HiGHS, CP-SAT, ...) and the heuristics' (GA, greedy ties): it may "
                        "change which of several equally good answers comes back and how long it takes, never the "
                        "instance")
    p.add_argument("--verbose", action="store_true", help="solver log on stderr")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``schedopt`` command line's parser (every subcommand, those of the simulator and the traces included).
    ``command``: the subcommand about to be parsed when it is one of the optional packages' (``simulate``, ``serve``,
    ``trace``, ``reproduce``, ``live``): the other optional packages' subcommands are then left out, and their
    modules unimported (``main`` passes it; ``schedopt simulate`` starts about 0.04 s of CPU sooner)."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = _Parser(
        prog="schedopt",
        description="Optimization models behind GPU-cluster schedulers: solve, generate, explain and benchmark.",
        epilog=_EPILOG, formatter_class=fmt,
    )
    p.add_argument("--version", action="version", version=f"schedopt {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)

    s = sub.add_parser("solve", help="solve an instance file and print the answer", epilog=_EPILOG,
                       formatter_class=fmt, description="Solve any problem's instance file.")
    s.add_argument("instance", help="an instance JSON file (schedopt generate writes one), or example:NAME")
    _add_solve_options(s)
    s.add_argument("--json", action="store_true", help="print one JSON object (schema schedopt.cli.solve)")
    s.add_argument("--all", action="store_true", help="print every allocation row")
    s.set_defaults(func=cmd_solve)

    g = sub.add_parser("generate", help="write a generated instance", epilog=_EPILOG, formatter_class=fmt,
                       description="Write a seeded generated instance.")
    from .problem import problem_names

    # the problems' names are read from the entry points (a scan of every installed distribution): only where this
    # parser can show them, not when main() parses an optional package's subcommand (`schedopt simulate`)
    g.add_argument("problem", metavar="PROBLEM",
                   help="the problem" if command in _PLUGIN_COMMANDS else ", ".join(problem_names()))
    g.add_argument("--seed", type=seed_int, default=0,
                   help="the generator's seed (0 <= seed < 2**32): it draws the instance's jobs (and their sizes and profiles); the same "
                        "seed and parameters give the same file")
    g.add_argument("--gpus", type=positive_int, default=64)
    g.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="a generator parameter (heterps: model=nce; gandiva: operation=defragment); repeatable")
    g.add_argument("-o", "--output", required=True)
    g.add_argument("--json", action="store_true")
    g.set_defaults(func=cmd_generate)

    e = sub.add_parser("explain", help="solve an instance and say why it is infeasible", epilog=_EPILOG,
                       formatter_class=fmt, description="Explain infeasibility in the problem's own terms.")
    e.add_argument("instance", help="an instance JSON file, or example:NAME (example:heterps_unreachable.json)")
    _add_solve_options(e, time_limit=60.0)
    e.add_argument("--json", action="store_true")
    e.set_defaults(func=cmd_explain)

    b = sub.add_parser("backends", help="list installed backends and what each can do", epilog=_EPILOG,
                       formatter_class=fmt, description="List solver backends.")
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=cmd_backends)

    d = sub.add_parser("demo", help="solve and place a Sia allocation on a 64-GPU cluster", epilog=_EPILOG,
                       formatter_class=fmt, description="A real Sia solve and placement.")
    d.add_argument("--gpus", type=positive_int, default=64)
    d.add_argument("--seed", type=seed_int, default=0, help="draws the demo's jobs from the model zoo")
    d.add_argument("--backend", default=None)
    d.add_argument("--time-limit", type=positive_float, default=60.0)
    d.add_argument("--all", action="store_true")
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=cmd_demo)

    bench = sub.add_parser("bench", help="benchmark solvers and formulations (see also: bench report)",
                           epilog=_EPILOG, formatter_class=fmt,
                           description="Run a benchmark sweep; 'schedopt bench report RESULTS -o DIR' builds the "
                                       "report.")
    bench.add_argument("--problem", default="sia")
    bench.add_argument("--sizes", default=None, help="comma-separated GPU counts (64,512,2048) or default/large/all")
    bench.add_argument("--seeds", type=csv_ints, default=None,
                       help="comma-separated instance seeds: each draws another generated instance of every size "
                            "(the same seed, the same instance); the solver seed is the spec's solver_seed")
    bench.add_argument("--loads", type=csv_names, default=None, help="comma-separated loads (sia: normal,heavy)")
    bench.add_argument("--backends", type=csv_names, default=None,
                       help="comma-separated backends, methods or method@backend (highs,cpsat; dp,milp@highs)")
    bench.add_argument("--repeat", type=positive_int, default=1)
    bench.add_argument("--time-limit", type=positive_float, default=None)
    bench.add_argument("--guard", type=positive_float, default=None, help="wall-clock seconds before a run is killed")
    bench.add_argument("--threads", type=nonneg_int, default=1)
    bench.add_argument("--workers", type=positive_int, default=1,
                       help="runs at once (each in its own process); 1 for timings")
    bench.add_argument("--warm", action="store_true",
                       help="run the sweep's runs one after another in one kept process (the import and the first "
                            "solve paid once; each record's warm_run says which run of its process it was); default: "
                            "a fresh process per run")
    bench.add_argument("--start", choices=("auto", "fork", "exec"), default="auto",
                       help="how a run's process starts: fork (from this process, imports already paid), exec (a "
                            "fresh interpreter) or auto (fork where it is safe: Linux, a serial sweep, no other threads)")
    add_executor_arguments(bench, "runs")
    bench.add_argument("--progress", choices=("auto", "on", "off"), default="auto",
                       help="progress on stderr: on forces the bar, off silences it, auto draws the bar on a "
                            "terminal and otherwise writes a plain line every --progress-every seconds and at the end")
    bench.add_argument("--progress-every", type=positive_float, default=30.0, metavar="SECONDS",
                       help="seconds between progress lines when stderr is not a terminal (default 30)")
    bench.add_argument("-o", "--output", default=None,
                       help="results table (.csv or .jsonl); default bench-<problem>-<time>.csv here")
    bench.add_argument("--json", action="store_true")
    bench.set_defaults(func=cmd_bench)
    _add_plugins(sub, command if command in _PLUGIN_COMMANDS else None)
    return p


#: the subcommands of optional packages (:func:`_add_plugins`)
_PLUGIN_COMMANDS = ("serve", "simulate", "trace", "reproduce", "live")


def _add_plugins(sub: Any, only: str | None = None) -> None:
    """Subcommands of optional packages: ``schedopt.sim.cli.add_parser(subparsers)`` adds ``simulate``. ``only``:
    that one of :data:`_PLUGIN_COMMANDS` alone."""
    if only in (None, "serve"):
        __import__("schedopt.serve.cli", fromlist=["add_parser"]).add_parser(sub)  # `schedopt serve` (issue 38)
    if only not in (None, "simulate", "trace", "reproduce", "live"):
        return
    try:
        from .sim.cli import add_parser
    except ModuleNotFoundError as exc:  # the simulator is not there; any other import error is a bug to show
        if exc.name not in ("schedopt.sim", "schedopt.sim.cli"):
            raise
        return
    if only in (None, "simulate"):
        add_parser(sub)
    if only in (None, "trace"):
        __import__("schedopt.traces.cli", fromlist=["add_parser"]).add_parser(sub)  # `schedopt trace` (issue 28)
    if only in (None, "reproduce"):
        __import__("schedopt.reproduce", fromlist=["add_parser"]).add_parser(sub)  # sia-eval: schedopt reproduce
    if only in (None, "live"):
        __import__("schedopt.live.engines", fromlist=["add_parser"]).add_parser(sub)  # issue 39: live replay


def _bench_report_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="schedopt bench report", description="Build a Markdown report and figures from a results table.",
                epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", help="a results table written by schedopt bench")
    p.add_argument("-o", "--output", required=True, help="output folder")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bench_report)
    return p


def _fail(command: str, code: int, exc: BaseException | None, message: str, as_json: bool) -> int:
    if as_json:
        emit(error_document(command, code, exc, message))
    print(f"schedopt: error: {message}", file=sys.stderr)
    return code


class _StderrHandler(logging.Handler):
    """``schedopt: message`` on whatever ``sys.stderr`` is when the record comes (tests and notebooks swap it)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(f"schedopt: {record.getMessage()}\n")
        except Exception:
            self.handleError(record)


def _configure_logging(verbose: bool) -> None:
    """Only the ``schedopt`` logger gets our handler (INFO with --verbose, else WARNING); other libraries' lines are
    not printed as ours, and Dask's and Ray's INFO chatter is raised to WARNING unless --verbose."""
    ours = logging.getLogger("schedopt")
    if not any(isinstance(h, _StderrHandler) for h in ours.handlers):
        ours.addHandler(_StderrHandler())
    ours.setLevel(logging.INFO if verbose else logging.WARNING)
    for name in ("distributed", "ray"):
        logging.getLogger(name).setLevel(logging.INFO if verbose else logging.WARNING)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``schedopt`` command line on ``argv`` (default ``sys.argv[1:]``); the exit code
    (:data:`~schedopt.cli_support.EXIT_CODES`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    _Parser.json_errors = "--json" in argv
    if len(argv) >= 2 and argv[0] == "bench" and argv[1] == "report":
        args = _bench_report_parser().parse_args(argv[2:])
        command = "bench report"
    else:
        args = build_parser(argv[0] if argv else None).parse_args(argv)
        command = args.command
    as_json = bool(getattr(args, "json", False))
    _configure_logging(bool(getattr(args, "verbose", False)))
    # Ctrl-C must stop a long `schedopt solve` on scipy / pyomo too, which have no cancel hook: their solves run in a
    # child process Ctrl-C kills (+23-67 ms per solve). Not for bench, whose timings it would distort.
    in_child = None
    if command == "solve":  # (the backends are imported here: `simulate` needs none to start)
        from .backends.isolate import set_in_child_default

        in_child = set_in_child_default(True)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return _fail(command, EXIT_INTERRUPTED, None, "interrupted", as_json)
    except InputError as exc:
        return _fail(command, EXIT_INPUT, exc, str(exc), as_json)
    except BackendError as exc:
        return _fail(command, EXIT_BACKEND, exc, str(exc), as_json)
    except SchedoptError as exc:
        return _fail(command, EXIT_NO_SOLUTION, exc, str(exc), as_json)
    except FileNotFoundError as exc:
        return _fail(command, EXIT_INPUT, exc, str(exc), as_json)
    except BrokenPipeError:  # e.g. `schedopt demo | head`: the reader left; not an error of ours
        sys.stderr.close()
        return EXIT_OK
    except Exception as exc:  # a bug: say so, keep the traceback on stderr
        traceback.print_exc()
        return _fail(command, EXIT_INTERNAL, exc, f"internal error: {type(exc).__name__}: {exc} (a bug: please "
                     "report it with the traceback above)", as_json)
    finally:
        if in_child is not None:  # main() may be called in-process (tests, notebooks): leave the default as found
            set_in_child_default(in_child)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
