"""Run the published Synergy scheduler's one-round allocation on schedopt's 15 comparison job sets (offline).

The published code (msr-fiddle/synergy, MIT) is imported from a checkout given on the command line; nothing of it
is copied into schedopt. For each set (``generate_instance(8 * S, seed)``, S in 4, 16, 32 servers, seeds 0..4) it
builds the published ``Cluster`` (S servers of 8 GPUs, 24 CPUs, 500 GB) and ``Job`` objects (GPU demand, best-case
CPU / GB demand from the model's profile, capped at one server as the published ``add_synergy_profile`` does;
storage demand 0, as schedopt models no storage), walks them in FIFO order exactly as the published
``FIFO.schedule`` does and calls ``Cluster.allocate`` in three modes: ``fair`` (fair=True), ``greedy``
(fair=False, tune=False) and ``tune`` (fair=False, tune=True). It records each job's CPUs and GB per GPU.

    PYTHONPATH=. python tools/synergy_published_rounds.py /path/to/synergy/simulator [schedopt/synergy/published_rounds.json]

The output ships as ``schedopt/synergy/published_rounds.json``; ``tests/test_synergy_tune.py`` replays it.
"""

from __future__ import annotations

import collections
import collections.abc
import json
import logging
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETS = [(s, seed) for s in (4, 16, 32) for seed in range(5)]


def main(sim_dir: str, out: str) -> None:
    from schedopt.synergy import generate_instance, load_profiles

    stub = tempfile.mkdtemp()
    Path(stub, "numa.py").write_text("")  # the published Server imports libnuma bindings it never uses in simulation
    collections.Mapping = collections.abc.Mapping  # type: ignore[attr-defined]  # the published code predates 3.10
    sys.path[:0] = [sim_dir, stub]
    logging.disable(logging.CRITICAL)
    from jobs.job import Job  # type: ignore[import-not-found]
    from resources.cluster import AllocationStrategy, Cluster  # type: ignore[import-not-found]

    prof = load_profiles()
    rows = []
    for S, seed in SETS:
        inst = generate_instance(8 * S, seed)
        ini = Path(stub, f"c{S}.ini")
        ini.write_text(
            f"[CLUSTER]\nracks = 1\nservers_per_rack = {S}\ngpus_per_server = 8\ncpus_per_server = 24\n"
            "dram_per_server = 500\nsspeed_per_server = 500\n"
        )
        row: dict = {"name": f"s{S}_seed{seed}", "servers": S, "seed": seed}
        for mode in ("fair", "greedy", "tune"):
            cl = Cluster(config_file=str(ini))
            per = cl.per_server_size
            jobs = []
            for k, j in enumerate(inst.jobs):
                model = j.id.split("-", 1)[1]
                m = prof["models"][model]
                g = j.gpus
                job = Job(k, float(k), 1.0, 1000, g, 1, 1, None, None, 0)
                cpu, mem = g * m["ideal_cpu_per_gpu"], g * m["ideal_mem_gb_per_gpu"]
                if cpu > per[1]:
                    cpu = per[1] if g <= per[0] else g * per[1] / per[0]
                if mem > per[2]:
                    mem = per[2] if g <= per[0] else g * per[2] / per[0]
                job.job_cpu_demand, job.job_mem_demand, job.job_sspeed_demand = cpu, mem, 0
                job.synergy_speedup_orig = 1.0
                job.job_model = type("M", (), {"model_name": model})()
                jobs.append(job)
            free = cl.get_free_gpus()
            for job in sorted(jobs, key=lambda x: x.job_arrival_time):
                d = job.get_gpu_deficit()
                if d > 0 and len(free) >= d:
                    _, free = cl.allocate(free, d, job, 300, AllocationStrategy.SYNERGY_PLACEMENT,
                                          fair=mode == "fair", tune=mode == "tune")
            points = []
            for job in jobs:
                g = len(job.gpus)
                points.append(None if g == 0 else [round(job.cpus / g, 6), round(job.mem / g, 6)])
            row[mode] = points
        rows.append(row)
        print(row["name"], "done")
    doc = {
        "description": "Per-job CPUs and GB per GPU the published Synergy scheduler (FIFO, one round) gives on "
        "schedopt's comparison job sets generate_instance(8 * servers, seed); null: not run. Modes: fair, greedy, "
        "tune. Made by tools/synergy_published_rounds.py.",
        "source": {"repo": "msr-fiddle/synergy", "commit": "1bb2bed6edc9c5f953d0b7f0a40e4fdad053489c"},
        "sets": rows,
    }
    Path(out).write_text(json.dumps(doc, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else str(ROOT / "schedopt" / "synergy" / "published_rounds.json"))
