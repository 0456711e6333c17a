"""schedopt.shockwave: the Sia artifact's Shockwave plan as MILPs (card: formulations/shockwave.md).

Hand-checked plans, backends agreeing, a brute force over every schedule on tiny instances, and (when cvxpy is
installed) the published formulation itself (SOS2 binaries and all) in cvxpy.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from schedopt.errors import InputError
from schedopt.problem import SolveOptions
from schedopt.shockwave import (
    ShockwavePlan,
    ShockwaveSpec,
    build,
    build_rank,
    check_plan,
    evaluate,
    fill_rounds,
    relaxed_priorities,
    solve_spec,
)

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "instances" / "golden" / "shockwave"
LOG = {0.0: math.log(1e-6), 0.2: math.log(0.2), 0.4: math.log(0.4)}


def two_jobs(target_a: float = 1000.0, target_b: float = 1000.0) -> ShockwaveSpec:
    """2 GPUs, a window of 2 rounds of 10 s; a and b each need both GPUs, 1 s per step, 100 steps in all; a has
    done 20 (progress 0.2), b none."""
    return ShockwaveSpec(jobs=("a", "b"), gpus=2, scale_factors=[2, 2], step_seconds=[1.0, 1.0], steps_done=[20, 0],
                         steps_total=[100, 100], age=[0.0, 0.0], ftf_target=[target_a, target_b], rounds=2,
                         round_seconds=10.0)


def test_hand_checked_plan_gives_the_window_to_the_job_with_least_progress() -> None:
    """Only one job fits a round. b both rounds: log(0.2) + log(0.2) = -3.2189; a both: log(0.4) + log(1e-6) =
    -14.73; one each: a at 0.3 (-1.2629 on the chord) + b at 0.1 (-7.7124 on the chord) = -8.975. The targets are
    loose, so the ftf plan holds: b, b; objective -3.2189 / (2 x 2) - 1e-9 x 80 s."""
    spec = two_jobs()
    plan = solve_spec(spec)
    assert plan.stage == "ftf" and plan.is_optimal
    assert plan.schedule.tolist() == [[False, False], [True, True]]
    assert plan.progress.tolist() == pytest.approx([0.0, 20.0])
    assert plan.rounds == [["b"], ["b"]]
    assert plan.objective == pytest.approx(2 * LOG[0.2] / 4 - 1e-9 * 80.0, abs=1e-9)
    assert check_plan(spec, plan) == []


def test_hand_checked_relaxed_plan_follows_the_priority() -> None:
    """a's target 40 s against its estimate 0 + 80 s: rho 2 > 1, so no plan meets a's ftf row (even 20 s of the
    window leave 0 + 20 + 60 = 80 > 40) and the relaxed plan weighs a's utility by 2 ** 12 = 4096 (b: rho 1,
    weight 1: its estimate 100 s is its target). a both: 4096 log(0.4) + log(1e-6) = -3767.0; b both: 4097 log(0.2) = -6593.9; one each:
    4096 (-1.2629) - 7.7124 = -5180.6: a runs both rounds."""
    spec = two_jobs(target_a=40.0, target_b=100.0)
    rho, logp = relaxed_priorities(spec)
    assert rho.tolist() == pytest.approx([2.0, 1.0])
    assert logp.tolist() == pytest.approx([12 * math.log10(2.0), 0.0])
    plan = solve_spec(spec)
    assert plan.stage == "relaxed"
    assert plan.ftf_unreachable == ("a",) and plan.ftf_result is None  # known without a solve
    assert plan.rounds == [["a"], ["a"]]
    assert plan.rank is not None and plan.rank.has_solution
    w = np.array([1.0, 2.0 ** -12])
    assert plan.objective == pytest.approx(float(w @ [LOG[0.4], LOG[0.0]]) / 4 - 1e-9 / 4096 * 100.0, rel=1e-9)  # b has 100 s left
    assert check_plan(spec, plan) == []


def test_a_job_within_one_round_of_its_end_gets_the_power_100() -> None:
    spec = ShockwaveSpec(jobs=("a",), gpus=1, scale_factors=[1], step_seconds=[1.0], steps_done=[95],
                         steps_total=[100], age=[10.0], ftf_target=[7.5], rounds=1, round_seconds=10.0)
    rho, logp = relaxed_priorities(spec)
    assert rho[0] == pytest.approx(15 / 7.5)
    assert logp[0] == pytest.approx(100 * math.log10(2.0))  # 2 ** 100 ~ 1.3e30: kept in log10, never a coefficient


def test_ranking_moves_the_high_priority_job_to_the_first_round() -> None:
    """Counts a: 1, b: 1 on a pool that holds one job per round; a's priority is 8: a first."""
    spec = two_jobs()
    f = build_rank(spec, np.array([1.0, 1.0]), np.array([8.0, 1.0]))
    from schedopt.solve import solve

    y = np.asarray(solve(f, "highs").values["y"]).reshape(2, 2) > 0.5
    assert y.tolist() == [[True, False], [False, True]]


