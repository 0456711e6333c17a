"""The simulator never crashes, hangs or answers silently on bad input (issue 25): the bounds of
``schedopt.sim.limits``, ``Workload`` validation, workload files in any encoding and line ending, hopeless jobs, and
the solver side's last fuzz cases, each pinned by a test named after the bug."""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

# the toy world of tests/test_sim.py: one type "g" (1 node x 2 GPUs), a true rate of exactly 1 progress unit per
# second on any GPU count (alpha_c = 1 s per step, no network time, gain 1); "short" needs 20 units, "long" 80;
# restart delay 30 s
from sim_toy import TOY, TOY_CLUSTER, _toy_app  # noqa: F401 - the shared toy world (tests/sim_toy.py)

from schedopt.errors import InputError
from schedopt.sia import Cluster, Config, GpuType
from schedopt.sim import (
    Decision,
    Workload,
    WorkloadJob,
    get_policy,
    limits,
    load_workload,
    read_jsonl,
    simulate,
)
from schedopt.sim.feasibility import HopelessJobWarning, hopeless_jobs, min_seconds
from schedopt.sim.workloads import UnsortedWorkloadWarning, read_workload
from schedopt.testing import fuzz

SMALL = Cluster((GpuType("t4", 4, 2), GpuType("a100", 8, 1)))


def _toy(*jobs: tuple[str, float, str]) -> Workload:
    return Workload("toy", tuple(WorkloadJob(n, t, app, 2, 8) for n, t, app in jobs))


# ---------------------------------------------------------------------------------------------- limits
def test_round_length_of_1e_minus_9_is_a_named_error_not_a_hang() -> None:
    """issue 25: round_seconds=1e-9 had no lower bound and no round cap (a hang); 0 and -1 too."""
    w = _toy(("A", 0.0, "short"))
    t0 = time.perf_counter()
    for bad in (1e-9, 0, -1.0, math.nan, math.inf, True, "60", 86400.5):
        with pytest.raises(InputError) as e:
            simulate(TOY_CLUSTER, w, get_policy("fifo"), job_model=TOY, round_seconds=bad)
        assert e.value.field == "round_seconds"
    assert time.perf_counter() - t0 < 1.0
    assert limits.check_round_seconds(1) == 1.0 and limits.check_round_seconds(np.float64(86400.0)) == 86400.0
    with pytest.raises(InputError, match=r"--round-seconds=0: must be >= MIN_ROUND_SECONDS = 1 s"):
        limits.check_round_seconds(0, "--round-seconds")


def test_a_run_past_max_rounds_is_refused_before_its_first_round() -> None:
    """1 s rounds to a ten-year cap would be 3.2e8 rounds: refused at once, naming the round length."""
    w = _toy(("A", 0.0, "short"))
    t0 = time.perf_counter()
    with pytest.raises(InputError, match=r"round_seconds=1\.0: would allow 315,360,001 rounds"):
        simulate(TOY_CLUSTER, w, get_policy("fifo"), job_model=TOY, round_seconds=1, max_time=10 * 365 * 86400.0)
    assert time.perf_counter() - t0 < 1.0
    assert limits.check_rounds(600.0, 60.0) == 11  # rounds at 0, 60, ..., 600
    with pytest.raises(InputError):
        limits.check_rounds(limits.MAX_ROUNDS * 60.0, 60.0)


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf, 1e300, "600", True])
def test_max_time_is_finite_positive_and_bounded(bad: object) -> None:
    with pytest.raises(InputError) as e:
        simulate(TOY_CLUSTER, _toy(("A", 0.0, "short")), get_policy("fifo"), job_model=TOY, max_time=bad)
    assert e.value.field == "max_time"


