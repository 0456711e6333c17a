"""Issue 42, the everyday run's imports: ``import schedopt`` and ``import schedopt.cli`` import no scipy (the
backends and ``scipy.sparse`` on first use); the measured job model's triangulation loads ``scipy.spatial._qhull``
without ``scipy/spatial/__init__.py`` and ``scipy/linalg/__init__.py`` (schedopt.scipy_parts ``skip_init``), and
answers as scipy's public ``LinearNDInterpolator``; a later ``import scipy.spatial`` gets the same compiled module."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_SKIPPED = ("scipy.spatial", "scipy.linalg", "scipy.special", "scipy.interpolate", "scipy.optimize")


def _fresh(*lines: str) -> str:
    """What a fresh interpreter prints running ``lines`` from the repository's root."""
    return subprocess.run([sys.executable, "-c", "\n".join(lines)], capture_output=True, text=True, timeout=300,
                          check=True, cwd=ROOT).stdout


def test_the_triangulation_loads_without_scipy_spatial_and_answers_as_the_public_class() -> None:
    """In a fresh process: lookups over eight measured profiles that interpolate in two or three coordinates (and a
    degenerate point set, which raises the triangulation's QhullError, caught as ``_qhull_error()``) import none of
    ``scipy.spatial``, ``scipy.linalg``, ``scipy.special``, ``scipy.interpolate``, ``scipy.optimize``. Then the public
    packages import as usual: ``scipy.spatial._qhull`` is the module the interpolator used (its ``Delaunay`` and
    ``QhullError``), and the public ``LinearNDInterpolator`` gives the same answers, float for float."""
    out = _fresh(
        "import sys",
        "import numpy as np",
        "from schedopt.goodput import blas_threads",
        "from schedopt.sim import measured as m",
        "one = blas_threads(1); one.__enter__()  # as a simulation runs (qhull's transforms: OpenBLAS's threads only spin)",
        "rng = np.random.default_rng(7)",
        "cases = []",
        "for app in sorted(m._doc()['applications']):",
        "    for t in m.measured_types(app):",
        "        p = m.profile(app, t)",
        "        free = np.flatnonzero(np.ptp(p.points, axis=0) > 0)",
        "        if free.size < 2 or len(cases) >= 8:",
        "            continue",
        "        pts = p.points[:, free]",
        "        qs = np.concatenate([pts[:5], rng.uniform(pts.min(0) - 1, pts.max(0) + 1, (10, pts.shape[1]))])",
        "        cases.append((pts, p.values, qs, m._linear_nd_interpolator()(pts, p.values)(qs)))",
        "try:",
        "    m._linear_nd_interpolator()(np.array([[0., 0.], [1., 1.], [2., 2.]]), np.zeros((3, 2)))",
        "except m._qhull_error():",
        "    print('degenerate caught')",
        "print('imagenet', m.lookup_shape('imagenet', 't4', 2, 8, 64.0))",
        f"print('loaded', sorted(x for x in {_SKIPPED!r} if x in sys.modules))",
        "import scipy.spatial, scipy.linalg",
        "from scipy.interpolate import LinearNDInterpolator",
        "q = m._interpnd().qhull",
        "print('same module', scipy.spatial._qhull is q, scipy.spatial.Delaunay is q.Delaunay,",
        "      scipy.spatial.QhullError is m._qhull_error(), callable(scipy.linalg.solve))",
        "same = all(np.array_equal(LinearNDInterpolator(pts, v)(qs), got, equal_nan=True) for pts, v, qs, got in cases)",
        "print('profiles', len(cases), 'same answers', same)",
    )
    assert "degenerate caught" in out
    assert "loaded []" in out
    assert "same module True True True True" in out
    assert "same answers True" in out
    assert "profiles 8 " in out
    # a hand-checked value: imagenet on 2 t4 nodes, 8 GPUs, local batch 64 (the triangulation's answer)
    assert "imagenet (0.5728058785200119, 0.2037096744855245)" in out


def test_with_other_threads_the_packages_import_as_usual() -> None:
    """With a second thread alive, no bare package is put in ``sys.modules`` (another thread could import it):
    ``scipy.spatial`` is imported the usual way and the interpolator still answers."""
    out = _fresh(
        "import sys, threading",
        "ev = threading.Event()",
        "th = threading.Thread(target=ev.wait); th.start()",
        "from schedopt.goodput import blas_threads",
        "from schedopt.sim import measured as m",
        "with blas_threads(1):",
        "    print('imagenet', m.lookup_shape('imagenet', 't4', 2, 8, 64.0))",
        "print('spatial', 'scipy.spatial' in sys.modules, 'scipy.spatial.distance' in sys.modules)",
        "ev.set(); th.join()",
    )
    assert "imagenet (0.5728058785200119, 0.2037096744855245)" in out
    assert "spatial True True" in out


def test_import_schedopt_and_its_command_line_import_no_scipy_until_a_model_is_built() -> None:
    """In a fresh process: ``import schedopt`` and ``import schedopt.cli`` load neither scipy (``scipy.sparse``) nor
    the backends; the lazy public names resolve to their modules' objects; building a model imports
    ``scipy.sparse``, after which the model's ``sp`` is the module itself, and its matrix is scipy's CSR."""
    out = _fresh(
        "import sys",
        "import schedopt, schedopt.cli",
        "print('after import', sorted(m for m in sys.modules if m.startswith('scipy') or m == 'schedopt.backends'))",
        "from schedopt.backends import get_backend",
        "from schedopt.infeasibility import explain_infeasibility",
        "print('names', schedopt.get_backend is get_backend, schedopt.explain_infeasibility is explain_infeasibility,",
        "      'get_backend' in dir(schedopt))",
        "import schedopt.model as M",
        "m = schedopt.LinearModel('k', sense='maximize')",
        "m.add_variables('x', 2, kind='binary')",
        "m.add_constraints('cap', {'x': [[1.0, 1.0]]}, upper=1.0)",
        "import scipy.sparse",
        "print('built', M.sp is scipy.sparse, type(m.family_rows('cap')[0]).__name__, m.family_rows('cap')[0].sum())",
        "try:",
        "    schedopt.no_such_name",
        "except AttributeError as e:",
        "    print('missing', e)",
    )
    assert "after import []" in out
    assert "names True True True" in out
    assert "built True csr_matrix 2.0" in out
    assert "missing module 'schedopt' has no attribute 'no_such_name'" in out


def test_the_simulate_parser_reads_no_problem_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    """``build_parser("simulate")`` (what ``schedopt simulate`` parses with) does not scan the installed
    distributions for the problems' entry points (the ``generate`` subcommand's help lists them, which that parse
    never shows); the full parser and ``generate``'s still list every problem."""
    import importlib.metadata as md

    from schedopt.cli import build_parser

    groups: list[object] = []
    scan = md.entry_points

    def counted(*args: object, **kwargs: object) -> object:
        groups.append(kwargs.get("group"))
        return scan(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(md, "entry_points", counted)
    build_parser("simulate")
    assert "schedopt.problems" not in groups
    for command in (None, "generate"):
        gen = build_parser(command)._subparsers._group_actions[0].choices["generate"]  # type: ignore[union-attr]
        assert "sia, synergy" in gen.format_help()
    assert "schedopt.problems" in groups
