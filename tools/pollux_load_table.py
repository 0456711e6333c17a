"""The load sweep on Pollux's cluster beside the published numbers: a Markdown table from benchmarks/sim_pollux_load.csv.

Run the simulations first (resumable; one row per finished simulation), then the table::

    python tools/sim_targets.py pollux --policies tiresias,pollux --resume --out benchmarks/sim_pollux_load.csv \
        --workloads pollux@0.5/1,...,pollux@2.0/8
    python tools/pollux_load_table.py [benchmarks/sim_pollux_load.csv]

The published per-workload average JCTs (seconds) below are the ``avgs`` of
``simulator/results-jobload/<policy>-<load>/summary.json`` in petuum/adaptdl@c793c708 (branch ``osdi21-artifact``),
the results behind the Pollux paper's Fig. 8a, rounded to 0.1 s (only load 1.0 is in ../shared/data; the other loads
were read from the public repository). The table compares means over the same workloads.
"""

from __future__ import annotations

import csv
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = {  # policy -> load -> [workload-1 .. workload-8]
    "pollux": {
        "0.5": [1059.5, 1826.3, 1310.5, 1497.8, 976.8, 1287.8, 2881.1, 1432.0],
        "1.0": [2088.8, 3322.9, 2188.5, 2721.0, 2673.7, 2446.1, 3616.1, 2951.9],
        "1.5": [3855.8, 3380.6, 3299.9, 3902.7, 4007.3, 3474.3, 3217.6, 4345.1],
        "2.0": [6186.3, 4190.8, 5131.8, 5262.4, 6590.8, 5105.3, 3836.3, 6009.8],
    },
    "tiresias": {
        "0.5": [1450.9, 2333.3, 1869.9, 1946.8, 1425.4, 1826.6, 3979.2, 1900.0],
        "1.0": [2473.7, 5145.0, 3876.3, 3280.3, 3501.0, 3469.7, 5479.9, 5079.7],
        "1.5": [5520.3, 6333.8, 6562.0, 5577.3, 6832.4, 5830.5, 5366.8, 7435.8],
        "2.0": [10138.2, 8656.0, 10727.8, 9664.7, 12098.1, 10254.7, 8370.8, 10405.8],
    },
    "optimus": {
        "0.5": [1309.7, 3124.6, 1986.8, 2173.9, 1324.5, 1958.0, 5314.0, 1971.5],
        "1.0": [4087.1, 6913.9, 3944.0, 5967.8, 5656.2, 5301.9, 7290.9, 6293.8],
        "1.5": [7673.8, 6678.2, 5683.6, 7683.8, 7899.7, 7500.3, 6426.2, 8331.3],
        "2.0": [10806.6, 8515.4, 8363.4, 10312.9, 11830.0, 9767.3, 6998.0, 11174.8],
    },
}


def load_and_index(workload: str) -> tuple[str, int]:
    """``pollux@1.5/3`` -> ("1.5", 3); ``pollux/3`` -> ("1.0", 3)."""
    head, k = workload.split("/")
    return (head.split("@")[1] if "@" in head else "1.0"), int(k)


def table(rows: list[dict[str, str]]) -> str:
    by: dict[tuple[str, str], dict[int, float]] = {}
    for r in rows:
        load, k = load_and_index(r["workload"])
        by.setdefault((r["policy"], load), {})[k] = float(r["avg_jct_s"])
    out = ["| load | policy | workloads | ours: mean avg JCT (s) | published, same workloads (s) | ours / published |"
           " published, all 8 (s) |", "|---|---|---|---|---|---|---|"]
    for load in ("0.5", "1.0", "1.5", "2.0"):
        for pol in ("pollux", "tiresias"):
            got = by.get((pol, load))
            if not got:
                continue
            ks = sorted(got)
            ours = statistics.mean(got[k] for k in ks)
            pub = statistics.mean(PUBLISHED[pol][load][k - 1] for k in ks)
            out.append(f"| {load} | {pol} | {','.join(map(str, ks))} | {ours:.0f} | {pub:.0f} | {ours / pub:.3f} | "
                       f"{statistics.mean(PUBLISHED[pol][load]):.0f} |")
    out += ["", "| load | workloads with both | pollux below tiresias, ours | published, same workloads | published, all 8 |",
            "|---|---|---|---|---|"]
    for load in ("0.5", "1.0", "1.5", "2.0"):
        po, ti = by.get(("pollux", load), {}), by.get(("tiresias", load), {})
        ks = sorted(set(po) & set(ti))
        if not ks:
            continue
        ours = 1 - statistics.mean(po[k] for k in ks) / statistics.mean(ti[k] for k in ks)
        pub = 1 - (statistics.mean(PUBLISHED["pollux"][load][k - 1] for k in ks)
                   / statistics.mean(PUBLISHED["tiresias"][load][k - 1] for k in ks))
        pub8 = 1 - statistics.mean(PUBLISHED["pollux"][load]) / statistics.mean(PUBLISHED["tiresias"][load])
        out.append(f"| {load} | {','.join(map(str, ks))} | {100 * ours:.1f} % | {100 * pub:.1f} % | {100 * pub8:.1f} % |")
    return "\n".join(out)


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "benchmarks" / "sim_pollux_load.csv"
    with path.open(newline="") as f:
        print(table(list(csv.DictReader(f))))


if __name__ == "__main__":
    main()
