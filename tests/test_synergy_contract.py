"""Synergy on the shared contract: answers carry the core termination and an honest bound, failures are held,
build/decode through a typed Formulation, the typed ProblemIO, queue orders, one round as a simulator calls it."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import schedopt
from schedopt.errors import InputError, NoSolutionError, SolveFailedError
from schedopt.problem import Answer, Formulation, SolveOptions, Violation, get_problem
from schedopt.results import Limit, TerminationReason
from schedopt.synergy import (
    PROBLEM_IO,
    JobQueueInfo,
    QueueState,
    Server,
    SynergyAllocation,
    SynergyInverse,
    SynergyJob,
    allocate_round,
    assert_allocation,
    build,
    check_allocation,
    decode,
    generate_instance,
    order_jobs,
    proportional,
    solve_joint,
    solve_p1,
    synergy_greedy,
    synergy_opt,
    synergy_tune,
)

MEM = np.array([50.0])


def job(jid: str, g: int, cpu: list[float], w: list[float]) -> SynergyJob:
    return SynergyJob(jid, g, np.asarray(cpu, float), MEM, np.asarray(w, float)[:, None])


# ---------------------------------------------------------------------------------- termination and bound
def test_heuristics_end_feasible_with_the_heuristic_limit() -> None:
    inst = generate_instance(32, 0)
    for a in (synergy_tune(inst.servers, inst.jobs), synergy_greedy(inst.servers, inst.jobs), proportional(inst.servers, inst.jobs)):
        assert isinstance(a, Answer) and isinstance(a, SynergyAllocation)
        assert a.termination.reason is TerminationReason.FEASIBLE and a.termination.limit is Limit.HEURISTIC
        assert math.isnan(a.bound) and a.lp_bound is None and a.gap == math.inf
        assert a.objective == a.total_throughput
        d = a.to_dict()
        json.dumps(d, allow_nan=False)
        assert d["termination"] == {"reason": "feasible", "limit": "heuristic", "detail": a.termination.detail}
        assert d["bound"] is None and len(d["jobs"]) == len(inst.jobs)


def test_opt_that_reaches_the_p1_optimum_says_optimal_otherwise_heuristic() -> None:
    """generate_instance(32, 0): the P1 choice packs with integral GPUs (16.58 = the P1 optimum), so OPT has
    proven its answer optimal. The paper's rounding alone gives 15.44 and is a heuristic with the P1 bound."""
    inst = generate_instance(32, 0)
    o = synergy_opt(inst.servers, inst.jobs)
    assert o.is_optimal and o.total_throughput == pytest.approx(16.58) and o.bound == pytest.approx(16.58)
    assert o.stats["placement"] == "packing"
    r = synergy_opt(inst.servers, inst.jobs, placements=("rounding",), improve_time_limit=0)
    assert r.termination.limit is Limit.HEURISTIC and r.total_throughput == pytest.approx(15.44)
    assert r.bound == pytest.approx(16.58) and r.rounding_loss == pytest.approx(16.58 - 15.44)
    assert r.gap == pytest.approx((16.58 - 15.44) / 15.44)


def test_an_incumbent_without_a_proven_bound_reports_no_bound() -> None:
    """Regression (issue 15): P1 stopped by its time limit holding only its warm start (every job at its share)
    proved no bound; the old code reported the incumbent's value as ``lp_bound``, which the answer calls an upper
    bound -- a wrong answer given without a word. Now: bound nan, lp_bound None, and the detail says why."""
    inst = generate_instance(128, 0)
    a = solve_p1(inst.jobs, 128, 384.0, 8000.0, time_limit=0.0)
    assert a.termination.reason is TerminationReason.FEASIBLE and a.termination.limit is Limit.TIME
    assert a.total_throughput == pytest.approx(57.0)  # the warm start: every job at its share
    assert math.isnan(a.bound) and a.lp_bound is None and a.rounding_loss is None
    assert "no finite bound" in a.termination.detail
    j = solve_joint(inst.servers, inst.jobs, time_limit=0.0)
    assert j.has_solution and j.termination.limit is Limit.TIME
    assert math.isnan(j.bound) and j.lp_bound is None and "no finite bound" in j.termination.detail
    assert_allocation(inst.servers, inst.jobs, j)


