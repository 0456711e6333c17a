"""HeterPS's RL scheduler, one phase against the paper's two (issue 43 item 2): on each generated model (seed 0,
64 CPUs, 8 GPUs), ``solve_rl`` with the same number of updates (150 of 32 plans) split as pretraining on random plans
+ REINFORCE on the policy's own plans, several seeds side by side. Per run: the best plan's cost against the DP
optimum (``solve_exact``), the update at which that best was first evaluated, the distinct plans costed (all, and
new in phase 2: the plans the paper's second phase measures by running them), the best after phase 1, the best of
phase 2's first batch (what pretraining hands over), CPU seconds. Writes ``benchmarks/heterps_two_phase.csv`` and prints the per-(model, split) means.

    PYTHONPATH=. python tools/heterps_two_phase.py [--seeds 0-9] [--splits 0,30,75] [--out benchmarks/heterps_two_phase.csv]
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import time
from pathlib import Path

from schedopt import heterps

MODELS = ("ctrdnn", "matchnet", "2emb", "nce")
TOTAL = 150  # updates per run, both phases together (solve_rl's default single-phase length)
BATCH = 32


def _range(text: str) -> list[int]:
    a, _, b = text.partition("-")
    return list(range(int(a), int(b) + 1)) if b else [int(x) for x in text.split(",")]


def _first_batch(rs: list[dict[str, object]]) -> str:
    """Median gap of phase 2's first batch over the runs, and how many had no feasible plan in it."""
    got = [float(str(r["first_reinforce_batch_gap_pct"])) for r in rs if r["first_reinforce_batch_gap_pct"] != ""]
    none = len(rs) - len(got)
    return (f"{round(statistics.median(got), 2) + 0.0:.2f}" if got else "-") + (f" ({none} none feasible)" if none else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", default="0-9")
    ap.add_argument("--splits", default="0,30,75", help="phase-1 lengths (of the 150 updates)")
    ap.add_argument("--out", default="benchmarks/heterps_two_phase.csv")
    args = ap.parse_args(argv)
    seeds, splits = _range(args.seeds), [int(x) for x in args.splits.split(",")]
    rows = []
    for model in MODELS:
        p = heterps.generate(model, 0)
        opt = heterps.solve_exact(p).cost
        for pre in splits:
            for seed in seeds:
                t = time.process_time()
                r = heterps.solve_rl(p, seed=seed, iterations=TOTAL - pre, batch=BATCH, pretrain_iterations=pre)
                cpu = time.process_time() - t
                curve = r.info["best_cost_curve"]
                hit = next((i + 1 for i, c in enumerate(curve) if math.isfinite(c) and c <= r.cost * (1 + 1e-12)),
                           None) if r.has_solution else None
                rows.append({"model": model, "layers": p.num_layers, "pretrain": pre, "reinforce": TOTAL - pre,
                             "seed": seed, "optimum": f"{opt:.6g}",
                             "best_cost": f"{r.cost:.6g}" if r.has_solution else "",
                             "gap_pct": f"{100 * (r.cost / opt - 1):.3f}" if r.has_solution else "",
                             "best_after_pretrain_gap_pct": (f"{100 * (r.info['best_cost_pretrain'] / opt - 1):.3f}"
                                                             if math.isfinite(r.info["best_cost_pretrain"]) else ""),
                             "first_reinforce_batch_gap_pct": (f"{100 * (curve[pre] / opt - 1):.3f}"
                                                               if math.isfinite(curve[pre]) else ""),
                             "found_at_update": hit or "", "plans_evaluated": r.info["plan_evaluations"],
                             "plans_evaluated_reinforce": r.info["plan_evaluations"]
                             - r.info["plan_evaluations_pretrain"],
                             "cpu_s": f"{cpu:.2f}"})
                print(model, pre, seed, rows[-1]["gap_pct"], rows[-1]["plans_evaluated"], rows[-1]["cpu_s"], flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as f:
        f.write(f"# PYTHONPATH=. python tools/heterps_two_phase.py --seeds {args.seeds} --splits {args.splits}; "
                f"{TOTAL} updates of {BATCH} plans per run, generate(model, 0) (64 CPUs, 8 GPUs)\n")
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    print("model,pretrain+reinforce,mean gap %,worst gap %,optimal runs,mean plans evaluated (in phase 2),"
          "median gap % of phase 2's first batch,mean found at update")
    for model in MODELS:
        for pre in splits:
            rs = [r for r in rows if r["model"] == model and r["pretrain"] == pre]
            gaps = [float(r["gap_pct"]) for r in rs if r["gap_pct"] != ""]
            print(f"{model},{pre}+{TOTAL - pre},{statistics.mean(gaps):.2f},{max(gaps):.2f},"
                  f"{sum(g < 1e-6 for g in gaps)}/{len(rs)},{statistics.mean(r['plans_evaluated'] for r in rs):.0f} "
                  f"({statistics.mean(r['plans_evaluated_reinforce'] for r in rs):.0f}),"
                  f"{_first_batch(rs)},"
                  f"{statistics.mean(int(r['found_at_update']) for r in rs if r['found_at_update'] != ''):.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
