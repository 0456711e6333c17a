"""The ``shockwave`` simulator policy (the Sia artifact's Shockwave baseline): its pieces hand-checked, one round
hand-checked, and closed-loop runs with real JCTs."""

from __future__ import annotations

import dataclasses

import pytest

from schedopt.errors import InputError
from schedopt.sia import Cluster, GpuType
from schedopt.sim import Workload, WorkloadJob, get_policy, simulate
from schedopt.sim.policies.base import JobView, RoundState
from schedopt.sim.policies.shockwave import (
    ShockwavePolicy,
    momentum_average,
    relabel_nodes,
    repair_to_types,
    virtual_workers,
)
from schedopt.zoo import load_model

CIFAR = load_model("cifar10")
T4 = Cluster((GpuType("t4", 4, 1),))


def test_momentum_average_weights_estimates_by_the_rounds_they_stood() -> None:
    """Estimates 100 (round 0), 130 (round 2), 160 (round 5, now): windows 2, 3, 0 -> 0.4 x 100 + 0.6 x 130 = 118;
    0.9 x 118 + 0.1 x 160 = 122.2. One estimate is its own average."""
    assert momentum_average([(0, 100.0), (2, 130.0), (5, 160.0)], 5) == pytest.approx(122.2)
    assert momentum_average([(3, 50.0)], 3) == pytest.approx(50.0)


def test_virtual_workers_keep_free_previous_workers_and_walk_a_forward_pointer() -> None:
    """4 servers of 4. b (8 GPUs) first: servers 0, 1. c's previous workers 4-7 are b's now, so c is not kept;
    a then c (order kept within a size) take servers 2 and 3. With c's previous workers 12-15 free, c keeps them
    and a takes server 2."""
    got = virtual_workers([("a", 4), ("b", 8), ("c", 4)], {"c": (4, 5, 6, 7)}, 4, 4)
    assert got == {"b": tuple(range(8)), "a": (8, 9, 10, 11), "c": (12, 13, 14, 15)}
    got = virtual_workers([("a", 4), ("b", 8), ("c", 4)], {"c": (12, 13, 14, 15)}, 4, 4)
    assert got == {"b": tuple(range(8)), "c": (12, 13, 14, 15), "a": (8, 9, 10, 11)}


def test_repair_gives_each_job_its_majority_type_or_nothing() -> None:
    """Servers: t4-0, t4-1 (4 GPUs each), a100-0 (8 GPUs: two virtual servers). "big" holds 8 t4 and 4 a100 virtual
    GPUs: type t4, which has 8 GPUs: nothing. "small" on the last virtual server: a100, packed on a100-0.
    Two t4 jobs of 4 and 2: the 4 takes t4-0 (first of the most free), the 2 then takes t4-1."""
    cl = Cluster((GpuType("t4", 4, 2), GpuType("a100", 8, 1)))
    got = repair_to_types(cl, {"big": tuple(range(12)), "small": (12, 13, 14, 15)}, 4)
    assert got == {"small": {"a100-0": 4}}
    got = repair_to_types(cl, {"two": (4, 5), "four": (0, 1, 2, 3)}, 4)
    assert got == {"four": {"t4-0": 4}, "two": {"t4-1": 2}}


def test_repair_keeps_a_job_on_its_previous_nodes() -> None:
    """From scratch, a (first) packs on t4-0 and b on t4-1; b held t4-0 last round, so it keeps it and a takes t4-1
    (the artifact's simulator restarts a job only when the shape of its placement changes). A job whose previous
    nodes are of another type, or of another size, is packed as usual."""
    cl = Cluster((GpuType("t4", 4, 2), GpuType("a100", 8, 1)))
    w = {"a": (0, 1, 2, 3), "b": (4, 5, 6, 7)}
    assert repair_to_types(cl, w, 4) == {"a": {"t4-0": 4}, "b": {"t4-1": 4}}
    assert repair_to_types(cl, w, 4, {"b": {"t4-0": 4}}) == {"b": {"t4-0": 4}, "a": {"t4-1": 4}}
    assert repair_to_types(cl, w, 4, {"b": {"a100-0": 4}}) == {"a": {"t4-0": 4}, "b": {"t4-1": 4}}
    assert repair_to_types(cl, w, 4, {"b": {"t4-0": 2}}) == {"a": {"t4-0": 4}, "b": {"t4-1": 4}}