def test_a_solve_without_solution_is_held_and_raises_on_reading() -> None:
    """OPT with no time: the packing LP ends without a solution. The answer holds that (stage named), raises
    NoSolutionError when the allocation is read and SolveFailedError from raise_for_status."""
    inst = generate_instance(128, 0)
    o = synergy_opt(inst.servers, inst.jobs, time_limit=0.0, placements=("rounding",))
    assert not o.has_solution
    assert o.termination.reason is TerminationReason.NO_SOLUTION_FOUND and o.termination.limit is Limit.TIME
    assert o.termination.detail.startswith("packing LP")
    for read in (lambda: o.per_job, lambda: o.total_throughput, lambda: o.unplaced, o.rows):
        with pytest.raises(NoSolutionError):
            read()
    with pytest.raises(SolveFailedError):
        o.raise_for_status()
    assert [v.path for v in check_allocation(inst.servers, inst.jobs, o)] == ["termination"]
    assert json.loads(json.dumps(o.to_dict()))["jobs"] is None


# ---------------------------------------------------------------------------------------- build / decode
def test_build_decode_through_a_typed_formulation() -> None:
    """Two 1-GPU servers with 4 CPUs; A: W 0.5 / 1 / 2 at 2 / 4 / 6 CPUs, B flat: the joint optimum is 2 (A alone
    on 4 CPUs). The inverse map is typed: the options and levels of the runnable jobs, not model.meta."""
    servers = [Server(1, 4.0, 50.0), Server(1, 4.0, 50.0)]
    jobs = [job("A", 1, [2, 4, 6], [0.5, 1.0, 2.0]), job("B", 1, [2, 4, 6], [1.0, 1.0, 1.0])]
    from schedopt.synergy import SynergyInstance

    spec = SynergyInstance(servers, jobs)
    form = build(spec)
    assert isinstance(form, Formulation) and isinstance(form.inverse, SynergyInverse)
    assert "levels" not in form.model.meta
    assert form.inverse.options.cpu.tolist() == [4.0, 6.0, 2.0, 4.0]  # A: 4 (its share), 6; B: 2, 4 (the share is kept)
    assert [j.id for j in form.inverse.jobs] == ["A", "B"] and form.inverse.runnable.tolist() == [True, True]
    res = schedopt.solve(form.model, "highs")
    ans = decode(spec, form, res)
    assert ans.is_optimal and ans.total_throughput == pytest.approx(2.0) and ans.bound == pytest.approx(2.0)
    assert check_allocation(servers, jobs, ans) == []
    io_ans = PROBLEM_IO.decode(spec, PROBLEM_IO.build(spec), res)
    assert io_ans.objective == pytest.approx(2.0)


# -------------------------------------------------------------------------------------------- ProblemIO
def test_problem_io_is_typed_and_solves_every_method() -> None:
    io = get_problem("synergy")
    assert io is PROBLEM_IO and io.methods[0] == "tune"
    assert set(io.methods) == {"tune", "opt", "proportional", "greedy", "p1", "joint"}
    spec = io.generate(32, 0)
    assert io.size(spec) == (32, len(spec.jobs))
    totals = {}
    for m in io.methods:
        a = io.solve(spec, SolveOptions(method=m, time_limit=20))
        assert a.method == m and a.has_solution
        totals[m] = a.objective
        if m != "p1":  # P1's "server" is the pooled cluster
            assert io.check(spec, a) == []
    assert io.solve(spec, SolveOptions()).method == "tune"
    # hand-checked totals on this set (see the card): proportional 11, queue TUNE + promotion 13.18, GREEDY 12.14,
    # the joint optimum = the P1 optimum = OPT = 16.58
    assert totals["proportional"] == pytest.approx(11.0) and totals["tune"] == pytest.approx(13.18)
    assert totals["greedy"] == pytest.approx(12.14)
    assert totals["joint"] == pytest.approx(16.58) and totals["p1"] == pytest.approx(16.58) and totals["opt"] == pytest.approx(16.58)
    with pytest.raises(InputError) as e:
        io.solve(spec, SolveOptions(method="fastest"))
    assert e.value.field == "method"
    vs = io.check(spec, io.solve(spec, SolveOptions(method="p1")))
    assert vs and all(isinstance(v, Violation) for v in vs)  # a pool allocation is no server allocation


