"""The benchmark harness's fixed cost (issue 26, items 3 and 5), two ways.

A sweep (``--mode all|exec|fork|warm``): a sweep's process CPU (this process and its run processes) minus the sum
of the runs' measured paths (``t_path``), per run: a fresh interpreter per run (``start="exec"``), a fork of the
sweep's process per run (``start="fork"``) and one kept process (``warm=True``)::

    python tools/bench_overhead.py --seeds 10 --backend mckp

A lone cold command (``--cold N``): ``schedopt bench`` with one run and ``schedopt solve`` on a 64-GPU Sia instance,
each N times in a fresh interpreter, interleaved, for every source tree given (``--tree LABEL=PATH``, the current
one as ``after`` by default; a ``before`` tree is e.g. ``git archive <commit> schedopt | tar -x -C /tmp/before``).
Each command runs as ``python -c`` around ``schedopt.cli.main`` (what the ``schedopt`` script runs), so one
process splits its own cost::

    python tools/bench_overhead.py --cold 7 --tree before=/tmp/before --tree after=. -o benchmarks/bench_overhead_cold.csv

* ``command``: the whole command from outside (``os.wait4``: its process and every process it waited for);
* ``interpreter``: the interpreter's start and ``site``, before the first line of the command runs;
* ``parent import``: ``import schedopt.cli`` and building its parser, then (bench) ``schedopt.bench`` and the spec
  lookup, which loads the registered problem packages: everything before the first run can start;
* ``parent after import`` (bench): the rest of the command's own process (the sweep's checks, starting the run's
  process and waiting for it, writing the record);
* ``run process`` (bench): the CPU of the run's process, its record's ``t_wall`` beside it;
* ``run fixed cost`` (bench): ``parent after import`` + ``run process`` - ``t_path`` (CPU) and ``t_wall - t_path``
  (wall): what a lone run costs around its measured path once the command has imported what it needs;
* ``solve call`` (solve): ``main()`` after the imports (reading the file, the solve, printing) and ``solve timings``,
  the answer's own build + hand-off + solve + decode.

Medians over the N runs, CPU beside wall (``t_path`` is wall time: the measured path is single-threaded, so its CPU
is at most that). Rows are appended to ``-o`` with the date and the machine's load, so before and after sit side by
side. ``PYTHONDONTWRITEBYTECODE=1`` (this machine's sessions set it) makes every import compile the package's source;
``--bytecode-cache DIR`` measures with a byte-code cache (``PYTHONPYCACHEPREFIX``), as an installed package has.
Run from the repository root.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

#: the ``schedopt`` command in one process that reports its own split (JSON on the last line of stdout)
CHILD = r"""
import json, resource, sys, time
def cpu(who=resource.RUSAGE_SELF):
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime
w0, c0 = time.perf_counter(), cpu()
command, argv = sys.argv[1], sys.argv[2:]
import schedopt.cli
schedopt.cli.build_parser()
if command == "bench":
    from schedopt import bench
    bench.get_spec(argv[argv.index("--problem") + 1])
w1, c1 = time.perf_counter(), cpu()
import contextlib, io
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = schedopt.cli.main(argv)
w2, c2 = time.perf_counter(), cpu()
print(json.dumps({"code": code, "schedopt": schedopt.__file__, "interpreter_cpu": c0, "import_wall": w1 - w0, "import_cpu": c1 - c0,
                  "main_wall": w2 - w1, "main_cpu": c2 - c1, "children_cpu": cpu(resource.RUSAGE_CHILDREN),
                  "stdout": out.getvalue() if command == "solve" else ""}))