def view(jid: str, progress: float) -> JobView:
    return JobView(id=jid, application="cifar10", arrival=0.0, age=0.0, attained_gpu_seconds=0.0, restarts=0,
                   requested_gpus=4, batch_size=int(CIFAR.init_batch), adaptive=False, current=None,
                   current_nodes={}, estimate=CIFAR, progress=progress, max_gpus=4)


def test_one_round_by_hand_the_least_progressed_job_gets_the_window() -> None:
    """One 4-GPU node, two 4-GPU jobs just arrived (targets = their estimates), a half done and b not started.
    Each ftf row asks for all 5 rounds of the window: both cannot have them, so the relaxed plan decides, with
    weight 1 each (rho = 1). A round moves b's progress along the first segment of the log (slope 61.0) and a's
    along [0.4, 0.6] (slope 2.03): every round of the window goes to b, which runs now on the node."""
    pol = ShockwavePolicy()
    st = RoundState(time=0.0, round_index=0, round_seconds=60.0, cluster=T4, jobs=(view("a", 0.5), view("b", 0.0)),
                    placement=None)
    spec, _, stuck = pol.spec(st)
    assert not stuck and spec.share == 1.0
    assert list(spec.ftf_target) == pytest.approx(list(spec.age + spec.remaining_seconds))
    assert spec.steps_done[0] / spec.steps_total[0] == pytest.approx(0.5)
    pol = ShockwavePolicy()
    d = pol.decide(st)
    assert d.info["stage"] == "relaxed"
    assert d.answer is not None and d.answer.schedule.tolist() == [[False] * 5, [True] * 5]
    assert d.nodes == {"b": {"t4-0": 4}}


def run(jobs: tuple[WorkloadJob, ...], policy: str):  # type: ignore[no-untyped-def]
    return simulate(T4, Workload("toy", jobs), get_policy(policy), job_model="sia", estimator="oracle")


def test_closed_loop_without_contention_matches_fifo_exactly() -> None:
    """One 4-GPU job alone (and, in the slow test below, two 2-GPU jobs side by side): Shockwave runs each from its
    arrival to its end without a restart, so every JCT is fifo's: 2167.75 s alone, 3841.08 s at 2 GPUs."""
    one = (WorkloadJob("a", 0.0, "cifar10", 4, 512),)
    r = run(one, "shockwave")
    assert r.jcts() == pytest.approx({"a": 2167.751645246843}) and r.jcts() == run(one, "fifo").jcts()


@pytest.mark.slow
def test_closed_loop_two_jobs_side_by_side_match_fifo() -> None:
    two = (WorkloadJob("a", 0.0, "cifar10", 2, 512), WorkloadJob("b", 0.0, "cifar10", 2, 512))
    r = run(two, "shockwave")
    assert r.jcts() == pytest.approx({"a": 3841.07952005453, "b": 3841.07952005453})
    assert all(j.restarts == 0 for j in r.jobs)


@pytest.mark.slow
def test_closed_loop_with_contention_time_slices_every_round() -> None:
    """Three 4-GPU jobs on one 4-GPU node. fifo runs them one after the other (2167.75, 4387.75, 6507.75 s).
    Shockwave re-plans every 60 s round and its plan has no switching cost: the job behind on the log (or the one
    with the most time left, the makespan term's tie-break) takes the node, so the jobs swap almost every round,
    each swap paying the checkpoint-restore delay: every job restarts dozens of times and finishes after fifo's
    last one; the work itself is unchanged (each job's GPU time is its lone time plus its restarts)."""
    jobs = (WorkloadJob("a", 0.0, "cifar10", 4, 512), WorkloadJob("b", 0.0, "cifar10", 4, 512),
            WorkloadJob("c", 100.0, "cifar10", 4, 512))
    f = run(jobs, "fifo").jcts()
    assert f == pytest.approx({"a": 2167.751645246843, "b": 4387.751645246843, "c": 6507.751645246843})
    r = run(jobs, "shockwave")
    s = r.jcts()
    assert set(s) == {"a", "b", "c"}
    assert min(s.values()) > max(f.values())
    assert all(j.restarts >= 20 for j in r.jobs)


