"""schedopt.live: a session over a live cluster decides as the simulator does (the same decision step), keeps running
jobs where they are, never allocates what is down, drained or failed, and survives a restart in a new process."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from schedopt.errors import InputError
from schedopt.live import (
    Action,
    ClusterState,
    JobCancelled,
    JobFinished,
    JobProgress,
    JobSubmitted,
    LiveJob,
    Measurement,
    NodeDown,
    NodeDrained,
    NodeState,
    NodeUp,
    NodeUpdated,
    Plan,
    ReplayExecutor,
    Session,
    event_from_dict,
    event_to_dict,
)
from schedopt.sia import Cluster, Config, GpuType
from schedopt.sim import Decision, Workload, cluster_preset, engine, load_workload, make_policy, simulate

ROOT = Path(__file__).resolve().parents[1]
USER_DIR = Path(__file__).parent / "user_live"


@pytest.fixture(autouse=True)
def _user_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(USER_DIR))


def _policy(name: str) -> Any:
    if name == "user":
        from smallfirst import SmallestFirst  # a user's module, imported as a user would

        return SmallestFirst()
    return make_policy(name)


Round = tuple[float, dict[str, list[tuple[str, tuple[int, ...]]]], dict[str, tuple[int, int, int]]]


def _sim_rounds(cluster: Cluster, wl: Workload, policy: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[Round]]:
    """simulate's result and, per round, the placement and every running job's (local batch, accumulation, batch)
    as the engine carried them into the jobs (recorded around engine.apply_decision)."""
    rec: list[Round] = []
    real = engine.apply_decision

    def spy(active: Any, rd: Any, t: float, extra: float, jm: Any) -> None:
        real(active, rd, t, extra, jm)
        rec.append((t, {str(j): [(n, tuple(g)) for n, g in s] for j, s in rd.placement.assignments.items()},
                    {j.id: (j.local_bsz, j.accum, j.batch) for j in active.values() if j.nodes}))

    with monkeypatch.context() as m:
        m.setattr(engine, "apply_decision", spy)
        res = simulate(cluster, wl, policy)
    return res, rec


def _live_round(p: Plan) -> Round:
    return (p.time, {j: list(jp.placement.items()) for j, jp in p.jobs.items() if jp.placement},
            {j: (jp.local_batch, jp.accumulation, jp.batch_size) for j, jp in p.jobs.items() if jp.placement})


def _assert_same(wl: Workload, policy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    cl = cluster_preset("sia-64")
    res, rounds = _sim_rounds(cl, wl, _policy(policy), monkeypatch)
    ex = ReplayExecutor(Session(cl, _policy(policy)), wl)
    plans = ex.run()
    # simulate asks the policy only in rounds that may change (a policy's stable_until: FIFO, Tiresias); the session
    # decides every round, and in a quiet round its plan must be the last decision as it stands
    by_time = {r[0]: r for r in rounds}
    assert len(plans) >= len(rounds) > 0 and set(by_time) <= {p.time for p in plans}
    want: Round | None = None
    for k, p in enumerate(plans):
        if p.time in by_time:
            want = by_time[p.time]
        assert want is not None, f"round {k} (t = {p.time}): the session decided before simulate did"
        assert _live_round(p) == (p.time, *want[1:]), f"round {k} (t = {p.time}) differs"
    assert ex.records() == res.jobs  # arrival, start, finish, restarts, GPU-seconds by type: bit for bit


@pytest.mark.parametrize("policy,n", [("sia", 16), ("tiresias", 40), ("user", 40)])
def test_replay_prefix_equals_simulate(policy: str, n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first jobs of saturn/1 through the live session and the replay executor: every round's allocation,
    placement and batch sizes are simulate's, and so are the job records."""
    wl = load_workload("saturn/1")
    _assert_same(Workload("prefix", wl.jobs[:n]), policy, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["sia", "tiresias", "user"])
