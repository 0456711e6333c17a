"""schedopt.traces: each reader on a fixture written in the trace's own published format, against hand-computed
fields; bad input named by file, row and field; generation by Pollux's rule against the artifact's workloads; named
workloads at any load; the command line; a converted workload simulated end to end."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path

import pytest

from schedopt import sim, traces
from schedopt.cli import main
from schedopt.errors import InputError
from schedopt.traces.generate import CONFIGURATIONS
from schedopt.traces.named import shipped_trace
from schedopt.traces.trace import TraceJob, parse_time

ROOT = Path(__file__).resolve().parents[1]
D = ROOT / "tests" / "data" / "traces"


def t(s: str) -> float:
    return parse_time(s)


# --- readers on their fixtures (values computed by hand from the fixture text) ---------------------------------------

def test_philly_cluster_job_log():
    tr = traces.read_philly(D / "philly_cluster_job_log.json")
    assert tr.format == "philly" and len(tr) == 4 and tr.skipped == ()
    a, b, c, d = tr.jobs
    assert a.job_id == "application_1506638472019_14199" and a.user == "ce2f4c" and a.vc == "ee9e8c"
    assert a.submit_s == t("2017-10-07 01:11:39") and a.gpus == 8 and a.status == "Pass" and a.row == 1
    # two attempts: 01:12:09-01:13:23 (74 s) + 10-07 01:13:30 -> 10-09 06:53:12 (2 d 5 h 39 min 42 s = 193,182 s)
    assert a.duration_s == 74 + 193_182
    assert b.gpus == 4 and b.duration_s == 1800 and b.status == "Killed"  # 2 nodes x 2 GPUs, 10:00-10:30
    assert c.gpus == 0 and c.duration_s is None and c.status == "Failed"  # no attempts
    assert d.gpus == 1 and d.duration_s is None and d.status == "Running"  # last attempt has no end_time
    assert tr.time_of_day_s(d) == 23 * 3600 + 59 * 60 + 30


def test_philly_json_streams_across_chunks(tmp_path):
    from schedopt.traces.readers import _json_array

    text = (D / "philly_cluster_job_log.json").read_text()
    import io

    whole = json.loads(text)
    assert list(_json_array(io.StringIO(text), chunk=7)) == whole  # objects split across many reads


def test_helios():
    tr = traces.read_helios(D / "helios_cluster_log.csv")
    assert [j.job_id for j in tr] == ["1425511", "1425512", "1425513", "1425514", "1425515"]
    j = tr.jobs[1]
    assert (j.user, j.vc, j.gpus, j.duration_s, j.status, j.row) == ("uVMrF", "vchbv", 4, 249.0, "FAILED", 3)
    assert j.submit_s == t("2020-06-09 18:41:27")
    assert tr.jobs[3].gpus == 0  # a CPU job is kept, with 0 GPUs
    assert tr.jobs[4].gpu_time_s == 16 * 7200


def test_pai2020_joins_tasks_and_machines():
    tr = traces.read_pai2020(D / "pai2020")
    assert tr.capacity == {"V100": 16, "P100": 2}  # 2 x 8 V100 + 1 x 2 P100; the CPU machine has none
    j1, j2, j3 = tr.jobs
    # j1: ps (no GPU) + worker 2 instances x 50 % -> 1 GPU; runs from the first task start 110 to the last end 700
    assert (j1.gpus, j1.duration_s, j1.gpu_type, j1.submit_s, j1.user) == (1, 590.0, "V100", 100.0, "u1")
    assert (j2.gpus, j2.duration_s, j2.gpu_type, j2.status) == (8, 55.0, "P100", "Failed")  # 800 % = 8 GPUs
    assert (j3.gpus, j3.duration_s, j3.gpu_type) == (1, None, "T4")  # 25 % rounds up to 1; still running
    assert tr.day_offset_s == 8 * 3600 and tr.time_of_day_s(j1) == 100 + 8 * 3600


def test_pai2020_accepts_the_published_header_line(tmp_path):
    from schedopt.traces.readers import PAI_JOB, PAI_TASK

    for f, hdr in (("pai_job_table.csv", PAI_JOB), ("pai_task_table.csv", PAI_TASK)):
        (tmp_path / f).write_text(",".join(hdr) + "\n" + (D / "pai2020" / f).read_text())
    tr = traces.read_pai2020(tmp_path)
    assert [j.gpus for j in tr] == [1, 8, 1] and tr.jobs[0].row == 2 and tr.capacity is None


def test_pai2023_pods_and_nodes():
    tr = traces.read_pai2023(D / "openb_pod_list_default.csv")
    assert tr.capacity == {"G3": 8, "V100M32": 8}
    a, b, c, cpu = tr.jobs
    assert (a.gpus, a.duration_s, a.submit_s, a.status) == (8, 10769854 - 9437497, 9437497.0, "Succeeded")
    assert b.gpus == 1 and b.duration_s == 9973826 - 9679175  # a 220-milli shared GPU counts as one GPU
    assert c.gpu_type == "V100M16|V100M32" and c.duration_s == 9968575 - 9967063  # from scheduled, not created
    assert cpu.gpus == 0


def test_acme_keeps_local_wall_clock():
    tr = traces.read_acme(D / "acme_trace_seren.csv")
    a, _, c = tr.jobs
    assert a.submit_s == t("2023-03-01 00:18:22") and tr.time_of_day_s(a) == 18 * 60 + 22  # +08:00 dropped
    assert (a.gpus, a.duration_s, a.status, a.application, a.user) == (8, 117.0, "FAILED", "Other", "u5907")
    assert c.gpus == 32 and c.application == "Pretrain" and c.gpu_time_s == 1_152_000


def test_gavel_both_layouts():
    phys = traces.read_gavel(D / "gavel_physical.trace")
    assert [(j.job_id, j.application, j.gpus, j.work, j.submit_s) for j in phys] == [
        ("0", "Transformer (batch size 128)", 2, 346.0, 0.0), ("1", "Recommendation (batch size 8192)", 1, 36.0, 120.0)]
    msr = traces.read_gavel(D / "gavel_msr.trace")
    assert [(j.gpus, j.work, j.submit_s) for j in msr] == [(1, 13407515.0, 0.0), (4, 2917194.0, 364815.0)]
    assert all(j.duration_s is None for j in [*phys, *msr])


def test_workload_csv_reuses_read_workload():
    path = ROOT / "schedopt" / "sim" / "data" / "workloads" / "pollux" / "workload-1.csv"
    tr = traces.read_workload_trace(path)
    w = sim.load_workload("pollux/1")
    assert [(j.job_id, j.submit_s, j.application, j.gpus) for j in tr] == [
        (j.name, j.time, j.application, j.num_replicas) for j in w.jobs]
    assert tr.jobs[0].row == 2  # cifar10-0 is the first data line


def test_philly_csv_and_detect_format():
    tr = shipped_trace()
    assert len(tr) == 82247 and tr.format == "philly-csv"
    j = tr.jobs[0]  # 2017-10-09 07:01:55,66.0,1,66.0,11cb48
    assert (j.submit_s, j.duration_s, j.gpus, j.vc, j.row) == (t("2017-10-09 07:01:55"), 66.0, 1, "11cb48", 2)
    expect = {"philly_cluster_job_log.json": "philly", "helios_cluster_log.csv": "helios", "pai2020": "pai2020",
              "openb_pod_list_default.csv": "pai2023", "acme_trace_seren.csv": "acme", "gavel_msr.trace": "gavel"}
    assert {f: traces.detect_format(D / f) for f in expect} == expect


# --- bad input: file, row and field named; or skipped and counted ----------------------------------------------------

HELIOS_HEAD = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
ROW = "{id},u1,vc1,{g},1,1,COMPLETED,{sub},2020-06-09 18:41:01,2020-06-10 04:55:09,{dur},0\n"


def _helios(tmp_path, *rows, head=HELIOS_HEAD):
    p = tmp_path / "cluster_log.csv"
    p.write_text(head + "".join(ROW.format(**r) for r in rows))
    return p


GOOD = {"id": "1", "g": "1", "sub": "2020-06-09 18:41:01", "dur": "100"}


@pytest.mark.parametrize("bad, field, value", [
    ({"sub": "09/06/2020 18:41"}, "submit_time", "09/06/2020 18:41"),
    ({"dur": "-5"}, "duration", "-5"),
    ({"g": "two"}, "gpu_num", "two"),
    ({"id": "1"}, "job_id", "1"),  # duplicate of row 2
])
def test_bad_rows_are_named(tmp_path, bad, field, value):
    p = _helios(tmp_path, GOOD, {**GOOD, "id": "2", **bad})
    with pytest.raises(InputError) as e:
        traces.read_helios(p)
    assert e.value.field == f"{p}:row 3.{field}" and e.value.value == value
    tr = traces.read_helios(p, skip_bad=True)  # asked for: dropped and counted, not silent
    assert len(tr) == 1 and [r for r, _ in tr.skipped] == [3] and field in tr.skipped[0][1]


def test_missing_column_is_named(tmp_path):
    p = _helios(tmp_path, GOOD, head=HELIOS_HEAD.replace("gpu_num,", "gpus,"))
    with pytest.raises(InputError, match="missing gpu_num") as e:
        traces.read_helios(p, skip_bad=True)  # a missing column is never skippable
    assert e.value.field == f"{p}:row 1.columns"


def test_bad_philly_and_pai_rows(tmp_path):
    rec = json.loads((D / "philly_cluster_job_log.json").read_text())
    rec[1]["attempts"][0]["end_time"] = "2017-10-08 09:00:00"  # before its start: a negative duration
    p = tmp_path / "log.json"
    p.write_text(json.dumps(rec))
    with pytest.raises(InputError, match="negative duration") as e:
        traces.read_philly(p)
    assert e.value.field == f"{p}:row 2.attempts[0].end_time"
    d = tmp_path / "pai"
    d.mkdir()
    (d / "pai_job_table.csv").write_text("j1,i1,u,Terminated,100.0,700.0\nj1,i2,u,Terminated,100.0,50.0\n")
    (d / "pai_task_table.csv").write_text("")
    with pytest.raises(InputError, match="negative duration") as e:
        traces.read_pai2020(d)
    assert e.value.field.endswith("pai_job_table.csv:row 2.end_time")


def test_gpus_above_the_cluster(tmp_path):
    tr = traces.read_helios(D / "helios_cluster_log.csv")
    with pytest.raises(InputError, match="more GPUs than tiny") as e:
        tr.check_cluster(8, cluster="tiny")
    assert e.value.field.endswith("helios_cluster_log.csv:row 6.gpus") and e.value.value == 16
    kept = tr.check_cluster(8, skip_bad=True, cluster="tiny")
    assert len(kept) == 4 and kept.skipped == ((6, "gpus=16 > 8 on tiny"),)
    assert traces.trace_stats(kept).skipped == 1


# --- generation ---------------------------------------------------------------------------------------------------

def _synthetic(n_per_class: int = 30) -> traces.Trace:
    """Jobs of known GPU-time class, all submitted 03:00-04:00 of one day (inside Pollux's 02:00-10:00 window)."""
    base = t("2020-01-01 03:00:00")
    jobs, k = [], 0
    for hours in (0.5, 5.0, 50.0, 500.0):
        for _ in range(n_per_class):
            jobs.append(TraceJob(str(k), base + 60 * k % 3600, 1, hours * 3600, row=k + 1))
            k += 1
    jobs.append(TraceJob("short", base, 1, 30.0, row=k + 1))  # < 60 s: left out
    jobs.append(TraceJob("huge", base, 8, 200 * 3600, row=k + 2))  # 1600 GPU-h: left out
    jobs.append(TraceJob("night", base + 8 * 3600, 1, 600, row=k + 3))  # 11:00: outside the window
    return traces.Trace("synthetic", "test", "synthetic", tuple(jobs))


def test_pollux_rule_maps_classes_and_configurations():
    g = traces.generate(_synthetic(), jobs=100, load=1.0, seed=3)
    assert len(g.workload) == 100 and g.meta["eligible"] == 120
    assert g.meta["left_out"] == {"no_duration": 0, "no_gpus": 0, "under_60s": 1, "over_1000_gpu_h": 1,
                                  "outside_window": 1}
    expect = {"small": {"cifar10", "ncf"}, "medium": {"deepspeech2", "bert"}, "large": {"yolov3"},
              "xl": {"imagenet"}}
    by = {o.name: o for o in g.origins}
    for j in g.workload.jobs:
        o = by[j.name]
        assert j.application in expect[o.size_class]
        assert (j.num_replicas, j.batch_size) in CONFIGURATIONS["pollux"][j.application]
        assert j.time == (3600 + 60 * int(o.trace_job) % 3600)  # time of day minus the 2-hour start
    times = [j.time for j in g.workload.jobs]
    assert times == sorted(times) and len({o.trace_job for o in g.origins}) == 100  # no job drawn twice
    again = traces.generate(_synthetic(), jobs=100, load=1.0, seed=3)
    assert again.workload == g.workload  # seeded
    assert traces.generate(_synthetic(), jobs=100, seed=4).workload != g.workload


def test_load_scales_the_job_count_and_sia_rule():
    assert len(traces.generate_workload(_synthetic(), jobs=40, load=1.5, seed=0)) == 60
    w = traces.generate_workload(_synthetic(), jobs=40, load=0.5, seed=0, rule="sia", start_h=0.0, window_h=2.0)
    assert len(w) == 20 and "ncf" not in {j.application for j in w.jobs}  # Sia: small jobs are all cifar10
    assert all(0 <= j.time < 3600 for j in w.jobs)  # seconds since the first submission
    with pytest.raises(InputError, match="only 120 eligible"):
        traces.generate(_synthetic(), jobs=200)
    with pytest.raises(InputError, match="load"):
        traces.generate(_synthetic(), load=-1)


def test_generated_pollux_workloads_match_the_shipped_ones():
    """Pollux's rule on the shipped Philly trace against the artifact's 8 load-1.0 workloads, pooled (1,280 jobs each
    side). Per GPU-time class the share must agree within 3 standard errors of a difference of two independent
    1,280-job proportions (sqrt(2 p (1 - p) / 1280): 2.5 points at p = 0.78, 0.8 at p = 0.02); arrivals: 20 jobs/h
    over 8 h both, mean arrival time within 0.3 h (3 standard errors: an 8-hour spread of sd ~2.2 h over 1,280 jobs
    per side gives 0.087 h); replicas per job (the size the submitter asked) within 3 standard errors too."""
    cls = {"cifar10": "small", "ncf": "small", "deepspeech2": "medium", "bert": "medium", "yolov3": "large",
           "imagenet": "xl"}
    ship = [sim.load_workload(f"pollux/{k}") for k in range(1, 9)]
    made = [traces.generate_workload(shipped_trace(), jobs=160, load=1.0, seed=k) for k in range(8)]
    n = 1280
    for a, b in ((ship, made),):
        ca = Counter(cls[j.application] for w in a for j in w.jobs)
        cb = Counter(cls[j.application] for w in b for j in w.jobs)
        for c in ("small", "medium", "large", "xl"):
            p = (ca[c] + cb[c]) / (2 * n)
            assert abs(ca[c] - cb[c]) / n <= 3 * math.sqrt(2 * p * (1 - p) / n), (c, ca[c], cb[c])
    for w in made:
        assert len(w) == 160 and max(j.time for j in w.jobs) < 8 * 3600
    mean = [sum(j.time for w in ws for j in w.jobs) / n / 3600 for ws in (ship, made)]
    assert abs(mean[0] - mean[1]) < 0.3, mean
    reps = [[j.num_replicas for w in ws for j in w.jobs] for ws in (ship, made)]
    m = [sum(r) / n for r in reps]
    sd = math.sqrt(sum((x - m[0]) ** 2 for x in reps[0]) / n)
    assert abs(m[0] - m[1]) <= 3 * sd * math.sqrt(2 / n), m


# --- named workloads at any load -----------------------------------------------------------------------------------

def test_named_workloads_at_every_load():
    names = sim.list_workloads()
    assert {f"pollux@{x}/{k}" for x in ("0.5", "1.5", "2.0") for k in range(1, 9)} <= set(names)
    assert {f"saturn@{x}/{k}" for x in ("0.5", "1.5", "2.0", "2.5") for k in range(1, 11)} <= set(names)
    assert [len(sim.load_workload(f"pollux@{x}/3")) for x in ("0.5", "1.5", "2.0")] == [80, 240, 320]
    assert len(sim.load_workload("saturn@2.5/1")) == 400
    w = sim.load_workload("pollux@1.25/3")  # not shipped: Pollux's rule on the shipped Philly trace, seed 3
    assert w.name == "pollux@1.25/3" and len(w) == 200
    assert w == sim.load_workload("pollux@1.25/3")
    r = sim.load_workload("newtrace@0.5/1")  # no source trace shipped: resampled from newtrace/1
    assert len(r) == 480 and {j.application for j in r.jobs} <= {j.application for j in sim.load_workload("newtrace/1").jobs}
    assert sim.load_workload("saturn@1.0/2").jobs == sim.load_workload("saturn/2").jobs
    assert sim.load_workload("pollux@1.0/4").jobs == sim.load_workload("pollux/4").jobs  # the artifact's, not a draw
    with pytest.raises(InputError, match="no shipped set"):
        sim.load_workload("nosuch@1.5/1")


def test_file_with_load_option(tmp_path):
    path = ROOT / "schedopt" / "sim" / "data" / "workloads" / "pollux" / "workload-2.csv"
    w = sim.load_workload(f"{path}:load=1.5:seed=2")
    assert len(w) == 240 and w.name == "workload-2@1.5"
    h = sim.load_workload(f"{D / 'helios_cluster_log.csv'}:rule=sia:start_h=0:window_h=2:jobs=3")
    assert len(h) == 3  # 3 drawn from the 4 GPU jobs of >= 60 s in the first two hours (the CPU job is left out)
    with pytest.raises(InputError, match="options look like"):
        sim.load_workload(f"{path}:lod=2")


# --- command line, end to end --------------------------------------------------------------------------------------

def test_cli_convert_then_simulate(tmp_path, capsys):
    out = tmp_path / "w.csv"
    rc = main(["trace", "convert", str(D / "helios_cluster_log.csv"), "-o", str(out), "--jobs", "3", "--rule", "sia",
               "--start-h", "0", "--window-h", "2", "--seed", "1"])
    assert rc == 0 and "wrote" in capsys.readouterr().out
    meta = json.loads(Path(str(out) + ".meta.json").read_text())
    assert meta["rule"] == "sia" and meta["seed"] == 1 and meta["jobs"] == 3 and meta["trace_format"] == "helios"
    w = sim.load_workload(out)  # the provenance columns ride along; read_workload reads the standard five
    assert len(w) == 3
    rows = out.read_text().splitlines()
    assert rows[0].endswith("trace_job,trace_row,trace_gpus,trace_gpu_hours,size_class,trace_application")
    # seed 1 draws 3 of the 4 eligible GPU jobs (1425511-13 from 18:41, 1425515 at +1.3 h; 1425514 has no GPU)
    assert {r.split(",")[5] for r in rows[1:]} == {"1425511", "1425512", "1425515"}
    res = sim.simulate(sim.cluster_preset("pollux"), w, sim.get_policy("fifo"), job_model="pollux")
    s = res.summary()
    assert s["finished"] == 3 and s["avg_jct_s"] > 0


def test_cli_stats_and_bad_input(tmp_path, capsys):
    rc = main(["trace", "stats", str(D / "helios_cluster_log.csv"), "--cluster", "pollux"])
    text = capsys.readouterr().out
    assert rc == 0 and "5 jobs, 4 with GPUs" in text
    # 4 GPU jobs over the 18:41:01 -> 20:00:00 span (4,739 s): 3.04 jobs/h; GPU-h 36848/3600 + 4*249/3600 + ... :
    gpu_h = (36848 + 4 * 249 + 675233 + 16 * 7200) / 3600
    assert "arrival rate 3.04 GPU jobs/h" in text and f"GPU-hours {gpu_h:.1f}" in text
    load = re.search(r"offered load on 64 GPUs: ([0-9.]+)", text)
    assert load and abs(float(load[1]) - gpu_h / (64 * 4739 / 3600)) < 1e-3
    rc = main(["trace", "stats", str(D / "acme_trace_seren.csv"), "--cluster", "pollux"])
    assert rc == 0
    bad = tmp_path / "big.csv"
    bad.write_text((D / "acme_trace_seren.csv").read_text().replace(",4,32,512,", ",16,128,2048,"))
    assert main(["trace", "stats", str(bad), "--cluster", "pollux"]) != 0
    err = capsys.readouterr().err
    assert f"{bad}:row 4.gpus=128" in err
    assert main(["trace", "stats", str(bad), "--cluster", "pollux", "--skip-bad"]) == 0
    assert "1 rows skipped" in capsys.readouterr().out


def test_stats_on_the_shipped_philly_trace_report_pollux_mix(capsys):
    rc = main(["trace", "stats", str(ROOT / "schedopt" / "traces" / "data" / "philly.csv.gz")])
    text = capsys.readouterr().out
    assert rc == 0 and "82247 jobs" in text
    # the pool Pollux samples: the same class shares as its 8 workloads (78.0 / 15.4 / 4.6 / 2.0 %)
    assert "31293 jobs; classes small 78.3%, medium 15.2%, large 4.6%, xl 1.9%" in text
    assert "20 jobs/h" in text


# --- the card names what the code has ---------------------------------------------------------------------------------

def test_card_names_match_the_code():
    text = (ROOT / "formulations" / "traces.md").read_text()
    section = text.split("## Names", 1)[1].split("\n## ", 1)[0]
    names = re.findall(r"^- `([A-Za-z_][A-Za-z0-9_]*)`", section, flags=re.M)
    fields = [f for f in TraceJob.__dataclass_fields__]
    assert set(fields) <= set(names)
    for fmt in traces.FORMATS:
        assert f"`{fmt}`" in text, fmt
    for n in names:
        assert n in fields or hasattr(traces, n), n


def test_importing_traces_does_not_import_sim():
    """schedopt.sim re-exports generate_workload; were schedopt.traces to import schedopt.sim at import time, importing
    schedopt.traces first would hit a partially initialised module (the cycle this pins)."""
    import subprocess
    import sys

    code = "import sys, schedopt.traces; assert 'schedopt.sim' not in sys.modules, sorted(sys.modules)"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT)})