def test_seeds_are_integers_in_0_to_2_32_and_a_huge_range_is_refused_without_building_it() -> None:
    """issue 25: '--seeds 0-100000000' materialized 10**8 tasks. parse_seeds counts first (the CLI's), check_seeds
    counts a range by its length (simulate_many's)."""
    t0 = time.perf_counter()
    with pytest.raises(InputError, match=r"--seeds='0-100000000': names more than 100,000 seeds"):
        limits.parse_seeds("0-100000000")
    with pytest.raises(InputError, match="range of 100,000,000 seeds"):
        limits.check_seeds(range(10**8))
    assert time.perf_counter() - t0 < 0.5
    assert limits.parse_seeds("0-3, 7") == [0, 1, 2, 3, 7] and limits.check_seeds(range(3)) == [0, 1, 2]
    assert limits.check_seeds((np.int64(5), 2.0)) == [5, 2]
    for bad in ("3-1", "a", "-1", "0-4294967296", "1,1", ""):
        with pytest.raises(InputError):
            limits.parse_seeds(bad)
    for bad in ([1.5], [-1], [2**32], [True], [None], [], "abc", None, [0, 0]):
        with pytest.raises(InputError):
            limits.check_seeds(bad)
    assert limits.check_seed(2**32 - 1) == 2**32 - 1
    with pytest.raises(InputError, match=r"makes 120,000 simulations, more than MAX_TASKS"):
        limits.check_tasks(3, 4, 10_000)


def test_workers_and_strict_booleans() -> None:
    """issue 25: backfill="no" turned backfill on (bool("no") is True); parse_bool takes true/false/yes/no/on/off/1/0
    only (registry.parse_bool, which policy options use, is the same function)."""
    from schedopt.sim import registry

    assert registry.parse_bool is limits.parse_bool
    assert limits.check_workers(None) is None and limits.check_workers(8) == 8 and limits.check_workers(1024) == 1024
    for bad in (0, -1, 1025, 1.5, "2", True, math.nan):
        with pytest.raises(InputError):
            limits.check_workers(bad)
    table = [(True, True), (False, False), ("no", False), ("No ", False), ("yes", True), ("TRUE", True),
             ("false", False), ("1", True), ("0", False), (1, True), (0, False), (np.bool_(True), True),
             ("off", False), ("ON", True)]
    for text, want in table:
        assert limits.parse_bool(text, "backfill") is want, text
    for bad in ("n", "", "nope", 2, None, math.nan, [], "truee", 1.0):
        with pytest.raises(InputError, match="backfill"):
            limits.parse_bool(bad, "backfill")


@pytest.mark.parametrize(("field", "bad"), [("adaptive", "no"), ("charge_policy_time", "false"), ("progress", 2),
                                            ("job_model", ["sia"]), ("estimator", ["oracle"]), ("label", 3)])
def test_simulate_flags_and_names_are_typed(field: str, bad: object) -> None:
    with pytest.raises(InputError) as e:
        simulate(TOY_CLUSTER, _toy(("A", 0.0, "short")), get_policy("fifo"), **{"job_model": TOY, field: bad})
    assert e.value.field == field


# ---------------------------------------------------------------------------------------------- Workload
def test_duplicate_job_ids_in_a_python_workload_are_a_named_error_not_an_index_error() -> None:
    """issue 25: duplicate job ids in a Workload built in Python raised IndexError inside the engine."""
    with pytest.raises(InputError, match=r"Workload\('toy'\)\.jobs\[1\]\.name='A': is the name of jobs\[0\] too"):
        _toy(("A", 0.0, "short"), ("A", 10.0, "long"))


def test_a_job_arriving_at_1e300_is_a_named_error_not_a_jct_of_zero() -> None:
    """issue 25: a job arriving at 1e300 finished with JCT 0.0 (1e300 + anything == 1e300)."""
    for bad in (1e300, math.inf, math.nan, -1.0, limits.MAX_ARRIVAL_SECONDS * 1.01, "0", None):
        with pytest.raises(InputError, match=r"WorkloadJob\('A'\)\.time"):
            WorkloadJob("A", bad, "short", 2, 8)  # type: ignore[arg-type]
    assert WorkloadJob("A", limits.MAX_ARRIVAL_SECONDS, "short", 2, 8).time == limits.MAX_ARRIVAL_SECONDS