"""


def one(mode: str, seeds: int, backend: str, gpus: int) -> None:
    from schedopt import bench

    recs = bench.run("sia", sizes=[gpus], seeds=list(range(seeds)), loads=["normal"], backends=[backend],
                     progress=False, warm=mode == "warm", start="fork" if mode == "warm" else mode)
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    path = sum(r.t_path or 0.0 for r in recs)
    later = [r.t_wall - (r.t_path or 0.0) for r in recs[1:]]
    print(f"{mode:5s}: {len(recs)} runs, process CPU {cpu:.2f} s, sum t_path {path:.3f} s, "
          f"fixed cost {(cpu - path) / len(recs):.3f} s CPU per run; wall minus t_path after the first run: median "
          f"{sorted(later)[len(later) // 2] if later else float('nan'):.3f} s; objectives "
          f"{[round(r.objective, 6) for r in recs if r.objective is not None]}")


# ------------------------------------------------------------------------------------------ a lone cold command
def _run_command(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall, CPU of the process and every process it waited for, stdout) of one command: the CPU is this
    process's ``RUSAGE_CHILDREN`` growth across it (nothing else of ours runs meanwhile)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    # run elsewhere than the repository: ``python -c`` puts its working directory first on sys.path
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tempfile.gettempdir())
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[3:6])}... exited {proc.returncode}: {err.decode()[-1500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), out.decode()


def _report(out: str, env: dict[str, str]) -> dict[str, Any]:
    """The command's own split (the last line of its stdout), checked to come from the tree measured."""
    me: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    if not me["schedopt"].startswith(env["PYTHONPATH"]):
        raise SystemExit(f"measured {me['schedopt']}, not the tree {env['PYTHONPATH']}")
    return me


def _bench_once(env: dict[str, str], backend: str, gpus: int, workdir: Path) -> dict[str, float]:
    out_csv = workdir / f"bench-{time.monotonic_ns()}.csv"
    argv = [sys.executable, "-c", CHILD, "bench", "bench", "--problem", "sia", "--sizes", str(gpus), "--seeds", "0",
            "--loads", "normal", "--backends", backend, "--progress", "off", "-o", str(out_csv)]
    wall, cpu, out = _run_command(argv, env)
    me = _report(out, env)
    with open(out_csv, newline="") as f:
        rec = next(csv.DictReader(f))
    out_csv.unlink()
    if rec["error"]:
        raise SystemExit(f"the run failed: {rec['error']}")
    t_path, t_wall = float(rec["t_path"]), float(rec["t_wall"])
    extra = json.loads(rec["extra"]) if rec["extra"] else {}
    return {
        "command wall": wall, "command cpu": cpu,
        "interpreter cpu": me["interpreter_cpu"],
        "parent import wall": me["import_wall"], "parent import cpu": me["import_cpu"],
        "parent after import wall": me["main_wall"], "parent after import cpu": me["main_cpu"],
        "run process wall": t_wall, "run process cpu": me["children_cpu"],
        "t_path wall": t_path, "t_warmup wall": float(rec["t_warmup"] or "nan"),
        "run fixed cost wall": t_wall - t_path, "run fixed cost cpu": me["main_cpu"] + me["children_cpu"] - t_path,
        "objective": float(rec["objective"]), "start": extra.get("start", "exec"),  # type: ignore[dict-item]
        "peak_rss_mb": float(rec["peak_rss_mb"]),
    }


def _solve_once(env: dict[str, str], instance: Path) -> dict[str, float]:
    argv = [sys.executable, "-c", CHILD, "solve", "solve", str(instance), "--json"]
    wall, cpu, out = _run_command(argv, env)
    me = _report(out, env)
    answer = json.loads(me["stdout"])["answer"]
    tm = answer["timings"]
    return {
        "command wall": wall, "command cpu": cpu, "interpreter cpu": me["interpreter_cpu"],
        "parent import wall": me["import_wall"], "parent import cpu": me["import_cpu"],
        "solve call wall": me["main_wall"], "solve call cpu": me["main_cpu"],
        "solve timings wall": tm["build"] + tm["handoff"] + tm["solve"] + tm["decode"],
        "objective": float(answer["objective"]),
    }


#: the rows printed and written, in order: (command, quantity)
ROWS = [
    ("bench", "command"), ("bench", "interpreter"), ("bench", "parent import"), ("bench", "parent after import"),
    ("bench", "run process"), ("bench", "t_path"), ("bench", "t_warmup"), ("bench", "run fixed cost"),
    ("solve", "command"), ("solve", "interpreter"), ("solve", "parent import"), ("solve", "solve call"),
    ("solve", "solve timings"),
]


