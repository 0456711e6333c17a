"""Issue 26's `sia` target, A/B: saturn/1 with the `sia` policy on Sia's 64 GPUs, one `simulate` call per fresh
process (the import not counted, the process's first fit and solve counted), CPU seconds beside wall, checkouts run
alternately so that both see the same machine load; the medians and each run's hash of every job record.

    python tools/bench_sia_target.py --checkout before=/path/to/old --checkout after=. --runs 5 \\
        --job-models sia,sia-measured --out benchmarks/sia_target.csv

Each checkout is put first on ``PYTHONPATH`` of its child processes, so the same tool measures any commit (a
``git worktree`` of it). The hash (of ``repr(result.jobs)``) says whether two checkouts made the same decisions.

``--whole`` (issue 42, the everyday run): time the whole command instead,

    python -m schedopt simulate --cluster sia-64 --workload saturn/1 --policy sia [--job-model sia]

(no ``--job-model``: the cluster's default, ``sia-measured``), interpreter start-up, imports, the simulation's worker
process and the summary included: CPU is the children's user + system time (``getrusage``) over the process, which
counts the worker it waited for. Each run's hash is of the printed results table (``table_hash``); ``--records``
adds, per checkout and job model, one untimed run with ``-o`` and ``--json`` whose records (every job, every round,
the meta; without the measured times: ``policy_seconds``, ``policy_cpu_seconds``, the answers' ``timings``, a
round's ``info.seconds``, the
file's checksum) and summary (without its ``policy_*`` time columns) are hashed (``records_hash``).
``--bytecode cached`` runs each checkout with a ``PYTHONPYCACHEPREFIX`` of its own, filled by one untimed run first
(an installed package's case: its modules compiled once); ``env`` (default) leaves the environment as it is (with
``PYTHONDONTWRITEBYTECODE=1`` every process compiles every module it imports).

    python tools/bench_sia_target.py --whole --records --bytecode cached --checkout before=/tmp/old \\
        --checkout after=. --runs 5 --out benchmarks/everyday.csv

``--routines`` (issue 42's imports): ``--runs`` fresh processes per checkout, alternated, of the command's imports
and what the simulation's first fit and first measured lookup load (the fit's self-check, the BLAS scan, one
triangulation), each run's CPU and whether ``scipy.optimize`` or ``scipy.interpolate`` got imported; no CSV rows.

    python tools/bench_sia_target.py --routines --bytecode cached --checkout before=/tmp/old --checkout after=. \\
        --runs 15

``--split`` (with ``--whole``): where the whole process goes. Each run is the same command run by the command
line's ``main`` inside a small wrapper process, which reports its own CPU (the parent: start-up, imports, the parser,
the warm-up, waiting) apart from its children's (the worker: the simulation's own imports, the rounds, the
summary); then ``--runs`` fresh processes of each import set the command loads (``numpy``; ``scipy.sparse``;
``scipy.optimize`` with ``scipy.interpolate``; everything the parent and the worker import), their medians.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CHILD = r"""
import hashlib, json, subprocess, sys, time
from schedopt import sim
from schedopt.sim.policies import get_policy
jm = sys.argv[1]
cl, wl = sim.cluster_preset("sia-64"), sim.load_workload("saturn/1")
pol = get_policy("sia")
t0, c0 = time.perf_counter(), time.process_time()
res = sim.simulate(cl, wl, pol, job_model=jm, progress=False)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
jcts = [j.jct for j in res.jobs if getattr(j, "jct", None) is not None]
print(json.dumps({"wall_s": wall, "cpu_s": cpu, "rounds": len(res.rounds), "finished": len(jcts),
                  "avg_jct_s": sum(jcts) / max(len(jcts), 1),
                  "jobs_hash": hashlib.sha1(repr(res.jobs).encode()).hexdigest()[:12]}))
"""


SPLIT = r"""
import json, resource, sys
from schedopt.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"parent_cpu_s": me.ru_utime + me.ru_stime, "worker_cpu_s": kids.ru_utime + kids.ru_stime,
                  "code": code}), file=sys.stderr)
"""
#: the import sets of --split: (label, the modules)
IMPORTS = (("numpy", "numpy"), ("scipy.sparse", "scipy.sparse"),
           ("scipy.optimize + interpolate", "scipy.optimize, scipy.interpolate"),
           ("all the command imports", "schedopt.cli, schedopt.sim.cli, schedopt.sim.policies.sia, scipy.optimize, "
                                       "scipy.interpolate"))


#: --routines: the command's imports, then what the simulation's first fit and first measured lookup load
ROUTINES = r"""
import sys
import schedopt.cli, schedopt.sim.cli, schedopt.sim.policies.sia
import importlib
from schedopt.goodput import blas_threads, lbfgsb
with blas_threads(1):
    lbfgsb.lean_available()
    importlib.import_module("schedopt.sim.measured").lookup_shape("cifar10", "t4", 3, 12, 64.0)
