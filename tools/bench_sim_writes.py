"""What writing each simulation as it finishes costs, against the simulation itself (issue 24: under 1 %).

One run, before and after:

* the simulation: ``sia`` on ``saturn/1`` (sia-64, 60 s rounds), run once through :func:`schedopt.sim.runs.run_tasks`
  without an output folder (wall and CPU time);
* before: what ``schedopt simulate -o`` did at the end of a sweep per simulation (``SimResult.to_jsonl()`` and
  ``Path.write_text``, plus the summary row);
* after: what :mod:`schedopt.sim.runs` now does the moment a simulation finishes (the record with its header and
  sha256 end marker, written to a temporary file, fsynced and renamed; the summary row; ``summary.csv`` rewritten
  atomically) -- the same ``_Folder.write`` the sweep calls;

each write timed ``--repeat`` times (median, CPU beside wall). Also the sweep end to end with ``output_dir`` (wall,
one run: noisier than the difference it would show). Usage::

    python tools/bench_sim_writes.py [--policy sia] [--workload saturn/1] [--repeat 15]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from schedopt.sim.metrics import summary_row
from schedopt.sim.runs import _Folder, run_tasks
from schedopt.sim.sweep import tasks


def timed(fn, repeat: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    walls, cpus = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--policy", default="sia")
    ap.add_argument("--workload", default="saturn/1")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--no-end-to-end", action="store_true", help="skip the second, written, simulation")
    a = ap.parse_args()
    items = tasks([a.policy], [a.workload])
    w0, c0 = time.perf_counter(), time.process_time()
    (res,) = run_tasks(items, workers=1, progress=False)
    sim_wall, sim_cpu = time.perf_counter() - w0, time.process_time() - c0
    with tempfile.TemporaryDirectory(dir=".") as d:
        out = Path(d)

        def before() -> None:
            (out / "old.jsonl").write_text(res.to_jsonl())
            summary_row(res)

        folder = _Folder(out / "new", items)

        def after() -> None:
            folder.write(0, res)

        bw, bc = timed(before, a.repeat)
        aw, ac = timed(after, a.repeat)
        size = (out / "new" / "sia__saturn-1__seed0.jsonl").stat().st_size if a.policy == "sia" else 0
        e2e = None
        if not a.no_end_to_end:
            w0 = time.perf_counter()
            run_tasks(items, workers=1, progress=False, output_dir=out / "e2e")
            e2e = time.perf_counter() - w0
    print(f"simulation {a.policy} on {a.workload}: {sim_wall:.2f} s wall, {sim_cpu:.2f} s CPU, "
          f"{len(res.jobs)} jobs, {len(res.rounds)} rounds" + (f", record {size / 1e6:.2f} MB" if size else ""))
    print(f"before (to_jsonl + write_text + summary row, at the end): {bw * 1e3:.1f} ms wall, {bc * 1e3:.1f} ms CPU "
          f"= {100 * bw / sim_wall:.2f} % of the simulation's wall time")
    print(f"after (record + sha256 end marker + temp/fsync/rename + summary.csv, as it finishes): {aw * 1e3:.1f} ms "
          f"wall, {ac * 1e3:.1f} ms CPU = {100 * aw / sim_wall:.2f} % of the simulation's wall time "
          f"({100 * ac / sim_cpu:.2f} % of its CPU time)")
    if e2e is not None:
        print(f"end to end with output_dir: {e2e:.2f} s wall (without: {sim_wall:.2f} s; one run each, the difference "
              "is within the machine's noise)")


if __name__ == "__main__":
    main()