def test_simulate_command_takes_a_trace_file_with_options(capsys):
    spec = f"{D / 'helios_cluster_log.csv'}:rule=sia:start_h=0:window_h=2:jobs=3:seed=1"
    assert main(["simulate", "--cluster", "pollux", "--workload", spec, "--policy", "fifo", "--progress", "off"]) == 0
    assert "| fifo | helios_cluster_log@1 | 0 | 3/3 |" in capsys.readouterr().out


def test_generation_invariants_hold_for_any_seed_and_load():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    trace = _synthetic()

    @settings(max_examples=20, deadline=None, derandomize=True)
    @given(seed=st.integers(0, 2**31), load=st.floats(0.05, 1.2), rule=st.sampled_from(("pollux", "sia")))
    def check(seed, load, rule):
        g = traces.generate(trace, jobs=100, load=load, seed=seed, rule=rule, start_h=2.0 if rule == "pollux" else 0.0)
        w = g.workload
        assert len(w) == max(1, round(100 * load)) == len(g.origins)
        assert [j.time for j in w.jobs] == sorted(j.time for j in w.jobs)
        assert all(0 <= j.time < 8 * 3600 for j in w.jobs)
        assert len({o.trace_job for o in g.origins}) == len(w)  # without replacement
        for j, o in zip(w.jobs, g.origins, strict=True):
            assert (j.num_replicas, j.batch_size) in CONFIGURATIONS[rule][j.application]
            assert o.size_class == ("small" if o.trace_gpu_hours < 1 else "medium" if o.trace_gpu_hours < 10
                                    else "large" if o.trace_gpu_hours < 100 else "xl")

    check()


