"""The core's layering, checked on the source: the core imports no backend at module level, the mckp backend does
not import the dispatcher, and no core module imports another module's underscored names."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "schedopt"
CORE = ["model.py", "results.py", "solve.py", "problem.py", "infeasibility.py", "export.py", "pop.py", "stdio.py",
        *[f"mckp/{p.name}" for p in sorted((PKG / "mckp").glob("*.py"))]]


def _module_level_imports(path: Path) -> list[str]:
    """Modules imported at module level (``if TYPE_CHECKING:`` blocks left out), relative ones as written."""
    out: list[str] = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom):
            out.append("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
    return out


@pytest.mark.parametrize("rel", CORE)
def test_core_imports_no_backend_at_module_level(rel: str) -> None:
    bad = [m for m in _module_level_imports(PKG / rel) if "backends" in m]
    assert not bad, f"{rel} imports {bad} at module level"


def test_mckp_backend_does_not_import_the_dispatcher() -> None:
    src = (PKG / "backends" / "mckp.py").read_text()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.ImportFrom):
            assert node.module not in ("solve", "schedopt.solve"), "backends/mckp.py imports schedopt.solve"
    assert len(src.splitlines()) < 120, "the backend is a thin adapter"


@pytest.mark.parametrize("rel", [*CORE, "backends/mckp.py", "backends/base.py", "backends/__init__.py"])
def test_no_underscored_names_from_other_modules(rel: str) -> None:
    for node in ast.walk(ast.parse((PKG / rel).read_text())):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("schedopt")):
            under = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
            assert not under, f"{rel} imports {under} from {node.module}"


def test_mckp_entry_points_are_short_and_have_no_nonlocal_state() -> None:
    """The old 211-line solve with closures and nonlocal is gone: named steps instead."""
    for p in sorted((PKG / "mckp").glob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Nonlocal):
                raise AssertionError(f"{p.name}: nonlocal state at line {node.lineno}")
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in ("run", "solve"):
                n = (node.end_lineno or node.lineno) - node.lineno
                assert n <= 80, f"{p.name}:{node.name} has {n} lines"


def test_sia_problem_satisfies_the_round_protocol_that_build_and_check_read() -> None:
    """build.py and check.py are typed against SiaRound (not SiaProblem): every member the protocol names must exist
    on a real problem with the declared kind, so the protocol cannot drift from the class."""
    import inspect
    import typing

    import numpy as np

    from schedopt.sia import Cluster, GpuType, Job, SiaProblem
    from schedopt.sia.round import SiaRound

    cl = Cluster((GpuType("a", 4, 2),))
    prob = SiaProblem(cl, [Job("j0")], lambda job, c: float(c.n_gpus))
    hints = typing.get_type_hints(SiaRound)
    assert set(hints) == {"cluster", "jobs", "p", "lam", "settings", "configs", "max_gpus_per_job", "available", "goodput"}
    for name in hints:
        assert hasattr(prob, name), name
    assert isinstance(prob.available, np.ndarray) and isinstance(prob.jobs, tuple)
    methods = {n for n, v in vars(SiaRound).items() if inspect.isfunction(v) and not n.startswith("_")}
    assert methods == {"job_index", "valid_pairs"}
    assert prob.job_index("j0") == 0 and len(prob.valid_pairs()) > 0
    src = (Path(__file__).parents[1] / "schedopt" / "sia" / "build.py").read_text() + \
        (Path(__file__).parents[1] / "schedopt" / "sia" / "check.py").read_text()
    assert "SiaProblem" not in src


def test_no_module_of_the_package_imports_another_modules_underscored_names() -> None:
    """The rule above, over the whole package: a name another module needs is a public name of its module."""
    found = []
    for p in sorted(PKG.rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("schedopt")):
                found += [f"{p.relative_to(PKG)}: {a.name} from {node.module}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    assert not found, found
