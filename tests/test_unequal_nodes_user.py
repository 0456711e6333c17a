"""A user's own node-map policy on nodes of unequal sizes (issue 38): a module written as someone outside schedopt
would (public names only: ``RoundState.cluster``, ``GpuType.sizes``, ``Cluster.node_gpus``), named by its spec
``module:Class`` and run unchanged by ``schedopt.sim.simulate`` and ``schedopt.live.Session``."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from schedopt.cluster import Cluster
from schedopt.live import ClusterState, JobSubmitted, LiveJob, NodeState, Session
from schedopt.sim import Workload, WorkloadJob, make_policy, simulate

USER_MODULE = '''
"""First fit on each node's own GPUs: rigid jobs in arrival order; a running job keeps its nodes; a new one takes
the node with the fewest free GPUs that holds all it asks (one node), else waits."""

from schedopt.sim import Decision, RoundState


class OwnFirstFit:
    name = "own-first-fit"

    def decide(self, state: RoundState) -> Decision:
        cl = state.cluster
        free = {n: cl.node_gpus(n) for t in cl.gpu_types for n in t.ids}
        nodes = {}
        for v in state.jobs:
            if v.current_nodes:
                nodes[v.id] = dict(v.current_nodes)
                for n, c in v.current_nodes.items():
                    free[n] -= c
        for v in sorted(state.jobs, key=lambda v: (v.arrival, v.id)):
            if v.id in nodes:
                continue
            fit = [n for n, g in free.items() if g >= v.requested_gpus]
            if fit:
                n = min(fit, key=lambda n: (free[n], n))
                nodes[v.id] = {n: v.requested_gpus}
                free[n] -= v.requested_gpus
        return Decision(nodes=nodes)
'''


@pytest.fixture()
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "own_firstfit.py").write_text(textwrap.dedent(USER_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    return "own_firstfit:OwnFirstFit"


def test_a_users_node_map_policy_runs_in_simulate_and_in_a_session(user_module: str) -> None:
    """Nodes big (8 A100s) and small (6): jobs of 6, 8 and 2 GPUs arriving in that order. By hand: 6 takes small
    (the fewest free that holds it: 6 against 8), 8 takes big, 2 waits (nothing left) until the 6-GPU job ends.
    The session on the same nodes (the 6-GPU node as an 8-GPU node with 2 failed GPUs) gives the same first plan."""
    cl = Cluster.from_nodes([("big", "a100", 8), ("small", "a100", 6)])
    wl = Workload("three", (WorkloadJob("a", 0.0, "cifar10", 6, 128), WorkloadJob("b", 0.0, "cifar10", 8, 128),
                            WorkloadJob("c", 0.0, "cifar10", 2, 128)))
    res = simulate(cl, wl, make_policy(user_module), job_model="sia", progress=False)
    start = {j.id: j.start for j in res.jobs}
    fin = {j.id: j.finish for j in res.jobs}
    assert start["a"] == start["b"] == 0.0 and start["c"] is not None and start["c"] >= min(fin["a"], fin["b"])
    s = Session(ClusterState((NodeState("big", "a100", 8), NodeState("small", "a100", 8, failed_gpus=(1, 4)))),
                user_module, job_model="sia")
    for j in wl.jobs:
        s.apply(JobSubmitted(0.0, LiveJob(j.name, j.application, 0.0, requested_gpus=j.num_replicas)))
    plan = s.decide(0.0)
    assert plan.jobs["a"].placement == {"small": (0, 2, 3, 5, 6, 7)}  # its 6 healthy GPUs, renumbering undone
    assert plan.jobs["b"].placement == {"big": tuple(range(8))}
    assert plan.jobs["c"].placement == {} and plan.jobs["c"].action.value == "queue"