def test_stats_of_a_trace_without_run_times_say_so():
    st = traces.trace_stats(traces.read_gavel(D / "gavel_msr.trace"), cluster_gpus=64)
    assert st.gpu_hours is None and st.offered_load is None and st.duration_s == {}
    assert st.size_mix["1"] == 1 and st.size_mix["3-4"] == 1
    assert "no run times in this trace" in st.format_text() and "offered load on" not in st.format_text()


def test_names_rule_maps_gavel_job_types(tmp_path, capsys):
    g = traces.generate(traces.read_gavel(D / "gavel_physical.trace"), jobs=2, seed=0, rule="names")
    # Transformer -> bert on the trace's 2 GPUs, batch 12 x 2; Recommendation -> ncf, 1 GPU, batch 256; times kept
    assert [(j.application, j.num_replicas, j.batch_size, j.time) for j in g.workload.jobs] == [
        ("bert", 2, 24, 0.0), ("ncf", 1, 256, 120.0)]
    assert [o.trace_application for o in g.origins] == ["Transformer (batch size 128)",
                                                         "Recommendation (batch size 8192)"]
    msr = traces.generate(traces.read_gavel(D / "gavel_msr.trace"), jobs=1, rule="names")
    assert msr.meta["left_out"] == {"no_gpus": 0, "unmapped_application": 0, "outside_window": 1}  # at 101 h
    with pytest.raises(InputError, match="unknown applications"):
        traces.generate(traces.read_gavel(D / "gavel_msr.trace"), jobs=1, rule="names", app_map={"LM": "gpt9"})
    out = tmp_path / "g.csv"
    assert main(["trace", "convert", str(D / "gavel_physical.trace"), "-o", str(out), "--rule", "names", "--jobs", "1",
                 "--app-map", "Recommendation=cifar10"]) == 0
    assert sim.load_workload(out).jobs[0].application == "cifar10"
    assert json.loads(Path(str(out) + ".meta.json").read_text())["app_map"] == {"Recommendation": "cifar10"}


