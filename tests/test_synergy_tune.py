"""Synergy-TUNE: hand-checked allocations, the published best-case demands, and its guarantees."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from schedopt import instances
from schedopt.errors import InputError
from schedopt.synergy import (
    Server,
    SynergyAllocation,
    SynergyJob,
    assert_allocation,
    generate_instance,
    load_profiles,
    proportional,
    solve_joint,
    synergy_greedy,
    synergy_tune,
)
from schedopt.synergy.strategies import synergy_instances

ROOT = Path(__file__).resolve().parents[1]

CPU3 = np.array([1.0, 3.0, 5.0])
MEM2 = np.array([25.0, 50.0])
FLAT = np.ones((3, 2))  # insensitive (language-like): W = 1 everywhere


def _image(top: float) -> np.ndarray:
    """Sensitive: thrashes below 50 GB per GPU; 0.4 / 1 / ``top`` at 1 / 3 / 5 CPUs per GPU."""
    return np.array([[0.1, 0.4], [0.1, 1.0], [0.1, top]])


def test_tune_gives_insensitive_less_and_sensitive_more() -> None:
    """Two servers of (2 GPUs, 6 CPUs, 100 GB): the share per GPU is (3 CPUs, 50 GB). CPU grid {1, 3, 5}, memory
    grid {25, 50} GB per GPU. Jobs, all 1 GPU: I1 = image(2.0), I2 = image(1.5), L1, L2 flat (W = 1).

    Best-case demands (max W, then fewest CPUs, then least GB): I1 (5, 50) W 2.0; I2 (5, 50) W 1.5; L1, L2 (1, 25)
    W 1 -- the insensitive jobs ask for less than the share. Order by (GPUs, CPUs, GB) largest first, ties in input
    order: I1, I2, L1, L2.

    * I1 at (5, 50): both servers fit, equally free -> server 0, which keeps (1 GPU, 1 CPU, 50 GB) free.
    * I2 at (5, 50): server 0 has 1 CPU -> server 1, which keeps (1, 1, 50) free.
    * L1 at (1, 25): both fit, equally free -> server 0 (now full on GPUs and CPUs, 25 GB left).
    * L2 at (1, 25): server 1.

    TUNE = 2.0 + 1.5 + 1 + 1 = 5.5; proportional = 4 x W(3, 50) = 4.0. 5.5 is also the optimum (every job is at
    its maximum W, using exactly the 12 CPUs), so the joint MILP agrees on every backend.
    """
    servers = [Server(2, 6.0, 100.0), Server(2, 6.0, 100.0)]
    jobs = [
        SynergyJob("I1", 1, CPU3, MEM2, _image(2.0)),
        SynergyJob("I2", 1, CPU3, MEM2, _image(1.5)),
        SynergyJob("L1", 1, CPU3, MEM2, FLAT),
        SynergyJob("L2", 1, CPU3, MEM2, FLAT),
    ]
    for order in ("queue", "largest"):  # the queue order is the input order, here the same as largest first
        t = synergy_tune(servers, jobs, order=order)
        assert_allocation(servers, jobs, t)
        got = {j: (dict(a.gpus_on), a.cpu_per_gpu, a.mem_per_gpu, a.throughput) for j, a in t.per_job.items()}
        assert got == {
            "I1": ({0: 1}, 5.0, 50.0, 2.0),
            "I2": ({1: 1}, 5.0, 50.0, 1.5),
            "L1": ({0: 1}, 1.0, 25.0, 1.0),
            "L2": ({1: 1}, 1.0, 25.0, 1.0),
        }
        assert t.total_throughput == pytest.approx(5.5)
        assert t.stats["promotions"] == 0
    assert t.stats["placed_at"] == {"ideal": 4, "proportional": 0, "demote": 0}
    p = proportional(servers, jobs)
    assert_allocation(servers, jobs, p)
    assert p.total_throughput == pytest.approx(4.0)
    for be in ("highs", "scipy"):
        assert solve_joint(servers, jobs, backend=be).total_throughput == pytest.approx(5.5, abs=1e-6)


def test_demotion_keeps_a_below_share_demand() -> None:
    """One server (2 GPUs, 6 CPUs, 100 GB), share (3, 50); CPU grid {1, 3, 6}. I: W = 0.4 / 1 / 2 at 1 / 3 / 6
    CPUs (0.1 below 50 GB): demand (6, 50), which fits an empty server. L flat: demand (1, 25).

    * I first (6 CPUs): takes all 6 CPUs and 50 GB.
    * L at (1, 25): no CPU left. Its demand is within the share, so there is no switch to the share (the
      published ``_make_fair_share`` switches only a demand above it). Demotion on server 0 (the only one with a
      GPU free): I is over its share, moves back to (3, 50) -> 3 CPUs free -> L fits at its own (1, 25).

    Result: I (3, 50) W 1, L (1, 25) W 1, one demotion; 2 CPUs stay free (placing L at the share would use them).
    That is the largest-first order; in queue order (L, I) L takes (1, 25) first, I's 6 CPUs do not fit the 5
    left, it switches to the share (3, 50) and fits: the same points without a demotion.
    """
    cpu = np.array([1.0, 3.0, 6.0])
    servers = [Server(2, 6.0, 100.0)]
    jobs = [SynergyJob("L", 1, cpu, MEM2, FLAT), SynergyJob("I", 1, cpu, MEM2, _image(2.0))]
    q = synergy_tune(servers, jobs)
    assert_allocation(servers, jobs, q)
    assert [(a.cpu_per_gpu, a.mem_per_gpu) for a in q.per_job.values()] == [(1.0, 25.0), (3.0, 50.0)]
    assert q.stats["placed_at"] == {"ideal": 1, "proportional": 1, "peer_adjust": 0, "demote_all": 0}
    assert q.stats["demotions"] == 0 and q.total_throughput == pytest.approx(2.0)
    t = synergy_tune(servers, jobs, order="largest")
    assert_allocation(servers, jobs, t)
    assert (t.per_job["I"].cpu_per_gpu, t.per_job["I"].mem_per_gpu, t.per_job["I"].throughput) == (3.0, 50.0, 1.0)
    assert (t.per_job["L"].cpu_per_gpu, t.per_job["L"].mem_per_gpu) == (1.0, 25.0)
    assert t.stats["demotions"] == 1
    assert t.stats["placed_at"] == {"ideal": 1, "proportional": 0, "demote": 1}
    assert t.total_throughput == pytest.approx(2.0)


def test_best_case_demand_matches_the_published_models() -> None:
    """Alone on an empty (8 GPU, 24 CPU, 500 GB) server, a 1-GPU job of each shipped model gets its best-case
    demand, which equals the per-model ``cpus`` / ``mem`` of the Synergy simulator (profiles.json records them;
    its 20 GB is the 20.83 GB grid column). With ``demand_threshold=0.1`` mobilenet asks for 5 CPUs
    (W 1.49 >= 1.55 / 1.1) instead of 6."""
    prof = load_profiles()
    cg, mg = np.array(prof["cpu_grid"]), np.array(prof["mem_grid"])
    server = [Server(8, 24.0, 500.0)]
    for name, e in prof["models"].items():
        job = SynergyJob(name, 1, cg, mg, np.array(e["tput"]))
        a = synergy_tune(server, [job]).per_job[name]
        assert a.cpu_per_gpu == e["ideal_cpu_per_gpu"], name
        assert a.mem_per_gpu == mg[np.argmin(np.abs(mg - e["ideal_mem_gb_per_gpu"]))], name
        assert a.throughput == pytest.approx(e["speedup_at_ideal_vs_fair"]), name
    mob = SynergyJob("mobilenet", 1, cg, mg, np.array(prof["models"]["mobilenet"]["tput"]))
    a = synergy_tune(server, [mob], demand_threshold=0.1, promote=False).per_job["mobilenet"]
    assert (a.cpu_per_gpu, a.mem_per_gpu, a.throughput) == (5.0, 62.5, 1.49)
    # promotion then gives it the sixth CPU, free on the server
    a = synergy_tune(server, [mob], demand_threshold=0.1).per_job["mobilenet"]
    assert (a.cpu_per_gpu, a.mem_per_gpu, a.throughput) == (6.0, 62.5, 1.55)


def test_bad_threshold() -> None:
    for bad in (-0.1, float("nan"), float("inf"), True, "0.1"):
        with pytest.raises(InputError) as ei:
            synergy_tune([Server(1, 3.0, 50.0)], [], demand_threshold=bad)  # type: ignore[arg-type]
        assert ei.value.field == "demand_threshold"


def test_generated_and_shipped_instances() -> None:
    """Regression figures (see the TUNE section of formulations/synergy.md): TUNE >= proportional, valid."""
    cases = [generate_instance(32, 0), generate_instance(128, 0)]
    cases += [instances.load(f) for f in sorted((ROOT / "instances" / "synergy").glob("*.json"))]
    # (queue order + promotion (default), queue order alone (the published), largest first alone (before issue 17))
    expect = [(13.18, 11.0, 11.0), (74.06, 70.53, 64.13), (74.06, 70.53, 64.13), (69.18, 67.09, 62.83)]
    for inst, want in zip(cases, expect, strict=True):
        p = proportional(inst.servers, inst.jobs, weighted=inst.weighted)
        for (order, promote), w in zip((("queue", True), ("queue", False), ("largest", False)), want, strict=True):
            t = synergy_tune(inst.servers, inst.jobs, weighted=inst.weighted, order=order, promote=promote)
            assert_allocation(inst.servers, inst.jobs, t)
            assert t.total_throughput == pytest.approx(w, abs=1e-9), (order, promote)
            assert t.total_throughput >= p.total_throughput - 1e-9


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(synergy_instances(max_servers=3, max_gpus_per_server=4, max_jobs=6, max_grid=3, allow_overflow=True))
def test_tune_never_below_proportional(inst) -> None:  # type: ignore[no-untyped-def]
    """For any demand threshold, order (queue / largest) and promotion flag: the allocation passes the checker,
    places exactly the jobs proportional places, gives every placed job at least its proportional throughput, so
    TUNE's total >= proportional's (unweighted and GPU-weighted); promotion never lowers a job's W."""
    S, J = inst.servers, inst.jobs
    for weighted in (False, True):
        p = proportional(S, J, weighted=weighted)
        assert_allocation(S, J, p)
        for th, order, promote in ((0.0, "queue", True), (0.25, "queue", False), (0.0, "largest", True), (0.25, "largest", False)):
            t = synergy_tune(S, J, weighted=weighted, demand_threshold=th, order=order, promote=promote)
            assert_allocation(S, J, t)
            assert t.unplaced == p.unplaced
            for jid, a in t.per_job.items():
                assert a.placed == p.per_job[jid].placed
                if a.placed:
                    assert a.gpus == p.per_job[jid].gpus
                    assert a.throughput >= a.proportional_throughput - 1e-9, jid
            assert t.total_throughput >= p.total_throughput - 1e-9
        plain = synergy_tune(S, J, weighted=weighted, promote=False)
        promoted = synergy_tune(S, J, weighted=weighted)
        assert all(promoted.per_job[k].throughput >= a.throughput - 1e-12 for k, a in plain.per_job.items())
        g = synergy_greedy(S, J, weighted=weighted)
        assert_allocation(S, J, g)
        assert all(a.throughput >= a.proportional_throughput - 1e-9 for a in g.per_job.values() if a.placed)


