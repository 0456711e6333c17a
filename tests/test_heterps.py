"""HeterPS: cost model, exact DP / MILP / brute force agreement, baselines, infeasibility, instances."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schedopt
from schedopt import instances
from schedopt.errors import InfeasibleError, InputError
from schedopt.heterps import (
    HeterPSInfeasibleError,
    HeterPSProblem,
    Layer,
    LSTMPolicy,
    ResourceType,
    balance_units,
    build_milp,
    evaluate,
    frontier,
    generate,
    k1_lower_bound,
    kmin,
    plot_frontier,
    provision,
    provision_paper,
    solve_bruteforce,
    solve_exact,
    solve_genetic,
    solve_greedy,
    solve_rl,
    stages_of,
)
from schedopt.heterps.core import NO_PLAN_FOUND
from schedopt.heterps.strategies import problems
from schedopt.results import Limit, TerminationReason
from schedopt.testing import backends_for

ROOT = Path(__file__).resolve().parents[1]
CANONICAL = sorted((ROOT / "instances" / "heterps").glob("*.json"))


def two_layer(limit: float = 300.0, cpus: int = 8, gpus: int = 2) -> HeterPSProblem:
    e = Layer("e", "embedding", {"CPU": 0.2, "GPU": 0.1}, {"CPU": 0.1, "GPU": 0.4}, 0.5, 0.5)
    f = Layer("f", "fc", {"CPU": 1.0, "GPU": 0.05}, {"CPU": 0.0, "GPU": 0.02}, 0.8, 1.0)
    types = (ResourceType("CPU", 0.04, cpus), ResourceType("GPU", 2.42, gpus))
    return HeterPSProblem((e, f), types, batch_size=128, base_batch=64, samples=768000, epochs=1,
                          throughput_limit=limit)


def one_layer(limit: float = 1.5, cpus: int = 8, gpus: int = 2) -> HeterPSProblem:
    x = Layer("x", "fc", {"CPU": 1.0, "GPU": 0.25}, {"CPU": 0.0, "GPU": 0.0}, 0.5, 0.0)
    types = (ResourceType("CPU", 0.04, cpus), ResourceType("GPU", 2.42, gpus))
    return HeterPSProblem((x,), types, batch_size=1, base_batch=1, samples=5400, epochs=1, throughput_limit=limit)


def alternating(cpus: int) -> HeterPSProblem:
    """Every time is fully parallel (alpha = 1). A and C: 1 s on CPU, 10 s on GPU; B: 10 s on CPU, 1 s on GPU; 2 GPUs.
    A or C on GPU reaches at most 2 / 10 = 0.2/s and B on CPU at most cpus / 10 < 1.5/s, so the only plan is
    CPU, GPU, CPU, and each stage needs k = 2 for the floor 1.5/s (k = 1 gives 1/s), i.e. 4 CPUs in all."""
    a = Layer("A", "embedding", {"CPU": 1.0, "GPU": 10.0}, {"CPU": 0.0, "GPU": 0.0}, 1.0, 0.0)
    b = Layer("B", "fc", {"CPU": 10.0, "GPU": 1.0}, {"CPU": 0.0, "GPU": 0.0}, 1.0, 0.0)
    c = Layer("C", "embedding", {"CPU": 1.0, "GPU": 10.0}, {"CPU": 0.0, "GPU": 0.0}, 1.0, 0.0)
    types = (ResourceType("CPU", 0.04, cpus), ResourceType("GPU", 2.42, 2))
    return HeterPSProblem((a, b, c), types, 1, 1, 7200, 1, 1.5)


SOLVERS = {
    "dp": lambda p: solve_exact(p, "dp"),
    "milp": lambda p: solve_exact(p, "milp", "highs"),
    "brute": solve_bruteforce,
}


# ------------------------------------------------------------------------------------------ evaluate
def test_evaluate_hand_computed_two_stages():
    """Plan [CPU, GPU], k = [2, 1], B / B0 = 2:
    stage 1 (e on CPU): CT = 0.2 * 2 * (1 - 0.5 + 0.5 / 2) = 0.3, DT = 0.1 * 2 * 0.75 = 0.15, ET = 0.3,
    throughput 128 / 0.3 = 426.67; stage 2 (f on GPU): CT = 0.05 * 2 * 1 = 0.1, DT = 0.02 * 2 * 1 = 0.04, 1280/s.
    Pipeline 426.67/s; time = 768000 / 426.67 = 1800 s = 0.5 h; cost = 0.5 * (0.04 * 2 + 2.42 * 1) = 1.25 $."""
    ev = evaluate(two_layer(), ["CPU", "GPU"], [2, 1])
    assert ev.stage_throughputs == pytest.approx((128 / 0.3, 1280.0))
    assert ev.throughput == pytest.approx(128 / 0.3)
    assert ev.time_hours == pytest.approx(0.5)
    assert ev.cost == pytest.approx(1.25)
    assert ev.feasible and ev.violations == {}
    assert ev.units == {"CPU": 2, "GPU": 1}


def test_evaluate_hand_computed_merged_stage_and_violations():
    """[CPU, CPU] is one stage: OCT = 1.2, alpha = (0.5 * 0.2 + 0.8 * 1.0) / 1.2 = 0.75, k = 4:
    CT = 1.2 * 2 * (0.25 + 0.75 / 4) = 1.05; ODT = 0.1, beta = 0.5, DT = 0.1 * 2 * 0.625 = 0.125; ET = 1.05,
    throughput 128 / 1.05 = 121.90 < 300 (violates the floor by 178.10); time 768000 / 121.90 s = 1.75 h,
    cost 1.75 * 0.04 * 4 = 0.28 $.
    [GPU, GPU] with k = 3 > 2 GPUs: OCT = 0.15, alpha = 0.6, CT = 0.3 * 0.6 = 0.18; ODT = 0.42,
    beta = 0.22 / 0.42, DT = 0.84 * (1 - beta * 2 / 3) = 0.84 - 0.44 * 2 / 3 = 0.54667 -> 234.15/s (< 300)."""
    p = two_layer()
    ev = evaluate(p, ["CPU", "CPU"], [4])
    assert ev.throughput == pytest.approx(128 / 1.05)
    assert ev.time_hours == pytest.approx(1.75)
    assert ev.cost == pytest.approx(0.28)
    assert not ev.feasible and ev.violations == {"throughput_limit": pytest.approx(300 - 128 / 1.05)}
    ev = evaluate(p, ["GPU", "GPU"], [3])
    assert ev.throughput == pytest.approx(128 / (0.84 - 0.44 * 2 / 3))
    assert set(ev.violations) == {"throughput_limit", "type_limit[GPU]"}
    assert ev.violations["type_limit[GPU]"] == 1.0


def test_evaluate_rejects_bad_plans():
    p = two_layer()
    with pytest.raises(InputError, match=r"k="):
        evaluate(p, ["CPU", "GPU"], [1])
    with pytest.raises(InputError, match=r"plan\[1\]"):
        evaluate(p, ["CPU", "TPU"], [1, 1])
    with pytest.raises(InputError, match=r"k\[0\]"):
        evaluate(p, ["CPU", "GPU"], [0, 1])
    assert stages_of(["a", "a", "b", "a"]) == [(0, 2, "a"), (2, 3, "b"), (3, 4, "a")]


# ------------------------------------------------------------------------------------------ exact optima
@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_one_layer_hand_optimum(solver):
    """One layer, B = B0 = 1, floor 1.5/s, 5400 samples. CPU: throughput 1 / (0.5 + 0.5 / k) >= 1.5 needs k >= 3;
    k = 3 gives exactly 1.5/s, 1 h, cost 3 * 0.04 = 0.12 $ (k = 4: 1.6/s, 0.9375 h * 0.16 = 0.15 $). GPU:
    1 / (0.25 * (0.5 + 0.5 / k)) = 4/s with k = 1, 0.375 h * 2.42 = 0.9075 $. Optimum: CPU, k = 3, 0.12 $, the floor
    met with equality."""
    r = SOLVERS[solver](one_layer())
    assert r.plan == ("CPU",) and r.k == (3,)
    assert r.cost == pytest.approx(0.12) and r.throughput == pytest.approx(1.5)
    assert r.feasible and r.status == "optimal"
    # only 2 CPUs: CPU tops out at 1 / 0.75 = 1.33/s, so GPU with k = 1 (0.9075 $; k = 2: 5.33/s, 0.28125 h *
    # 4.84 = 1.36125 $) is optimal
    r = SOLVERS[solver](one_layer(cpus=2))
    assert r.plan == ("GPU",) and r.k == (1,) and r.cost == pytest.approx(0.9075)


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_throughput_floor_out_of_reach_is_named(solver):
    """Floor 5/s: CPU tops out at 1 / (0.5 + 0.5 / 8) = 1.78/s, the single GPU at 4/s: no plan reaches it."""
    with pytest.raises(HeterPSInfeasibleError) as exc:
        SOLVERS[solver](one_layer(limit=5.0, gpus=1))
    assert exc.value.family == "throughput_limit"
    assert "throughput_limit=5" in str(exc.value) and isinstance(exc.value, InfeasibleError)
    assert exc.value.best_throughput == pytest.approx(4.0)


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_type_limits_shared_by_stages(solver):
    """Only CPU, GPU, CPU works and needs k = (2, 2, 2): with 3 CPUs the shared CPU limit is to blame; with 4 the
    optimum has throughput 2/s, 7200 samples -> 1 h, cost 0.04 * 4 + 2.42 * 2 = 5.00 $."""
    with pytest.raises(HeterPSInfeasibleError) as exc:
        SOLVERS[solver](alternating(cpus=3))
    assert exc.value.family == "type_limit" and "type_limit[CPU]=3" in str(exc.value)
    r = SOLVERS[solver](alternating(cpus=4))
    assert r.plan == ("CPU", "GPU", "CPU") and r.k == (2, 2, 2)
    assert r.cost == pytest.approx(5.0) and r.throughput == pytest.approx(2.0)


def test_milp_infeasibility_explained_in_family_names():
    with pytest.raises(HeterPSInfeasibleError) as exc:
        solve_exact(alternating(cpus=3), "milp", "highs")
    rep = exc.value.explanation
    assert rep is not None and not rep.feasible
    assert "type_limit" in rep.families


def _agree(p: HeterPSProblem) -> None:
    out = {}
    for name, fn in SOLVERS.items():
        try:
            out[name] = fn(p)
        except HeterPSInfeasibleError as exc:
            out[name] = exc.family
    kinds = {type(v).__name__ for v in out.values()}
    assert len(kinds) == 1, out
    if isinstance(out["dp"], str):
        assert len(set(out.values())) == 1, out
        return
    costs = [r.cost for r in out.values()]
    assert costs == pytest.approx([costs[0]] * 3, rel=1e-7), out
    for r in out.values():
        ev = evaluate(p, r.plan, r.k)  # the independent checker: both constraints, same figures
        assert ev.feasible, ev.violations
        assert ev.cost == pytest.approx(r.cost, rel=1e-12)
        assert ev.throughput >= p.throughput_limit * (1 - 1e-9)
        assert all(ev.units[t.name] <= t.limit for t in p.types)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(max_layers=6, max_units=4))
def test_dp_milp_bruteforce_agree(p):
    _agree(p)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(max_layers=4, max_units=3, n_types=3))
def test_dp_milp_bruteforce_agree_three_types(p):
    _agree(p)


@settings(max_examples=25, deadline=None)
@given(problems(max_layers=6, max_units=4))
def test_exact_beats_every_heuristic(p):
    try:
        best = solve_exact(p).cost
    except HeterPSInfeasibleError:
        for h in (solve_greedy(p), solve_genetic(p, population=8, generations=5)):
            assert h.status == "no_solution_found" and h.termination.limit is Limit.HEURISTIC
            assert not h.has_solution
            assert not evaluate(p, h.plan, h.k).feasible  # nothing is feasible, so neither is this
        return
    for h in (solve_greedy(p), solve_genetic(p, population=8, generations=5), solve_greedy(p, provisioning="paper")):
        if not h.has_solution:  # allowed for a heuristic; the exact optimum exists
            assert h.termination == NO_PLAN_FOUND
            continue
        assert h.termination.reason is TerminationReason.FEASIBLE and h.termination.limit is Limit.HEURISTIC
        assert h.feasible and evaluate(p, h.plan, h.k).feasible
        assert best <= h.cost * (1 + 1e-9)


# ------------------------------------------------------------------------------------------ closed forms
@settings(max_examples=40, deadline=None)
@given(st.floats(0, 2), st.floats(0, 2), st.floats(0, 2), st.floats(0, 2), st.floats(0.05, 3), st.integers(1, 40))
def test_kmin_is_the_smallest_k(S, P, R, Q, tau, N):
    k = float(kmin(S, P, R, Q, tau, N))
    ks = np.arange(1, N + 1)
    ok = np.maximum(S + P / ks, R + Q / ks) <= tau * (1 + 1e-12)
    if ok.any():
        assert k == ks[ok][0]
    else:
        assert math.isinf(k)


def test_paper_balancing_rule_and_exact_provisioning():
    p = generate("matchnet", 3, cpus=32, gpus=6, limit_fraction=0.6)
    plan = ("CPU", "CPU", "GPU", "GPU", "CPU", "CPU", "GPU", "GPU", "CPU")
    lb = k1_lower_bound(p, plan)
    assert lb is not None
    full = [p.types[p.type_names.index(t)].limit for _, _, t in stages_of(plan)]
    ev = evaluate(p, plan, [lb, *full[1:]])
    assert ev.stage_throughputs[0] >= p.throughput_limit * (1 - 1e-9)  # the bound reaches the floor ...
    if lb > 1:  # ... and is the least k_1 that does
        assert evaluate(p, plan, [lb - 1, *full[1:]]).stage_throughputs[0] < p.throughput_limit
    pa = provision_paper(p, plan)
    assert pa is not None and pa[0][0] >= lb
    k = balance_units(p, plan, pa[0][0])
    assert k == pa[0]
    tps = evaluate(p, plan, list(k)).stage_throughputs
    assert min(tps) == pytest.approx(tps[0])  # stage 1 is the bottleneck: every other stage keeps up with it
    for i in range(1, len(k)):
        if k[i] > 1:  # minimal: one unit fewer falls behind stage 1
            kk = list(k)
            kk[i] -= 1
            assert evaluate(p, plan, kk).stage_throughputs[i] < tps[0]
    ex = provision(p, plan)
    assert ex is not None
    assert ex[1] <= pa[1] * (1 + 1e-12)
    assert evaluate(p, plan, list(ex[0])).cost == pytest.approx(ex[1])


# ------------------------------------------------------------------------------------------ instances
@pytest.mark.parametrize("path", CANONICAL, ids=[p.stem for p in CANONICAL])
def test_canonical_instances_exact_vs_baselines(path):
    p = instances.load(path)
    dp = solve_exact(p, "dp")
    assert evaluate(p, dp.plan, dp.k).feasible and dp.status == "optimal"
    if p.num_layers <= 9:  # the 11-layer CTR-DNN MILP takes 3-15 s: see the slow test below
        milp = solve_exact(p, "milp", "highs")
        assert milp.cost == pytest.approx(dp.cost, rel=1e-7)
        assert evaluate(p, milp.plan, milp.k).feasible
    heur = [solve_greedy(p), solve_genetic(p, seed=1, population=16, generations=10),
            solve_rl(p, seed=0, iterations=15, batch=16), solve_rl(p, iterations=5, batch=8, provisioning="paper")]
    for h in heur:
        if h.has_solution:
            assert evaluate(p, h.plan, h.k).feasible
            assert dp.cost <= h.cost * (1 + 1e-9), h.method


@pytest.mark.slow
def test_ctrdnn_milp_matches_dp():
    p = instances.load(ROOT / "instances" / "heterps" / "ctrdnn.json")
    milp = solve_exact(p, "milp", "highs")
    assert milp.status == "optimal" and milp.cost == pytest.approx(solve_exact(p).cost, rel=1e-7)


def test_four_canonical_instances_round_trip():
    assert {p.stem for p in CANONICAL} == {"ctrdnn", "matchnet", "2emb", "nce"}
    for path in CANONICAL:
        p = instances.load(path)
        assert instances.loads(instances.dumps(p)) == p
        assert p.types[0].price_per_hour == 0.04 and p.types[1].price_per_hour == 2.42


def test_backends_agree_on_the_milp():
    for p in (two_layer(limit=200.0, cpus=3), generate("2emb", 1, cpus=12, gpus=3)):
        names = backends_for(build_milp(p))
        assert {"highs", "scipy"} <= set(names)
        ref = solve_exact(p, "dp").cost
        for b in names:
            r = solve_exact(p, "milp", b)
            assert r.cost == pytest.approx(ref, rel=1e-6), b
            assert r.info["dinkelbach"][-1]["backend"] == b


def test_milp_names_match_the_card():
    text = (ROOT / "formulations" / "heterps.md").read_text()
    sec = text.split("## Names", 1)[1].split("\n## ", 1)[0]
    names = set(re.findall(r"^- `([A-Za-z_][A-Za-z0-9_]*)`", sec, flags=re.M))
    import dataclasses

    from schedopt.heterps import HeterPSPlan
    from schedopt.problem import Answer

    m = build_milp(two_layer())
    answer_fields = {f.name for f in dataclasses.fields(HeterPSPlan)} - {f.name for f in dataclasses.fields(Answer)}
    assert names == set(m.blocks) | set(m.families) | answer_fields


def test_generators_are_seeded_and_feasible():
    for model in ("ctrdnn", "matchnet", "2emb", "nce"):
        a, b = generate(model, 7), generate(model, 7)
        assert a == b and a != generate(model, 8)
        assert solve_exact(a).feasible
    with pytest.raises(InputError, match="model"):
        generate("resnet", 0)


def test_json_loader_errors_name_the_field():
    base = instances.dumps(two_layer())
    import json

    def broken(mutate):
        doc = json.loads(base)
        mutate(doc["data"])
        return json.dumps(doc)

    cases = [
        (lambda d: d["layers"][1]["oct"].pop("GPU"), r"data\.layers\[1\]\.oct\.GPU"),
        (lambda d: d["layers"][0].update(alpha=1.5), r"data\.layers\[0\]\.alpha"),
        (lambda d: d["layers"][0]["odt"].update(TPU=1.0), r"data\.layers\[0\]\.odt\.TPU"),
        (lambda d: d["layers"][1].update(name="e"), r"data\.layers\[1\]\.name"),
        (lambda d: d["types"][1].update(limit=0), r"data\.types\[1\]\.limit"),
        (lambda d: d["types"][1].update(limit=2.5), r"data\.types\[1\]\.limit"),
        (lambda d: d.pop("throughput_limit"), r"data\.throughput_limit"),
        (lambda d: d.update(throughput_limit=-1), r"data\.throughput_limit"),
        (lambda d: d.update(bogus=1), r"data\.bogus"),
        (lambda d: d["layers"][0]["oct"].update(CPU=0.0), r"data\.layers\[0\]\.oct\.CPU"),
    ]
    for mutate, pattern in cases:
        with pytest.raises(InputError, match=pattern):
            instances.loads(broken(mutate))


def test_constructor_validation():
    with pytest.raises(InputError, match=r"Layer\('x'\)\.beta"):
        Layer("x", "fc", {"CPU": 1.0}, {"CPU": 0.0}, 0.5, -0.1)
    with pytest.raises(InputError, match=r"layers\[0\]\.oct\.GPU"):
        HeterPSProblem((Layer("x", "fc", {"CPU": 1.0}, {"CPU": 0.0}, 0.5, 0.5),),
                       (ResourceType("CPU", 0.04, 2), ResourceType("GPU", 2.42, 1)), 1, 1, 1, 1, 1)
    with pytest.raises(InputError, match=r"types\[1\]\.name"):
        HeterPSProblem(one_layer().layers, (ResourceType("CPU", 0.04, 2), ResourceType("CPU", 2.42, 1)), 1, 1, 1, 1, 1)
    with pytest.raises(InputError, match="method"):
        solve_exact(one_layer(), "lp")


# ------------------------------------------------------------------------------------------ RL, frontier, CLI
def test_lstm_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    pol = LSTMPolicy.init(5, 3, 4, rng)
    X, G = rng.normal(size=(6, 5)), rng.normal(size=(6, 3))
    for p, g in zip(pol.params, pol.grad(X, G)):
        num = np.zeros_like(p)
        for idx in np.ndindex(p.shape):
            old = p[idx]
            p[idx] = old + 1e-6
            fp = float((G * pol.logits(X)).sum())
            p[idx] = old - 1e-6
            fm = float((G * pol.logits(X)).sum())
            p[idx] = old
            num[idx] = (fp - fm) / 2e-6
        assert np.abs(num - g).max() < 1e-7


def test_rl_is_seeded_and_learns():
    p = generate("2emb", 0)
    a, b = solve_rl(p, seed=5, iterations=30, batch=16), solve_rl(p, seed=5, iterations=30, batch=16)
    assert a.plan == b.plan and a.k == b.k and a.info["best_cost_curve"] == b.info["best_cost_curve"]
    curve = np.array(a.info["best_cost_curve"])
    assert a.feasible and a.cost <= solve_exact(p).cost * 1.05
    # the policy concentrates: the best cost in the last five batches beats the first batch's
    assert np.nanmin(curve[-5:]) <= curve[0]


def test_frontier_is_monotone_and_ends_at_the_throughput_limit():
    p = generate("nce", 0)
    from schedopt.heterps import max_throughput

    top, _ = max_throughput(p)
    f = frontier(p, np.linspace(0.1, 1.2, 8) * top)
    assert f.feasible[:-1].any() and not f.feasible[-1] and f.blame[-1] == "throughput_limit"
    c = f.cost[f.feasible]
    assert np.all(np.diff(c) >= -1e-9 * c[:-1])
    assert np.all(f.throughput[f.feasible] >= f.limits[f.feasible] * (1 - 1e-9))
    import matplotlib

    matplotlib.use("Agg")
    ax = plot_frontier(f, label="nce")
    assert len(ax.lines) == 1


def test_problem_io_is_typed():
    """The typed ProblemIO: solve(spec, SolveOptions) -> HeterPSPlan (an Answer), never raising for infeasibility."""
    import json

    from schedopt.problem import Answer, SolveOptions, get_problem

    io = get_problem("heterps")
    assert io.methods[0] == "dp" and {"milp", "greedy"} <= set(io.methods)
    p = io.generate(gpus=4, seed=2, model="nce")
    assert p.types[1].limit == 4 and io.size(p) == (4, 1)
    dp = io.solve(p, SolveOptions())
    assert isinstance(dp, Answer) and dp.termination.reason is TerminationReason.OPTIMAL
    assert dp.objective == dp.cost == dp.bound and dp.gap == 0.0 and io.check(p, dp) == []
    milp = io.solve(p, SolveOptions(backend="highs"))  # a backend alone picks the MILP route
    assert milp.method == "exact-milp" and milp.backend == "highs" and milp.result is not None
    assert milp.objective == pytest.approx(dp.objective, rel=1e-7)
    greedy = io.solve(p, SolveOptions(method="greedy"))
    assert greedy.termination.limit is Limit.HEURISTIC and math.isnan(greedy.bound)
    assert greedy.objective >= dp.objective * (1 - 1e-12)
    doc = json.loads(json.dumps(greedy.to_dict(), allow_nan=False))
    assert doc["termination"] == {"reason": "feasible", "limit": "heuristic", "detail": greedy.termination.detail}
    assert doc["bound"] is None and doc["gap"] is None and len(doc["plan"]) == p.num_layers
    bad = io.solve(p.with_limit(1e9), SolveOptions())
    assert bad.termination.reason is TerminationReason.INFEASIBLE and not bad.has_solution
    assert bad.info["family"] == "throughput_limit" and "throughput_limit" in bad.explanation
    assert bad.to_dict()["objective"] is None
    with pytest.raises(schedopt.errors.NoSolutionError):
        bad.objective  # noqa: B018
    with pytest.raises(InfeasibleError):
        bad.raise_for_status()
    with pytest.raises(InputError, match="backend"):
        io.solve(p, SolveOptions(method="dp", backend="highs"))
    assert "optimal cost" in io.explain(p)
    assert schedopt.heterps.HeterPSProblem is type(p)


def test_checker_names_the_broken_constraint():
    p = generate("nce", 0, gpus=4)
    dp = solve_exact(p)
    assert schedopt.heterps.check_plan(p, dp) == []
    import dataclasses

    lie = dataclasses.replace(dp, cost=dp.cost * 0.5)
    assert [v.path for v in schedopt.heterps.check_plan(p, lie)] == ["cost"]
    starved = dataclasses.replace(dp, k=tuple(1 for _ in dp.k))
    paths = [v.path for v in schedopt.heterps.check_plan(p, starved)]
    assert "throughput_limit" in paths
    from schedopt.problem import ViolationError

    with pytest.raises(ViolationError, match="throughput_limit"):
        schedopt.heterps.assert_plan(p, starved)


def test_make_plan_with_an_old_status_string_warns_and_keeps_its_meaning():
    from schedopt.heterps.core import make_plan

    p = generate("nce", 0, gpus=4)
    dp = solve_exact(p)
    with pytest.warns(DeprecationWarning, match="Termination"):
        old = make_plan(p, dp.plan, dp.k, "mine", "heuristic")
    assert old.termination.reason is TerminationReason.FEASIBLE and old.termination.limit is Limit.HEURISTIC
    assert old.objective == pytest.approx(dp.cost)


def test_dp_honours_time_limit_on_many_units():
    """The exact DP checks the clock: 65,536 units per type (about 5 million candidate levels, about 0.5 s just to
    list them; over a minute of relaxed bounds before they were computed lazily) with time_limit=0.05 stops within a
    few seconds with NO_SOLUTION_FOUND (time), no plan and no bound; without a limit a small instance stays OPTIMAL
    at the same cost as before."""
    import time

    from schedopt.heterps import generate
    from schedopt.problem import SolveOptions, get_problem

    big = generate("ctrdnn", 0, cpus=65536, gpus=65536)
    t0 = time.perf_counter()
    r = solve_exact(big, "dp", time_limit=0.05)
    assert time.perf_counter() - t0 < 3.0
    assert r.termination.reason is TerminationReason.NO_SOLUTION_FOUND
    assert r.termination.limit is Limit.TIME
    assert not r.has_solution and math.isnan(r.bound) and r.plan == ()
    assert r.to_dict()["plan"] is None
    t0 = time.perf_counter()
    a = get_problem("heterps").solve(big, SolveOptions(time_limit=0.05))
    assert time.perf_counter() - t0 < 3.0 and a.termination.limit is Limit.TIME
    with pytest.raises(InputError, match="time_limit"):
        solve_exact(big, "dp", time_limit=-1.0)
    small = generate("ctrdnn", 0, cpus=64, gpus=8)
    exact = solve_exact(small, "dp")
    limited = solve_exact(small, "dp", time_limit=30.0)
    assert exact.termination.reason is TerminationReason.OPTIMAL
    assert limited.termination.reason is TerminationReason.OPTIMAL
    assert limited.cost == pytest.approx(exact.cost) and limited.bound == pytest.approx(exact.cost)


def test_dp_under_a_short_limit_returns_its_incumbent_with_a_proven_bound():
    """ctrdnn with 4,000 CPUs and 256 GPUs: the DP used to compute every relaxed bound first (11 s here), so any
    limit under that ended with no plan; the lazy bounds and the slowest level solved first give a plan in about
    0.04 s (tools/bench_heterps_dp.py). At a 0.3 s limit the answer holds a plan that passes the checker, costs no
    less than the optimum (7.6241770516, as the DP before this change found in 11 s) and, when not proven optimal, carries a bound no higher than it."""
    from schedopt.heterps import check_plan, generate

    p = generate("ctrdnn", 0, cpus=4000, gpus=256)
    exact = solve_exact(p, "dp")
    assert exact.termination.reason is TerminationReason.OPTIMAL
    assert exact.cost == pytest.approx(7.62417705163043, rel=1e-9)
    r = solve_exact(p, "dp", time_limit=0.3)
    assert r.termination.reason in (TerminationReason.FEASIBLE, TerminationReason.OPTIMAL), r.termination
    assert r.has_solution and check_plan(p, r) == []
    assert r.cost >= exact.cost * (1 - 1e-12)
    if r.termination.reason is TerminationReason.FEASIBLE:
        assert r.termination.limit is Limit.TIME
        assert math.isnan(r.bound) or r.bound <= exact.cost * (1 + 1e-12)
    assert r.info["first_plan_seconds"] < 0.3


def test_dp_lazy_bounds_find_the_same_optimum_as_the_brute_force():
    """The block bounds prune whole blocks of levels: on small instances (brute force over every plan and unit
    vector) the DP's optimum is the brute force's, for every model and several floors."""
    from schedopt.heterps import generate, solve_bruteforce

    for model in ("nce", "2emb"):
        for frac in (0.2, 0.6, 0.95):
            p = generate(model, 1, cpus=6, gpus=3, limit_fraction=frac)
            dp, bf = solve_exact(p, "dp"), solve_bruteforce(p)
            assert dp.termination.reason is TerminationReason.OPTIMAL
            assert dp.cost == pytest.approx(bf.cost, rel=1e-9), (model, frac)
