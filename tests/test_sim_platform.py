"""The simulator as a platform: a user's own policy, placer and admission rule (tests/user_sim/mylas.py, a module of
its own that imports only public names) through simulate, simulate_many (process pool, Dask), an entry point of an
installed distribution and the registry's specs; rigid requests of any size; honest endings of capped runs."""

from __future__ import annotations

import math
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

from schedopt.errors import InputError
from schedopt.sia import Cluster, Config, GpuType, Placement
from schedopt.sim import (
    Decision,
    GpuCap,
    GpuRequest,
    PackingPlacer,
    QueueCap,
    SimTask,
    Workload,
    WorkloadJob,
    cluster_preset,
    get_policy,
    make_policy,
    parse_spec,
    policies,
    register_policy,
    registry,
    run_task,
    simulate,
    simulate_many,
    system_for,
    utilization,
)

USER_DIR = Path(__file__).parent / "user_sim"


@pytest.fixture(autouse=True)
def _user_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(USER_DIR))


def _wl(*jobs: tuple[str, float, str, int, int], name: str = "hand") -> Workload:
    return Workload(name, tuple(WorkloadJob(*j) for j in jobs))


ONE = Cluster((GpuType("t4", 4, 2),))  # 8 T4 GPUs on 2 nodes


# ----------------------------------------------------------------------------------------------- specs and registry


def test_spec_parsing() -> None:
    assert parse_spec("sia:backend=highs:p=-1").name == "sia"
    assert dict(parse_spec("sia:backend=highs:p=-1").options) == {"backend": "highs", "p": -1}
    assert parse_spec("gavel:ftf").name == "gavel:ftf"
    assert parse_spec("mymod:MyPolicy:k=3.5").name == "mymod:MyPolicy"
    for bad in ("", "sia:=3", "sia:p=1:p=2", "sia:p=1:x"):
        with pytest.raises(InputError):
            parse_spec(bad)


def test_options_checked_against_the_factory() -> None:
    with pytest.raises(InputError, match="did you mean 'backend'"):
        get_policy("sia", backnd="highs")
    with pytest.raises(InputError, match="bogus_param"):
        get_policy("sia", bogus_param=1)
    with pytest.raises(InputError, match="boolean"):
        get_policy("fifo", backfill="maybe")
    assert get_policy("fifo", backfill="no").backfill is False  # strict parse: "no" is False, never truthy
    assert make_policy("fifo:backfill=true").backfill is True
    assert make_policy("sia:p=-1:lam=2").p == -1.0
    with pytest.raises(InputError, match="must be a number"):
        make_policy("sia:p=abc")
    with pytest.raises(InputError, match="unknown policy.*did you mean"):
        get_policy("tiresia")
    with pytest.raises(InputError, match="cannot be imported"):
        get_policy("no_such_module_xyz:Policy")


def test_families_found_without_string_dispatch() -> None:
    assert system_for("synergy:las/opt").name == "synergy"
    assert system_for("gandiva:off").name == "gandiva"
    assert system_for("sia").name == "elastic" and system_for("mylas:MyLAS").name == "elastic"
    el = system_for("sia")
    assert el.takes_solver_options("sia") and el.takes_solver_options("gavel")
    assert not el.takes_solver_options("fifo") and not el.takes_solver_options("mylas:MyLAS")
    assert el.default_round_seconds == 60.0 and system_for("synergy").default_round_seconds == 300.0
    with pytest.raises(InputError, match="place and admit their own"):
        run_task(SimTask("synergy", "synergy/philly:jobs=4", placer="packing"))


def test_deprecated_names_still_work() -> None:
    import schedopt.sim as sim

    with pytest.warns(DeprecationWarning, match="adaptive"):
        assert "sia" in sim.ADAPTIVE_POLICIES
    res = simulate(ONE, _wl(("a", 0.0, "cifar10", 2, 128)), get_policy("fifo"), job_model="sia")
    with pytest.warns(DeprecationWarning, match="meta.policy"):
        assert res.meta["policy"] == "fifo"
    assert res.meta.policy == "fifo" and res.meta.placer == "sia" and res.meta.admission == "accept-all"


