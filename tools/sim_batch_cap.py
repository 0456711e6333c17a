"""The Sia policy's batch cap on one workload (issue 31's experiment, an option since issue 43): the mean JCT per
application under ``sia`` (the policy values each adaptive job up to the application's maximum batch) and
``sia:published`` (``batch_cap=request``: up to the workload's requested batch, as the published simulator's
``job.py`` ``get_speedup_fn``: ``max_batch_size = target_batch_size``), against the published simulator's run where
there is one (:mod:`schedopt.sim.published`).

Usage (repository root): ``python tools/sim_batch_cap.py [job model, default sia-measured] [workload, default
saturn/1]``.
"""

from __future__ import annotations

import sys
import time

from schedopt import sim
from schedopt.sim.published import comparison_table


def main(argv: list[str]) -> int:
    jm = argv[0] if argv else "sia-measured"
    wl = argv[1] if len(argv) > 1 else "saturn/1"
    res = {}
    for pol in ("sia", "sia:published"):
        t = time.process_time()
        res[pol] = r = sim.simulate(sim.cluster_preset("sia-64"), sim.load_workload(wl), sim.get_policy(pol),
                                    job_model=jm)
        print(f"{wl} {jm} {pol}: avg JCT {r.summary()['avg_jct_s']:.1f} s ({time.process_time() - t:.1f} s CPU)")
    print(comparison_table(wl, res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