def test_replicas_and_batch_sizes_are_bounded_positive_integers() -> None:
    """issue 25: an impossible job (batch size 1e30) ran to the 60-day cap with no word."""
    for field, bad in [("num_replicas", 0), ("num_replicas", 1.5), ("num_replicas", True), ("num_replicas", 2**17),
                       ("batch_size", 1e30), ("batch_size", -8), ("batch_size", math.nan), ("batch_size", "8")]:
        kw = {"num_replicas": 2, "batch_size": 8, field: bad}
        with pytest.raises(InputError, match=rf"WorkloadJob\('A'\)\.{field}"):
            WorkloadJob("A", 0.0, "short", **kw)  # type: ignore[arg-type]
    j = WorkloadJob("A", 3, "short", np.int64(2), 8.0)  # type: ignore[arg-type]
    assert (j.time, j.num_replicas, j.batch_size) == (3.0, 2, 8)
    assert type(j.time) is float and type(j.num_replicas) is int and type(j.batch_size) is int
    for bad_jobs in ("abc", {"A": 1}, [None], WorkloadJob("A", 0.0, "short", 2, 8)):
        with pytest.raises(InputError):
            Workload("w", bad_jobs)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="Workload.name"):
        Workload("", ())
    assert Workload("w", [WorkloadJob("A", 0.0, "short", 2, 8)]).jobs[0].name == "A"  # a list becomes a tuple


