"""Derive the data shipped in ``schedopt/sim/data/`` from the public Pollux / Sia artifacts (run offline).

Usage: ``python tools/derive_sim_data.py [../shared/data]`` (the path is relative to the repository root).

Writes:

* ``schedopt/sim/data/applications.json`` -- per application, from ``sia-simulator/traces/<app>/validation-<B>.csv``
  (identical to the Pollux artifact's ``simulator/traces``): the profiled global batch sizes, per epoch the
  gradient statistics ``grad_sqr`` / ``grad_var`` at each of them, and the scale-invariant progress at the end of
  each epoch (the minimum over batch sizes, as the Pollux simulator's ``get_progress``); the epoch count of
  ``simulator/applications.py``.
* ``schedopt/sim/data/workloads/<set>/workload-<k>.csv`` -- copies of the public workload lists
  (``name,time,application,num_replicas,batch_size``) and ``sources.json`` naming where each came from.
"""

from __future__ import annotations

import csv
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "schedopt" / "sim" / "data"

# epochs per application: petuum/adaptdl@osdi21-artifact simulator/applications.py (same in Sia's applications.py)
EPOCHS = {"bert": 2, "cifar10": 100, "deepspeech2": 80, "imagenet": 90, "ncf": 10, "yolov3": 50}

SIA = "sia-artifacts/sia-simulator"
WORKLOADS = {
    # set name: (source folder under the data root, files, source description)
    "pollux": ("pollux/workloads", [f"workload-{k}.csv" for k in range(1, 9)],
               "petuum/adaptdl@c793c708 (osdi21-artifact) simulator/workloads/ (load 1.0, 160 jobs each)"),
    "saturn": (f"{SIA}/workloads/saturn", [f"workload-{k}.csv" for k in range(1, 11)],
               "siasosp23/artifacts@aaf7a0de sia-simulator/workloads/saturn/ (Helios Saturn, 160 jobs each)"),
    "philly": (f"{SIA}/workloads/philly", [f"workload-{k}.csv" for k in range(1, 9)],
               "siasosp23/artifacts@aaf7a0de sia-simulator/workloads/philly/ (Philly, 160 jobs each)"),
    "newtrace": (f"{SIA}/workloads/newtrace", ["workload-1.csv"],
                 "siasosp23/artifacts@aaf7a0de sia-simulator/workloads/newtrace/ (960 jobs over 48 h)"),
    "saturn-32x": (f"{SIA}/workloads/scale/scale_32x", ["workload-1.csv"],
                   "siasosp23/artifacts@aaf7a0de sia-simulator/workloads/scale/scale_32x/ (5,120 jobs, for 2,048 GPUs)"),
}


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def application(trace_dir: Path, epochs: int) -> dict:
    tables = {}
    for p in trace_dir.glob("validation-*.csv"):
        tables[int(p.stem.split("-")[-1])] = _rows(p)
    batches = sorted(tables)
    for b in batches:
        if len(tables[b]) < epochs:
            raise SystemExit(f"{trace_dir.name}: validation-{b}.csv has {len(tables[b])} rows < {epochs} epochs")
    # progress at the end of epoch e (1-based), as get_progress(e) = min over batch sizes of progress[e - 1]
    progress = [min(float(tables[b][e]["progress"]) for b in batches) for e in range(epochs)]
    sqr = [[float(tables[b][e]["grad_sqr"]) for b in batches] for e in range(epochs)]
    var = [[float(tables[b][e]["grad_var"]) for b in batches] for e in range(epochs)]
    return {"batches": batches, "epochs": epochs, "progress": progress, "grad_sqr": sqr, "grad_var": var}


def main(data: Path) -> None:
    traces = data / SIA / "traces"
    apps = {name: application(traces / name, n) for name, n in EPOCHS.items()}
    doc = {
        "source": {
            "repository": "siasosp23/artifacts", "commit": "aaf7a0de7b6cb5eab06ea020467ede5d2fd18e70",
            "files": "sia-simulator/traces/<app>/validation-<B>.csv (identical to petuum/adaptdl@c793c708 "
                     "simulator/traces/<app>/validation-<B>.csv)",
            "derivation": "progress[e] = min over B of the progress column at row e (the end of epoch e + 1); "
                          "grad_sqr[e][k] / grad_var[e][k] = row e of validation-<batches[k]>.csv; epochs from "
                          "simulator/applications.py",
        },
        "applications": apps,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "applications.json").write_text(json.dumps(doc, indent=1) + "\n")
    sources = {}
    for name, (folder, files, what) in WORKLOADS.items():
        dst = OUT / "workloads" / name
        dst.mkdir(parents=True, exist_ok=True)
        for fn in files:
            shutil.copyfile(data / folder / fn, dst / fn)
        sources[name] = {"source": what, "files": files}
    (OUT / "workloads" / "sources.json").write_text(json.dumps(sources, indent=1) + "\n")
    print(f"wrote {OUT / 'applications.json'} and {sum(len(v[1]) for v in WORKLOADS.values())} workloads")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / ".." / "shared" / "data")
