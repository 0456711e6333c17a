"""HeterPS's RL scheduler in the paper's two phases (issue 43 item 2): pretraining on random plans, then REINFORCE
on the policy's own plans; ``pretrain_iterations=0`` is the single phase of earlier versions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from schedopt.errors import InputError
from schedopt.heterps import generate, solve_bruteforce, solve_exact, solve_rl
from schedopt.heterps.rl import PRETRAIN_ITERATIONS


def test_no_pretraining_is_the_earlier_single_phase() -> None:
    """The plans, costs and curve of the single-phase version (values recorded from it before the change)."""
    p = generate("2emb", 0)
    r = solve_rl(p, seed=5, iterations=30, batch=16, pretrain_iterations=0)
    assert r.plan == ("CPU", "CPU", "CPU", "GPU", "GPU", "GPU") and r.k == (7, 2)
    assert r.cost == pytest.approx(4.079587214285716, rel=1e-12) and r.info["plan_evaluations"] == 40
    assert np.allclose(r.info["best_cost_curve"][1:6], [4.180015037, 4.079587214, 4.079587214, 4.079587214,
                                                        4.079587214], rtol=1e-9)
    assert math.isinf(r.info["best_cost_curve"][0]) and r.info["plan_evaluations_pretrain"] == 0
    assert PRETRAIN_ITERATIONS == 0 and solve_rl(p, seed=5, iterations=30, batch=16).info == r.info  # the default


def test_two_phases_find_the_brute_force_optimum_on_a_small_model() -> None:
    """2emb (6 layers, 2 types: 64 plans; 8 CPUs and 4 GPUs so brute force can try every unit vector): brute force
    and the DP give the optimum; both phases together reach it. Phase 1's plans are drawn uniformly, whatever the
    policy: its part of the curve does not depend on the learning rate."""
    p = generate("2emb", 0, cpus=8, gpus=4)
    opt = solve_bruteforce(p)
    assert opt.cost == pytest.approx(solve_exact(p).cost, rel=1e-12)
    r = solve_rl(p, seed=3, pretrain_iterations=8, iterations=12, batch=16)
    assert r.feasible and r.cost == pytest.approx(opt.cost, rel=1e-12) and r.plan == opt.plan
    curve = r.info["best_cost_curve"]
    assert len(curve) == 20 and r.info["pretrain_iterations"] == 8
    assert r.info["best_cost_pretrain"] == min(curve[:8]) and r.cost <= r.info["best_cost_pretrain"] * (1 + 1e-12)
    assert 0 < r.info["plan_evaluations_pretrain"] <= r.info["plan_evaluations"] <= 64
    other = solve_rl(p, seed=3, pretrain_iterations=8, iterations=12, batch=16, lr=0.5)
    assert other.info["best_cost_curve"][:8] == curve[:8]
    assert other.info["plan_evaluations_pretrain"] == r.info["plan_evaluations_pretrain"]
    # matchnet (9 layers: 512 plans), a longer pretraining: the DP's optimum again, every plan costed at most once
    q = generate("matchnet", 0)
    got = solve_rl(q, seed=0, pretrain_iterations=30, iterations=20, batch=32)
    assert got.cost == pytest.approx(solve_exact(q).cost, rel=1e-12) and got.info["plan_evaluations"] <= 512


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_pretrain_length_is_checked(bad) -> None:
    with pytest.raises(InputError, match="pretrain_iterations"):
        solve_rl(generate("2emb", 0), pretrain_iterations=bad)
