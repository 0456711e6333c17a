"""The mckp solver on the everyday run's rounds (issue 42, item 4): capture every round's solve once, then replay the
captured solves in a loop (a quiet benchmark of :meth:`schedopt.mckp.MckpSolver.run` alone) and compare the answers.

    python tools/bench_mckp_rounds.py capture /tmp/rounds.pkl          # runs the everyday command once, in-process
    python tools/bench_mckp_rounds.py replay /tmp/rounds.pkl --repeat 3 [--check]
    python tools/bench_mckp_rounds.py ab /tmp/rounds.pkl --checkout before=BEFORE --checkout after=. --runs 5

(``BEFORE``: a checkout of the commit to compare with, e.g. ``git worktree add BEFORE a7784b5``.)
``capture`` runs ``schedopt simulate --cluster sia-64 --workload saturn/1 --policy sia`` (``--job-model`` to pick
another) through the command line's ``main`` with :class:`~schedopt.mckp.MckpSolver` wrapped: every solve's
presolved structure, its constructor's arguments (without the sub-solver and the clock) and its model are pickled
before the run, its outcome (termination, choice, bound, the stats that decide the answer) after it.
``replay`` solves every captured structure again (``schedopt.solve`` as the sub-solver, as the backend passes it),
``--repeat`` times, and prints the CPU time (``time.process_time``) per pass and per round (median, p95); with
``--check`` it compares each outcome with the captured one field by field (choice vector, objective, bound,
termination, the phases that ran) and exits 1 on any difference. ``ab`` runs ``replay`` in fresh processes of
each checkout alternately (``--runs`` each; the checkout first on ``PYTHONPATH``) and prints the medians of the
CPU per pass and their ratio. ``interleave`` loads a before checkout's ``schedopt/mckp`` beside this one's in one
process and solves every round with both, alternately (the same machine load for both: the quietest comparison on
a shared machine), compares their answers with each other, prints each side's mean and median CPU per pass and,
with ``--out``, appends a row to the record (the means):

    PYTHONPATH=$PWD python tools/bench_mckp_rounds.py interleave /tmp/rounds.pkl --before BEFORE \
        --repeat 5 --label sia-measured --out benchmarks/mckp_rounds.csv
"""

from __future__ import annotations

import argparse
import math
import os
import pickle
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

#: the stats of an outcome compared by ``--check``: they say which steps ran and what they found
CHECKED_STATS = ("dual_method", "lagrangian_bound", "lp_rounding_objective", "lagrangian_repair_objective",
                 "repair_objective", "local_search_moves", "local_search_objective", "kick_improvements",
                 "columns_fixed", "residual_columns", "residual_backend", "search_nodes", "table_cells",
                 "core_columns", "residual_status", "second_start_objective")


def _summary(out: Any) -> dict[str, Any]:
    """The answer of one outcome: what the simulator uses and what says how it was found."""
    st = out.stats
    return {"termination": str(out.termination), "choice": None if out.choice is None else out.choice.tolist(),
            "bound": out.bound, "phases": sorted(st.get("phase_seconds", {})),
            **{k: st[k] for k in CHECKED_STATS if k in st}}


def capture(path: Path, job_model: str | None) -> int:
    from schedopt import cli
    from schedopt.mckp import solver as ms

    orig_init, orig_run = ms.MckpSolver.__init__, ms.MckpSolver.run
    path.unlink(missing_ok=True)

    def init(self: Any, st: Any, **kw: Any) -> None:
        keep = {k: v for k, v in kw.items() if k not in ("sub_solve", "t_start", "model")}
        self._capture = pickle.dumps((st, keep, kw.get("model"), kw.get("sub_solve") is not None))
        orig_init(self, st, **kw)

    def run(self: Any) -> Any:
        out = orig_run(self)
        with open(path, "ab") as f:  # appended by the simulation's worker process (forked: it inherits the wrapper)
            pickle.dump((self._capture, _summary(out)), f)
        return out

    ms.MckpSolver.__init__, ms.MckpSolver.run = init, run  # type: ignore[method-assign]
    argv = ["simulate", "--cluster", "sia-64", "--workload", "saturn/1", "--policy", "sia"]
    if job_model:
        argv += ["--job-model", job_model]
    rc = cli.main(argv)
    print(f"captured {len(load(path))} solves into {path}", file=sys.stderr)
    return rc


def load(path: Path) -> list[tuple[bytes, dict[str, Any]]]:
    out = []
    with open(path, "rb") as f:
        while True:
            try:
                out.append(pickle.load(f))
            except EOFError:
                return out


