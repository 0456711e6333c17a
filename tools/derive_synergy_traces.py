"""Derive the Synergy replay traces shipped in ``schedopt/sim/data/synergy/`` (offline; run by hand).

Reads the published traces of msr-fiddle/synergy (commit 1bb2bed6edc9c5f953d0b7f0a40e4fdad053489c, MIT licence) as
kept in ``../shared/data/synergy`` (relative to the repository root; another folder may be given):

* ``traces/deploy_trace/static_100job_6_3_1100.0``: the paper's static deployment trace (100 one-GPU jobs, all
  submitted at once; run by the published ``runner.py --replay_trace ... --static``),
* ``traces/deploy_trace/dynamic/srtf.log``: the dynamic deployment trace (100 one-GPU jobs, arrivals in seconds),
* ``traces/test_trace``: the simulator's 8-job replay test (1-, 2- and 4-GPU jobs),

each a headerless CSV ``job_id,model_name,arrival,num_iterations,gpu_demand`` (the format of the published
``Workload.populate_from_trace``), and the cluster each was run on from ``configs/*.ini``. It writes the same rows,
unchanged, under a header (``id,model,arrival,iterations,gpus``) as ``static.csv``, ``dynamic.csv`` and ``test.csv``,
and ``traces.json`` naming each trace's source, cluster shape (servers x GPUs, CPUs, GB) and replay mode. Durations
are not computed here: :func:`schedopt.sim.synergy.load_synergy_trace` multiplies the iterations by the model's
``iter_time_s_at_fair_share`` from the shipped profiles at load time, as the published simulator does.

    python tools/derive_synergy_traces.py [DATA_DIR] [OUTPUT_DIR]
"""

from __future__ import annotations

import argparse
import configparser
import csv
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT.parent / "shared" / "data" / "synergy"  # ../shared/data/synergy from the repository root
OUTPUT = ROOT / "schedopt" / "sim" / "data" / "synergy"
COMMIT = "1bb2bed6edc9c5f953d0b7f0a40e4fdad053489c"

# name -> (trace file under DATA_DIR/traces, published path, config file, static replay, what the paper used it for)
TRACES = {
    "static": ("deploy_trace/static_100job_6_3_1100.0", "simulator/deploy_trace/static_100job_6_3_1100.0",
               "static_trace.ini", True,
               "the paper's static deployment trace: 100 one-GPU jobs submitted together (published replay: "
               "runner.py --replay_trace deploy_trace/static_100job_6_3_1100.0 --static)"),
    "dynamic": ("deploy_trace/dynamic/srtf.log", "simulator/deploy_trace/dynamic/srtf.log", "deployment.ini", False,
                "the paper's dynamic deployment trace: 100 one-GPU jobs with arrival times in seconds (published "
                "replay: runner.py --replay_trace deploy_trace/dynamic/srtf.log)"),
    "test": ("test_trace", "simulator/test_trace", "default_cluster.ini", False,
             "the published simulator's 8-job replay test (1-, 2- and 4-GPU jobs; runner.py's default cluster)"),
}


def read_trace(path: Path) -> list[list[str]]:
    rows = []
    for k, line in enumerate(path.read_text().splitlines()):
        if not line.strip():
            continue
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 5:
            raise ValueError(f"{path}:{k + 1}: {len(parts)} fields, expected job_id,model,arrival,iterations,gpus")
        int(parts[0]), float(parts[2]), int(parts[3]), int(parts[4])
        rows.append(parts)
    return rows


def read_cluster(path: Path) -> dict:
    cp = configparser.ConfigParser(inline_comment_prefixes=("#",))
    cp.read_string(path.read_text())
    c = cp["CLUSTER"]
    return {"config": path.name, "preset": path.stem.removesuffix("_cluster"),
            "servers": int(c["racks"]) * int(c["servers_per_rack"]),
            "gpus_per_server": int(c["gpus_per_server"]), "cpus_per_server": float(c["cpus_per_server"]),
            "mem_gb_per_server": float(c["dram_per_server"])}


def main(source: Path = SOURCE, output: Path = OUTPUT) -> None:
    output.mkdir(parents=True, exist_ok=True)
    index: dict = {"description": "Synergy replay traces (job_id, model, arrival s, iterations, GPUs), rows unchanged "
                                  "from the published files; made by tools/derive_synergy_traces.py.",
                   "source": {"repo": "msr-fiddle/synergy", "commit": COMMIT, "license": "MIT"}, "traces": {}}
    for name, (rel, published, ini, static, about) in TRACES.items():
        rows = read_trace(source / "traces" / rel)
        with open(output / f"{name}.csv", "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["id", "model", "arrival", "iterations", "gpus"])
            w.writerows(rows)
        index["traces"][name] = {"file": f"{name}.csv", "published_path": published, "jobs": len(rows),
                                 "static": static, "cluster": read_cluster(source / "configs" / ini), "about": about}
        print(f"{name}: {len(rows)} jobs -> {output / (name + '.csv')}")
    (output / "traces.json").write_text(json.dumps(index, indent=1) + "\n")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", nargs="?", type=Path, default=SOURCE)
    p.add_argument("output", nargs="?", type=Path, default=OUTPUT)
    a = p.parse_args()
    main(a.source, a.output)