def test_unsorted_workload_is_sorted_with_a_warning_and_a_t0_job_starts_at_t0() -> None:
    """issue 25: a Workload with unsorted jobs started a job that arrived at t=0 at t=3600 on an idle cluster."""
    with pytest.warns(UnsortedWorkloadWarning, match=r"jobs\[0\] 'late' at 3600 s before jobs\[1\] 'early' at 0 s"):
        w = _toy(("late", 3600.0, "short"), ("early", 0.0, "short"))
    assert [j.name for j in w.jobs] == ["early", "late"]
    res = simulate(TOY_CLUSTER, w, get_policy("fifo"), job_model=TOY)
    by = {j.id: j for j in res.jobs}
    # early: 30 s restart + 20 s training from t = 0; late: admitted at t = 3600, same
    assert (by["early"].start, by["early"].finish) == (0.0, 50.0)
    assert (by["late"].start, by["late"].finish) == (3600.0, 3650.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _toy(("a", 0.0, "short"), ("b", 0.0, "short"), ("c", 5.0, "short"))  # sorted, ties: no warning


def test_unknown_application_of_a_python_workload_is_named_by_simulate() -> None:
    with pytest.raises(InputError, match="application='nope'"):
        simulate(TOY_CLUSTER, _toy(("A", 0.0, "nope")), get_policy("fifo"), job_model=TOY)


# ---------------------------------------------------------------------------------------------- workload files
@pytest.mark.parametrize("label", list(fuzz.WORKLOAD_FILE_CASES))
def test_workload_file(label: str) -> None:
    """issue 25: a Latin-1 or UTF-16 workload file raised UnicodeDecodeError, '\\r' line endings a csv.Error; every
    readable file now loads (the same two jobs), every bad one is a named error."""
    out = fuzz.run_workload_file_case(label, 5.0)
    assert out.status == fuzz.WORKLOAD_FILE_CASES[label][1], out.repro()


def test_a_bad_row_names_the_file_the_line_and_the_column(tmp_path: Path) -> None:
    p = tmp_path / "w.csv"
    p.write_text("name,time,application,num_replicas,batch_size\nj0,0,cifar10,2,256\nj1,soon,bert,1,12\n")
    with pytest.raises(InputError) as e:
        load_workload(p)
    assert e.value.field == f"{p}:3.time" and e.value.value == "soon"
    p.write_bytes("name,time,application,num_replicas,batch_size\r\nj0,0,cifar10,2,256\r\nj1,7,bert,0,12\r\n".encode("utf-16"))
    with pytest.raises(InputError) as e:
        load_workload(p)
    assert e.value.field == f"{p}:3.num_replicas"
    w = read_workload(b"name,time,application,num_replicas,batch_size\rj0,5,cifar10,2,256\r", "bytes")
    assert [(j.name, j.time) for j in w.jobs] == [("j0", 5.0)]


def test_shipped_workloads_still_load_unchanged() -> None:
    w = load_workload("saturn/1")
    assert len(w) == 160 and w.jobs[0] == WorkloadJob("cifar10-0", 401.0, "cifar10", 12, 4096)
    assert read_workload(w.to_csv(), w.name) == w


# ---------------------------------------------------------------------------------------------- hopeless jobs
def test_min_seconds_of_the_toy_jobs_is_their_work_at_rate_one() -> None:
    """Hand-checked: rate 1 unit/s on any GPU count (a step of 1 s at the initial batch, gain 1), so the bound is the
    work itself: 80 s for "long", 20 s for "short", rigid or adaptive."""
    assert min_seconds(TOY_CLUSTER, "long", 2, 8, TOY, adaptive=False) == 80.0
    assert min_seconds(TOY_CLUSTER, "short", 2, 8, TOY, adaptive=False) == 20.0
    assert min_seconds(TOY_CLUSTER, "long", 2, 8, TOY, adaptive=True) == 80.0


def test_an_impossible_job_is_said_before_the_run_and_carried_in_the_result() -> None:
    """issue 25: an impossible job ran to the cap with no word. 10 s rounds, cap 30 s: rounds at 0..30 run, the last
    ends at 40; "long" needs >= 80 s of training from t = 0 (hopeless), "short" 20 s (not flagged: the bound leaves
    out the 30 s restart, so it is sound, not tight -- the job does not finish either)."""
    w = _toy(("S", 0.0, "short"), ("L", 0.0, "long"), ("X", 35.0, "short"))
    with pytest.warns(HopelessJobWarning, match=r"2 job\(s\) of workload 'toy' cannot finish by t = 30 s") as rec:
        res = simulate(TOY_CLUSTER, w, get_policy("fifo"), job_model=TOY, round_seconds=10, max_time=30)
    msg = str(rec[0].message)
    assert "L (needs >= 80 s from 0 s)" in msg and "X (arrives at 35 s, after the cap)" in msg
    assert res.hopeless == ("L", "X")
    assert {j.id: j.finish for j in res.jobs}["L"] is None
    assert res.meta.capped and res.meta.unfinished == 3  # and the cap, reached, is said too
    back = read_jsonl(res.to_jsonl())
    assert back.hopeless == ("L", "X") and back.jobs == res.jobs
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ok = simulate(TOY_CLUSTER, _toy(("S", 0.0, "short")), get_policy("fifo"), job_model=TOY)
    assert ok.hopeless == () and '"hopeless"' not in ok.to_jsonl()  # records without hopeless jobs are unchanged


def test_hopeless_bound_is_sound_on_a_shipped_workload() -> None:
    """Every job flagged on 12 jobs of pollux/1 (those of <= 4 GPUs) with a 1 h cap is indeed unfinished, and the
    flag list is what hopeless_jobs says alone."""
    w = Workload("head", tuple(j for j in load_workload("pollux/1").jobs if j.num_replicas <= 4)[:12])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HopelessJobWarning)
        res = simulate(SMALL, w, get_policy("fifo"), job_model="sia", max_time=3600.0)
        alone = hopeless_jobs(SMALL, w, "sia", 3600.0, adaptive=False, round_seconds=60.0, warn=False)
    assert res.hopeless == tuple(alone) and len(alone) > 0
    fin = {j.id: j.finish for j in res.jobs}
    assert all(fin[j] is None for j in res.hopeless)


def test_a_policy_that_speeds_jobs_up_declares_max_rate_and_is_not_flagged() -> None:
    """Decision.rate may exceed 1 (Synergy, Gandiva's growth): such a policy's max_rate = inf leaves only the jobs
    arriving after the cap."""
    w = _toy(("L", 0.0, "long"), ("X", 35.0, "short"))
    assert hopeless_jobs(TOY_CLUSTER, w, TOY, 30.0, adaptive=False, round_seconds=10, max_rate=math.inf,
                         warn=False) == ["X"]
    with pytest.raises(InputError):
        hopeless_jobs(TOY_CLUSTER, w, TOY, 30.0, max_rate=0)