def test_reopt_rounds_replays_the_window_until_it_is_due_or_the_jobs_change() -> None:
    """reopt_rounds=3 (uw-mad-dash/shockwave uses 8): rounds 0-2 follow the plan made at round 0 (b, the least
    progressed, all window long), round 3 re-plans; a new job at round 4 forces a re-plan."""
    pol = ShockwavePolicy(reopt_rounds=3)
    jobs = (view("a", 0.5), view("b", 0.0))

    def at(k: int, js: tuple[JobView, ...] = jobs) -> RoundState:
        return RoundState(time=60.0 * k, round_index=k, round_seconds=60.0, cluster=T4, jobs=js, placement=None)

    got = [pol.decide(at(k)) for k in range(4)]
    assert [d.info["replanned"] for d in got] == [True, False, False, True]
    assert [d.nodes for d in got[:3]] == [{"b": {"t4-0": 4}}] * 3
    assert got[1].answer is None and got[3].answer is not None
    assert pol.decide(at(4, (*jobs, view("c", 0.0)))).info["replanned"] is True
    with pytest.raises(InputError, match="reopt_rounds"):
        ShockwavePolicy(reopt_rounds=0)


def test_steps_left_is_remaining_steps_bit_for_bit_and_follows_progress() -> None:
    """The policy's per-job cache of the steps left gives exactly ``remaining_steps`` (the same float, so the plan
    is unchanged), and recomputes when the job's progress moves: half done is the training curve's later half."""
    from schedopt.sim.policies.gavel import remaining_steps

    pol = ShockwavePolicy()
    a0, a1 = view("a", 0.0), view("a", 0.5)
    assert pol._steps_left(a0) == remaining_steps(a0)
    assert pol._steps_left(a0) == remaining_steps(a0)  # the cached value
    assert pol._steps_left(a1) == remaining_steps(a1) < remaining_steps(a0)


def test_node_modes_keep_scratch_relabel() -> None:
    """Two 4-GPU t4 nodes, one 4-GPU job that held t4-1: it keeps t4-1 (``keep``, the default, and ``relabel``:
    t4-0 from scratch renamed t4-1), or takes virtual server 0, i.e. t4-0, and restarts (``scratch``)."""
    cl = Cluster((GpuType("t4", 4, 2),))
    held = dataclasses.replace(view("a", 0.0), current_nodes={"t4-1": 4})
    st = RoundState(time=0.0, round_index=0, round_seconds=60.0, cluster=cl, jobs=(held,), placement=None)
    assert ShockwavePolicy().decide(st).nodes == {"a": {"t4-1": 4}}
    assert get_policy("shockwave:nodes=relabel").decide(st).nodes == {"a": {"t4-1": 4}}
    assert get_policy("shockwave:nodes=scratch").decide(st).nodes == {"a": {"t4-0": 4}}
    with pytest.raises(InputError, match="nodes"):
        ShockwavePolicy(nodes="stay")


def test_keeping_nodes_splits_a_job_a_free_node_holds_and_relabel_does_not() -> None:
    """Two 8-GPU a100 nodes; k (4 GPUs) ran on a100-0, n (8 GPUs) is new. ``keep``: k stays, and n takes the
    virtual servers with the most free GPUs, the free half of a100-0 first, then half of a100-1: n runs on two
    nodes though a100-1 alone holds it. From scratch (largest first) n takes a100-0 whole and k moves to a100-1;
    ``relabel`` swaps the two names: k stays on a100-0, n gets a100-1 whole (the shape from scratch, no restart)."""
    cl = Cluster((GpuType("a100", 8, 2),))
    w = {"k": (0, 1, 2, 3), "n": tuple(range(4, 12))}
    prev = {"k": {"a100-0": 4}}
    assert repair_to_types(cl, w, 4, prev) == {"k": {"a100-0": 4}, "n": {"a100-0": 4, "a100-1": 4}}
    scratch = repair_to_types(cl, w, 4)
    assert scratch == {"n": {"a100-0": 8}, "k": {"a100-1": 4}}
    assert relabel_nodes(cl, scratch, prev) == {"n": {"a100-1": 8}, "k": {"a100-0": 4}}
    assert relabel_nodes(cl, scratch, {}) == scratch  # nothing to keep: names unchanged


def test_series_arrays_give_momentum_average_bit_for_bit() -> None:
    """The policy's growing arrays of estimates (past their first doubling) give exactly ``momentum_average`` of the
    same list, including an estimate made in the round itself (a window of 0 rounds)."""
    from schedopt.sim.policies.shockwave import _Series

    ser, lst = _Series(), []
    for k in range(40):
        est = 1000.0 + 37.0 * k + (k % 7) * 0.1
        ser.append(3 * k, est)
        lst.append((3 * k, est))
        assert ser.average(3 * k, 0.9) == momentum_average(lst, 3 * k)
        assert ser.average(3 * k + 2, 0.9) == momentum_average(lst, 3 * k + 2)