def test_replay_saturn_equals_simulate(policy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _assert_same(load_workload("saturn/1"), policy, monkeypatch)


# ------------------------------------------------------------------------------------------- state that survives


_RESTORE = """
import json, sys
from schedopt.live import Session, event_from_dict
s = Session.restore(sys.argv[1])
for e in json.loads(sys.argv[2]):
    s.apply(event_from_dict(e))
print(json.dumps(s.decide(float(sys.argv[3])).to_dict()["jobs"]))
"""


def test_restore_in_a_new_process_decides_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sia on a saturn/1 prefix, saved after every decision (state_path): (a) a new Python process restores the file
    written by the 8th round's decision, takes the events the cluster sent since, and decides the 9th round as the
    uninterrupted session did; (b) a Session restored from the file of the 9th decision, given the events sent
    since, continues the replay to the end with the same plans, round for round."""
    wl = Workload("prefix", load_workload("saturn/1").jobs[:10])
    cl = cluster_preset("sia-64")
    ref = ReplayExecutor(Session(cl, "sia"), wl).run()
    path = tmp_path / "state.json"
    s = Session(cl, "sia", state_path=str(path))
    log: list[Any] = []  # the events the cluster sends, and the decisions
    real_apply, real_decide = s.apply, s.decide
    monkeypatch.setattr(s, "apply", lambda e: (log.append(event_to_dict(e)), real_apply(e))[1])
    monkeypatch.setattr(s, "decide", lambda t: (log.append(None), real_decide(t))[1])
    ex = ReplayExecutor(s, wl)
    ex.run(8)
    saved = path.read_text()  # saved by the last decision
    n_decided = log.count(None)
    nxt = ex.step()
    assert nxt is not None and nxt.to_dict()["jobs"] == ref[8].to_dict()["jobs"]
    marks = [k for k, x in enumerate(log) if x is None]
    events = log[marks[n_decided - 1] + 1: marks[n_decided]]  # what the cluster sent between the two decisions
    assert events
    (tmp_path / "saved.json").write_text(saved)
    out = subprocess.run([sys.executable, "-c", _RESTORE, str(tmp_path / "saved.json"), json.dumps(events),
                          repr(nxt.time)], capture_output=True, text=True, cwd=ROOT, timeout=120, check=True)
    assert json.loads(out.stdout) == ref[8].to_dict()["jobs"]
    restored = Session.restore(str(path))  # a fresh object from the file saved by the last decision
    for e in log[marks[n_decided] + 1:]:  # the cluster sends again what it reported since (lost with the process)
        restored.apply(event_from_dict(e))
    ex.session = restored
    rest = ex.run()
    assert [p.to_dict()["jobs"] for p in rest] == [p.to_dict()["jobs"] for p in ref[9:]]
    assert json.loads(path.read_text())["version"] == 1


def test_save_is_atomic_and_restore_checks_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    s = Session(Cluster((GpuType("a100", 8, 1),)), "fifo")
    s.save(str(path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]  # no temporary file left behind
    doc = json.loads(path.read_text())
    doc["roles_sha256"] = "0" * 64
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="SHA-256") as e:
        Session.restore(str(path))
    assert e.value.field == "document.roles"
    with pytest.raises(InputError, match="no saved session") as e:
        Session.restore(str(tmp_path / "missing.json"))
    doc["version"] = 99
    with pytest.raises(InputError) as e:
        Session.from_document(doc)
    assert e.value.field == "document.version"


# --------------------------------------------------------------------------------------------- the live cluster


def _cluster(*nodes: NodeState) -> ClusterState:
    return ClusterState(tuple(nodes))


def _held(plan: Plan) -> set[tuple[str, int]]:
    return {(n, g) for jp in plan.jobs.values() for n, gs in jp.placement.items() for g in gs}


def test_failed_gpus_and_down_nodes_are_never_allocated() -> None:
    """Two 4-GPU T4 nodes, GPU 1 of n1 failed: fifo's rigid 3-GPU jobs run on n1's GPUs {0, 2, 3} and on n2; the
    renumbering past the failed GPU is undone in the plan. n2 goes down: its job is preempted, and the next job
    cannot start anywhere."""
    cs = _cluster(NodeState("n1", "t4", 4, failed_gpus=(1,)), NodeState("n2", "t4", 4))
    s = Session(cs, "fifo")
    for k in range(3):
        s.apply(JobSubmitted(0.0, LiveJob(f"j{k}", "cifar10", 0.0, requested_gpus=3)))
    p = s.decide(0.0)
    assert [p.jobs[j].action for j in ("j0", "j1", "j2")] == [Action.START, Action.START, Action.QUEUE]
    assert ("n1", 1) not in _held(p)
    assert {n for j in ("j0", "j1") for n in p.jobs[j].placement} == {"n1", "n2"}
    on_n1 = next(j for j in ("j0", "j1") if "n1" in p.jobs[j].placement)
    assert p.jobs[on_n1].placement == {"n1": (0, 2, 3)}
    on_n2 = next(j for j in ("j0", "j1") if "n2" in p.jobs[j].placement)
    s.apply(NodeDown(10.0, "n2"))
    p2 = s.decide(60.0)
    assert p2.jobs[on_n1].action is Action.KEEP and p2.jobs[on_n1].placement == {"n1": (0, 2, 3)}
    assert p2.jobs[on_n2].action is Action.QUEUE and p2.jobs["j2"].action is Action.QUEUE
    assert all(n == "n1" for n, _ in _held(p2))
    s.apply(NodeUp(70.0, "n2"))
    p3 = s.decide(120.0)
    assert p3.jobs[on_n2].action is Action.START and p3.jobs[on_n2].placement == {"n2": (0, 1, 2)}
    assert s.jobs[on_n2].restarts == 1  # it had started before: its second start is a restart


def test_a_gpu_failing_under_a_job_requeues_it() -> None:
    s = Session(_cluster(NodeState("n1", "t4", 4), NodeState("n2", "t4", 4)), "fifo")
    s.apply(JobSubmitted(0.0, LiveJob("a", "cifar10", 0.0, requested_gpus=4)))
    s.apply(JobSubmitted(0.0, LiveJob("b", "cifar10", 0.0, requested_gpus=4)))
    p = s.decide(0.0)
    node_a = next(iter(p.jobs["a"].placement))
    s.apply(NodeUpdated(5.0, NodeState(node_a, "t4", 4, failed_gpus=(2,))))
    p2 = s.decide(60.0)
    assert p2.jobs["a"].action is Action.QUEUE and p2.jobs["b"].action is Action.KEEP
    assert (node_a, 2) not in _held(p2)


def test_drained_node_keeps_its_jobs_and_takes_no_new_one() -> None:
    s = Session(_cluster(NodeState("n1", "t4", 4), NodeState("n2", "t4", 4)), "fifo")
    s.apply(JobSubmitted(0.0, LiveJob("a", "cifar10", 0.0, requested_gpus=2)))
    p = s.decide(0.0)
    na = next(iter(p.jobs["a"].placement))
    s.apply(NodeDrained(1.0, na))
    s.apply(JobSubmitted(1.0, LiveJob("b", "cifar10", 1.0, requested_gpus=4)))
    s.apply(JobSubmitted(1.0, LiveJob("c", "cifar10", 1.0, requested_gpus=2)))
    p2 = s.decide(60.0)
    assert p2.jobs["a"].action is Action.KEEP and p2.jobs["a"].placement == p.jobs["a"].placement
    assert na not in p2.jobs["b"].placement and p2.jobs["b"].action is Action.START
    assert p2.jobs["c"].action is Action.QUEUE  # the drained node's 2 free GPUs are not offered
    s.apply(JobFinished(70.0, "a"))
    assert s.cluster.num_gpus == 4  # the drained node's GPUs leave with its last job
    s.apply(NodeUp(80.0, na))
    assert s.decide(120.0).jobs["c"].action is Action.START


def test_a_running_job_keeps_its_gpus_and_is_not_capped() -> None:
    """A job already running on 8 GPUs when the session starts (its placement and its measured step at 8 GPUs
    given): Sia keeps it on the same 8 GPUs (the growth rule counts what it runs on: up to 16, where a fresh job
    may take 1), at the batch its profile gives there."""
    cs = _cluster(*(NodeState(f"a{k}", "a100", 8) for k in range(3)))
    s = Session(cs, "sia")
    running = LiveJob("big", "cifar10", 0.0, requested_gpus=8, placement={"a1": tuple(range(8))},
                      measurements=(Measurement("a100", 1, 8, 128, 0.036, 0.0),), progress=0.2)
    s.apply(JobSubmitted(0.0, running))
    s.apply(JobSubmitted(0.0, LiveJob("new", "cifar10", 0.0)))
    assert s.jobs == {} and s.pending[0].max_gpus == 16
    p = s.decide(60.0)
    big = p.jobs["big"]
    assert big.action is Action.KEEP and big.placement == {"a1": tuple(range(8))} and big.gpus == 8
    assert big.restart_seconds is None and big.local_batch is not None and big.batch_size == 8 * big.local_batch > 0
    assert "a1" not in p.jobs["new"].placement and p.jobs["new"].action is Action.START
    assert s.decide(60.0) is p  # asked again with nothing new: the same plan


def test_reported_gradient_statistics_set_the_estimate_and_the_batch() -> None:
    """A job reporting a large gradient variance (noisy gradients: large batches pay off) gets a larger batch on
    its GPUs than its profile's curve gives, and its estimate carries the reported statistics; through a save too."""
    s = Session(_cluster(NodeState("a", "a100", 8)), "fifo", adaptive=True, job_model="pollux")
    s.apply(JobSubmitted(0.0, LiveJob("j", "cifar10", 0.0, requested_gpus=4, placement={"a": (0, 1, 2, 3)})))
    p0 = s.decide(0.0).jobs["j"]
    s.apply(JobProgress(10.0, "j", grad_sqr=1.0, grad_var=1e4))
    p1 = s.decide(60.0).jobs["j"]
    assert p1.action is Action.KEEP and p1.batch_size is not None and p0.batch_size is not None
    assert p1.batch_size > p0.batch_size
    est = s.view(s.jobs["j"], 60.0).estimate
    assert (est.grad_sqr, est.grad_var) == ((1.0,), (1e4,))
    r = Session.from_document(json.loads(json.dumps(s.to_document())))
    assert r.jobs["j"].grad == (1.0, 1e4) and r.view(r.jobs["j"], 60.0).estimate == est


class _Greedy:
    """A policy that asks for more GPUs than a node has (a bad decision)."""

    name = "greedy"

    def decide(self, state: Any) -> Decision:
        return Decision(nodes={v.id: {state.cluster.node_ids("t4")[0]: 5} for v in state.jobs})


def test_a_bad_decision_names_policy_and_job_and_changes_nothing() -> None:
    s = Session(_cluster(NodeState("n1", "t4", 4)), _Greedy())
    s.apply(JobSubmitted(0.0, LiveJob("j", "cifar10", 0.0, requested_gpus=1)))
    before = s.to_document()
    with pytest.raises(InputError) as e:
        s.decide(0.0)
    assert "policy[greedy]" in e.value.field and "j" in e.value.field
    after = s.to_document()
    assert {k: v for k, v in after.items() if k != "roles" and k != "roles_sha256"} == {
        k: v for k, v in before.items() if k != "roles" and k != "roles_sha256"}


def test_events_are_checked() -> None:
    s = Session(_cluster(NodeState("n1", "t4", 4)), "fifo")
    s.apply(JobSubmitted(0.0, LiveJob("j", "cifar10", 0.0)))
    s.decide(60.0)
    with pytest.raises(InputError) as e:
        s.apply(JobFinished(10.0, "j"))
    assert e.value.field == "event.time"
    with pytest.raises(InputError) as e:
        s.apply(JobFinished(61.0, "nope"))
    assert e.value.field == "event.job_id"
    with pytest.raises(InputError) as e:
        s.apply(JobSubmitted(61.0, LiveJob("j", "cifar10", 61.0)))
    assert e.value.field == "job.id"
    with pytest.raises(InputError) as e:
        s.apply(JobSubmitted(61.0, LiveJob("k", "cifar10", 61.0, requested_gpus=5, kind="rigid")))
    assert e.value.field == "job[k].requested_gpus"
    with pytest.raises(InputError) as e:
        s.apply(JobSubmitted(61.0, LiveJob("k", "nosuchapp", 61.0)))
    assert e.value.field == "job[k].application"
    with pytest.raises(InputError) as e:
        s.apply(NodeDown(61.0, "n9"))
    assert e.value.field == "node"
    with pytest.raises(InputError) as e:
        s.decide(30.0)
    assert e.value.field == "now"
    s.apply(JobCancelled(62.0, "j"))
    with pytest.raises(InputError, match="cancelled already"):
        s.apply(JobProgress(63.0, "j", progress=0.5))
    with pytest.raises(InputError) as e:
        NodeState("n1", "t4", 4, failed_gpus=(4,))
    assert e.value.field == "node[n1].failed_gpus[0]"


def test_event_documents_round_trip_and_name_bad_fields() -> None:
    evs = [JobSubmitted(1.0, LiveJob("j", "bert", 1.0, 4, 64, "strong", placement={"n": (0, 1)})),
           JobProgress(2.0, "j", 0.25, 3, (Measurement("a100", 1, 2, 32, 0.5, 0.1),), 32, 1),
           NodeUpdated(3.0, NodeState("n", "a100", 8, "drained", (7,), 64, 512.0)), NodeDown(4.0, "n"),
           JobFinished(5.0, "j")]
    for e in evs:
        assert event_from_dict(json.loads(json.dumps(event_to_dict(e)))) == e
    bad: list[tuple[Mapping[str, Any], str]] = [
        ({"type": "JobFinished", "time": 1.0}, "event.job_id"),
        ({"type": "Nope", "time": 1.0}, "event.type"),
        ({"type": "NodeDown", "time": float("nan"), "node": "n"}, "event.time"),
        ({"type": "JobSubmitted", "time": 1.0, "job": {"id": "j", "application": "x", "submitted": 0, "gpus": 2}},
         "event.job.gpus"),
        ({"type": "JobSubmitted", "time": 1.0, "job": {"id": "j", "application": "x", "submitted": 0,
                                                      "requested_gpus": "2"}}, "event.job.requested_gpus"),
        ({"type": "JobProgress", "time": 1.0, "job_id": "j", "measurements": [{"gpu_type": "a", "nodes": 1,
          "gpus": 1, "local_batch": 8, "step_time": 0.1, "sync_time": 0.2}]}, "event.measurements[0].sync_time"),
    ]
    for doc, field in bad:
        with pytest.raises(InputError) as e:
            event_from_dict(doc)
        assert e.value.field == field, (doc, e.value)


def test_session_sees_the_simulators_cluster_and_configs() -> None:
    """A ClusterState made from a simulator cluster gives the policy that very cluster (equal, same node ids)."""
    cl = cluster_preset("sia-64")
    s = Session(cl, "sia")
    assert s.cluster == cl
    assert [n.name for n in ClusterState.from_cluster(cl).nodes][:2] == cl.node_ids(cl.type_names[0])[:2]
    assert Config(1, 2, "a100").label == "1x2xa100"