def _differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    diffs = []
    for k in sorted(set(a) | set(b)):
        va, vb = a.get(k), b.get(k)
        same = va == vb or (isinstance(va, float) and isinstance(vb, float) and math.isnan(va) and math.isnan(vb))
        if not same:
            diffs.append(f"{k}: {va!r} != {vb!r}")
    return diffs


def replay(path: Path, repeat: int, check: bool, quiet: bool = False) -> tuple[list[float], int]:
    """Solve every captured round ``repeat`` times; returns (CPU seconds per pass, rounds that differ)."""
    import schedopt
    from schedopt.mckp import MckpSolver

    rounds = load(path)
    passes: list[float] = []
    per_round = [[] for _ in rounds]  # type: list[list[float]]
    bad = 0
    for rep in range(repeat):
        tot = 0.0
        for i, (blob, want) in enumerate(rounds):
            st, kw, model, sub = pickle.loads(blob)  # a fresh structure each time (aggregate caches on it)
            c0 = time.process_time()
            out = MckpSolver(st, sub_solve=schedopt.solve if sub else None, model=model, **kw).run()
            dt = time.process_time() - c0
            tot += dt
            per_round[i].append(dt)
            if check and rep == 0:
                d = _differences(want, _summary(out))
                if d:
                    bad += 1
                    if not quiet:
                        print(f"round {i}: " + "; ".join(d[:6]), file=sys.stderr)
        passes.append(tot)
    if not quiet:
        med = sorted(statistics.median(r) for r in per_round)
        p95 = med[int(0.95 * (len(med) - 1))] if med else 0.0
        print(f"{len(rounds)} solves, {repeat} passes: CPU per pass {', '.join(f'{p:.3f}' for p in passes)} s; "
              f"per round median {1e3 * statistics.median(med):.3f} ms, p95 {1e3 * p95:.3f} ms"
              + (f"; {bad} rounds differ" if check else ""))
    return passes, bad


def _load_before(root: Path) -> Any:
    """``root``'s ``schedopt/mckp`` loaded as the package ``schedopt.mckp_before`` beside this process's
    ``schedopt.mckp`` (its relative imports of the rest of ``schedopt`` resolve to this process's modules)."""
    import importlib.util

    pkg = root / "schedopt" / "mckp"
    spec = importlib.util.spec_from_file_location("schedopt.mckp_before", pkg / "__init__.py",
                                                  submodule_search_locations=[str(pkg)])
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["schedopt.mckp_before"] = mod
    spec.loader.exec_module(mod)
    return mod


def _commit(root: Path, record: Path | None = None) -> str:
    """``root``'s commit, with a ``+`` when tracked files differ from it (the record being written aside)."""
    out = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    changed = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                             capture_output=True, text=True).stdout.splitlines()
    skip = record.resolve() if record is not None else None
    dirty = [ln for ln in changed if skip is None or (root / ln[3:]).resolve() != skip]
    return (out.stdout.strip() or "?") + ("+" if dirty else "")


def _record(out: Path, row: dict[str, Any]) -> None:
    """Append ``row`` to the CSV ``out`` (its header written when the file is new)."""
    import csv

    new = not out.exists()
    with open(out, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(row))
        if new:
            w.writeheader()
        w.writerow(row)