# ---------------------------------------------------------------------------------------------- a custom policy
class _NaNPolicy:
    name = "nan-policy"
    adaptive = False

    def decide(self, state):  # type: ignore[no-untyped-def]
        return Decision(nodes={state.jobs[0].id: {"g-0": math.nan}})


def test_a_custom_policys_nan_gpu_count_is_a_named_error_not_a_value_error() -> None:
    """issue 25: int(nan) inside the engine raised ValueError before the decision check."""
    with pytest.raises(InputError) as e:
        simulate(TOY_CLUSTER, _toy(("A", 0.0, "short")), _NaNPolicy(), job_model=TOY)
    assert e.value.field == "policy[nan-policy].nodes[A][g-0]"


# ---------------------------------------------------------------------------------------------- the solver side
def test_hived_deep_cell_chain_is_built_without_recursion_and_bounded() -> None:
    """issue 25: a deep HiveD cell chain raised RecursionError. The builder walks the hierarchy with an explicit
    stack; a chain of MAX_LEVELS levels builds and allocates, one more level is a named error, and a cellChildren
    nesting far deeper than Python's recursion limit is read without recursion."""
    from schedopt import hived
    from schedopt.hived.cells import MAX_LEVELS, CellType, PhysicalCellSpec, PhysicalCluster

    def chain(levels: int) -> list[CellType]:  # L1 (node) .. L<levels - 1>, over the leaf type GPU
        return [CellType(f"L{k}", f"L{k - 1}" if k > 1 else "GPU", 1, is_node_level=k == 1) for k in range(1, levels)]

    pc = PhysicalCluster(chain(MAX_LEVELS), [{"cellType": f"L{MAX_LEVELS - 1}"}])
    assert pc.n_cells == MAX_LEVELS and pc.chains[f"L{MAX_LEVELS - 1}"].levels == MAX_LEVELS
    assert list(pc.end) == [MAX_LEVELS] * MAX_LEVELS and list(pc.parent) == list(range(-1, MAX_LEVELS - 1))
    a = hived.BuddyAllocator(pc, [hived.VirtualCluster("vc", {f"L{MAX_LEVELS - 1}": 1})])
    got = a.allocate(hived.Request(vc="vc", chain=f"L{MAX_LEVELS - 1}", gpus_per_pod=1, pods=1, priority="guaranteed"))
    assert got.ok and got.pods[0].gpus == (0,)
    with pytest.raises(InputError, match=f"more than hived.MAX_LEVELS = {MAX_LEVELS} levels"):
        PhysicalCluster(chain(MAX_LEVELS + 1), [{"cellType": f"L{MAX_LEVELS}"}])
    d: dict = {"cellType": "x"}
    cur = d
    for _ in range(5_000):  # five times the default recursion limit
        cur["cellChildren"] = [{"cellType": "x"}]
        cur = cur["cellChildren"][0]
    spec = PhysicalCellSpec.from_dict(d, "physicalCells[0]")
    depth = 0
    while spec.children:
        spec, depth = spec.children[0], depth + 1
    assert depth == 5_000
    with pytest.raises(InputError, match=r"cellChildren\[0\]\.cellChildren\[0\]\.bogus"):
        PhysicalCellSpec.from_dict({"cellChildren": [{"cellChildren": [{"bogus": 1}]}]}, "p")


def test_gandiva_out_of_range_packing_slot_is_a_named_error_not_an_index_error() -> None:
    from schedopt import gandiva
    from schedopt.gandiva.check import check_packing

    st = gandiva.ClusterState(gandiva.uniform_cluster(2, 4))
    for s in [(2, 0), (0, 4), (-1, 0), (0, -1)]:
        with pytest.raises(InputError, match="names no GPU of this cluster"):
            st.pack(*s)
        with pytest.raises(InputError, match="names no GPU of this cluster"):
            st.place(gandiva.GandivaJob(f"j{s}", 1), [s])
    jt = gandiva.load_profiles().types[0]
    jobs = [gandiva.GandivaJob("a", 1, job_type=jt)]
    p = gandiva.pack_greedy(st, jobs)
    bad = check_packing(st, jobs, dataclasses.replace(p, assignment={"a": (9, 0)}))
    assert bad[0].path == "assignment[a]" and "names no GPU of this cluster" in bad[0].message