# ---------------------------------------------------------------------------------------------- queues
def _queue_jobs() -> tuple[list[Server], list[SynergyJob], QueueState]:
    servers = [Server(4, 12.0, 200.0)]
    jobs = [job("a", 1, [1, 3], [1, 1]), job("b", 2, [1, 3], [1, 1]), job("c", 1, [1, 3], [1, 1]), job("d", 4, [1, 3], [1, 1])]
    info = {
        "a": JobQueueInfo(arrival=0.0, attained_service=300.0, remaining=900.0, total=1200.0),
        "b": JobQueueInfo(arrival=10.0, attained_service=100.0, remaining=200.0, total=300.0, speedup=2.0),
        "c": JobQueueInfo(arrival=20.0, attained_service=0.0, remaining=1000.0, total=1000.0),
        "d": JobQueueInfo(arrival=5.0, attained_service=50.0, remaining=100.0, total=150.0, speedup=1.0),
    }
    return servers, jobs, QueueState(time=1000.0, info=info)


def test_queue_orders_hand_checked() -> None:
    """FIFO: arrival 0, 5, 10, 20 -> a d b c. SRTF: remaining 900, 200, 1000, 100 -> d b a c (with speedups: b
    200 / 2 = 100 ties d at 100 -> by arrival d (5) before b (10)). LAS: attained x GPUs 300, 200, 0, 200 -> c, then
    b and d tie at 200 -> arrival d (5), b (10), then a. FTF at t = 1000: (1000 - arrival + remaining) / total:
    a 1900/1200 = 1.58, b 1190/300 = 3.97, c 1980/1000 = 1.98, d 1095/150 = 7.3 -> a c b d."""
    _, jobs, st = _queue_jobs()
    ids = lambda js: [j.id for j in js]  # noqa: E731
    assert ids(order_jobs(jobs, "fifo", st)) == ["a", "d", "b", "c"]
    assert ids(order_jobs(jobs, "srtf", st)) == ["d", "b", "a", "c"]
    st2 = QueueState(time=st.time, info=st.info, use_speedup=True)
    assert ids(order_jobs(jobs, "srtf", st2)) == ["d", "b", "a", "c"]
    assert ids(order_jobs(jobs, "las", st)) == ["c", "d", "b", "a"]
    assert ids(order_jobs(jobs, "ftf", st)) == ["a", "c", "b", "d"]
    # starvation: a job not run for 1000 hours jumps the queue (the published priority bump)
    now = 20.0 + 1000 * 3600 + 1
    old = {k: JobQueueInfo(arrival=v.arrival, last_run=now - 60.0) for k, v in st.info.items()}
    old["c"] = JobQueueInfo(arrival=20.0, last_run=None)  # never ran since it arrived 1000 hours ago
    late = QueueState(time=now, info=old)
    assert ids(order_jobs(jobs, "fifo", late))[0] == "c"
    # no state: FIFO keeps the input order
    assert ids(order_jobs(jobs, "fifo")) == ["a", "b", "c", "d"]


def test_tetris_and_drf_orders() -> None:
    """Share 3 CPUs per GPU; best-case demands: a, c 1 GPU at 1 CPU (W flat: the fewest CPUs), b 2 GPUs at 1,
    d 4 GPUs at 1. DRF dominant share = GPUs / 4 (CPU shares are a third of that): a, c 0.25, b 0.5, d 1 ->
    a c b d. Tetris: (GPU share + CPU share + GB share) x remaining: a 0.25+1/12+50/200 = 0.583 x 900 = 525,
    b 1.167 x 200 = 233, c 0.583 x 1000 = 583, d 2.333 x 100 = 233 -> b and d tie (233.3): arrival d (5), b (10)."""
    servers, jobs, st = _queue_jobs()
    assert [j.id for j in order_jobs(jobs, "drf", st, servers=servers)] == ["a", "c", "b", "d"]
    assert [j.id for j in order_jobs(jobs, "tetris", st, servers=servers)] == ["d", "b", "a", "c"]
    with pytest.raises(InputError) as e:
        order_jobs(jobs, "drf", st)
    assert e.value.field == "servers"
    with pytest.raises(InputError) as e:
        order_jobs(jobs, "lifo", st)
    assert e.value.field == "policy"


