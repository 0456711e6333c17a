"""Derive ``schedopt/sim/data/measured_profiles.json`` (the measured step times of the Sia artifact; run offline).

Usage: ``python tools/derive_measured.py [../shared/data]`` (the path is relative to the repository root).

For every data-parallel application (bert, cifar10, deepspeech2, imagenet, ncf, yolov3) and GPU type (t4 = ``aws``,
v100 = ``azure``, a100 = ``dgx-ext``, rtx6000 = ``quad``, rtx2080ti = ``rtx``; the suffixes of
``siasosp23/artifacts@aaf7a0de sia-simulator/traces/<app>/``), the rows of

* ``placements-<suffix>.csv`` as ``[placement, local_bsz, step_time, sync_time]`` (``placement`` the digit string,
  one digit per node), and
* ``scalability-<suffix>.csv`` as ``[num_nodes, num_replicas, local_bsz, step_time, sync_time]``,

unchanged (numbers as read). :mod:`schedopt.sim.measured` looks them up and interpolates them as the published
simulator's ``Application.get_throughput`` does.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "schedopt" / "sim" / "data" / "measured_profiles.json"
APPS = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")
SUFFIX = {"t4": "aws", "v100": "azure", "a100": "dgx-ext", "rtx6000": "quad", "rtx2080ti": "rtx"}
SOURCE = "siasosp23/artifacts@aaf7a0de7b6cb5eab06ea020467ede5d2fd18e70 sia-simulator/traces/<app>/"


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _num(s: str) -> float | int:
    x = float(s)
    return int(x) if x == int(x) and "." not in s else x


def main(data: str = "../shared/data") -> None:
    traces = (ROOT / data / "sia-artifacts" / "sia-simulator" / "traces").resolve()
    apps: dict[str, dict[str, dict[str, list]]] = {}
    for app in APPS:
        apps[app] = {}
        for gpu, suf in SUFFIX.items():
            pl = _rows(traces / app / f"placements-{suf}.csv")
            sc = _rows(traces / app / f"scalability-{suf}.csv")
            apps[app][gpu] = {
                "placements": [[r["placement"], _num(r["local_bsz"]), float(r["step_time"]), float(r["sync_time"])]
                               for r in pl],
                "scalability": [[_num(r["num_nodes"]), _num(r["num_replicas"]), _num(r["local_bsz"]),
                                 float(r["step_time"]), float(r["sync_time"])] for r in sc],
            }
    doc = {"source": SOURCE, "gpu_suffix": SUFFIX,
           "derivation": "rows of placements-<suffix>.csv and scalability-<suffix>.csv, unchanged",
           "applications": apps}
    OUT.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main(*sys.argv[1:])
