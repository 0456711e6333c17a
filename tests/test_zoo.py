"""Tests of schedopt.zoo (shipped JSON only; nothing here reads the raw artifacts)."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from schedopt import zoo
from schedopt.goodput import JobGoodputModel, ThroughputParams, bootstrap

MODELS = ["bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"]
TYPES = {"t4", "v100", "a100", "rtx6000", "rtx2080ti"}
# Pollux simulator's (M0, max batch) per application (petuum/adaptdl osdi21-artifact, simulator/applications.py,
# restated in the data README); the zoo derives them from the validation-<B>.csv file names.
POLLUX_BATCH = {"bert": (12, 384), "cifar10": (128, 4096), "deepspeech2": (20, 640), "imagenet": (200, 12800),
                "ncf": (256, 32768), "yolov3": (8, 512)}

# Honest thresholds from the measured fits (see formulations/goodput.md, "Fit quality"): the V100 (azure)
# profiles have sync times that grow with the local batch, which the model cannot express.
RMS_WORST = 0.6
RMS_MEDIAN = 0.12
RMS_EXCEPT_V100 = 0.3


def test_catalogue():
    assert zoo.list_models() == MODELS
    assert set(zoo.gpu_types()) == TYPES
    src = zoo.source()["source"]
    assert src["repository"] == "siasosp23/artifacts"
    assert src["commit"] == "aaf7a0de7b6cb5eab06ea020467ede5d2fd18e70"


@pytest.mark.parametrize("name", MODELS)
def test_load_model(name):
    m = zoo.load_model(name)
    assert isinstance(m, JobGoodputModel)
    assert set(m.params) == TYPES
    assert (m.init_batch, m.max_batch) == POLLUX_BATCH[name]
    for t, p in m.params.items():
        assert isinstance(p, ThroughputParams)
        assert 1.0 <= p.gamma <= 10.0
        assert p.alpha_n >= 1.1 * p.alpha_r * (1 - 1e-7) and p.beta_n >= 1.1 * p.beta_r * (1 - 1e-7)
        lo, hi = m.local_bsz_limits[t]
        assert 1 <= lo <= hi
    # gradient statistics at every profiled batch size, positive
    assert m.grad_batch[0] == m.init_batch and m.grad_batch[-1] == m.max_batch
    assert min(m.grad_sqr) > 0 and min(m.grad_var) > 0


def test_fit_report_thresholds():
    rep = zoo.fit_report()
    assert len(rep) == 30
    assert {(r["model"], r["gpu_type"]) for r in rep} == {(m, t) for m in MODELS for t in TYPES}
    rms = np.array([r["rms_log_error"] for r in rep])
    assert rms.max() < RMS_WORST
    assert np.median(rms) < RMS_MEDIAN
    assert all(r["rms_log_error"] < RMS_EXCEPT_V100 for r in rep if r["gpu_type"] != "v100")
    assert all(r["n_rows"] >= 20 for r in rep)


@pytest.mark.parametrize("name", MODELS)
def test_params_reproduce_shipped_profile_rows(name):
    """The shipped sample rows are a subset of the fitted rows: each row's error is within the reported max."""
    m = zoo.load_model(name)
    rows = zoo.model_data(name)["check_rows"]
    rep = {r["gpu_type"]: r for r in zoo.fit_report() if r["model"] == name}
    for t, data in rows.items():
        n, r, b, step = np.array(data, dtype=float).T
        pred = m.params[t].step_time(n, r, b)
        rel = np.abs(pred / step - 1)
        assert rel.max() <= rep[t]["max_rel_error"] * (1 + 1e-3) + 1e-9
        assert np.sqrt(np.mean(np.log(pred / step) ** 2)) < 2 * RMS_WORST


@pytest.mark.parametrize("name", MODELS)
def test_zoo_goodput_matrix(name):
    m = zoo.load_model(name)
    r = np.array([1, 2, 4, 8, 16])
    n = np.maximum(1, r // 8)
    for t in m.params:
        res = m.goodput(t, n, r)
        ok = res.feasible
        assert ok[0]
        assert np.all(res.goodput[ok] > 0)
        assert np.all(res.batch_size[ok] >= m.init_batch) and np.all(res.batch_size[ok] <= m.max_batch)
        np.testing.assert_array_equal(res.batch_size, r * res.local_bsz * (res.accum_steps + 1) * ok)


def test_a100_faster_than_t4_single_gpu():
    for name in ("cifar10", "imagenet", "bert"):
        m = zoo.load_model(name)
        b = min(m.local_bsz_limits["t4"][1], m.local_bsz_limits["a100"][1])
        assert m.params["a100"].throughput(1, 1, b) > m.params["t4"].throughput(1, 1, b)


def test_bootstrap_with_seed_profiles():
    """Sia's bootstrap from the shipped 1-GPU seed profile: estimate rtx2080ti from a100."""
    m = zoo.load_model("cifar10")
    seed = zoo.model_data("cifar10")["seed_1gpu"]
    common = sorted({r[0] for r in seed["a100"]} & {r[0] for r in seed["rtx2080ti"]})
    b = common[len(common) // 2]
    t_a = next(row[1] for row in seed["a100"] if row[0] == b)
    t_b = next(row[1] for row in seed["rtx2080ti"] if row[0] == b)
    xa1, xb1 = b / t_a, b / t_b
    est = bootstrap(m.params["a100"], xa1, xb1, [1, 2], [8, 16], b)
    np.testing.assert_allclose(est, xb1 / xa1 * m.params["a100"].throughput([1, 2], [8, 16], b))
    m2 = m.with_bootstrap("rtx_boot", "a100", xa1, xb1, (32, 1024))
    assert m2.goodput("rtx_boot", 1, 8).goodput > 0


def test_trace_stats():
    ts = zoo.trace_stats()
    assert ts["source"]["commit"] == "aaf7a0de7b6cb5eab06ea020467ede5d2fd18e70"
    for fam in ("saturn", "philly", "newtrace", "pollux_philly"):
        w = ts["workloads"][fam]
        assert sum(w["model_mix"].values()) == pytest.approx(1.0, abs=1e-4)
        assert sum(w["num_replicas"].values()) == pytest.approx(1.0, abs=1e-4)
        assert set(w["model_mix"]) <= set(MODELS)
    assert ts["workloads"]["saturn"]["model_mix"]["cifar10"] > 0.7
    pj = ts["philly_jobs"]
    assert sum(pj["num_gpus"].values()) == pytest.approx(1.0, abs=1e-4)
    assert pj["num_gpus"]["1"] > 0.9
    for key in ("duration_s", "age_in_progress_s", "gpu_time_s"):
        q = np.array(list(pj[key].values()))
        assert np.all(np.diff(q) >= 0)
    # in-progress jobs are length-biased: their median age exceeds the median job duration
    assert pj["age_in_progress_s"]["0.5"] > pj["duration_s"]["0.5"]


def test_zoo_data_small_and_self_contained():
    pkg = resources.files("schedopt.zoo")
    total = sum(f.stat().st_size for f in Path(str(pkg)).glob("*.json"))
    assert total < 200_000
    src = Path(zoo.__file__).read_text()
    assert "shared/data" not in src and not re.search(r"/(?:work|home|root)/", src)  # no machine path, no ../shared
