"""Issue 41, the problem packages and HiveD's inputs: impossible inputs are refused by name before any work (a
Pollux allocation larger than its node, a HiveD tenant quota larger than the cluster, a Gavel SLO of NaN), every
numeric knob is bounded with its reason (Pollux's ``p``, ``hived/synthetic``'s keys), and HiveD's YAML loader walks
aliases with limits. Each test fails on the code before issue 41 (the failure it pins is in its docstring)."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np
import pytest

from schedopt import gavel, pollux
from schedopt.errors import InputError
from schedopt.hived import load_hived_config
from schedopt.sim import hived as sh

TINY = Path(__file__).resolve().parents[1] / "schedopt" / "sim" / "hived" / "tiny.yaml"


def _pollux_data() -> dict:
    return json.loads(json.dumps(pollux.to_data(pollux.generate(64, 0))))


# --- Pollux ----------------------------------------------------------------------------------------------------------

def test_pollux_current_allocation_larger_than_its_node_is_an_input_error():
    """Before: a job holding 99 GPUs of a 2-GPU node was accepted (and the node's capacity read as met)."""
    from schedopt.sia import Cluster, GpuType

    cl = Cluster((GpuType("t4", 2, 2),))
    g = np.zeros((1, 1, 3, 5))
    g[0, 0, 1, 1:3] = [1.0, 1.8]
    g[0, 0, 2, 2:5] = [1.9, 2.6, 3.2]
    with pytest.raises(InputError) as e:
        pollux.PolluxSpec(cl, ("a",), g, [1.0], current=[[99, 0]])
    assert e.value.field == "current[a][t4-0]" and e.value.value == 99 and "2 GPUs" in e.value.message
    two = np.concatenate([g, g])
    with pytest.raises(InputError, match=r"current\[\*\]\[t4-1\].*3 GPUs held .* 2 GPUs"):
        pollux.PolluxSpec(cl, ("a", "b"), two, [1.0, 1.0], current=[[0, 2], [0, 1]])
    pollux.PolluxSpec(cl, ("a", "b"), two, [1.0, 1.0], current=[[1, 1], [1, 1]])  # exactly full: fine
    d = _pollux_data()
    node = next(iter(pollux.node_columns(pollux.from_data(d).cluster).ids))
    d["jobs"][0]["current"] = {node: 99}
    with pytest.raises(InputError, match=rf"^data\.current\[{d['jobs'][0]['id']}\]\[{node}\]=99"):
        pollux.from_data(d)


@pytest.mark.parametrize("p", [1e7, -1e308, 51.0, -50.5])
def test_pollux_power_mean_exponent_is_bounded_with_its_reason(p):
    """Before: ``p = 1e7`` gave the objective ``inf``; ``p = -1e308`` made the checker divide by zero."""
    spec = pollux.generate(64, 0)
    with pytest.raises(InputError) as e:
        spec.replace(p=p)
    assert e.value.field == "p" and "|p| <= 50" in e.value.message and "1e-3" in e.value.message
    from schedopt.problem import SolveOptions

    for ok in (-50.0, 50.0, -1.0):  # the bounds themselves: a finite objective the checker agrees with
        s = spec.replace(p=ok)
        a = pollux.solve_spec(s, SolveOptions(seed=0, options={"population": 8, "generations": 2}))
        assert math.isfinite(a.objective_value) and pollux.check_allocation(s, a) == []


# --- Gavel -----------------------------------------------------------------------------------------------------------

def test_gavel_slo_nan_is_an_input_error_not_no_deadline():
    """Before: ``slo: NaN`` was read as "no deadline" (every slo NaN: the spec had no SLOs at all)."""
    data = json.loads(json.dumps(gavel.to_data(gavel.generate(64, 0, objective="cost_slo"))))
    for j in data["jobs"]:
        j["slo"] = None
    data["jobs"][2]["slo"] = math.nan
    with pytest.raises(InputError) as e:
        gavel.from_data(data)
    assert e.value.field == "data.jobs[2].slo" and math.isnan(e.value.value)
    for bad in (-5.0, 0.0, math.inf):
        data["jobs"][2]["slo"] = bad
        with pytest.raises(InputError, match=r"^data\.jobs\[2\]\.slo"):
            gavel.from_data(data)


# --- HiveD: tenant quotas, the YAML loader, hived/synthetic ------------------------------------------------------------

def _tiny_with_quota(tmp_path: Path, nodes: int) -> Path:
    text = TINY.read_text().replace("    - cellType: T-RACK.T-NODE\n      cellNumber: 1",
                                    f"    - cellType: T-RACK.T-NODE\n      cellNumber: {nodes}")
    p = tmp_path / "quota.yaml"
    p.write_text(text)
    return p


def test_hived_tenant_quota_larger_than_the_cluster_is_an_input_error(tmp_path):
    """Before: a quota of 5 nodes on the 2-node cluster was accepted, and the run then counted 21 "sharing
    anomalies" against the impossible quota."""
    cl, vcs = load_hived_config(_tiny_with_quota(tmp_path, 5))  # the loader reads structure: the check names it
    with pytest.raises(InputError) as e:
        sh.HivedCluster("five", cl, tuple(vcs))
    assert e.value.field == "vcs" and e.value.value == ["a", "b", "c"]
    assert "quotas do not fit" in e.value.message and "T-NODE" in e.value.message and "VC 'a'" in e.value.message
    cl1, vcs1 = load_hived_config(_tiny_with_quota(tmp_path, 1))
    assert sh.HivedCluster("one", cl1, tuple(vcs1)).gpus == 8


def _timed_load(text: str, tmp_path: Path) -> float:
    p = tmp_path / "c.yaml"
    p.write_text(text)
    t0 = time.process_time()
    with pytest.raises(InputError) as e:
        load_hived_config(p)
    assert "alias" in e.value.message
    return time.process_time() - t0


def test_hived_yaml_billion_laughs_is_refused_fast(tmp_path):
    """Before: these few hundred bytes hung the loader (every alias expanded in the duplicate-key walk)."""
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"a{k}: &a{k} [" + ", ".join([f"*a{k - 1}"] * 10) + "]" for k in range(1, 10)]
    text = "\n".join(lines) + "\nphysicalCluster: *a9\n"
    assert len(text) < 700
    assert _timed_load(text, tmp_path) < 1.0


