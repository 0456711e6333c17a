"""Derive per-GPU-type relative speeds of the Gandiva job types (offline; ships schedopt/sim/gandiva/type_speeds.json).

    python tools/derive_gandiva_type_speeds.py [../shared/data/gavel/simulation_throughputs.json]

Source: Gavel's measured isolated throughputs (stanford-futuredata/gavel, MIT, `scheduler/simulation_throughputs.json`,
the "null" entry at scale factor 1) of the 26 job types of `schedopt/gandiva/profiles.json` on K80, P100 and V100.
Speeds are relative to the P100 (= 1): a job of duration d (seconds on a P100) runs d / speed seconds elsewhere.

The paper's cluster is 50 P100 + 50 P40; no public data set measures a P40. Assumption (stated in
formulations/sim_gandiva.md): a job's P40 / P100 speed ratio equals its measured P100 / V100 ratio, i.e. the P40 is
"one generation step" below the P100 the way the P100 is below the V100 in Gavel's measurements, with each job
type's own sensitivity (convolutional jobs lose most, the recommendation models run faster on the older card, as
they do on P100 vs V100). The geometric mean it gives (printed) is the only aggregate we check against the spec
sheets (P40: 12 TFLOPS FP32, 346 GB/s; P100 PCIe: 9.3 TFLOPS, 732 GB/s: compute-bound jobs about even, memory-bound
jobs about half speed).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "schedopt" / "sim" / "gandiva" / "type_speeds.json"
#: memory per GPU (GB, NVIDIA data sheets); the profiles' memory footprints are fractions of a 16 GB GPU
MEMORY_GB = {"p100": 16.0, "p40": 24.0, "v100": 16.0, "k80": 12.0}


def main(argv: list[str]) -> int:
    src = Path(argv[0]) if argv else ROOT / ".." / "shared" / "data" / "gavel" / "simulation_throughputs.json"
    data = json.loads(src.read_text())
    types = json.loads((ROOT / "schedopt" / "gandiva" / "profiles.json").read_text())["types"]
    tput = {w: [float(data[w][str((t, 1))]["null"]) for t in types] for w in ("k80", "p100", "v100")}
    speed = {w: [round(tput[w][i] / tput["p100"][i], 4) for i in range(len(types))] for w in ("p100", "k80", "v100")}
    speed["p40"] = [round(tput["p100"][i] / tput["v100"][i], 4) for i in range(len(types))]
    out = {
        "source": {"repository": "stanford-futuredata/gavel", "commit": "c4fa40097339e9608ab71fd64c8bdea96a5e4a4c",
                   "licence": "MIT", "file": "scheduler/simulation_throughputs.json ('null' entries, scale factor 1)",
                   "script": "tools/derive_gandiva_type_speeds.py"},
        "derivation": {
            "p100, k80, v100": "measured isolated throughput on that type / on a P100",
            "p40": "assumption (no public P40 measurement): P40 / P100 = the job type's measured P100 / V100",
            "memory_gb": "NVIDIA data sheets; the profiles' memory footprints are fractions of 16 GB",
        },
        "reference": "p100",
        "job_types": types,
        "speed": speed,
        "memory_gb": MEMORY_GB,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    for w in ("p40", "k80", "v100"):
        s = speed[w]
        gm = math.exp(sum(math.log(x) for x in s) / len(s))
        print(f"{w}/p100: geometric mean {gm:.3f}, min {min(s):.3f}, max {max(s):.3f}; "
              f"faster than p100 for {sum(x > 1 for x in s)} of {len(s)} job types")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