def test_gandiva_fractional_slot_is_refused_not_truncated() -> None:
    """issue 25: (0, 1.5) was accepted as GPU 1 (int() truncated it)."""
    from schedopt import gandiva

    st = gandiva.ClusterState(gandiva.uniform_cluster(2, 4))
    for s in [(0, 1.5), (0.0, 1), (0, True), (0,), "ab", None]:
        with pytest.raises(InputError, match="must be a \\(node, gpu\\) pair of integers"):
            st.place(gandiva.GandivaJob("j", 1), [s])  # type: ignore[list-item]
    st.place(gandiva.GandivaJob("j", 1), [(np.int64(0), np.int64(1))])
    assert st.slots["j"] == [(0, 1)] and type(st.slots["j"][0][1]) is int
    with pytest.raises(InputError):
        st.pack(0, 1.5)  # type: ignore[arg-type]


def test_sia_place_refuses_a_3_gpu_allocation_on_one_node_for_a_job_not_named_rigid() -> None:
    """issue 25: sia.place accepted Config(1, 3) for any job, though no configuration of an elastic job has 3 GPUs
    (a power of two on one node, or whole nodes); a rigid job's ceil(g / R)-node shape is taken for the jobs
    named in rigid= only."""
    from schedopt import sia

    cl = Cluster((GpuType("t4", 4, 2),))
    with pytest.raises(InputError, match=r"allocation\[a\]='1x3xt4': is a rigid job's shape"):
        sia.place(cl, {"a": Config(1, 3, "t4")})
    pl = sia.place(cl, {"a": Config(1, 3, "t4"), "b": Config(1, 1, "t4")}, rigid=["a"])
    assert pl.unplaced == () and sum(len(g) for _, g in pl["a"]) == 3
    with pytest.raises(InputError, match=r"allocation\[a\]='2x3xt4': must be"):
        sia.place(cl, {"a": Config(2, 3, "t4")}, rigid=["a"])  # no shape at all
    with pytest.raises(InputError, match="rigid"):
        sia.place(cl, {"a": Config(1, 2, "t4")}, rigid="a")
    # a solved Sia problem with a rigid 3-GPU job places through SiaSolution.place, which names its rigid jobs
    jobs = [sia.Job("r", kind="rigid", rigid_gpus=3), sia.Job("e", max_profiled_gpus=2)]
    prob = sia.SiaProblem(cl, jobs, lambda j, c: float(c.n_gpus), settings=sia.SiaSettings(rigid_any_count=True))
    sol = prob.solve("highs")
    assert sol.allocation["r"] == Config(1, 3, "t4")
    assert sol.place().unplaced == ()


def test_a_record_with_hopeless_jobs_validates_against_the_schema_and_reads_back(tmp_path: Path) -> None:
    """The 'hopeless' line of a record is in schedopt/schemas/sim_record.schema.json, inside the end marker's
    checksum, and read back by records.read_record."""
    import json

    import jsonschema

    from schedopt import schemas
    from schedopt.sim import records

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = simulate(TOY_CLUSTER, _toy(("L", 0.0, "long")), get_policy("fifo"), job_model=TOY, round_seconds=10,
                       max_time=30)
    text = records.record_text(res, {"policy": "fifo", "workload": "toy"})
    v = jsonschema.Draft202012Validator(schemas.load("sim_record"))
    lines = [json.loads(line) for line in text.splitlines()]
    for d in lines:
        v.validate(d)
    assert {"hopeless": ["L"]} in lines
    p = tmp_path / "r.jsonl"
    p.write_text(text)
    assert records.check_record(p) is None and records.read_record(p).hopeless == ("L",)