def cold(trees: dict[str, Path], runs: int, backend: str, gpus: int, instance: Path, out: Path | None,
         pyc: Path | None) -> None:
    base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pyc is not None:
        base.pop("PYTHONDONTWRITEBYTECODE", None)
        base["PYTHONPYCACHEPREFIX"] = str(pyc)
    envs = {label: {**base, "PYTHONPATH": str(path.resolve())} for label, path in trees.items()}
    samples: dict[tuple[str, str], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        if pyc is not None:  # one untimed pass writes the byte code
            for label in trees:
                _bench_once(envs[label], backend, gpus, Path(tmp))
                _solve_once(envs[label], instance)
        for i in range(runs):
            for label in trees:  # interleaved, so the machine's load falls on every tree alike
                samples.setdefault((label, "bench"), []).append(_bench_once(envs[label], backend, gpus, Path(tmp)))
                samples.setdefault((label, "solve"), []).append(_solve_once(envs[label], instance))
            print(f"round {i + 1}/{runs} done (load {os.getloadavg()[0]:.2f})", file=sys.stderr)
    load = os.getloadavg()[0]
    date = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%MZ")

    def med(xs: list[dict[str, float]], key: str) -> float:
        vals = [x[key] for x in xs if key in x]
        return statistics.median(vals) if vals else float("nan")

    rows = []
    for label in trees:
        for command, quantity in ROWS:
            xs = samples[(label, command)]
            rows.append({"date": date, "tree": label, "command": command, "quantity": quantity,
                         "wall_s_median": round(med(xs, f"{quantity} wall"), 4),
                         "cpu_s_median": round(med(xs, f"{quantity} cpu"), 4), "runs": len(xs),
                         "backend": backend if command == "bench" else "default",
                         "start": ",".join(sorted({str(x.get("start", "")) for x in xs})) if command == "bench" else "",
                         "objective": round(med(xs, "objective"), 6), "bytecode_cache": pyc is not None,
                         "load_avg_1m": round(load, 2)})
    print(f"{'tree':8s} {'command':7s} {'quantity':20s} {'wall s':>8s} {'CPU s':>8s}   (medians of {runs})")
    for r in rows:
        print(f"{r['tree']:8s} {r['command']:7s} {r['quantity']:20s} {r['wall_s_median']:8.3f} "
              f"{r['cpu_s_median']:8.3f}")
    if out is not None:
        new = not out.exists()
        with open(out, "a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            if new:
                w.writeheader()
            w.writerows(rows)
        print(f"appended {len(rows)} rows to {out}", file=sys.stderr)


def _tree(text: str) -> tuple[str, Path]:
    label, eq, path = text.partition("=")
    if not eq or not label or not (Path(path) / "schedopt" / "__init__.py").exists():
        raise argparse.ArgumentTypeError(f"{text!r}: must be LABEL=PATH with PATH/schedopt/__init__.py")
    return label, Path(path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--backend", default="mckp")
    ap.add_argument("--gpus", type=int, default=64)
    ap.add_argument("--mode", choices=("all", "exec", "fork", "warm"), default="all")
    ap.add_argument("--cold", type=int, default=0, metavar="N",
                    help="measure a lone cold 'schedopt bench' run and 'schedopt solve' N times each instead")
    ap.add_argument("--tree", type=_tree, action="append", default=[], metavar="LABEL=PATH",
                    help="a source tree to measure (--cold; repeatable; default after=the repository root)")
    ap.add_argument("--instance", type=Path, default=ROOT / "instances" / "sia" / "sia_64_seed0.json")
    ap.add_argument("--bytecode-cache", type=Path, default=None, metavar="DIR",
                    help="measure with byte code cached in DIR (PYTHONPYCACHEPREFIX) instead of compiled per import")
    ap.add_argument("-o", "--output", type=Path, default=None, help="append the --cold rows to this CSV")
    a = ap.parse_args()
    if a.cold:
        cold(dict(a.tree) or {"after": ROOT}, a.cold, a.backend, a.gpus, a.instance.resolve(), a.output,
             a.bytecode_cache)
        return
    if a.mode == "all":  # each mode in its own process, so the CPU counts are apart
        for mode in ("exec", "fork", "warm"):
            subprocess.run([sys.executable, __file__, "--seeds", str(a.seeds), "--backend", a.backend, "--gpus",
                            str(a.gpus), "--mode", mode], check=True)
        return
    one(a.mode, a.seeds, a.backend, a.gpus)


if __name__ == "__main__":
    main()