def test_source_record_reads_the_row_back():
    tr = traces.read_helios(D / "helios_cluster_log.csv")
    assert traces.source_record(tr, tr.jobs[1]).startswith("1425512,uVMrF,vchbv,4,")
    ph = traces.read_philly(D / "philly_cluster_job_log.json")
    assert json.loads(traces.source_record(ph, ph.jobs[2]))["jobid"] == "application_1506638472019_20002"
    pai = traces.read_pai2020(D / "pai2020")
    assert traces.source_record(pai, pai.jobs[2]) == "j3,inst3,u1,Running,300.0,"
    gz = shipped_trace()
    assert traces.source_record(gz, gz.jobs[0]) == "2017-10-09 07:01:55,66.0,1,66.0,11cb48"


def test_sim_generate_workload_is_the_registered_generator():
    """`sim.generate_workload` (the issue's name) reaches `traces.generate_workload` through the entry-point group
    `schedopt.workload_generators`, so the simulator imports no trace reader (tests/test_import_graph.py)."""
    trace = shipped_trace()
    a = sim.generate_workload(trace, jobs=40, load=1.5, seed=3)
    b = traces.generate_workload(trace, jobs=40, load=1.5, seed=3)
    assert a == b and len(a.jobs) == 60
    assert [s.__module__ for s in sim.workloads.workload_resolvers()] == ["schedopt.traces.named"]