def test_work_conserving_fill_takes_the_longest_remaining_that_fits() -> None:
    """4 GPUs; the model runs c (2 GPUs) in round 0: idle 2; by remaining time b (300 s, 4 GPUs) does not fit,
    a (200 s, 2 GPUs) does; d (100 s) is not reached once the GPUs are full."""
    spec = ShockwaveSpec(jobs=("a", "b", "c", "d"), gpus=4, scale_factors=[2, 4, 2, 1], step_seconds=[1, 1, 1, 1],
                         steps_done=[0, 0, 0, 0], steps_total=[200, 300, 50, 100], age=[0] * 4, ftf_target=[1e4] * 4,
                         rounds=1)
    assert fill_rounds(spec, np.array([[0], [0], [1], [0]])) == [[2, 0]]


def brute_force(spec: ShockwaveSpec, priorities: np.ndarray | None, with_ftf: bool, k: float | None = None) -> float:
    """Every schedule; for a fixed schedule the objective and the ftf rows improve with more planned steps, so
    p_j = min(steps left, R n_j / step_j) is optimal."""
    J, T = spec.num_jobs, spec.rounds
    best = -math.inf
    if k is None:
        k = spec.k if priorities is None else spec.k / float(np.max(priorities))
    w = None if priorities is None else np.asarray(priorities) / float(np.max(priorities))
    for bits in itertools.product((0, 1), repeat=J * T):
        x = np.array(bits).reshape(J, T)
        if (spec.scale_factors @ x > spec.gpus).any():
            continue
        p = np.minimum(spec.steps_left, spec.round_seconds * x.sum(axis=1) / spec.step_seconds)
        if with_ftf:
            fin = spec.age + spec.round_seconds * T + (spec.remaining_seconds - spec.step_seconds * p) / spec.share
            if (fin > spec.rho_max * spec.ftf_target + 1e-9).any():
                continue
        best = max(best, evaluate(spec, p, w, k=k))
    return best


def random_spec(seed: int) -> ShockwaveSpec:
    rng = np.random.default_rng(seed)
    J = int(rng.integers(2, 4))
    total = rng.integers(50, 400, J).astype(float)
    done = np.floor(total * rng.uniform(0, 0.9, J))
    step = rng.uniform(0.2, 2.0, J)
    age = rng.uniform(0, 300, J)
    est = age + (total - done) * step
    return ShockwaveSpec(jobs=tuple(f"j{i}" for i in range(J)), gpus=4, scale_factors=rng.choice([1, 2, 4], J),
                         step_seconds=step, steps_done=done, steps_total=total, age=age,
                         ftf_target=est * rng.uniform(0.9, 3.0, J), rounds=3, round_seconds=30.0)


@pytest.mark.parametrize("seed", range(6))
def test_brute_force_agrees_on_tiny_instances(seed: int) -> None:
    from schedopt.solve import solve

    spec = random_spec(seed)
    plan = solve_spec(spec, SolveOptions(backend="highs"))
    assert check_plan(spec, plan) == []
    if plan.stage == "ftf":
        assert plan.objective == pytest.approx(brute_force(spec, None, True), abs=1e-7)
    else:
        assert brute_force(spec, None, True) == -math.inf  # the ftf plan really is infeasible
        if plan.ftf_unreachable:  # and the shortcut agrees with the solver
            assert not solve(build(spec), "highs").has_solution
    _rho, logp = relaxed_priorities(spec)
    w = 10.0 ** (logp - logp.max())
    res = solve(build(spec, stage="relaxed", priorities=w), "highs")
    assert res.objective == pytest.approx(brute_force(spec, w, False), abs=1e-7)


BACKENDS = ["highs", "scipy", "mathopt", "pyomo"]


def _golden() -> list[Path]:
    return sorted(GOLDEN.glob("*.json"))


def spec_of(d: dict) -> ShockwaveSpec:
    return ShockwaveSpec(**{k: (tuple(v) if k in ("jobs", "log_bases") else v) for k, v in d["spec"].items()})


