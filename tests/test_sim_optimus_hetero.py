"""Issue 41: ``optimus`` runs on Sia's heterogeneous cluster heterogeneity-unaware, as the other baselines do (one
pool of GPUs, one step-time model per job on its reference type, each job placed on one GPU type)."""

from __future__ import annotations

from schedopt.sim import Workload, load_workload, simulate_many
from schedopt.sim.policies.optimus import OptimusPolicy
from schedopt.sim.workloads import cluster_preset


def test_optimus_runs_on_sia_64(tmp_path) -> None:
    w = load_workload("saturn/1")
    p = tmp_path / "w.csv"
    p.write_text(Workload("w", w.jobs[:4]).to_csv())
    (res,) = simulate_many(["optimus"], [str(p)], cluster="sia-64", workers=1, progress=False, estimator="oracle")
    s = res.summary()
    assert s["jobs"] == 4 and s["unfinished"] == 0
    for j in res.jobs:  # every spell on one GPU type of the cluster
        assert {seg[2] for seg in j.segments} <= {"t4", "a100", "rtx2080ti"}
    # never more GPUs asked than the cluster holds (one pool of 64)
    assert all(sum(r.info.get("gpus", {}).values()) <= 64 for r in res.rounds)
    assert res.meta.job_model == "sia-measured"


def test_reference_type_and_placement_on_one_type() -> None:
    from schedopt.sia import Config
    from schedopt.sim.policies.base import JobView, RoundState

    cl = cluster_preset("sia-64")
    est = load_workload("saturn/1")  # any application of the zoo

    def view(jid: str, cur: Config | None, nodes: dict[str, int]) -> JobView:
        return JobView(jid, est.jobs[0].application, 0.0, 0.0, 0.0, 0, 1, 128, True, cur, nodes, None,  # type: ignore[arg-type]
                       0.0, 16)

    queued, running = view("q", None, {}), view("r", Config(1, 2, "a100"), {"a100-0": 2})
    assert OptimusPolicy.reference_type(queued, cl).name == "t4"  # most GPUs (24; ties: cluster order)
    assert OptimusPolicy.reference_type(running, cl).name == "a100"
    st = RoundState(0.0, 0, 60.0, cl, (queued, running), None)
    # r grows to 4: stays on its type; q asks 30 GPUs: no type holds them, cut to the most free (24 of t4)
    got = OptimusPolicy.place(st, {"q": 30, "r": 4}, {"q": "t4", "r": "a100"})
    assert {n.rsplit("-", 1)[0] for n in got["r"]} == {"a100"} and sum(got["r"].values()) == 4
    assert sum(got["q"].values()) == 24 and len({n.rsplit("-", 1)[0] for n in got["q"]}) == 1
