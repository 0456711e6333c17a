"""POP partitioning: the split, the executors, and feasibility of the union for the full problem."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import schedopt
from schedopt import Limit, TerminationReason
from schedopt.errors import InputError, StructureError
from schedopt.mckp import analyze
from schedopt.pop import map_parallel, partition, pop, pop_solve
from tests.test_mckp import make_mckp


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 200), st.lists(st.integers(0, 500), min_size=1, max_size=4), st.integers(1, 9),
       st.integers(0, 1000))
def test_partition_is_exact(n: int, cap: list[int], k: int, seed: int) -> None:
    parts = partition(n, cap, k, seed=seed)
    assert len(parts) == k
    jobs = np.concatenate([p[0] for p in parts])
    assert sorted(jobs.tolist()) == list(range(n))  # every job in exactly one group
    sizes = [p[0].size for p in parts]
    assert max(sizes) - min(sizes) <= 1
    slices = np.array([p[1] for p in parts])
    assert np.array_equal(slices.sum(axis=0), np.asarray(cap, dtype=float))  # slices add up exactly
    assert np.array_equal(slices, np.round(slices))  # integral capacities give integral slices


def test_large_jobs_are_spread_round_robin() -> None:
    sizes = np.zeros(40)
    sizes[[3, 7, 11, 19, 23, 31, 37, 39]] = [0.9, 0.8, 0.7, 0.6, 0.5, 0.45, 0.4, 0.35]  # > 1/4: large
    parts = partition(40, [100.0], 4, seed=1, sizes=sizes)
    per = [int(np.count_nonzero(sizes[p[0]] > 0.25)) for p in parts]
    assert per == [2, 2, 2, 2]
    assert sum(p[0].size for p in parts) == 40


def test_fractional_capacities_split_evenly() -> None:
    parts = partition(5, [2.5, 1.0], 2, integral=False)
    assert np.allclose(parts[0][1], [1.25, 0.5]) and np.allclose(parts[1][1], [1.25, 0.5])


def test_bad_k() -> None:
    with pytest.raises(InputError):
        partition(3, [1.0], 0)


@pytest.mark.parametrize("k", [1, 2, 4])
@pytest.mark.parametrize("sense", ["maximize", "minimize"])
def test_pop_union_is_feasible(k: int, sense: str) -> None:
    m = make_mckp(120, 8, 3, 7, sense=sense, forced=3, free_cols=4, negative=True)
    r = pop_solve(m, k, executor="serial", reference="exact")
    assert r.feasible and m.violations(r.x) == {}
    assert r.objective == pytest.approx(m.evaluate(r.x))
    exact = schedopt.solve(m, "mckp", mip_rel_gap=0.0).objective
    assert r.reference_value == pytest.approx(exact)
    # the loss is computed, not clipped: (sense) (optimum - objective) / |optimum|
    sign = 1.0 if sense == "maximize" else -1.0
    assert r.loss == pytest.approx(sign * (exact - r.objective) / abs(exact), abs=1e-12)
    # POP never beats the optimum; with one part it is the optimum, proven
    if sense == "maximize":
        assert r.objective <= exact + 1e-7
    else:
        assert r.objective >= exact - 1e-7
    if k == 1:
        assert r.objective == pytest.approx(exact)
        assert r.termination.reason is TerminationReason.OPTIMAL and r.gap == pytest.approx(0.0, abs=1e-9)
    else:
        assert r.termination.reason is TerminationReason.FEASIBLE and r.termination.limit is Limit.HEURISTIC
    assert r.all_parts_optimal
    assert all(p.termination.reason is TerminationReason.OPTIMAL for p in r.parts)
    # the bound is the exact reference's (on the right side of the union's objective)
    assert sign * (r.bound - r.objective) >= -1e-9
    # every group left after the presolve (forced jobs and columns of value <= 0 leave) is in exactly one part
    assert sum(p.jobs for p in r.parts) == analyze(m).G


def test_pop_bound_reference_and_process_pool() -> None:
    m = make_mckp(200, 6, 3, 3)
    r = pop_solve(m, 2, reference="bound", backend="highs")  # default executor: a process pool
    assert r.feasible
    assert r.reference_value >= r.objective - 1e-9
    assert r.loss == pytest.approx((r.reference_value - r.objective) / abs(r.reference_value))


def test_pop_with_large_jobs_reconciles() -> None:
    """Capacity 10 % of the demand with k = 8: the largest configurations exceed one slice; the reconciliation
    pass runs on the pooled leftover and the union stays feasible."""
    m = make_mckp(60, 6, 2, 11, cap_frac=0.1)
    r = pop_solve(m, 8, executor="serial", reference=None)
    raw = pop_solve(m, 8, executor="serial", reference=None, refine=False)
    assert r.large_jobs > 0 and r.feasible and raw.feasible
    # the pass gains on this instance, and what it reports gained is the difference of the two unions
    assert r.refined_gain > 0 and raw.refined_gain == 0.0
    assert r.objective == pytest.approx(raw.objective + r.refined_gain)
    assert r.termination.limit is Limit.HEURISTIC and math.isnan(r.bound)


def test_pop_rejects_models_outside_the_family() -> None:
    m = schedopt.LinearModel("lp")
    m.add_variables("x", 2)
    m.set_objective([1, 1])
    with pytest.raises(StructureError):
        pop_solve(m, 2, executor="serial")


def _square(x: int) -> int:
    return x * x


class _MapOnly:
    """An executor with only ``.map`` (like a Ray ``multiprocessing.Pool``)."""

    def map(self, fn, items):  # type: ignore[no-untyped-def]
        return [fn(i) for i in items]


def test_map_parallel_executors() -> None:
    items = list(range(6))
    want = [i * i for i in items]
    assert map_parallel(_square, items, executor="serial") == want
    with ThreadPoolExecutor(2) as ex:  # has .submit (like a Dask Client)
        assert map_parallel(_square, items, executor=ex) == want
    assert map_parallel(_square, items, executor=_MapOnly()) == want
    assert map_parallel(_square, items) == want  # process pool
    with pytest.raises(InputError):
        map_parallel(_square, items, executor=object())


def _greedy_knapsack(part: tuple[np.ndarray, np.ndarray]) -> list[int]:
    jobs, cap = part
    demand = (jobs % 5 + 1).astype(float)
    took, used = [], 0.0
    for j, d in zip(jobs.tolist(), demand.tolist(), strict=True):
        if used + d <= cap[0]:
            took.append(j)
            used += d
    return took


def test_pop_callable_union_respects_capacity() -> None:
    out = pop(_greedy_knapsack, 50, [40.0], 4, executor="serial", seed=2)
    chosen = [j for _, _, r in out for j in r]
    assert len(set(chosen)) == len(chosen)
    assert sum(j % 5 + 1 for j in chosen) <= 40
    assert sum(c[0] for _, c, _ in out) == 40