def test_allocate_round_orders_then_allocates() -> None:
    """4 GPUs; FIFO order a d b c: a (1 GPU) runs, d (4) does not fit the 3 left, b (2) and c (1) run. With LAS
    the order is c d b a: c runs, d does not fit, b and a run -- the same set here; per_job follows the policy."""
    servers, jobs, st = _queue_jobs()
    a = allocate_round(servers, jobs, policy="fifo", state=st)
    assert list(a.per_job) == ["a", "d", "b", "c"] and a.unplaced == ("d",)
    assert check_allocation(servers, order_jobs(jobs, "fifo", st), a) == []
    g = allocate_round(servers, jobs, policy="las", method="greedy", state=st)
    assert list(g.per_job) == ["c", "d", "b", "a"] and g.unplaced == ("d",)
    with pytest.raises(InputError) as e:
        allocate_round(servers, jobs, method="fastest")
    assert e.value.field == "method"


def test_bad_method_options_raise_before_any_solve() -> None:
    inst = generate_instance(32, 0)
    S, J = inst.servers, inst.jobs
    for call, field in (
        (lambda: solve_joint(S, J, formulation="tree", p1_cut=True), "formulation"),
        (lambda: synergy_opt(S, J, placements=("packing", "magic")), "placements"),
        (lambda: synergy_opt(S, J, repair="later"), "repair"),
        (lambda: synergy_opt(S, J, improve_time_limit=-1), "improve_time_limit"),
        (lambda: synergy_tune(S, J, order="random"), "order"),
        (lambda: synergy_tune(S, J, promote="yes"), "promote"),
        (lambda: solve_p1(J, 32, 96.0, 2000.0, warm_start=1), "warm_start"),
    ):
        with pytest.raises(InputError) as e:
            call()
        assert e.value.field == field


def test_greedy_skips_a_job_whose_demand_does_not_fit() -> None:
    """One server (4 GPUs, 12 CPUs). Queue: I (1 GPU, best at 10 CPUs: W 3), J (1 GPU, best at 10 CPUs), L (1 GPU,
    flat: 1 CPU). GREEDY: I takes 10 CPUs; J's 10 do not fit the 2 left: skipped although 3 GPUs are free; L fits
    at 1 CPU: W 3 + 1 = 4. TUNE (no promotion) runs every job: J switches to the share (3 CPUs), still does not
    fit the 2 CPUs left, the peer adjustment moves I back to the share (3 CPUs) and J fits; L at 1 CPU:
    W 1 + 1 + 1 = 3 (with promotion, I climbs back to... nothing: 3 + 3 + 1 = 7 CPUs leave 5, short of 10)."""
    servers = [Server(4, 12.0, 200.0)]
    cpu = [1, 3, 10]
    jobs = [job("I", 1, cpu, [0.3, 1.0, 3.0]), job("J", 1, cpu, [0.3, 1.0, 2.0]), job("L", 1, cpu, [1.0, 1.0, 1.0])]
    gr = synergy_greedy(servers, jobs)
    assert gr.skipped == ("J",) and gr.unplaced == ("J",)
    assert [a.cpu_per_gpu for a in gr.per_job.values()] == [10.0, 0.0, 1.0]
    assert gr.total_throughput == pytest.approx(4.0)
    assert check_allocation(servers, jobs, gr) == []
    for promote in (False, True):
        t = synergy_tune(servers, jobs, promote=promote)
        assert t.unplaced == () and check_allocation(servers, jobs, t) == []
        assert [a.cpu_per_gpu for a in t.per_job.values()] == [3.0, 3.0, 1.0]
        assert t.total_throughput == pytest.approx(3.0)
    assert t.stats["placed_at"] == {"ideal": 2, "proportional": 0, "peer_adjust": 1, "demote_all": 0}