def test_hived_yaml_recursive_alias_is_refused(tmp_path):
    """Before: RecursionError."""
    assert _timed_load("physicalCluster: &a\n  cellTypes: *a\n", tmp_path) < 1.0
    assert _timed_load("physicalCluster: &a [*a]\n", tmp_path) < 1.0


def test_hived_yaml_with_a_few_aliases_still_loads(tmp_path):
    text = TINY.read_text().replace("    T-PCIE:\n      childCellType: T\n      childCellNumber: 2",
                                    "    T-PCIE: &pcie\n      childCellType: T\n      childCellNumber: 2")
    text = text.replace("  b:\n    virtualCells:", "  b: &b\n    virtualCells:")
    p = tmp_path / "ok.yaml"
    p.write_text(text)
    cl, vcs = load_hived_config(p)
    assert cl.num_gpus == 8 and [v.name for v in vcs] == ["a", "b", "c"]


@pytest.mark.parametrize(("spec", "field", "bound"), [
    ("hived/synthetic:failures=100000000", "workload.failures", "<= 10000"),
    ("hived/synthetic:load=1e-300", "workload.load", ">= 0.001"),
    ("hived/synthetic:load=1e300", "workload.load", "<= 1000"),
    ("hived/synthetic:jobs=1000000000", "workload.jobs", "<= 100000"),
    ("hived/synthetic:repair_h=1e300", "workload.repair_h", "<= 87600"),
])
def test_hived_synthetic_knobs_are_bounded_with_their_reason(spec, field, bound):
    """Before: ``failures=100000000`` hung, ``load=1e-300`` exited 4."""
    t0 = time.process_time()
    with pytest.raises(InputError) as e:
        sh.parse_workload(spec)
    assert e.value.field == field and bound in e.value.message and "(" in e.value.message
    with pytest.raises(InputError):
        key, v = spec.split(":")[1].split("=")
        sh.synthetic_trace(sh.cluster_preset("tiny"), **({"jobs": 5} | {key: float(v) if key != "jobs" and
                                                                          key != "failures" else int(v)}))
    assert time.process_time() - t0 < 1.0


def test_hived_yaml_nested_100000_deep_is_refused_before_pyyaml_scans_it(tmp_path):
    """Found by the fuzz: 100,000 flow brackets took PyYAML's pure-Python scanner over 5 s (loaded) before its
    composer's RecursionError; the depth is now counted at C speed first."""
    p = tmp_path / "deep.yaml"
    p.write_text("physicalCluster: " + "[" * 100_000 + "]" * 100_000 + "\n")
    t0 = time.process_time()
    with pytest.raises(InputError, match=r"nests 100000 brackets deep, more than MAX_YAML_DEPTH = 200"):
        load_hived_config(p)
    assert time.process_time() - t0 < 0.5