def interleave(path: Path, before: Path, repeat: int, out: Path | None = None, label: str = "") -> int:
    """Every captured round solved by ``before``'s mckp and by this checkout's, alternately (which goes first
    alternates too), in one process: the CPU of each summed over the rounds (the same machine load for both), and
    the answers compared with each other; returns the number of rounds whose answers differ."""
    import schedopt
    from schedopt.mckp import MckpSolver

    old = _load_before(before)
    rounds = load(path)
    tot = {"before": 0.0, "after": 0.0}
    passes: dict[str, list[float]] = {"before": [], "after": []}  # each side's CPU per pass (its medians printed)
    bad = 0
    for rep in range(repeat):
        at = dict(tot)
        for i, (blob, _want) in enumerate(rounds):
            got = {}
            order = [("before", old.MckpSolver), ("after", MckpSolver)]
            if (i + rep) % 2:
                order.reverse()
            for name, cls in order:
                st, kw, model, sub = pickle.loads(blob)
                if name == "before":
                    kw["options"] = old.MckpOptions(**{f: getattr(kw["options"], f) for f in old.MckpOptions.known()})
                c0 = time.process_time()
                res = cls(st, sub_solve=schedopt.solve if sub else None, model=model, **kw).run()
                tot[name] += time.process_time() - c0
                got[name] = _summary(res)
            if rep == 0:
                d = _differences(got["before"], got["after"])
                if d:
                    bad += 1
                    print(f"round {i}: " + "; ".join(d[:6]), file=sys.stderr)
        for name in passes:
            passes[name].append(tot[name] - at[name])
    b, a = tot["before"] / repeat, tot["after"] / repeat
    mb, ma = statistics.median(passes["before"]), statistics.median(passes["after"])
    print(f"{len(rounds)} solves x {repeat}, interleaved in one process: CPU per pass before {b:.3f} s, after {a:.3f} s, "
          f"ratio after/before {a / b:.3f} (medians of the passes: {mb:.3f} s, {ma:.3f} s, {ma / mb:.3f}); "
          f"{bad} rounds differ")
    if out is not None:
        import platform

        import numpy as np

        _record(out, {"date": time.strftime("%Y-%m-%d"), "label": label, "rounds": len(rounds), "repeat": repeat,
                      "before_commit": _commit(before), "after_commit": _commit(Path.cwd(), out),
                      "cpu_before_s": round(b, 4), "cpu_after_s": round(a, 4), "ratio": round(a / b, 4),
                      "rounds_differ": bad, "load_1min": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(),
                      "python": platform.python_version(), "numpy": np.__version__, "machine": platform.machine()})
    return bad


def ab(path: Path, checkouts: list[tuple[str, str]], runs: int, repeat: int) -> None:
    got: dict[str, list[float]] = {name: [] for name, _ in checkouts}
    for r in range(runs):
        for name, root in checkouts:
            env = dict(os.environ, PYTHONPATH=os.path.abspath(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
            out = subprocess.run([sys.executable, __file__, "replay", str(path), "--repeat", str(repeat), "--cpu-only"],
                                 env=env, capture_output=True, text=True, check=True)
            p = min(float(x) for x in out.stdout.split())
            got[name].append(p)
            print(f"run {r + 1} {name}: {p:.3f} s", file=sys.stderr)
    meds = {n: statistics.median(v) for n, v in got.items()}
    names = [n for n, _ in checkouts]
    print("  ".join(f"{n}: median {meds[n]:.3f} s ({', '.join(f'{x:.3f}' for x in got[n])})" for n in names))
    if len(names) == 2:
        print(f"ratio {names[1]}/{names[0]}: {meds[names[1]] / meds[names[0]]:.3f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("capture", help="run the everyday command once and pickle every mckp solve")
    c.add_argument("path", type=Path)
    c.add_argument("--job-model", default=None)
    r = sub.add_parser("replay", help="solve the captured rounds again")
    r.add_argument("path", type=Path)
    r.add_argument("--repeat", type=int, default=1)
    r.add_argument("--check", action="store_true", help="compare every answer with the captured one")
    r.add_argument("--cpu-only", action="store_true", help="print only the CPU seconds of each pass")
    i = sub.add_parser("interleave", help="each round by a before checkout's mckp and this one's, alternately")
    i.add_argument("path", type=Path)
    i.add_argument("--before", type=Path, required=True, help="the root of the before checkout")
    i.add_argument("--repeat", type=int, default=3)
    i.add_argument("--out", type=Path, default=None, help="append one row to this CSV (benchmarks/mckp_rounds.csv)")
    i.add_argument("--label", default="", help="the row's label (which capture: the job model)")
    b = sub.add_parser("ab", help="replay in fresh processes of each checkout, alternately")
    b.add_argument("path", type=Path)
    b.add_argument("--checkout", action="append", required=True, help="NAME=PATH (a repository root)")
    b.add_argument("--runs", type=int, default=5)
    b.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    if a.cmd == "capture":
        return capture(a.path, a.job_model)
    if a.cmd == "interleave":
        return 1 if interleave(a.path, a.before, a.repeat, a.out, a.label) else 0
    if a.cmd == "replay":
        passes, bad = replay(a.path, a.repeat, a.check, quiet=a.cpu_only)
        if a.cpu_only:
            print(" ".join(f"{p:.6f}" for p in passes))
        return 1 if bad else 0
    checkouts = []
    for spec in a.checkout:
        name, _, root = spec.partition("=")
        checkouts.append((name, root))
    ab(a.path, checkouts, a.runs, a.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
