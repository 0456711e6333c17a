"""The simulator's Pollux policies are a thin layer over schedopt.pollux (issue 29): a round's decision is the
package's answer on the spec the policy builds, and every answer passes the package's checker."""

from __future__ import annotations

import numpy as np
import pytest

from schedopt.goodput import JobGoodputModel, ThroughputParams
from schedopt.pollux import Columns, PolluxSpec, check_allocation, genetic_search, solve_exact
from schedopt.sia import Cluster, GpuType
from schedopt.sim.policies import get_policy
from schedopt.sim.policies.base import JobView, RoundState
from schedopt.sim.policies.pollux import PolluxExactPolicy, PolluxObjective, PolluxPolicy, node_table

# goodput(r) = 100 r at batch 64 (see tests/test_sim_pollux.py)
LINEAR = JobGoodputModel("linear", {"g": ThroughputParams(0.0, 0.01, 0.0, 0.0, 0.0, 0.0, 1.0)}, 64, 64,
                         {"g": (1, 64)}, (64.0,), (0.0,), (1.0,))
SYNCED = JobGoodputModel("synced", {"g": ThroughputParams(0.0, 0.01, 0.16, 0.0, 0.16, 0.0, 1.0)}, 64, 64,
                         {"g": (1, 64)}, (64.0,), (0.0,), (1.0,))
CLUSTER = Cluster((GpuType("g", 4, 3),))


def _state(round_index: int = 3) -> RoundState:
    jobs = [JobView(id=j, application=e.name, arrival=0.0, age=600.0, attained_gpu_seconds=a, restarts=1,
                    requested_gpus=2, batch_size=64, adaptive=ad, current=None, current_nodes=nd, estimate=e,
                    progress=0.0, max_gpus=8)
            for j, e, a, ad, nd in (("a", LINEAR, 10.0, True, {"g-0": 2}), ("b", SYNCED, 20.0, True, {}),
                                    ("c", LINEAR, 30.0, False, {"g-1": 2}))]
    return RoundState(time=60.0 * round_index, round_index=round_index, round_seconds=60.0, cluster=CLUSTER,
                      jobs=tuple(jobs), placement=None)


def test_ga_policy_decides_what_the_package_answers() -> None:
    st = _state()
    d = PolluxPolicy(seed=5).decide(st)
    obj = PolluxObjective(st)
    ids, cap, typ = node_table(CLUSTER)
    cur = np.zeros((3, len(ids)), np.int64)
    cur[0, 0] = 2
    cur[2, 1] = 2
    spec = obj.spec(Columns(tuple(ids), cap, typ), cur)
    ans = genetic_search(spec, rng=np.random.default_rng([5, 3]))
    assert d.nodes == ans.nodes
    assert d.answer is not None and d.answer.objective_value == pytest.approx(ans.objective_value, rel=1e-12)
    assert check_allocation(spec, ans) == []
    assert ans.nodes["c"] and sum(ans.nodes["c"].values()) == 2  # the rigid job keeps exactly its count


def test_exact_policy_decides_what_the_package_answers() -> None:
    st = _state()
    d = PolluxExactPolicy(backend="highs").decide(st)
    obj = PolluxObjective(st)
    spec = obj.spec(current=PolluxExactPolicy._current(obj))
    ans = solve_exact(spec, backend="highs")
    assert d.allocation == ans.allocation and ans.is_optimal
    assert check_allocation(spec, ans) == []
    assert isinstance(spec, PolluxSpec) and spec.jobs == ("a", "b", "c")  # the published order: attained service


def test_unaware_layer_decision_is_feasible() -> None:
    """Virtual nodes of 4 GPUs (one per real node here): node capacity, the rigid job 0 or 2 GPUs, cap 8."""
    d = get_policy("pollux-unaware").decide(_state())
    assert d.answer is not None and d.answer.has_solution and d.info["jobs"] == 3
    used: dict[str, int] = {}
    for nd in d.nodes.values():
        for n, c in nd.items():
            used[n] = used.get(n, 0) + c
        assert sum(nd.values()) <= 8
    assert all(u <= 4 for u in used.values()) and sum(d.nodes.get("c", {}).values()) in (0, 2)
    assert d.nodes  # something runs