print(sorted(m for m in ("scipy.optimize", "scipy.interpolate") if m in sys.modules))
"""

WHOLE = ["-m", "schedopt", "simulate", "--cluster", "sia-64", "--workload", "saturn/1", "--policy", "sia"]
_TIMES = ("policy_seconds", "policy_cpu_seconds", "timings")


def _whole_cmd(jm: str) -> list[str]:
    return [sys.executable, *WHOLE, *([] if jm == "sia-measured" else ["--job-model", jm])]


def _table_hash(stdout: str) -> str:
    """The results table (the lines from "results" to the first blank line after the table): no measured times."""
    lines = stdout.splitlines()
    start = next((i for i, x in enumerate(lines) if x.startswith("results")), None)
    if start is None:
        return "none"
    body: list[str] = []
    for x in lines[start:]:
        if body and not x.strip() and any(y.startswith("|") for y in body):
            break
        body.append(x)
    return hashlib.sha1("\n".join(body).encode()).hexdigest()[:12]


def _strip_times(obj: Any, key: str = "") -> Any:
    if isinstance(obj, dict):
        # a round's ``info`` may hold the policy's own measured time (gavel's LP re-solve: ``info.seconds``)
        return {k: _strip_times(v, k) for k, v in obj.items()
                if k not in _TIMES and not (key == "info" and k == "seconds")}
    if isinstance(obj, list):
        return [_strip_times(v) for v in obj]
    return obj


def _records_hash(folder: Path, doc: dict[str, Any]) -> str:
    """Every record line but the checksum, without measured times, and the summaries without their time columns."""
    h = hashlib.sha1()
    for f in sorted(folder.glob("*.jsonl")):
        for line in f.read_text().splitlines():
            rec = json.loads(line)
            if "end" not in rec:
                h.update(json.dumps(_strip_times(rec), sort_keys=True).encode())
    for row in doc.get("summaries", []):
        h.update(json.dumps({k: v for k, v in row.items() if not k.startswith("policy_")}, sort_keys=True).encode())
    return h.hexdigest()[:12]


def _run_whole(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """(CPU s, wall s, the completed process): the children's rusage over the run (the worker it waited for too)."""
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=str(cwd))
    wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return cpu, wall, out


def _commit(path: Path) -> str:
    try:
        return subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkout", action="append", required=True, help="label=path (repeat; run in this order)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--job-models", default="sia,sia-measured")
    ap.add_argument("--out", default=None, help="append one row per run to this CSV")
    ap.add_argument("--whole", action="store_true", help="time the whole `python -m schedopt simulate` process")
    ap.add_argument("--records", action="store_true", help="--whole: hash each checkout's records (one -o run each)")
    ap.add_argument("--bytecode", choices=("env", "cached"), default="env",
                    help="--whole: the environment's bytecode setting, or a warmed cache per checkout")
    ap.add_argument("--split", action="store_true",
                    help="--whole: the parent's CPU apart from the worker's, and the import floor (no CSV rows)")
    ap.add_argument("--routines", action="store_true",
                    help="the CPU of the command's imports plus the simulation's first use of scipy's two routines "
                         "(the fit's L-BFGS-B with its self-check, the measured model's triangulation), no CSV rows")
    ap.add_argument("--note", default="", help="a note for the CSV rows (e.g. the machine's state)")
    a = ap.parse_args()
    if a.split and not a.whole:
        ap.error("--split goes with --whole")
    checkouts = []
    for spec in a.checkout:
        label, _, path = spec.partition("=")
        if not label or not path:
            ap.error(f"--checkout {spec!r}: give label=path")
        p = Path(path).resolve()
        if not (p / "schedopt" / "__init__.py").is_file():
            ap.error(f"--checkout {spec!r}: {p} holds no schedopt package")
        checkouts.append((label, p, _commit(p)))
    models = [m for m in a.job_models.split(",") if m]
    env_note = f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores"
    if a.routines:
        _routines(a, checkouts)
        return
    if a.whole and a.split:
        _split(a, checkouts, models)
        return
    if a.whole:
        _whole(a, checkouts, models, env_note)
        return
    rows: list[dict[str, Any]] = []
    for run in range(a.runs):
        for jm in models:
            for label, path, commit in checkouts:
                env = dict(os.environ, PYTHONPATH=str(path) + os.pathsep + os.environ.get("PYTHONPATH", ""))
                load = _load()
                out = subprocess.run([sys.executable, "-c", CHILD, jm], env=env, capture_output=True, text=True,
                                     cwd=str(path))
                if out.returncode != 0:
                    sys.exit(f"{label} ({path}) {jm}: the simulation failed:\n{out.stderr[-2000:]}")
                rec = json.loads(out.stdout.strip().splitlines()[-1])
                row = {"label": label, "commit": commit, "job_model": jm, "run": run, "load": round(load, 2),
                       **{k: (round(v, 3) if isinstance(v, float) else v) for k, v in rec.items()}, "env": env_note}
                rows.append(row)
                print(f"run {run} {jm:13s} {label:8s} {commit}: cpu {rec['cpu_s']:.2f} s, wall {rec['wall_s']:.2f} s,"
                      f" load {load:.1f}, avg JCT {rec['avg_jct_s']:.1f} s, jobs {rec['jobs_hash']}", flush=True)
    print("\nmedians (CPU s; wall s)")
    for jm in models:
        meds = {}
        for label, _, commit in checkouts:
            rs = [r for r in rows if r["label"] == label and r["job_model"] == jm]
            meds[label] = statistics.median(float(r["cpu_s"]) for r in rs)
            hashes = sorted({str(r["jobs_hash"]) for r in rs})
            cpus = ", ".join(f"{float(r['cpu_s']):.2f}" for r in rs)
            wall = statistics.median(float(r["wall_s"]) for r in rs)
            print(f"  {jm:13s} {label:8s} {commit}: {meds[label]:.2f}; {wall:.2f}  (cpu {cpus}; jobs {', '.join(hashes)})")
        if len(checkouts) == 2:
            (l0, _, _), (l1, _, _) = checkouts
            print(f"  {jm:13s} {l0} / {l1}: {meds[l0] / meds[l1]:.2f}x")
    if a.out:
        _append(Path(a.out), rows)