# ---------------------------------------------------------------------------------------- the user's own module


def test_user_policy_placer_admission_through_simulate() -> None:
    import mylas  # type: ignore[import-not-found]

    w = _wl(("a", 0.0, "cifar10", 4, 128), ("b", 0.0, "cifar10", 2, 128), ("c", 30.0, "cifar10", 2, 128))
    res = simulate(ONE, w, mylas.MyLAS(), job_model="sia", placer=mylas.FirstFitPlacer(),
                   admission=mylas.MaxActive(1))
    rec = {j.id: j for j in res.jobs}
    assert all(j.finish is not None for j in res.jobs)
    # one job admitted at a time: each starts only after the previous one finished, in arrival order
    assert rec["b"].start >= rec["a"].finish and rec["c"].start >= rec["b"].finish
    assert [s[3] for s in rec["a"].segments] == [4.0]  # the requested GPUs, rigidly
    assert res.meta.placer == "first-fit" and res.meta.admission == "max-active" and res.meta.policy == "my-las"


def test_user_policy_by_spec_on_a_process_pool_equals_serial() -> None:
    w = ["pollux/1"]
    kw = {"cluster": "pollux", "max_time": 4 * 3600.0, "job_model": "pollux"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # capped at 4 h on purpose
        serial = simulate_many(["mylas:MyLAS:max_jobs=3"], w, workers=1, **kw)
        pooled = simulate_many(["mylas:MyLAS:max_jobs=3", "tiresias"], w, workers=2, **kw)
    assert pooled[0].jobs == serial[0].jobs and pooled[0].meta == serial[0].meta
    assert serial[0].meta.policy == "mylas:MyLAS:max_jobs=3" and serial[0].meta.capped
    running = [r.active for r in serial[0].rounds]
    assert max(running) > 3  # many jobs are active, at most 3 hold GPUs (checked through the segments)
    t = np.array([r.time for r in serial[0].rounds])
    for tt in t[::50]:
        holding = sum(1 for j in serial[0].jobs for s in j.segments if s[0] <= tt < s[1])
        assert holding <= 3


def test_user_policy_object_pickled_to_dask_workers() -> None:
    distributed = pytest.importorskip("distributed", reason="dask[distributed] is an optional extra")
    import mylas  # type: ignore[import-not-found]

    small = _wl(("a", 0.0, "cifar10", 4, 128), ("b", 60.0, "cifar10", 2, 128), ("c", 90.0, "cifar10", 4, 128))
    path = USER_DIR.parent / "user_sim_small.csv"
    try:
        path.write_text(small.to_csv())
        local = simulate_many([mylas.MyLAS(), "mylas:MyLAS"], [str(path)], cluster="pollux", workers=1)
        with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as lc, distributed.Client(lc) as client:
            client.run(sys.path.insert, 0, str(USER_DIR))
            remote = simulate_many([mylas.MyLAS(), "mylas:MyLAS"], [str(path)], cluster="pollux", executor=client)
    finally:
        path.unlink(missing_ok=True)
    assert [r.jobs for r in remote] == [r.jobs for r in local]
    assert all(len(r.jcts()) == 3 for r in remote)
    assert remote[0].meta.policy == "my-las" and remote[1].meta.policy == "mylas:MyLAS"


def test_entry_point_of_an_installed_distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist = tmp_path / "schedopt_user_las-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: schedopt-user-las\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(textwrap.dedent("""\
        [schedopt.policies]
        user-las = mylas:MyLAS
        [schedopt.placers]
        user-first-fit = mylas:FirstFitPlacer
        [schedopt.admissions]
        user-max-active = mylas:MaxActive
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.reload_entry_points()
    try:
        assert "user-las" in policies()
        with pytest.warns(RuntimeWarning, match="time cap"):
                res = run_task(SimTask("user-las:max_jobs=2", "pollux/1", cluster="pollux", max_time=3600.0,
                                   placer="user-first-fit", admission="user-max-active:limit=3"))
        assert res.meta.placer == "user-first-fit" and res.meta.admission == "user-max-active:limit=3"
        assert res.meta.capped and res.meta.unfinished == len(res.jobs) - len(res.jcts())
    finally:
        monkeypatch.undo()
        registry.reload_entry_points()
    assert "user-las" not in policies()


def test_register_policy_in_process() -> None:
    class Idle:
        name = "idle"

        def decide(self, state: object) -> Decision:
            return Decision()

    register_policy("test-idle", Idle, replace=True)
    with pytest.raises(InputError, match="registered already"):
        register_policy("test-idle", Idle)
    assert type(get_policy("test-idle")) is Idle


# ----------------------------------------------------------------------------------------------- roles and requests


def test_rigid_requests_of_any_size_on_sia64() -> None:
    """12 and 6 GPUs are no Sia configuration on 8-GPU nodes, but a GpuRequest places them (packing most-free
    nodes first): 12 A100s span both A100 nodes, 6 RTX GPUs sit on one node."""

    class Rigid:
        name = "rigid"

        def decide(self, state):  # type: ignore[no-untyped-def]
            return Decision(requests={"big": GpuRequest(12, "a100"), "mid": GpuRequest(6, "rtx2080ti"), "two": 2})

    w = _wl(("big", 0.0, "cifar10", 12, 128), ("mid", 0.0, "cifar10", 6, 128), ("two", 0.0, "cifar10", 2, 128))
    with pytest.warns(RuntimeWarning, match="time cap"):
        res = simulate(cluster_preset("sia-64"), w, Rigid(), job_model="sia", max_time=120.0)
    first = {j.id: j.segments[0] for j in res.jobs}
    assert first["big"][2:] == ("a100", 12.0) and first["mid"][2:] == ("rtx2080ti", 6.0)
    assert first["two"][3] == 2.0 and first["two"][2] == "t4"  # the type with the most free GPUs left (t4: 24)


def test_packing_placer_keeps_unchanged_jobs_and_fills_most_free_nodes() -> None:
    pl = PackingPlacer().place(ONE, {"a": GpuRequest(3), "b": GpuRequest(3)}, None)
    assert {n: len(g) for n, g in pl["a"]} == {"t4-0": 3} and {n: len(g) for n, g in pl["b"]} == {"t4-1": 3}
    again = PackingPlacer().place(ONE, {"b": GpuRequest(3), "c": GpuRequest(2), "a": Config(1, 3, "t4")}, pl)
    assert again["a"] == pl["a"] and again["b"] == pl["b"]
    assert sorted(n for n, _ in again["c"]) == ["t4-0", "t4-1"] and not again.unplaced
    full = PackingPlacer().place(ONE, {"x": GpuRequest(9)}, None)
    assert full.unplaced == ("x",)


def test_a_placer_that_double_books_is_named() -> None:
    class Bad:
        name = "bad"

        def place(self, cluster, want, previous, pinned=()):  # type: ignore[no-untyped-def]
            return Placement(assignments={j: [("t4-0", (0,))] for j in want},
                             configs={j: Config(1, 1, "t4") for j in want})

    import mylas  # type: ignore[import-not-found]

    w = _wl(("a", 0.0, "cifar10", 1, 128), ("b", 0.0, "cifar10", 1, 128))
    with pytest.raises(InputError, match=r"placer\[bad\].*not a free GPU"):
        simulate(ONE, w, mylas.MyLAS(), job_model="sia", placer=Bad())


def test_admission_reject_and_queue_cap() -> None:
    w = _wl(("a", 0.0, "cifar10", 4, 128), ("huge", 0.0, "cifar10", 8, 128), ("b", 0.0, "cifar10", 2, 128))
    res = simulate(ONE, w, get_policy("fifo", backfill=True), job_model="sia", admission=GpuCap(4))
    rec = {j.id: j for j in res.jobs}
    assert rec["huge"].rejected and rec["huge"].start is None and not rec["a"].rejected
    s = res.summary()
    assert (s["rejected"], s["finished"], s["unfinished"], s["capped"]) == (1, 2, 0, False)
    assert res.meta.rejected == 1
    q = simulate(ONE, w, get_policy("fifo"), job_model="sia", admission=QueueCap(1))
    assert all(j.finish is not None for j in q.jobs)
    with pytest.raises(InputError, match="limit"):
        QueueCap(0)


# ------------------------------------------------------------------------------------------------- honest endings


def test_a_capped_run_says_so_and_ends_where_it_stopped() -> None:
    class Never:
        name = "never"

        def decide(self, state):  # type: ignore[no-untyped-def]
            return Decision(requests={v.id: 0 for v in state.jobs})

    w = _wl(("a", 0.0, "cifar10", 1, 128), ("b", 0.0, "cifar10", 1, 128))
    with pytest.warns(RuntimeWarning, match="time cap .* 2 of 2 jobs unfinished"):
        res = simulate(ONE, w, Never(), job_model="sia", max_time=3600.0)
    assert res.meta.capped and res.meta.unfinished == 2 and res.meta.end_time == 3660.0
    s = res.summary()
    assert s["capped"] and s["unfinished"] == 2 and s["makespan_s"] == 3660.0
    t, u = utilization(res)
    assert t[-1] == pytest.approx(3660.0) and np.all(u == 0)


def test_a_finished_run_is_not_capped_and_its_series_end_at_the_last_finish() -> None:
    w = _wl(("a", 0.0, "cifar10", 2, 128))
    res = simulate(ONE, w, get_policy("fifo"), job_model="sia")
    fin = res.jobs[0].finish
    assert not res.meta.capped and res.meta.unfinished == 0 and res.meta.end_time == fin
    assert math.isclose(res.summary()["makespan_s"], fin)
    t, _ = utilization(res)
    assert t[-1] < fin + 60.0


def test_user_module_through_the_command_line(tmp_path: Path) -> None:
    """`schedopt simulate --policy mymod:Class --placer ... --admission ...` in a fresh process, the module found on
    the user's PYTHONPATH; the records name the roles and the JSON document lists them."""
    import json
    import os
    import subprocess

    small = _wl(("a", 0.0, "cifar10", 4, 128), ("b", 60.0, "cifar10", 2, 128), ("c", 90.0, "cifar10", 4, 128))
    wl = tmp_path / "three.csv"
    wl.write_text(small.to_csv())
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(USER_DIR), os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "runs"
    p = subprocess.run([sys.executable, "-m", "schedopt", "simulate", "--policy", "mylas:MyLAS:max_jobs=2,fifo",
                        "--placer", "mylas:FirstFitPlacer", "--admission", "mylas:MaxActive:limit=2",
                        "--workload", str(wl), "--cluster", "pollux", "-o", str(out), "--json"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["simulations"] == 2 and sorted(doc["records"]) == sorted(
        ["mylas-MyLAS-max_jobs-2__three__seed0.jsonl", "fifo__three__seed0.jsonl"])
    from schedopt.sim.records import read_record

    res = read_record(out / "mylas-MyLAS-max_jobs-2__three__seed0.jsonl")
    assert res.meta.placer == "mylas:FirstFitPlacer" and res.meta.admission == "mylas:MaxActive:limit=2"
    assert len(res.jcts()) == 3
    bad = subprocess.run([sys.executable, "-m", "schedopt", "simulate", "--policy", "mylas:MyLAS:max_job=2",
                          "--workload", str(wl), "--cluster", "pollux"], capture_output=True, text=True, env=env,
                         timeout=120)
    assert bad.returncode == 2 and "did you mean 'max_jobs'" in bad.stderr
