"""Synergy guarantees on small random instances (hypothesis), against brute force where it is tiny."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from schedopt.synergy import (
    Server,
    assert_allocation,
    proportional,
    solve_joint,
    solve_p1,
    synergy_greedy,
    synergy_opt,
    synergy_tune,
)
from schedopt.synergy.strategies import synergy_instances
from tests.test_synergy import brute_force

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(synergy_instances(max_servers=2, max_gpus_per_server=2, max_jobs=3, max_grid=2, allow_overflow=True))
def test_joint_is_exact_and_dominates(inst) -> None:  # type: ignore[no-untyped-def]
    """The joint MILP equals brute force; joint >= OPT, TUNE, proportional; OPT's LP bound >= joint >= OPT; all
    allocations pass the checker (which also enforces at least proportional throughput for every placed job)."""
    S, J = inst.servers, inst.jobs
    joint = solve_joint(S, J)
    per_job = solve_joint(S, J, formulation="jobs", p1_cut=True)
    opt = synergy_opt(S, J)
    paper = synergy_opt(S, J, placements=("rounding",), repair="none")
    tune = synergy_tune(S, J)
    prop = proportional(S, J)
    for a in (joint, per_job, opt, paper, tune, prop):
        assert_allocation(S, J, a)
        for jid, ja in a.per_job.items():
            if ja.placed:
                assert ja.throughput >= ja.proportional_throughput - 1e-9, (a.method, jid)
    assert joint.optimal and per_job.optimal
    best = brute_force(S, J)
    # both joint formulations (points: the default; jobs: per-job levels with the P1 cut) are exact
    assert joint.total_throughput == pytest.approx(best, abs=1e-6)
    assert per_job.total_throughput == pytest.approx(best, abs=1e-6)
    for other in (opt, paper, tune, prop):
        assert joint.total_throughput >= other.total_throughput - 1e-6, other.method
    # OPT says optimal only when it is; its bound (and the paper's pipeline's) never falls below the optimum
    if opt.optimal:
        assert opt.total_throughput == pytest.approx(best, abs=1e-6)
    for o in (opt, paper):
        assert o.lp_bound is not None and o.lp_bound >= joint.total_throughput - 1e-6
        assert o.rounding_loss is not None and o.rounding_loss >= -1e-6
    assert opt.total_throughput >= paper.total_throughput - 1e-6
    # every placed job is at least proportional in both, and both place the same runnable jobs
    assert tune.total_throughput >= prop.total_throughput - 1e-6


@SETTINGS
@given(synergy_instances(max_servers=2, max_gpus_per_server=3, max_jobs=3, max_grid=2))
def test_p1_matches_brute_force_and_weighting(inst) -> None:  # type: ignore[no-untyped-def]
    S, J = inst.servers, inst.jobs
    G = sum(s.gpus for s in S)
    C = sum(s.cpus for s in S)
    M = sum(s.mem_gb for s in S)
    pool = [Server(G, C, M)]
    for weighted in (False, True):
        a = solve_p1(J, G, C, M, weighted=weighted)
        assert_allocation(pool, J, a)
        assert a.total_throughput == pytest.approx(brute_force(pool, J, weighted=weighted), abs=1e-6)
        j = solve_joint(S, J, weighted=weighted)
        assert_allocation(S, J, j)
        assert a.total_throughput >= j.total_throughput - 1e-6  # the pool relaxes the servers


@settings(max_examples=15, deadline=None)
@given(synergy_instances(max_servers=3, max_gpus_per_server=4, max_jobs=6, max_grid=3, allow_overflow=True))
def test_heuristics_never_below_proportional(inst) -> None:  # type: ignore[no-untyped-def]
    """TUNE and proportional on larger random instances: valid and every placed job at least proportional."""
    S, J = inst.servers, inst.jobs
    for a in (synergy_tune(S, J), proportional(S, J), synergy_opt(S, J), synergy_greedy(S, J),
              synergy_opt(S, J, repair="neighbourhoods")):
        assert_allocation(S, J, a)
        assert all(x.throughput >= x.proportional_throughput - 1e-9 for x in a.per_job.values() if x.placed)
