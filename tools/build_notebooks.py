"""Write every notebook in ``notebooks/`` from the Python cell lists below (outputs stripped).

The notebooks are reviewed as code here; the ``.ipynb`` files are this script's output, byte for byte (cell ids are
fixed, so rebuilding an unchanged list changes nothing). ``tests/test_notebooks.py`` executes each notebook in a
fresh kernel and checks that the files in the repository equal what this script generates.

    python tools/build_notebooks.py            # (re)write notebooks/*.ipynb
    python tools/build_notebooks.py --check    # exit 1 when a notebook differs from its cell list
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

import nbformat
from nbformat.notebooknode import NotebookNode

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"

Cell = tuple[str, str]  # ("md" | "code", source)


def md(text: str) -> Cell:
    return ("md", textwrap.dedent(text).strip("\n"))


def code(text: str) -> Cell:
    return ("code", textwrap.dedent(text).strip("\n"))


# ---------------------------------------------------------------------------------------------------------------
# 01 quickstart
# ---------------------------------------------------------------------------------------------------------------
QUICKSTART: list[Cell] = [
    md("""
    # schedopt quickstart: one Sia scheduling round on the 64-GPU heterogeneous cluster

    Sia (SOSP'23) picks, for every job, one *configuration* — (nodes, GPUs, GPU type) — maximising a fairness-weighted
    sum of goodputs, as an integer program. Here we build the 64-GPU cluster of the Sia paper, a dozen jobs whose
    goodput comes from models fitted to public profiles (`schedopt.zoo`), solve the ILP with HiGHS, place the
    allocation on nodes and GPUs, and check both with the independent checkers (plain Python over the spec, written
    without the model).
    """),
    code("""
    import time

    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.patches import Patch, Rectangle

    import schedopt
    from schedopt import sia, zoo

    cluster = sia.cluster(64)  # 6 nodes x 4 T4, 2 nodes x 8 A100, 3 nodes x 8 RTX 2080Ti
    print(f"{'GPU type':<10} {'nodes':>5} {'GPUs/node':>9} {'GPUs':>5}")
    for t in cluster.gpu_types:
        print(f"{t.name:<10} {t.nodes:>5} {t.gpus_per_node:>9} {t.total_gpus:>5}")
    print("total GPUs:", cluster.num_gpus, "| models in the zoo:", zoo.list_models())
    """),
    md("""
    ## A dozen jobs from the model zoo

    Each job names a zoo model; `zoo.load_model(name)` returns a `JobGoodputModel` (Pollux throughput x statistical
    efficiency per GPU type) which `SiaProblem` evaluates for every valid configuration. `max_profiled_gpus` drives
    Sia's growth rule (a job may use at most twice the GPUs it has been profiled on); BERT and DeepSpeech2 are kept
    off the 11 GB RTX 2080Ti, as the instance generator does. Two jobs already run, one of them non-preemptible.
    """),
    code("""
    specs = [  # (model, kind, max_profiled_gpus, extra Job fields)
        ("cifar10", "adaptive", 8, {}),
        ("cifar10", "adaptive", 2, {}),
        ("imagenet", "adaptive", 16, {"current": sia.Config(2, 16, "a100"), "age_s": 7200.0, "restarts": 1,
                                      "restart_cost_s": 90.0}),
        ("imagenet", "adaptive", 4, {}),
        ("bert", "adaptive", 4, {"allowed_types": ["t4", "a100"]}),
        ("bert", "strong", 2, {"allowed_types": ["t4", "a100"]}),
        ("deepspeech2", "adaptive", 4, {"allowed_types": ["t4", "a100"]}),
        ("yolov3", "adaptive", 8, {}),
        ("yolov3", "adaptive", 1, {}),
        ("ncf", "adaptive", 2, {"current": sia.Config(1, 2, "t4"), "preemptible": False, "age_s": 600.0}),
        ("ncf", "strong", 1, {}),
        ("cifar10", "rigid", 0, {"rigid_gpus": 4}),
    ]
    jobs, goodput = [], {}
    for k, (name, kind, prof, extra) in enumerate(specs):
        jid = f"{name}-{k}"
        jobs.append(sia.Job(jid, kind=kind, max_profiled_gpus=prof, **extra))
        goodput[jid] = zoo.load_model(name)

    problem = sia.SiaProblem(cluster, jobs, goodput, p=-0.5, lam=1.1)
    model = problem.build()
    print(problem)
    print(model.summary())
    """),
    md("""
    ## Solve, then place

    `problem.solve(backend, place=True)` builds the model, solves it and maps every chosen configuration onto node
    ids and GPU indices (partial-node configurations take aligned blocks, multi-node ones whole nodes).
    """),
    code("""
    t0 = time.perf_counter()
    sol = problem.solve("highs", place=True)
    print(f"termination: {sol.result.termination}  objective: {sol.objective:.6f}  ({time.perf_counter() - t0:.2f} s)")
    print("timings:", {k: round(v, 4) for k, v in sol.result.timings.as_dict().items()})

    pairs = problem.valid_pairs()
    chosen_goodput = dict(zip((problem.jobs[j].id for j in pairs.job[sol.chosen_columns]), pairs.goodput[sol.chosen_columns]))
    rows = sol.rows()
    print()
    print(f"{'job':<15} {'kind':<9} {'config':<14} {'GPUs':>4} {'goodput':>9}  {'current':<12} nodes")
    for r in rows:
        g = chosen_goodput.get(r["job"])
        gs = f"{g:9.2f}" if g is not None else f"{'-':>9}"
        print(f"{r['job']:<15} {r['kind']:<9} {r['config']:<14} {r['gpus']:>4} {gs}  {r['current']:<12} {r['nodes']}")
    """),
    code("""
    alloc_problems = sia.check_allocation(problem, sol.allocation)
    place_problems = sia.check_placement(cluster, sol.allocation, sol.placement)
    print("check_allocation:", alloc_problems or "OK")
    print("check_placement: ", place_problems or "OK")
    print("objective recomputed by the checker:", round(sia.objective_value(problem, sol.allocation), 6))

    # every installed backend able to solve the model reaches the same optimum
    others = {b: problem.solve(b).objective for b in ("scipy", "mckp") if b in schedopt.available_backends()}
    print("other backends:", {b: round(v, 6) for b, v in others.items()})
    """),
    md("""
    ## A picture of the nodes

    One row per node, one cell per GPU, colored by the job that holds it (white: free).
    """),
    code("""
    node_rows = [(t.name, f"{t.name}-{k}", t.gpus_per_node) for t in cluster.gpu_types for k in range(t.nodes)]
    width = int(max(cluster.gpus_per_node))
    placed = [j.id for j in jobs if sol.allocation[j.id] is not None]
    colors = {jid: plt.get_cmap("tab20")(i % 20) for i, jid in enumerate(placed)}
    owner = {}
    for jid, slots in sol.placement.items():
        for node, gpus in slots:
            for g in gpus:
                owner[(node, g)] = jid

    fig, ax = plt.subplots(figsize=(10, 0.45 * len(node_rows) + 1.2))
    for row, (_, node, n) in enumerate(node_rows):
        y = len(node_rows) - 1 - row
        for g in range(n):
            jid = owner.get((node, g))
            ax.add_patch(Rectangle((g, y), 0.95, 0.9, facecolor=colors[jid] if jid else "white", edgecolor="0.3"))
    ax.set_xlim(0, width)
    ax.set_ylim(0, len(node_rows))
    ax.set_yticks(np.arange(len(node_rows)) + 0.45, [r[1] for r in node_rows][::-1])
    ax.set_xticks(np.arange(width) + 0.475, range(width))
    ax.set_xlabel("GPU index")
    ax.set_title(f"Sia allocation on {cluster.num_gpus} GPUs ({len(placed)} of {len(jobs)} jobs placed)")
    ax.legend(handles=[Patch(facecolor=colors[j], label=f"{j} ({sol.allocation[j]})") for j in placed],
              loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
    fig.tight_layout()
    fig.canvas.draw()  # render now, also under the non-interactive Agg backend
    plt.show()
    """),
    md("## Claims checked"),
    code("""
    assert sol.is_optimal, sol.result.termination
    assert alloc_problems == [] and place_problems == []
    assert abs(sia.objective_value(problem, sol.allocation) - sol.objective) <= 1e-6 * max(1.0, abs(sol.objective))
    assert all(abs(v - sol.objective) <= 1e-6 * max(1.0, abs(sol.objective)) for v in others.values()), others
    assert sol.allocation["ncf-9"] == sia.Config(1, 2, "t4")  # the non-preemptible job keeps its configuration
    assert len(owner) == sum(c.n_gpus for c in sol.allocation.values() if c is not None)  # no GPU used twice
    assert len(placed) >= 10 and not sol.placement.unplaced
    assert len(ax.patches) == cluster.num_gpus  # the picture has one cell per GPU
    print("all claims hold")
    """),
]

# ---------------------------------------------------------------------------------------------------------------
# 02 comparing solvers
# ---------------------------------------------------------------------------------------------------------------
COMPARING: list[Cell] = [
    md("""
    # Comparing solvers on Sia's configuration ILP

    `schedopt.bench.run` runs every (size, seed, backend) in its own fresh process with a wall-clock guard and times
    each phase apart (goodput evaluation, model build, hand-off to the solver, solve, decode, placement). Here: a small
    sweep at 64 and 128 GPUs, one seed, normal load, with HiGHS, SciPy (`milp`, which is HiGHS behind SciPy's API) and
    the `mckp` backend, where installed. Sizes are kept small so the notebook runs in the test suite; the same call
    with `sizes="default"` produces the README's table.
    """),
    code("""
    import math
    import tempfile
    from pathlib import Path

    import matplotlib.pyplot as plt

    import schedopt
    from schedopt import bench

    wanted = ["highs", "scipy", "mckp"]
    backends = [b for b in wanted if b in schedopt.available_backends()]
    print("backends:", backends, "| not installed here:", sorted(set(wanted) - set(backends)))
    records = bench.run("sia", sizes=[64, 128], seeds=[0], loads=["normal"], backends=backends, time_limit=30,
                        progress=False)
    print(len(records), "runs on", records[0].machine_cpu, f"({records[0].machine_cores} cores), Python", records[0].python)
    """),
    code("""
    print(f"{'GPUs':>5} {'jobs':>5} {'backend':<8} {'termination':<12} {'objective':>12} {'gap':>8} "
          f"{'build':>7} {'solve':>7} {'path':>7} (s)")
    for r in sorted(records, key=lambda r: (r.gpus, r.backend)):
        print(f"{r.gpus:>5} {r.jobs:>5} {r.backend:<8} {r.termination:<12} {r.objective:>12.6f} {r.gap:>8.1e} "
              f"{r.t_build:>7.4f} {r.t_solve:>7.4f} {r.t_path:>7.4f}")

    print()
    for row in bench.summarize(records):
        ratio = "-" if row["ratio"] is None else f"{row['ratio']:.2f}"
        print(f"{row['gpus']:>5} GPUs  {row['backend']:<8} median path {row['path_median']:.4f} s  x{ratio} vs reference")
    """),
    md("""
    ## Time versus GPUs, and gap versus time

    Straight from the records. The gap is the solver's own relative gap between its incumbent and its bound (0 when
    proven optimal); a symmetric-log axis keeps zero gaps visible.
    """),
    code("""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for b in backends:
        rs = sorted((r for r in records if r.backend == b), key=lambda r: r.gpus)
        ax1.plot([r.gpus for r in rs], [r.t_path for r in rs], marker="o", label=b)
        ax2.scatter([r.t_path for r in rs], [r.gap for r in rs], label=b, s=40)
    ax1.set_xscale("log", base=2)
    ax1.set_yscale("log")
    ax1.set_xlabel("GPUs")
    ax1.set_ylabel("whole path (s): goodput + build + solve + decode + place")
    ax1.set_title("time vs GPUs")
    ax1.legend()
    ax2.set_xscale("log")
    ax2.set_yscale("symlog", linthresh=1e-6)
    ax2.set_xlabel("whole path (s)")
    ax2.set_ylabel("relative gap")
    ax2.set_title("gap vs time")
    ax2.legend()
    fig.tight_layout()
    fig.canvas.draw()  # render now, also under the non-interactive Agg backend
    plt.show()
    """),
    md("`bench.report` writes the same comparison as Markdown (what the README's table comes from; `figures=True`, the default, adds PNG versions of the plots above):"),
    code("""
    out = Path(tempfile.mkdtemp(prefix="schedopt-bench-"))
    md_path = bench.report(records, out, figures=False)
    print("\\n".join(md_path.read_text().splitlines()[:25]))
    """),
    md("## Claims checked"),
    code("""
    assert {r.backend for r in records} == set(backends) and {"highs", "scipy"} <= set(backends)
    assert {r.gpus for r in records} == {64, 128}
    assert all(r.termination == "optimal" for r in records), [(r.backend, r.gpus, r.termination) for r in records]
    for gpus in (64, 128):
        objs = [r.objective for r in records if r.gpus == gpus]
        # every backend solves to the sweep's relative gap (1e-4): the optima agree within it
        assert max(objs) - min(objs) <= 1e-4 * max(1.0, max(abs(o) for o in objs)), (gpus, objs)
    assert all(r.t_path is not None and r.t_path > 0 and math.isfinite(r.t_path) for r in records)
    assert md_path.exists() and "| 128 |" in md_path.read_text()
    assert len(ax1.lines) == len(backends) and len(ax2.collections) == len(backends)
    print("all claims hold")
    """),
]

# ---------------------------------------------------------------------------------------------------------------
# 03 Synergy
# ---------------------------------------------------------------------------------------------------------------
SYNERGY: list[Cell] = [
    md("""
    # Synergy: CPU and memory beyond GPU-proportional shares

    Synergy (OSDI'22) gives each job CPUs and memory according to its measured sensitivity instead of a
    GPU-proportional share. Four methods on one trace — 4 servers of 8 GPUs, 24 CPUs and 500 GB each:

    * **proportional**: every job gets its GPU-proportional CPU and memory (the baseline);
    * **TUNE**: the paper's greedy heuristic;
    * **OPT**: the paper's LP route (P1 on the pooled cluster, a packing LP, rounding, P1 per server);
    * **joint**: an exact MILP deciding placement and CPU / memory together (short time limit).

    Every allocation goes through `synergy.check_allocation`, which verifies it from the data alone.
    """),
    code("""
    import time

    import matplotlib.pyplot as plt
    import numpy as np

    from schedopt import synergy

    inst = synergy.generate_instance(32, seed=6)
    servers, jobs = inst.servers, inst.jobs
    print(len(servers), "servers:", servers[0])
    print(len(jobs), "jobs:", ", ".join(f"{j.id} ({j.gpus} GPU)" for j in jobs))
    """),
    code("""
    methods = {
        "proportional": lambda: synergy.proportional(servers, jobs),
        "TUNE": lambda: synergy.synergy_tune(servers, jobs),
        "OPT": lambda: synergy.synergy_opt(servers, jobs, backend="highs"),
        "joint": lambda: synergy.solve_joint(servers, jobs, backend="highs", time_limit=10),
    }
    allocs, seconds, usage = {}, {}, {}
    for name, run in methods.items():
        t0 = time.perf_counter()
        allocs[name] = run()
        seconds[name] = time.perf_counter() - t0
        usage[name] = synergy.check_allocation(servers, jobs, allocs[name])  # raises AllocationCheckError if wrong

    print(f"{'method':<13} {'total W':>8} {'bound':>8} {'termination':<22} {'unplaced':>8} {'time (s)':>8}  check")
    for name, a in allocs.items():
        bound = "-" if a.lp_bound is None else f"{a.lp_bound:.3f}"
        print(f"{name:<13} {a.total_throughput:8.3f} {bound:>8} {a.termination:<22} {len(a.unplaced):>8} "
              f"{seconds[name]:8.3f}  OK")
    """),
    md("Per-server use of the joint allocation (GPUs, CPUs, GB) against capacity:"),
    code("""
    used, cap = usage["joint"]["used"], usage["joint"]["capacity"]
    for i, (u, c) in enumerate(zip(used, cap)):
        print(f"server {i}: GPUs {u[0]:.0f}/{c[0]:.0f}  CPUs {u[1]:.1f}/{c[1]:.0f}  GB {u[2]:.1f}/{c[2]:.0f}")
    print()
    for row in allocs["joint"].rows():
        print(row)
    """),
    md("## Throughput per job"),
    code("""
    ids = [j.id for j in jobs]
    fig, ax = plt.subplots(figsize=(12, 4))
    width = 0.2
    for k, (name, a) in enumerate(allocs.items()):
        ax.bar(np.arange(len(ids)) + (k - 1.5) * width, [a.per_job[i].throughput for i in ids], width, label=name)
    ax.set_xticks(np.arange(len(ids)), ids, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("normalised per-GPU throughput W")
    ax.set_title("Synergy: throughput per job under each method")
    ax.legend()
    fig.tight_layout()
    fig.canvas.draw()  # render now, also under the non-interactive Agg backend
    plt.show()
    """),
    md("## Claims checked"),
    code("""
    tot = {k: a.total_throughput for k, a in allocs.items()}
    tol = 1e-6
    assert allocs["joint"].optimal, allocs["joint"].termination
    # the exact joint MILP is at least as good as every method (all are feasible points of it)
    assert all(tot["joint"] >= v - tol for v in tot.values()), tot
    # OPT's pooled P1 optimum bounds every integral placement, the joint optimum included
    assert allocs["OPT"].lp_bound >= tot["joint"] - tol
    # Synergy never gives a job less than its GPU-proportional throughput (check_allocation enforces it too)
    for a in allocs.values():
        assert all(ja.throughput >= ja.proportional_throughput - tol for ja in a.per_job.values() if ja.placed)
    # on this trace the resource-aware methods beat the proportional baseline, and the order is strict
    assert tot["proportional"] < tot["TUNE"] < tot["OPT"] < tot["joint"], tot
    assert len(ax.patches) == len(allocs) * len(jobs)  # one bar per (method, job)
    print("all claims hold:", {k: round(v, 3) for k, v in tot.items()})
    """),
]

# ---------------------------------------------------------------------------------------------------------------
# 04 HeterPS
# ---------------------------------------------------------------------------------------------------------------
HETERPS: list[Cell] = [
    md("""
    # HeterPS: cost versus throughput limit for a recommendation model

    HeterPS (FGCS 2023) schedules the layers of a DNN onto resource types (CPU, GPU), groups consecutive layers of
    one type into pipeline stages, and sizes each stage, minimising the monetary cost of training under a throughput
    floor and per-type unit limits. `CTRDNN` is a click-through-rate recommendation model (embedding layers that suit
    CPUs, dense layers that suit GPUs).

    The exact solver (`solve_exact`, a dynamic program over stages) traces the optimal cost for every throughput
    floor; the paper's RL scheduler (a numpy LSTM trained with REINFORCE) and a greedy layer-flipping heuristic are
    compared against it, and every plan is re-costed by the independent cost model `evaluate`.
    """),
    code("""
    import time

    import matplotlib.pyplot as plt
    import numpy as np

    from schedopt import heterps

    problem = heterps.generate("ctrdnn", seed=1)
    print(problem.num_layers, "layers:", " ".join(layer.kind for layer in problem.layers))
    print("types:", [(t.name, f"{t.limit} units", f"{t.price_per_hour} $/h") for t in problem.types])
    peak, peak_plan = heterps.max_throughput(problem)
    print(f"highest throughput stage by stage: {peak:.0f} samples/s with plan {peak_plan}")
    """),
    code("""
    limits = np.round(np.linspace(0.1, 1.0, 10) * peak, 1)
    t0 = time.perf_counter()
    front = heterps.frontier(problem, limits)
    print(f"frontier of {len(limits)} limits in {time.perf_counter() - t0:.2f} s")

    rows = []
    for lim, ok, blame in zip(limits, front.feasible, front.blame):
        if not ok:
            rows.append((lim, None, None, None, blame))
            continue
        q = problem.with_limit(float(lim))
        ex = heterps.solve_exact(q)
        rl = heterps.solve_rl(q, seed=0, iterations=40)
        gr = heterps.solve_greedy(q)
        rows.append((lim, ex, rl, gr, None))

    def cost(p):
        return p.cost if p is not None and p.feasible else float("nan")

    print(f"{'limit':>9} {'exact $':>9} {'RL $':>9} {'greedy $':>9}  exact plan (stages: type x units)")
    for lim, ex, rl, gr, blame in rows:
        if ex is None:
            print(f"{lim:9.0f} {'infeasible':>9}  (blamed: {blame})")
            continue
        stages = " | ".join(f"{t}x{k}" for (_, _, t), k in zip(ex.stages, ex.k))
        print(f"{lim:9.0f} {ex.cost:9.4f} {cost(rl):9.4f} {cost(gr):9.4f}  {stages}")
    """),
    md("## The frontier, with RL and greedy on top"),
    code("""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    heterps.plot_frontier(front, ax=ax, label="exact (DP)")
    feas = [(lim, rl, gr) for lim, ex, rl, gr, _ in rows if ex is not None]
    ax.scatter([f[0] for f in feas], [cost(f[1]) for f in feas], marker="x", s=60, label="RL (LSTM + REINFORCE)", zorder=3)
    ax.scatter([f[0] for f in feas], [cost(f[2]) for f in feas], marker="+", s=90, label="greedy", zorder=3)
    ax.legend()
    fig.tight_layout()
    fig.canvas.draw()  # render now, also under the non-interactive Agg backend
    plt.show()
    """),
    md("Every plan re-costed by the cost model, which knows nothing of the solvers:"),
    code("""
    recost = []
    for lim, ex, rl, gr, _ in rows:
        if ex is None:
            continue
        q = problem.with_limit(float(lim))
        for p in (ex, rl, gr):
            if p.feasible:
                e = heterps.evaluate(q, p.plan, p.k)
                recost.append((p.method, lim, p.cost, e.cost, e.feasible, e.throughput))
    worst = max(abs(c - e) / max(1.0, abs(e)) for _, _, c, e, _, _ in recost)
    print(f"{len(recost)} plans re-costed; largest relative difference {worst:.1e}")
    """),
    md("## Claims checked"),
    code("""
    ok = front.feasible
    assert ok.sum() >= 8, front.feasible
    # a higher floor never costs less: the frontier is non-decreasing
    assert np.all(np.diff(front.cost[ok]) >= -1e-9), front.cost
    # every exact point meets its floor
    assert np.all(front.throughput[ok] >= limits[ok] * (1 - 1e-9))
    for lim, ex, rl, gr, _ in rows:
        if ex is None:
            continue
        assert ex.status == "optimal" and abs(ex.cost - front.cost[list(limits).index(lim)]) <= 1e-9
        for h in (rl, gr):  # the heuristics never beat the exact optimum
            assert not h.feasible or h.cost >= ex.cost * (1 - 1e-9), (lim, h.method, h.cost, ex.cost)
    assert all(feasible and tp >= lim * (1 - 1e-9) for _, lim, _, _, feasible, tp in recost)
    assert worst <= 1e-9
    assert len(ax.lines) == 1 and len(ax.collections) == 2  # the exact frontier, RL and greedy
    print("all claims hold")
    """),
]

# ---------------------------------------------------------------------------------------------------------------
# 05 HiveD
# ---------------------------------------------------------------------------------------------------------------
HIVED: list[Cell] = [
    md("""
    # HiveD: cells, virtual clusters, the buddy allocator and bad hardware

    HiveD (OSDI'20) models a cluster as a forest of multi-level *cells* (rack > node > socket > PCIe switch > GPU) and
    gives each tenant a *virtual cluster* (VC): a quota of cells per level. An assignment of VCs is *valid* when all
    their cells can be mapped one-to-one onto disjoint physical cells of the same level; the buddy allocator then
    binds virtual cells to physical ones lazily, at run time. We load the example config shipped with schedopt (in
    hivedscheduler's YAML format), check validity two ways, push a request sequence through the allocator, and mark
    a node bad.
    """),
    code("""
    from importlib import resources

    from schedopt import hived

    path = resources.files("schedopt.hived").joinpath("examples/example.yaml")
    cluster, vcs = hived.load_hived_config(str(path))
    print(cluster)
    for chain in cluster.chain_names:
        ch = cluster.chains[chain]
        print(f"chain {chain}: levels {ch.levels}, cells per level:",
              {lvl: cluster.num_cells(chain, lvl) for lvl in range(1, ch.levels + 1)})
    for vc in vcs:
        print(f"VC {vc.name}: {vc.cells}" + (f", pinned {list(vc.pinned)}" if vc.pinned else ""))
    """),
    md("""
    ## VC validity: HiveD's counting rule and the exact mapping model

    The counting rule walks each chain from the top level down, counting free cells after every VC's demand; the
    exact check solves the cell-mapping integer program (HiGHS) and returns an explicit mapping.
    """),
    code("""
    counting = hived.check_vc_assignment(cluster, vcs, "counting")
    exact = hived.check_vc_assignment(cluster, vcs, "exact", backend="highs")
    print("counting:", counting, "| left per level:", counting.left)
    print("exact:   ", exact)
    for vc, cells in exact.mapping.items():
        print(f"  {vc:<7} -> {cells}")
    extra_nodes = hived.max_extra_quota(cluster, vcs, "V100-RACK", "V100-NODE")
    extra_gpus = hived.max_extra_quota(cluster, vcs, "V100-RACK", "V100")
    print(f"a new VC could still get {extra_nodes} more V100 node(s), or {extra_gpus} more single V100 GPUs")
    """),
    md("""
    ## The buddy allocator through a request sequence

    Guaranteed requests use their VC's quota; virtual cells bind to physical ones on first use, splitting the lowest
    free higher-level cell (buddies go on the free lists). Opportunistic requests take free cells outside the quota.
    """),
    code("""
    alloc = hived.BuddyAllocator(cluster, vcs)
    requests = [
        hived.Request("team-z", "V100", 1, name="z-1gpu"),
        hived.Request("team-z", "V100", 1, name="z-1gpu-b"),
        hived.Request("team-y", "V100-RACK", 8, pods=2, name="y-2x8"),
        hived.Request("team-x", "K80-NODE", 4, name="x-k80"),
        hived.Request("team-z", "V100", 1, pods=2, name="z-2x1 (over quota)"),
        hived.Request("team-y", "V100-RACK", 4, priority="opportunistic", name="y-opp-4"),
    ]
    outcomes = []
    for req in requests:
        a = alloc.allocate(req)
        outcomes.append(a)
        where = ", ".join(f"{p.node}:{list(p.gpus)}" for p in a.pods) if a.ok else f"waits ({a.reason}): {a.message}"
        print(f"{req.name:<20} {req.kind:<13} -> {where}")
    print()
    print("bound cells:", alloc.bound_cells())
    print("free lists: ", {f"{c}/L{k}": v for (c, k), v in alloc.free_lists().items() if v})
    print("invariants: ", alloc.check_invariants() or "OK")
    """),
    md("""
    ## What a bad node does

    Marking a node bad removes its cells, and every cell containing it, from the usable hardware. team-y's quota is a
    whole V100 rack; with a node of each rack down (rack-a already holds team-x's pinned node), no healthy rack is
    left for it, and both checks say so, naming the VC. Marking the node healthy again restores the guarantee.
    """),
    code("""
    alloc.release(outcomes[0].handle)  # jobs finish while hardware fails
    report = alloc.mark_bad("v100-b2")
    print("after mark_bad(v100-b2):", report)
    print("exact check with v100-b2 bad:", hived.check_vc_assignment(cluster, vcs, "exact", bad_nodes=["v100-b2"]))
    more = alloc.allocate(hived.Request("team-y", "V100-RACK", 8, pods=2, name="y-2x8-more"))
    print("team-y asks for two more 8-GPU pods:",
          ", ".join(f"{p.node}" for p in more.pods) if more.ok else f"waits ({more.reason}): {more.message}")
    print("invariants:", alloc.check_invariants() or "OK")
    healed = alloc.mark_healthy("v100-b2")
    print("after mark_healthy(v100-b2):", healed)
    """),
    md("## Claims checked"),
    code("""
    assert counting.valid and exact.valid
    assert [a.ok for a in outcomes] == [True, True, True, True, False, True]
    assert outcomes[4].reason == "vc_quota"
    assert all(p.node.startswith("v100-b") for p in outcomes[2].pods)  # team-y's rack quota bound to one rack
    assert outcomes[0].pods[0].node == outcomes[1].pods[0].node  # buddies: the second GPU is the first's buddy
    assert not report.valid and report.vc == "team-y" and report.cause == "bad_hardware"
    assert not hived.check_vc_assignment(cluster, vcs, "exact", bad_nodes=["v100-b2"]).valid
    assert all(p.node != "v100-b2" for p in more.pods)  # nothing is ever placed on the bad node
    assert healed.valid
    assert alloc.check_invariants() == []
    print("all claims hold")
    """),
]

# ---------------------------------------------------------------------------------------------------------------
# 06 property testing
# ---------------------------------------------------------------------------------------------------------------
PROPERTY: list[Cell] = [
    md("""
    # Property-testing your own allocation policy

    schedopt ships hypothesis strategies that build valid specs directly (`schedopt.sia.strategies`) and checkers
    that verify allocations and placements from the spec alone (`check_allocation`, `check_placement`). Together
    they test *any* policy, not just the ILP. Below: a small greedy Sia policy written from scratch, tested against
    random clusters and jobs, compared with the ILP optimum, and a deliberately broken variant that hypothesis
    catches with a minimal failing example.
    """),
    code("""
    import numpy as np
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from schedopt import sia
    from schedopt.sia import strategies as sst
    from schedopt.sia.placement import Placement
    """),
    md("""
    ## A greedy policy: best goodput per GPU first, with its own first-fit placer

    The policy reads the valid (job, configuration) pairs and their goodput from `problem.valid_pairs()` (the
    configuration-pruning layer), ranks them by goodput per GPU, and gives each job the first configuration it can
    actually place on free GPUs: a single-node configuration of `s` GPUs takes an aligned block inside a
    power-of-two virtual node (a 6-GPU node is a 4 and a 2), a multi-node one takes whole free nodes. It returns the
    allocation and the placement, so both checkers apply.
    """),
    code("""
    def virtual_blocks(gpus_per_node, size):
        \"\"\"Aligned GPU blocks of `size` inside the node's power-of-two virtual nodes.\"\"\"
        out, off = [], 0
        for b in sia.virtual_bins(gpus_per_node):
            if b >= size:
                out += [tuple(range(o, o + size)) for o in range(off, off + b, size)]
            off += b
        return out


    def greedy_policy(problem, respect_capacity=True):
        cl = problem.cluster
        free = {f"{t.name}-{k}": np.ones(t.gpus_per_node, bool) for t in cl.gpu_types for k in range(t.nodes)}
        left = dict(zip(cl.type_names, problem.available.tolist()))
        pairs = problem.valid_pairs()
        configs = problem.configs.configs
        order = np.argsort(-pairs.goodput / problem.configs.n_gpus[pairs.config], kind="stable")
        alloc = {j.id: None for j in problem.jobs}
        slots = {}
        for k in order.tolist():
            job = problem.jobs[pairs.job[k]]
            c = configs[pairs.config[k]]
            if alloc[job.id] is not None or (respect_capacity and c.n_gpus > left[c.gpu_type]):
                continue
            t = cl[c.gpu_type]
            nodes = [f"{t.name}-{i}" for i in range(t.nodes)]
            if c.n_nodes == 1:
                spot = next(((n, blk) for n in nodes for blk in virtual_blocks(t.gpus_per_node, c.n_gpus)
                             if not respect_capacity or free[n][list(blk)].all()), None)
                got = None if spot is None else [spot]
            else:
                whole = [n for n in nodes if not respect_capacity or free[n].all()][: c.n_nodes]
                got = [(n, tuple(range(t.gpus_per_node))) for n in whole] if len(whole) == c.n_nodes else None
            if got is None:
                continue
            for n, blk in got:
                free[n][list(blk)] = False
            left[c.gpu_type] -= c.n_gpus
            alloc[job.id], slots[job.id] = c, got
        placement = Placement(slots, {j: c for j, c in alloc.items() if c is not None})
        return alloc, placement


    problem = sia.generate_instance(64, seed=3, jobs=16).problem()
    alloc, placement = greedy_policy(problem)
    for jid, c in alloc.items():
        print(f"{jid:<4} {str(c):<14} {placement.get(jid, '-')}")
    print("check_allocation:", sia.check_allocation(problem, alloc) or "OK")
    print("check_placement: ", sia.check_placement(problem.cluster, alloc, placement) or "OK")
    """),
    md("""
    ## The properties, run by hypothesis inside the notebook

    For random small problems from `sst.problems()` (1-2 GPU types, nodes of 1-8 GPUs, up to 5 jobs of every kind,
    random goodput matrices with zeros): the greedy allocation passes `check_allocation`, its placement passes
    `check_placement`, and its objective is never better than the ILP optimum (the objective is maximised for
    `p > 0` and minimised for `p < 0`). A hypothesis test is a plain function: call it.
    """),
    code("""
    def better_or_equal(problem, a, b):
        \"\"\"a is at least as good as b in the model's sense.\"\"\"
        tol = 1e-6 * max(1.0, abs(a), abs(b))
        return a >= b - tol if problem.p > 0 else a <= b + tol


    @settings(max_examples=60, deadline=None, derandomize=True, database=None)
    @given(sst.problems(max_jobs=5))
    def test_greedy_policy(problem):
        alloc, placement = greedy_policy(problem)
        assert sia.check_allocation(problem, alloc) == []
        assert sia.check_placement(problem.cluster, alloc, placement) == []
        best = problem.solve("highs")
        assert best.is_optimal
        assert better_or_equal(problem, best.objective, sia.objective_value(problem, alloc))


    test_greedy_policy()
    print("greedy policy: 60 random problems, every property holds")
    """),
    md("""
    ## A broken policy is caught

    The same policy with capacity tracking switched off: every job takes its best configuration whether or not the
    GPUs are free. Hypothesis finds a counterexample and shrinks it to a minimal one; we print it.
    """),
    code("""
    @settings(max_examples=200, deadline=None, derandomize=True, database=None, print_blob=False)
    @given(sst.problems(max_jobs=5))
    def test_broken_policy(problem):
        alloc, placement = greedy_policy(problem, respect_capacity=False)
        problems_found = sia.check_allocation(problem, alloc) + sia.check_placement(problem.cluster, alloc, placement)
        assert problems_found == [], problems_found


    caught = None
    try:
        test_broken_policy()
    except AssertionError as exc:
        caught = exc
    print("falsified:", caught is not None)
    print("\\n".join(getattr(caught, "__notes__", [])))  # hypothesis's report: the shrunk falsifying example
    print("AssertionError:", caught)
    """),
    code("""
    # the same check on the minimal kind of case by hand: two 1-GPU jobs on a one-GPU cluster
    tiny = sia.SiaProblem(sia.Cluster((sia.GpuType("a", 1, 1),)), [sia.Job("j0"), sia.Job("j1")], np.ones((2, 1)), p=1.0)
    bad_alloc, bad_place = greedy_policy(tiny, respect_capacity=False)
    bad_report = sia.check_allocation(tiny, bad_alloc) + sia.check_placement(tiny.cluster, bad_alloc, bad_place)
    print(bad_alloc)
    print("\\n".join(bad_report))
    good_alloc, good_place = greedy_policy(tiny)
    print(good_alloc, sia.check_allocation(tiny, good_alloc) or "OK")
    """),
    md("## Claims checked"),
    code("""
    assert sia.check_allocation(problem, alloc) == [] and sia.check_placement(problem.cluster, alloc, placement) == []
    assert caught is not None, "the broken policy was not caught"
    # hypothesis reports the shrunk call ("Falsifying example: ..." before 6.16x, "Failing test case: ..." after)
    assert "test_broken_policy(" in "".join(getattr(caught, "__notes__", []))
    assert any("allocated" in m for m in bad_report) and any("used by jobs" in m for m in bad_report)
    assert sum(c is not None for c in good_alloc.values()) == 1
    print("all claims hold")
    """),
]

NOTEBOOKS: dict[str, list[Cell]] = {
    "01_quickstart.ipynb": QUICKSTART,
    "02_comparing_solvers.ipynb": COMPARING,
    "03_synergy.ipynb": SYNERGY,
    "04_heterps.ipynb": HETERPS,
    "05_hived.ipynb": HIVED,
    "06_property_testing.ipynb": PROPERTY,
}


def build(name: str) -> NotebookNode:
    """The notebook ``name`` (a key of :data:`NOTEBOOKS`), outputs stripped, cell ids fixed."""
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    stem = name.removesuffix(".ipynb")
    for k, (kind, src) in enumerate(NOTEBOOKS[name]):
        cell = nbformat.v4.new_markdown_cell(src) if kind == "md" else nbformat.v4.new_code_cell(src)
        cell.id = f"{stem[:2]}-{k:02d}"
        nb.cells.append(cell)
    nbformat.validate(nb)
    return nb


def render(name: str) -> str:
    """The exact text of ``notebooks/<name>``."""
    return nbformat.writes(build(name)) + "\n"


def write_all(out_dir: Path = NOTEBOOK_DIR) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in NOTEBOOKS:
        path = out_dir / name
        path.write_text(render(name), encoding="utf-8")
        paths.append(path)
    return paths


def stale(out_dir: Path = NOTEBOOK_DIR) -> list[str]:
    """Names of notebooks whose file differs from (or is missing for) its cell list."""
    return [n for n in NOTEBOOKS if not (out_dir / n).exists() or (out_dir / n).read_text(encoding="utf-8") != render(n)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when a notebook differs from its cell list")
    ap.add_argument("--out", type=Path, default=NOTEBOOK_DIR)
    args = ap.parse_args(argv)
    if args.check:
        bad = stale(args.out)
        for n in bad:
            print(f"stale: {n} (run python tools/build_notebooks.py)")
        return 1 if bad else 0
    for p in write_all(args.out):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
