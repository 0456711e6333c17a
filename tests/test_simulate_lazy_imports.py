"""Issue 42: the everyday simulation loads scipy's two routines it needs (the fit's L-BFGS-B, the measured job
model's LinearNDInterpolator) from their compiled modules, without ``scipy.optimize`` or ``scipy.interpolate``
(schedopt.scipy_parts), and gets scipy's own answers."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy
from scipy.interpolate import LinearNDInterpolator

from schedopt.goodput import blas_threads, lbfgsb
from schedopt.scipy_parts import load_extension

ROOT = Path(__file__).resolve().parents[1]
measured = importlib.import_module("schedopt.sim.measured")


def _fresh(*lines: str) -> str:
    """What a fresh interpreter prints running ``lines`` from the repository's root."""
    return subprocess.run([sys.executable, "-c", "\n".join(lines)], capture_output=True, text=True, timeout=300,
                          check=True, cwd=ROOT).stdout


def test_a_measured_sia_simulation_imports_neither_scipy_optimize_nor_interpolate() -> None:
    """Six saturn/1 jobs under Sia with the measured job model, in a fresh process: the throughput fit ran on the
    lean driver and the triangulation answered, and neither ``scipy.optimize`` nor ``scipy.interpolate`` was
    imported (when the self-check's record covers this scipy)."""
    out = _fresh(
        "import importlib, sys",
        "from schedopt.sim import Workload, cluster_preset, load_workload, simulate",
        "from schedopt.sim.policies.sia import SiaPolicy",
        "from schedopt.goodput import lbfgsb",
        "m = importlib.import_module('schedopt.sim.measured')",
        "w = Workload('w', load_workload('saturn/1').jobs[:6])",
        "r = simulate(cluster_preset('sia-64'), w, SiaPolicy(), job_model='sia-measured')",
        "print('jobs', len(r.jobs), 'lean', lbfgsb._STATE, 'tri', m._linear_nd_interpolator.cache_info().currsize)",
        "print('loaded', sorted(x for x in ('scipy.optimize', 'scipy.interpolate') if x in sys.modules))",
    )
    assert "jobs 6 lean [True] tri 1" in out
    if scipy.__version__ in lbfgsb._RECORDED:
        assert "loaded []" in out


def test_the_compiled_interpolator_answers_as_scipy_interpolate_on_every_measured_profile() -> None:
    """Every measured profile that interpolates in two or three coordinates, at 10 of its points, at midpoints of
    pairs of them (edges and faces) and at random points in and around its hull: the class loaded from
    ``_interpnd`` gives ``scipy.interpolate.LinearNDInterpolator``'s answers, float for float (nan outside)."""
    cls = measured._linear_nd_interpolator()
    assert cls.__module__ == "scipy.interpolate._interpnd"
    rng = np.random.default_rng(42)
    profiles = 0
    for app in sorted(measured._doc()["applications"]):
        for gpu in measured.measured_types(app):
            prof = measured.profile(app, gpu)
            spread = np.ptp(prof.points, axis=0)
            free = np.flatnonzero(spread > 0)
            if free.size < 2:
                continue
            pts = prof.points[:, free]
            i, j = rng.integers(0, len(pts), (2, 20))
            qs = np.concatenate([pts[rng.choice(len(pts), 10, replace=False)], (pts[i] + pts[j]) / 2,
                                 rng.uniform(pts.min(0) - 1, pts.max(0) + 1, (20, pts.shape[1]))])
            ours, ref = cls(pts, prof.values), LinearNDInterpolator(pts, prof.values)
            with blas_threads(1):  # as a simulation runs (qhull's transforms: OpenBLAS's threads only spin)
                got, want = ours(qs), ref(qs)
            assert np.array_equal(got, want, equal_nan=True), (app, gpu)
            assert np.isnan(got).any() and np.isfinite(got).any()  # queries inside and outside the hull
            profiles += 1
    assert profiles >= 20


def test_load_extension_gives_scipys_module_and_leaves_the_package_import_alone() -> None:
    """In a fresh process: the loaded module is not left in sys.modules, and a later ``import scipy.optimize``
    has its own ``_lbfgsb`` with the same compiled ``setulb``; with ``scipy.optimize`` imported first, the
    function returns that module itself; an extension that does not exist raises ImportError."""
    out = _fresh(
        "import sys",
        "from schedopt.scipy_parts import load_extension",
        "m = load_extension('optimize', '_lbfgsb')",
        "print('kept', 'scipy.optimize._lbfgsb' in sys.modules, 'scipy.optimize' in sys.modules)",
        "import scipy.optimize",
        "print('same', scipy.optimize._lbfgsb.setulb is m.setulb)",
    )
    assert "kept False False" in out and "same True" in out
    import scipy.optimize

    assert load_extension("optimize", "_lbfgsb") is scipy.optimize._lbfgsb
    with pytest.raises(ImportError):
        load_extension("optimize", "_no_such_module")