def _append(out_path: Path, rows: list[dict[str, Any]]) -> None:
    new = not out_path.exists()
    with out_path.open("a", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        if new:
            w.writeheader()
        w.writerows(rows)


def _envs(a: argparse.Namespace, checkouts: list[tuple[str, Path, str]], tmp: Path) -> dict[str, dict[str, str]]:
    """Each checkout's environment: its path first on PYTHONPATH; with ``--bytecode cached``, a bytecode cache of
    its own."""
    envs: dict[str, dict[str, str]] = {}
    for label, path, _ in checkouts:
        env = dict(os.environ, PYTHONPATH=str(path) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        if a.bytecode == "cached":
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(tmp / f"pyc-{label}")
        envs[label] = env
    return envs


def _routines(a: argparse.Namespace, checkouts: list[tuple[str, Path, str]]) -> None:
    """The --routines mode: ``--runs`` fresh processes of :data:`ROUTINES` per checkout, alternated; medians."""
    envs = _envs(a, checkouts, Path(tempfile.mkdtemp(prefix="bench-everyday-")))
    cpus: dict[str, list[float]] = {}
    for label, path, _ in checkouts:  # untimed: fills the bytecode cache
        subprocess.run([sys.executable, "-c", ROUTINES], env=envs[label], cwd=str(path), check=True,
                       capture_output=True)
    for run in range(a.runs):
        for label, path, commit in checkouts:
            load = _load()
            cpu, _wall, out = _run_whole([sys.executable, "-c", ROUTINES], envs[label], path)
            if out.returncode != 0:
                sys.exit(f"{label}: {out.stderr[-2000:]}")
            cpus.setdefault(label, []).append(cpu)
            print(f"run {run} {label:8s} {commit}: cpu {cpu:.3f} s, load {load:.1f}, loaded {out.stdout.strip()}",
                  flush=True)
    print(f"\nmedians, bytecode {a.bytecode} (CPU s)")
    for label, xs in cpus.items():
        print(f"  {label:8s}: {statistics.median(xs):.3f}  ({', '.join(f'{x:.2f}' for x in xs)})")


def _split(a: argparse.Namespace, checkouts: list[tuple[str, Path, str]], models: list[str]) -> None:
    """The --split mode: the parent's CPU apart from the worker's, per run, then the import floor."""
    envs = _envs(a, checkouts, Path(tempfile.mkdtemp(prefix="bench-everyday-")))
    for label, path, _ in checkouts:  # untimed: fills the bytecode cache
        subprocess.run(_whole_cmd(models[0]), env=envs[label], capture_output=True, text=True, cwd=str(path),
                       check=True)
    parts: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for run in range(a.runs):
        for jm in models:
            for label, path, commit in checkouts:
                cmd = [sys.executable, "-c", SPLIT, *_whole_cmd(jm)[3:]]
                load = _load()
                out = subprocess.run(cmd, env=envs[label], capture_output=True, text=True, cwd=str(path))
                try:
                    got = json.loads((out.stderr.strip().splitlines() or [""])[-1])
                except ValueError:
                    got = {"code": "no report"}
                if out.returncode != 0 or got["code"] not in (0, None):
                    sys.exit(f"{label} ({path}) {jm}: the command failed:\n{out.stderr[-2000:]}")
                parts.setdefault((label, jm), []).append((got["parent_cpu_s"], got["worker_cpu_s"]))
                print(f"run {run} {jm:13s} {label:8s} {commit}: parent {got['parent_cpu_s']:.2f} s, worker "
                      f"{got['worker_cpu_s']:.2f} s, load {load:.1f}, table {_table_hash(out.stdout)}", flush=True)
    print(f"\nmedians, bytecode {a.bytecode} (CPU s)")
    for (label, jm), rs in parts.items():
        print(f"  {jm:13s} {label:8s}: parent {statistics.median(r[0] for r in rs):.2f}, worker "
              f"{statistics.median(r[1] for r in rs):.2f}")
    print("import floor (CPU s, median of fresh processes)")
    for label, path, _ in checkouts:
        for name, mods in IMPORTS:
            cpus = []
            for _ in range(a.runs):
                cpu, _wall, out = _run_whole([sys.executable, "-c", f"import {mods}"], envs[label], path)
                if out.returncode != 0:
                    sys.exit(f"{label}: import {mods} failed:\n{out.stderr[-2000:]}")
                cpus.append(cpu)
            print(f"  {label:8s} {name:28s} {statistics.median(cpus):.2f}")


def _whole(a: argparse.Namespace, checkouts: list[tuple[str, Path, str]], models: list[str], env_note: str) -> None:
    """The --whole mode: the command as a user types it, one fresh process per run, checkouts alternated."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-everyday-"))
    envs = _envs(a, checkouts, tmp)
    records: dict[tuple[str, str], str] = {}
    for label, path, _ in checkouts:  # untimed: fills the bytecode cache, and hashes the records
        for jm in models if a.records else models[:1]:
            folder = tmp / f"rec-{label}-{jm}"
            cmd = _whole_cmd(jm) + (["-o", str(folder), "--json"] if a.records else [])
            out = subprocess.run(cmd, env=envs[label], capture_output=True, text=True, cwd=str(path))
            if out.returncode != 0:
                sys.exit(f"{label} ({path}) {jm}: the command failed:\n{out.stderr[-2000:]}")
            if a.records:
                records[label, jm] = _records_hash(folder, json.loads(out.stdout))
                print(f"records {jm:13s} {label:8s}: {records[label, jm]}", flush=True)
    rows: list[dict[str, Any]] = []
    for run in range(a.runs):
        for jm in models:
            for label, path, commit in checkouts:
                load = _load()
                cpu, wall, out = _run_whole(_whole_cmd(jm), envs[label], path)
                if out.returncode != 0:
                    sys.exit(f"{label} ({path}) {jm}: the command failed:\n{out.stderr[-2000:]}")
                row = {"label": label, "commit": commit, "job_model": jm, "run": run, "load": round(load, 2),
                       "bytecode": a.bytecode, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
                       "table_hash": _table_hash(out.stdout), "records_hash": records.get((label, jm), ""),
                       "note": a.note, "env": env_note}
                rows.append(row)
                print(f"run {run} {jm:13s} {label:8s} {commit}: cpu {cpu:.2f} s, wall {wall:.2f} s, load {load:.1f},"
                      f" table {row['table_hash']}", flush=True)
    print(f"\nmedians, whole process, bytecode {a.bytecode} (CPU s; wall s)")
    for jm in models:
        meds = {}
        for label, _, commit in checkouts:
            rs = [r for r in rows if r["label"] == label and r["job_model"] == jm]
            meds[label] = statistics.median(float(r["cpu_s"]) for r in rs)
            wall = statistics.median(float(r["wall_s"]) for r in rs)
            cpus = ", ".join(f"{float(r['cpu_s']):.2f}" for r in rs)
            tables = ", ".join(sorted({str(r["table_hash"]) for r in rs}))
            print(f"  {jm:13s} {label:8s} {commit}: {meds[label]:.2f}; {wall:.2f}  (cpu {cpus}; table {tables};"
                  f" records {records.get((label, jm), '-')})")
        if len(checkouts) == 2:
            (l0, _, _), (l1, _, _) = checkouts
            print(f"  {jm:13s} {l0} / {l1}: {meds[l0] / meds[l1]:.2f}x")
    if a.out:
        _append(Path(a.out), rows)


if __name__ == "__main__":
    main()