@pytest.mark.parametrize("path", _golden(), ids=lambda p: p.stem)
@pytest.mark.parametrize("backend", BACKENDS)
def test_backends_agree_on_golden_instances(path: Path, backend: str) -> None:
    from schedopt.backends import available_backends

    if not available_backends()[backend].available:
        pytest.skip(f"{backend} not installed")
    d = json.loads(path.read_text())
    spec = spec_of(d)
    plan = solve_spec(spec, SolveOptions(backend=backend))
    assert plan.stage == d["expected"]["stage"]
    assert plan.objective == pytest.approx(d["expected"]["objective"], rel=1e-6, abs=1e-9)
    assert check_plan(spec, plan) == []


def test_published_formulation_in_cvxpy_agrees() -> None:
    """The artifact's own model (``nash_social_welfare_first_order_apx``: convex-combination weights with SOS2
    boundary binaries, ``cp.maximum(0, .)`` in the makespan and ftf terms) in cvxpy: same optimum as ours, whose
    hypograph rows need no binaries because the piecewise-linear log is concave."""
    cp = pytest.importorskip("cvxpy")
    if "SCIPY" not in cp.installed_solvers():
        pytest.skip("cvxpy has no MILP solver")
    for seed in range(4):
        spec = random_spec(seed)
        J, T, R = spec.num_jobs, spec.rounds, spec.round_seconds
        x = cp.Variable((J, T), boolean=True)
        p = cp.Variable(J, nonneg=True)
        lam = cp.Variable((J, len(spec.log_bases)), nonneg=True)
        z = cp.Variable((J, len(spec.log_bases)), boolean=True)
        b = np.asarray(spec.log_bases)
        cons = [spec.scale_factors @ x <= spec.gpus, cp.multiply(p, spec.step_seconds) <= R * cp.sum(x, axis=1),
                lam @ b == cp.multiply(spec.steps_done + p, 1 / spec.steps_total), cp.sum(lam, axis=1) == 1,
                lam <= z, cp.sum(z, axis=1) <= 2]
        cons += [z[:, i] + z[:, j] <= 1 for i in range(len(b)) for j in range(i + 2, len(b))]
        left = cp.maximum(0, spec.remaining_seconds - cp.multiply(spec.step_seconds, p))
        ftf = spec.age + R * T + left / spec.share <= spec.rho_max * spec.ftf_target
        obj = cp.sum(lam @ spec.log_values) / (J * T) - spec.k * cp.max(left)
        prob = cp.Problem(cp.Maximize(obj), [*cons, ftf])
        prob.solve(solver="SCIPY")
        plan = solve_spec(spec)
        if prob.status in ("infeasible", "infeasible_inaccurate"):
            assert plan.stage == "relaxed"
        else:
            assert plan.stage == "ftf"
            assert plan.objective == pytest.approx(prob.value, abs=1e-6)


def test_card_names_match_the_built_models() -> None:
    text = (ROOT / "formulations" / "shockwave.md").read_text()
    section = text.split("## Names", 1)[1].split("\n## ", 1)[0]
    names = set(re.findall(r"^- `([A-Za-z_][A-Za-z0-9_]*)`", section, flags=re.M))
    spec = two_jobs()
    built: set[str] = set()
    for f in (build(spec), build(spec, stage="relaxed", priorities=np.ones(2)),
              build_rank(spec, np.ones(2), np.ones(2))):
        built |= set(f.model.blocks) | set(f.model.families)
    assert built == names


def test_bad_input_is_named() -> None:
    with pytest.raises(InputError, match="steps_done"):
        ShockwaveSpec(jobs=("a",), gpus=2, scale_factors=[1], step_seconds=[1.0], steps_done=[5], steps_total=[4],
                      age=[0.0], ftf_target=[1.0])
    with pytest.raises(InputError, match="scale_factors"):
        ShockwaveSpec(jobs=("a",), gpus=2, scale_factors=[3], step_seconds=[1.0], steps_done=[0], steps_total=[4],
                      age=[0.0], ftf_target=[1.0])
    with pytest.raises(InputError, match="log_bases"):
        ShockwaveSpec(jobs=("a",), gpus=2, scale_factors=[1], step_seconds=[1.0], steps_done=[0], steps_total=[4],
                      age=[0.0], ftf_target=[1.0], log_bases=(0.0, 0.5))
    with pytest.raises(InputError, match="stage"):
        build(two_jobs(), stage="other")


def test_checker_catches_a_bad_plan() -> None:
    spec = two_jobs()
    plan = solve_spec(spec)
    bad = ShockwavePlan(termination=plan.termination, objective_value=plan.objective_value, stage="ftf",
                        jobs=spec.jobs, schedule=np.ones((2, 2), dtype=bool), progress=np.array([20.0, 20.0]),
                        rounds=[["a", "b"], ["b"]])
    paths = {v.path.split("[")[0] for v in check_plan(spec, bad)}
    assert {"capacity", "rounds", "objective"} <= paths