# --------------------------------------------------------------------------------- against the published code
def _published_sets() -> list[dict]:
    from importlib import resources

    return json.loads(resources.files("schedopt.synergy").joinpath("published_rounds.json").read_text())["sets"]


def _same_points(a: SynergyAllocation, theirs: list, jobs: list[SynergyJob]) -> bool:
    """Per job: placed alike, the same CPUs per GPU and the same W. (GB may differ where W does not: for a job
    whose best CPUs are capped at one server the published demand keeps its model's GB, ours the least GB that
    reaches the same W at the capped CPUs.)"""
    prof = load_profiles()
    cg, mg = np.array(prof["cpu_grid"]), np.array(prof["mem_grid"])
    for j, x, t in zip(jobs, a.per_job.values(), theirs, strict=True):
        if (t is None) != (not x.placed):
            return False
        if t is not None:
            w = float(j.throughput[int(np.flatnonzero(cg == t[0])[0]), int(np.argmin(np.abs(mg - t[1])))])
            if x.cpu_per_gpu != t[0] or abs(x.throughput - w) > 1e-9:
                return False
    return True


@pytest.mark.parametrize("row", _published_sets(), ids=lambda r: r["name"])
def test_matches_the_published_scheduler(row: dict) -> None:
    """The 15 job sets of issue 17 (4, 16, 32 servers x 5 seeds), run through the published scheduler by
    tools/synergy_published_rounds.py: queue-order TUNE without promotion and GREEDY give every job the published
    point; TUNE (default, with promotion) totals at least the published TUNE and every job at least its share."""
    inst = generate_instance(8 * row["servers"], row["seed"])
    S, J = inst.servers, inst.jobs
    faithful = synergy_tune(S, J, promote=False)
    greedy = synergy_greedy(S, J)
    tune = synergy_tune(S, J)
    prop = proportional(S, J)
    for a in (faithful, greedy, tune, prop):
        assert_allocation(S, J, a)
    assert _same_points(faithful, row["tune"], J)
    assert _same_points(greedy, row["greedy"], J)
    assert _same_points(prop, row["fair"], J)
    prof = load_profiles()
    cg, mg = prof["cpu_grid"], prof["mem_grid"]

    def total(points: list) -> float:
        out = 0.0
        for j, p in zip(J, points):
            if p is not None:
                out += float(j.throughput[cg.index(p[0]), int(np.argmin(np.abs(np.array(mg) - p[1])))])
        return out

    assert faithful.total_throughput == pytest.approx(total(row["tune"]), abs=1e-9)
    assert tune.total_throughput >= total(row["tune"]) - 1e-9
    assert all(a.throughput >= a.proportional_throughput - 1e-9 for a in tune.per_job.values() if a.placed)
