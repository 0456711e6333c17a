"""The ``schedopt`` command line.

Exit codes: 0 solved (optimal, or a limit hit with an incumbent); 1 no solution (infeasible, unbounded, a limit
hit before any incumbent, solver error); 2 bad input or usage (the message names the field and the value);
3 the requested backend is missing or cannot solve the model.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from typing import Any

from . import __version__
from .errors import BackendError, InputError, SchedoptError

EXIT_OK, EXIT_NO_SOLUTION, EXIT_INPUT, EXIT_BACKEND = 0, 1, 2, 3


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


def _solved(summary: dict[str, Any]) -> bool:
    if "solved" in summary:  # a problem may say so itself
        return bool(summary["solved"])
    words = str(summary.get("termination", "")).split()
    return bool(words) and words[0].lower() in ("optimal", "feasible", "valid")


# ----------------------------------------------------------------------------------------------- commands
def cmd_solve(args: argparse.Namespace) -> int:
    from .instances import load, problem_of_file, problems

    inst = load(args.instance)
    io = problems()[problem_of_file(args.instance)]
    if io.solve is None:
        raise InputError("problem", io.name, "has no command-line solve")
    _, rows, summary = io.solve(inst, args.backend, args.time_limit)
    if args.json:
        print(json.dumps({"problem": io.name, "summary": summary, "allocation": rows}, default=str, indent=1))
    else:
        print(f"schedopt {__version__}: {io.name} instance {args.instance}")
        _print_summary(summary)
        print()
        print(format_table(rows, None if args.all else 40))
    return EXIT_OK if _solved(summary) else EXIT_NO_SOLUTION


def cmd_generate(args: argparse.Namespace) -> int:
    from .instances import problems, save

    probs = problems()
    if args.problem not in probs:
        raise InputError("problem", args.problem, f"must be one of {sorted(probs)}")
    io = probs[args.problem]
    if io.generate is None:
        raise InputError("problem", args.problem, "has no generator")
    inst = io.generate(gpus=args.gpus, seed=args.seed)
    save(inst, args.output, generator={"problem": args.problem, "gpus": args.gpus, "seed": args.seed})
    print(f"wrote {args.problem} instance ({args.gpus} GPUs, seed {args.seed}) to {args.output}")
    return EXIT_OK


def cmd_explain(args: argparse.Namespace) -> int:
    from .instances import load, problem_of_file, problems

    inst = load(args.instance)
    io = problems()[problem_of_file(args.instance)]
    if io.explain is None:
        raise InputError("problem", io.name, "has no explanation")
    print(io.explain(inst))
    return EXIT_OK


def cmd_backends(args: argparse.Namespace) -> int:
    from .backends import available_backends, get_backend

    info = available_backends(include_missing=True)
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
    if args.json:
        print(json.dumps([b.as_dict() for b in info.values()], indent=1))
    else:
        print(format_table(rows, None))
    return EXIT_OK


def cmd_bench(args: argparse.Namespace) -> int:
    from . import bench

    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else None
    backends = args.backends.split(",") if args.backends else None
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else None
    records = bench.run(
        args.problem,
        sizes=sizes,
        seeds=seeds,
        backends=backends,
        repeat=args.repeat,
        time_limit=args.time_limit,
        guard_seconds=args.guard,
        threads=args.threads,
        out=args.output,
        workers=args.workers,
    )
    if args.output:
        bench.write_records(records, args.output)
        print(f"wrote {len(records)} records to {args.output}")
    return EXIT_OK


def cmd_bench_report(args: argparse.Namespace) -> int:
    from . import bench

    path = bench.report(args.results, args.output)
    print(f"wrote the report to {path}")
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    """Solve Sia on the 64-GPU heterogeneous cluster with jobs from the model zoo, place it, and print it."""
    from . import sia

    inst = sia.generate_instance(args.gpus, seed=args.seed)
    prob = inst.problem()
    print(
        f"schedopt {__version__} demo: Sia on a {args.gpus}-GPU heterogeneous cluster "
        f"({', '.join(f'{t.nodes} x {t.gpus_per_node} {t.name}' for t in inst.cluster.gpu_types)}), "
        f"{len(inst.jobs)} jobs"
    )
    sol = prob.solve(backend=args.backend, time_limit=args.time_limit)
    res = sol.result
    print(f"backend: {sol.backend}   termination: {res.termination}")
    if not res.has_solution:
        return EXIT_NO_SOLUTION
    t = res.timings
    print(
        f"objective: {res.objective:.6g}   bound: {res.bound:.6g}   gap: {res.gap:.2e}   "
        f"build {t.build * 1e3:.1f} ms, hand-off {t.handoff * 1e3:.1f} ms, solve {t.solve * 1e3:.1f} ms"
    )
    placement = sia.place(inst.cluster, sol.allocation)
    rows = []
    for job in inst.jobs:
        cfg = sol.allocation.get(job.id)
        where = placement.assignments.get(job.id) if cfg is not None else None
        rows.append(
            {
                "job": job.id,
                "kind": job.kind,
                "gpus": cfg.n_gpus if cfg else 0,
                "type": cfg.gpu_type if cfg else "-",
                "nodes": ", ".join(f"{n}:{','.join(map(str, g))}" for n, g in where) if where else "-",
            }
        )
    print()
    print(format_table(rows, None if args.all else 40))
    used = {t.name: 0 for t in inst.cluster.gpu_types}
    for cfg in sol.allocation.values():
        if cfg is not None:
            used[cfg.gpu_type] += cfg.n_gpus
    print()
    print("GPUs used per type: " + ", ".join(f"{k} {v}/{t.nodes * t.gpus_per_node}" for (k, v), t in zip(used.items(), inst.cluster.gpu_types)))
    return EXIT_OK


# ----------------------------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="schedopt",
        description="Optimization models behind GPU-cluster schedulers: solve, generate, explain and benchmark.",
    )
    p.add_argument("--version", action="version", version=f"schedopt {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("solve", help="solve an instance file and print the result", description="Solve any problem's instance file.")
    s.add_argument("instance", help="an instance JSON file (schedopt generate writes one)")
    s.add_argument("--backend", default=None, help="solver backend (default: the fastest exact one for the model)")
    s.add_argument("--time-limit", type=float, default=None, help="seconds")
    s.add_argument("--json", action="store_true", help="print JSON for machines")
    s.add_argument("--all", action="store_true", help="print every allocation row")
    s.set_defaults(func=cmd_solve)

    g = sub.add_parser("generate", help="write a generated instance", description="Write a seeded generated instance.")
    g.add_argument("problem", help="sia, synergy, heterps, hived or gandiva")
    g.add_argument("--gpus", type=int, default=64)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("-o", "--output", required=True)
    g.set_defaults(func=cmd_generate)

    e = sub.add_parser("explain", help="say why an infeasible instance is infeasible", description="Explain infeasibility in the problem's own terms.")
    e.add_argument("instance")
    e.set_defaults(func=cmd_explain)

    b = sub.add_parser("backends", help="list installed backends and what each can do", description="List solver backends.")
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=cmd_backends)

    d = sub.add_parser("demo", help="solve and place a Sia allocation on a 64-GPU cluster", description="A real Sia solve and placement.")
    d.add_argument("--gpus", type=int, default=64)
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--backend", default=None)
    d.add_argument("--time-limit", type=float, default=60.0)
    d.add_argument("--all", action="store_true")
    d.set_defaults(func=cmd_demo)

    bench = sub.add_parser("bench", help="benchmark solvers and formulations (see also: bench report)", description="Run a benchmark sweep; 'schedopt bench report RESULTS -o DIR' builds the report.")
    bench.add_argument("--problem", default="sia")
    bench.add_argument("--sizes", default=None, help="comma-separated GPU counts, e.g. 64,512,2048")
    bench.add_argument("--seeds", default=None, help="comma-separated seeds")
    bench.add_argument("--backends", default=None, help="comma-separated backends, e.g. highs,cpsat")
    bench.add_argument("--repeat", type=int, default=1)
    bench.add_argument("--time-limit", type=float, default=None)
    bench.add_argument("--guard", type=float, default=None, help="wall-clock seconds before a run is killed")
    bench.add_argument("--threads", type=int, default=1)
    bench.add_argument("--workers", type=int, default=1, help="runs at once (each in its own process); 1 for timings")
    bench.add_argument("-o", "--output", default=None, help="results table (.csv or .jsonl)")
    bench.set_defaults(func=cmd_bench)
    return p


def _bench_report_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="schedopt bench report", description="Build a Markdown report and figures from a results table.")
    p.add_argument("results", help="a results table written by schedopt bench")
    p.add_argument("-o", "--output", required=True, help="output folder")
    p.set_defaults(func=cmd_bench_report)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) >= 2 and argv[0] == "bench" and argv[1] == "report":
        parser = _bench_report_parser()
        args = parser.parse_args(argv[2:])
    else:
        parser = build_parser()
        args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except InputError as exc:
        print(f"schedopt: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except BackendError as exc:
        print(f"schedopt: error: {exc}", file=sys.stderr)
        return EXIT_BACKEND
    except SchedoptError as exc:
        print(f"schedopt: error: {exc}", file=sys.stderr)
        return EXIT_NO_SOLUTION
    except FileNotFoundError as exc:
        print(f"schedopt: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except BrokenPipeError:  # e.g. `schedopt demo | head`: the reader left; not an error of ours
        sys.stderr.close()
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
