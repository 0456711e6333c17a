"""Benchmark: a generated 1-million-row trace loads in under a minute and under 1 GB (issue 28).

    python tools/bench_trace_read.py [--rows 1000000] [--formats helios,philly,pai2020] [--repeats 3] [-o benchmarks/trace_read.csv]

For each format, writes a file of ``--rows`` jobs in the format's published layout (random but valid values, seeded)
to a temporary folder, then reads it ``--repeats`` times, each in a fresh Python process
(``schedopt.traces.read_trace``), and reports the median wall and CPU seconds and the largest peak resident memory
(``ru_maxrss`` of the child: the interpreter, numpy and the whole Trace held in memory). Generation time is not
counted. Rows are appended to the output CSV with the date, so before/after runs sit side by side.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
T0 = dt.datetime(2020, 4, 1)

CHILD = """
import resource, sys, time
t0, c0 = time.perf_counter(), time.process_time()
from schedopt.traces import read_trace
tr = read_trace(sys.argv[1], sys.argv[2])
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(len(tr), len(tr.skipped), wall, cpu, rss)
"""


def _ts(rng: random.Random, k: int) -> str:
    return (T0 + dt.timedelta(seconds=k * 15 + rng.randrange(15))).strftime("%Y-%m-%d %H:%M:%S")


def write_helios(path: Path, rows: int, rng: random.Random) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["job_id", "user", "vc", "gpu_num", "cpu_num", "node_num", "state", "submit_time", "start_time",
                    "end_time", "duration", "queue"])
        for k in range(rows):
            s = _ts(rng, k)
            w.writerow([k, f"u{rng.randrange(500)}", f"vc{rng.randrange(20)}", rng.choice((0, 1, 1, 1, 2, 4, 8)),
                        4, 1, rng.choice(("COMPLETED", "FAILED", "CANCELLED")), s, s, s, rng.randrange(1, 10**6), 0])
    return path


def write_philly(path: Path, rows: int, rng: random.Random) -> Path:
    with path.open("w") as f:
        f.write("[\n")
        for k in range(rows):
            s = _ts(rng, k)
            g = rng.choice((1, 1, 2, 4, 8))
            rec = {"status": "Pass", "vc": f"vc{rng.randrange(15)}", "jobid": f"application_{k}",
                   "attempts": [{"start_time": s, "end_time": s, "detail": [{"ip": "m1", "gpus": [
                       f"gpu{i}" for i in range(g)]}]}], "submitted_time": s, "user": f"u{rng.randrange(500)}"}
            f.write(("," if k else "") + json.dumps(rec) + "\n")
        f.write("]\n")
    return path


def write_pai2020(path: Path, rows: int, rng: random.Random) -> Path:
    path.mkdir(exist_ok=True)
    with (path / "pai_job_table.csv").open("w", newline="") as fj, (path / "pai_task_table.csv").open(
            "w", newline="") as ft:
        wj, wt = csv.writer(fj), csv.writer(ft)
        for k in range(rows):
            s = float(k * 3 + rng.randrange(3))
            e = s + rng.randrange(1, 10**5)
            wj.writerow([f"j{k}", f"i{k}", f"u{rng.randrange(500)}", "Terminated", s, e])
            wt.writerow([f"j{k}", "worker", 1.0, "Terminated", s + 1, e, 600.0, 29.3, rng.choice((50.0, 100.0, 800.0)),
                         rng.choice(("V100", "T4", "P100", "MISC"))])
    return path


WRITERS = {"helios": (write_helios, "cluster_log.csv"), "philly": (write_philly, "cluster_job_log.json"),
           "pai2020": (write_pai2020, "pai")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--formats", default="helios,philly,pai2020")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("-o", "--output", default=str(ROOT / "benchmarks" / "trace_read.csv"))
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out_rows = []
    with tempfile.TemporaryDirectory(prefix="bench_trace_") as tmp:
        for fmt in args.formats.split(","):
            writer, fname = WRITERS[fmt]
            path = writer(Path(tmp) / fname, args.rows, random.Random(0))
            size = sum(p.stat().st_size for p in ([path] if path.is_file() else path.iterdir())) / 2**20
            runs = []
            for _ in range(args.repeats):
                r = subprocess.run([sys.executable, "-c", CHILD, str(path), fmt], capture_output=True, text=True,
                                   env=env, check=True)
                n, _skipped, wall, cpu, rss = r.stdout.split()
                runs.append((int(n), float(wall), float(cpu), float(rss)))
            row = {"date": dt.date.today().isoformat(), "format": fmt, "rows": args.rows, "file_mb": round(size, 1),
                   "jobs_read": runs[0][0], "repeats": args.repeats,
                   "wall_s_median": round(statistics.median(r[1] for r in runs), 2),
                   "cpu_s_median": round(statistics.median(r[2] for r in runs), 2),
                   "peak_rss_mb_max": round(max(r[3] for r in runs), 1), "load_avg_1m": round(os.getloadavg()[0], 2)}
            out_rows.append(row)
            print(row, flush=True)
            if path.is_file():
                path.unlink()
    out = Path(args.output)
    new = not out.exists()
    with out.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(out_rows[0]))
        if new:
            w.writeheader()
        w.writerows(out_rows)
    print(f"appended {len(out_rows)} rows to {out}")


if __name__ == "__main__":
    main()
