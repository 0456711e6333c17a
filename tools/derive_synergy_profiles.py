"""Derive ``schedopt/synergy/profiles.json`` from the Synergy reference data (offline; run by hand).

Reads ``../shared/data/synergy/model_profiles.json`` from the repository root by default (numbers extracted unchanged from msr-fiddle/synergy
``simulator/models/<model>_1.py`` at commit 1bb2bed6edc9c5f953d0b7f0a40e4fdad053489c, MIT licence) and writes the
compact copy the package ships: for every model of the default profile set (CPU:GPU = 3) the 9 x 5
resource-sensitivity matrix of its ``<model>_1`` file -- the only one the Synergy simulator loads
(``Model.use_scores_from_tput`` always reads ``<model>_1`` whatever the job's GPU count) -- with its ideal demand,
speedup and model class. The ``*_2`` / ``*_4`` files (4 columns, unused by the simulator) and the ``models-4/5/6``
sets (same matrices, only iteration times rescaled) are left out.

This is the only code in the repository that reads the shared data. Usage (relative paths are taken from the
current directory)::

    python tools/derive_synergy_profiles.py [SOURCE_JSON] [OUTPUT_JSON]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT.parent / "shared" / "data" / "synergy" / "model_profiles.json"  # ../shared/... from the repo root
OUTPUT = ROOT / "schedopt" / "synergy" / "profiles.json"

# model class per the simulator's model zoo (simulator/jobs/model_zoo.py); bert and vae are commented out of it
CLASSES = {
    "alexnet": "image",
    "res18": "image",
    "res50": "image",
    "mobilenet": "image",
    "shufflenet": "image",
    "gnmt": "language",
    "transformer": "language",
    "lstm": "language",
    "bert": "language",
    "m5": "speech",
    "deepspeech": "speech",
    "vae": "image",
}


def derive(source: Path = SOURCE) -> dict:
    raw = json.loads(source.read_text())
    axes = raw["axes"]
    cpu = [float(c) for c in axes["tput_rows_cpu_cores_per_gpu"]]
    mem = [float(m) for m in axes["tput_cols_mem_gb_per_gpu_5col"]]
    zoo = set(raw["models_used_by_model_zoo"])
    models = {}
    for key, entry in sorted(raw["profile_sets"]["models"]["models"].items()):
        if not key.endswith("_1"):
            continue
        name = entry["model"]
        tput = [[float(v) for v in row] for row in entry["tput"]]
        if len(tput) != len(cpu) or any(len(r) != len(mem) for r in tput):
            raise ValueError(f"{key}: matrix shape {len(tput)}x{len(tput[0])} differs from the axes")
        models[name] = {
            "class": CLASSES[name],
            "in_model_zoo": name in zoo,
            "tput": tput,
            "ideal_cpu_per_gpu": float(entry["ideal_cpu_per_gpu"]),
            "ideal_mem_gb_per_gpu": float(entry["ideal_mem_gb_per_gpu"]),
            "speedup_at_ideal_vs_fair": float(entry["speedup_at_ideal_vs_fair"]),
            "iter_time_s_at_fair_share": float(entry["iter_time_s_at_fair_share"]),
            "source_file": entry["source_file"],
        }
    return {
        "description": (
            "Synergy per-GPU resource-sensitivity matrices (throughput normalised to 1.0 at the GPU-proportional "
            "cell: 3 CPUs, 62.5 GB per GPU), rows = CPUs per GPU, columns = GB per GPU. Values unchanged."
        ),
        "source": {
            "repo": raw["source"]["repo"],
            "commit": raw["source"]["commit"],
            "paths": "simulator/models/<model>_1.py",
            "license": "MIT",
        },
        "cpu_grid": cpu,
        "mem_grid": mem,
        "proportional_cell": {"cpu_per_gpu": 3.0, "mem_gb_per_gpu": 62.5},
        "class_split_percent": {"image": 20, "language": 70, "speech": 10},
        "models": models,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", nargs="?", type=Path, default=SOURCE, help="model_profiles.json (default: %(default)s)")
    ap.add_argument("out", nargs="?", type=Path, default=OUTPUT, help="output JSON (default: %(default)s)")
    args = ap.parse_args(argv)
    source, out = args.source, args.out
    if not source.is_file():
        ap.error(f"{source} is not a file: pass the path of synergy/model_profiles.json as the first argument")
    data = derive(source)
    text = json.dumps(data, indent=None, separators=(",", ":"))
    out.write_text(text + "\n")
    print(f"wrote {out} ({len(text)} bytes, {len(data['models'])} models)")


if __name__ == "__main__":
    main()
