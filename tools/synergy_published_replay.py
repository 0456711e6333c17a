"""Replay the Synergy deployment traces in the *published* Synergy simulator (offline reference numbers).

The published code (msr-fiddle/synergy at 1bb2bed, MIT) is imported from a checkout of its ``simulator`` folder
given on the command line and run in its own simulation mode; nothing of it is copied into schedopt. Its
deployment-only imports (gRPC stubs, libnuma bindings, the deployment runtime, cvxpy for OPT) are replaced by empty
modules: simulation never calls them. For each trace it builds the published ``Runner`` exactly as ``runner.py``'s
``benchmark`` does for ``--replay_trace <trace> [--static] --config_file <config>`` (seed 42, ``placement`` off,
``fair`` / ``tune`` from the scheduler name: ``FIFO+fair`` = GPU-proportional, ``FIFO`` = Synergy-GREEDY,
``FIFO+tune`` = Synergy-TUNE; likewise SRTF and LAS) and records each job's completion time (finish - arrival).

    python tools/synergy_published_replay.py /path/to/synergy/simulator --out benchmarks/sim_synergy_deploy_published.csv

The trace files are read from the checkout (``deploy_trace/...``, ``test_trace``), the same bytes as
``../shared/data/synergy/traces``. ``tools/sim_synergy_loop.py deploy`` puts these numbers next to schedopt's.
"""

from __future__ import annotations

import argparse
import collections
import collections.abc
import csv
import logging
import os
import random
import sys
import time
import types
from pathlib import Path
from typing import ClassVar

# name -> (trace under the simulator folder, config, static replay)
TRACES = {
    "static": ("deploy_trace/static_100job_6_3_1100.0", "configs/static_trace.ini", True),
    "dynamic": ("deploy_trace/dynamic/srtf.log", "configs/deployment.ini", False),
    "test": ("test_trace", "configs/default_cluster.ini", False),
}
MODES = {"proportional": "fair", "greedy": "", "tune": "tune"}


class _Empty(types.ModuleType):
    """A module whose every attribute is another empty module (stands in for deployment-only imports)."""

    __path__: ClassVar[list[str]] = []

    def __getattr__(self, k: str) -> _Empty:
        if k.startswith("__"):
            raise AttributeError(k)
        return _Empty(f"{self.__name__}.{k}")

    def __call__(self, *a: object, **k: object) -> None:
        return None


def _import_runner(sim_dir: str) -> types.ModuleType:
    collections.Mapping = collections.abc.Mapping  # type: ignore[attr-defined]  # the published code predates 3.10
    for m in ("numa", "grpc", "cvxpy", "deployment", "deployment.runtime", "deployment.runtime.rpc",
              "deployment.helper", "deployment.runtime.rpc.scheduler_server",
              "deployment.runtime.rpc.scheduler_client"):
        sys.modules[m] = _Empty(m)
    sys.path.insert(0, sim_dir)
    os.chdir(sim_dir)
    logging.disable(logging.CRITICAL)
    import runner  # type: ignore[import-not-found]

    return runner


def run(R: types.ModuleType, trace: str, config: str, static: bool, queue: str, mode: str) -> dict:
    finished: dict[int, tuple[float, float]] = {}
    orig = R.Runner.finish_job

    def finish_job(self, job):  # type: ignore[no-untyped-def]
        finished[job.job_id] = (self.time, job.job_arrival_time)
        return orig(self, job)

    R.Runner.finish_job = finish_job
    try:
        random.seed(42)  # runner.py's default --seed, set before every run by benchmark()
        t0 = time.process_time()
        r = R.Runner(cluster_job_log=None, scheduler=queue.upper(), jobs_per_hour=9.0, model_class_split=(20, 70, 10),
                     static=static, placement=False, fair=mode == "fair", tune=mode == "tune", opt=False,
                     simulate=True, config_file=config, trace=trace)
        r.run_simulation()
        cpu = time.process_time() - t0
    finally:
        R.Runner.finish_job = orig
    jct = [f - a for f, a in finished.values()]
    return {"jobs": len(r.workload.jobs), "finished": len(jct), "avg_jct_h": round(sum(jct) / len(jct) / 3600, 4),
            "makespan_h": round(max(f for f, _ in finished.values()) / 3600, 4), "cpu_s": round(cpu, 1)}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("simulator", help="the published simulator folder (msr-fiddle/synergy/simulator)")
    p.add_argument("--traces", nargs="+", default=list(TRACES), choices=list(TRACES))
    p.add_argument("--queues", nargs="+", default=["fifo", "srtf", "las"], choices=["fifo", "srtf", "las"])
    p.add_argument("--out")
    a = p.parse_args(argv)
    out = Path(a.out).resolve() if a.out else None
    R = _import_runner(str(Path(a.simulator).resolve()))
    rows = []
    for name in a.traces:
        trace, config, static = TRACES[name]
        for q in a.queues:
            for method, mode in MODES.items():
                row = {"trace": name, "config": Path(config).name, "queue": q, "method": method,
                       **run(R, trace, config, static, q, mode)}
                print(row, file=sys.stderr, flush=True)
                rows.append(row)
    w = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    if out:
        with open(out, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()
