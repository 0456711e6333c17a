"""Derive the data ``schedopt.traces`` and the named workloads ship, from the public artifacts in ../shared/data.

Run from the repository root (offline; nothing in the package reads ../shared at run time)::

    python tools/derive_trace_data.py [--shared ../shared/data]

Writes
* ``schedopt/traces/data/philly.csv.gz``: Pollux's preprocessed Philly trace (petuum/adaptdl@c793c708
  ``simulator/traces/philly.csv``, byte-identical inside the gzip), the source of ``pollux@<load>`` and ``philly@<load>``;
* ``schedopt/traces/data/configurations.json``: per rule and application, the submitter configurations
  ``(num_replicas, batch_size)`` the artifacts' generators drew from, read off their shipped workloads (Pollux: every
  ``workloads*/`` set but ``-realistic``; Sia: ``workloads/saturn``, the one set made by its ``generate_v2``);
* ``schedopt/sim/data/workloads/pollux@{0.5,1.5,2.0}/`` (Pollux's ``workloads-<load>/``, copied) and
  ``saturn@{0.5,1.5,2.0,2.5}/`` (Sia's ``scale/rate_{10,30,40,50}/``: Saturn at 10..50 jobs/h, load = rate / 20),
  and their entries in ``sources.json``.
"""

from __future__ import annotations

import argparse
import collections
import csv
import gzip
import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POLLUX = "petuum/adaptdl@c793c708 (osdi21-artifact)"
SIA = "siasosp23/artifacts@aaf7a0de"


def _configs(files: list[Path]) -> dict[str, list[list[int]]]:
    seen: dict[str, set[tuple[int, int]]] = collections.defaultdict(set)
    for f in files:
        for r in csv.DictReader(f.open()):
            seen[r["application"]].add((int(r["num_replicas"]), int(r["batch_size"])))
    return {a: [list(c) for c in sorted(cs)] for a, cs in sorted(seen.items())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default="../shared/data")
    args = ap.parse_args()
    shared = (ROOT / args.shared).resolve() if not Path(args.shared).is_absolute() else Path(args.shared)
    pollux, sia = shared / "pollux", shared / "sia-artifacts" / "sia-simulator"
    data = ROOT / "schedopt" / "traces" / "data"
    data.mkdir(parents=True, exist_ok=True)
    raw = (pollux / "traces" / "philly.csv").read_bytes()
    with gzip.GzipFile(data / "philly.csv.gz", "wb", mtime=0) as g:  # mtime=0: the same bytes on every run
        g.write(raw)
    pollux_sets = sorted(p for p in pollux.glob("workloads*") if p.name != "workloads-realistic")
    conf = {
        "sources": {
            "pollux": f"{POLLUX} simulator/{{{','.join(p.name for p in pollux_sets)}}}/*.csv",
            "sia": f"{SIA} sia-simulator/workloads/saturn/*.csv",
        },
        "rules": {
            "pollux": _configs([f for p in pollux_sets for f in sorted(p.glob("workload-*.csv"))]),
            "sia": _configs(sorted((sia / "workloads" / "saturn").glob("workload-*.csv"))),
        },
    }
    rules = ",\n".join(f'  "{r}": {{\n' + ",\n".join(f'   "{a}": {json.dumps(cs)}' for a, cs in apps.items()) + "\n  }"
                        for r, apps in conf["rules"].items())
    text = '{\n "sources": ' + json.dumps(conf["sources"]) + ',\n "rules": {\n' + rules + "\n }\n}"
    assert json.loads(text) == conf
    (data / "configurations.json").write_text(text + "\n")
    wl = ROOT / "schedopt" / "sim" / "data" / "workloads"
    sources = json.loads((wl / "sources.json").read_text())
    made = {}
    for load in ("0.5", "1.5", "2.0"):
        made[f"pollux@{load}"] = (pollux / f"workloads-{load}",
                                  f"{POLLUX} simulator/workloads-{load}/ (load {load}, "
                                  f"{round(160 * float(load))} jobs each)")
    for rate, load in ((10, "0.5"), (30, "1.5"), (40, "2.0"), (50, "2.5")):
        made[f"saturn@{load}"] = (sia / "workloads" / "scale" / f"rate_{rate}",
                                  f"{SIA} sia-simulator/workloads/scale/rate_{rate}/ (Helios Saturn at {rate} jobs/h "
                                  f"over 8 h, {rate * 8} jobs each)")
    for key, (src, text) in made.items():
        out = wl / key
        out.mkdir(exist_ok=True)
        files = sorted((f.name for f in src.glob("workload-*.csv")), key=lambda n: int(n[9:-4]))
        for fn in files:
            shutil.copyfile(src / fn, out / fn)
        sources[key] = {"source": text, "files": files}
    (wl / "sources.json").write_text(json.dumps(sources, indent=1) + "\n")
    print(f"wrote {data / 'philly.csv.gz'}, {data / 'configurations.json'} and {', '.join(made)}")


if __name__ == "__main__":
    main()
