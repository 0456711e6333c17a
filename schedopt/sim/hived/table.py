"""The table of the HiveD guide (docs/guides/hived-closed-loop.md): quota-only vs HiveD on the same synthetic traces (``python -m schedopt.sim.hived.table``).

For every seed one trace of :func:`~schedopt.sim.hived.synthetic_trace` on a preset is replayed under each
policy; the table gives, summed or averaged over the seeds: sharing anomalies (jobs; hours), mean and p95
queueing delay of guaranteed jobs per tenant and overall, GPU utilization (guaranteed + opportunistic),
fragmentation, opportunistic jobs preempted (and GPU-hours lost), and, with ``--failures``, the jobs dropped by
failing nodes and the anomalies while a node was down.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .run import simulate_hived
from .workload import cluster_preset, synthetic_trace

__all__ = ["VARIANTS", "compare_table", "main"]

#: table row -> (scheduler, parameters)
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "hived:quota": ("quota", {}),
    "hived": ("hived", {}),
    "hived (packing=hived)": ("hived", {"packing": "hived"}),
}


def _seeds(text: str) -> list[int]:
    a, _, b = text.partition("-")
    return list(range(int(a), int(b) + 1)) if b else [int(a)]


def compare_table(cluster: str = "three-tenant", jobs: int = 1000, seeds: Sequence[int] = range(10), *,
                  load: float = 0.8, failures: int = 0, variants: Sequence[str] = ("hived:quota", "hived")) -> str:
    """The markdown table (module docstring)."""
    hc = cluster_preset(cluster)
    rows: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    for s in seeds:
        tr = synthetic_trace(hc, jobs, s, load=load, failures=failures)
        for v in variants:
            sch, params = VARIANTS[v]
            details = simulate_hived(tr, sch, **params).meta.details["hived"]
            if not isinstance(details, Mapping):  # the family always writes a mapping here
                raise TypeError(f"meta.details['hived'] is a {type(details).__name__}, not a mapping")
            rows[v].append(dict(details))
    tenants = list(hc.tenants)
    head = (["policy", "anomalies (jobs)", "anomaly h"]
            + [f"{t} delay mean / p95 (h)" for t in tenants]
            + ["all guaranteed delay mean (h)", "GPU util (guar. + opp.)", "fragmentation",
               "opp. preempted (GPU-h lost)"])
    if failures:
        head += ["jobs dropped by failures", "anomalies while a node is down (jobs)"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for v, ms in rows.items():
        def mean(f: Any, ms: list[dict[str, Any]] = ms) -> float:
            return float(np.mean([f(m) for m in ms]))
        cells = [f"`{v}`", f"{sum(m['anomaly_jobs'] for m in ms)}",
                 f"{sum(m['anomaly_seconds'] for m in ms) / 3600:.1f}"]
        for t in tenants:
            d = [m["tenants"][t]["guaranteed_delay_s"] for m in ms]
            cells.append(f"{np.mean([x['mean'] for x in d]) / 3600:.2f} / {np.mean([x['p95'] for x in d]) / 3600:.2f}")
        cells += [f"{mean(lambda m: m['guaranteed_delay_s']['mean']) / 3600:.2f}",
                  f"{mean(lambda m: m['guaranteed_utilization']):.3f} + {mean(lambda m: m['opportunistic_utilization']):.3f}",
                  f"{mean(lambda m: m['mean_fragmentation']):.3f}",
                  f"{sum(m['opportunistic_preempted'] for m in ms)} "
                  f"({sum(m['preempted_gpu_seconds'] for m in ms) / 3600:.0f})"]
        if failures:
            cells += [f"{sum(m['failure_kills'] for m in ms)}", f"{sum(m['anomaly_jobs_during_failures'] for m in ms)}"]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m schedopt.sim.hived.table``: the HiveD comparison table over seeds."""
    ap = argparse.ArgumentParser(prog="python -m schedopt.sim.hived.table", description=__doc__)
    ap.add_argument("--cluster", default="three-tenant")
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--seeds", default="0-9", help="a seed or a range a-b")
    ap.add_argument("--load", type=float, default=0.8)
    ap.add_argument("--failures", type=int, default=0)
    ap.add_argument("--variants", default="hived:quota,hived", help=f"comma-separated rows of {list(VARIANTS)}")
    a = ap.parse_args(argv)
    print(compare_table(a.cluster, a.jobs, _seeds(a.seeds), load=a.load, failures=a.failures,
                        variants=a.variants.split(",")))


if __name__ == "__main__":
    main()
